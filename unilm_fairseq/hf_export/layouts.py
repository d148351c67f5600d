"""``unilmv2`` weights and config -> a Hugging Face BERT-family layout: pure functions, no files.

The inverse of :func:`unilm_fairseq.hf_import.formats.map_bert`, key for key (``transformer.`` and
``bert.`` left out)::

    embeddings.{tokens,positions,segments}   -> embeddings.{word,position,token_type}_embeddings
    embeddings.layer_norm                    -> embeddings.LayerNorm
    rel_pos_bias.table (bins, H)             -> rel_pos_bias.weight (H, bins), transposed
    layers.{i}.self_attn.{q,k,v}_proj        -> encoder.layer.{i}.attention.self.{query,key,value}
      (fused: attention.self.qkv_linear = [q; k; v] rows, q_bias, v_bias; no key bias)
    layers.{i}.{out_proj, ...}               -> encoder.layer.{i}.attention.output.dense, ... (LAYER_RENAMES)
    lm_head.{dense,layer_norm,bias}          -> cls.predictions.{transform.dense,transform.LayerNorm,bias}
    pooler.dense (imported with the model)   -> pooler.dense

Three layouts:

* ``bert``: what ``transformers.BertForMaskedLM.save_pretrained`` writes (safetensors, the tied decoder
  weight left out); no relative position bias.
* ``unilm``: the fused "fast QKV" layout of the released UniLMv2 and MiniLM checkpoints
  (``pytorch_model.bin``); s2s-ft's ``run_seq2seq.py --model_type unilm`` fine-tunes from it, splitting the
  fused projection back into query/key/value with a zero key bias.
* ``s2s-ft``: what s2s-ft's fine-tuning saves and its ``decode_seq2seq.py`` reads: separate
  query/key/value with biases and ``bert.rel_pos_bias.weight``.

The key bias the fused layout lacks adds the same amount, ``q . b_k``, to every score of a query's row, so
no attention probability changes when it is dropped.
"""

import re
from dataclasses import dataclass, field
from typing import Dict, List, Mapping, Optional, Tuple

import torch
from torch import Tensor

from ..hf_import.formats import LAYER_RENAMES, PARAMS, QKV, WORD_EMBEDDINGS
from ..hf_import.weights import PYTORCH_FILE, SAFETENSORS_FILE
from ..models.unilmv2 import (
    EMBEDDING_LAYER_NORM,
    EMBEDDING_PROJECTION,
    HEADS,
    LM_HEAD,
    LM_HEAD_OUTPUT,
    POOLER,
    POOLER_WEIGHT,
    POSITION_TABLE,
    RELATIVE_POSITION_BIAS,
    SEGMENT_TABLE,
    TOKEN_TABLE,
    layer_key,
)

BODY = "bert."  # the encoder's prefix in every layout (BertForMaskedLM's, s2s-ft's)
REL_POS_TABLE = RELATIVE_POSITION_BIAS + "table.weight"
REL_POS_WEIGHT = BODY + "rel_pos_bias.weight"  # where s2s-ft's models keep it
HEAD_PREFIX = "cls.predictions."
DECODER_WEIGHT = HEAD_PREFIX + "decoder.weight"
# fairseq activation -> the config.json name that the importer maps back to it
HF_ACTIVATIONS = {"gelu": "gelu", "gelu_accurate": "gelu_new", "relu": "relu", "tanh": "tanh"}
INITIALIZER_RANGE = 0.02  # BERT's; only used by code that initialises new weights
MODEL_TYPE_BERT = "bert"
MODEL_TYPE_UNILM = "unilm"  # the importer's name for UniLM's layouts (fused or separate projections)
BERT_ARCHITECTURE = "BertForMaskedLM"


@dataclass(frozen=True)
class Layout:
    """What a target format holds and how it spells it."""

    name: str
    weights_file: str
    fused_qkv: bool
    relative_position_bias: bool  # whether the format can hold one
    activations: Tuple[str, ...]  # the fairseq activations its readers know
    tied_decoder_saved: bool  # whether the LM head's output weight (the word embeddings) is written too
    description: str


LAYOUTS = {
    "bert": Layout(
        name="bert",
        weights_file=SAFETENSORS_FILE,
        fused_qkv=False,
        relative_position_bias=False,
        activations=tuple(HF_ACTIVATIONS),
        tied_decoder_saved=False,
        description="transformers BertForMaskedLM / BertModel directory (model.safetensors)",
    ),
    "unilm": Layout(
        name="unilm",
        weights_file=PYTORCH_FILE,
        fused_qkv=True,
        relative_position_bias=True,
        # s2s-ft's decoding code knows only these two of ours
        activations=("gelu", "relu"),
        tied_decoder_saved=True,
        description="UniLM fast QKV, as the released UniLMv2/MiniLM checkpoints (pytorch_model.bin)",
    ),
    "s2s-ft": Layout(
        name="s2s-ft",
        weights_file=PYTORCH_FILE,
        fused_qkv=False,
        relative_position_bias=True,
        activations=("gelu", "relu"),
        tied_decoder_saved=True,
        description="what s2s-ft's run_seq2seq.py saves and decode_seq2seq.py reads (pytorch_model.bin)",
    ),
}


class ExportError(ValueError):
    """A checkpoint that cannot be exported to the requested format; the message says why and what to use."""


@dataclass
class ExportedWeights:
    """The tensors of the target layout and what of the model had no place in it."""

    state: Dict[str, Tensor]
    dropped: List[str] = field(default_factory=list)  # model keys left out (task heads)
    notes: List[str] = field(default_factory=list)  # what changed on the way, for the log


def check_exportable(cfg, layout: Layout) -> None:
    """Refuse what ``layout`` cannot hold, naming the format that can.

    Args:
        cfg: the model's ``unilmv2`` config.
    Raises:
        ExportError
    """
    if cfg.rel_pos_bins and not layout.relative_position_bias:
        raise ExportError(
            f"the model has a relative position bias ({cfg.rel_pos_bins} buckets), which a {layout.name} "
            "model has no place for (transformers' BERT adds none): export it with --format unilm (or "
            "--format s2s-ft), which UniLM's own code reads"
        )
    if getattr(cfg, "token_embed_dim", 0) and cfg.token_embed_dim != cfg.encoder_embed_dim:
        raise ExportError(
            f"the model's embeddings are {cfg.token_embed_dim} wide and projected to the hidden size "
            f"{cfg.encoder_embed_dim} (an ELECTRA layout); BERT and UniLM layouts have no such projection"
        )
    activation = str(cfg.activation_fn)
    if activation not in layout.activations:
        others = [n for n, lay in LAYOUTS.items() if activation in lay.activations]
        alternative = f"; --format {others[0]} can" if others else ""
        raise ExportError(
            f"activation {activation!r}: the {layout.name} format's readers know only "
            f"{', '.join(layout.activations)}{alternative}"
        )


class _Exporter:
    """Reads model weights by key, remembering which were used, and collects the target tensors."""

    def __init__(self, state: Mapping[str, Tensor]):
        self.src = state
        self.used = set()
        self.out: Dict[str, Tensor] = {}

    def get(self, key: str) -> Tensor:
        if key not in self.src:
            raise ExportError(f"the checkpoint has no {key!r}, which every unilmv2 model holds")
        self.used.add(key)
        # a copy of its own: safetensors refuses tensors that share memory; the caller's state stays intact
        return self.src[key].detach().clone().contiguous()

    def put(self, name: str, tensor: Tensor) -> None:
        self.out[name] = tensor

    def copy(self, name: str, key: str) -> None:
        self.put(name, self.get(key))

    def copy_params(self, name: str, prefix: str) -> None:
        for p in PARAMS:
            self.copy(f"{name}.{p}", f"{prefix}.{p}")


def _segments(e: _Exporter, layout: Layout, notes: List[str]) -> int:
    """The token-type table; returns its number of rows (``type_vocab_size``)."""
    name = BODY + "embeddings.token_type_embeddings.weight"
    if SEGMENT_TABLE in e.src:
        table = e.get(SEGMENT_TABLE)
        e.put(name, table)
        return table.size(0)
    if layout.relative_position_bias:  # UniLM's code builds no table for type_vocab_size 0
        return 0
    # transformers' BERT always adds a token-type row; a zero row adds nothing
    width = e.src[TOKEN_TABLE].size(1)
    e.put(name, e.src[TOKEN_TABLE].new_zeros(1, width))
    notes.append("the model has no segment embeddings: type_vocab_size 1 with a zero row (adds nothing)")
    return 1


def _attention(e: _Exporter, layer: int, layout: Layout, notes: List[str]) -> None:
    target = f"{BODY}encoder.layer.{layer}.attention.self."
    proj = {name: layer_key(layer, f"self_attn.{p}") for name, p in QKV}
    if not layout.fused_qkv:
        for name, _ in QKV:
            e.copy_params(target + name, proj[name])
        return
    weights = [e.get(f"{proj[name]}.weight") for name, _ in QKV]
    e.put(target + "qkv_linear.weight", torch.cat(weights, dim=0))
    # stored (1, 1, A), the shape UniLM's fused modules keep it in; readers flatten it
    e.put(target + "q_bias", e.get(proj["query"] + ".bias").view(1, 1, -1))
    e.put(target + "v_bias", e.get(proj["value"] + ".bias").view(1, 1, -1))
    key_bias = e.get(proj["key"] + ".bias")
    if bool(key_bias.ne(0).any()):
        notes.append(
            f"layer {layer}: the key bias (max |b| {float(key_bias.abs().max()):.3g}) is left out; the fused "
            "layout has none, and it changes no attention probability"
        )


def export_state(state: Mapping[str, Tensor], num_layers: int, layout: Layout) -> Tuple[ExportedWeights, int]:
    """The model's weights under ``layout``'s names.

    Args:
        state: a ``unilmv2`` model's state dict (task heads included).
        num_layers: ``cfg.encoder_layers``.
    Returns:
        the exported weights (task heads listed in ``dropped``) and the number of token-type rows.
    Raises:
        ExportError: a weight that has no place in the layout and is not a task head (for example the
            embedding projection of an ELECTRA import), or a missing weight.
    """
    e = _Exporter(state)
    notes: List[str] = []
    e.copy(BODY + WORD_EMBEDDINGS, TOKEN_TABLE)
    e.copy(BODY + "embeddings.position_embeddings.weight", POSITION_TABLE)
    type_rows = _segments(e, layout, notes)
    e.copy_params(BODY + "embeddings.LayerNorm", EMBEDDING_LAYER_NORM.rstrip("."))
    if REL_POS_TABLE in state:
        if not layout.relative_position_bias:
            raise ExportError(f"{layout.name} has no place for {REL_POS_TABLE}")  # check_exportable says why
        e.put(REL_POS_WEIGHT, e.get(REL_POS_TABLE).t().contiguous())  # (bins, H) -> nn.Linear(bins, H)
    for i in range(num_layers):
        _attention(e, i, layout, notes)
        for hf_name, ours in LAYER_RENAMES:
            e.copy_params(f"{BODY}encoder.layer.{i}.{hf_name}", layer_key(i, ours))
    e.copy_params(HEAD_PREFIX + "transform.dense", LM_HEAD + "dense")
    e.copy_params(HEAD_PREFIX + "transform.LayerNorm", LM_HEAD + "layer_norm")
    e.copy(HEAD_PREFIX + "bias", LM_HEAD + "bias")
    if POOLER_WEIGHT in state:  # BertModel's pooler_output; BertForMaskedLM, which has none, skips it
        e.copy_params(BODY + "pooler.dense", POOLER + "dense")
    e.used.add(LM_HEAD_OUTPUT)  # the word embeddings themselves (tied)
    if layout.tied_decoder_saved:
        e.put(DECODER_WEIGHT, e.out[BODY + WORD_EMBEDDINGS])  # one tensor: saved once, under both names
    left = sorted(k for k in state if k not in e.used)
    dropped = [k for k in left if k.startswith(HEADS)]
    unknown = [k for k in left if k not in dropped]
    if unknown:
        projection = [k for k in unknown if k.startswith(EMBEDDING_PROJECTION)]
        raise ExportError(
            f"{len(unknown)} weights have no place in the {layout.name} format (first: {unknown[:5]})"
            + ("; the embedding projection belongs to ELECTRA's layout" if projection else "")
        )
    return ExportedWeights(e.out, dropped, notes), type_rows


def head_names(dropped: List[str]) -> List[str]:
    """``classification_heads.sst2.dense.weight`` ... -> ``["classification_heads.sst2"]``."""
    names = []
    for key in dropped:
        match = re.match(r"(\w+\.[^.]+)\.", key)
        name = match.group(1) if match else key
        if name not in names:
            names.append(name)
    return names


def hf_config(
    cfg,
    layout: Layout,
    vocab_size: int,
    pad: int,
    type_vocab_size: int,
    type_ids: Optional[Tuple[int, int]] = None,
) -> dict:
    """The ``config.json`` of ``layout`` for a model of ``cfg``: every field the importer and the format's
    own readers take; s2s-ft's ``source_type_id``/``target_type_id`` (``type_ids``) in UniLM layouts."""
    config = {
        "vocab_size": vocab_size,
        "hidden_size": cfg.encoder_embed_dim,
        "num_hidden_layers": cfg.encoder_layers,
        "num_attention_heads": cfg.encoder_attention_heads,
        "intermediate_size": cfg.encoder_ffn_embed_dim,
        "hidden_act": HF_ACTIVATIONS[str(cfg.activation_fn)],
        "hidden_dropout_prob": cfg.dropout,
        "attention_probs_dropout_prob": cfg.attention_dropout,
        "max_position_embeddings": cfg.max_positions,
        "type_vocab_size": type_vocab_size,
        "initializer_range": INITIALIZER_RANGE,
        "layer_norm_eps": cfg.layernorm_eps,
        "pad_token_id": pad,
    }
    if not layout.relative_position_bias:
        config.update(
            architectures=[BERT_ARCHITECTURE],
            model_type=MODEL_TYPE_BERT,
            position_embedding_type="absolute",
            tie_word_embeddings=True,
        )
        return config
    source, target = type_ids
    config.update(
        model_type=MODEL_TYPE_UNILM,
        rel_pos_bins=cfg.rel_pos_bins,
        max_rel_pos=cfg.max_rel_pos if cfg.rel_pos_bins else 0,
        source_type_id=source,
        target_type_id=target,
    )
    return config
