"""Models; fairseq imports this package when loading ``--user-dir unilm_fairseq``."""

from .palm import PALMConfig, PALMModel  # noqa: F401
from .unilmv2 import UniLMv2Config, UniLMv2Model  # noqa: F401
