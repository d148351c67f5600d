"""Answer spans from start/end scores, over all windows of a question (BERT's SQuAD decoding).

Positions are passage-token indices (``doc_start``/``doc_end``, inclusive), so spans from different
windows of one passage compare directly; the answer text is then cut from the original passage by
the tokens' character spans (:func:`answer_text`).
"""

from typing import List, NamedTuple, Optional, Sequence, Tuple

import numpy as np

from ..modules.heads import NO_ANSWER_POSITION


class WindowScores(NamedTuple):
    """One window's ``(T,)`` start and end scores, where its passage sits, and its max-context flags.

    ``passage_offset``: input position of the window's first passage token; ``doc_start``: that
    token's index in the passage; ``max_context`` ``(L,)``: the window is the best place to read each
    of its ``L`` passage tokens; ``no_answer_prob``: the answerability classifier's probability that
    the window holds no answer (None without the classifier).
    """

    start_logits: np.ndarray
    end_logits: np.ndarray
    passage_offset: int
    doc_start: int
    max_context: Sequence[bool]
    no_answer_prob: Optional[float] = None


class Span(NamedTuple):
    score: float
    doc_start: int
    doc_end: int


class Prediction(NamedTuple):
    """The chosen span (None: no answer), the n-best spans, null score minus best span score, and the
    classifier's probability that the question has no answer (None without the classifier)."""

    span: Optional[Span]
    nbest: List[Span]
    null_score_diff: float
    no_answer_prob: Optional[float] = None


def window_spans(window: WindowScores, n_best: int, max_answer_length: int) -> List[Span]:
    """The ``n_best`` best spans of one window, by start score + end score.

    Candidates pair the ``n_best`` best passage starts with the ``n_best`` best passage ends; a span
    must have ``start <= end``, at most ``max_answer_length`` tokens, and a start token for which this
    window has the maximal context.
    """
    length = len(window.max_context)
    begin = window.passage_offset
    starts = np.asarray(window.start_logits, dtype=np.float64)[begin : begin + length]  # L
    ends = np.asarray(window.end_logits, dtype=np.float64)[begin : begin + length]  # L
    spans = []
    for i in np.argsort(-starts, kind="stable")[:n_best]:
        if not window.max_context[i]:
            continue
        for j in np.argsort(-ends, kind="stable")[:n_best]:
            if i <= j < i + max_answer_length:
                score = float(starts[i] + ends[j])
                spans.append(Span(score, window.doc_start + int(i), window.doc_start + int(j)))
    spans.sort(key=lambda s: -s.score)
    return spans[:n_best]


def null_score(window: WindowScores) -> float:
    """Score of "no answer" in a window: start and end both at [SOS]."""
    return float(window.start_logits[NO_ANSWER_POSITION] + window.end_logits[NO_ANSWER_POSITION])


def question_no_answer_prob(windows: Sequence[WindowScores]) -> float:
    """The probability that a question has no answer: the lowest of its windows' ``no_answer_prob``.

    The question has an answer when any window holds it, so the window most sure of an answer decides,
    as the lowest null score does for the null-span rule (this project's choice; UniLMv2 §4.2 does not
    say how windows combine).
    """
    probs = [w.no_answer_prob for w in windows]
    if not probs or any(p is None for p in probs):
        raise ValueError("the answerability rule needs every window's no_answer_prob (the classifier's)")
    return float(min(probs))


def predict_span(
    windows: Sequence[WindowScores],
    n_best: int = 20,
    max_answer_length: int = 30,
    allow_no_answer: bool = False,
    null_score_diff_threshold: float = 0.0,
    answerability_threshold: Optional[float] = None,
) -> Prediction:
    """The answer to one question from all its windows.

    The best span over all windows wins. With ``allow_no_answer`` (SQuAD v2.0) "no answer" is chosen
    (or when no span qualifies) by one of two rules:

    * null span (default): the null score is the lowest [SOS] score over the windows; "no answer" when
      it exceeds the best span's score by more than ``null_score_diff_threshold``;
    * answerability classifier (``answerability_threshold`` given; UniLMv2 §4.2): "no answer" when
      :func:`question_no_answer_prob` exceeds the threshold, else the best span.
    """
    best = {}
    for window in windows:
        for span in window_spans(window, n_best, max_answer_length):
            key = (span.doc_start, span.doc_end)
            if key not in best or span.score > best[key].score:
                best[key] = span
    nbest = sorted(best.values(), key=lambda s: -s.score)[:n_best]
    null = min((null_score(w) for w in windows), default=float("inf"))
    diff = null - nbest[0].score if nbest else float("inf")
    chosen = nbest[0] if nbest else None
    no_answer_prob = None
    if answerability_threshold is not None:
        no_answer_prob = question_no_answer_prob(windows)
        if allow_no_answer and no_answer_prob > answerability_threshold:
            chosen = None
    elif allow_no_answer and diff > null_score_diff_threshold:
        chosen = None
    return Prediction(chosen, nbest, diff, no_answer_prob)


def answer_text(context: str, doc_spans: Sequence[Tuple[int, int]], span: Optional[Span]) -> str:
    """The passage text from the first character of the start token to the last of the end token."""
    if span is None:
        return ""
    return context[int(doc_spans[span.doc_start][0]) : int(doc_spans[span.doc_end][1])]
