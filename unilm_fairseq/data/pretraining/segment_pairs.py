"""Two-segment examples "[SOS] A [EOS] B [EOS]" built from token blocks, as pure functions.

UniLM v1 (bidirectional and seq2seq objectives) and UniLMv2 pre-training pack
two segments of text this way (UniLM v1 §2.1, UniLMv2 §2.2).
"""

from typing import List, Tuple

import numpy as np

# "[SOS]" plus one "[EOS]" closing each of the two segments
SPECIAL_TOKENS_PER_PAIR = 3


def split_sentences(block: np.ndarray, eos: int) -> List[np.ndarray]:
    """Sentences of a block, their eos removed, empty ones dropped."""
    pieces = np.split(block, np.flatnonzero(block == eos) + 1)
    return [p[p != eos] for p in pieces if (p != eos).any()]


def sentence_starts(block: np.ndarray, eos: int) -> Tuple[np.ndarray, np.ndarray]:
    """The sentences of :func:`split_sentences` without a list: ``text``, the block without its eos
    tokens, and ``starts``, ``(S,)`` the offset in ``text`` where each non-empty sentence begins.

    Sentence ``s`` is ``text[starts[s]:starts[s + 1]]`` (the last one runs to the end).
    """
    is_eos = block == eos
    text = block[~is_eos]
    piece = np.cumsum(is_eos)[~is_eos]  # the eos-separated piece each text token belongs to
    return text, np.flatnonzero(np.diff(piece, prepend=-1))


def cut_between_sentences(
    sentences: List[np.ndarray], rng: np.random.Generator
) -> Tuple[np.ndarray, np.ndarray]:
    """A: the sentences before a boundary drawn uniformly, B: the rest. Needs two sentences or more."""
    cut = int(rng.integers(1, len(sentences)))
    return np.concatenate(sentences[:cut]), np.concatenate(sentences[cut:])


def trim_pair(len_a: int, len_b: int, budget: int) -> Tuple[int, int]:
    """Lengths kept of two segments so that together they fit ``budget`` tokens.

    The rule of BERT's and UniLM's pre-training data: one token at a time is
    removed from the longer segment, from B when both are as long. (Those
    remove it from the front or the back at random; here always the back.)
    In closed form: the shorter segment stays whole when it fits half the
    budget, the longer one keeps the rest; otherwise A keeps the larger half,
    ``ceil(budget / 2)``, and B ``floor(budget / 2)``.
    """
    if len_a + len_b <= budget:
        return len_a, len_b
    half = budget // 2
    if len_b <= min(len_a, half):
        return budget - len_b, len_b
    if len_a <= min(len_b, half):
        return len_a, budget - len_a
    return budget - half, half


def pair_tokens(
    first: np.ndarray, second: np.ndarray, bos: int, eos: int, max_length: int
) -> Tuple[np.ndarray, int, bool]:
    """ "[SOS] A [EOS] B [EOS]" ("[SOS] A [EOS]" when B is empty), A and B cut by :func:`trim_pair`.

    Returns:
        ``tokens`` ``(N,)`` int64 with ``N <= max_length``; ``source_len``, the
        length of "[SOS] A [EOS]"; ``trimmed``, whether a token was removed.
    """
    budget = max_length - SPECIAL_TOKENS_PER_PAIR + (len(second) == 0)
    len_a, len_b = trim_pair(len(first), len(second), budget)
    trimmed = (len_a, len_b) != (len(first), len(second))
    tokens = np.empty(len_a + len_b + (3 if len_b else 2), dtype=np.int64)
    tokens[0], tokens[len_a + 1], tokens[-1] = bos, eos, eos
    tokens[1 : len_a + 1] = first[:len_a]
    tokens[len_a + 2 : len_a + 2 + len_b] = second[:len_b]
    return tokens, len_a + 2, trimmed


class PairBlockSizes:
    """Sizes of a dataset that lays each block of ``self.dataset`` out as one segment pair.

    An item holds at most the block's tokens plus the pair's special tokens, capped at ``max_length``;
    fairseq batches by that bound. Call :meth:`set_pair_sizes` in ``__init__``.
    """

    def set_pair_sizes(self, block_sizes, max_length: int):
        self._sizes = np.minimum(np.asarray(block_sizes) + SPECIAL_TOKENS_PER_PAIR, max_length)

    def __len__(self):
        return len(self.dataset)

    @property
    def sizes(self):
        return self._sizes

    def size(self, index):
        return int(self._sizes[index])

    def num_tokens(self, index):
        return int(self._sizes[index])

    def num_tokens_vec(self, indices):
        return self._sizes[indices]
