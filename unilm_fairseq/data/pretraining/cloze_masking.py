"""UniLM v1 cloze masking (Dong et al. 2019, section 2.3), as a pure function.

Of the maskable tokens, ``mask_prob`` (rounded, at least one) are masked,
never more than ``max_predictions``. Masking proceeds pick by pick: a pick is
one token with probability ``1 - span_prob``, otherwise an n-gram whose length
is uniform in ``[2, max_span]`` (the paper: 80% single tokens, 20% a bigram or
a trigram). A pick's start is drawn uniformly among the positions where the
whole n-gram is maskable and not yet masked, so the kind of a pick is decided
before its place and the 80/20 split holds. The last pick is shortened when
fewer tokens than its length remain in the budget; when no free n-gram of the
drawn length exists, the pick falls back to one token.
"""

from typing import List

import numpy as np

from ..masking import MaskingConfig

# halves round up even when floating point lands just below them (0.35 * 90 is 31.499999999999996)
FLOAT_SLACK = 1e-9


def cloze_budget(n_maskable: int, mask_prob: float, max_predictions: int = 0) -> int:
    """Number of tokens to mask: ``mask_prob * n`` rounded half up, at least 1 (0 without
    maskable tokens), at most ``max_predictions`` when that is positive."""
    if n_maskable == 0:
        return 0
    budget = max(1, int(np.floor(mask_prob * n_maskable + 0.5 + FLOAT_SLACK)))
    return min(budget, max_predictions) if max_predictions > 0 else budget


def free_starts(free: np.ndarray, length: int) -> np.ndarray:
    """Positions ``s`` where ``free[s:s+length]`` is all True. ``(N,) bool -> (K,) int``."""
    if length > len(free):
        return np.zeros(0, dtype=np.int64)
    run = np.concatenate([[0], np.cumsum(free)])
    return np.flatnonzero(run[length:] - run[:-length] == length)


def cloze_mask_picks(
    maskable: np.ndarray,
    rng: np.random.Generator,
    mask_prob: float = MaskingConfig.mask_prob,
    span_prob: float = 0.2,
    max_span: int = 3,
    max_predictions: int = 0,
) -> List[np.ndarray]:
    """Choose the masked positions, grouped by pick (module docstring).

    Args:
        maskable: ``(N,)`` bool, False for special tokens.
        rng: the example's seeded generator.
        max_predictions: cap on masked tokens, 0 for none.
    Returns:
        list of ``(len_i,)`` int arrays of consecutive positions, one per pick,
        in the order they were drawn; disjoint, all maskable.
    """
    if max_span < 2 and span_prob > 0:
        raise ValueError(f"n-gram picks need max_span >= 2, got {max_span}")
    free = np.asarray(maskable, dtype=bool).copy()
    remaining = cloze_budget(int(free.sum()), mask_prob, max_predictions)
    picks: List[np.ndarray] = []
    while remaining > 0:
        length = int(rng.integers(2, max_span + 1)) if rng.random() < span_prob else 1
        length = min(length, remaining)
        starts = free_starts(free, length)
        if len(starts) == 0:
            length, starts = 1, np.flatnonzero(free)
        start = int(rng.choice(starts))
        free[start : start + length] = False
        picks.append(np.arange(start, start + length))
        remaining -= length
    return picks
