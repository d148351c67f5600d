"""Task ``pmlm``: UniLMv2 pre-training with the pseudo-masked language model."""

import logging
from dataclasses import dataclass, field

import numpy as np
from fairseq.data import Dictionary
from fairseq.dataclass import ChoiceEnum
from fairseq.tasks import register_task

from ..data.masking import MaskingConfig
from ..data.pretraining import PMLMDataset, SegmentPairDataset
from .shared_dictionary import (
    DOCUMENT_SEP_LEN,
    TextBlocksConfig,
    TextBlocksTask,
    check_max_tokens,
    text_blocks,
)

logger = logging.getLogger(__name__)

OBJECTIVES = ChoiceEnum(["ae,par", "ae", "par"])


@dataclass
class PMLMConfig(TextBlocksConfig):
    mask_prob: float = field(
        default=MaskingConfig.mask_prob, metadata={"help": "fraction of tokens masked (Algorithm 1)"}
    )
    span_prob: float = field(default=0.4, metadata={"help": "probability that a masking step is a span"})
    min_span_length: int = field(default=2, metadata={"help": "shortest masked span"})
    max_span_length: int = field(default=6, metadata={"help": "longest masked span"})
    leave_unmasked_prob: float = field(
        default=MaskingConfig.leave_unmasked_prob,
        metadata={"help": "fraction of masked inputs left unchanged (AE objective)"},
    )
    random_token_prob: float = field(
        default=MaskingConfig.random_token_prob,
        metadata={"help": "fraction of masked inputs replaced by a random token (AE objective)"},
    )
    objectives: OBJECTIVES = field(
        default="ae,par",
        metadata={
            "help": "losses to train: autoencoding and/or partially autoregressive (Table 6 ablations)"
        },
    )
    no_blockwise: bool = field(
        default=False,
        metadata={"help": "factorize one token per step (AR) instead of one span per step (PAR)"},
    )
    par_skip_unchanged: bool = field(
        default=False,
        metadata={
            "help": "leave out of the PAR loss the masked tokens left unchanged in the context (the "
            "--leave-unmasked-prob share), whose [P] could read them there; AE keeps them. Off: the paper"
        },
    )


@register_task("pmlm", dataclass=PMLMConfig)
class PMLMTask(TextBlocksTask):
    """Pre-train on monolingual data with AE and PAR losses in one forward pass."""

    default_criterion = "ae_par"

    cfg: PMLMConfig

    def __init__(self, cfg: PMLMConfig, dictionary: Dictionary):
        if not 1 <= cfg.min_span_length <= cfg.max_span_length:  # found here, not in a data loader's worker
            raise ValueError(
                f"--min-span-length {cfg.min_span_length} --max-span-length {cfg.max_span_length}: "
                "spans need 1 <= min <= max"
            )
        super().__init__(cfg, dictionary)
        self.mask_idx = dictionary.index("<mask>")

    def load_dataset(self, split, epoch=1, combine=False, **kwargs):
        lines = self.load_lines(split, epoch, combine)
        blocks, block_size = text_blocks(lines, self.dictionary, self.cfg)
        sizes = np.asarray(lines.sizes)
        empty = sizes <= DOCUMENT_SEP_LEN  # just the eos fairseq-preprocess appends
        document_sizes = np.bincount(np.cumsum(empty)[~empty], weights=sizes[~empty])
        logger.info(
            "%s: %d lines, %d empty (document breaks) -> %d documents, %d shorter than one block of %d "
            "tokens (kept as short blocks) -> %d blocks, %d holding a sentence over the limit (truncated)",
            split,
            len(sizes),
            int(empty.sum()),
            int((document_sizes > 0).sum()),
            int(((document_sizes > 0) & (document_sizes < block_size)).sum()),
            block_size,
            len(blocks),
            int((np.asarray(blocks.sizes) > block_size).sum()),
        )
        objectives = str(self.cfg.objectives).split(",")
        pairs = SegmentPairDataset(blocks, self.dictionary, self.cfg.tokens_per_sample, self.cfg.seed)
        self.datasets[split] = PMLMDataset(
            pairs,
            self.dictionary,
            self.mask_idx,
            seed=self.cfg.seed,
            mask_prob=self.cfg.mask_prob,
            span_prob=self.cfg.span_prob,
            min_span=self.cfg.min_span_length,
            max_span=self.cfg.max_span_length,
            leave_unmasked_prob=self.cfg.leave_unmasked_prob,
            random_token_prob=self.cfg.random_token_prob,
            ae="ae" in objectives,
            par="par" in objectives,
            blockwise=not self.cfg.no_blockwise,
            par_skip_unchanged=self.cfg.par_skip_unchanged,
        )
        return self.datasets[split]

    def get_batch_iterator(self, dataset, max_tokens=None, **kwargs):
        longest = self.cfg.tokens_per_sample  # below it, the base class's error names the options
        if max_tokens is not None and max_tokens >= longest:
            packed = (
                f"with --tokens-per-sample {longest}, an example holds its context plus two pseudo tokens "
                f"per masked token (--mask-prob {self.cfg.mask_prob})"
            )
            check_max_tokens(dataset, max_tokens, packed)
        return super().get_batch_iterator(dataset, max_tokens=max_tokens, **kwargs)

    def max_positions(self):
        return self.cfg.tokens_per_sample
