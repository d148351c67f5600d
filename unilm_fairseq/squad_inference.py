"""Answer SQuAD questions with a trained span head: run every window, then decode per question."""

import logging
from collections import defaultdict
from typing import Dict, List, NamedTuple, Tuple

import numpy as np
import torch
from fairseq import utils

from .data.squad_dataset import SquadWindowDataset
from .span_decoding import WindowScores, answer_text, predict_span

logger = logging.getLogger(__name__)


class Answers(NamedTuple):
    """Per question id: the answer text, its n-best list and the null-score difference (v2.0 tuning)."""

    text: Dict[str, str]
    nbest: Dict[str, List[Dict]]
    null_score_diff: Dict[str, float]


@torch.no_grad()
def window_logits(
    model, dataset: SquadWindowDataset, span_head_name: str, batch_size: int = 32
) -> Dict[int, Tuple[np.ndarray, np.ndarray]]:
    """``{window index: ((T,) start scores, (T,) end scores)}`` with T the window's own length."""
    model.eval()
    device = next(model.parameters()).device
    order = dataset.ordered_indices()  # similar lengths together: little padding
    scores = {}
    for begin in range(0, len(order), batch_size):
        batch = dataset.collater([dataset[int(i)] for i in order[begin : begin + batch_size]])
        batch = utils.move_to_cuda(batch, device) if device.type == "cuda" else batch
        logits, _ = model(**batch["net_input"], span_head_name=span_head_name)  # B x T x 2
        logits = logits.float().cpu().numpy()
        for row, index in enumerate(batch["id"].tolist()):
            length = int(dataset.sizes[index])
            scores[index] = (logits[row, :length, 0], logits[row, :length, 1])
    return scores


def decode_answers(
    dataset: SquadWindowDataset,
    scores: Dict[int, Tuple[np.ndarray, np.ndarray]],
    n_best: int = 20,
    max_answer_length: int = 30,
    allow_no_answer: bool = False,
    null_score_diff_threshold: float = 0.0,
) -> Answers:
    """Every question of ``dataset.examples`` answered; a question with no window (skipped) gets ""."""
    windows_of = defaultdict(list)
    for index, window in enumerate(dataset.windows):
        question_length = len(dataset.tokenized[window.example].question_ids)
        start, end = scores[index]
        windows_of[window.example].append(
            WindowScores(start, end, question_length + 2, window.doc_start, window.max_context)
        )
    answers = Answers({}, {}, {})
    unanswered = 0
    for example_index, example in enumerate(dataset.examples):
        if example_index not in windows_of:
            unanswered += 1
            answers.text[example.qid] = ""
            continue
        spans = dataset.tokenized[example_index].doc_spans
        prediction = predict_span(
            windows_of[example_index], n_best, max_answer_length, allow_no_answer, null_score_diff_threshold
        )
        answers.text[example.qid] = answer_text(example.context, spans, prediction.span)
        answers.nbest[example.qid] = [
            {"text": answer_text(example.context, spans, s), "score": s.score} for s in prediction.nbest
        ]
        answers.null_score_diff[example.qid] = prediction.null_score_diff
    if unanswered:
        logger.warning(
            "%d questions were skipped when loading (see the counts above): answered ''", unanswered
        )
    return answers
