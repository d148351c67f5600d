"""Bootstrap resampling over test pairs: how far a mean score could move with another test sample of the
same size, and whether one system's lead over another holds across such samples.

A resample draws as many pairs as the test set has, with replacement. Every system is scored on the same
resamples, so a comparison between two systems is paired: it resamples their per-pair differences, which
is Koehn's paired bootstrap test (EMNLP 2004) for a mean-over-pairs metric such as ROUGE F1. The
interval is the percentile interval of the resampled means (Efron and Tibshirani, 1993). These describe
the test sample only: a second training run (another seed) moves the scores as well, and by how much is
measured separately (``examples/aclsum/seeds.sh``).
"""

import argparse
from dataclasses import dataclass
from typing import Sequence, Tuple

import numpy as np

DEFAULT_CONFIDENCE = 0.95


def add_bootstrap_options(parser: argparse.ArgumentParser, help_text: str) -> None:
    """``--bootstrap N`` (0, the default: off) and ``--bootstrap-seed`` of the scripts that score with ROUGE;
    :func:`check_bootstrap_options` checks them once parsed."""
    parser.add_argument("--bootstrap", type=int, default=0, metavar="N", help=help_text)
    parser.add_argument("--bootstrap-seed", type=int, default=1, help="seed of the resamples (default 1)")


def check_bootstrap_options(parser: argparse.ArgumentParser, args: argparse.Namespace) -> None:
    """Exit through ``parser.error`` for a negative ``--bootstrap``, or one with ``--rouge-backend perl``,
    whose script reports only its own intervals, not the per-pair scores a bootstrap resamples."""
    if args.bootstrap < 0:
        parser.error(f"--bootstrap {args.bootstrap}: must be 0 (off) or more")
    if args.bootstrap and args.rouge_backend == "perl":
        parser.error("--bootstrap resamples rouge-score's per-pair scores; the perl backend prints its own "
                     "95% intervals (scripts/score.py --rouge-backend perl)")  # fmt: skip


def resample_indices(num_pairs: int, resamples: int, seed: int = 1) -> np.ndarray:
    """``(resamples, num_pairs)`` pair indices drawn with replacement, the same for a given seed."""
    if num_pairs < 1:
        raise ValueError(f"no pairs to resample ({num_pairs})")
    if resamples < 1:
        raise ValueError(f"resamples must be 1 or more, got {resamples}")
    return np.random.default_rng(seed).integers(0, num_pairs, size=(resamples, num_pairs))


def _check(values: Sequence[float], indices: np.ndarray) -> np.ndarray:
    array = np.asarray(values, dtype=np.float64)
    if array.ndim != 1 or array.shape[0] != indices.shape[1]:
        raise ValueError(f"{array.shape[0] if array.ndim == 1 else array.shape} per-pair values for "
                         f"resamples of {indices.shape[1]} pairs")  # fmt: skip
    return array


def _percentiles(means: np.ndarray, confidence: float) -> Tuple[float, float]:
    if not 0.0 < confidence < 1.0:
        raise ValueError(f"confidence must be between 0 and 1, got {confidence}")
    tail = 100.0 * (1.0 - confidence) / 2.0
    low, high = np.percentile(means, [tail, 100.0 - tail])
    return float(low), float(high)


def mean_interval(
    values: Sequence[float], indices: np.ndarray, confidence: float = DEFAULT_CONFIDENCE
) -> Tuple[float, float]:
    """The percentile interval of the mean of ``values`` (one per pair) over the resamples ``indices``."""
    array = _check(values, indices)
    return _percentiles(array[indices].mean(axis=1), confidence)


@dataclass(frozen=True)
class PairedComparison:
    """System A against system B on the same pairs: A's mean minus B's, the percentile interval of that
    difference over the resamples, and ``not_ahead``: the share of resamples in which A does not keep
    the side of B it is on in the whole test set (the one-sided p-value of the paired bootstrap; 1.0 when
    the two means are equal)."""

    difference: float
    low: float
    high: float
    not_ahead: float


def paired_comparison(
    a: Sequence[float],
    b: Sequence[float],
    indices: np.ndarray,
    confidence: float = DEFAULT_CONFIDENCE,
) -> PairedComparison:
    """A's per-pair scores against B's, resampled pair by pair together (see :class:`PairedComparison`)."""
    differences = _check(a, indices) - _check(b, indices)
    observed = float(differences.mean())
    means = differences[indices].mean(axis=1)
    if observed > 0:
        not_ahead = float(np.mean(means <= 0))
    elif observed < 0:
        not_ahead = float(np.mean(means >= 0))
    else:
        not_ahead = 1.0
    low, high = _percentiles(means, confidence)
    return PairedComparison(observed, low, high, not_ahead)
