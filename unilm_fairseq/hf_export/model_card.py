"""The exported folder's ``README.md``: what the model is, how it was made, how well it did, how to run it.

:func:`card_facts` reads what a checkpoint records (its config, its update count, its origin) and what
its model folder holds beside it (``generation.json``, ``scores.json`` and ``commands.sh``, written by the
fine-tuning recipes); :func:`render_card` turns those facts into Markdown. Nothing is invented: a fact the
checkpoint and its folder do not hold is left out of the card, and the card says so.
"""

import json
import os
import shlex
from dataclasses import dataclass, field
from typing import Dict, List, Optional

from fairseq import checkpoint_utils
from fairseq.utils import safe_getattr
from omegaconf import ListConfig

from ..checkpoint.converted import ORIGIN_KEY
from ..checkpoint.packed_weights import PACKED_KEY
from .layouts import ExportError

SCORES_FILE = "scores.json"  # rouge_table.py's or score.py's --json, which the recipes copy there
COMMANDS_FILE = "commands.sh"  # every command a recipe ran, in order, copied beside the checkpoints
# s2s-ft (Bao et al. 2021) §2: the three fine-tuning methods
METHOD_SECTIONS = {
    "causal": "causal fine-tuning, s2s-ft §2.1",
    "masked": "masked fine-tuning, s2s-ft §2.2",
    "pseudo_masked": "pseudo-masked fine-tuning, s2s-ft §2.3",
}
ARCHITECTURE_FIELDS = (
    ("layers", "encoder_layers"),
    ("hidden size", "encoder_embed_dim"),
    ("attention heads", "encoder_attention_heads"),
    ("feed-forward size", "encoder_ffn_embed_dim"),
    ("positions", "max_positions"),
    ("segment embeddings", "num_segments"),
    ("relative position buckets", "rel_pos_bins"),
)
TRAINING_FIELDS = (  # (label, config section, field)
    ("learning rate", "optimization", "lr"),
    ("updates asked for", "optimization", "max_update"),
    ("sentences per batch", "dataset", "batch_size"),
    ("tokens per batch", "dataset", "max_tokens"),
    ("gradient clipping", "optimization", "clip_norm"),
    ("label smoothing", "criterion", "label_smoothing"),
    ("seed", "common", "seed"),
)


@dataclass
class CardFacts:
    """What the card states; every field comes from the checkpoint or the files beside it."""

    checkpoint: str
    task: str
    architecture: Dict[str, object]
    vocabulary: int
    base_model: Optional[str] = None
    base_origin: Optional[str] = None  # the Hugging Face folder a converted base came from
    method: Optional[str] = None
    limits: Optional[Dict[str, int]] = None
    data: Optional[str] = None
    updates: Optional[int] = None
    best_validation: Optional[str] = None
    training: Dict[str, object] = field(default_factory=dict)
    decoding: Optional[Dict[str, object]] = None  # the export's generation.json
    scores: Optional[dict] = None
    commands: List[str] = field(default_factory=list)
    export_command: str = ""
    export_format: str = "bert"
    generate_script: bool = False  # the export holds generate.py (bert layout, WordPiece vocabulary)
    decoded_elsewhere: Optional[str] = None  # the folder decoded (and scored) this other checkpoint
    has_pooler: bool = False
    left_out: List[str] = field(default_factory=list)  # task heads the format cannot hold


def _read_json(path: str) -> Optional[dict]:
    """A JSON object beside the checkpoint, None without the file; a broken one is an ``ExportError``."""
    if not os.path.isfile(path):
        return None
    try:
        with open(path, encoding="utf-8") as f:
            found = json.load(f)
    except ValueError as err:  # not JSON, or not UTF-8
        raise ExportError(f"{path}: not a JSON file ({err}); fix or remove it") from None
    if not isinstance(found, dict):
        raise ExportError(f"{path}: a JSON {type(found).__name__}, not an object; fix or remove it")
    return found


def _read_commands(path: str) -> List[str]:
    if not os.path.isfile(path):
        return []
    with open(path, encoding="utf-8") as f:
        return [line.rstrip("\n") for line in f if line.strip() and not line.startswith("#!")]


def _base_origin(path: Optional[str]) -> Optional[str]:
    """Where a converted base checkpoint came from (its ``extra_state``), when the file is still there."""
    if not path or not os.path.isfile(path):
        return None
    try:
        extra = checkpoint_utils.load_checkpoint_to_cpu(path).get("extra_state") or {}
    except Exception:  # unreadable or foreign: the card just names the file
        return None
    return _origin_text(extra)


def card_facts(
    checkpoint: str,
    state: dict,
    vocabulary: int,
    *,
    decoding: Optional[Dict[str, object]],
    export_command: str,
    export_format: str,
    left_out: List[str],
    decoded_elsewhere: Optional[str] = None,
) -> CardFacts:
    """The facts of ``checkpoint`` (its loaded ``state``) and of the model folder that holds it."""
    cfg = state["cfg"]
    model, task = cfg.model, cfg.task
    folder = os.path.dirname(os.path.abspath(checkpoint))
    base = safe_getattr(task, "pretrained_checkpoint", None)
    history = state.get("optimizer_history") or [{}]
    extra = state.get("extra_state") or {}
    facts = CardFacts(
        checkpoint=os.path.abspath(checkpoint),
        task=str(task._name),
        architecture={label: safe_getattr(model, name) for label, name in ARCHITECTURE_FIELDS},
        vocabulary=vocabulary,
        base_model=base,
        base_origin=_base_origin(base) or _origin_text(extra),
        data=safe_getattr(task, "data", None),
        updates=history[-1].get("num_updates"),
        export_command=export_command,
        export_format=export_format,
        has_pooler="pooler.dense.weight" in state["model"],
        left_out=list(left_out),
        decoding=decoding,
        scores=None if decoded_elsewhere else _read_json(os.path.join(folder, SCORES_FILE)),
        commands=_read_commands(os.path.join(folder, COMMANDS_FILE)),
        decoded_elsewhere=decoded_elsewhere,
    )
    if decoding is not None:
        facts.method = str(decoding["method"])
        facts.limits = {k: int(decoding[k]) for k in ("max_source_positions", "max_target_positions")}
    best = extra.get("best")
    if best is not None:
        metric = safe_getattr(getattr(cfg, "checkpoint", None), "best_checkpoint_metric", "loss")
        facts.best_validation = f"{metric} {float(best):.4g}"
    if facts.updates:  # a converted or untrained checkpoint's config holds fairseq's defaults, not a recipe
        for label, section, name in TRAINING_FIELDS:
            value = safe_getattr(getattr(cfg, section, None), name, None)
            if isinstance(value, (list, tuple, ListConfig)):  # fairseq keeps --lr as a list
                value = value[0] if len(value) == 1 else list(value)
            if value not in (None, 0, 0.0) or name == "seed":
                facts.training[label] = value
    return facts


def _origin_text(extra: dict) -> Optional[str]:
    """The Hugging Face folder a converted checkpoint came from, and the packed weights put onto it if any, as
    its ``extra_state`` records them."""
    origin = extra.get(ORIGIN_KEY)
    if not origin:
        return None
    source, kind = origin.get("model_dir"), origin.get("model_type")
    text = f"{source} ({kind}, converted by scripts/convert_hf_checkpoint.py)"
    if extra.get(PACKED_KEY):
        text += f", with the weights of {extra[PACKED_KEY]} (put in by scripts/pack_weights.py unpack)"
    return text


def _table(rows: List[List[object]], header: List[str]) -> List[str]:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(str(cell) for cell in row) + " |" for row in rows]
    return lines


# scripts/score.py --json's measures (the paper recipes' layout: one system, its scores at the top level)
SCORE_PY_MEASURES = {"rouge1": "ROUGE-1", "rouge2": "ROUGE-2", "rougeL": "ROUGE-L", "rougeLsum": "ROUGE-Lsum",
                     "bleu4": "BLEU-4", "meteor": "METEOR"}  # fmt: skip


def _score_py_section(scores: dict) -> List[str]:
    measures = [m for m in SCORE_PY_MEASURES if isinstance(scores.get(m), (int, float))]
    intervals = scores.get("rouge_ci") or {}

    def cell(measure: str) -> str:
        interval = intervals.get(measure)
        text = f"{scores[measure]:.2f}"
        return f"{text} ({interval[0]:.2f}-{interval[1]:.2f})" if interval else text

    backend = f"ROUGE by {scores['rouge_backend']}, " if scores.get("rouge_backend") else ""
    note = "; in brackets, ROUGE's 95% interval" if intervals else ""
    lines = [
        "## Scores",
        "",
        f"Test set, {scores.get('num_pairs')} pairs, x 100 ({backend}written by scripts/score.py{note}):",
        "",
    ]
    header = ["system"] + [SCORE_PY_MEASURES[m] for m in measures]
    return lines + _table([["model"] + [cell(m) for m in measures]], header) + [""]


def _scores_section(scores: dict) -> List[str]:
    if "scores" not in scores and any(m in scores for m in SCORE_PY_MEASURES):
        return _score_py_section(scores)
    systems = scores.get("scores") or {}
    if not systems:
        return ["## Scores", "", f"{SCORES_FILE} beside the checkpoint holds no scores in a known layout", ""]
    measures = ("rouge1", "rouge2", "rougeL")
    bootstrap = scores.get("bootstrap") or {}
    intervals = bootstrap.get("intervals") or {}

    def cell(name: str, measure: str) -> str:
        text = f"{systems[name].get(measure, float('nan')):.2f}"
        interval = intervals.get(name, {}).get(measure)
        return f"{text} ({interval[0]:.2f}-{interval[1]:.2f})" if interval else text

    rows = [[name] + [cell(name, m) for m in measures] for name in systems]
    note = ""
    if intervals:
        note = (
            f"; in brackets, the 95% interval over {bootstrap.get('resamples')} bootstrap resamples of the "
            "test pairs"
        )
    lines = [
        "## Scores",
        "",
        f"Test set, {scores.get('num_pairs')} pairs, F1 x 100 ({scores.get('rouge_backend')}, "
        f"written by scripts/rouge_table.py; baselines beside the model{note}):",
        "",
    ]
    return lines + _table(rows, ["system", "ROUGE-1", "ROUGE-2", "ROUGE-L"]) + [""]


def _usage_section(facts: CardFacts) -> List[str]:
    lines = ["## Use", ""]
    if facts.generate_script:
        lines += [
            "Generate with plain `transformers` (the folder's `generate.py` needs only `torch` and",
            "`transformers`; it reads `generation.json` and decodes as the fine-tuning project does):",
            "",
            "```",
            'python generate.py . "A text to summarize."',
            'python generate.py . --beam 1 "Greedy decoding instead."',
            "```",
            "",
        ]
    if facts.export_format == "bert":
        lines += [
            "The weights load as a BERT encoder with its MLM head"
            + (
                " and its pooler"
                if facts.has_pooler
                else " (no pooler: `BertModel`'s `pooler_output` is untrained)"
            )
            + ":",
            "",
            "```python",
            "from transformers import BertForMaskedLM, BertModel, BertTokenizer",
            'tokenizer = BertTokenizer.from_pretrained(".")',
            'mlm = BertForMaskedLM.from_pretrained(".")',
            'encoder = BertModel.from_pretrained(".")',
            "```",
            "",
        ]
    else:
        lines += [
            f"The `{facts.export_format}` layout is UniLM's own: the code released with s2s-ft reads it "
            "(`generation.json` holds the settings to give its decoder).",
            "",
        ]
    return lines


def render_card(facts: CardFacts) -> str:
    """The Markdown of the model card."""
    kind = "sequence-to-sequence model (s2s-ft)" if facts.decoding is not None else f"`{facts.task}` model"
    lines = [f"# A UniLM {kind}", ""]
    lines += [f"Exported from `{facts.checkpoint}` by unilm_fairseq (`{facts.export_format}` layout).", ""]
    lines += ["## Model", ""]
    arch = [[label, value] for label, value in facts.architecture.items() if value is not None]
    lines += _table(arch + [["vocabulary", facts.vocabulary]], ["", "value"]) + [""]
    if facts.base_model:
        lines.append(
            f"Started from `{facts.base_model}`"
            + (f", from {facts.base_origin}." if facts.base_origin else ".")
        )
    elif facts.base_origin:
        lines.append(f"Converted from {facts.base_origin}.")
    if facts.has_pooler:
        lines.append("The source model's [CLS] pooler is kept unchanged (it is not trained here).")
    if facts.left_out:
        lines.append(f"Left out (no place in this layout): {', '.join(facts.left_out)}.")
    lines.append("")
    lines += ["## Training", ""]
    rows = [["task", f"`{facts.task}`"]]
    if facts.method:
        rows.append(
            ["method", f"`{facts.method}` ({METHOD_SECTIONS.get(facts.method, 'see the s2s-ft paper')})"]
        )
    if facts.limits:
        rows.append(
            ["source tokens", f"at most {facts.limits['max_source_positions']}, [CLS] and [SEP] included"]
        )
        rows.append(
            ["target tokens", f"at most {facts.limits['max_target_positions']}, the final [SEP] included"]
        )
    if facts.data:
        rows.append(["data", f"`{facts.data}`"])
    if facts.updates is not None:
        rows.append(["updates done", facts.updates])
    rows += [[label, value] for label, value in facts.training.items()]
    if facts.best_validation:
        rows.append(["best validation", facts.best_validation])
    lines += _table(rows, ["", "value"]) + [""]
    if facts.decoding is not None:
        said = "The settings the test set was decoded with (`generation.json`):"
        if facts.decoded_elsewhere:
            said = (
                f"The model folder decoded the test set with `{facts.decoded_elsewhere}`, not this "
                "checkpoint: `generation.json` holds the default search settings:"
            )
        lines += ["## Decoding", "", said, ""]
        lines += _table([[k, json.dumps(v)] for k, v in facts.decoding.items()], ["setting", "value"]) + [""]
    if facts.scores:
        lines += _scores_section(facts.scores)
    elif facts.decoded_elsewhere:
        lines += ["## Scores", "", f"The folder's test scores are those of `{facts.decoded_elsewhere}`.", ""]
    else:
        lines += ["## Scores", "", "None recorded beside the checkpoint (no scores.json).", ""]
    lines += _usage_section(facts)
    lines += ["## How it was made", ""]
    if facts.commands:
        lines += ["The commands that trained, decoded and scored it, in order:", "", "```bash"]
        lines += facts.commands + ["```", ""]
    else:
        lines += ["No commands recorded beside the checkpoint (no commands.sh).", ""]
    lines += ["The export:", "", "```bash", facts.export_command, "```", ""]
    return "\n".join(lines)


def command_line(argv: List[str]) -> str:
    """A command as a shell would take it."""
    return " ".join(shlex.quote(a) for a in argv)
