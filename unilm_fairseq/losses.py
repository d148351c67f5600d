"""Loss math as pure functions; criteria only do the bookkeeping."""

from typing import Tuple

import torch
from fairseq.criterions.label_smoothed_cross_entropy import label_smoothed_nll_loss
from torch import Tensor

from .modules.heads import ANSWERABLE, NO_ANSWER_POSITION, UNANSWERABLE


def token_losses(logits: Tensor, target: Tensor, label_smoothing: float = 0.0) -> Tuple[Tensor, Tensor]:
    """Per-token (smoothed) cross-entropy in nats, computed in float32.

    Args:
        logits: ``(N, V)``; target: ``(N,)``.
    Returns:
        ``(loss, nll_loss)``, each ``(N,)``.
    """
    return lprob_losses(torch.log_softmax(logits.float(), dim=-1), target, label_smoothing)


def lprob_losses(lprobs: Tensor, target: Tensor, label_smoothing: float = 0.0) -> Tuple[Tensor, Tensor]:
    """Per-token (smoothed) NLL in nats under given ``(N, V)`` log-probabilities; ``(N,)`` targets.

    Returns ``(loss, nll_loss)``, each ``(N,)``.
    """
    loss, nll = label_smoothed_nll_loss(lprobs, target, label_smoothing, reduce=False)
    return loss.view(-1), nll.view(-1)


def grouped_sums(values: Tensor, group: Tensor, num_groups: int) -> Tensor:
    """Sum of ``values`` ``(N,)`` per ``group`` ``(N,)`` id in ``[0, num_groups)``: ``(num_groups,)``."""
    sums = values.new_zeros(num_groups, dtype=values.dtype)
    return sums.index_add(0, group, values)


def sentence_losses(logits: Tensor, target: Tensor) -> Tuple[Tensor, Tensor]:
    """Per-example cross-entropy in nats (float32) and correctness.

    Args:
        logits: ``(N, K)``; target: ``(N,)`` class ids.
    Returns:
        ``(loss, correct)``: ``(N,)`` float and ``(N,)`` bool.
    """
    loss = torch.nn.functional.cross_entropy(logits.float(), target, reduction="none")
    return loss, logits.argmax(-1).eq(target)


def sequence_token_losses(
    lprobs: Tensor, target: Tensor, pad: int, label_smoothing: float = 0.0
) -> Tuple[Tensor, Tensor]:
    """Per-token (smoothed) NLL of the non-pad targets under given log-probabilities, in nats.

    Args:
        lprobs: ``(B, T, V)`` log-probabilities (e.g. a pointer-generator mixture);
        target: ``(B, T)``, ``pad`` where nothing is predicted.
    Returns:
        ``(loss, nll_loss)``, each ``(N,)`` over the non-pad targets in row-major order.
    """
    keep = target.ne(pad)
    return lprob_losses(lprobs.float()[keep], target[keep], label_smoothing)  # over N x V


def weighted_joint_loss(
    lm_sum: Tensor, lm_tokens: int, mlm_sum: Tensor, mlm_tokens: int, mlm_weight: float
) -> Tensor:
    """PALM's stage-2 loss as a sum over the ``lm_tokens`` continuation tokens.

    ``lm_sum / lm_tokens + mlm_weight * mlm_sum / mlm_tokens`` is the objective
    (both losses per token); scaling it by ``lm_tokens`` lets fairseq divide by
    the number of continuation tokens as for any decoder loss. With no masked
    token the MLM term is zero.

    The counts are the batch's own. Over several GPUs, or with ``--update-freq``,
    fairseq adds the batches' sums and divides by all their continuation tokens,
    so the objective above holds exactly for the whole update when every batch
    has the same ratio of continuation to masked tokens; otherwise each batch's
    MLM term is weighted by its own ratio (this project's choice: the totals
    over all batches are not known before the backward pass).
    """
    if mlm_tokens == 0 or mlm_weight == 0:
        return lm_sum
    return lm_sum + mlm_weight * mlm_sum * (lm_tokens / mlm_tokens)


def span_losses(logits: Tensor, span_mask: Tensor, start: Tensor, end: Tensor) -> Tuple[Tensor, Tensor]:
    """Cross-entropy of the answer's start and end positions over the positions a span may use.

    Positions outside ``span_mask`` (the question, separators, padding) get the dtype's most negative
    finite score, so they take no probability.

    Args:
        logits: ``(B, T, 2)`` start (``[..., 0]``) and end (``[..., 1]``) scores.
        span_mask: ``(B, T)`` bool, True where a span may start or end; each target must be inside it.
        start, end: ``(B,)`` target positions.
    Returns:
        ``(start_loss, end_loss)``, each ``(B,)`` in nats, computed in float32.
    """
    scores = masked_span_scores(logits, span_mask).float()
    lprobs = torch.log_softmax(scores, dim=1)  # B x T x 2
    start_loss = -lprobs[:, :, 0].gather(1, start.unsqueeze(1)).squeeze(1)
    end_loss = -lprobs[:, :, 1].gather(1, end.unsqueeze(1)).squeeze(1)
    return start_loss, end_loss


def masked_span_scores(logits: Tensor, span_mask: Tensor) -> Tensor:
    """``(B, T, 2)`` logits with positions outside ``(B, T)`` ``span_mask`` set to ``finfo(dtype).min``."""
    return logits.masked_fill(~span_mask.unsqueeze(-1), torch.finfo(logits.dtype).min)


def answerability_targets(start: Tensor) -> Tensor:
    """Targets of the answerability classifier from the span targets: ``(B,)`` start positions -> ``(B,)``.

    A window whose span target is the null position (start at [SOS], position
    :data:`~unilm_fairseq.modules.heads.NO_ANSWER_POSITION`) holds no answer: the question is
    unanswerable (SQuAD v2.0 ``is_impossible``) or its answer lies outside the window, as for BERT's
    null span. Class :data:`~unilm_fairseq.modules.heads.UNANSWERABLE` there, else ``ANSWERABLE``.
    """
    return torch.where(start.eq(NO_ANSWER_POSITION), UNANSWERABLE, ANSWERABLE)
