"""Answer SQuAD questions with a trained span head: run every window, then decode per question."""

import logging
from collections import defaultdict
from typing import Dict, List, NamedTuple, Optional, Tuple

import numpy as np
import torch
from fairseq import utils

from ..modules.heads import UNANSWERABLE
from .span_decoding import WindowScores, answer_text, predict_span
from .squad_dataset import SquadWindowDataset

logger = logging.getLogger(__name__)


class Answers(NamedTuple):
    """Per question id: the answer text, its n-best list, the null-score difference (v2.0 tuning) and,
    with the answerability classifier, its probability that the question has no answer."""

    text: Dict[str, str]
    nbest: Dict[str, List[Dict]]
    null_score_diff: Dict[str, float]
    no_answer_prob: Dict[str, float]


@torch.no_grad()
def window_scores(
    model,
    dataset: SquadWindowDataset,
    span_head_name: str,
    batch_size: int = 32,
    answerability_head_name: Optional[str] = None,
) -> Tuple[Dict[int, Tuple[np.ndarray, np.ndarray]], Optional[Dict[int, float]]]:
    """Run every window once.

    Returns:
        ``{window index: ((T,) start scores, (T,) end scores)}`` with T the window's own length, and,
        with ``answerability_head_name``, ``{window index: probability of no answer in the window}``
        (the classifier's softmax; else None).
    """
    model.eval()
    device = next(model.parameters()).device
    order = dataset.ordered_indices()  # similar lengths together: little padding
    scores = {}
    no_answer = {} if answerability_head_name is not None else None
    for begin in range(0, len(order), batch_size):
        batch = dataset.collater([dataset[int(i)] for i in order[begin : begin + batch_size]])
        batch = utils.move_to_cuda(batch, device) if device.type == "cuda" else batch
        logits, extra = model(
            **batch["net_input"],
            span_head_name=span_head_name,
            answerability_head_name=answerability_head_name,
        )  # B x T x 2
        logits = logits.float().cpu().numpy()
        probs = None
        if no_answer is not None:
            probs = torch.softmax(extra["answerability_logits"].float(), dim=-1)[:, UNANSWERABLE].cpu()  # B
        for row, index in enumerate(batch["id"].tolist()):
            length = int(dataset.sizes[index])
            scores[index] = (logits[row, :length, 0], logits[row, :length, 1])
            if probs is not None:
                no_answer[index] = float(probs[row])
    return scores, no_answer


def window_logits(
    model, dataset: SquadWindowDataset, span_head_name: str, batch_size: int = 32
) -> Dict[int, Tuple[np.ndarray, np.ndarray]]:
    """``{window index: ((T,) start scores, (T,) end scores)}`` with T the window's own length."""
    return window_scores(model, dataset, span_head_name, batch_size)[0]


def decode_answers(
    dataset: SquadWindowDataset,
    scores: Dict[int, Tuple[np.ndarray, np.ndarray]],
    n_best: int = 20,
    max_answer_length: int = 30,
    allow_no_answer: bool = False,
    null_score_diff_threshold: float = 0.0,
    no_answer_probs: Optional[Dict[int, float]] = None,
    answerability_threshold: float = 0.5,
) -> Answers:
    """Every question of ``dataset.examples`` answered; a question with no window (skipped) gets "".

    With ``no_answer_probs`` (the answerability classifier's, :func:`window_scores`), v2.0's "no
    answer" follows the classifier and ``answerability_threshold``, not the null-span rule
    (:func:`unilm_fairseq.qa.span_decoding.predict_span`).
    """
    windows_of = defaultdict(list)
    for index, window in enumerate(dataset.windows):
        question_length = len(dataset.tokenized[window.example].question_ids)
        start, end = scores[index]
        no_answer = None if no_answer_probs is None else no_answer_probs[index]
        windows_of[window.example].append(
            WindowScores(start, end, question_length + 2, window.doc_start, window.max_context, no_answer)
        )
    threshold = None if no_answer_probs is None else answerability_threshold
    answers = Answers({}, {}, {}, {})
    unanswered = 0
    for example_index, example in enumerate(dataset.examples):
        if example_index not in windows_of:
            unanswered += 1
            answers.text[example.qid] = ""
            continue
        spans = dataset.tokenized[example_index].doc_spans
        prediction = predict_span(
            windows_of[example_index], n_best, max_answer_length, allow_no_answer, null_score_diff_threshold,
            threshold,
        )  # fmt: skip
        answers.text[example.qid] = answer_text(example.context, spans, prediction.span)
        answers.nbest[example.qid] = [
            {"text": answer_text(example.context, spans, s), "score": s.score} for s in prediction.nbest
        ]
        answers.null_score_diff[example.qid] = prediction.null_score_diff
        if prediction.no_answer_prob is not None:
            answers.no_answer_prob[example.qid] = prediction.no_answer_prob
    if unanswered:
        logger.warning(
            "%d questions were skipped when loading (see the counts above): answered ''", unanswered
        )
    return answers
