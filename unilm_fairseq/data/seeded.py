"""Datasets whose items are random but fixed by (seed, epoch, index)."""

import numpy as np
from fairseq.data import FairseqDataset


class SeededDataset(FairseqDataset):
    """Base of the datasets that draw per item: masks, corruption, objectives.

    Item ``index`` of epoch ``epoch`` draws from :meth:`rng`, a generator seeded
    with ``(seed, epoch, index)`` (plus optional stream ids, so that two
    wrappers over the same item draw independently). An item is therefore the
    same whenever and in whichever worker it is built, and changes from one
    epoch to the next. Items are built afresh on every access: callers may
    modify what they get without affecting anyone else.

    Subclasses implement ``__getitem__`` and ``num_tokens_vec`` (the length
    batches are sorted by).
    """

    def __init__(self, seed: int):
        super().__init__()
        self.seed = seed
        self.epoch = 0

    def set_epoch(self, epoch, **unused):
        self.epoch = epoch

    @property
    def can_reuse_epoch_itr_across_epochs(self):
        """False: fairseq rebuilds the batch iterator each epoch. A reused one keeps its DataLoader, whose
        persistent workers (``--num-workers`` >= 1, fairseq's default) hold copies of the dataset made in
        the first epoch: ``set_epoch`` reaches only the main process's copy, so every epoch would repeat
        the first one's masks. Rebuilding costs one pass of batching over the sizes."""
        return False

    def rng(self, index: int, *stream: int) -> np.random.Generator:
        """The generator of item ``index`` in the current epoch (``stream`` ids extend the seed)."""
        return np.random.default_rng((self.seed, self.epoch, index, *stream))

    def shuffled_indices(self) -> np.ndarray:
        """``(len,)`` a permutation fixed by the seed alone (the same in every epoch)."""
        return np.random.default_rng(self.seed).permutation(len(self))

    def ordered_indices(self):
        """Shuffled (seeded), then stably sorted by ``num_tokens_vec`` so batches pad little."""
        shuffled = self.shuffled_indices()
        return shuffled[np.argsort(self.num_tokens_vec(shuffled), kind="stable")]
