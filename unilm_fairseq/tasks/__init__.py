"""Tasks; fairseq imports this package when loading ``--user-dir unilm_fairseq``."""

from .pmlm import PMLMConfig, PMLMTask  # noqa: F401
from .squad_qa import SquadQAConfig, SquadQATask  # noqa: F401
from .unilm_seq2seq import UniLMSeq2SeqConfig, UniLMSeq2SeqTask  # noqa: F401
