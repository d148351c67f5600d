"""What a Hugging Face ``config.json`` says, checked, and the ``unilmv2`` config it maps onto."""

import json
import os
from dataclasses import dataclass
from typing import Optional

from .. import seq2seq_layout
from ..checkpoint.converted import TYPE_ID_KEYS
from ..models.unilmv2 import UniLMv2Config

CONFIG_FILE = "config.json"
MODEL_NAME = "unilmv2"

# config.json "model_type" -> weight layout family. "unilm" and "minilm" releases use BERT's
# layout, with either separate or fused ("fast QKV") attention projections.
FORMATS = {
    "bert": "bert",
    "minilm": "bert",
    "unilm": "bert",
    "electra": "electra",
    "roberta": "roberta",
    "xlm-roberta": "xlm-roberta",
}
# families whose position ids start after the padding id (fairseq's make_positions):
# position p of a sequence reads row p + pad_token_id + 1
OFFSET_POSITION_FAMILIES = ("roberta", "xlm-roberta")
DEFAULT_PAD_TOKEN_ID = {"roberta": 1, "xlm-roberta": 1}
# Hugging Face activation names -> fairseq's (same functions: "gelu" is the exact erf form,
# fairseq's "gelu_accurate" is the tanh approximation HF calls "gelu_new")
ACTIVATIONS = {
    "gelu": "gelu",
    "gelu_new": "gelu_accurate",
    "gelu_pytorch_tanh": "gelu_accurate",
    "relu": "relu",
    "tanh": "tanh",
}
# transformers' defaults for what config.json may omit
BERT_LAYER_NORM_EPS = 1e-12
BERT_DROPOUT = 0.1
# the two segments UniLM uses (source/target, or sentence A/B)
MIN_SEGMENTS = 2


class ConversionError(ValueError):
    """A model directory that cannot be converted; the message names the file and the problem."""


@dataclass
class SourceConfig:
    """The architecture of the source model, from its ``config.json``."""

    path: str
    format: str  # a key of FORMATS
    family: str  # FORMATS[format]
    num_layers: int
    hidden_size: int
    num_heads: int
    ffn_size: int
    embedding_size: int  # width of the embedding tables (ELECTRA's can be smaller)
    vocab_size: int
    max_position_embeddings: int
    position_offset: int  # leading position rows no token reads (RoBERTa: 2)
    type_vocab_size: int
    activation: str  # fairseq name
    layer_norm_eps: float
    hidden_dropout: float
    attention_dropout: float
    rel_pos_bins: int  # 0: no relative position bias
    max_rel_pos: int
    # s2s-ft's segment ids of source and target, when config.json records them (UniLM configs)
    source_type_id: Optional[int] = None
    target_type_id: Optional[int] = None

    @property
    def max_positions(self) -> int:
        """Rows of the converted position table."""
        return self.max_position_embeddings - self.position_offset

    @property
    def num_segments(self) -> int:
        """A single token type (RoBERTa, XLM-R) is copied into both UniLM segments."""
        return 0 if self.type_vocab_size == 0 else max(self.type_vocab_size, MIN_SEGMENTS)


def _required(raw: dict, key: str, path: str):
    if key not in raw:
        raise ConversionError(f"{path}: missing {key!r}")
    return raw[key]


def _positive_int(raw: dict, key: str, path: str) -> int:
    value = _required(raw, key, path)
    if not isinstance(value, int) or isinstance(value, bool) or value <= 0:
        raise ConversionError(f"{path}: {key!r} must be a positive integer, got {value!r}")
    return value


def read_source_config(model_dir: str, model_type: Optional[str] = None) -> SourceConfig:
    """Read and check ``model_dir/config.json``.

    Args:
        model_type: a key of :data:`FORMATS` overriding the file's ``model_type``.
    Raises:
        ConversionError: naming the file and what is missing or unsupported.
    """
    path = os.path.join(model_dir, CONFIG_FILE)
    if not os.path.isfile(path):
        raise ConversionError(f"{path} not found: a Hugging Face model directory holds config.json")
    try:
        with open(path, encoding="utf-8") as f:
            raw = json.load(f)
    except (json.JSONDecodeError, UnicodeDecodeError) as err:
        raise ConversionError(f"{path} is not valid JSON: {err}") from None
    model_type = model_type or raw.get("model_type")
    if model_type not in FORMATS:
        raise ConversionError(
            f"{path}: model_type {model_type!r} is not supported; supported: {', '.join(FORMATS)}"
        )
    family = FORMATS[model_type]
    if raw.get("position_embedding_type", "absolute") != "absolute":
        raise ConversionError(
            f"{path}: position_embedding_type {raw['position_embedding_type']!r} is not supported "
            "(absolute positions only)"
        )
    if raw.get("is_decoder") or raw.get("add_cross_attention"):
        raise ConversionError(f"{path}: decoder models with cross-attention are not supported")
    _check_relative_position_options(raw, path)
    act = raw.get("hidden_act", "gelu")
    if act not in ACTIVATIONS:
        raise ConversionError(
            f"{path}: hidden_act {act!r} is not supported; supported: {', '.join(ACTIVATIONS)}"
        )
    hidden = _positive_int(raw, "hidden_size", path)
    heads = _positive_int(raw, "num_attention_heads", path)
    if hidden % heads:
        raise ConversionError(f"{path}: hidden_size {hidden} is not divisible by num_attention_heads {heads}")
    offset = 0
    if family in OFFSET_POSITION_FAMILIES:
        offset = raw.get("pad_token_id", DEFAULT_PAD_TOKEN_ID[family]) + 1
    max_positions = _positive_int(raw, "max_position_embeddings", path)
    if max_positions <= offset:
        raise ConversionError(f"{path}: max_position_embeddings {max_positions} leaves no positions")
    rel_pos_bins = int(raw.get("rel_pos_bins") or 0)
    type_vocab_size = int(raw.get("type_vocab_size", MIN_SEGMENTS))
    type_ids = [_type_id(raw, key, type_vocab_size, path) for key in TYPE_ID_KEYS]
    return SourceConfig(
        path=path,
        format=model_type,
        family=family,
        num_layers=_positive_int(raw, "num_hidden_layers", path),
        hidden_size=hidden,
        num_heads=heads,
        ffn_size=_positive_int(raw, "intermediate_size", path),
        embedding_size=int(raw.get("embedding_size") or hidden),
        vocab_size=_positive_int(raw, "vocab_size", path),
        max_position_embeddings=max_positions,
        position_offset=offset,
        type_vocab_size=type_vocab_size,
        activation=ACTIVATIONS[act],
        layer_norm_eps=float(raw.get("layer_norm_eps", BERT_LAYER_NORM_EPS)),
        hidden_dropout=float(raw.get("hidden_dropout_prob", BERT_DROPOUT)),
        attention_dropout=float(raw.get("attention_probs_dropout_prob", BERT_DROPOUT)),
        rel_pos_bins=rel_pos_bins,
        max_rel_pos=int(raw.get("max_rel_pos") or 0) if rel_pos_bins else 0,
        source_type_id=type_ids[0],
        target_type_id=type_ids[1],
    )


def _type_id(raw: dict, key: str, type_vocab_size: int, path: str) -> Optional[int]:
    """``source_type_id``/``target_type_id``: a row of the converted segment table, or None when absent."""
    if key not in raw:
        return None
    value = raw[key]
    if not isinstance(value, int) or isinstance(value, bool) or value < 0:
        raise ConversionError(f"{path}: {key!r} must be a non-negative integer, got {value!r}")
    rows = max(type_vocab_size, MIN_SEGMENTS) if type_vocab_size else 0  # as SourceConfig.num_segments
    if rows and value >= rows:
        raise ConversionError(f"{path}: {key} {value} has no row among type_vocab_size {type_vocab_size}")
    return value


def _check_relative_position_options(raw: dict, path: str) -> None:
    """Only UniLM's released form: one T5-style bucketed bias table shared by all layers."""
    bins = raw.get("rel_pos_bins") or 0
    if bins and not raw.get("max_rel_pos"):
        raise ConversionError(f"{path}: rel_pos_bins is {bins} but max_rel_pos is not set")
    if raw.get("rel_pos_type") not in (None, 0, 2):
        raise ConversionError(
            f"{path}: rel_pos_type {raw['rel_pos_type']} (clipped distances) is not supported"
        )
    for option in ("untie_rel_pos", "seperate_cls_rel_pos"):
        if raw.get(option):
            raise ConversionError(f"{path}: {option}=true is not supported (one shared bias table only)")


def unilmv2_config(source: SourceConfig) -> UniLMv2Config:
    """The ``unilmv2`` config with the source's sizes, activation, eps, dropout and position tables, and
    the s2s-ft segment ids its config records (generation uses them; 0/1 when it records none)."""
    return UniLMv2Config(
        _name=MODEL_NAME,
        encoder_layers=source.num_layers,
        encoder_embed_dim=source.hidden_size,
        token_embed_dim=source.embedding_size if source.embedding_size != source.hidden_size else 0,
        encoder_ffn_embed_dim=source.ffn_size,
        encoder_attention_heads=source.num_heads,
        activation_fn=source.activation,
        dropout=source.hidden_dropout,
        attention_dropout=source.attention_dropout,
        activation_dropout=0.0,
        max_positions=source.max_positions,
        num_segments=source.num_segments,
        rel_pos_bins=source.rel_pos_bins,
        max_rel_pos=source.max_rel_pos,
        layernorm_eps=source.layer_norm_eps,
        seq2seq_source_segment=_or(source.source_type_id, seq2seq_layout.SOURCE_SEGMENT),
        seq2seq_target_segment=_or(source.target_type_id, seq2seq_layout.TARGET_SEGMENT),
    )


def _or(value: Optional[int], default: int) -> int:
    return default if value is None else value
