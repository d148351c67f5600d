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
