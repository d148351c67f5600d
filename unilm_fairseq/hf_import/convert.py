"""Convert a Hugging Face model directory into a fairseq ``unilmv2`` checkpoint plus ``dict.txt``.

Everything that depends on the input (config, weights, vocabulary, shapes) is
checked in memory first; the files are then written into a temporary folder
next to ``out_dir`` and renamed into place, so a failed conversion leaves no
output behind.
"""

import logging
import os
import shutil
import tempfile
from typing import Dict, List, Optional

import torch
from fairseq.data import Dictionary
from fairseq.dataclass.configs import FairseqConfig
from omegaconf import OmegaConf

from ..checkpoint.converted import ORIGIN_KEY, TYPE_ID_KEYS, load_converted_weights
from ..checkpoint.fitting import CheckpointMismatch
from ..data.dictionary import dictionary_from_lines
from ..models.unilmv2 import POOLER_WEIGHT, TOKEN_TABLE, UniLMv2Config, UniLMv2Model
from ..tasks.pmlm import PMLMConfig
from .config import ConversionError, SourceConfig, read_source_config, unilmv2_config
from .formats import MAPPERS, MappedWeights
from .vocab import dict_text, find_vocab
from .weights import find_weights, read_weights

logger = logging.getLogger(__name__)

MODEL_FILE = "model.pt"
DICT_FILE = "dict.txt"
# fairseq-train flags that rebuild this architecture (for --pretrained-checkpoint)
ARGS_FILE = "model_args.txt"
TASK_NAME = "pmlm"  # its setup_task reads data/dict.txt, nothing else
ARCH = "unilmv2_base"  # any unilmv2 architecture: the flags in ARGS_FILE set every size
HEAD_INIT_SEED = 0  # a missing MLM head is initialised the same way on every run


def _dictionary(text: str, vocab_file: str, mapped: MappedWeights, source: SourceConfig, weights_file: str):
    """The dictionary tasks will load from the written ``dict.txt``; its size must match the embeddings."""
    rows = mapped.state[TOKEN_TABLE].size(0)
    if rows != source.vocab_size:
        raise ConversionError(
            f"{weights_file}: {mapped.sources[TOKEN_TABLE]} has {rows} rows but {source.path} says "
            f"vocab_size {source.vocab_size}"
        )
    try:
        dictionary = dictionary_from_lines(text.splitlines(keepends=True), vocab_file)
    except (ValueError, RuntimeError) as err:
        raise ConversionError(f"{vocab_file}: {err}") from None
    if len(dictionary) != rows:
        raise ConversionError(
            f"{vocab_file} gives {len(dictionary)} tokens but {weights_file} has {rows} word embeddings "
            f"({source.path}: vocab_size {source.vocab_size})"
        )
    return dictionary


def _conversion_error(mismatch: CheckpointMismatch, mapped: MappedWeights, config_file: str):
    """The first problem of ``mismatch``, the weights named as the source model names them."""
    weights_file = mismatch.source
    if mismatch.missing:
        message = f"no weights for {mismatch.missing[:5]}, which {config_file} implies"
    elif mismatch.unexpected:
        names = [mapped.sources.get(k, k) for k in mismatch.unexpected[:5]]
        message = f"{names} have no place in the model {config_file} describes"
    else:
        key, have, need = mismatch.mismatched[0]
        message = (
            f"{mapped.sources.get(key, key)} has shape {have} but {config_file} gives {need} (for {key})"
        )
    return ConversionError(f"{weights_file}: {message}")


def build_model(
    mapped: MappedWeights, cfg: UniLMv2Config, dictionary: Dictionary, source: SourceConfig, weights_file: str
):
    """A ``unilmv2`` model holding the converted weights (a missing MLM head freshly initialised, tied;
    the source's pooler, where it has one, kept).

    Every weight of the model ``config.json`` describes must be there, with its shape, and nothing else
    (:func:`~unilm_fairseq.checkpoint.converted.load_converted_weights`).
    """
    with torch.random.fork_rng():
        torch.manual_seed(HEAD_INIT_SEED)
        model = UniLMv2Model(cfg, dictionary)
    if POOLER_WEIGHT in mapped.state:
        model.add_pooler()
    try:
        load_converted_weights(model, mapped.state, mapped.has_lm_head, weights_file, source.path)
    except CheckpointMismatch as mismatch:
        raise _conversion_error(mismatch, mapped, source.path) from mismatch
    return model.eval()


def model_args(cfg: UniLMv2Config) -> List[str]:
    """fairseq-train flags for this architecture (the sizes must match to use ``--pretrained-checkpoint``)."""
    fields = (
        "encoder_layers", "encoder_embed_dim", "token_embed_dim", "encoder_ffn_embed_dim",
        "encoder_attention_heads", "activation_fn", "max_positions", "num_segments", "rel_pos_bins",
        "max_rel_pos", "layernorm_eps",
    )  # fmt: skip
    args = ["--arch", ARCH]
    for name in fields:
        args += ["--" + name.replace("_", "-"), str(getattr(cfg, name))]
    return args


def checkpoint_state(model: UniLMv2Model, cfg: UniLMv2Config, data_dir: str, origin: dict) -> dict:
    """What fairseq's trainer saves, without optimizer state: loadable by ``load_model_ensemble_and_task``
    (as a ``pmlm`` model over ``data_dir/dict.txt``) and by ``--pretrained-checkpoint``."""
    full = FairseqConfig()
    full.model = cfg
    full.task = PMLMConfig(_name=TASK_NAME, data=data_dir)
    container = OmegaConf.to_container(OmegaConf.structured(full), resolve=True, enum_to_str=True)
    return {
        "args": None,
        "cfg": container,
        "model": model.state_dict(),
        "optimizer_history": [
            {"criterion_name": None, "optimizer_name": None, "lr_scheduler_state": {}, "num_updates": 0}
        ],
        "extra_state": {ORIGIN_KEY: origin},
        "last_optimizer_state": None,
    }


def check_destination(out_dir: str, overwrite: bool) -> None:
    """``out_dir`` may be written: absent, empty, or replaced with ``overwrite``."""
    if os.path.exists(out_dir) and not os.path.isdir(out_dir):
        raise ConversionError(f"{out_dir} exists and is not a directory")
    if os.path.isdir(out_dir) and os.listdir(out_dir) and not overwrite:
        raise ConversionError(
            f"{out_dir} already exists and is not empty; choose a new directory or overwrite it (--overwrite)"
        )


def write_files(out_dir: str, files: Dict[str, object]) -> None:
    """Write ``files`` (name -> text, bytes, or a dict for ``torch.save``) into a temporary folder next to
    ``out_dir``, then rename it into place (replacing an existing ``out_dir``); nothing is left on failure."""
    parent = os.path.dirname(out_dir)
    os.makedirs(parent, exist_ok=True)
    tmp = tempfile.mkdtemp(prefix=f".{os.path.basename(out_dir)}.", dir=parent)
    try:
        for name, content in files.items():
            path = os.path.join(tmp, name)
            if isinstance(content, str):
                with open(path, "w", encoding="utf-8") as f:
                    f.write(content)
            elif isinstance(content, bytes):
                with open(path, "wb") as f:
                    f.write(content)
            else:
                torch.save(content, path)
        if os.path.isdir(out_dir):
            old = tempfile.mkdtemp(prefix=f".{os.path.basename(out_dir)}.old.", dir=parent)
            os.rename(out_dir, os.path.join(old, "previous"))
            os.rename(tmp, out_dir)
            shutil.rmtree(old)
        else:
            os.rename(tmp, out_dir)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise


def convert_hf_checkpoint(
    model_dir: str, out_dir: str, model_type: Optional[str] = None, overwrite: bool = False
) -> str:
    """Convert the Hugging Face model in ``model_dir`` into ``out_dir/model.pt`` and ``out_dir/dict.txt``.

    Args:
        model_dir: holds ``config.json``, ``model.safetensors`` or ``pytorch_model.bin``, and the
            vocabulary (``vocab.txt``; ``vocab.json`` for RoBERTa; ``sentencepiece.bpe.model`` for
            XLM-R; or ``tokenizer.json``).
        out_dir: created by the conversion; an existing non-empty one needs ``overwrite``.
        model_type: overrides ``config.json``'s ``model_type`` (a key of
            :data:`~unilm_fairseq.hf_import.config.FORMATS`).
    Returns:
        ``out_dir`` as an absolute path. Also writes ``model_args.txt``, the
        ``fairseq-train`` flags that rebuild this architecture.
    Raises:
        ConversionError: naming the file and the problem; nothing is written then.
    """
    source = read_source_config(model_dir, model_type)
    weights_file = find_weights(model_dir)
    vocab_file = find_vocab(model_dir, source.family)
    out_dir = os.path.abspath(out_dir)
    check_destination(out_dir, overwrite)

    mapped = MAPPERS[source.family](read_weights(weights_file), source, weights_file)
    text = dict_text(vocab_file, source.family)
    dictionary = _dictionary(text, vocab_file, mapped, source, weights_file)
    cfg = unilmv2_config(source)
    model = build_model(mapped, cfg, dictionary, source, weights_file)
    for warning in mapped.warnings:
        logger.warning("%s: %s", weights_file, warning)
    if mapped.dropped:
        logger.info(
            "%s: left out %d weights without a counterpart: %s",
            weights_file,
            len(mapped.dropped),
            mapped.dropped,
        )
    if not mapped.has_lm_head:
        logger.warning(
            "%s has no MLM head: the converted LM head is newly initialised (BERT init, output tied to the "
            "word embeddings, zero bias) and needs training before its predictions mean anything",
            weights_file,
        )

    # what config.json says of s2s-ft's segment ids, None where it says nothing: fine-tuning keeps recorded
    # ids and infers only missing ones (checkpoint.unilmv2_init.checkpoint_seq2seq_segments)
    origin = {
        "model_dir": os.path.abspath(model_dir),
        "model_type": source.format,
        **dict(zip(TYPE_ID_KEYS, (source.source_type_id, source.target_type_id))),
    }
    args = " ".join(model_args(cfg))
    write_files(
        out_dir,
        {MODEL_FILE: checkpoint_state(model, cfg, out_dir, origin), DICT_FILE: text, ARGS_FILE: args + "\n"},
    )
    logger.info(
        "converted %s (%s, %d layers, hidden %d, %d tokens) into %s; fine-tune with %s",
        model_dir, source.format, source.num_layers, source.hidden_size, len(dictionary), out_dir, args,
    )  # fmt: skip
    return out_dir
