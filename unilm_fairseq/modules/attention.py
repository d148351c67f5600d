"""Multi-head self-attention with a per-example additive bias.

fairseq's ``MultiheadAttention`` takes one key-padding mask and one shared
attention mask; UniLM layouts need a different ``(T, S)`` mask per example plus
a per-head relative position bias, so this module takes both folded into one
float ``attn_bias`` of shape ``(B, H or 1, T, S)``.
"""

from typing import Optional, Tuple

import torch
import torch.nn.functional as F
from torch import Tensor, nn

KeyValue = Tuple[Tensor, Tensor]


def build_attention_bias(visible: Tensor, position_bias: Optional[Tensor]) -> Tensor:
    """Fold a visibility mask and an optional position bias into one float32 bias.

    Args:
        visible: ``(B, T, S)`` bool, True where the query may attend to the key.
        position_bias: ``(B, H, T, S)`` or None.
    Returns:
        ``(B, H or 1, T, S)`` float32; hidden keys hold float32's most negative
        finite value (filled, not added, so it cannot overflow to -inf).
    """
    if position_bias is None:
        bias = visible.new_zeros(visible.shape, dtype=torch.float32).unsqueeze(1)
    else:
        bias = position_bias.float()
    return bias.masked_fill(~visible.unsqueeze(1), torch.finfo(torch.float32).min)


class BiasedSelfAttention(nn.Module):
    """Scaled dot-product attention over ``(B, T, C)`` inputs with an additive bias."""

    def __init__(self, embed_dim: int, num_heads: int, dropout: float = 0.0):
        super().__init__()
        if embed_dim % num_heads:
            raise ValueError(f"embed_dim {embed_dim} is not divisible by num_heads {num_heads}")
        self.num_heads = num_heads
        self.head_dim = embed_dim // num_heads
        self.dropout = dropout
        self.q_proj = nn.Linear(embed_dim, embed_dim)
        self.k_proj = nn.Linear(embed_dim, embed_dim)
        self.v_proj = nn.Linear(embed_dim, embed_dim)
        self.out_proj = nn.Linear(embed_dim, embed_dim)

    def _heads(self, x: Tensor) -> Tensor:
        bsz, length, _ = x.shape
        return x.view(bsz, length, self.num_heads, self.head_dim).transpose(1, 2)

    def forward(
        self,
        x: Tensor,
        attn_bias: Tensor,
        prefix: Optional[KeyValue] = None,
        shared: Optional[KeyValue] = None,
    ) -> Tuple[Tensor, KeyValue]:
        """
        Args:
            x: ``(B, T, C)`` queries, and keys/values of this call.
            attn_bias: ``(B, H or 1, T, S+P+T)`` float32 from :func:`build_attention_bias`, keys
                ordered ``[shared | prefix | x]``.
            prefix: cached ``(keys, values)``, each ``(B, H, P, C/H)``, seen before ``x``.
            shared: ``(keys, values)``, each ``(G, H, S, C/H)`` with ``B = G * g``: row ``b`` sees
                group ``b // g``. Beam search keeps one copy of the source per sentence this way
                instead of one per hypothesis.
        Returns:
            ``(B, T, C)`` output and this call's ``(keys, values)`` ``(B, H, T, C/H)``.
        """
        q = self._heads(self.q_proj(x))  # B x H x T x D
        k = self._heads(self.k_proj(x))
        v = self._heads(self.v_proj(x))
        new_kv = (k, v)
        if prefix is not None:
            k = torch.cat([prefix[0], k], dim=2)
            v = torch.cat([prefix[1], v], dim=2)
        dropout_p = self.dropout if self.training else 0.0
        if shared is not None:
            out = self._attend_with_shared(q, k, v, shared, attn_bias, dropout_p)
        elif q.dtype == torch.float32:
            out = F.scaled_dot_product_attention(q, k, v, attn_mask=attn_bias, dropout_p=dropout_p)
        else:
            # half precision: scores and softmax in float32 so nothing overflows
            scores = torch.matmul(q.float(), k.float().transpose(-1, -2)) * self.head_dim**-0.5
            probs = torch.softmax(scores + attn_bias, dim=-1)
            probs = F.dropout(probs, p=dropout_p, training=self.training)
            out = torch.matmul(probs.to(v.dtype), v)
        bsz, _, length, _ = out.shape
        out = out.transpose(1, 2).reshape(bsz, length, self.num_heads * self.head_dim)
        return self.out_proj(out), new_kv

    def _attend_with_shared(self, q, k, v, shared: KeyValue, attn_bias, dropout_p) -> Tensor:
        """Attention over ``[shared | k]`` with one softmax, without copying ``shared`` per row.

        Args:
            q: ``(B, H, T, D)``; k, v: ``(B, H, P+T, D)``; shared: ``(G, H, S, D)`` each, ``B = G * g``.
        Returns:
            ``(B, H, T, D)``.
        """
        shared_k, shared_v = shared
        bsz, heads, length, _ = q.shape
        groups, source_len = shared_k.size(0), shared_k.size(2)
        if bsz % groups:
            raise ValueError(f"{bsz} query rows cannot be split into {groups} groups of shared keys")
        per_group = bsz // groups

        def to_groups(t: Tensor) -> Tensor:  # B x H x T x N -> G x H x (g*T) x N
            t = t.reshape(groups, per_group, heads, length, t.size(-1)).transpose(1, 2)
            return t.reshape(groups, heads, per_group * length, t.size(-1))

        def to_rows(t: Tensor) -> Tensor:  # G x H x (g*T) x N -> B x H x T x N
            t = t.reshape(groups, heads, per_group, length, t.size(-1)).transpose(1, 2)
            return t.reshape(bsz, heads, length, t.size(-1))

        # scores and softmax in float32 (a no-op cast for float32 models)
        q = q.float() * self.head_dim**-0.5
        shared_scores = to_rows(torch.matmul(to_groups(q), shared_k.float().transpose(-1, -2)))
        own_scores = torch.matmul(q, k.float().transpose(-1, -2))  # B x H x T x (P+T)
        probs = torch.softmax(torch.cat([shared_scores, own_scores], -1) + attn_bias, dim=-1)
        probs = F.dropout(probs, p=dropout_p, training=self.training).to(v.dtype)
        shared_probs, own_probs = probs.split([source_len, k.size(2)], dim=-1)
        return to_rows(torch.matmul(to_groups(shared_probs), shared_v)) + torch.matmul(own_probs, v)
