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
from ..pretrained_palm import load_palm_weights, load_unilmv2_encoder, read_unilmv2_checkpoint
from .decoding_conventions import DecodingConventionsConfig, DecodingConventionsTask

logger = logging.getLogger(__name__)


@dataclass
class PALMSeq2SeqConfig(TranslationConfig, DecodingConventionsConfig):
    pretrained_checkpoint: Optional[str] = field(
        default=None,
        metadata={
            "help": "initialise from this palm pre-training checkpoint (same dict.txt); the encoder MLM "
            "head is not loaded"
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
class PALMSeq2SeqTask(DecodingConventionsTask, TranslationTask):
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
        # wrapped even when nothing is skipped: its batching keeps the last partial batch
        self.datasets[split] = SkipIndicesDataset(dataset, np.flatnonzero(empty))
        return self.datasets[split]

    def build_model(self, cfg, from_checkpoint=False):
        if from_checkpoint:
            return super().build_model(cfg, from_checkpoint)
        if self.cfg.pretrained_checkpoint and self.cfg.pretrained_encoder:
            raise ValueError("give --pretrained-checkpoint (a palm model) or --pretrained-encoder, not both")
        _set(cfg, "no_encoder_mlm_head", True)  # fine-tuning trains no MLM loss: an unused head stalls DDP
        encoder_state = None
        if self.cfg.pretrained_encoder:
            encoder_state, eps = read_unilmv2_checkpoint(self.cfg.pretrained_encoder)
            _set(cfg, "encoder_layernorm_eps", eps)
        model = super().build_model(cfg, from_checkpoint)
        if self.cfg.pretrained_checkpoint:
            load_palm_weights(model, self.cfg.pretrained_checkpoint)
        if encoder_state is not None:
            load_unilmv2_encoder(model, encoder_state, self.cfg.pretrained_encoder)
        return model


def _set(cfg, key, value):
    """Set a model option on an argparse namespace or an omegaconf config."""
    if OmegaConf.is_config(cfg):
        with open_dict(cfg):
            setattr(cfg, key, value)
    else:
        setattr(cfg, key, value)
