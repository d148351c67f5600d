"""Tasks; fairseq imports this package when loading ``--user-dir unilm_fairseq``."""

from .palm_pretrain import PALMPretrainConfig, PALMPretrainTask  # noqa: F401
from .palm_seq2seq import PALMSeq2SeqConfig, PALMSeq2SeqTask  # noqa: F401
from .pmlm import PMLMConfig, PMLMTask  # noqa: F401
from .squad_qa import SquadQAConfig, SquadQATask  # noqa: F401
from .unilm import UniLMConfig, UniLMTask  # noqa: F401
from .unilm_sentence_prediction import UniLMSentencePredictionTask  # noqa: F401
from .unilm_seq2seq import UniLMSeq2SeqConfig, UniLMSeq2SeqTask  # noqa: F401
