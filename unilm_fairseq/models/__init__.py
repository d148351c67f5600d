"""Models; fairseq imports this package when loading ``--user-dir unilm_fairseq``."""

from . import unilm_v1  # noqa: F401  (UniLM v1's architectures of the unilmv2 model)
from .palm import PALMConfig, PALMModel  # noqa: F401
from .unilmv2 import UniLMv2Config, UniLMv2Model  # noqa: F401
