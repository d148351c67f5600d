"""Models; fairseq imports this package when loading ``--user-dir unilm_fairseq``."""

from .unilmv2 import UniLMv2Config, UniLMv2Model  # noqa: F401
