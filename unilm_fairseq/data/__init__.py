from .blockwise_masking import blockwise_mask_steps, corrupt_masked
from .pmlm_dataset import PMLMDataset
from .segment_pair_dataset import SegmentPairDataset

__all__ = ["PMLMDataset", "SegmentPairDataset", "blockwise_mask_steps", "corrupt_masked"]
