"""The check every scorer runs first: one hypothesis per reference, and at least one of each."""

from typing import Sequence


def check_pairs(hyps: Sequence[str], refs: Sequence[str]) -> None:
    """A clear error for lists of different lengths or empty lists.

    Raises:
        ValueError
    """
    if len(hyps) != len(refs):
        raise ValueError(f"{len(hyps)} hypotheses but {len(refs)} references")
    if not hyps:
        raise ValueError("no hypotheses to score")
