"""Pre-training data: blockwise and cloze masking, sentence-pair blocks, and the datasets of
``--task pmlm`` (UniLMv2), ``--task unilm`` (UniLM v1) and ``--task palm_pretrain`` (PALM)."""

from .blockwise_masking import blockwise_mask_steps
from .palm_fragments import Fragment, FragmentStats, corpus_fragments, document_fragments
from .palm_pretrain_dataset import PALMPretrainDataset
from .pmlm_dataset import PMLMDataset
from .segment_pair_dataset import SegmentPairDataset

__all__ = [
    "Fragment",
    "FragmentStats",
    "PALMPretrainDataset",
    "PMLMDataset",
    "SegmentPairDataset",
    "blockwise_mask_steps",
    "corpus_fragments",
    "document_fragments",
]
