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
