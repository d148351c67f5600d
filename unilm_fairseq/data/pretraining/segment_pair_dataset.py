"""Turn token blocks into "[SOS] S1 [EOS] S2 [EOS]" segment pairs."""

import numpy as np
import torch
from fairseq.data import FairseqDataset

from ..complete_batches import CompleteBatchesMixin
from .segment_pairs import PairBlockSizes, pair_tokens, sentence_starts


class SegmentPairDataset(PairBlockSizes, CompleteBatchesMixin, FairseqDataset):
    """Split each block at a sentence boundary into two segments.

    The block's sentence-final ``eos`` tokens mark the candidate split points;
    interior ones are dropped so each segment ends with exactly one ``[EOS]``.
    A block of one sentence becomes "[SOS] S1 [EOS]". Items longer than
    ``max_length`` are trimmed by :func:`~unilm_fairseq.data.pretraining.segment_pairs.trim_pair`.

    Item: ``{"tokens": (N,) long, "segments": (N,) long}`` with ``N <= max_length``.
    """

    def __init__(self, blocks, dictionary, max_length: int, seed: int):
        super().__init__()
        self.dataset = blocks
        self.bos = dictionary.bos()
        self.eos = dictionary.eos()
        self.max_length = max_length
        self.seed = seed
        self.set_pair_sizes(blocks.sizes, max_length)

    def __getitem__(self, index):
        block = self.dataset[index].numpy()
        # split_sentences and cut_between_sentences (the same draw) without a list of sentences
        text, starts = sentence_starts(block, self.eos)
        if len(starts) > 1:
            cut = int(np.random.default_rng((self.seed, index)).integers(1, len(starts)))
            first, second = text[: starts[cut]], text[starts[cut] :]
        else:
            first, second = text, text[:0]
        tokens, source_len, _ = pair_tokens(first, second, self.bos, self.eos, self.max_length)
        segments = (np.arange(len(tokens)) >= source_len).astype(np.int64)
        return {"tokens": torch.from_numpy(tokens), "segments": torch.from_numpy(segments)}
