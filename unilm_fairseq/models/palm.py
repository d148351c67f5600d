"""The ``palm`` model (Bi et al. 2020, §2): Transformer encoder-decoder, encoder MLM head, pointer-generator.

fairseq's Transformer with one dictionary and one embedding table for encoder input, decoder input and
both output layers. The encoder carries a BERT-style MLM head (pre-training stage 1); the decoder ends in
PALM's pointer-generator (:mod:`unilm_fairseq.modules.pointer_generator`), so the decoder returns
log-probabilities of the copy mixture, which fairseq's ``label_smoothed_cross_entropy`` criterion and
``SequenceGenerator`` use as they are. Architectures only fill options the user left unset.
"""

import argparse
import functools
import logging
from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional

import torch
from fairseq.dataclass import FairseqDataclass
from fairseq.dataclass.utils import gen_parser_from_dataclass
from fairseq.models import register_model, register_model_architecture
from fairseq.models.transformer import TransformerDecoder, TransformerEncoder, TransformerModel
from fairseq.models.transformer import base_architecture as transformer_base_architecture
from fairseq.utils import safe_getattr
from omegaconf import OmegaConf
from torch import Tensor

from ..hub.palm import PALMHubInterface
from ..modules import UniLMLMHead
from ..modules.pointer_generator import COPY_ATTENTION, COPY_GATE, PointerGenerator
from .architecture_presets import dataclass_defaults, fill_unset

logger = logging.getLogger(__name__)

LAYERNORM_EPS = 1e-5  # fairseq's LayerNorm default

# state-dict keys of the model's parameters
ENCODER, DECODER = "encoder.", "decoder."
TOKEN_TABLE = "encoder.embed_tokens.weight"  # shared by the encoder, the decoder and the output layer
SOURCE_POSITION_TABLE = "encoder.embed_positions.weight"
TARGET_POSITION_TABLE = "decoder.embed_positions.weight"
ENCODER_LAYER_NORM = "encoder.layernorm_embedding."
ENCODER_VERSION = "encoder.version"  # fairseq's format version buffer
ENCODER_MLM_HEAD = "encoder_mlm_head."
POINTER = "decoder.pointer."
COPY_ATTENTION_PARTS = tuple(POINTER + part for part in COPY_ATTENTION)
COPY_GATE_PARTS = tuple(POINTER + part for part in COPY_GATE)
POINTER_PARTS = COPY_ATTENTION_PARTS + COPY_GATE_PARTS


def encoder_layer_key(layer: int, part: str) -> str:
    """The key of ``part`` (e.g. ``"fc1.weight"``) of encoder layer ``layer``."""
    return f"{ENCODER}layers.{layer}.{part}"


@dataclass
class PALMConfig(FairseqDataclass):
    """PALM's options on top of fairseq's Transformer options.

    fairseq's ``--checkpoint-activations`` and ``--offload-activations`` apply to every encoder and decoder
    layer; they only act when gradients are recorded (:func:`checkpoint_only_with_grad`).
    """

    no_copy: bool = field(
        default=False, metadata={"help": "ablate the pointer: the output is the vocabulary softmax alone"}
    )
    copy_attention_dim: int = field(
        default=0, metadata={"help": "width of the additive copy attention; 0: the decoder's hidden size"}
    )
    encoder_layernorm_eps: float = field(
        default=LAYERNORM_EPS,
        metadata={
            "help": "epsilon of the encoder's LayerNorms and MLM head (fairseq's default 1e-5; an encoder "
            "initialised from a BERT checkpoint takes its 1e-12)"
        },
    )
    no_encoder_mlm_head: bool = field(
        default=False,
        metadata={
            "help": "build no MLM head on the encoder (fine-tuning does not use it; --task palm_seq2seq "
            "sets this)"
        },
    )


def checkpoint_only_with_grad(layer):
    """A layer wrapped by fairseq's ``--checkpoint-activations`` (also set by ``--offload-activations``)
    recomputes its activations in the backward pass; this makes it run plainly when no gradients are
    recorded (validation, incremental decoding): nothing is kept for recomputation or offloaded.
    Other layers are returned as they are. The state-dict keys do not change either way."""
    plain = getattr(layer, "precheckpoint_forward", None)
    if plain is not None:
        # partials of bound methods, so a deep copy of the layer calls the copy's own forward
        layer.forward = functools.partial(_checkpointed_with_grad, layer.forward, plain)
    return layer


def _checkpointed_with_grad(checkpointed, plain, *args, **kwargs):
    return (checkpointed if torch.is_grad_enabled() else plain)(*args, **kwargs)


class PALMEncoder(TransformerEncoder):
    """fairseq's Transformer encoder whose output also carries ``src_tokens`` (what the pointer copies).

    Its LayerNorms use ``--encoder-layernorm-eps`` (fairseq builds them with its default).
    """

    def __init__(self, args, dictionary, embed_tokens):
        super().__init__(args, dictionary, embed_tokens)
        eps = args.encoder_layernorm_eps  # PALMModel.build_model filled PALM's options
        for module in self.modules():
            if hasattr(module, "normalized_shape") and hasattr(module, "eps"):  # torch's or apex's LayerNorm
                module.eps = eps

    def build_encoder_layer(self, args):
        return checkpoint_only_with_grad(super().build_encoder_layer(args))

    def forward(
        self,
        src_tokens: Tensor,
        src_lengths: Optional[Tensor] = None,
        return_all_hiddens: bool = False,
        token_embeddings: Optional[Tensor] = None,
    ) -> Dict[str, List[Tensor]]:
        """``src_tokens`` ``(B, S)`` -> fairseq's encoder dict, ``"src_tokens": [(B, S)]`` filled in."""
        out = super().forward(src_tokens, src_lengths, return_all_hiddens, token_embeddings)
        out["src_tokens"] = [src_tokens]  # fairseq's reorder_encoder_out reorders it with the rest
        return out


class PALMDecoder(TransformerDecoder):
    """fairseq's Transformer decoder ending in PALM's pointer-generator instead of a plain softmax."""

    def __init__(self, args, dictionary, embed_tokens, no_encoder_attn=False):
        super().__init__(args, dictionary, embed_tokens, no_encoder_attn=no_encoder_attn)
        hidden = self.output_embed_dim
        self.pointer = PointerGenerator(
            hidden,
            args.copy_attention_dim or hidden,
            embed_tokens.weight,
            copy=not args.no_copy,
        )

    def build_decoder_layer(self, args, no_encoder_attn=False):
        return checkpoint_only_with_grad(super().build_decoder_layer(args, no_encoder_attn))

    def output_layer(self, features: Tensor) -> Tensor:
        """``(B, T, C)`` -> ``(B, T, V)`` logits of the vocabulary distribution ``P^v`` alone."""
        return self.pointer.vocab_logits(features)

    def forward(
        self,
        prev_output_tokens: Tensor,
        encoder_out: Optional[Dict[str, List[Tensor]]] = None,
        incremental_state: Optional[Dict[str, Dict[str, Optional[Tensor]]]] = None,
        features_only: bool = False,
        full_context_alignment: bool = False,
        alignment_layer: Optional[int] = None,
        alignment_heads: Optional[int] = None,
        src_lengths: Optional[Any] = None,
        return_all_hiddens: bool = False,
    ):
        """
        Args:
            prev_output_tokens: ``(B, T)`` (only the last column is read with ``incremental_state``).
            encoder_out: :class:`PALMEncoder`'s output.
        Returns:
            ``log P`` ``(B, T, V)`` float32 (or features ``(B, T, C)`` with ``features_only``), and
            fairseq's extra dict with ``"attn": [alpha (B, T, S)]`` (the copy attention) and
            ``"copy_gate": [lambda (B, T, 1)]`` (both None with ``--no-copy``).
        """
        features, extra = self.extract_features(
            prev_output_tokens,
            encoder_out=encoder_out,
            incremental_state=incremental_state,
            full_context_alignment=full_context_alignment,
            alignment_layer=alignment_layer,
            alignment_heads=alignment_heads,
        )
        if features_only:
            return features, extra
        if encoder_out is None or not encoder_out["src_tokens"]:
            raise ValueError("the pointer-generator needs the PALM encoder's output (with src_tokens)")
        lprobs, alpha, gate = self.pointer(
            features,
            encoder_out["encoder_out"][0].transpose(0, 1),  # B x S x C
            encoder_out["encoder_padding_mask"][0],
            encoder_out["src_tokens"][0],
            incremental_state,
        )
        extra["attn"] = [alpha]
        extra["copy_gate"] = [gate]
        return lprobs, extra


@register_model("palm")
class PALMModel(TransformerModel):
    """PALM: encoder-decoder Transformer with an encoder MLM head and a pointer-generator decoder.

    ``forward`` returns the pointer-generator's log-probabilities ``(B, T, V)``; when ``src_masked_tokens``
    is given, the extra dict also holds ``"encoder_mlm_logits"`` ``(N, V)`` for those source positions
    (row-major order).
    """

    def __init__(self, args, encoder, decoder):
        super().__init__(args, encoder, decoder)
        self.encoder_mlm_head = None
        if not args.no_encoder_mlm_head:
            self.encoder_mlm_head = UniLMLMHead(
                encoder.embed_tokens.embedding_dim,
                args.activation_fn,
                args.encoder_layernorm_eps,
                weight=encoder.embed_tokens.weight,
            )

    @classmethod
    def from_pretrained(cls, model_dir, checkpoint_file=None, data_name_or_path=".", **kwargs):
        """Load a fine-tuned checkpoint for generation from text: a :class:`PALMHubInterface`.

        ``checkpoint_file`` defaults to the one a model folder's ``generation.json`` names, else
        ``checkpoint_best.pt`` (see :meth:`PALMHubInterface.from_pretrained`)."""
        return PALMHubInterface.from_pretrained(model_dir, checkpoint_file, data_name_or_path, **kwargs)

    @classmethod
    def add_args(cls, parser):
        super().add_args(parser)
        gen_parser_from_dataclass(parser, PALMConfig(), delete_default=True)

    @classmethod
    def build_model(cls, args, task):
        if OmegaConf.is_config(args):
            # a Hydra config (fairseq-hydra-train, or a checkpoint's): fairseq's TransformerConfig keeps the
            # options it does not know (PALM's own, --encoder-layernorm-eps ...) from a namespace only
            args = argparse.Namespace(**OmegaConf.to_container(args, resolve=True))
        base_architecture(args)
        if task.source_dictionary != task.target_dictionary:
            raise ValueError(
                "palm shares one embedding table between encoder, decoder and output: the source and target "
                "dictionaries must be the same (fairseq-preprocess --joined-dictionary)"
            )
        args.share_all_embeddings = True
        return super().build_model(args, task)

    @classmethod
    def build_encoder(cls, args, src_dict, embed_tokens):
        return PALMEncoder(args, src_dict, embed_tokens)

    @classmethod
    def build_decoder(cls, args, tgt_dict, embed_tokens):
        return PALMDecoder(args, tgt_dict, embed_tokens)

    def forward(
        self,
        src_tokens: Tensor,
        src_lengths: Tensor,
        prev_output_tokens: Optional[Tensor],
        src_masked_tokens: Optional[Tensor] = None,
        return_all_hiddens: bool = False,
        features_only: bool = False,
        alignment_layer: Optional[int] = None,
        alignment_heads: Optional[int] = None,
        **unused,
    ):
        """
        Args:
            src_tokens: ``(B, S)``; src_lengths: ``(B,)``.
            prev_output_tokens: ``(B, T)``; None runs the encoder alone (pre-training stage 1 through
                ``forward``, which distributed training wraps, unlike :meth:`forward_encoder_mlm`).
            src_masked_tokens: ``(B, S)`` bool; when given, the encoder's MLM logits of these positions.
        Returns:
            ``log P`` ``(B, T, V)`` (None without ``prev_output_tokens``) and the decoder's extra dict (see
            :meth:`PALMDecoder.forward`; empty without ``prev_output_tokens``), plus
            ``"encoder_mlm_logits"`` ``(N, V)`` with ``src_masked_tokens``.
        """
        encoder_out = self.encoder(src_tokens, src_lengths=src_lengths, return_all_hiddens=return_all_hiddens)
        if prev_output_tokens is None:
            if src_masked_tokens is None:
                raise ValueError("give prev_output_tokens (decoding) or src_masked_tokens (encoder MLM)")
            return None, {"encoder_mlm_logits": self.encoder_mlm_logits(encoder_out, src_masked_tokens)}
        lprobs, extra = self.decoder(
            prev_output_tokens,
            encoder_out=encoder_out,
            features_only=features_only,
            alignment_layer=alignment_layer,
            alignment_heads=alignment_heads,
            src_lengths=src_lengths,
            return_all_hiddens=return_all_hiddens,
        )
        if src_masked_tokens is not None:
            extra["encoder_mlm_logits"] = self.encoder_mlm_logits(encoder_out, src_masked_tokens)
        return lprobs, extra

    def forward_encoder_mlm(
        self, src_tokens: Tensor, src_lengths: Tensor, src_masked_tokens: Tensor
    ) -> Tensor:
        """Encoder only (pre-training stage 1): ``(B, S)`` tokens -> ``(N, V)`` MLM logits of the masked.

        Under pytorch DDP, call the model itself with ``prev_output_tokens=None`` instead: a method other
        than ``forward`` bypasses the wrapper's gradient synchronisation.
        """
        encoder_out = self.encoder(src_tokens, src_lengths=src_lengths)
        return self.encoder_mlm_logits(encoder_out, src_masked_tokens)

    def encoder_mlm_logits(self, encoder_out: Dict[str, List[Tensor]], src_masked_tokens: Tensor) -> Tensor:
        """MLM logits ``(N, V)`` of the ``(B, S)`` bool positions, row-major, from the encoder's output."""
        if self.encoder_mlm_head is None:
            raise ValueError("this model was built with --no-encoder-mlm-head: it has no encoder MLM head")
        states = encoder_out["encoder_out"][0].transpose(0, 1)  # B x S x C
        return self.encoder_mlm_head(states[src_masked_tokens])  # N x V

    def get_normalized_probs(self, net_output, log_probs: bool, sample: Optional[Dict[str, Tensor]] = None):
        """The copy mixture's probabilities (its log with ``log_probs``), ``(B, T, V)`` float32.

        The decoder already returns normalised log-probabilities; normalising again keeps them a
        distribution when ``SequenceGenerator`` has divided them by a sampling temperature.
        """
        lprobs = torch.log_softmax(net_output[0].float(), dim=-1)
        return lprobs if log_probs else lprobs.exp()


def base_architecture(args):
    """PALM base (§3.1): 12 + 12 layers, 768 hidden, 12 heads, FFN 3072, GELU, post-LN, learned positions."""
    args.encoder_layers = safe_getattr(args, "encoder_layers", 12)
    args.decoder_layers = safe_getattr(args, "decoder_layers", 12)
    args.encoder_embed_dim = safe_getattr(args, "encoder_embed_dim", 768)
    args.encoder_ffn_embed_dim = safe_getattr(args, "encoder_ffn_embed_dim", 3072)
    args.encoder_attention_heads = safe_getattr(args, "encoder_attention_heads", 12)
    args.decoder_embed_dim = safe_getattr(args, "decoder_embed_dim", args.encoder_embed_dim)
    args.decoder_ffn_embed_dim = safe_getattr(args, "decoder_ffn_embed_dim", args.encoder_ffn_embed_dim)
    args.decoder_attention_heads = safe_getattr(args, "decoder_attention_heads", args.encoder_attention_heads)
    args.activation_fn = safe_getattr(args, "activation_fn", "gelu")
    args.dropout = safe_getattr(args, "dropout", 0.1)
    args.attention_dropout = safe_getattr(args, "attention_dropout", 0.1)
    args.activation_dropout = safe_getattr(args, "activation_dropout", 0.0)
    # BERT/RoBERTa-style embeddings: learned positions, LayerNorm, no sqrt(d) scaling
    args.encoder_learned_pos = safe_getattr(args, "encoder_learned_pos", True)
    args.decoder_learned_pos = safe_getattr(args, "decoder_learned_pos", True)
    args.layernorm_embedding = safe_getattr(args, "layernorm_embedding", True)
    args.no_scale_embedding = safe_getattr(args, "no_scale_embedding", True)
    args.encoder_normalize_before = safe_getattr(args, "encoder_normalize_before", False)
    args.decoder_normalize_before = safe_getattr(args, "decoder_normalize_before", False)
    args.share_all_embeddings = True
    args.share_decoder_input_output_embed = True
    fill_unset(args, dataclass_defaults(PALMConfig))  # PALM's own options
    transformer_base_architecture(args)


@register_model_architecture("palm", "palm_base")
def palm_base(args):
    base_architecture(args)


@register_model_architecture("palm", "palm_large")
def palm_large(args):
    """24-layer encoder, 6-layer decoder, 1024 hidden, 16 heads, FFN 4096."""
    args.encoder_layers = safe_getattr(args, "encoder_layers", 24)
    args.decoder_layers = safe_getattr(args, "decoder_layers", 6)
    args.encoder_embed_dim = safe_getattr(args, "encoder_embed_dim", 1024)
    args.encoder_ffn_embed_dim = safe_getattr(args, "encoder_ffn_embed_dim", 4096)
    args.encoder_attention_heads = safe_getattr(args, "encoder_attention_heads", 16)
    base_architecture(args)


@register_model_architecture("palm", "palm_tiny")
def palm_tiny(args):
    """For tests and CPU demos: 2 + 2 layers, 64 hidden, 4 heads, FFN 96 (distinct sizes show shape bugs)."""
    args.encoder_layers = safe_getattr(args, "encoder_layers", 2)
    args.decoder_layers = safe_getattr(args, "decoder_layers", 2)
    args.encoder_embed_dim = safe_getattr(args, "encoder_embed_dim", 64)
    args.encoder_ffn_embed_dim = safe_getattr(args, "encoder_ffn_embed_dim", 96)
    args.encoder_attention_heads = safe_getattr(args, "encoder_attention_heads", 4)
    base_architecture(args)
