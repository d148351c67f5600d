from .blockwise_masking import blockwise_mask_steps, corrupt_masked
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
    "corrupt_masked",
    "document_fragments",
]
