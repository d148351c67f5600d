"""Turn token blocks into "[SOS] S1 [EOS] S2 [EOS]" segment pairs."""

import numpy as np
import torch
from fairseq.data import FairseqDataset

from .complete_batches import CompleteBatchesMixin

# "[SOS]" plus one "[EOS]" closing each of the two segments
SPECIAL_TOKENS_PER_PAIR = 3


class SegmentPairDataset(CompleteBatchesMixin, FairseqDataset):
    """Split each block at a sentence boundary into two segments.

    The block's sentence-final ``eos`` tokens mark the candidate split points;
    interior ones are dropped so each segment ends with exactly one ``[EOS]``.
    A block of one sentence becomes "[SOS] S1 [EOS]". Items longer than
    ``max_length`` lose tokens from the end of their longer segment.

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
        sentences = [s for s in np.split(block, np.flatnonzero(block == self.eos) + 1) if len(s)]
        sentences = [s[s != self.eos] for s in sentences]
        sentences = [s for s in sentences if len(s)]
        if len(sentences) > 1:
            rng = np.random.default_rng((self.seed, index))
            cut = int(rng.integers(1, len(sentences)))
            first, second = np.concatenate(sentences[:cut]), np.concatenate(sentences[cut:])
        else:
            first = sentences[0] if sentences else block[:0]
            second = block[:0]
        budget = self.max_length - SPECIAL_TOKENS_PER_PAIR + (len(second) == 0)
        while len(first) + len(second) > budget:  # trim the longer segment, one token at a time
            if len(first) >= len(second):
                first = first[:-1]
            else:
                second = second[:-1]
        pieces = [[self.bos], first, [self.eos]]
        segments = [np.zeros(len(first) + 2, dtype=np.int64)]
        if len(second):
            pieces += [second, [self.eos]]
            segments.append(np.ones(len(second) + 1, dtype=np.int64))
        tokens = np.concatenate([np.asarray(p, dtype=np.int64) for p in pieces])
        return {"tokens": torch.from_numpy(tokens), "segments": torch.from_numpy(np.concatenate(segments))}
