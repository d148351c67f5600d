from .ae_par import AEPARCriterion  # noqa: F401
from .palm import PALMCriterion  # noqa: F401
from .squad_span import SquadSpanCriterion  # noqa: F401
from .unilm import UniLMCriterion  # noqa: F401
from .unilm_seq2seq import UniLMSeq2SeqCriterion  # noqa: F401
