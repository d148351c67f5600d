"""Hugging Face weight names -> ``unilmv2`` state-dict keys: one pure function per layout family.

Every family shares BERT's encoder layout under a body prefix (``bert.``,
``roberta.``, ``electra.``, or none for a bare ``*Model``)::

    embeddings.{word,position,token_type}_embeddings, embeddings.LayerNorm
    encoder.layer.{i}.attention.self.{query,key,value}      -> self_attn.{q,k,v}_proj
      (UniLM "fast QKV": attention.self.qkv_linear + q_bias + v_bias, no key bias)
    encoder.layer.{i}.attention.output.{dense,LayerNorm}    -> self_attn.out_proj, self_attn_layer_norm
    encoder.layer.{i}.intermediate.dense, output.dense      -> fc1, fc2
    encoder.layer.{i}.output.LayerNorm                      -> final_layer_norm

and differs in the MLM head (``cls.predictions`` for BERT, ``lm_head`` for
RoBERTa/XLM-R, ``generator_predictions``/``generator_lm_head`` for an ELECTRA
generator), RoBERTa's position offset, ELECTRA's embedding projection and
UniLM's relative position bias. BERT's [CLS] pooler (``pooler.dense``), where the source has one, becomes
the model's frozen ``pooler``, so the export can give it back; NSP and discriminator heads are dropped.
"""

import re
from dataclasses import dataclass, field
from typing import Dict, List, Mapping, Optional, Sequence

import torch
from torch import Tensor

from .config import MIN_SEGMENTS, ConversionError, SourceConfig

WORD_EMBEDDINGS = "embeddings.word_embeddings.weight"
PARAMS = ("weight", "bias")
# per-layer sub-modules that only change name
LAYER_RENAMES = (
    ("attention.output.dense", "self_attn.out_proj"),
    ("attention.output.LayerNorm", "self_attn_layer_norm"),
    ("intermediate.dense", "fc1"),
    ("output.dense", "fc2"),
    ("output.LayerNorm", "final_layer_norm"),
)
QKV = (("query", "q_proj"), ("key", "k_proj"), ("value", "v_proj"))
# the activation RoBERTa's and ELECTRA's MLM heads use whatever hidden_act says
HEAD_ACTIVATION = "gelu"
# source weights that have no counterpart and are dropped on purpose (full-name regexes)
DROPPED = (
    r".*\.(position_ids|token_type_ids)",  # buffers, not weights
    r"cls\.seq_relationship\..*",  # next-sentence prediction
    r"discriminator_predictions\..*",  # ELECTRA's replaced-token detector
    r"(classifier|qa_outputs)\..*",  # task heads of fine-tuned checkpoints
)


@dataclass
class MappedWeights:
    """The converted tensors, where each came from, and what was left out."""

    state: Dict[str, Tensor]
    sources: Dict[str, str]  # unilmv2 key -> the source weight it came from
    has_lm_head: bool
    dropped: List[str] = field(default_factory=list)
    warnings: List[str] = field(default_factory=list)


def normalize_name(key: str) -> str:
    """Old TF-converted checkpoints call LayerNorm parameters ``gamma``/``beta``."""
    return re.sub(r"\.gamma$", ".weight", re.sub(r"\.beta$", ".bias", key))


class _Mapper:
    """Reads source weights (body names under a detected prefix) and collects the renamed ones."""

    def __init__(
        self, state: Mapping[str, Tensor], weights_file: str, config_file: str, prefixes: Sequence[str]
    ):
        self.src = {normalize_name(k): v for k, v in state.items()}
        self.file = weights_file
        self.config_file = config_file
        self.used = set()
        self.state: Dict[str, Tensor] = {}
        self.sources: Dict[str, str] = {}
        self.warnings: List[str] = []
        found = [p for p in prefixes if p + WORD_EMBEDDINGS in self.src]
        if not found:
            looked = ", ".join(repr(p + WORD_EMBEDDINGS) for p in prefixes)
            raise ConversionError(
                f"{weights_file}: no word embeddings (looked for {looked}); is model_type right?"
            )
        self.prefix = found[0]

    def name(self, key: str, body: bool) -> str:
        return self.prefix + key if body else key

    def has(self, key: str, body: bool = True) -> bool:
        return self.name(key, body) in self.src

    def get(self, key: str, body: bool = True) -> Tensor:
        name = self.name(key, body)
        if name not in self.src:
            raise ConversionError(f"{self.file}: missing weight {name!r}, which {self.config_file} implies")
        self.used.add(name)
        return self.src[name]

    def put(self, target: str, tensor: Tensor, source: str) -> None:
        self.state[target] = tensor
        self.sources[target] = source

    def copy(self, target: str, key: str, body: bool = True) -> None:
        self.put(target, self.get(key, body), self.name(key, body))

    def finish(self, has_lm_head: bool) -> MappedWeights:
        """Everything unused must be a known droppable weight; anything else is an error."""
        left = sorted(k for k in self.src if k not in self.used)
        dropped = [k for k in left if any(re.fullmatch(p, k) for p in DROPPED)]
        unknown = [k for k in left if k not in dropped]
        if unknown:
            raise ConversionError(
                f"{self.file}: {len(unknown)} weights have no place in the converted model "
                f"(first: {unknown[:5]}); does {self.config_file} describe these weights?"
            )
        return MappedWeights(self.state, self.sources, has_lm_head, dropped, self.warnings)


def _map_embeddings(m: _Mapper, position_offset: int) -> None:
    m.copy("transformer.embeddings.tokens.weight", WORD_EMBEDDINGS)
    positions = m.get("embeddings.position_embeddings.weight")
    # RoBERTa's first rows belong to ids at or below the padding id, which no token reads
    m.put(
        "transformer.embeddings.positions.weight",
        positions[position_offset:],
        m.name("embeddings.position_embeddings.weight", True),
    )
    if m.has("embeddings.token_type_embeddings.weight"):
        types = m.get("embeddings.token_type_embeddings.weight")
        if types.size(0) == 1:
            # one token type (RoBERTa, XLM-R): both UniLM segments read it, so outputs do not
            # depend on the segment ids, exactly as the source model ignores them
            types = types.repeat(MIN_SEGMENTS, 1)
        m.put(
            "transformer.embeddings.segments.weight",
            types,
            m.name("embeddings.token_type_embeddings.weight", True),
        )
    for p in PARAMS:
        m.copy(f"transformer.embeddings.layer_norm.{p}", f"embeddings.LayerNorm.{p}")


def _map_attention_projections(m: _Mapper, src: str, tgt: str) -> None:
    """Query/key/value of one layer, from separate projections or UniLM's fused "fast QKV" one."""
    fused = src + "qkv_linear.weight"
    if m.has(fused):
        weight = m.get(fused)  # (3A) x C: rows [query; key; value]
        if weight.size(0) % len(QKV):
            raise ConversionError(
                f"{m.file}: {m.name(fused, True)} has {weight.size(0)} rows, not 3 x hidden"
            )
        for (_, proj), part in zip(QKV, weight.chunk(len(QKV), dim=0)):
            m.put(f"{tgt}{proj}.weight", part, m.name(fused, True))
        m.copy(f"{tgt}q_proj.bias", src + "q_bias")
        m.copy(f"{tgt}v_proj.bias", src + "v_bias")
        # q_bias/v_bias may be stored as (1, 1, A)
        for proj in ("q_proj", "v_proj"):
            m.state[f"{tgt}{proj}.bias"] = m.state[f"{tgt}{proj}.bias"].reshape(-1)
        # no key bias: it would add q.b to every score of a query row, which softmax ignores
        m.put(f"{tgt}k_proj.bias", torch.zeros_like(m.state[f"{tgt}q_proj.bias"]), m.name(fused, True))
        return
    for name, proj in QKV:
        m.copy(f"{tgt}{proj}.weight", f"{src}{name}.weight")
        if name == "key" and not m.has(f"{src}key.bias"):
            m.put(f"{tgt}k_proj.bias", torch.zeros(m.state[f"{tgt}k_proj.weight"].size(0)), m.name(src, True))
        else:
            m.copy(f"{tgt}{proj}.bias", f"{src}{name}.bias")


def _map_layers(m: _Mapper, num_layers: int) -> None:
    for i in range(num_layers):
        src, tgt = f"encoder.layer.{i}.", f"transformer.layers.{i}."
        _map_attention_projections(m, src + "attention.self.", tgt + "self_attn.")
        for old, new in LAYER_RENAMES:
            for p in PARAMS:
                m.copy(f"{tgt}{new}.{p}", f"{src}{old}.{p}")


def _map_lm_head(
    m: _Mapper, dense: str, layer_norm: str, bias: str, decoder: str, decoder_bias: Optional[str]
) -> bool:
    """Copy an MLM head (top-level names); returns False when the checkpoint has none."""
    if not m.has(dense + ".weight", body=False):
        return False
    for p in PARAMS:
        m.copy(f"lm_head.dense.{p}", f"{dense}.{p}", body=False)
        m.copy(f"lm_head.layer_norm.{p}", f"{layer_norm}.{p}", body=False)
    if m.has(bias, body=False):
        m.copy("lm_head.bias", bias, body=False)
        if decoder_bias and m.has(decoder_bias, body=False):
            m.get(decoder_bias, body=False)  # the same vector, saved twice
    elif decoder_bias and m.has(decoder_bias, body=False):
        m.copy("lm_head.bias", decoder_bias, body=False)
    else:
        raise ConversionError(f"{m.file}: the MLM head has no output bias ({bias!r})")
    if m.has(decoder, body=False):
        decoder_weight = m.get(decoder, body=False)
        if not torch.equal(decoder_weight, m.state["transformer.embeddings.tokens.weight"]):
            m.warnings.append(
                f"{decoder} differs from the word embeddings; unilmv2 ties them, so the converted LM head "
                "uses the word embeddings and its logits differ from the source model's"
            )
    return True


REL_POS_BIAS_KEYS = ("rel_pos_bias.weight", "encoder.rel_pos_bias.weight")


def _map_relative_position_bias(m: _Mapper) -> None:
    """UniLM's shared bias: ``nn.Linear(bins, heads)`` over one-hot buckets, weight ``(H, bins)``;
    our table is ``nn.Embedding(bins, H)``, so it is the transpose. Released checkpoints keep it
    beside the encoder (``bert.rel_pos_bias``) or inside it (``bert.encoder.rel_pos_bias``)."""
    for key in REL_POS_BIAS_KEYS:
        if m.has(key):
            m.put("transformer.rel_pos_bias.table.weight", m.get(key).t().contiguous(), m.name(key, True))
            return


def _map_pooler(m: _Mapper) -> None:
    """BERT's [CLS] pooler, where the checkpoint has one (``BertModel``, ``RobertaModel``)."""
    if m.has("pooler.dense.weight"):
        for p in PARAMS:
            m.copy(f"pooler.dense.{p}", f"pooler.dense.{p}")


def map_bert(state: Mapping[str, Tensor], source: SourceConfig, weights_file: str) -> MappedWeights:
    """BERT, MiniLM and UniLM (separate or fast-QKV projections, optional relative position bias)."""
    m = _Mapper(state, weights_file, source.path, ("bert.", ""))
    _map_embeddings(m, source.position_offset)
    _map_relative_position_bias(m)
    _map_layers(m, source.num_layers)
    _map_pooler(m)
    head = _map_lm_head(
        m,
        "cls.predictions.transform.dense",
        "cls.predictions.transform.LayerNorm",
        "cls.predictions.bias",
        "cls.predictions.decoder.weight",
        "cls.predictions.decoder.bias",
    )
    return m.finish(head)


def _check_head_activation(m: _Mapper, has_head: bool, source: SourceConfig) -> None:
    if has_head and source.activation != HEAD_ACTIVATION:
        m.warnings.append(
            f"the source MLM head uses {HEAD_ACTIVATION} but hidden_act is {source.activation}; the "
            "converted head uses hidden_act, so its logits differ from the source model's"
        )


def map_roberta(state: Mapping[str, Tensor], source: SourceConfig, weights_file: str) -> MappedWeights:
    """RoBERTa and XLM-R: position rows offset by the padding id, ``lm_head`` MLM head."""
    m = _Mapper(state, weights_file, source.path, ("roberta.", ""))
    _map_embeddings(m, source.position_offset)
    _map_layers(m, source.num_layers)
    _map_pooler(m)
    head = _map_lm_head(
        m,
        "lm_head.dense",
        "lm_head.layer_norm",
        "lm_head.bias",
        "lm_head.decoder.weight",
        "lm_head.decoder.bias",
    )
    _check_head_activation(m, head, source)
    return m.finish(head)


def map_electra(state: Mapping[str, Tensor], source: SourceConfig, weights_file: str) -> MappedWeights:
    """ELECTRA discriminator (its detector head dropped) or generator (its MLM head kept).

    Embeddings narrower than the hidden size go through ``embeddings_project``;
    the generator head maps the hidden size back to the embedding width.
    """
    m = _Mapper(state, weights_file, source.path, ("electra.", ""))
    _map_embeddings(m, source.position_offset)
    if m.has("embeddings_project.weight"):
        for p in PARAMS:
            m.copy(f"transformer.embeddings.project.{p}", f"embeddings_project.{p}")
    _map_layers(m, source.num_layers)
    head = _map_lm_head(
        m,
        "generator_predictions.dense",
        "generator_predictions.LayerNorm",
        "generator_lm_head.bias",
        "generator_lm_head.weight",
        None,
    )
    _check_head_activation(m, head, source)
    return m.finish(head)


MAPPERS = {"bert": map_bert, "electra": map_electra, "roberta": map_roberta, "xlm-roberta": map_roberta}
