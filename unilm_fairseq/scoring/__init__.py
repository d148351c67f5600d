"""Scorers for ``fairseq-generate --scoring``; the metrics themselves are pure functions in ``metrics``."""

from .rouge import RougeScorer  # noqa: F401
