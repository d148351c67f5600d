"""Leave some items of a dataset out of every epoch, keeping the others' ids (raw line numbers)."""

import numpy as np
from fairseq.data import BaseWrapperDataset

from .complete_batches import CompleteBatchesMixin


class SkipIndicesDataset(CompleteBatchesMixin, BaseWrapperDataset):
    """``dataset`` without the items ``skip``: they never enter a batch.

    Indexing is unchanged (sample ids stay the raw line numbers); only
    :meth:`ordered_indices`, which every fairseq batch iterator starts from, drops them.
    """

    def __init__(self, dataset, skip):
        super().__init__(dataset)
        self.skip = np.asarray(skip, dtype=np.int64)

    def ordered_indices(self):
        indices = self.dataset.ordered_indices()
        return indices[~np.isin(indices, self.skip)]
