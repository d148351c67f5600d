"""Every command the recipes under examples/ run stays as it is: golden files of the command lines.

Each scenario below runs one recipe with every external tool stubbed: fairseq-train, fairseq-generate,
fairseq-preprocess, fairseq-validate, fairseq-hydra-train, and ``python``/``$PYTHON`` for the scripts it
runs (``python [.../]scripts/NAME.py ...``, ``python examples/.../NAME.py``; anything else, ``python -c`` or
``python -`` with a here-document, runs for real). Each stub appends one line per call to a log: the tool and
its arguments, each quoted by bash's ``printf %q``, so a changed value, order or quoting shows. The files a
stage reads from an earlier stage (prepared text, dictionaries, model folders) are made up front. The
log, with the scenario's temporary folder written ``<TMP>`` and this checkout ``<REPO>``, must equal
tests/fixtures/recipe_commands/<recipe path, / as __>[.<scenario>].txt.

Regenerate the golden files (after a change of a recipe's commands that is meant):

    RECIPE_COMMANDS_UPDATE=1 python -m pytest -q tests/unit/test_recipe_commands.py

A new recipe under examples/ needs a scenario here, or a line in SKIPPED_RECIPES saying why it has none.
"""

import difflib
import glob
import json
import os
import subprocess
import sys
from typing import Callable, Dict, NamedTuple, Tuple, Union

import pytest

from ..helpers.cli import REPO
from ..helpers.squad import squad_json, vocabulary

GOLDEN = os.path.join(REPO, "tests", "fixtures", "recipe_commands")
UPDATE = os.environ.get("RECIPE_COMMANDS_UPDATE") == "1"

# files the scenarios make: {path under TMP: content}; an int N is N lines of "a b c" (1,000 training lines
# make the epochs-into-updates count round up); a function writes the file at the path it is given
Files = Dict[str, Union[str, int, Callable[[str], None]]]

PAIRS = ("train", "valid", "test")
MINILM_ARGS = (
    "--arch unilmv2_base --encoder-layers 6 --encoder-embed-dim 384 --token-embed-dim 0 "
    "--encoder-ffn-embed-dim 1536 --encoder-attention-heads 12 --activation-fn gelu --max-positions 512 "
    "--num-segments 2 --rel-pos-bins 0 --max-rel-pos 0 --layernorm-eps 1e-12\n"
)


def text_pairs(folder: str, train: int = 1000) -> Files:
    """{train,valid,test}.{src,tgt} in folder: ``train`` training pairs, 10 of the others."""
    return {
        f"{folder}/{split}.{side}": (train if split == "train" else 10)
        for split in PAIRS
        for side in ("src", "tgt")
    }


def model_folder(folder: str, args: str = MINILM_ARGS) -> Files:
    """What scripts/convert_hf_checkpoint.py writes: model.pt, dict.txt, vocab.txt, model_args.txt."""
    return {
        f"{folder}/model.pt": "",
        f"{folder}/dict.txt": "[PAD]\n",
        f"{folder}/vocab.txt": "[PAD]\n",
        f"{folder}/model_args.txt": args,
    }


# a decoded checkpoint and the binarized dictionaries beside it: the generate stage writes the model folder
S2S_DECODED = {"work/checkpoints/checkpoint_last.pt": "", "work/bin/dict.src.txt": "[PAD] 1\n"}
PALM_DECODED = {"work/checkpoints/checkpoint_best.pt": "", "work/bin/dict.src.txt": "[PAD] 1\n"}
S2S_FILES = {"raw/x": "", **text_pairs("work/text"), **model_folder("minilm"), **S2S_DECODED}
PALM_FILES = {
    "raw/x": "",
    **text_pairs("work/text"),
    **model_folder("minilm"),
    **PALM_DECODED,
    "spm.model": "",
}
# the GPU count, mixed precision and CPU switches the recipes would ask torch for: fixed here
DEFAULTS = {"GPUS": "1", "FP16": "0"}
OVERRIDES = {
    "GPUS": "2",
    "FP16": "1",
    "STEPS": "7",
    "WARMUP": "3",
    "EVAL_ROUGE": "0",
    "NGRAM_EXEMPT": "",
    "SEED": "5",
    "WORKERS": "3",
}
S2S_ARGS = ("{TMP}/raw", "{TMP}/work")
# extra fairseq-train flags, one with a space and a quote: passed on as they are
EXTRA = ("--tensorboard-logdir", "{TMP}/tb dir", "--wandb-project", "it's")
FINETUNE_FILES = {
    **text_pairs("data", 100),
    **model_folder("work/model"),
    "hf/config.json": "{}",
    "work/text/train.tgt": "a b c d e f\n" * 100,
}


# run_all.sh's default rows (but pmlm, which runs continue_pmlm.sh in WORK/pmlm)
ACLSUM_ROWS = (
    *(
        f"{method}-{init}"
        for init in ("pretrained", "random")
        for method in ("pseudo_masked", "masked", "causal")
    ),
    *(f"pseudo_masked-pretrained-u{updates}" for updates in (100, 400, 1200)),
)


def palm_checkpoint(path: str) -> None:
    """A PALM checkpoint's config: a palm_tiny with its own sizes."""
    import argparse

    import torch

    sizes = argparse.Namespace(arch="palm_tiny", encoder_layers=3, decoder_layers=1, encoder_embed_dim=32)
    torch.save({"cfg": {"model": sizes}}, path)


MARCO_DEV = {
    f"work/text/dev.{side}": 20 for side in ("src", "tgt", "id")
}  # prepare_marco_data.py's dev split


def glue_raw(*inputs: str) -> Files:
    """What scripts/prepare_glue.py writes: WORK/raw/{train,valid}.INPUT, 40 examples."""
    return {f"work/raw/{split}.{name}": 40 for split in ("train", "valid") for name in inputs}


class Scenario(NamedTuple):
    recipe: str
    name: str = ""  # suffix of the golden file when a recipe runs in more than one configuration
    args: Tuple[str, ...] = ()  # "{TMP}" is the scenario's temporary folder
    env: Dict[str, str] = {}  # "{TMP}" too
    files: Files = {}
    cwd: str = "tmp"  # "tmp" or "repo"


# fmt: off
SCENARIOS = [
    # ------------------------------------------------------------------ s2s-ft: pipeline.sh's recipes
    *[
        Scenario(f"examples/s2s_ft/{task}.sh", "defaults", S2S_ARGS,
                 {**DEFAULTS, "PRETRAINED": "{TMP}/minilm/model.pt"}, S2S_FILES)
        for task in ("cnndm", "xsum", "gigaword", "squad_qg")
    ],
    *[
        Scenario(f"examples/s2s_ft/{task}.sh", "overrides", (*S2S_ARGS, *EXTRA),
                 {**OVERRIDES, "VOCAB": "{TMP}/minilm/vocab.txt", "LOWERCASE": "0", "CKPT": "{TMP}/other.pt"},
                 S2S_FILES)
        for task in ("cnndm", "xsum", "gigaword", "squad_qg")
    ],
    *[
        Scenario(f"examples/s2s_ft/{task}.sh", "spm", S2S_ARGS,
                 {**DEFAULTS, "TOKENIZER": "spm", "VOCAB": "{TMP}/spm.model", "SENT_SEP": "<q>",
                  "ARCH": "unilmv2_large", "EXTRA_PREP": "--url-lists {TMP}/urls", "LOWERCASE": "auto",
                  "METHOD": "masked"},
                 {**S2S_FILES, "spm.model": ""})
        for task in ("cnndm", "gigaword")
    ],
    # ------------------------------------------------------------------ PALM: pipeline.sh's recipes
    *[
        Scenario(f"examples/palm/{task}.sh", "defaults", S2S_ARGS,
                 {**DEFAULTS, "PRETRAINED": "{TMP}/minilm/model.pt"}, PALM_FILES)
        for task in ("cnndm", "gigaword")
    ],
    *[
        Scenario(f"examples/palm/{task}.sh", "overrides", (*S2S_ARGS, *EXTRA),
                 {**OVERRIDES, "NO_COPY": "1", "ABLATION": "no_mlm", "LENPEN_STYLE": "fairseq"}, PALM_FILES)
        for task in ("cnndm", "gigaword")
    ],
    # a PALM checkpoint (palm_checkpoint_arch reads its architecture with torch)
    Scenario("examples/palm/cnndm.sh", "palm_checkpoint", S2S_ARGS,
             {**DEFAULTS, "PRETRAINED": "{TMP}/palm/checkpoint_best.pt"},
             {**PALM_FILES, "palm/checkpoint_best.pt": palm_checkpoint, "palm/dict.txt": "a 1\n",
              "palm/spm.model": ""}),
    Scenario("examples/palm/marco.sh", "defaults", S2S_ARGS,
             {**DEFAULTS, "PRETRAINED": "{TMP}/minilm/model.pt"},
             {**PALM_FILES, **MARCO_DEV, "raw/train_v2.1.json.gz": "", "raw/dev_v2.1.json": ""}),
    Scenario("examples/palm/marco.sh", "overrides", (*S2S_ARGS, *EXTRA),
             {**OVERRIDES, "VALID_SIZE": "5", "TRAIN_JSON": "{TMP}/raw/t.json", "PASSAGES": "all"},
             {**PALM_FILES, **MARCO_DEV, "raw/dev_v2.1.json": ""}),
    # ------------------------------------------------------------------ s2s-ft: finetune.sh and demos
    Scenario("examples/s2s_ft/finetune.sh", "defaults", ("{TMP}/data", "{TMP}/work"),
             {"CPU": "1", "MODEL_DIR": "{TMP}/hf"}, FINETUNE_FILES),
    Scenario("examples/s2s_ft/finetune.sh", "overrides", ("{TMP}/data", "{TMP}/work", *EXTRA),
             {"CPU": "0", "PRETRAINED": "{TMP}/minilm/model.pt", "METHOD": "masked", "UPDATES": "40",
              "EVAL_ROUGE": "1", "MINUTES": "5", "INIT": "random", "CKPT": "last", "BATCH": "4",
              "FRESH": "1"},
             {**FINETUNE_FILES, **model_folder("minilm"), "data/test.lead.hyp": 10,
              "data/test.bart.hyp": 10}),
    Scenario("examples/s2s_ft/finetune.sh", "rows", ("{TMP}/rows.jsonl", "{TMP}/work"),
             {"CPU": "1", "MODEL_DIR": "{TMP}/hf", "SOURCE_FIELD": "document", "TARGET_FIELD": "summary",
              "MIN_LEN": "3", "STAGES": "tokenize,binarize,train,generate,score"},
             {"rows.jsonl": "{}\n", **text_pairs("work/data", 100), **model_folder("work/model"),
              "work/text/train.tgt": 100}),
    Scenario("examples/s2s_ft/demo_austen.sh", "", ("{TMP}/work",), {"S2S_UPDATES": "20"},
             {"work/bin/dict.txt": "a 1\n"}),
    Scenario("examples/s2s_ft/minilm_austen.sh", "", ("{TMP}/work",), {"MINILM_DIR": "{TMP}/hf"},
             model_folder("work/minilm")),
    # ------------------------------------------------------------------ pre-training
    Scenario("examples/palm/pretrain_base.sh", "defaults", ("{TMP}/bin", "{TMP}/save"), {}, {}),
    Scenario("examples/palm/pretrain_base.sh", "overrides", ("{TMP}/bin", "{TMP}/save", *EXTRA),
             {"GPUS": "4", "TOTAL_BATCH": "32", "STAGE1_UPDATES": "10", "STAGE2_UPDATES": "20",
              "PRETRAINED_ENCODER": "{TMP}/roberta/model.pt", "MLM_WEIGHT": "0.5"}),
    Scenario("examples/palm/pretrain_demo.sh", "", ("{TMP}/work",), {}, {}),
    Scenario("examples/unilmv2_pretrain/pretrain_base.sh", "defaults", ("{TMP}/bin", "{TMP}/save"), {}, {}),
    Scenario("examples/unilmv2_pretrain/pretrain_base.sh", "overrides", ("{TMP}/bin", "{TMP}/save", *EXTRA),
             {"GPUS": "2", "MAX_SENTENCES": "16", "TOTAL_BATCH": "64", "STEPS": "9", "WARMUP": "2"}),
    Scenario("examples/unilmv2_pretrain/continue_pretraining.sh", "defaults",
             ("{TMP}/corpus", "{TMP}/model", "{TMP}/work"), {"CPU": "1"},
             {**model_folder("model"), "corpus/valid.idx": ""}),
    Scenario("examples/unilmv2_pretrain/continue_pretraining.sh", "overrides",
             ("{TMP}/corpus:{TMP}/corpus2", "{TMP}/model", "{TMP}/work", *EXTRA),
             {"CPU": "0", "ARMS": "par ae", "UPDATES": "16", "MINUTES": "2", "EQUAL_TIME": "0", "LR": "1e-4"},
             {**model_folder("model"), "corpus/valid.idx": ""}),
    Scenario("examples/unilmv2_pretrain/demo.sh", "", ("{TMP}/work",), {}, {}),
    Scenario("examples/unilm_v1_pretrain/pretrain_large.sh", "defaults", ("{TMP}/bin", "{TMP}/save"), {}, {}),
    Scenario("examples/unilm_v1_pretrain/pretrain_large.sh", "overrides", ("{TMP}/bin", "{TMP}/save", *EXTRA),
             {"INIT": "none", "GPUS": "4", "TOTAL_BATCH": "64", "STEPS": "9"}),
    Scenario("examples/unilm_v1_pretrain/demo.sh", "", ("{TMP}/work",), {}, {}),
    # ------------------------------------------------------------------ SQuAD and GLUE
    Scenario("examples/squad/squad_v1.sh", "", ("{TMP}/squad", "{TMP}/work"),
             {"DICT": "{TMP}/squad/dict.txt"}, {"squad/v1.1": ""}, cwd="repo"),
    Scenario("examples/squad/squad_v2.sh", "", ("{TMP}/squad", "{TMP}/work", *EXTRA),
             {"DICT": "{TMP}/squad/dict.txt", "GPUS": "2", "PRETRAINED": "{TMP}/minilm/model.pt"},
             {"squad/v2.0": ""}, cwd="repo"),
    Scenario("examples/squad/squad_v2.sh", "null_rule", ("{TMP}/squad", "{TMP}/work"),
             {"DICT": "{TMP}/squad/dict.txt", "ANSWERABILITY_HEAD": "0", "ARCH": "unilm_v1_large"},
             {"squad/v2.0": ""}, cwd="repo"),
    Scenario("examples/squad/finetune.sh", "", ("{TMP}/squad", "{TMP}/work"),
             {"MODEL": "{TMP}/minilm", "DICT": "{TMP}/squad/dict.txt", "MAX_SEQ_LENGTH": "128",
              "DOC_STRIDE": "32", "TOTAL_BATCH": "8", "EPOCHS": "2", "LR": "3e-5"},
             {"squad/v1.1": "", **model_folder("minilm")}, cwd="repo"),
    Scenario("examples/glue/glue.sh", "RTE", ("RTE", "{TMP}/glue", "{TMP}/work"), {},
             {"glue/x": "", **glue_raw("input0", "input1", "label")}),
    Scenario("examples/glue/glue.sh", "STS-B", ("STS-B", "{TMP}/glue", "{TMP}/work", *EXTRA),
             {"MODEL_ARGS": "--arch unilm_v1_base", "CPU": "--cpu", "PRETRAINED": "{TMP}/m.pt",
              "DICT": "{TMP}/d.txt", "WORDPIECE": "{TMP}/vocab.txt", "LOWERCASE": "1"},
             {"glue/x": "", **glue_raw("input0", "input1", "label")}),
    Scenario("examples/glue/glue.sh", "CoLA", ("CoLA", "{TMP}/glue", "{TMP}/work"),
             {"SPM": "{TMP}/spm.model", "LOWERCASE": "0"}, {"glue/x": "", **glue_raw("input0", "label")}),
    # ---------------------------------------------------------- ACLSum (pip install aclsum: a stand-in)
    Scenario("examples/aclsum/demo.sh", "", ("{TMP}/work",), {"CPU": "1", "MODEL_DIR": "{TMP}/hf"},
             {**text_pairs("work/data", 100), **model_folder("work/start"), "work/run/text/train.tgt": 100}),
    Scenario("examples/aclsum/demo.sh", "minilm", ("{TMP}/work", *EXTRA),
             {"CPU": "1", "MODEL_DIR": "{TMP}/hf", "START": "minilm", "TEST_PAIRS": "3", "MAX_SRC": "128"},
             {**text_pairs("work/data", 100), **model_folder("work/run/model"),
              "work/run/text/train.tgt": 100}),
    Scenario("examples/aclsum/continue_pmlm.sh", "", ("{TMP}/work", *EXTRA),
             {"CPU": "1", "MODEL_DIR": "{TMP}/hf"},
             {**model_folder("work/model"), **text_pairs("work/data", 100), "work/run/text/train.tgt": 100}),
    Scenario("examples/aclsum/run_all.sh", "", ("{TMP}/work",), {"CPU": "1", "MODEL_DIR": "{TMP}/hf"},
             {**text_pairs("work/data", 100),  # prepared already: the prepare step is skipped
              **{name: content for row in ACLSUM_ROWS for name, content in
                 {**model_folder(f"work/{row}/model"), f"work/{row}/text/train.tgt": 100}.items()},
              **model_folder("work/pmlm/model"), **text_pairs("work/pmlm/data", 100),
              "work/pmlm/run/text/train.tgt": 100}),
    # the PAR-only arm (PAR_ONLY=1) would run beside the fine-tuning jobs, in no fixed order: left out
    Scenario("examples/aclsum/pretraining_ablation.sh", "", ("{TMP}/corpus", "{TMP}/work"),
             {"CPU": "1", "DECODE_CPU": "1", "MODEL_DIR": "{TMP}/hf", "PAR_ONLY": "0", "DATASETS": "aclsum",
              "DATA": "{TMP}/data", "FT_UPDATES": "20"},
             {**text_pairs("data", 100), **model_folder("work/model"), "corpus/valid.idx": "",
              **{f"work/finetune/aclsum-{row}/text/train.tgt": 100
                 for row in ("minilm", "ae+par-last", "ae-last", "ae-u10")}}),
]
# fmt: on

# recipes that run no fairseq command on their own, or cannot run with stubs; the reason
SKIPPED_RECIPES = {
    "examples/s2s_ft/pipeline.sh": "sourced by the s2s-ft recipes (their scenarios run it)",
    "examples/palm/pipeline.sh": "sourced by the PALM recipes (their scenarios run it)",
    "examples/common/pairs.sh": "shared functions, sourced",
    "examples/common/seq2seq_stages.sh": "the s2s-ft and PALM pipelines' shared stages, sourced",
    "examples/aclsum/common.sh": "shared functions, sourced",
}


def scenario_id(scenario: Scenario) -> str:
    base = scenario.recipe.replace("/", "__")[: -len(".sh")]
    return f"{base}.{scenario.name}" if scenario.name else base


# ------------------------------------------------------------------------------------------------- stubs

LOG_LINE = r"""line=$(printf '%s' "$TOOL"; for arg in "$@"; do printf ' %q' "$arg"; done)
printf '%s\n' "$line" >> "$RECIPE_COMMANDS_LOG"
"""
# what the recipes look for in fairseq's output (grep under pipefail, the validation line, the training time)
OUTPUT = r"""printf 'S-0\tstub\nT-0\tstub\nH-0\t-0.1\tstub\nD-0\t-0.1\tstub\n'
echo "stub | valid on 'valid' subset | ae_loss 1.0 | par_loss 1.0 | ae_acc 1.0 | par_acc 1.0 | num_updates 10"
echo "stub | done training in 1.0 seconds | train_inner | initialised | Translated 1 sentences | Error"
"""
# fairseq-train makes its --save-dir with checkpoint_last.pt (which later stages decode or start from) and,
# with --save-interval-updates N, checkpoint_1_N.pt
SAVE_DIR = r"""prev="" save="" every=""
for arg in "$@"; do
  case $prev in --save-dir) save=$arg ;; --save-interval-updates) every=$arg ;; esac
  prev=$arg
done
if [ -n "$save" ]; then
  mkdir -p "$save" && touch "$save/checkpoint_last.pt"
  if [ -n "$every" ]; then touch "$save/checkpoint_1_$every.pt"; fi
fi
"""
FAIRSEQ_TOOLS = (
    "fairseq-train",
    "fairseq-generate",
    "fairseq-preprocess",
    "fairseq-validate",
    "fairseq-hydra-train",
)


def write_stub(path: str, body: str) -> None:
    with open(path, "w", encoding="utf-8") as f:
        f.write("#!/usr/bin/env bash\n" + body)
    os.chmod(path, 0o755)


def make_stubs(folder: str) -> None:
    os.makedirs(folder)
    for tool in FAIRSEQ_TOOLS:
        save = SAVE_DIR if tool == "fairseq-train" else ""
        write_stub(os.path.join(folder, tool), f"TOOL={tool}\n{LOG_LINE}{save}{OUTPUT}")
    # python: a script file (NAME.py) is logged; anything else runs with the real interpreter, as does
    # scripts/recipe_config.py, which only reads a recipe's config (what it gives shows in the commands)
    python = f'case "${{1:-}}" in\n  *scripts/recipe_config.py) ;;\n  *.py)\n    TOOL=python\n{LOG_LINE}'
    python += '    echo "stub pairs"\n    exit 0 ;;\nesac\n'
    python += f'exec {sys.executable} "$@"\n'
    for name in ("python", "python3"):
        write_stub(os.path.join(folder, name), python)
    # ACLSum's recipes check that the aclsum package is installed: an empty stand-in
    os.makedirs(os.path.join(folder, "site", "aclsum"))
    open(os.path.join(folder, "site", "aclsum", "__init__.py"), "w").close()


def make_files(tmp: str, files: Files) -> None:
    for rel, content in files.items():
        path = os.path.join(tmp, rel)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        if rel.startswith("squad/"):  # a SQuAD release: the JSON files and a dictionary
            version = rel.split("/v")[1]
            with open(os.path.join(tmp, "squad", "dict.txt"), "w", encoding="utf-8") as f:
                f.write("\n".join(vocabulary()) + "\n")
            for split, seed in (("train", 1), ("dev", 2)):
                data = squad_json(10, seed, unanswerable_prob=0.3 if version == "2.0" else 0.0)
                with open(os.path.join(tmp, "squad", f"{split}-v{version}.json"), "w", encoding="utf-8") as f:
                    json.dump(data, f)
            continue
        if callable(content):
            content(path)
            continue
        with open(path, "w", encoding="utf-8") as f:
            f.write("a b c\n" * content if isinstance(content, int) else content)


def run_scenario(scenario: Scenario, tmp: str) -> str:
    """The stubs' log of a recipe's run: one line per command, <TMP> and <REPO> for the folders."""
    stubs = os.path.join(tmp, "stubs")
    make_stubs(stubs)
    make_files(tmp, scenario.files)
    log = os.path.join(tmp, "commands.log")
    open(log, "w").close()
    fill = lambda value: value.replace("{TMP}", tmp)  # noqa: E731
    kept = ("HOME", "LANG", "LC_ALL", "TMPDIR")
    environ = {key: os.environ[key] for key in kept if key in os.environ}
    environ.update(
        PATH=f"{stubs}{os.pathsep}{os.environ['PATH']}",
        PYTHON=os.path.join(stubs, "python"),
        PYTHONPATH=f"{REPO}{os.pathsep}{os.path.join(stubs, 'site')}",
        RECIPE_COMMANDS_LOG=log,
        **{key: fill(value) for key, value in scenario.env.items()},
    )
    proc = subprocess.run(
        ["bash", os.path.join(REPO, scenario.recipe), *map(fill, scenario.args)],
        cwd=REPO if scenario.cwd == "repo" else tmp,
        env=environ,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, f"{scenario.recipe} failed:\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}"
    with open(log, encoding="utf-8") as f:
        text = f.read()
    text = text.replace(tmp, "<TMP>").replace(REPO, "<REPO>")
    assert text, f"{scenario.recipe}: no command ran"
    return text


def changed_words(want: str, got: str) -> str:
    """For each changed command line, the words that differ (a command is one long line)."""
    want_lines, got_lines = want.splitlines(), got.splitlines()
    notes = []
    matcher = difflib.SequenceMatcher(None, want_lines, got_lines, autojunk=False)
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if tag != "replace":
            continue
        for old, new in zip(want_lines[i1:i2], got_lines[j1:j2]):
            old_words, new_words = old.split(" "), new.split(" ")
            words = difflib.SequenceMatcher(None, old_words, new_words, autojunk=False)
            for wtag, w1, w2, v1, v2 in words.get_opcodes():
                if wtag != "equal":
                    before = " ".join(old_words[max(w1 - 1, 0) : w2])
                    after = " ".join(new_words[max(v1 - 1, 0) : v2])
                    notes.append(f"  {new_words[0]}: golden {before!r}, now {after!r}")
    return "\n".join(notes)


# ------------------------------------------------------------------------------------------------- tests


def test_scenario_names_are_unique():
    ids = [scenario_id(s) for s in SCENARIOS]
    assert len(ids) == len(set(ids)), sorted(i for i in ids if ids.count(i) > 1)


def test_every_recipe_is_covered_or_skipped_with_a_reason():
    recipes = {
        os.path.relpath(p, REPO)
        for p in glob.glob(os.path.join(REPO, "examples", "**", "*.sh"), recursive=True)
    }
    covered = {s.recipe for s in SCENARIOS}
    assert not covered & set(SKIPPED_RECIPES), covered & set(SKIPPED_RECIPES)
    missing = sorted(recipes - covered - set(SKIPPED_RECIPES))
    assert not missing, f"recipes with no scenario in {__file__} and not in SKIPPED_RECIPES: {missing}"
    gone = sorted((covered | set(SKIPPED_RECIPES)) - recipes)
    assert not gone, f"scenarios or SKIPPED_RECIPES entries for recipes that no longer exist: {gone}"


def test_every_golden_file_has_a_scenario():
    names = {scenario_id(s) + ".txt" for s in SCENARIOS}
    stale = sorted(set(os.listdir(GOLDEN)) - names) if os.path.isdir(GOLDEN) else []
    if UPDATE:
        for name in stale:
            os.remove(os.path.join(GOLDEN, name))
        stale = []
    assert not stale, f"golden files without a scenario (RECIPE_COMMANDS_UPDATE=1 removes them): {stale}"


@pytest.mark.parametrize("scenario", SCENARIOS, ids=scenario_id)
def test_recipe_commands_match_the_golden_file(tmp_path, scenario):
    got = run_scenario(scenario, str(tmp_path))
    golden = os.path.join(GOLDEN, scenario_id(scenario) + ".txt")
    if UPDATE:
        os.makedirs(GOLDEN, exist_ok=True)
        with open(golden, "w", encoding="utf-8") as f:
            f.write(got)
        return
    assert os.path.exists(golden), f"no golden file {golden}: RECIPE_COMMANDS_UPDATE=1 writes it"
    with open(golden, encoding="utf-8") as f:
        want = f.read()
    if got != want:
        diff = "".join(
            difflib.unified_diff(
                want.splitlines(True), got.splitlines(True), f"golden {golden}", f"{scenario.recipe} now"
            )
        )
        message = (
            f"{scenario.recipe} ({scenario.name or 'default'}) runs other commands than its golden file "
            f"(RECIPE_COMMANDS_UPDATE=1 rewrites it if the change is meant):\n{diff}\n"
            f"the words that differ (each with the word before it):\n{changed_words(want, got)}"
        )
        pytest.fail(message, pytrace=False)
