"""Batching that never leaves items out.

With ``--required-batch-size-multiple`` above 1 (fairseq's default is 8), fairseq
0.12's ``batch_by_size`` silently drops the last partial batch: 13 test pairs with
``--batch-size 8`` give one batch of 8 and no hypotheses for the other 5, and a
training set loses the same few items every epoch. The datasets of this plugin
put those items back, in batches of their own.
"""

import logging

import numpy as np

logger = logging.getLogger(__name__)


class CompleteBatchesMixin:
    """Mix into a ``FairseqDataset`` (before it in the bases) to keep every index in some batch."""

    def batch_by_size(self, indices, max_tokens=None, max_sentences=None, required_batch_size_multiple=1):
        batches = super().batch_by_size(
            indices, max_tokens=max_tokens, max_sentences=max_sentences,
            required_batch_size_multiple=required_batch_size_multiple,
        )  # fmt: skip
        indices = np.asarray(indices)
        placed = np.concatenate(batches) if len(batches) else np.empty(0, dtype=indices.dtype)
        missing = indices[~np.isin(indices, placed)]
        if len(missing) == 0:
            return batches
        logger.debug("%d items left out by batch_by_size go into batches of their own", len(missing))
        tail = super().batch_by_size(
            missing, max_tokens=max_tokens, max_sentences=max_sentences, required_batch_size_multiple=1
        )
        return list(batches) + list(tail)
