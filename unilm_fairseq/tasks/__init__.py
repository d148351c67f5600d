"""Tasks; fairseq imports this package when loading ``--user-dir unilm_fairseq``."""

from .pmlm import PMLMConfig, PMLMTask  # noqa: F401
