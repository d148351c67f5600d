"""BERT's next-sentence-prediction head over the [SOS] vector."""

import torch
from torch import Tensor, nn

NSP_CLASSES = 2  # is next, not next


class NSPHead(nn.Module):
    """Pooler (dense + tanh on the first token) then a 2-way linear classifier."""

    def __init__(self, embed_dim: int):
        super().__init__()
        self.dense = nn.Linear(embed_dim, embed_dim)
        self.out_proj = nn.Linear(embed_dim, NSP_CLASSES)

    def forward(self, features: Tensor) -> Tensor:
        """``(B, T, C)`` features -> ``(B, 2)`` logits from position 0 ([SOS])."""
        pooled = torch.tanh(self.dense(features[:, 0]))  # B x C
        return self.out_proj(pooled)
