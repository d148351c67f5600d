"""PALM pre-training loss math (pure functions)."""

import pytest
import torch

from unilm_fairseq.losses import sequence_token_losses, weighted_joint_loss

PAD = 1


def test_joint_loss_is_per_token_lm_plus_weighted_per_token_mlm():
    lm_sum, mlm_sum = torch.tensor(6.0), torch.tensor(4.0)
    total = weighted_joint_loss(lm_sum, 3, mlm_sum, 2, mlm_weight=0.5)
    assert total.item() == pytest.approx(9.0)  # 3 tokens x (6/3 + 0.5 * 4/2)
    assert total.item() / 3 == pytest.approx(6 / 3 + 0.5 * 4 / 2)
    assert weighted_joint_loss(lm_sum, 3, mlm_sum, 0, 0.5).item() == 6.0  # nothing masked
    assert weighted_joint_loss(lm_sum, 3, mlm_sum, 2, 0.0).item() == 6.0


def test_sequence_token_losses_skip_pad_in_row_major_order():
    torch.manual_seed(0)
    lprobs = torch.log_softmax(torch.randn(2, 3, 7), dim=-1)
    target = torch.tensor([[4, 5, PAD], [6, PAD, PAD]])
    loss, nll = sequence_token_losses(lprobs, target, PAD)
    expected = -torch.stack([lprobs[0, 0, 4], lprobs[0, 1, 5], lprobs[1, 0, 6]])
    assert torch.allclose(nll, expected) and torch.allclose(loss, expected)
    smoothed, nll_again = sequence_token_losses(lprobs, target, PAD, label_smoothing=0.1)
    assert torch.allclose(nll_again, expected)
    # fairseq's smoothing: eps / (V - 1) on every class, the rest on the target
    eps_i = 0.1 / (7 - 1)
    total = -lprobs[[0, 0, 1], [0, 1, 0]].sum(-1)
    assert torch.allclose(smoothed, (1 - 0.1 - eps_i) * expected + eps_i * total)
