"""Task ``unilm``: UniLM v1 pre-training (Dong et al. 2019) on monolingual data.

Every example gets one LM objective (bidirectional with NSP, seq2seq,
left-to-right, right-to-left), selected by its self-attention mask and named
by its segment ids; all four share the cloze loss on masked tokens.
"""

import logging
from dataclasses import dataclass, field
from typing import List, Optional

import numpy as np
from fairseq.data import Dictionary
from fairseq.tasks import register_task

from ..checkpoint.unilmv2_init import load_pretrained_weights
from ..data.masking import MaskingConfig
from ..data.pretraining.unilm_cloze_dataset import UniLMClozeDataset
from ..data.pretraining.unilm_objectives import (
    NUM_SEGMENTS,
    OBJECTIVE_NAMES,
    UniLMObjectiveDataset,
    block_document_ranges,
)
from .shared_dictionary import DOCUMENT_SEP_LEN, TextBlocksConfig, TextBlocksTask, text_blocks

logger = logging.getLogger(__name__)


@dataclass
class UniLMConfig(TextBlocksConfig):
    objective_weights: List[float] = field(
        default_factory=lambda: [2.0, 2.0, 1.0, 1.0],
        metadata={
            "help": "relative frequency of the objectives bidirectional, seq2seq, left-to-right, "
            "right-to-left (normalized; the paper: 1/3, 1/3, 1/6, 1/6), e.g. 2,2,1,1"
        },
    )
    nsp_random_prob: float = field(
        default=0.5,
        metadata={
            "help": "probability that a bidirectional pair's second segment comes from another document"
        },
    )
    mask_prob: float = field(default=MaskingConfig.mask_prob, metadata={"help": "fraction of tokens masked"})
    span_prob: float = field(
        default=0.2, metadata={"help": "probability that a masking pick is an n-gram instead of one token"}
    )
    max_span_length: int = field(
        default=3, metadata={"help": "longest masked n-gram (lengths uniform in [2, this])"}
    )
    max_predictions: int = field(
        default=0, metadata={"help": "cap on masked tokens per example (BERT's max_pred); 0: no cap"}
    )
    leave_unmasked_prob: float = field(
        default=MaskingConfig.leave_unmasked_prob,
        metadata={"help": "fraction of masked inputs left unchanged"},
    )
    random_token_prob: float = field(
        default=MaskingConfig.random_token_prob,
        metadata={"help": "fraction of masked inputs replaced by a random token"},
    )
    pretrained_checkpoint: Optional[str] = field(
        default=None,
        metadata={
            "help": "initialise from this unilmv2 checkpoint (e.g. BERT converted by "
            "scripts/convert_hf_checkpoint.py, as the paper starts from BERT-large); a 2-row segment table "
            "fills segment ids 0-1, ids 2-5 and the NSP head start fresh. Ignored when resuming"
        },
    )


@register_task("unilm", dataclass=UniLMConfig)
class UniLMTask(TextBlocksTask):
    """Pre-train with the bidirectional, seq2seq, left-to-right and right-to-left cloze objectives."""

    default_criterion = "unilm"

    cfg: UniLMConfig

    def __init__(self, cfg: UniLMConfig, dictionary: Dictionary):
        if cfg.span_prob > 0 and cfg.max_span_length < 2:  # n-grams of 2..max: found here, not in a worker
            raise ValueError(
                f"--span-prob {cfg.span_prob} masks n-grams of 2 to --max-span-length tokens, which is "
                f"{cfg.max_span_length}: give at least 2, or --span-prob 0"
            )
        pairs = list(cfg.objective_weights)[:2]  # bidirectional, seq2seq: the objectives of a pair A/B
        if any(weight > 0 for weight in pairs) and cfg.sample_break_mode != "complete_doc":
            raise ValueError(
                f"--sample-break-mode {cfg.sample_break_mode}: a block may end one document and start the "
                "next, and the bidirectional (NSP) and seq2seq objectives would pair the two as one text "
                "(B labelled the continuation of A); use complete_doc, the default, or weight those "
                "objectives 0"
            )
        super().__init__(cfg, dictionary)
        self.mask_idx = dictionary.index("<mask>")

    def build_prepared_model(self, cfg, from_checkpoint=False):
        segments = getattr(cfg, "num_segments", None)
        if segments is not None and segments < NUM_SEGMENTS:
            raise ValueError(
                f"--task unilm needs --num-segments >= {NUM_SEGMENTS} (segment ids name the LM objective: "
                f"bidirectional 0/1, left-to-right 2, right-to-left 3, seq2seq 4/5), got {segments}; "
                f"pass --num-segments {NUM_SEGMENTS} or use --arch unilm_v1_base/unilm_v1_large"
            )
        model = super().build_prepared_model(cfg, from_checkpoint)
        model.build_nsp_head()
        if self.cfg.pretrained_checkpoint and not from_checkpoint:
            load_pretrained_weights(model, self.cfg.pretrained_checkpoint)
        return model

    def load_dataset(self, split, epoch=1, combine=False, **kwargs):
        lines = self.load_lines(split, epoch, combine)
        blocks, block_size = text_blocks(lines, self.dictionary, self.cfg)
        sizes = np.asarray(lines.sizes)
        block_lines = np.asarray(blocks.block_to_dataset_index)[:, [0, 2]]
        first_doc, last_doc = block_document_ranges(sizes, block_lines, DOCUMENT_SEP_LEN)
        objectives = UniLMObjectiveDataset(
            blocks,
            (first_doc, last_doc),
            self.dictionary,
            self.cfg.tokens_per_sample,
            self.cfg.seed,
            list(self.cfg.objective_weights),
            nsp_random_prob=self.cfg.nsp_random_prob,
        )
        self._log_corpus(split, sizes, blocks, block_size, (first_doc, last_doc), objectives.probs)
        self.datasets[split] = UniLMClozeDataset(
            objectives,
            self.dictionary,
            self.mask_idx,
            seed=self.cfg.seed,
            mask_prob=self.cfg.mask_prob,
            span_prob=self.cfg.span_prob,
            max_span=self.cfg.max_span_length,
            max_predictions=self.cfg.max_predictions,
            leave_unmasked_prob=self.cfg.leave_unmasked_prob,
            random_token_prob=self.cfg.random_token_prob,
        )
        return self.datasets[split]

    @staticmethod
    def _log_corpus(split, sizes, blocks, block_size, document_ranges, probs) -> None:
        empty = sizes <= DOCUMENT_SEP_LEN
        documents = np.unique(np.concatenate(document_ranges))
        mix = ", ".join(f"{name} {p:.3f}" for name, p in zip(OBJECTIVE_NAMES, probs))
        logger.info(
            "%s: %d lines, %d empty (document breaks) -> %d blocks of at most %d tokens from %d documents, "
            "%d holding a sentence over the limit (trimmed to --tokens-per-sample); objectives: %s",
            split,
            len(sizes),
            int(empty.sum()),
            len(blocks),
            block_size,
            len(documents),
            int((np.asarray(blocks.sizes) > block_size).sum()),
            mix,
        )
        if len(documents) < 2:
            logger.warning(
                "%s: one document only: no NSP pair can take its second segment from another document, "
                "so bidirectional examples train no NSP (counted as nsp_skipped)",
                split,
            )

    def max_positions(self):
        return self.cfg.tokens_per_sample
