"""Turn token blocks into "[SOS] S1 [EOS] S2 [EOS]" segment pairs."""

import numpy as np
import torch
from fairseq.data import FairseqDataset

from ..complete_batches import CompleteBatchesMixin
from .segment_pairs import SPECIAL_TOKENS_PER_PAIR, cut_between_sentences, pair_tokens, split_sentences


class SegmentPairDataset(CompleteBatchesMixin, FairseqDataset):
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
        # upper bound: every token kept plus the pair's special tokens
        self._sizes = np.minimum(np.asarray(blocks.sizes) + SPECIAL_TOKENS_PER_PAIR, max_length)

    def __len__(self):
        return len(self.dataset)

    @property
    def sizes(self):
        return self._sizes

    def size(self, index):
        return int(self._sizes[index])

    def num_tokens(self, index):
        return int(self._sizes[index])

    def __getitem__(self, index):
        block = self.dataset[index].numpy()
        sentences = split_sentences(block, self.eos)
        if len(sentences) > 1:
            first, second = cut_between_sentences(sentences, np.random.default_rng((self.seed, index)))
        else:
            first = sentences[0] if sentences else block[:0]
            second = block[:0]
        tokens, source_len, _ = pair_tokens(first, second, self.bos, self.eos, self.max_length)
        segments = (np.arange(len(tokens)) >= source_len).astype(np.int64)
        return {"tokens": torch.from_numpy(tokens), "segments": torch.from_numpy(segments)}
