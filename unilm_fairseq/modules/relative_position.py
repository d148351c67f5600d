"""T5-style relative position buckets and the per-head bias table built on them."""

import math

import torch
import torch.nn.functional as F
from torch import Tensor, nn


def relative_position_bucket(
    relative_position: Tensor, num_buckets: int = 32, max_distance: int = 128
) -> Tensor:
    """Map signed distances ``key_position - query_position`` to bucket ids.

    Half of the buckets hold keys at or before the query, the other half keys
    after it. Inside each half, the first ``half // 2`` buckets hold the exact
    distances ``0 .. half // 2 - 1``; larger distances fall in log-spaced buckets
    up to ``max_distance``; anything farther shares the last bucket of the half.

    Args:
        relative_position: long tensor of any shape.
    Returns:
        long tensor of the same shape, values in ``[0, num_buckets)``.
    """
    half = num_buckets // 2
    exact = half // 2
    after_query = relative_position > 0
    distance = relative_position.abs()
    # distances below `exact` are never read from `log_bucket`; clamp keeps log finite
    scaled = distance.clamp(min=1).float() / exact
    log_bucket = exact + (torch.log(scaled) / math.log(max_distance / exact) * (half - exact)).to(torch.long)
    log_bucket = log_bucket.clamp(max=half - 1)
    bucket = torch.where(distance < exact, distance, log_bucket)
    return bucket + after_query.long() * half


class _TableLookup(torch.autograd.Function):
    """``weight[indices]`` for ``(B, T, S)`` bucket ids, whose backward sums the gradient per bucket in
    two stages: each query row's keys into that row's buckets (``scatter_add_``), then over the rows.

    The embedding backward sorts all ``B x T x S`` ids and, on CPU, adds each one's row with a call of
    its own. Here few additions meet in one place, and they run in float32 whatever the gradient's
    dtype. At base size on CPU (32 x 512 x 512 ids, 12 heads) a lookup's forward and backward took 0.28x
    the embedding's time and 0.51x that of the ``index_add_`` it replaces, and the table's gradient came
    closer to a float64 sum (benchmarks/bench_bias_grad.py).
    """

    @staticmethod
    def forward(ctx, indices: Tensor, weight: Tensor) -> Tensor:
        ctx.save_for_backward(indices)
        ctx.num_rows = weight.size(0)
        return F.embedding(indices, weight)

    @staticmethod
    def backward(ctx, grad: Tensor):  # grad: B x T x S x H
        (indices,) = ctx.saved_tensors
        bsz, length, _, heads = grad.shape
        by_head = grad.permute(0, 3, 1, 2).float()  # B x H x T x S, a view when already float32
        bins = by_head.new_zeros(bsz, heads, length, ctx.num_rows)
        bins.scatter_add_(3, indices.unsqueeze(1).expand(-1, heads, -1, -1), by_head)
        return None, bins.sum((0, 2)).t().to(grad.dtype)


class RelativePositionBias(nn.Module):
    """One bias per head and bucket, shared by all layers.

    ``forward(query_positions (B, T), key_positions (B, S)) -> (B, H, T, S)``.
    """

    def __init__(self, num_heads: int, num_buckets: int = 32, max_distance: int = 128):
        super().__init__()
        self.num_buckets = num_buckets
        self.max_distance = max_distance
        self.table = nn.Embedding(num_buckets, num_heads)
        # Every distance at or past max_distance falls in its half's last bucket, so the buckets of
        # -max_distance..max_distance, worked out once here, serve every distance clamped to that range:
        # a lookup per batch (and decoding step) instead of a dozen elementwise passes. Not saved.
        distances = torch.arange(-max_distance, max_distance + 1)
        self.register_buffer(
            "distance_buckets",
            relative_position_bucket(distances, num_buckets, max_distance),
            persistent=False,
        )

    def buckets(self, query_positions: Tensor, key_positions: Tensor) -> Tensor:
        """``(B, T)``, ``(B, S)`` position ids -> ``(B, T, S)`` bucket ids of ``key - query``, as
        :func:`relative_position_bucket` gives them."""
        relative = key_positions.unsqueeze(1) - query_positions.unsqueeze(2)  # B x T x S
        return self.distance_buckets[
            relative.clamp(-self.max_distance, self.max_distance) + self.max_distance
        ]

    def forward(self, query_positions: Tensor, key_positions: Tensor) -> Tensor:
        buckets = self.buckets(query_positions, key_positions)
        weight = self.table.weight
        if weight.device.type == "cpu" and weight.requires_grad and torch.is_grad_enabled():
            return _TableLookup.apply(buckets, weight).permute(0, 3, 1, 2)  # B x H x T x S
        return self.table(buckets).permute(0, 3, 1, 2)
