"""Initialise a ``palm`` model: all of it from a ``palm`` checkpoint, or its encoder from a ``unilmv2``."""

import logging
import os
from typing import Any, Callable, Dict, List, Optional, Tuple

import torch
from fairseq import checkpoint_utils
from omegaconf import OmegaConf, open_dict
from torch import Tensor

from ..data.dictionary import load_dictionary_with_mask
from ..models import palm, unilmv2
from ..models.palm import DECODER, ENCODER, SOURCE_POSITION_TABLE, TARGET_POSITION_TABLE, TOKEN_TABLE
from ..modules.transformer import LAYER_PARTS, LM_HEAD_PARTS
from .fitting import (
    check_fits,
    check_same_settings,
    checkpoint_option,
    load_fitting_state,
    saved_option,
    token_table_hint,
)
from .stage_init import summarize

logger = logging.getLogger(__name__)

POSITION_TABLES = (SOURCE_POSITION_TABLE, TARGET_POSITION_TABLE)
# parts a checkpoint may have that the model does not build: pre-training's MLM head, and the copy
# attention when fine-tuning with --no-copy
OPTIONAL_PARTS = {
    palm.ENCODER_MLM_HEAD: "the encoder MLM head (fine-tuning has none)",
    **{prefix: "the copy attention (--no-copy)" for prefix in palm.COPY_ATTENTION_PARTS},
    **{prefix: "the copy gate (--no-copy)" for prefix in palm.COPY_GATE_PARTS},
}


NO_POINTER_HINT = (
    "a checkpoint without the pointer-generator was trained with --no-copy: fine-tune with --no-copy too"
)


# PALM Table 6's ablations of the pre-trained model (§3.7: "we ablate autoencoding and autoregression by
# randomly initializing the weights of the encoder and the decoder, respectively"): the part left fresh
ABLATED_PART = {"autoencoding": ENCODER, "autoregression": DECODER}


def load_palm_weights(model, path: str, ablation: Optional[str] = None) -> None:
    """Copy every weight of the ``palm`` checkpoint ``path`` into ``model``; clear errors on any mismatch.

    Parts ``model`` does not build (:data:`OPTIONAL_PARTS`) are dropped, with a log line; anything else
    must fit (:func:`~unilm_fairseq.checkpoint.fitting.check_fits`). A longer learned
    position table keeps its first rows (fine-tuning with shorter sources or targets); a shorter one is an
    error naming the limit. The vocabulary must match exactly (binarize with the pre-training ``dict.txt``).

    ``ablation`` (a key of :data:`ABLATED_PART`) leaves the encoder or the decoder (with its
    pointer-generator) at ``model``'s own random initialisation. The token table, shared by encoder,
    decoder and output layer, comes from the checkpoint either way (this project's choice: it belongs to
    neither side alone).
    """
    checkpoint = checkpoint_utils.load_checkpoint_to_cpu(path)
    check_same_settings(checkpoint, model.args, SAME_SETTINGS, path)
    state = checkpoint["model"]
    own = model.state_dict()
    if TOKEN_TABLE not in state:
        raise ValueError(f"{path} is not a palm checkpoint (it has no {TOKEN_TABLE})")
    hints = {TOKEN_TABLE: token_table_hint, **{prefix: NO_POINTER_HINT for prefix in palm.POINTER_PARTS}}
    check_fits({TOKEN_TABLE: own[TOKEN_TABLE]}, {TOKEN_TABLE: state[TOKEN_TABLE]}, source=path, hints=hints)
    for key in POSITION_TABLES:
        if key in state and key in own and state[key].size(0) != own[key].size(0):
            have, need = state[key].size(0), own[key].size(0)
            if have < need:
                side = "source" if key == SOURCE_POSITION_TABLE else "target"
                raise ValueError(
                    f"{path}: {key} has {have} rows but the model needs {need}: lower "
                    f"--max-{side}-positions by {need - have} (at most the pre-training length)"
                )
            state[key] = state[key][:need].clone()
    not_built = [prefix for prefix in OPTIONAL_PARTS if not any(k.startswith(prefix) for k in own)]
    if ablation is not None:
        if ablation not in ABLATED_PART:
            raise ValueError(f"unknown ablation {ablation!r}: expected one of {', '.join(ABLATED_PART)}")
        shared = own[TOKEN_TABLE].data_ptr()
        fresh = [k for k in own if k.startswith(ABLATED_PART[ablation]) and own[k].data_ptr() != shared]
        for key in fresh:
            state[key] = own[key]
        logger.info(
            "ablating %s (PALM Table 6): %d tensors keep their random initialisation: %s; the shared token "
            "embeddings come from the checkpoint",
            ablation,
            len(fresh),
            summarize(fresh),
        )
    fit = load_fitting_state(model, state, path, allowed_unexpected=not_built, hints=hints)
    for prefix in not_built:
        dropped = [k for k in fit.unexpected if k.startswith(prefix)]
        if dropped:
            logger.info("not loading %s: %d tensors under %s", OPTIONAL_PARTS[prefix], len(dropped), prefix)


# the options that make a palm checkpoint's architecture, which fine-tuning from it repeats
ARCH_OPTIONS = (
    "encoder_layers",
    "decoder_layers",
    "encoder_embed_dim",
    "encoder_ffn_embed_dim",
    "decoder_ffn_embed_dim",
    "encoder_attention_heads",
    "decoder_attention_heads",
    "activation_fn",
    "encoder_layernorm_eps",
    "copy_attention_dim",
)

# the ones that no weight's shape shows: fine-tuning with others computes another function
SAME_SETTINGS = (
    "encoder_attention_heads",
    "decoder_attention_heads",
    "activation_fn",
    "encoder_layernorm_eps",
)


def saved_model_config(path: str) -> Optional[Any]:
    """The model config saved in the checkpoint at ``path`` (None without one), its weights left on disk."""
    try:
        checkpoint = torch.load(path, map_location="cpu", mmap=True, weights_only=True)
    except RuntimeError:  # torch's legacy format cannot be memory-mapped
        checkpoint = torch.load(path, map_location="cpu", weights_only=True)
    return (checkpoint.get("cfg") or {}).get("model") or checkpoint.get("args")


def take_encoder_layernorm_eps(cfg, path: str) -> None:
    """``cfg`` takes the encoder LayerNorm epsilon of the ``palm`` checkpoint at ``path`` (its encoder was
    trained with it) before a model that loads its weights is built: stage 2 from stage 1, fine-tuning from
    pre-training. A checkpoint without the option leaves ``cfg`` as it is."""
    model_cfg = saved_model_config(path)
    eps = None if model_cfg is None else saved_option(model_cfg, "encoder_layernorm_eps")
    own = getattr(cfg, "encoder_layernorm_eps", None)
    if eps is not None and (own is None or float(own) != float(eps)):
        if own is not None:
            logger.info(
                "encoder LayerNorm epsilon %g, as %s was trained with (not %g)", float(eps), path, own
            )
        set_model_option(cfg, "encoder_layernorm_eps", float(eps))


def palm_arch_flags(path: str) -> List[str]:
    """fairseq-train's flags for the architecture of the ``palm`` checkpoint at ``path`` (its ``--arch`` and
    :data:`ARCH_OPTIONS`); none for a checkpoint of another model. Only the config is read: the weights stay
    memory-mapped on disk, and the safe ``weights_only`` loader stays on (the allow-list of
    :mod:`.safe_loading`)."""
    model_cfg = saved_model_config(path)
    if model_cfg is None:
        return []
    arch = saved_option(model_cfg, "arch") or saved_option(model_cfg, "_name")
    if not arch or not str(arch).startswith("palm"):
        return []
    flags = ["--arch", str(arch)]
    for name in ARCH_OPTIONS:
        value = saved_option(model_cfg, name)
        if value is not None:
            flags += ["--" + name.replace("_", "-"), str(value)]
    if saved_option(model_cfg, "no_copy"):  # a model without the pointer: so is its fine-tuning
        flags.append("--no-copy")
    return flags


# ------------------------------------------------------------------- the encoder from a unilmv2 checkpoint


def _layernorm_eps(checkpoint: Dict[str, Any]) -> float:
    """A ``unilmv2`` checkpoint's LayerNorm epsilon (the unilmv2 default when it has no config)."""
    eps = checkpoint_option(checkpoint, "layernorm_eps")
    return float(eps if eps is not None else unilmv2.UniLMv2Config.layernorm_eps)


def read_unilmv2_checkpoint(path: str) -> Tuple[Dict[str, Tensor], float]:
    """The weights of a ``unilmv2`` checkpoint (``scripts/convert_hf_checkpoint.py``, or pre-trained here) and
    its LayerNorm epsilon."""
    checkpoint = checkpoint_utils.load_checkpoint_to_cpu(path)
    return checkpoint["model"], _layernorm_eps(checkpoint)


def set_model_option(cfg, key: str, value) -> None:
    """Set a model option on an argparse namespace or an omegaconf config."""
    if OmegaConf.is_config(cfg):
        with open_dict(cfg):
            setattr(cfg, key, value)
    else:
        setattr(cfg, key, value)


DICT_FILE = "dict.txt"  # what scripts/convert_hf_checkpoint.py writes beside model.pt


def check_unilmv2_dictionary(path: str, dictionary) -> None:
    """When ``path``'s folder holds a ``dict.txt`` (a converted checkpoint does), it must be ``dictionary``.

    The token table's size is checked in any case; this also catches a different vocabulary of the same size.
    """
    dict_path = os.path.join(os.path.dirname(os.path.abspath(path)), DICT_FILE)
    if not os.path.isfile(dict_path):
        logger.info("no %s beside %s: only the vocabulary size is checked", DICT_FILE, path)
        return
    theirs = load_dictionary_with_mask(dict_path).symbols
    ours = dictionary.symbols
    if theirs != ours:
        first = next((i for i, (a, b) in enumerate(zip(theirs, ours)) if a != b), min(len(theirs), len(ours)))
        raise ValueError(
            f"{dict_path} ({len(theirs)} symbols) is not the task's dictionary ({len(ours)} symbols): id "
            f"{first} is {_symbol(theirs, first)} there but {_symbol(ours, first)} here; binarize the data "
            f"with fairseq-preprocess --srcdict {dict_path}"
        )


def _symbol(symbols, i: int) -> str:
    return repr(symbols[i]) if i < len(symbols) else "past the end"


def build_with_unilmv2_encoder(build: Callable[[Any], Any], cfg, path: str, dictionary):
    """``build(cfg)`` a ``palm`` model whose encoder starts from the ``unilmv2`` checkpoint ``path``.

    The one way both PALM tasks initialise an encoder from BERT or RoBERTa (PALM §3.1: "initialized by the
    pre-trained RoBERTa"), converted by ``scripts/convert_hf_checkpoint.py``: ``cfg`` takes the checkpoint's
    LayerNorm epsilon (``encoder_layernorm_eps``) before the model is built; the vocabulary
    (:func:`check_unilmv2_dictionary`), the head count and every shape must fit, or a clear error names the
    mismatch; then :func:`load_unilmv2_encoder` copies the weights. The decoder keeps the initialisation
    ``build`` gave it, apart from the token table it shares with the encoder.
    """
    checkpoint = checkpoint_utils.load_checkpoint_to_cpu(path)
    set_model_option(cfg, "encoder_layernorm_eps", _layernorm_eps(checkpoint))
    check_unilmv2_dictionary(path, dictionary)
    model = build(cfg)
    heads = checkpoint_option(checkpoint, "encoder_attention_heads")
    own_heads = model.encoder.layers[0].self_attn.num_heads if len(model.encoder.layers) else None
    if heads is not None and own_heads is not None and int(heads) != own_heads:
        raise ValueError(
            f"{path} has {heads} attention heads per layer but the encoder has {own_heads}: use "
            f"--encoder-attention-heads {heads}"
        )
    load_unilmv2_encoder(model, checkpoint["model"], path)
    own = model.state_dict()
    shared = own[TOKEN_TABLE].data_ptr()
    fresh = [k for k in own if k.startswith(DECODER) and own[k].data_ptr() != shared]
    logger.info("  the decoder keeps its fresh initialisation: %d tensors: %s", len(fresh), summarize(fresh))
    return model


def load_unilmv2_encoder(model, state: Dict[str, Tensor], path: str) -> None:
    """Initialise ``model``'s encoder (and the shared embeddings and the MLM head) from ``unilmv2`` weights.

    The two stacks compute the same function: both are post-LN BERT layers with the same parameter names;
    unilmv2's segment-0 embedding is added to the position rows (PALM's encoder has one segment), and
    fairseq's learned positions start at ``padding_idx + 1``. Build ``model`` with the checkpoint's
    LayerNorm epsilon (``--encoder-layernorm-eps``). A relative position bias or a factorised embedding
    (ELECTRA) has no counterpart in fairseq's encoder: a clear error. The decoder stays as initialised.
    """
    if any(k.startswith(unilmv2.RELATIVE_POSITION_BIAS) for k in state):
        raise ValueError(
            f"{path} uses a relative position bias, which fairseq's Transformer encoder cannot express: "
            "convert a checkpoint without it (BERT, RoBERTa, MiniLM)"
        )
    if any(k.startswith(unilmv2.EMBEDDING_PROJECTION) for k in state):
        raise ValueError(f"{path} has embeddings narrower than its hidden size (ELECTRA): not supported")
    own = model.state_dict()
    new = {}
    tokens = state.get(unilmv2.TOKEN_TABLE)
    if tokens is None:
        raise ValueError(f"{path} is not a unilmv2 checkpoint (no {unilmv2.TOKEN_TABLE})")
    hints = {TOKEN_TABLE: token_table_hint}
    check_fits({TOKEN_TABLE: own[TOKEN_TABLE]}, {TOKEN_TABLE: tokens}, source=path, hints=hints)
    new[TOKEN_TABLE] = tokens
    positions = state[unilmv2.POSITION_TABLE]
    if unilmv2.SEGMENT_TABLE in state:
        positions = positions + state[unilmv2.SEGMENT_TABLE][0]
    table = own[SOURCE_POSITION_TABLE].clone()
    offset = model.encoder.padding_idx + 1  # fairseq's first position id
    rows = table.size(0) - offset
    if positions.size(0) < rows:
        have = positions.size(0)
        raise ValueError(f"{path} has {have} positions: use --max-source-positions {have} or less")
    table[offset:] = positions[:rows]
    new[SOURCE_POSITION_TABLE] = table
    for kind in ("weight", "bias"):
        new[palm.ENCODER_LAYER_NORM + kind] = state[unilmv2.EMBEDDING_LAYER_NORM + kind]
    layers = sum(1 for k in state if k.startswith(unilmv2.LAYERS) and k.endswith(".fc1.weight"))
    if layers != len(model.encoder.layers):
        raise ValueError(f"{path} has {layers} layers but the encoder has {len(model.encoder.layers)}")
    for i in range(layers):
        for part in LAYER_PARTS:
            for name in (f"{part}.weight", f"{part}.bias"):
                new[palm.encoder_layer_key(i, name)] = state[unilmv2.layer_key(i, name)]
    if model.encoder_mlm_head is not None and unilmv2.LM_HEAD + LM_HEAD_PARTS[0] in state:
        for part in LM_HEAD_PARTS:
            new[palm.ENCODER_MLM_HEAD + part] = state[unilmv2.LM_HEAD + part]
    # what a unilmv2 checkpoint has no counterpart for keeps the initialisation the model was built with
    check_fits(
        own,
        new,
        source=path,
        target="this encoder",
        allowed_missing=(DECODER, palm.ENCODER_VERSION, palm.ENCODER_MLM_HEAD),
        advice="is the hidden or FFN size the checkpoint's (its model_args.txt)?",
    )
    own.update(new)
    model.load_state_dict(own)
    logger.info("initialised the encoder and the shared embeddings from %s (%d tensors)", path, len(new))
