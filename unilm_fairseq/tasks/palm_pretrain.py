"""Task ``palm_pretrain``: PALM's two pre-training stages (Bi et al. 2020, section 2).

Stage 1 trains the encoder alone as a masked LM on the context (the first 80%
of a text window); stage 2 trains encoder and decoder together to generate the
continuation (the last 20%) under the pointer-generator distribution. PALM §2.1
and §2.2 use "the output predictions from the encoder and the decoder ... for
training in the two stages, respectively": stage 2 optimises the decoder's
log-likelihood alone, on unmasked contexts. ``--mlm-weight`` > 0 adds the
encoder's masked-LM loss in stage 2 too (this project's choice, not the paper's).
"""

import functools
import logging
from dataclasses import dataclass, field
from typing import Optional

import numpy as np
from fairseq.data import Dictionary, LanguagePairDataset
from fairseq.tasks import register_task
from omegaconf import II, MISSING

from ..checkpoint.palm_init import build_with_unilmv2_encoder, take_encoder_layernorm_eps
from ..checkpoint.stage_init import load_encoder_from_checkpoint
from ..data.masking import MaskingConfig
from ..data.pretraining.palm_fragments import (
    MAX_CONTEXT_TOKENS,
    MAX_CONTINUATION_TOKENS,
    check_settings,
    corpus_fragments,
)
from ..data.pretraining.palm_pretrain_dataset import PALMPretrainDataset
from ..modules.ngram_block import with_prefix_ngram_blocker
from .mixed_precision import MixedPrecisionConfig
from .shared_dictionary import SharedDictionaryTask

logger = logging.getLogger(__name__)

STAGES = (1, 2)


@dataclass
class PALMPretrainConfig(MixedPrecisionConfig):
    data: str = field(
        default=MISSING,
        metadata={
            "help": "colon-separated data directories from fairseq-preprocess --only-source (one sentence "
            "per line, empty line between documents); one is used per epoch, round-robin"
        },
    )
    stage: int = field(
        default=1,
        metadata={
            "help": "1: encoder-only masked LM on the context; 2: the decoder generates the continuation "
            "(pointer-generator NLL), the only stage-2 loss in PALM §2.2 (see --mlm-weight)"
        },
    )
    max_fragment_tokens: int = field(
        default=500,
        metadata={
            "help": "most text tokens in one window, context plus continuation (PALM §2.2: L <= 500); at "
            "most --max-context-tokens plus --max-continuation-tokens"
        },
    )
    max_context_tokens: int = field(
        default=MAX_CONTEXT_TOKENS,
        metadata={
            "help": "hard limit on the encoder's context tokens, </s> not counted (PALM §2.2, §3.1: 400)"
        },
    )
    max_continuation_tokens: int = field(
        default=MAX_CONTINUATION_TOKENS,
        metadata={
            "help": "hard limit on the decoder's continuation tokens, </s> not counted (PALM §2.2, §3.1: 100)"
        },
    )
    context_ratio: float = field(
        default=0.8, metadata={"help": "share of a window's tokens that goes to the encoder as context"}
    )
    boundary_tolerance: float = field(
        default=0.1,
        metadata={
            "help": "cut at the sentence boundary nearest the context-ratio point when it is within this "
            "share of the window's tokens of it and keeps both sides within their limits; otherwise cut "
            "mid-sentence at that point, moved into the limits (this project's choice)"
        },
    )
    mask_prob: float = field(
        default=MaskingConfig.mask_prob, metadata={"help": "share of context tokens masked for the MLM"}
    )
    leave_unmasked_prob: float = field(
        default=MaskingConfig.leave_unmasked_prob, metadata={"help": "share of masked inputs left unchanged"}
    )
    random_token_prob: float = field(
        default=MaskingConfig.random_token_prob,
        metadata={"help": "share of masked inputs replaced by a random token"},
    )
    mlm_weight: float = field(
        default=0.0,
        metadata={
            "help": "stage 2: weight of an extra encoder masked-LM loss added to the decoder's loss (both "
            "per token), on masked contexts; this project's choice, not the paper's: the default 0 trains "
            "what PALM §2.2 trains in stage 2, the decoder's continuation alone, on unmasked contexts"
        },
    )
    stage1_checkpoint: Optional[str] = field(
        default=None,
        metadata={
            "help": "stage 2: copy every non-decoder weight (encoder, its MLM head, tied embeddings) from "
            "this stage-1 checkpoint; the decoder starts freshly initialised"
        },
    )
    pretrained_encoder: Optional[str] = field(
        default=None,
        metadata={
            "help": "initialise the encoder, its MLM head and the shared token embeddings from this unilmv2 "
            "checkpoint: a RoBERTa (PALM §3.1) or BERT converted by scripts/convert_hf_checkpoint.py; "
            "binarize the data with its dict.txt and match its sizes; sets --encoder-layernorm-eps to the "
            "checkpoint's; the decoder starts freshly initialised"
        },
    )
    left_pad_source: bool = field(default=False, metadata={"help": "pad source batches on the left"})
    seed: int = II("common.seed")


@register_task("palm_pretrain", dataclass=PALMPretrainConfig)
class PALMPretrainTask(SharedDictionaryTask):
    """Context/continuation pairs from monolingual text, masked contexts for the encoder's MLM."""

    default_criterion = "palm"

    cfg: PALMPretrainConfig

    def __init__(self, cfg: PALMPretrainConfig, dictionary: Dictionary):
        super().__init__(cfg, dictionary)
        if cfg.stage not in STAGES:
            raise ValueError(f"--stage must be one of {STAGES}, got {cfg.stage}")
        if cfg.stage1_checkpoint and cfg.stage != 2:
            raise ValueError("--stage1-checkpoint initialises stage 2; it makes no sense with --stage 1")
        if cfg.stage1_checkpoint and cfg.pretrained_encoder:
            raise ValueError(
                "give --stage1-checkpoint (stage 2 after stage 1) or --pretrained-encoder, not both: a "
                "stage-1 checkpoint already holds the encoder"
            )
        if cfg.mlm_weight < 0:
            raise ValueError(f"--mlm-weight must be >= 0, got {cfg.mlm_weight}")
        check_settings(
            cfg.max_fragment_tokens, cfg.context_ratio, cfg.max_context_tokens, cfg.max_continuation_tokens
        )

    @property
    def trains_mlm(self) -> bool:
        return self.cfg.stage == 1 or self.cfg.mlm_weight > 0

    @property
    def trains_decoder(self) -> bool:
        return self.cfg.stage == 2

    def load_dataset(self, split, epoch=1, combine=False, **kwargs):
        lines = self.load_lines(split, epoch, combine)
        text_lengths = np.asarray(lines.sizes) - 1  # fairseq-preprocess closes every line with </s>
        cfg = self.cfg
        fragments, stats = corpus_fragments(
            text_lengths,
            cfg.max_fragment_tokens,
            cfg.context_ratio,
            cfg.boundary_tolerance,
            max_context=cfg.max_context_tokens,
            max_continuation=cfg.max_continuation_tokens,
        )
        logger.info(
            "%s: %d lines, %d empty (document breaks) -> %d documents, %d windows (one per sentence) -> "
            "%d pairs; skipped %d windows under 2 tokens, %d documents with no pair; %d windows cut inside "
            "a sentence over %d tokens; context cut at a sentence boundary %d times, mid-sentence %d times "
            "(%d of them because every boundary near the cut would exceed %d context or %d continuation "
            "tokens)",
            split,
            stats.lines,
            stats.empty_lines,
            stats.documents,
            stats.windows,
            stats.pairs,
            stats.windows_too_short,
            stats.documents_without_pair,
            stats.truncated,
            self.cfg.max_fragment_tokens,
            stats.split_at_boundary,
            stats.split_mid_sentence,
            stats.boundary_over_limit,
            cfg.max_context_tokens,
            cfg.max_continuation_tokens,
        )
        if not fragments:
            raise ValueError(f"{split} (in {self.cfg.data}): no document holds a context/continuation pair")
        self.datasets[split] = PALMPretrainDataset(
            lines,
            fragments,
            self.dictionary,
            seed=self.cfg.seed,
            mask_prob=self.cfg.mask_prob if self.trains_mlm else 0.0,
            leave_unmasked_prob=self.cfg.leave_unmasked_prob,
            random_token_prob=self.cfg.random_token_prob,
            left_pad_source=self.cfg.left_pad_source,
        )
        return self.datasets[split]

    def build_prepared_model(self, cfg, from_checkpoint=False):
        if from_checkpoint:
            return super().build_prepared_model(cfg, from_checkpoint)
        build = functools.partial(super().build_prepared_model, from_checkpoint=False)
        if self.cfg.pretrained_encoder:
            return build_with_unilmv2_encoder(build, cfg, self.cfg.pretrained_encoder, self.dictionary)
        if self.cfg.stage1_checkpoint:
            take_encoder_layernorm_eps(cfg, self.cfg.stage1_checkpoint)
        model = build(cfg)
        if self.cfg.stage1_checkpoint:
            load_encoder_from_checkpoint(model, self.cfg.stage1_checkpoint)
        return model

    def build_dataset_for_inference(self, src_tokens, src_lengths, **kwargs):
        """Contexts to continue (``fairseq-interactive``, the Python API): "context </s>" each."""
        return LanguagePairDataset(
            src_tokens, src_lengths, self.dictionary, left_pad_source=self.cfg.left_pad_source
        )

    def build_generator(self, models, args, **kwargs):
        return with_prefix_ngram_blocker(super().build_generator(models, args, **kwargs))

    def max_positions(self):
        most = self.cfg.max_fragment_tokens + 1  # text plus </s>
        return (most, most)
