"""Task ``palm_seq2seq``: fine-tune and decode ``palm`` on fairseq language-pair data."""

import logging
from dataclasses import dataclass, field
from typing import Optional

import numpy as np
from fairseq.tasks import register_task
from fairseq.tasks.translation import TranslationConfig, TranslationTask
from omegaconf import OmegaConf, open_dict

from ..data.dictionary import load_dictionary_with_mask
from ..data.skip_indices_dataset import SkipIndicesDataset
from ..modules.ngram_block import PrefixNGramRepeatBlock
from ..pretrained_palm import load_palm_weights

logger = logging.getLogger(__name__)


@dataclass
class PALMSeq2SeqConfig(TranslationConfig):
    pretrained_checkpoint: Optional[str] = field(
        default=None,
        metadata={
            "help": "initialise from this palm pre-training checkpoint (same dict.txt); the encoder MLM "
            "head is not loaded"
        },
    )


@register_task("palm_seq2seq", dataclass=PALMSeq2SeqConfig)
class PALMSeq2SeqTask(TranslationTask):
    """fairseq's translation task with PALM's conventions.

    One dictionary (with ``<mask>``, so its size matches pre-training) serves source and target; pairs
    with an empty source or target are skipped and counted; n-gram blocking works on CPU.
    """

    cfg: PALMSeq2SeqConfig

    @classmethod
    def load_dictionary(cls, filename):
        return load_dictionary_with_mask(filename)

    @classmethod
    def setup_task(cls, cfg: PALMSeq2SeqConfig, **kwargs):
        task = super().setup_task(cfg, **kwargs)
        if task.src_dict.symbols != task.tgt_dict.symbols:
            raise ValueError(
                f"dict.{cfg.source_lang}.txt and dict.{cfg.target_lang}.txt differ: palm shares one "
                "embedding table, so binarize with --joined-dictionary (or the same --srcdict/--tgtdict)"
            )
        task.tgt_dict = task.src_dict
        return task

    def load_dataset(self, split, epoch=1, combine=False, **kwargs):
        super().load_dataset(split, epoch=epoch, combine=combine, **kwargs)
        dataset = self.datasets[split]
        empty = np.asarray(dataset.src_sizes) <= 1  # just the </s> fairseq-preprocess appends
        if dataset.tgt_sizes is not None:
            empty |= np.asarray(dataset.tgt_sizes) <= 1
        logger.info(
            "%s: %d pairs; skipped %d with an empty source or target", split, len(dataset), int(empty.sum())
        )
        if empty.any():
            self.datasets[split] = SkipIndicesDataset(dataset, np.flatnonzero(empty))
        return self.datasets[split]

    def build_model(self, cfg, from_checkpoint=False):
        if not from_checkpoint:  # fine-tuning trains no MLM loss: an unused head would stall DDP
            if OmegaConf.is_config(cfg):
                with open_dict(cfg):
                    cfg.no_encoder_mlm_head = True
            else:
                cfg.no_encoder_mlm_head = True
        model = super().build_model(cfg, from_checkpoint)
        if self.cfg.pretrained_checkpoint and not from_checkpoint:
            load_palm_weights(model, self.cfg.pretrained_checkpoint)
        return model

    def build_generator(self, models, args, **kwargs):
        generator = super().build_generator(models, args, **kwargs)
        blocker = getattr(generator, "repeat_ngram_blocker", None)
        if blocker is not None:
            generator.repeat_ngram_blocker = PrefixNGramRepeatBlock(blocker.no_repeat_ngram_size)
        return generator
