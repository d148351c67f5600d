"""PALM's pointer-generator head (Bi et al. 2020, Eq. 2-8), on top of a Transformer decoder.

For decoder state ``s_t`` and encoder outputs ``h_l``:

* vocabulary distribution (Eq. 2): ``P^v = softmax(W^e (W^v s_t + b^v))``, ``W^e`` the tied embeddings;
* copy attention (Eq. 3-5), additive and separate from the decoder's own attention:
  ``e_t^l = w^T tanh(W^m h_l + W^s s_t + b)``, ``alpha_t = softmax(e_t)`` over the non-pad source
  positions, context ``z_t = sum_l alpha_t^l h_l``;
* copy distribution (Eq. 6): ``P^c(w) = sum of alpha_t^l over the source positions l holding w``;
* gate (Eq. 7): ``lambda = sigmoid(w^z . z_t + w^s . s_t + b^m)``;
* mixture (Eq. 8): ``P = lambda P^v + (1 - lambda) P^c``.

The mixture is formed in log space (``logaddexp`` of ``log lambda + log P^v`` and
``log(1 - lambda) + log P^c``) in float32, so it stays finite and exact without an epsilon: a word absent
from the source has ``log P^c`` equal to float32's most negative finite value, not ``log 0``. Scoring every
(target step, source position) pair costs ``B x T x S x A`` activations, as in See et al. (2017).
"""

from typing import Dict, Optional, Tuple

import torch
import torch.nn.functional as F
from fairseq.incremental_decoding_utils import with_incremental_state
from torch import Tensor, nn

COPY_STATE = "copy_keys"
# state-dict prefixes, relative to a PointerGenerator, of the parts a model without copying (copy=False)
# does not build
COPY_ATTENTION = ("source_proj.", "state_proj.", "score.")
COPY_GATE = ("gate_context.", "gate_state.")


def log_copy_distribution(log_alpha: Tensor, src_tokens: Tensor, vocab_size: int) -> Tensor:
    """``log P^c`` (Eq. 6): log of the attention mass each vocabulary word gets from the source.

    Args:
        log_alpha: ``(B, T, S)`` float32 log attention (pad positions at the dtype's minimum).
        src_tokens: ``(B, S)`` token ids.
    Returns:
        ``(B, T, V)`` float32; words not in the source get ``torch.finfo(float32).min``.

    Computed as a per-word log-sum-exp: the largest log weight of each word, plus the log of the summed
    weights relative to it (at least 1 for a word present, since its largest term contributes exp(0)).
    """
    bsz, tgt_len, _ = log_alpha.shape
    lowest = torch.finfo(log_alpha.dtype).min
    index = src_tokens.unsqueeze(1).expand_as(log_alpha)  # B x T x S
    with torch.no_grad():  # the result does not depend on the shift, so neither does its gradient
        peak = log_alpha.new_full((bsz, tgt_len, vocab_size), lowest)
        peak = peak.scatter_reduce(2, index, log_alpha, reduce="amax", include_self=True)  # B x T x V
    relative = torch.exp(log_alpha - peak.gather(2, index))  # B x T x S, each <= 1
    total = torch.zeros_like(peak).scatter_add(2, index, relative)  # B x T x V, >= 1 where present
    present = total > 0
    # absent words: total is 0; clamping to 1 keeps log finite (and its gradient zero) there
    return torch.where(present, peak + torch.log(total.clamp_min(1.0)), torch.full_like(peak, lowest))


@with_incremental_state
class PointerGenerator(nn.Module):
    """Vocabulary softmax, copy attention and their gated mixture (see the module docstring).

    Args:
        hidden_dim: width of ``s_t`` and ``h_l`` (the model's hidden size).
        attention_dim: width of the additive copy attention (``W^m``, ``W^s`` rows).
        embed_weight: ``(V, E)`` token embeddings, shared as ``W^e``.
        copy: False ablates the pointer (``P = P^v``) and builds none of its parameters (an unused
            parameter would stall distributed training).
    """

    def __init__(self, hidden_dim: int, attention_dim: int, embed_weight: nn.Parameter, copy: bool = True):
        super().__init__()
        self.copy = copy
        self.embed_weight = embed_weight  # W^e, tied
        self.vocab_proj = nn.Linear(hidden_dim, embed_weight.size(1))  # W^v, b^v
        if not copy:
            return
        self.source_proj = nn.Linear(hidden_dim, attention_dim, bias=False)  # W^m
        self.state_proj = nn.Linear(hidden_dim, attention_dim)  # W^s, b
        self.score = nn.Linear(attention_dim, 1, bias=False)  # w
        self.gate_context = nn.Linear(hidden_dim, 1)  # w^z, b^m
        self.gate_state = nn.Linear(hidden_dim, 1, bias=False)  # w^s

    def vocab_logits(self, states: Tensor) -> Tensor:
        """``(B, T, C)`` -> ``(B, T, V)`` logits of ``P^v`` (Eq. 2)."""
        return F.linear(self.vocab_proj(states), self.embed_weight)

    def source_keys(
        self, encoder_states: Tensor, incremental_state: Optional[Dict[str, Dict[str, Optional[Tensor]]]]
    ) -> Tensor:
        """``W^m h_l`` ``(B, S, A)``, computed once per source when decoding step by step."""
        if incremental_state is not None:
            cached = self.get_incremental_state(incremental_state, COPY_STATE)
            if cached is not None and cached["keys"] is not None:
                return cached["keys"]
        keys = self.source_proj(encoder_states)
        if incremental_state is not None:
            self.set_incremental_state(incremental_state, COPY_STATE, {"keys": keys})
        return keys

    def reorder_incremental_state(
        self, incremental_state: Dict[str, Dict[str, Optional[Tensor]]], new_order: Tensor
    ) -> None:
        """Follow beam search's reordering of the batch (``new_order`` ``(B',)``)."""
        cached = self.get_incremental_state(incremental_state, COPY_STATE)
        if cached is not None and cached["keys"] is not None:
            cached = {"keys": cached["keys"].index_select(0, new_order)}
            self.set_incremental_state(incremental_state, COPY_STATE, cached)

    def forward(
        self,
        states: Tensor,
        encoder_states: Tensor,
        encoder_padding_mask: Tensor,
        src_tokens: Tensor,
        incremental_state: Optional[Dict[str, Dict[str, Optional[Tensor]]]] = None,
    ) -> Tuple[Tensor, Optional[Tensor], Optional[Tensor]]:
        """
        Args:
            states: decoder outputs ``s_t`` ``(B, T, C)``.
            encoder_states: encoder outputs ``h_l`` ``(B, S, C)``.
            encoder_padding_mask: ``(B, S)`` bool, True at padding.
            src_tokens: ``(B, S)`` source ids (the words ``alpha`` points at).
        Returns:
            ``log P`` ``(B, T, V)`` float32; copy attention ``alpha`` ``(B, T, S)`` and gate ``lambda``
            ``(B, T, 1)``, both float32 (None without copy).
        """
        log_vocab = torch.log_softmax(self.vocab_logits(states).float(), dim=-1)  # B x T x V
        if not self.copy:
            return log_vocab, None, None
        keys = self.source_keys(encoder_states, incremental_state)  # B x S x A
        hidden = torch.tanh(keys.unsqueeze(1) + self.state_proj(states).unsqueeze(2))  # B x T x S x A
        scores = self.score(hidden).squeeze(-1).float()  # B x T x S
        scores = scores.masked_fill(encoder_padding_mask.unsqueeze(1), torch.finfo(scores.dtype).min)
        log_alpha = torch.log_softmax(scores, dim=-1)  # B x T x S; exactly 0 weight on padding
        alpha = log_alpha.exp()
        context = torch.bmm(alpha.to(encoder_states.dtype), encoder_states)  # B x T x C
        gate = (self.gate_context(context) + self.gate_state(states)).float()  # B x T x 1
        log_copy = log_copy_distribution(log_alpha, src_tokens, log_vocab.size(-1))  # B x T x V
        lprobs = torch.logaddexp(F.logsigmoid(gate) + log_vocab, F.logsigmoid(-gate) + log_copy)
        return lprobs, alpha, torch.sigmoid(gate)
