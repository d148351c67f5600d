"""Blockwise masking (UniLMv2, Algorithm 1) and BERT-style corruption, as pure functions."""

import math
from typing import List, Tuple

import numpy as np

from ..masking import MaskingConfig

# Attempts allowed per token before falling back to single-token picks; the
# fallback only triggers on sequences too short or too fragmented for spans.
ATTEMPTS_PER_TOKEN = 10
# 0.15 * 20 is 3.0000000000000004 in floating point; ceil must still give 3
FLOAT_SLACK = 1e-9
# numpy's Generator.random(): the top 53 bits of a 64-bit draw, times 2**-53
DOUBLE_UNIT = 1.0 / (1 << 53)
UINT32 = 0xFFFFFFFF


def pcg64_draws(rng: np.random.Generator, chunk: int):
    """``rng.random()`` and ``rng.integers(low, high)`` of a PCG64 generator, the same numbers computed
    in Python from raw 64-bit draws taken ``chunk`` at a time; Algorithm 1 draws one value at a time, and
    a call into numpy costs more than the arithmetic.

    The arithmetic is numpy's for a ``PCG64`` bit generator (tests hold it to the installed numpy):
    ``random()`` is the top 53 bits of one 64-bit draw times ``2**-53``; ``integers(low, high)`` with
    ``high - low <= 2**32`` is Lemire's bounded method over 32-bit draws (``low`` with no draw when
    ``high - low == 1``), and a 32-bit draw is the low half of a fresh 64-bit draw, its high half kept
    for the next 32-bit draw (kept across ``random()`` calls too). Tests check the numbers and the
    generator's state afterwards against the generator's own calls.

    Returns:
        ``random()``, ``integers(low, high)`` and ``finish()``, which leaves ``rng`` exactly where its
        own calls would have: the unused raw draws are stepped back and the kept half restored.
    """
    bitgen = rng.bit_generator
    state = bitgen.state
    raw = bitgen.random_raw(chunk).tolist()
    pos = 0
    has_half, half = state["has_uint32"], state["uinteger"]

    def refill() -> None:
        raw.extend(bitgen.random_raw(chunk).tolist())

    def random() -> float:
        nonlocal pos
        if pos == len(raw):
            refill()
        pos += 1
        return (raw[pos - 1] >> 11) * DOUBLE_UNIT

    def integers(low: int, high: int) -> int:
        nonlocal pos, has_half, half
        span = high - low
        if span == 1:
            return low
        # Lemire: accept m = draw * span unless its low 32 bits fall below 2**32 mod span (the biased zone)
        threshold = (UINT32 + 1 - span) % span
        while True:
            if has_half:  # the kept high half of the last 64-bit draw
                has_half, draw = 0, half
            else:
                if pos == len(raw):
                    refill()
                has_half, half, draw = 1, raw[pos] >> 32, raw[pos] & UINT32
                pos += 1
            m = draw * span
            if m & UINT32 >= threshold:
                return low + (m >> 32)

    def finish() -> None:
        unused = len(raw) - pos
        if unused:
            bitgen.advance((1 << 128) - unused)  # back by `unused` draws (the period is 2**128)
        final = bitgen.state
        final["has_uint32"], final["uinteger"] = has_half, half
        bitgen.state = final

    return random, integers, finish


def blockwise_mask_spans(
    maskable: np.ndarray,
    rng: np.random.Generator,
    mask_prob: float = MaskingConfig.mask_prob,
    span_prob: float = 0.4,
    min_span: int = 2,
    max_span: int = 6,
) -> Tuple[np.ndarray, np.ndarray]:
    """Choose masked spans (UniLMv2 §3.1.2, Algorithm 1); each span is one factorization step.

    Until ``mask_prob`` of the maskable tokens are covered: with probability
    ``span_prob`` draw a span length uniform in ``[min_span, max_span]``, else
    length 1; draw a start uniformly; keep the span only if every token in it is
    maskable and not yet masked. The kept spans are returned in a random order.

    The draws are made one at a time, as each depends on what was kept before,
    but a default (PCG64) generator's are computed by :func:`pcg64_draws`
    rather than by one numpy call each (the same numbers); the free positions
    are a byte string searched and cleared in C, so no per-span array is
    built. :func:`blockwise_mask_steps` gives the same spans as arrays of
    positions.

    Args:
        maskable: ``(N,)`` bool, False for special tokens.
        rng: the example's seeded generator.
    Returns:
        ``starts`` and ``lengths``, ``(K,)`` int64 each, in factorization order:
        step ``i`` masks positions ``starts[i] .. starts[i] + lengths[i] - 1``.
    """
    n = len(maskable)
    n_maskable = int(np.count_nonzero(maskable))
    if n_maskable == 0:
        return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64)
    budget = max(1, math.ceil(mask_prob * n_maskable - FLOAT_SLACK))  # "until at least 15%"
    free = bytearray(np.asarray(maskable, dtype=bool).tobytes())  # 1: maskable and not yet masked
    cleared = [bytes(length) for length in range(max(max_span, 0) + 1)]  # zeros that mark a span
    # default_rng's generator, and ranges its 32-bit path covers (numpy's own calls raise on bad spans)
    if type(rng.bit_generator) is np.random.PCG64 and n <= UINT32 and 1 <= min_span <= max_span < UINT32:
        random, integers, finish = pcg64_draws(rng, chunk=budget + 16)
    else:
        random, finish = rng.random, None

        def integers(low: int, high: int) -> int:
            return int(rng.integers(low, high))

    starts: List[int] = []
    lengths: List[int] = []
    covered = 0
    for _ in range(ATTEMPTS_PER_TOKEN * n):
        if covered >= budget:
            break
        length = integers(min_span, max_span + 1) if random() < span_prob else 1
        if length > n:
            continue
        start = integers(0, n - length + 1)
        end = start + length
        if free.find(0, start, end) >= 0:  # a special or an already masked token in the span
            continue
        free[start:end] = cleared[length] if 0 <= length <= max_span else bytes(max(length, 0))
        starts.append(start)
        lengths.append(length)
        covered += length
    if finish is not None:
        finish()
    if covered < budget:
        left = np.flatnonzero(np.frombuffer(free, dtype=np.uint8))
        for position in rng.permutation(left)[: budget - covered]:
            starts.append(int(position))
            lengths.append(1)
    order = rng.permutation(len(starts))
    return np.asarray(starts, dtype=np.int64)[order], np.asarray(lengths, dtype=np.int64)[order]


def blockwise_mask_steps(
    maskable: np.ndarray,
    rng: np.random.Generator,
    mask_prob: float = MaskingConfig.mask_prob,
    span_prob: float = 0.4,
    min_span: int = 2,
    max_span: int = 6,
) -> List[np.ndarray]:
    """Choose masked spans; each span is one factorization step.

    The spans of :func:`blockwise_mask_spans` (same arguments, same draws),
    each as the array of its positions.

    Args:
        maskable: ``(N,)`` bool, False for special tokens.
        rng: the example's seeded generator.
    Returns:
        list of ``(len_i,)`` int arrays of positions, in factorization order.
    """
    starts, lengths = blockwise_mask_spans(maskable, rng, mask_prob, span_prob, min_span, max_span)
    return [np.arange(s, s + n) for s, n in zip(starts.tolist(), lengths.tolist())]


def span_positions(starts: np.ndarray, lengths: np.ndarray) -> np.ndarray:
    """``(sum(lengths),)`` int64: the positions of every span, span after span (no Python loop)."""
    total = int(lengths.sum())
    before = np.cumsum(lengths) - lengths  # tokens of the spans before each one
    return np.repeat(starts - before, lengths) + np.arange(total, dtype=np.int64)
