"""Task ``palm_seq2seq``: fine-tune and decode ``palm`` on fairseq language-pair data."""

import functools
import logging
from dataclasses import dataclass, field
from typing import Optional

import numpy as np
from fairseq.dataclass import ChoiceEnum
from fairseq.tasks import register_task
from fairseq.tasks.translation import TranslationConfig, TranslationTask

from ..checkpoint.palm_init import (
    ABLATED_PART,
    build_with_unilmv2_encoder,
    load_palm_weights,
    set_model_option,
    take_encoder_layernorm_eps,
)
from ..data.dictionary import load_dictionary_with_mask
from ..data.skip_indices_dataset import SkipIndicesDataset
from .decoding_conventions import DecodingConventionsConfig, DecodingConventionsTask
from .mixed_precision import MixedPrecisionConfig, MixedPrecisionTask
from .prepared_model import PreparedModelTask
from .rouge_validation import RougeValidationConfig, RougeValidationTask

logger = logging.getLogger(__name__)


@dataclass
class PALMSeq2SeqConfig(
    TranslationConfig, DecodingConventionsConfig, RougeValidationConfig, MixedPrecisionConfig
):
    pretrained_checkpoint: Optional[str] = field(
        default=None,
        metadata={
            "help": "initialise from this palm pre-training checkpoint (same dict.txt); the encoder MLM "
            "head is not loaded"
        },
    )
    pretrained_ablation: ChoiceEnum(["none", *ABLATED_PART]) = field(
        default="none",
        metadata={
            "help": "PALM Table 6's ablations of --pretrained-checkpoint, as §3.7 defines them by random "
            "initialisation: autoencoding leaves the encoder freshly initialised, autoregression the decoder "
            "(with its pointer-generator); the token table shared by both is loaded either way"
        },
    )
    pretrained_encoder: Optional[str] = field(
        default=None,
        metadata={
            "help": "initialise only the encoder (and the shared embeddings) from a unilmv2 checkpoint, e.g. "
            "a BERT/RoBERTa converted by scripts/convert_hf_checkpoint.py (same dict.txt and sizes, no "
            "relative position bias); sets --encoder-layernorm-eps to the checkpoint's"
        },
    )


@register_task("palm_seq2seq", dataclass=PALMSeq2SeqConfig)
class PALMSeq2SeqTask(
    PreparedModelTask, MixedPrecisionTask, RougeValidationTask, DecodingConventionsTask, TranslationTask
):
    """fairseq's translation task with PALM's conventions.

    One dictionary (with ``<mask>``, so its size matches pre-training) serves source and target; pairs
    with an empty source or target are skipped and counted; n-gram blocking works on CPU; the papers'
    decoding conventions are options (:class:`DecodingConventionsConfig`).
    """

    cfg: PALMSeq2SeqConfig

    @classmethod
    def load_dictionary(cls, filename):
        return load_dictionary_with_mask(filename)

    @classmethod
    def setup_task(cls, cfg: PALMSeq2SeqConfig, **kwargs):
        if not cfg.data:  # fairseq's translation config defaults it to None, where a Hydra ??? leaves it
            raise ValueError("no data directory: give the fairseq-preprocess output (task.data=DIR)")
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
        if empty.all():  # fairseq's batching or validation would fail later, far from the cause
            raise ValueError(
                f"{split}: no pair left to use: all {len(dataset)} have an empty source or target"
            )
        # wrapped even when nothing is skipped: its batching keeps the last partial batch
        self.datasets[split] = SkipIndicesDataset(dataset, np.flatnonzero(empty))
        return self.datasets[split]

    def build_prepared_model(self, cfg, from_checkpoint=False):
        if from_checkpoint:
            return super().build_prepared_model(cfg, from_checkpoint)
        if self.cfg.pretrained_checkpoint and self.cfg.pretrained_encoder:
            raise ValueError("give --pretrained-checkpoint (a palm model) or --pretrained-encoder, not both")
        ablation = str(self.cfg.pretrained_ablation)
        if ablation != "none" and not self.cfg.pretrained_checkpoint:
            raise ValueError(f"--pretrained-ablation {ablation} ablates a --pretrained-checkpoint: give one")
        # fine-tuning trains no MLM loss: an unused head stalls DDP
        set_model_option(cfg, "no_encoder_mlm_head", True)
        build = functools.partial(super().build_prepared_model, from_checkpoint=from_checkpoint)
        if self.cfg.pretrained_encoder:
            return build_with_unilmv2_encoder(build, cfg, self.cfg.pretrained_encoder, self.source_dictionary)
        if self.cfg.pretrained_checkpoint:
            take_encoder_layernorm_eps(cfg, self.cfg.pretrained_checkpoint)
        model = build(cfg)
        if self.cfg.pretrained_checkpoint:
            load_palm_weights(model, self.cfg.pretrained_checkpoint, None if ablation == "none" else ablation)
        return model
