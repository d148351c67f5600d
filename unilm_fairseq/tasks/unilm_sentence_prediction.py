"""Task ``unilm_sentence_prediction``: fairseq's ``sentence_prediction`` with the plugin's dictionaries.

fairseq's own ``sentence_prediction`` task already works with ``--arch unilmv2_*`` on data binarized with a
fairseq ``dict.txt``. This task differs in three ways only: dictionaries load with
:func:`~unilm_fairseq.data.dictionary.load_dictionary_with_mask`, so the one-token-per-line vocabulary of
an imported BERT-family model keeps its ids; ``--init-token`` defaults to the dictionary's
beginning-of-sentence symbol ([CLS] for those vocabularies), so every input reads "[SOS] A [EOS] (B [EOS])";
and every example goes into a batch: fairseq 0.12's batching leaves out the examples past the last multiple
of ``--required-batch-size-multiple`` (default 8), so RTE's 277 dev pairs in batches of 16 were scored as 272.
"""

import logging

from fairseq.tasks import register_task
from fairseq.tasks.sentence_prediction import SentencePredictionConfig, SentencePredictionTask

from ..data.dictionary import load_dictionary_with_mask
from ..data.skip_indices_dataset import SkipIndicesDataset
from .prepared_model import PreparedModelTask

logger = logging.getLogger(__name__)


@register_task("unilm_sentence_prediction", dataclass=SentencePredictionConfig)
class UniLMSentencePredictionTask(PreparedModelTask, SentencePredictionTask):
    """Sentence (pair) classification or regression from the [SOS] vector."""

    @classmethod
    def load_dictionary(cls, filename):
        return load_dictionary_with_mask(filename)

    @classmethod
    def setup_task(cls, cfg, **kwargs):
        task = super().setup_task(cfg, **kwargs)
        if cfg.init_token is None:
            cfg.init_token = task.dictionary.bos()
            logger.info("--init-token unset: starting every input with %s (id %d)",
                        task.dictionary[cfg.init_token], cfg.init_token)  # fmt: skip
        return task

    def load_dataset(self, split, combine=False, **kwargs):
        super().load_dataset(split, combine=combine, **kwargs)
        # nothing is skipped: the wrapper's batching keeps the last partial batch
        self.datasets[split] = SkipIndicesDataset(self.datasets[split], ())
        return self.datasets[split]
