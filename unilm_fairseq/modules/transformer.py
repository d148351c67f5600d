"""The shared UniLM Transformer: embeddings, BERT-style post-LN layers, LM head."""

from typing import List, Optional, Tuple

import torch
import torch.nn.functional as F
import torch.utils.checkpoint
from fairseq import utils
from fairseq.modules import LayerNorm
from fairseq.modules import gelu as fairseq_gelu
from torch import Tensor, nn

from .attention import BiasedSelfAttention, KeyValue, build_attention_bias
from .relative_position import RelativePositionBias
from .retained_dropout import RetainedDropout

# state-dict keys of the parameters defined below, relative to a UniLMTransformer
TOKEN_TABLE = "embeddings.tokens.weight"
POSITION_TABLE = "embeddings.positions.weight"
SEGMENT_TABLE = "embeddings.segments.weight"
EMBEDDING_LAYER_NORM = "embeddings.layer_norm."
EMBEDDING_PROJECTION = "embeddings.project."  # ELECTRA's narrower embeddings
RELATIVE_POSITION_BIAS = "rel_pos_bias."  # the table shared by all layers
LAYERS = "layers."
# the modules of a UniLMTransformerLayer that hold a weight and a bias (fairseq's TransformerEncoderLayer
# names them alike)
LAYER_PARTS = (
    "self_attn.q_proj", "self_attn.k_proj", "self_attn.v_proj", "self_attn.out_proj", "self_attn_layer_norm",
    "fc1", "fc2", "final_layer_norm",
)  # fmt: skip
# the parameters of a UniLMLMHead besides the output weight it shares with the token table
LM_HEAD_PARTS = ("dense.weight", "dense.bias", "layer_norm.weight", "layer_norm.bias", "bias")
LM_HEAD_OUTPUT = "weight"


def _gelu(x: Tensor) -> Tensor:
    """fairseq's ``gelu`` (computed in float32, returned in ``x``'s dtype), without its two no-op casts when
    ``x`` is float32 already: a decoding step's layers are bound by their calls."""
    return F.gelu(x) if x.dtype == torch.float32 else fairseq_gelu(x)


def build_activation(name: str):
    """``fairseq.utils.get_activation_fn(name)``, with :func:`_gelu` for ``gelu``."""
    fn = utils.get_activation_fn(name)
    return _gelu if fn is fairseq_gelu else fn


def token_embed_dim(cfg) -> int:
    """Width of the embedding tables: ``cfg.token_embed_dim``, or the hidden size when it is 0 (unset)."""
    # configs saved before the field existed lack it
    return getattr(cfg, "token_embed_dim", 0) or cfg.encoder_embed_dim


def check_positions(positions: Tensor, max_positions: int) -> None:
    """A clear error when a position id is past the end of a ``max_positions``-row table.

    Reads the largest id back to the host, so call it where a batch is built, not in a forward pass.
    """
    if positions.numel() and int(positions.max()) >= max_positions:
        raise ValueError(
            f"position id {int(positions.max())} exceeds the position table (max_positions={max_positions})"
        )


class UniLMEmbeddings(RetainedDropout, nn.Module):
    """Token + absolute position + segment embeddings, then LayerNorm and dropout.

    The tables are ``embed_dim`` wide. When ``hidden_dim`` differs (ELECTRA's
    small embeddings), a linear layer projects the normalised sum up to it.
    """

    def __init__(
        self,
        vocab_size,
        embed_dim,
        padding_idx,
        max_positions,
        num_segments,
        eps,
        dropout,
        hidden_dim: Optional[int] = None,
    ):
        super().__init__()
        self.tokens = nn.Embedding(vocab_size, embed_dim, padding_idx=padding_idx)
        self.positions = nn.Embedding(max_positions, embed_dim)
        self.segments = nn.Embedding(num_segments, embed_dim) if num_segments > 0 else None
        self.layer_norm = LayerNorm(embed_dim, eps=eps)
        self.dropout = dropout
        # only created when needed, so models without it keep their state-dict keys
        self.project = (
            nn.Linear(embed_dim, hidden_dim) if hidden_dim is not None and hidden_dim != embed_dim else None
        )

    def forward(self, tokens: Tensor, segments: Tensor, positions: Tensor) -> Tensor:
        """``(B, T)`` long each -> ``(B, T, C)`` (``C`` the hidden size).

        Reads nothing back from the device: position ids must be inside the table. The seq2seq task
        checks them once per generate call and recomputed decoding where it lays out its batch;
        training batches stay inside it through fairseq's size filter (examples longer than the
        model's ``max_positions`` are rejected or skipped). An id past the table that reaches a CPU
        lookup still raises :func:`check_positions`'s ValueError.
        """
        try:
            position_embeddings = self.positions(positions)
        except IndexError:  # raised by CPU lookups only; CUDA asserts on the device instead
            check_positions(positions, self.positions.num_embeddings)
            raise
        x = self.tokens(tokens) + position_embeddings
        if self.segments is not None:
            x = x + self.segments(segments)
        x = F.dropout(self.layer_norm(x), self.dropout, training=self.dropout_on())  # B x T x E
        return x if self.project is None else self.project(x)


class UniLMTransformerLayer(RetainedDropout, nn.Module):
    """Post-LN layer (BERT): ``x = LN(x + attn(x)); x = LN(x + ffn(x))``."""

    def __init__(
        self,
        embed_dim,
        ffn_dim,
        num_heads,
        dropout,
        attention_dropout,
        activation_dropout,
        activation_fn,
        eps,
    ):
        super().__init__()
        self.self_attn = BiasedSelfAttention(embed_dim, num_heads, attention_dropout)
        self.self_attn_layer_norm = LayerNorm(embed_dim, eps=eps)
        self.fc1 = nn.Linear(embed_dim, ffn_dim)
        self.fc2 = nn.Linear(ffn_dim, embed_dim)
        self.final_layer_norm = LayerNorm(embed_dim, eps=eps)
        self.activation_fn = build_activation(activation_fn)
        self.dropout = dropout
        self.activation_dropout = activation_dropout

    def forward(
        self,
        x: Tensor,
        attn_bias: Tensor,
        prefix: Optional[KeyValue] = None,
        shared: Optional[KeyValue] = None,
        kv_out: Optional[Tensor] = None,
        slots: Optional[Tuple[Tensor, Tensor]] = None,
    ):
        attn, new_kv = self.self_attn(x, attn_bias, prefix, shared, kv_out, slots)
        x = self.self_attn_layer_norm(x + self._dropout(attn, self.dropout))
        h = self._dropout(self.activation_fn(self.fc1(x)), self.activation_dropout)
        x = self.final_layer_norm(x + self._dropout(self.fc2(h), self.dropout))
        return x, new_kv

    def _dropout(self, x: Tensor, p: float) -> Tensor:
        """``F.dropout`` in training (or retained); otherwise ``x`` itself, as F.dropout returns it, without
        the call (a decoding step's layers are dispatch-bound)."""
        return F.dropout(x, p, training=True) if p > 0 and self.dropout_on() else x


class UniLMLMHead(nn.Module):
    """BERT's prediction head: dense, activation, LayerNorm, then the tied embedding matrix.

    ``dense`` maps the hidden size to the embedding width ``weight.size(1)``
    (they differ for ELECTRA's generator).
    """

    def __init__(self, embed_dim, activation_fn, eps, weight: nn.Parameter):
        super().__init__()
        token_dim = weight.size(1)
        self.dense = nn.Linear(embed_dim, token_dim)
        self.activation_fn = build_activation(activation_fn)
        self.layer_norm = LayerNorm(token_dim, eps=eps)
        self.weight = weight
        self.bias = nn.Parameter(torch.zeros(weight.size(0)))

    def forward(self, features: Tensor) -> Tensor:
        """``(..., C) -> (..., V)``."""
        x = self.layer_norm(self.activation_fn(self.dense(features)))  # ... x E
        return F.linear(x, self.weight) + self.bias


class UniLMTransformer(nn.Module):
    """Embeddings plus a stack of layers sharing one relative position bias table.

    Every call takes explicit ``positions`` and ``segments`` and a per-example
    visibility mask, so one stack serves every UniLM layout. With
    ``cfg.checkpoint_activations``, layers recompute their activations in the
    backward pass whenever gradients are recorded.
    """

    def __init__(self, cfg, vocab_size: int, padding_idx: int):
        super().__init__()
        self.embeddings = UniLMEmbeddings(
            vocab_size,
            token_embed_dim(cfg),
            padding_idx,
            cfg.max_positions,
            cfg.num_segments,
            cfg.layernorm_eps,
            cfg.dropout,
            hidden_dim=cfg.encoder_embed_dim,
        )
        self.rel_pos_bias = (
            RelativePositionBias(cfg.encoder_attention_heads, cfg.rel_pos_bins, cfg.max_rel_pos)
            if cfg.rel_pos_bins > 0
            else None
        )
        self.layers = nn.ModuleList(
            UniLMTransformerLayer(
                cfg.encoder_embed_dim,
                cfg.encoder_ffn_embed_dim,
                cfg.encoder_attention_heads,
                cfg.dropout,
                cfg.attention_dropout,
                cfg.activation_dropout,
                cfg.activation_fn,
                cfg.layernorm_eps,
            )
            for _ in range(cfg.encoder_layers)
        )
        # configs saved before the field existed lack it
        self.checkpoint_activations = bool(getattr(cfg, "checkpoint_activations", False))

    def attention_bias(
        self,
        query_positions: Tensor,
        key_positions: Tensor,
        visible: Tensor,
        dtype: torch.dtype = torch.float32,
    ) -> Tensor:
        """``(B, T)``, ``(B, S)``, ``(B, T, S)`` bool -> ``(B, H or 1, T, S)`` of ``dtype``."""
        position_bias = None
        if self.rel_pos_bias is not None:
            position_bias = self.rel_pos_bias(query_positions, key_positions)
        return build_attention_bias(visible, position_bias, dtype)

    def compute_dtype(self, device: torch.device) -> torch.dtype:
        """The dtype attention runs in: autocast's when it is on (``--amp``), else the parameters'."""
        if torch.is_autocast_enabled(device.type):
            return torch.get_autocast_dtype(device.type)
        return self.embeddings.tokens.weight.dtype

    def forward(
        self,
        tokens: Tensor,
        segments: Tensor,
        positions: Tensor,
        visible: Tensor,
        prefix: Optional[List[KeyValue]] = None,
        prefix_positions: Optional[Tensor] = None,
        shared: Optional[List[KeyValue]] = None,
        keys_values_only: bool = False,
        kv_out: Optional[Tensor] = None,
        kv_slots: Optional[Tuple[Tensor, Tensor]] = None,
    ) -> Tuple[Optional[Tensor], List[KeyValue]]:
        """
        Args:
            tokens, segments, positions: ``(B, T)`` long.
            visible: ``(B, T, S+P+T)`` bool; keys are ordered ``[shared | prefix | tokens]``.
            prefix: per-layer cached ``(keys, values)`` ``(B, H, P, D)`` of ``P`` earlier tokens.
            prefix_positions: ``(B, S+P)`` position ids of the shared and cached keys.
            shared: per-layer ``(keys, values)`` ``(G, H, S, D)``, each seen by ``B / G``
                consecutive rows (the source of a sentence, shared by its beam hypotheses).
            keys_values_only: skip the last layer's attention and feed-forward, which only its hidden
                states need (cached decoding of a source reads the keys and values alone).
            kv_out: ``(L, 2, B, H, P+T, D)``: every layer writes its ``[prefix | tokens]`` keys and values
                there instead of into a tensor of its own (decoding, outside autograd: the cache is
                then one tensor, reordered by one call per step). Not with ``keys_values_only``.
            kv_slots: ``(buffer, index)``, a fixed-shape decoding step: ``buffer``
                ``(L, 2, B, H, K, D)`` holds every layer's keys and values of ``K`` target slots, the
                tokens' go to slots ``index`` ``(T,)``, and the keys are ``[shared | K slots]``:
                ``prefix_positions`` ``(B, S+K)`` gives all of their positions and ``visible`` is
                ``(B, T, S+K)``. Replaces ``prefix`` and ``kv_out``.
        Returns:
            hidden states ``(B, T, C)`` (None with ``keys_values_only``) and per-layer
            ``(keys, values)`` ``(B, H, P+T, D)`` of ``[prefix | tokens]`` (``P = 0`` without a
            prefix).
        """
        if kv_slots is not None:
            if prefix is not None or kv_out is not None or shared is None or keys_values_only:
                raise ValueError("kv_slots needs shared keys, and replaces prefix, kv_out, keys_values_only")
            key_positions = prefix_positions  # every slot's, filled or not
        elif prefix_positions is None:
            key_positions = positions
        else:
            key_positions = torch.cat([prefix_positions, positions], 1)
        if visible.shape != (tokens.size(0), tokens.size(1), key_positions.size(1)):
            raise ValueError(
                f"visible mask has shape {tuple(visible.shape)}, expected "
                f"{(tokens.size(0), tokens.size(1), key_positions.size(1))}"
            )
        attn_bias = self.attention_bias(positions, key_positions, visible, self.compute_dtype(tokens.device))
        if shared is not None and attn_bias.dtype != torch.float32:
            attn_bias = attn_bias.float()  # attention over shared keys adds it in float32: cast once here
        x = self.embeddings(tokens, segments, positions)
        # no recomputation without a backward pass (validation, decoding with cached keys)
        checkpoint = self.checkpoint_activations and torch.is_grad_enabled()
        new_kv = []
        if kv_out is not None and keys_values_only:
            raise ValueError("kv_out does not combine with keys_values_only")
        layers_out = kv_out.unbind(0) if kv_out is not None else [None] * len(self.layers)
        layers_slots = [None] * len(self.layers)
        if kv_slots is not None:
            layers_slots = [(buffer, kv_slots[1]) for buffer in kv_slots[0].unbind(0)]
        for i, layer in enumerate(self.layers[: len(self.layers) - 1 if keys_values_only else None]):
            layer_prefix = None if prefix is None else prefix[i]
            layer_shared = None if shared is None else shared[i]
            inputs = (x, attn_bias, layer_prefix, layer_shared, layers_out[i], layers_slots[i])
            if checkpoint:
                # non-reentrant: gradients reach the cached (keys, values) tuples and the returned ones
                x, kv = torch.utils.checkpoint.checkpoint(layer, *inputs, use_reentrant=False)
            else:
                x, kv = layer(*inputs)
            new_kv.append(kv)
        if keys_values_only:  # the last layer: only what a later token reads
            k, v = self.layers[-1].self_attn.keys_values(x)
            if prefix is not None:  # as the attention returns them
                k, v = torch.cat([prefix[-1][0], k], 2), torch.cat([prefix[-1][1], v], 2)
            new_kv.append((k, v))
            return None, new_kv
        return x, new_kv

    def forward_after_context(
        self, tokens: Tensor, segments: Tensor, positions: Tensor, visible: Tensor, context_len: int
    ) -> Tensor:
        """:meth:`forward`'s hidden states when the first ``context_len`` columns see only each other.

        The context runs first; the remaining tokens then attend to its cached
        keys and values. The result is the same, without computing the
        context-query x appended-key block that the mask always hides.
        """
        head = slice(0, context_len)
        tail = slice(context_len, tokens.size(1))
        context, kv = self(tokens[:, head], segments[:, head], positions[:, head], visible[:, head, head])
        rest, _ = self(
            tokens[:, tail], segments[:, tail], positions[:, tail], visible[:, tail],
            prefix=kv, prefix_positions=positions[:, head],
        )  # fmt: skip
        return torch.cat([context, rest], dim=1)
