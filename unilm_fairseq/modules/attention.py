"""Multi-head self-attention with a per-example additive bias.

fairseq's ``MultiheadAttention`` takes one key-padding mask and one shared
attention mask; UniLM layouts need a different ``(T, S)`` mask per example plus
a per-head relative position bias, so this module takes both folded into one
float ``attn_bias`` of shape ``(B, H or 1, T, S)``.

float32, float16 and bfloat16 run through ``F.scaled_dot_product_attention`` with the bias in
the query dtype, so a GPU can pick a fused memory-efficient kernel that never materialises the
``(B, H, T, S)`` scores. On CPU (torch 2.13) half inputs go to the flash-attention CPU kernel, or,
when it is ruled out, to the math kernel, which upcasts them to float32: both accumulate the scores,
the softmax and the weighted sum in float32 and round only the output.
"""

import math
from typing import NamedTuple, Optional, Tuple

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from .retained_dropout import RetainedDropout

KeyValue = Tuple[Tensor, Tensor]


# CUDA's memory-efficient attention reads a bias in place only when its last dimension is contiguous and
# every other stride is a multiple of this many elements; otherwise every F.scaled_dot_product_attention
# call pads a copy of the whole bias first, and the backward pass copies its gradient back out of it
# (torch's aten/src/ATen/native/transformers/attention.cpp, preprocess_mask).
BIAS_ALIGNMENT = 8


def build_attention_bias(
    visible: Tensor, position_bias: Optional[Tensor], dtype: torch.dtype = torch.float32
) -> Tensor:
    """Fold a visibility mask and an optional position bias into one bias of ``dtype``.

    Args:
        visible: ``(B, T, S)`` bool, True where the query may attend to the key.
        position_bias: ``(B, H, T, S)`` or None, any layout (the relative position bias is a
            permuted view).
        dtype: the attention's compute dtype (the query dtype).
    Returns:
        ``(B, H or 1, T, S)`` of ``dtype``; hidden keys hold the dtype's most negative finite
        value, filled over the position bias rather than added to it, so it cannot overflow to
        -inf (float16's minimum is only -65504). Its rows are ``S`` rounded up to
        :data:`BIAS_ALIGNMENT` apart and contiguous, so every layer's attention reads this one copy
        in place (the columns past ``S`` are never read).
    """
    bsz, length, keys = visible.shape
    heads = 1 if position_bias is None else position_bias.size(1)
    row = -(-keys // BIAS_ALIGNMENT) * BIAS_ALIGNMENT
    bias = visible.new_empty((bsz, heads, length, row), dtype=dtype)[..., :keys]
    if position_bias is None:
        bias.zero_()
    else:
        bias.copy_(position_bias)
    return bias.masked_fill_(~visible.unsqueeze(1), torch.finfo(dtype).min)


def shared_keys_values(keys: Tensor, values: Tensor) -> KeyValue:
    """Shared ``(G, H, S, D)`` keys and values laid out once as every decoding step's matmuls read them.

    A key or value projection viewed as ``(G, S, H, D) -> (G, H, S, D)`` interleaves the heads within
    each source token, so :meth:`BiasedSelfAttention._attend_with_shared`'s matmuls, which fold
    ``(G, H)`` into one batch dimension, would copy both operands, the keys transposed, in every
    layer of every decoding step (on CPU the transposing copy of the keys cost more than the
    attention itself). Here they are copied once: the keys to ``(G, H, D, S)`` memory (so
    ``keys.transpose(-1, -2)`` is contiguous) and the values to contiguous ``(G, H, S, D)``, exactly
    the operands the matmuls built before, so the scores and outputs are bitwise the same.
    """
    return keys.transpose(-1, -2).contiguous().transpose(-1, -2), values.contiguous()


class StackedProjection(NamedTuple):
    """A decoding step's q/k/v projections as one matrix (``BiasedSelfAttention._step_projections``)."""

    key: tuple  # (storage, dtype, version) of each parameter it was built from
    weight: Tensor  # 3C x C: query rows (scaled when `scale` is None), then key rows, then value rows
    bias: Tensor  # 3C
    scale: Optional[float]  # the query scale still to apply to the product, or None when folded in


def _as_float32(t: Tensor) -> Tensor:
    return t if t.dtype == torch.float32 else t.float()


# query dtypes that go through F.scaled_dot_product_attention (with a bias of the same dtype)
SDPA_DTYPES = (torch.float32, torch.float16, torch.bfloat16)


class BiasedSelfAttention(RetainedDropout, nn.Module):
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
        # the stacked projection of decoding steps (_step_projections); a plain attribute, so neither the
        # state dict nor `.to()` sees it
        self._step_weights: Optional[StackedProjection] = None

    def _heads(self, x: Tensor) -> Tensor:
        bsz, length, _ = x.shape
        return x.view(bsz, length, self.num_heads, self.head_dim).transpose(1, 2)

    def keys_values(self, x: Tensor) -> KeyValue:
        """``(keys, values)`` ``(B, H, T, C/H)`` of ``(B, T, C)`` inputs, as :meth:`forward` caches them."""
        return self._heads(self.k_proj(x)), self._heads(self.v_proj(x))

    def forward(
        self,
        x: Tensor,
        attn_bias: Tensor,
        prefix: Optional[KeyValue] = None,
        shared: Optional[KeyValue] = None,
        kv_out: Optional[Tensor] = None,
        slots: Optional[Tuple[Tensor, Tensor]] = None,
    ) -> Tuple[Tensor, KeyValue]:
        """
        Args:
            x: ``(B, T, C)`` queries, and keys/values of this call.
            attn_bias: ``(B, H or 1, T, S+P+T)`` from :func:`build_attention_bias`, keys ordered
                ``[shared | prefix | x]``. In the query dtype it goes to SDPA; a bias of another
                dtype (float32 for a half-precision query) takes explicit float32 scores instead.
            prefix: cached ``(keys, values)``, each ``(B, H, P, C/H)``, seen before ``x``.
            shared: ``(keys, values)``, each ``(G, H, S, C/H)`` with ``B = G * g``: row ``b`` sees
                group ``b // g``. Beam search keeps one copy of the source per sentence this way
                instead of one per hypothesis. Any layout; :func:`shared_keys_values`'s is read in
                place.
            kv_out: ``(2, B, H, P+T, C/H)``, where to write the keys and values of ``[prefix | x]``
                (outside autograd: a decoding step keeps every layer's in one tensor).
            slots: ``(buffer, index)``, a fixed-shape decoding step (with ``shared``, outside autograd):
                ``buffer`` ``(2, B, H, K, C/H)`` holds this layer's keys and values of every target slot,
                and ``x``'s go to slots ``index`` ``(T,)`` first; the attention then runs over
                ``[shared | buffer]``, which ``attn_bias`` (``(B, H or 1, T, S+K)``) masks. Nothing
                about the call depends on how many slots are filled, so a CUDA graph can replay it.
        Returns:
            ``(B, T, C)`` output and the ``(keys, values)`` of ``[prefix | x]``, ``(B, H, P+T, C/H)``
            (``P = 0`` without a prefix): the concatenation attention needs anyway, so a cache that
            keeps some of this call's keys takes a view of it instead of concatenating again.
        """
        step = shared is not None and not torch.is_grad_enabled()  # a decoding step
        if step:
            q, k, v = self._step_projections(x)
        else:
            q = self._heads(self.q_proj(x))  # B x H x T x D
            k, v = self.keys_values(x)
        if slots is not None:
            buffer, index = slots
            k = buffer[0].index_copy_(2, index, k)
            v = buffer[1].index_copy_(2, index, v)
        elif kv_out is not None:
            k_out, v_out = kv_out.unbind(0)
            k = torch.cat([prefix[0], k], dim=2, out=k_out) if prefix is not None else k_out.copy_(k)
            v = torch.cat([prefix[1], v], dim=2, out=v_out) if prefix is not None else v_out.copy_(v)
        elif prefix is not None:
            k = torch.cat([prefix[0], k], dim=2)
            v = torch.cat([prefix[1], v], dim=2)
        dropout_p = self.dropout if self.dropout_on() else 0.0
        if shared is not None:
            out = self._attend_with_shared(q, k, v, shared, attn_bias, dropout_p, q_scaled=step)
        elif q.dtype in SDPA_DTYPES and attn_bias.dtype == q.dtype:
            # A padding query that sees no key gets its scores plus a row of equal minima: a finite
            # softmax, uniform in float32 and bfloat16 (whose minimum absorbs the scores); in
            # float16 (minimum -65504) it is the softmax of the scores alone. Such rows are unused.
            out = F.scaled_dot_product_attention(q, k, v, attn_mask=attn_bias, dropout_p=dropout_p)
        else:
            # float64, or a bias wider than the query: scores and softmax in float32
            scores = torch.matmul(q.float(), k.float().transpose(-1, -2)) * self.head_dim**-0.5
            probs = torch.softmax(scores + attn_bias, dim=-1)
            probs = F.dropout(probs, p=dropout_p, training=dropout_p > 0)
            out = torch.matmul(probs.to(v.dtype), v)
        bsz, _, length, _ = out.shape
        out = out.transpose(1, 2).reshape(bsz, length, self.num_heads * self.head_dim)
        return self.out_proj(out), (k, v)

    def _step_projections(self, x: Tensor) -> Tuple[Tensor, Tensor, Tensor]:
        """A decoding step's ``(B, H, T, D)`` queries, scaled by ``D ** -0.5``, keys and values of ``x``.

        One matrix product with the three projections stacked, instead of three: a step feeds one or two
        tokens per hypothesis, so its products are small and each call costs more than its arithmetic.
        The scale is folded into the stacked query rows when ``D ** -0.5`` is a power of two (head sizes
        16, 64, 256): scaling by a power of two is exact, short of float16 weights small enough to
        turn subnormal. Another scale multiplies the product instead. The products themselves may round
        differently from three separate ones.
        The stacked copy (``3 C x C``) is built on the first step and again whenever a parameter is
        replaced (``.to()``, a reload) or changed in place (its version counter moves).
        """
        params = (
            self.q_proj.weight, self.q_proj.bias, self.k_proj.weight, self.k_proj.bias,
            self.v_proj.weight, self.v_proj.bias,
        )  # fmt: skip
        key = tuple((p.data_ptr(), p.dtype, p._version) for p in params)
        stacked = self._step_weights
        if stacked is None or stacked.key != key:
            scale = self.head_dim**-0.5
            exact = math.frexp(scale)[0] == 0.5  # a power of two
            fold = scale if exact else 1.0
            stacked = self._step_weights = StackedProjection(
                key,
                torch.cat([params[0] * fold, params[2], params[4]]),
                torch.cat([params[1] * fold, params[3], params[5]]),
                None if exact else scale,
            )
        bsz, length, _ = x.shape
        qkv = F.linear(x, stacked.weight, stacked.bias).view(bsz, length, 3, self.num_heads, self.head_dim)
        q, k, v = qkv.permute(2, 0, 3, 1, 4).unbind(0)  # each B x H x T x D
        return (q if stacked.scale is None else q * stacked.scale), k, v

    def _attend_with_shared(
        self, q, k, v, shared: KeyValue, attn_bias, dropout_p, q_scaled: bool = False
    ) -> Tensor:
        """Attention over ``[shared | k]`` with one softmax, without copying ``shared`` per row.

        Args:
            q: ``(B, H, T, D)``, already multiplied by ``D ** -0.5`` when ``q_scaled``; k, v:
                ``(B, H, P+T, D)``; shared: ``(G, H, S, D)`` each, ``B = G * g``.
            attn_bias: ``(B, H or 1, T, S+P+T)``, any float dtype (added in float32).
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

        # SDPA has one key set per row, so it would need the shared keys copied per row. The scores
        # are matmuls in the compute dtype (q scaled first, so float16 has room; keys are not
        # upcast, which would copy them); only the small (B, H, T, S+P+T) scores go to float32 for
        # the bias and softmax. A float32 model casts nothing (not even a no-op call: a step is
        # bound by its calls).
        if not q_scaled:
            q = q * self.head_dim**-0.5
        shared_scores = to_rows(torch.matmul(to_groups(q), shared_k.transpose(-1, -2)))
        own_scores = torch.matmul(q, k.transpose(-1, -2))  # B x H x T x (P+T)
        scores = torch.cat([shared_scores, own_scores], -1)
        if scores.dtype == torch.float64:
            scores = scores.float()
        # adding the float32 bias promotes half scores to float32 (exactly), with no cast of their own
        probs = torch.softmax(scores + _as_float32(attn_bias), dim=-1)
        if dropout_p > 0:
            probs = F.dropout(probs, p=dropout_p, training=True)
        if probs.dtype != v.dtype:
            probs = probs.to(v.dtype)
        shared_probs, own_probs = probs.split([source_len, k.size(2)], dim=-1)
        return to_rows(torch.matmul(to_groups(shared_probs), shared_v)) + torch.matmul(own_probs, v)
