"""Span decoding over windows, the span loss and criterion, the span head through the task."""

import math

import numpy as np
import pytest
import torch

from unilm_fairseq.losses import span_losses
from unilm_fairseq.qa.span_decoding import WindowScores, answer_text, predict_span, window_spans

from ..helpers.models import make_dictionary, tiny_config


def window(start, end, passage_offset=3, doc_start=0, max_context=None):
    start, end = np.array(start, dtype=float), np.array(end, dtype=float)
    length = len(start) - passage_offset - 1
    return WindowScores(start, end, passage_offset, doc_start, max_context or (True,) * length)


# input: [SOS] q [EOS] p0 p1 p2 p3 p4 [EOS]; passage offset 3, five passage tokens
NEG = -10.0


def test_best_span_wins_and_question_positions_are_never_used():
    w = window([0, 9, 9, 1, 5, 2, 0, 0, 9], [0, 9, 9, 0, 1, 2, 6, 0, 9])
    spans = window_spans(w, n_best=20, max_answer_length=30)
    assert spans[0] == (5 + 6, 1, 3)  # start p1 (5), end p3 (6); the question's 9s never count
    assert all(0 <= s.doc_start <= s.doc_end <= 4 for s in spans)
    assert [s.score for s in spans] == sorted((s.score for s in spans), reverse=True)


def test_start_after_end_is_never_chosen():
    # the best end (p0) lies before the best start (p3): the best legal pair is p3..p4
    w = window([0, 0, 0, NEG, NEG, NEG, 5, 0, 0], [0, 0, 0, 9, NEG, NEG, NEG, 1, 0])
    assert window_spans(w, 20, 30)[0] == (6.0, 3, 4)
    assert all(s.doc_start <= s.doc_end for s in window_spans(w, 20, 30))


def test_max_answer_length_is_respected():
    w = window([0, 0, 0, 5, 0, 0, 0, 0, 0], [0, 0, 0, 0, 0, 0, 0, 5, 0])
    assert window_spans(w, 20, 5)[0] == (10.0, 0, 4)  # p0..p4: five tokens allowed
    best = window_spans(w, 20, 4)[0]
    assert best.doc_end - best.doc_start + 1 <= 4 and best.score == 5.0


def test_only_starts_with_max_context_count():
    w = window(
        [0, 0, 0, 1, 8, 0, 0, 0, 0], [0, 0, 0, 0, 7, 0, 0, 0, 0], max_context=(True, False) + (True,) * 3
    )
    assert window_spans(w, 20, 30)[0].doc_start != 1


def test_spans_from_several_windows_use_passage_indices():
    # window 2 covers passage tokens 3..7 and holds the best span at its p1 = passage token 4
    first = window([0, 0, 0, 1, 0, 0, 0, 0, 0], [0, 0, 0, 1, 0, 0, 0, 0, 0])
    second = window([0, 0, 0, 0, 7, 0, 0, 0, 0], [0, 0, 0, 0, 0, 7, 0, 0, 0], doc_start=3)
    prediction = predict_span([first, second], n_best=20, max_answer_length=30)
    assert prediction.span == (14.0, 4, 5)


def test_no_answer_against_threshold():
    # null = start[0] + end[0]; the lowest over windows counts
    sure = window([4, 0, 0, 1, 0, 0, 0, 0, 0], [4, 0, 0, 0, 2, 0, 0, 0, 0])  # null 8, best span 3
    other = window([6, 0, 0, 0, 0, 0, 0, 0, 0], [6, 0, 0, 0, 0, 0, 0, 0, 0], doc_start=5)  # null 12
    v2 = predict_span([sure, other], allow_no_answer=True)
    assert v2.span is None and v2.null_score_diff == pytest.approx(8 - 3)
    assert predict_span([sure, other], allow_no_answer=True, null_score_diff_threshold=5.5).span == (
        3.0,
        0,
        1,
    )
    assert predict_span([sure, other], allow_no_answer=False).span == (3.0, 0, 1)  # v1.1: always a span


def test_answer_text_comes_from_the_original_passage():
    context = "The  Light-house, built 1874."
    spans = [(0, 3), (5, 10), (10, 11), (11, 16), (16, 17), (18, 23), (24, 28), (28, 29)]
    # passage tokens: The, Light, -, house, ",", built, 1874, "."; best span: tokens 1..3
    scores = window([0] * 3 + [0, 5, 0, 0, 0, 0, 0, 0, 0], [0] * 3 + [0, 0, 0, 5, 0, 0, 0, 0, 0])
    assert answer_text(context, spans, predict_span([scores]).span) == "Light-house"
    assert answer_text(context, spans, None) == ""


def test_span_losses_hand_checked():
    # one window, T = 4; positions 1 and 2 are the question: masked out
    logits = torch.tensor([[[1.0, 0.0], [50.0, 50.0], [50.0, 50.0], [1.0, 2.0]]])
    span_mask = torch.tensor([[True, False, False, True]])
    start_loss, end_loss = span_losses(logits, span_mask, torch.tensor([3]), torch.tensor([0]))
    assert start_loss.item() == pytest.approx(math.log(2))  # equal scores 1, 1 over two positions
    assert end_loss.item() == pytest.approx(math.log(1 + math.exp(2)))  # -log(e^0 / (e^0 + e^2))


def test_span_losses_fp16_no_overflow():
    logits = torch.randn(2, 6, 2).half()
    mask = torch.tensor([[True, False, True, True, False, False], [True, False, False, True, True, True]])
    start_loss, end_loss = span_losses(logits, mask, torch.tensor([2, 5]), torch.tensor([0, 4]))
    assert torch.isfinite(start_loss).all() and torch.isfinite(end_loss).all()


def test_criterion_loss_and_accuracy(tmp_path):
    from unilm_fairseq.criterions.squad_span import SquadSpanCriterion
    from unilm_fairseq.models.unilmv2 import UniLMv2Model

    class Task:
        class cfg:
            span_head_name = "qa"

    torch.manual_seed(0)
    model = UniLMv2Model(tiny_config(), make_dictionary())
    model.register_span_head("qa")
    d = model.dictionary
    tokens = torch.tensor([[d.bos(), 5, d.eos(), 6, 7, d.eos()], [d.bos(), 5, d.eos(), 8, d.eos(), d.pad()]])
    span_mask = torch.tensor(
        [[True, False, False, True, True, False], [True, False, False, True, False, False]]
    )
    target = torch.tensor([[3, 4], [0, 0]])
    sample = {"net_input": {"src_tokens": tokens}, "target": target, "span_mask": span_mask,
              "nsentences": 2, "ntokens": 11}  # fmt: skip
    loss, sample_size, log = SquadSpanCriterion(Task)(model.eval(), sample)
    logits, _ = model(src_tokens=tokens, span_head_name="qa")
    start_loss, end_loss = span_losses(logits, span_mask, target[:, 0], target[:, 1])
    assert sample_size == 2
    assert loss.item() == pytest.approx(((start_loss + end_loss) / 2).sum().item())
    masked = logits.masked_fill(~span_mask.unsqueeze(-1), float("-inf")).argmax(1)
    assert log["start_correct"] == int(masked[:, 0].eq(target[:, 0]).sum())
    # the second window has only [SOS] and one passage token to choose from
    assert masked[1, 0].item() in (0, 3) and masked[1, 1].item() in (0, 3)
