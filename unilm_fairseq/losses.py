"""Loss math as pure functions; criteria only do the bookkeeping."""

from typing import Tuple

import torch
from fairseq.criterions.label_smoothed_cross_entropy import label_smoothed_nll_loss
from torch import Tensor


def token_losses(logits: Tensor, target: Tensor, label_smoothing: float = 0.0) -> Tuple[Tensor, Tensor]:
    """Per-token (smoothed) cross-entropy in nats, computed in float32.

    Args:
        logits: ``(N, V)``; target: ``(N,)``.
    Returns:
        ``(loss, nll_loss)``, each ``(N,)``.
    """
    lprobs = torch.log_softmax(logits.float(), dim=-1)
    loss, nll = label_smoothed_nll_loss(lprobs, target, label_smoothing, reduce=False)
    return loss.view(-1), nll.view(-1)


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
