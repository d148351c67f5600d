"""Initialise a ``palm`` model: all of it from a ``palm`` checkpoint, or its encoder from a ``unilmv2``."""

import logging
from typing import Dict, Tuple

from fairseq import checkpoint_utils
from torch import Tensor

from .models.unilmv2 import UniLMv2Config
from .pretrained import load_fitting_state

logger = logging.getLogger(__name__)

TOKEN_TABLE = "encoder.embed_tokens.weight"
POSITION_TABLES = ("encoder.embed_positions.weight", "decoder.embed_positions.weight")
# parts a checkpoint may have that the model does not build: pre-training's MLM head, and the copy
# attention when fine-tuning with --no-copy
OPTIONAL_PARTS = {
    "encoder_mlm_head.": "the encoder MLM head (fine-tuning has none)",
    "decoder.pointer.source_proj.": "the copy attention (--no-copy)",
    "decoder.pointer.state_proj.": "the copy attention (--no-copy)",
    "decoder.pointer.score.": "the copy attention (--no-copy)",
    "decoder.pointer.gate_context.": "the copy gate (--no-copy)",
    "decoder.pointer.gate_state.": "the copy gate (--no-copy)",
}


def load_palm_weights(model, path: str) -> None:
    """Copy every weight of the ``palm`` checkpoint ``path`` into ``model``; clear errors on any mismatch.

    Parts ``model`` does not build (:data:`OPTIONAL_PARTS`) are dropped, with a log line. A longer learned
    position table keeps its first rows (fine-tuning with shorter sources or targets); a shorter one is an
    error naming the limit. The vocabulary must match exactly (binarize with the pre-training ``dict.txt``).
    """
    state = checkpoint_utils.load_checkpoint_to_cpu(path)["model"]
    own = model.state_dict()
    if TOKEN_TABLE not in state:
        raise ValueError(f"{path} is not a palm checkpoint (it has no {TOKEN_TABLE})")
    if state[TOKEN_TABLE].shape != own[TOKEN_TABLE].shape:
        raise ValueError(
            f"{path}: token embeddings are {tuple(state[TOKEN_TABLE].shape)} but the dictionary gives "
            f"{tuple(own[TOKEN_TABLE].shape)}; binarize with the checkpoint's dict.txt "
            "(fairseq-preprocess --srcdict DICT --tgtdict DICT)"
        )
    for key in POSITION_TABLES:
        if key in state and key in own and state[key].size(0) != own[key].size(0):
            have, need = state[key].size(0), own[key].size(0)
            if have < need:
                side = "source" if key.startswith("encoder") else "target"
                raise ValueError(
                    f"{path}: {key} has {have} rows but the model needs {need}: lower "
                    f"--max-{side}-positions by {need - have} (at most the pre-training length)"
                )
            state[key] = state[key][:need].clone()
    for prefix, part in OPTIONAL_PARTS.items():
        if any(k.startswith(prefix) for k in own):
            continue
        dropped = [k for k in state if k.startswith(prefix)]
        for key in dropped:
            del state[key]
        if dropped:
            logger.info("not loading %s: %d tensors under %s", part, len(dropped), prefix)
    load_fitting_state(model, state, path)


# ------------------------------------------------------------------- the encoder from a unilmv2 checkpoint

UNILM_LAYER_PARTS = (
    "self_attn.q_proj", "self_attn.k_proj", "self_attn.v_proj", "self_attn.out_proj", "self_attn_layer_norm",
    "fc1", "fc2", "final_layer_norm",
)  # fmt: skip
UNILM_HEAD_PARTS = ("dense.weight", "dense.bias", "layer_norm.weight", "layer_norm.bias", "bias")


def read_unilmv2_checkpoint(path: str) -> Tuple[Dict[str, Tensor], float]:
    """The weights of a ``unilmv2`` checkpoint (``scripts/convert_hf_checkpoint.py``, or pre-trained here) and
    its LayerNorm epsilon (the unilmv2 default when the checkpoint has no config)."""
    checkpoint = checkpoint_utils.load_checkpoint_to_cpu(path)
    cfg = checkpoint.get("cfg") or {}
    model_cfg = cfg.get("model") if hasattr(cfg, "get") else None
    eps = getattr(model_cfg, "layernorm_eps", None) if model_cfg is not None else None
    if eps is None and isinstance(model_cfg, dict):
        eps = model_cfg.get("layernorm_eps")
    return checkpoint["model"], float(eps if eps is not None else UniLMv2Config.layernorm_eps)


def load_unilmv2_encoder(model, state: Dict[str, Tensor], path: str) -> None:
    """Initialise ``model``'s encoder (and the shared embeddings and the MLM head) from ``unilmv2`` weights.

    The two stacks compute the same function: both are post-LN BERT layers with the same parameter names;
    unilmv2's segment-0 embedding is added to the position rows (PALM's encoder has one segment), and
    fairseq's learned positions start at ``padding_idx + 1``. Build ``model`` with the checkpoint's
    LayerNorm epsilon (``--encoder-layernorm-eps``). A relative position bias or a factorised embedding
    (ELECTRA) has no counterpart in fairseq's encoder: a clear error. The decoder stays as initialised.
    """
    if any(k.startswith("transformer.rel_pos_bias.") for k in state):
        raise ValueError(
            f"{path} uses a relative position bias, which fairseq's Transformer encoder cannot express: "
            "convert a checkpoint without it (BERT, RoBERTa, MiniLM)"
        )
    if any(k.startswith("transformer.embeddings.project.") for k in state):
        raise ValueError(f"{path} has embeddings narrower than its hidden size (ELECTRA): not supported")
    own = model.state_dict()
    new = {}
    tokens = state.get("transformer.embeddings.tokens.weight")
    if tokens is None:
        raise ValueError(f"{path} is not a unilmv2 checkpoint (no transformer.embeddings.tokens.weight)")
    if tokens.shape != own[TOKEN_TABLE].shape:
        raise ValueError(
            f"{path}: token embeddings are {tuple(tokens.shape)} but the model's are "
            f"{tuple(own[TOKEN_TABLE].shape)}; binarize with the checkpoint's dict.txt and use its sizes"
        )
    new[TOKEN_TABLE] = tokens
    positions = state["transformer.embeddings.positions.weight"]
    if "transformer.embeddings.segments.weight" in state:
        positions = positions + state["transformer.embeddings.segments.weight"][0]
    table = own[POSITION_TABLES[0]].clone()
    offset = model.encoder.padding_idx + 1  # fairseq's first position id
    rows = table.size(0) - offset
    if positions.size(0) < rows:
        have = positions.size(0)
        raise ValueError(f"{path} has {have} positions: use --max-source-positions {have} or less")
    table[offset:] = positions[:rows]
    new[POSITION_TABLES[0]] = table
    new["encoder.layernorm_embedding.weight"] = state["transformer.embeddings.layer_norm.weight"]
    new["encoder.layernorm_embedding.bias"] = state["transformer.embeddings.layer_norm.bias"]
    layers = sum(1 for k in state if k.startswith("transformer.layers.") and k.endswith(".fc1.weight"))
    if layers != len(model.encoder.layers):
        raise ValueError(f"{path} has {layers} layers but the encoder has {len(model.encoder.layers)}")
    for i in range(layers):
        for part in UNILM_LAYER_PARTS:
            for kind in ("weight", "bias"):
                new[f"encoder.layers.{i}.{part}.{kind}"] = state[f"transformer.layers.{i}.{part}.{kind}"]
    if model.encoder_mlm_head is not None and "lm_head.dense.weight" in state:
        for part in UNILM_HEAD_PARTS:
            new[f"encoder_mlm_head.{part}"] = state[f"lm_head.{part}"]
    mismatched = [(k, tuple(v.shape), tuple(own[k].shape)) for k, v in new.items() if v.shape != own[k].shape]
    if mismatched:
        raise ValueError(f"{path} does not fit this encoder (hidden or FFN size): {mismatched[:3]}")
    own.update(new)
    model.load_state_dict(own)
    logger.info("initialised the encoder and the shared embeddings from %s (%d tensors)", path, len(new))
