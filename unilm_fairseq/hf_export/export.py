"""Export a fairseq ``unilmv2`` checkpoint into a Hugging Face model directory.

The checkpoint is read and checked, every file is built in memory, and the directory is then written
atomically (:func:`unilm_fairseq.hf_import.convert.write_files`), so a failed export leaves no output.
"""

import json
import logging
import os
from dataclasses import dataclass, field
from typing import Dict, List, Optional, Tuple

from fairseq import checkpoint_utils, tasks
from fairseq.models import ARCH_MODEL_REGISTRY, MODEL_REGISTRY
from fairseq.utils import safe_getattr
from omegaconf import open_dict

from .. import seq2seq_layout
from ..checkpoint.unilmv2_init import FINETUNING_TASK
from ..data.dictionary import MASK_SYMBOL, TokenListDictionary
from ..encoders.wordpiece_tokenizer import resolve_lowercase
from ..hf_import.config import CONFIG_FILE, ConversionError
from ..hf_import.convert import ORIGIN_KEY, check_destination, write_files
from ..hf_import.vocab import VOCAB_TXT
from ..hub.base import read_generation_defaults
from ..models.unilmv2 import SEGMENT_TABLE, TOKEN_TABLE, UniLMv2Model
from ..seq2seq_layout import Seq2SeqSpec
from ..tasks.decoding_conventions import LENPEN_STYLES
from .layouts import LAYOUTS, ExportError, Layout, check_exportable, export_state, head_names, hf_config
from .model_card import card_facts, render_card

logger = logging.getLogger(__name__)

TOKENIZER_CONFIG = "tokenizer_config.json"
GENERATION_JSON = "generation.json"  # an s2s-ft model's decoding: method, limits, type ids, search settings
MODEL_CARD = "README.md"
GENERATE_SCRIPT = "generate.py"  # standalone_generate.py, copied: generation with plain transformers
STANDALONE_SOURCE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "standalone_generate.py")
# the search settings a model folder's generation.json may give (the rest describe the model)
SEARCH_KEYS = (
    "beam", "lenpen", "lenpen_style", "min_len", "max_len_a", "max_len_b", "no_repeat_ngram_size",
    "no_repeat_ngram_exempt",
)  # fmt: skip
TOKENIZER_CLASS = "BertTokenizer"  # the tokenizer of every format here (s2s-ft's UniLM tokenizer is one)
SAFETENSORS_METADATA = {"format": "pt"}  # what transformers' own files carry
# the roles a dictionary's special tokens play, as fairseq names them and as BERT's tokenizer config does
ROLES = (("bos", "cls_token"), ("eos", "sep_token"), ("pad", "pad_token"), ("unk", "unk_token"))


@dataclass
class ExportResult:
    """Where the export went, and what the format could not hold."""

    out_dir: str
    format: str
    files: List[str]
    dropped: List[str] = field(default_factory=list)  # task heads left out, by name
    notes: List[str] = field(default_factory=list)  # what changed on the way (logged)


def _model_name(cfg) -> Tuple[str, Optional[type]]:
    """The checkpoint's model (or architecture) name and its registered class."""
    for key in (safe_getattr(cfg.model, "_name", None), safe_getattr(cfg.model, "arch", None)):
        if key in MODEL_REGISTRY:
            return key, MODEL_REGISTRY[key]
        if key in ARCH_MODEL_REGISTRY:
            return key, ARCH_MODEL_REGISTRY[key]
    return str(safe_getattr(cfg.model, "_name", None)), None


def read_checkpoint(checkpoint: str, data: Optional[str] = None) -> dict:
    """The checkpoint's state (``cfg``, ``model``, ...) with its task reading ``data`` when given.

    Raises:
        ExportError: no such file, not a fairseq checkpoint, or not a ``unilmv2`` model.
    """
    if not os.path.isfile(checkpoint):
        raise ExportError(f"{checkpoint} not found: expected a fairseq checkpoint (.pt)")
    overrides = {"data": os.path.abspath(data)} if data else None
    try:
        state = checkpoint_utils.load_checkpoint_to_cpu(checkpoint, overrides)
    except Exception as err:  # truncated or foreign files raise many different types
        raise ExportError(
            f"{checkpoint}: cannot read it as a fairseq checkpoint ({type(err).__name__}: {err})"
        ) from None
    cfg = state.get("cfg")
    if cfg is None or safe_getattr(cfg, "model") is None or "model" not in state:
        raise ExportError(f"{checkpoint}: no model config or weights; is it a fairseq training checkpoint?")
    _read_model_folder_dictionaries(checkpoint, cfg.task, given=bool(data))
    name, cls = _model_name(cfg)
    if cls is None or not issubclass(cls, UniLMv2Model):
        what = f"a {name} model" + (f" ({cls.__name__})" if cls is not None else "")
        why = (
            "PALM is an encoder-decoder with a pointer-generator; no BERT or UniLM layout holds it"
            if name.startswith("palm")
            else "only unilmv2 models (one Transformer and an MLM head) have BERT and UniLM layouts"
        )
        raise ExportError(f"{checkpoint} holds {what}: {why}")
    return state


def _has_pair_dictionaries(folder: str) -> bool:
    return all(os.path.isfile(os.path.join(folder, f"dict.{side}.txt")) for side in ("src", "tgt"))


def _read_model_folder_dictionaries(checkpoint: str, task_cfg, given: bool) -> None:
    """Let a seq2seq task read a model folder's ``dict.src.txt`` / ``dict.tgt.txt``: the folder given as
    ``data``, or the checkpoint's own when the recorded data folder is gone (a model folder keeps the
    dictionaries, not the binarized files fairseq infers the language pair from)."""
    if "source_lang" not in task_cfg:  # tasks with one dictionary (dict.txt) read it as they are
        return
    data = safe_getattr(task_cfg, "data")
    folder = os.path.dirname(os.path.abspath(checkpoint))
    with open_dict(task_cfg):
        if not given and not (data and os.path.isdir(str(data))) and _has_pair_dictionaries(folder):
            task_cfg.data, data = folder, folder
        if data and _has_pair_dictionaries(str(data)) and not task_cfg.source_lang:
            task_cfg.source_lang, task_cfg.target_lang = "src", "tgt"


def load_dictionary(checkpoint: str, state: dict):
    """The dictionary the checkpoint's task reads (``cfg.task.data``), checked against the word embeddings."""
    cfg = state["cfg"]
    try:
        task = tasks.setup_task(cfg.task)
    except (OSError, ValueError) as err:
        raise ExportError(
            f"{checkpoint}: cannot load the dictionary of its --task {cfg.task._name} from "
            f"{safe_getattr(cfg.task, 'data')} ({type(err).__name__}: {err}); pass --data with the folder "
            "that holds it (the binarized data the model was trained on)"
        ) from None
    dictionary = task.source_dictionary
    rows = state["model"][TOKEN_TABLE].size(0)
    if len(dictionary) != rows:
        raise ExportError(
            f"{checkpoint}: the dictionary of {cfg.task.data} has {len(dictionary)} tokens but the model has "
            f"{rows} word embeddings; pass --data with the dictionary it was trained with"
        )
    return dictionary


def vocab_tokens(dictionary, source: str) -> List[str]:
    """The tokens of ``dictionary`` in id order, for ``vocab.txt``: line ``i`` is token id ``i``.

    Read back as a token list (as the importer and ``--srcdict`` read it), the special tokens must play
    the same roles; otherwise the written file would mean another model.
    """
    tokens = list(dictionary.symbols)
    bad = [t for t in tokens if not t or len(t.split()) != 1 or t != t.strip()]
    if bad:
        raise ExportError(f"{source}: token {bad[0]!r} is empty or holds whitespace (not for vocab.txt)")
    try:
        reread = TokenListDictionary.from_tokens(tokens, VOCAB_TXT)
    except ValueError as err:
        raise ExportError(f"{source}: the dictionary cannot be written as a token list: {err}") from None
    ours = {role: getattr(dictionary, role)() for role, _ in ROLES}
    ours["mask"] = dictionary.index(MASK_SYMBOL)
    theirs = {role: getattr(reread, role)() for role, _ in ROLES}
    theirs["mask"] = reread.index(MASK_SYMBOL)
    if ours != theirs:
        changed = ", ".join(f"{r}: id {ours[r]} -> {theirs[r]}" for r in ours if ours[r] != theirs[r])
        raise ExportError(
            f"{source}: read back from vocab.txt, the special tokens would change roles ({changed}): the "
            "dictionary holds BERT's [CLS] [PAD] [SEP] [UNK] [MASK] as ordinary tokens"
        )
    return tokens


def tokenizer_config(dictionary, tokens: List[str], lowercase: Optional[bool], max_positions: int) -> dict:
    """``tokenizer_config.json`` for BERT's tokenizer over ``vocab.txt``: the special tokens and casing."""
    config = {"tokenizer_class": TOKENIZER_CLASS}
    config["do_lower_case"] = resolve_lowercase(lowercase, tokens, VOCAB_TXT)
    for role, name in ROLES:
        config[name] = tokens[getattr(dictionary, role)()]
    config["mask_token"] = tokens[dictionary.index(MASK_SYMBOL)]
    config["model_max_length"] = max_positions
    return config


def seq2seq_type_ids(state: dict, type_rows: int) -> Tuple[Tuple[int, int], str]:
    """s2s-ft's ``source_type_id``/``target_type_id``, and why.

    A checkpoint fine-tuned by ``--task unilm_seq2seq``, or one the importer wrote, keeps the ids its
    config records; a checkpoint pre-trained here gets the ids fine-tuning here would choose for its segment
    table (:func:`unilm_fairseq.seq2seq_layout.pretrained_segments`: 4/5 for UniLM v1's six rows).
    """
    cfg = state["cfg"]
    if cfg.task._name == FINETUNING_TASK or ORIGIN_KEY in (state.get("extra_state") or {}):
        return Seq2SeqSpec.from_checkpoint(cfg).segments, "recorded in the checkpoint"
    return seq2seq_layout.pretrained_segments(type_rows), f"{type_rows} segment embeddings"


def generation_settings(
    checkpoint: str, state: dict, type_ids: Tuple[int, int], decoded: dict
) -> Optional[dict]:
    """What a decoder outside this project needs to generate as ``fairseq-generate`` does here, for a
    checkpoint fine-tuned by ``--task unilm_seq2seq`` (None for any other): the s2s-ft method, the source
    and target limits, the segment ids, and the search settings of the model folder's ``generation.json``
    (``decoded``, :func:`folder_generation_defaults`: the ones the test set was decoded with), else the
    hub's defaults (beam 5, lenpen 1, min_len 1, an output as long as the target limit allows, no n-gram
    blocking) with the task's length-penalty style and exempt tokens."""
    cfg = state["cfg"]
    if cfg.task._name != FINETUNING_TASK:
        return None
    task, spec = cfg.task, Seq2SeqSpec.from_checkpoint(cfg)
    source_limit, target_limit = spec.max_source, spec.max_target
    exempt = safe_getattr(task, "no_repeat_ngram_exempt", None) or ""
    settings = {
        "method": spec.method.value,
        "source_type_id": type_ids[0],
        "target_type_id": type_ids[1],
        "max_source_positions": source_limit,
        "max_target_positions": target_limit,
        "beam": 5,
        "lenpen": 1.0,
        "lenpen_style": str(safe_getattr(task, "lenpen_style", LENPEN_STYLES[0])),
        "min_len": 1,
        "max_len_a": 0,
        "max_len_b": target_limit,
        "no_repeat_ngram_size": 0,
        "no_repeat_ngram_exempt": exempt.split() if isinstance(exempt, str) else list(exempt),
    }
    other = decoded_elsewhere(checkpoint, decoded)
    if other:
        logger.warning(
            "%s: its folder decoded the test set with %s, not this checkpoint: generation.json gets the "
            "default search settings, and the model card leaves out that checkpoint's scores",
            checkpoint, other,
        )  # fmt: skip
        return settings
    settings.update((key, value) for key, value in decoded.items() if key in SEARCH_KEYS)
    return settings


def folder_generation_defaults(checkpoint: str) -> dict:
    """The ``generation.json`` of the model folder that holds ``checkpoint`` (``{}`` without one)."""
    try:
        return read_generation_defaults(os.path.dirname(os.path.abspath(checkpoint)))
    except ValueError as err:
        raise ExportError(str(err)) from None


def decoded_elsewhere(checkpoint: str, decoded: dict) -> Optional[str]:
    """The checkpoint a model folder's ``generation.json`` (``decoded``) says was decoded, when it is not
    ``checkpoint``: its settings and test scores are that one's."""
    named = decoded.get("checkpoint")
    return named if named and named != os.path.basename(checkpoint) else None


def _weights_file_content(state, layout: Layout):
    if layout.weights_file.endswith(".safetensors"):
        try:
            from safetensors.torch import save
        except ImportError:
            raise ExportError("writing model.safetensors needs `pip install safetensors`") from None
        return save(state, metadata=SAFETENSORS_METADATA)
    return state  # torch.save


def _untravelled_settings(state: dict) -> List[str]:
    """Training and generation settings of the checkpoint that no config.json field holds."""
    model_cfg = state["cfg"].model
    notes = []
    if safe_getattr(model_cfg, "activation_dropout", 0.0):
        notes.append(f"activation dropout {model_cfg.activation_dropout} (training only) has no config field")
    if state["cfg"].task._name == FINETUNING_TASK:
        notes.append(
            f"the fine-tuning method ({Seq2SeqSpec.from_checkpoint(state['cfg']).method}) and the "
            "source/target lengths have no config.json field: generation.json holds them for a decoder"
        )
    return notes


def export_checkpoint(
    checkpoint: str,
    out_dir: str,
    format: str = "bert",
    data: Optional[str] = None,
    lowercase: Optional[bool] = None,
    overwrite: bool = False,
    command: Optional[str] = None,
) -> ExportResult:
    """Write the ``unilmv2`` model of ``checkpoint`` into ``out_dir`` in a Hugging Face layout.

    Args:
        checkpoint: a fairseq checkpoint of a ``unilmv2`` model (``--task pmlm``, ``unilm``,
            ``unilm_seq2seq``, ... or written by :func:`~unilm_fairseq.hf_import.convert_hf_checkpoint`).
        out_dir: created by the export; an existing non-empty one needs ``overwrite``.
        format: ``bert`` (``config.json``, ``model.safetensors``, ``vocab.txt``: transformers'
            ``BertForMaskedLM``/``BertModel``; no relative position bias), ``unilm`` (UniLM's fused
            "fast QKV" ``pytorch_model.bin`` with ``rel_pos_bias``) or ``s2s-ft`` (separate projections
            with ``rel_pos_bias``: what s2s-ft's decoding reads). All three write ``tokenizer_config.json``.
        data: the folder with the dictionary of the checkpoint's task, when it has moved since training.
        lowercase: the tokenizer's ``do_lower_case``; None takes the ``lowercase`` of the model folder's
            ``generation.json`` (how the recipe cased the training text), else lets the vocabulary decide
            (cased when it holds cased entries), as ``--bpe wordpiece`` does.
        command: the command line that ran the export, for the model card (default: this call in Python).
    Every export also writes a model card, ``README.md`` (:mod:`~unilm_fairseq.hf_export.model_card`). A
    model fine-tuned by ``--task unilm_seq2seq`` also gets ``generation.json``
    (:func:`generation_settings`) and, in the ``bert`` layout with a WordPiece vocabulary, ``generate.py``:
    a script that generates with plain ``transformers`` as ``fairseq-generate`` does here.

    Returns:
        an :class:`ExportResult`; task heads (classification, span) are left out, listed and logged.
    Raises:
        ExportError: what the format cannot hold (naming the format that can), or an unreadable
            checkpoint or dictionary; nothing is written then.
    """
    if format not in LAYOUTS:
        raise ExportError(f"format {format!r} is not supported; supported: {', '.join(LAYOUTS)}")
    layout = LAYOUTS[format]
    out_dir = os.path.abspath(out_dir)
    try:
        check_destination(out_dir, overwrite)
    except ConversionError as err:
        raise ExportError(str(err)) from None
    state = read_checkpoint(checkpoint, data)
    model_cfg = state["cfg"].model
    check_exportable(model_cfg, layout)
    dictionary = load_dictionary(checkpoint, state)
    weights, type_rows = export_state(state["model"], model_cfg.encoder_layers, layout)
    tokens = vocab_tokens(dictionary, checkpoint)
    notes = list(weights.notes)
    if SEGMENT_TABLE in state["model"]:
        type_ids, why = seq2seq_type_ids(state, type_rows)
    else:  # no segment embeddings: the ids change nothing, and 0 is the only row BERT's layout gets
        type_ids, why = (0, 0), "no segment embeddings"
    if layout.relative_position_bias:
        notes.append(f"source_type_id {type_ids[0]}, target_type_id {type_ids[1]} ({why})")
    config = hf_config(
        model_cfg, layout, len(dictionary), dictionary.pad(), type_rows,
        type_ids if layout.relative_position_bias else None,
    )  # fmt: skip
    if not isinstance(dictionary, TokenListDictionary):
        notes.append(
            "the dictionary is a fairseq dict.txt: vocab.txt keeps its ids, but its tokens are whatever the "
            "training data was encoded with, so tokenize text the same way (BERT's tokenizer fits WordPiece)"
        )
    notes += _untravelled_settings(state)
    folder_settings = folder_generation_defaults(checkpoint)
    if lowercase is None:  # how the training text was cased, when its model folder records it
        lowercase = folder_settings.get("lowercase")
    files: Dict[str, object] = {
        CONFIG_FILE: json.dumps(config, indent=2, sort_keys=True) + "\n",
        layout.weights_file: _weights_file_content(weights.state, layout),
        VOCAB_TXT: "".join(t + "\n" for t in tokens),
        TOKENIZER_CONFIG: json.dumps(
            tokenizer_config(dictionary, tokens, lowercase, model_cfg.max_positions), indent=2, sort_keys=True
        )
        + "\n",
    }
    heads = head_names(weights.dropped)
    decoding = generation_settings(checkpoint, state, type_ids, folder_settings)
    if decoding is not None:
        files[GENERATION_JSON] = json.dumps(decoding, indent=2) + "\n"
        if layout.name == "bert" and isinstance(dictionary, TokenListDictionary):
            with open(STANDALONE_SOURCE, encoding="utf-8") as f:
                files[GENERATE_SCRIPT] = f.read()
        elif layout.name == "bert":  # its text goes through BERT's tokenizer: only WordPiece ids fit that
            notes.append(
                f"no {GENERATE_SCRIPT}: it tokenizes with BERT's WordPiece, which this dictionary is not"
            )
    if command is None:
        command = f"export_checkpoint({checkpoint!r}, {out_dir!r}, format={layout.name!r})"
    other = decoded_elsewhere(checkpoint, folder_settings)
    facts = card_facts(
        checkpoint, state, len(dictionary), decoding=decoding, export_command=command,
        export_format=layout.name, left_out=heads, decoded_elsewhere=other,
    )  # fmt: skip
    facts.generate_script = GENERATE_SCRIPT in files
    files[MODEL_CARD] = render_card(facts)
    write_files(out_dir, files)

    for note in notes:
        logger.info("%s: %s", checkpoint, note)
    if heads:
        logger.warning(
            "%s: left out the task heads %s (%d weights): the %s format holds the encoder and MLM head only",
            checkpoint, heads, len(weights.dropped), layout.name,
        )  # fmt: skip
    logger.info(
        "exported %s (%d layers, hidden %d, %d tokens) as %s into %s: %s",
        checkpoint, model_cfg.encoder_layers, model_cfg.encoder_embed_dim, len(dictionary),
        layout.description, out_dir, ", ".join(sorted(files)),
    )  # fmt: skip
    return ExportResult(out_dir, layout.name, sorted(files), heads, notes)
