"""Blockwise masking (UniLMv2, Algorithm 1) and BERT-style corruption, as pure functions."""

import math
from typing import List

import numpy as np

from ..masking import MaskingConfig

# Attempts allowed per token before falling back to single-token picks; the
# fallback only triggers on sequences too short or too fragmented for spans.
ATTEMPTS_PER_TOKEN = 10
# 0.15 * 20 is 3.0000000000000004 in floating point; ceil must still give 3
FLOAT_SLACK = 1e-9


def blockwise_mask_steps(
    maskable: np.ndarray,
    rng: np.random.Generator,
    mask_prob: float = MaskingConfig.mask_prob,
    span_prob: float = 0.4,
    min_span: int = 2,
    max_span: int = 6,
) -> List[np.ndarray]:
    """Choose masked spans; each span is one factorization step.

    Until ``mask_prob`` of the maskable tokens are covered: with probability
    ``span_prob`` draw a span length uniform in ``[min_span, max_span]``, else
    length 1; draw a start uniformly; keep the span only if every token in it is
    maskable and not yet masked. The kept spans are returned in a random order.

    Args:
        maskable: ``(N,)`` bool, False for special tokens.
        rng: the example's seeded generator.
    Returns:
        list of ``(len_i,)`` int arrays of positions, in factorization order.
    """
    n = len(maskable)
    n_maskable = int(maskable.sum())
    if n_maskable == 0:
        return []
    budget = max(1, math.ceil(mask_prob * n_maskable - FLOAT_SLACK))  # "until at least 15%"
    taken = np.zeros(n, dtype=bool)
    steps: List[np.ndarray] = []
    covered = 0
    for _ in range(ATTEMPTS_PER_TOKEN * n):
        if covered >= budget:
            break
        length = int(rng.integers(min_span, max_span + 1)) if rng.random() < span_prob else 1
        if length > n:
            continue
        start = int(rng.integers(0, n - length + 1))
        span = slice(start, start + length)
        if not maskable[span].all() or taken[span].any():
            continue
        taken[span] = True
        steps.append(np.arange(start, start + length))
        covered += length
    if covered < budget:
        free = np.flatnonzero(maskable & ~taken)
        for position in rng.permutation(free)[: budget - covered]:
            steps.append(np.array([position]))
    order = rng.permutation(len(steps))
    return [steps[i] for i in order]
