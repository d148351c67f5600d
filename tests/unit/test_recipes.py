"""The recipes under examples/ and the settings tables in docs/recipes.md say the same thing.

Every recipe keeps its values in its fairseq-hydra-train configs (CONFIG_RECIPES: one config per
fairseq-train command it runs, merged, and one such group per variant it reads, such as SQuAD's version and
paper), one annotated line each, which the recipe reads through scripts/recipe_config.py and from which
docs/recipes.md's tables are generated: here the tables must be up to date and sit in their recipe's
section, every setting must cite its source, the configs of one variant must agree on the settings they
share, and neither the recipe nor its pipeline may restate a value of its configs. The bad-input tests run
recipes on missing data (no training); the command-line tests replace fairseq-train and fairseq-generate by
stubs that print their arguments, so no fairseq command runs.
"""

import argparse
import ast
import glob
import json
import os
import re
import shlex
import subprocess
import sys
from typing import Dict, List, Optional, Tuple

import pytest

from ..helpers.cli import REPO
from ..helpers.squad import squad_json, vocabulary

DOC = os.path.join(REPO, "docs", "recipes.md")

RECIPES = [
    "examples/s2s_ft/cnndm.sh",
    "examples/s2s_ft/xsum.sh",
    "examples/s2s_ft/gigaword.sh",
    "examples/s2s_ft/squad_qg.sh",
    "examples/s2s_ft/finetune.sh",
    "examples/unilmv2_pretrain/pretrain_base.sh",
    "examples/unilm_v1_pretrain/pretrain_large.sh",
    "examples/squad/finetune.sh",
    "examples/glue/glue.sh",
    "examples/palm/cnndm.sh",
    "examples/palm/gigaword.sh",
    "examples/palm/marco.sh",
    "examples/palm/pretrain_base.sh",
]

# each recipe: the variants it reads (a group of configs each, one per fairseq-train command, merged) and
# the pipeline that runs them (the recipe itself when it builds its commands alone)
CONFIG_RECIPES: Dict[str, Tuple[Tuple[Tuple[str, ...], ...], str]] = {
    **{
        f"examples/{family}/{name}.sh": (
            ((f"examples/{family}/config/{name}.yaml",),),
            f"examples/{family}/pipeline.sh",
        )
        for family, names in (("s2s_ft", ("cnndm", "xsum", "gigaword", "squad_qg")),
                              ("palm", ("cnndm", "gigaword", "marco")))
        for name in names
    },
    **{
        recipe: (((config,),), recipe)
        for recipe, config in (
            ("examples/s2s_ft/finetune.sh", "examples/s2s_ft/config/finetune.yaml"),
            ("examples/unilmv2_pretrain/pretrain_base.sh",
             "examples/unilmv2_pretrain/config/pretrain_base.yaml"),
            ("examples/unilm_v1_pretrain/pretrain_large.sh",
             "examples/unilm_v1_pretrain/config/pretrain_large.yaml"),
        )
    },
    "examples/palm/pretrain_base.sh": (
        (("examples/palm/config/pretrain_stage1.yaml", "examples/palm/config/pretrain_stage2.yaml"),),
        "examples/palm/pretrain_base.sh",
    ),
    # one config per SQuAD version and paper (VERSION, SETTINGS)
    "examples/squad/finetune.sh": (
        tuple((f"examples/squad/config/squad_v{version}{paper}.yaml",)
              for paper in ("", "_unilm_v1") for version in ("1", "2")),
        "examples/squad/finetune.sh",
    ),
    # one config per paper (SETTINGS)
    "examples/glue/glue.sh": (
        (("examples/glue/config/glue_unilmv2.yaml",), ("examples/glue/config/glue_unilm_v1.yaml",)),
        "examples/glue/glue.sh",
    ),
}  # fmt: skip

# paths, hardware, selectors and switches: defaults a recipe gives itself, never a setting of its configs
PLUMBING = {
    "ABLATION", "ARCH", "CASED", "CKPT", "CPU", "DICT", "EVAL_ROUGE", "EXTRA_PREP", "FP16", "FRESH", "GPUS",
    "INIT", "MINUTES", "SOURCE_FIELD", "TARGET_FIELD",
    "LOWERCASE", "MAX_SENTENCES", "MODEL", "MODEL_ARGS", "NO_COPY", "PRETRAINED", "PYTHON", "SCORING", "SEED",
    "SETTINGS", "STAGES", "TOKENIZER", "VERSION", "VOCAB", "WORKERS",
}  # fmt: skip

# flags whose literal values (not "$VARIABLE") are hyperparameters
HYPER_FLAGS = {
    "optimizer", "adam-betas", "adam-eps", "weight-decay", "clip-norm", "lr", "lr-scheduler",
    "end-learning-rate", "warmup-updates", "total-num-update", "max-update", "dropout", "attention-dropout",
    "label-smoothing", "batch-size", "update-freq", "max-source-positions", "max-target-positions",
    "tokens-per-sample", "max-positions", "mask-prob", "span-prob", "min-span-length", "max-span-length",
    "leave-unmasked-prob", "random-token-prob", "objectives", "objective-weights", "nsp-random-prob",
    "max-fragment-tokens", "max-context-tokens", "max-continuation-tokens", "context-ratio", "mlm-weight",
    "max-rel-pos", "beam", "lenpen", "lenpen-style",
    "no-repeat-ngram-size", "no-repeat-ngram-exempt", "min-len", "max-len-a", "max-len-b", "pooler-dropout",
    "target-mask-prob", "target-word-drop-prob", "finetune-method",
}  # fmt: skip

# a paper and where in it, or an explicit statement that the paper is not the source
CITATION = re.compile(
    r"\b(?:UniLMv2|UniLM v1|s2s-ft|PALM)\b[^\n]{0,40}?(?:Table \d+|§ ?\d|Algorithm \d|Appendix [A-D])"
    r"|this project's choice"
)

DEFAULT = re.compile(r'"\$\{([A-Za-z_]\w*):?=([^}]*)\}"')
DEFAULT_LINE = re.compile(r"^\s*(?:[^()#:]+?\)\s*)?:\s")  # `: "${NAME:=value}"`, also in a case branch
FLAG = re.compile(r"(?<![\w-])--([a-z][\w-]*)\s+('[^']*'|\"[^\"]*\"|[^\s\\;)]+)")


def unquote(value: str) -> str:
    value = value.strip()
    if len(value) >= 2 and value[0] == value[-1] and value[0] in "'\"":
        return value[1:-1]
    return value


def read(path: str) -> str:
    with open(os.path.join(REPO, path), encoding="utf-8") as f:
        return f.read()


def recipe_defaults(text: str) -> Dict[str, str]:
    """The defaults a script gives (``: "${NAME:=value}"``, in a ``case`` branch too): ``{NAME: value}``,
    paths and switches (PLUMBING) and computed values aside."""
    found: Dict[str, str] = {}
    for line in text.splitlines():
        code = line.split(" #", 1)[0]
        if code.lstrip().startswith("#") or not DEFAULT_LINE.match(code):
            continue
        for name, value in DEFAULT.findall(code):
            if name not in PLUMBING and "$" not in value:
                found[name] = value
    return found


def recipe_flags(text: str) -> Dict[str, str]:
    """The hyperparameter flags a script passes with a literal value: ``{--flag: value}``."""
    found: Dict[str, str] = {}
    for line in text.splitlines():
        code = line.split(" #", 1)[0]
        if code.lstrip().startswith("#"):
            continue
        for flag, value in FLAG.findall(code):
            if flag not in HYPER_FLAGS or unquote(value).startswith("$"):
                continue
            assert found.get(f"--{flag}", unquote(value)) == unquote(value), f"--{flag} has two values"
            found[f"--{flag}"] = unquote(value)
    return found


RECIPE_HEADING = re.compile(r"^#{2,4} .*?`(examples/[\w/.-]+\.sh)`")
GENERATED = re.compile(r"^<!-- settings of (\S+(?:;? \S+)*): generated by scripts/recipe_config.py docs -->$")


def doc_sections() -> Dict[str, List[Tuple[str, ...]]]:
    """``{recipe: [the configs of each variant a generated table in its section shows]}`` from
    docs/recipes.md: a section starts at a heading that names a recipe and ends at the next heading; a table
    shows one variant, or several separated by "; " (a column each)."""
    sections: Dict[str, List[Tuple[str, ...]]] = {}
    recipe = None
    for line in read("docs/recipes.md").splitlines():
        heading = RECIPE_HEADING.match(line)
        if heading:
            recipe = heading.group(1)
            assert recipe not in sections, f"{recipe} has two sections"
            sections[recipe] = []
        elif line.startswith("#"):
            recipe = None
        elif GENERATED.match(line):
            assert recipe, f"a generated table outside a recipe's section: {line}"
            variants = GENERATED.match(line).group(1).split("; ")
            sections[recipe].extend(tuple(variant.split()) for variant in variants)
    return sections


def test_every_recipe_reads_its_configs_and_has_its_section():
    assert sorted(CONFIG_RECIPES) == sorted(RECIPES)
    assert sorted(doc_sections()) == sorted(RECIPES)
    for path in RECIPES:
        assert os.path.isfile(os.path.join(REPO, path)), path


def recipe_config():
    sys.path.insert(0, os.path.join(REPO, "scripts"))
    try:
        import recipe_config as module
    finally:
        sys.path.pop(0)
    return module


def variant_settings(configs: Tuple[str, ...]):
    """The settings of one variant's configs, merged (a setting several of them hold must be the same in
    each)."""
    return recipe_config().merged_settings([os.path.join(REPO, config) for config in configs])


@pytest.mark.parametrize("path", RECIPES)
def test_each_variant_has_its_table_in_its_recipes_section(path):
    variants, _ = CONFIG_RECIPES[path]
    assert doc_sections()[path] == list(variants), f"docs/recipes.md's tables for {path}"


@pytest.mark.parametrize("path", RECIPES)
def test_every_setting_names_its_source(path):
    for configs in CONFIG_RECIPES[path][0]:
        unsourced = [s.name for s in variant_settings(configs) if not CITATION.search(s.source)]
        assert not unsourced, f"{', '.join(configs)}: settings whose source names no table or section: " + (
            f"{unsourced}"
        )
    assert CITATION.search("(s2s-ft Table 7)") and CITATION.search("this project's choice: memory")
    assert not CITATION.search("the microsoft/unilm README") and not CITATION.search("UniLMv2 paper")


def test_the_generated_tables_are_up_to_date():
    text = read("docs/recipes.md")
    assert recipe_config().generated_docs(text) == text, "run: python scripts/recipe_config.py docs"


@pytest.mark.parametrize("path", sorted(CONFIG_RECIPES))
def test_a_config_read_recipe_restates_none_of_its_values(path):
    """Its values are said once, in the configs: neither the recipe nor its pipeline gives a default for a
    setting of them, and every value either passes literally is a fixed flag of each variant."""
    variants, pipeline = CONFIG_RECIPES[path]
    for configs in variants:
        settings = {s.variable or s.name: s.value for s in variant_settings(configs)}
        for script in dict.fromkeys((path, pipeline)):
            restated = [name for name in recipe_defaults(read(script)) if name in settings]
            assert not restated, f"{script} restates {restated}, which {', '.join(configs)} hold"
        for name, value in {**recipe_flags(read(pipeline)), **recipe_flags(read(path))}.items():
            said = settings.get(name)
            assert said == value, f"{pipeline} passes {name} {value}; {', '.join(configs)}: {said}"


def test_the_config_reader_reads_annotations_and_the_recipe_block(tmp_path):
    config = tmp_path / "c.yaml"
    config.write_text(
        "task:\n  #: MAX_SRC | 608 | UniLMv2 Table 10\n  max_source_positions: 608\n"
        "  #: NGRAM_EXEMPT= | — | this project's choice\n  no_repeat_ngram_exempt: null\n"
        "optimization:\n  #: LR | 7e-5 | UniLMv2 Table 10\n  lr: [7e-5]  # a comment\n"
        "  #: OBJECTIVE_WEIGHTS | 1/3, 1/3, 1/6, 1/6 | UniLM v1 §2.4\n  objective_weights: [2, 2,1,1]\n"
        "  #: --adam-betas | (0.9, 0.999) | s2s-ft Table 7\n  adam_betas: (0.9, 0.999)\n"
        "# recipe:\n#   #: EPOCHS | 14 | UniLMv2 Table 10\n#   epochs: 14\n"
        "#   prepare:\n#     #: QG_SEP | — | this project's choice\n#     qg_separator: '[SEP]'\n"
    )
    module = recipe_config()
    settings = module.read_settings(str(config))
    assert [(s.path, s.variable, s.value) for s in settings] == [
        ("task.max_source_positions", "MAX_SRC", "608"),
        ("task.no_repeat_ngram_exempt", "NGRAM_EXEMPT", ""),
        ("optimization.lr", "LR", "7e-5"),
        ("optimization.objective_weights", "OBJECTIVE_WEIGHTS", "2,2,1,1"),
        ("optimization.adam_betas", None, "(0.9, 0.999)"),
        ("recipe.epochs", "EPOCHS", "14"),
        ("recipe.prepare.qg_separator", "QG_SEP", "[SEP]"),
    ]
    env = module.shell_defaults(str(config)).splitlines()
    assert env[1] == "NGRAM_EXEMPT=${NGRAM_EXEMPT-''}" and env[-1] == "QG_SEP=${QG_SEP:-'[SEP]'}"
    proc = subprocess.run(["bash", "-c", "QG_SEP=x; LR=; eval \"$1\"; echo \"$QG_SEP $LR $NGRAM_EXEMPT.\"",
                           "-", "\n".join(env)], capture_output=True, text=True)  # fmt: skip
    assert proc.stdout == "x 7e-5 .\n", proc.stderr
    assert module.config_value(str(config), "MAX_SRC") == "608"  # the config's, whatever the environment says
    assert module.config_value(str(config), "--adam-betas") == "(0.9, 0.999)"
    with pytest.raises(ValueError, match="no setting BEAM"):
        module.config_value(str(config), "BEAM")
    config.write_text("task:\n  #: MAX_SRC | 608 | UniLMv2 Table 10\n\n  other: 1\n")
    with pytest.raises(ValueError, match="right above"):
        module.read_settings(str(config))


@pytest.mark.parametrize("script", sorted(glob.glob(os.path.join(REPO, "examples", "aclsum", "*.sh"))))
def test_the_aclsum_scripts_take_the_main_jobs_settings_from_its_config(script):
    """They hand the work to examples/s2s_ft/finetune.sh; what they need of its settings first (MAX_SRC,
    the fine-tuning updates) they read from its config, and restate none."""
    settings = recipe_config().read_settings(
        os.path.join(REPO, "examples", "s2s_ft", "config", "finetune.yaml")
    )
    names = {s.variable for s in settings}
    restated = [name for name in recipe_defaults(read(script)) if name in names]
    assert not restated, f"{script} restates {restated}, which examples/s2s_ft/config/finetune.yaml holds"


def test_a_variants_table_gives_a_column_per_variant_and_each_shared_source_once(tmp_path):
    paper, other = tmp_path / "v2.yaml", tmp_path / "v1.yaml"
    paper.write_text(
        "optimization:\n  #: LR | 2e-5 | UniLMv2 Table 9\n  lr: [2e-5]\n"
        "  #: EPOCHS | 4 | UniLMv2 Table 9\n  epochs: 4\n"
    )
    other.write_text(
        "optimization:\n  #: LR | 2e-5 | UniLMv2 Table 9\n  lr: [2e-5]\n"
        "  #: EPOCHS | 3 | UniLM v1 §3.2\n  epochs: 3\n"
        "  #: CLIP_NORM | 1 | UniLM v1 §3.5\n  clip_norm: 1\n"
    )
    assert recipe_config().variants_table([[str(paper)], [str(other)]]).splitlines() == [
        "| Setting | `v2` | `v1` | Paper | Source |",
        "|---|---|---|---|---|",
        "| `LR` | `2e-5` | `2e-5` | 2e-5 | UniLMv2 Table 9 |",
        "| `EPOCHS` | `4` | `3` | `v2`: 4; `v1`: 3 | `v2`: UniLMv2 Table 9; `v1`: UniLM v1 §3.2 |",
        "| `CLIP_NORM` | not set | `1` | 1 | UniLM v1 §3.5 |",
    ]


def test_the_configs_of_one_recipe_say_a_shared_setting_alike(tmp_path):
    """PALM's two pre-training stages: a setting both configs hold is given once, and must agree."""
    first, second = tmp_path / "stage1.yaml", tmp_path / "stage2.yaml"
    first.write_text("optimization:\n  #: LR | 1e-5 | PALM §3.1\n  lr: [1e-5]\n")
    second.write_text(
        "task:\n  #: MLM_WEIGHT | — | this project's choice\n  mlm_weight: 0\n"
        "optimization:\n  #: LR | 1e-5 | PALM §3.1\n  lr: [1e-5]\n"
    )
    module = recipe_config()
    assert module.shell_defaults(str(first), str(second)).splitlines() == [
        "LR=${LR:-1e-5}",
        "MLM_WEIGHT=${MLM_WEIGHT:-0}",
    ]
    second.write_text("optimization:\n  #: LR | 1e-5 | PALM §3.1\n  lr: [2e-5]\n")
    with pytest.raises(ValueError, match="LR: .* say different things"):
        module.merged_settings([str(first), str(second)])


def test_the_restatement_parsers():
    """What recipe_defaults and recipe_flags read of a made-up script: defaults (in a case branch too),
    plumbing and computed values aside; literal hyperparameter flags."""
    text = "\n".join(
        [
            ': "${LR:=1e-5}" "${GPUS:=8}" "${STEPS:=$(( 2 * 3 ))}" "${EMPTY=}"',
            "case $SETTINGS in",
            '  unilm_v1) : "${EPOCHS:=3}" ;;',
            "esac",
            '# : "${COMMENTED:=1}"',
            "fairseq-train --adam-betas '(0.9, 0.98)' --lr \"$LR\" --optimizer adam --seed 1 \\",
            "  --lr-scheduler polynomial_decay",
        ]
    )
    assert recipe_defaults(text) == {"LR": "1e-5", "EMPTY": "", "EPOCHS": "3"}
    assert recipe_flags(text) == {
        "--adam-betas": "(0.9, 0.98)",
        "--optimizer": "adam",
        "--lr-scheduler": "polynomial_decay",
    }


# ------------------------------------------------------------------------------------------- bad input


def clean_environment(**env: str) -> Dict[str, str]:
    """The caller's PATH and locale, none of the recipes' variables, GPUS=1, and ``env``."""
    kept = ("PATH", "HOME", "LANG", "LC_ALL", "TMPDIR")
    environ = {key: os.environ[key] for key in kept if key in os.environ}
    environ.update(GPUS="1", **env)
    return environ


def run_recipe(recipe: str, *args: str, cwd: str, **env: str) -> subprocess.CompletedProcess:
    environ = clean_environment(
        PYTHON=sys.executable,
        PYTHONPATH=REPO + os.pathsep + os.environ.get("PYTHONPATH", ""),
        PATH=os.path.dirname(sys.executable) + os.pathsep + os.environ.get("PATH", ""),
        **env,
    )
    return subprocess.run(
        ["bash", os.path.join(REPO, recipe), *args],
        cwd=cwd, env=environ, capture_output=True, text=True, timeout=120,
    )  # fmt: skip


@pytest.mark.parametrize("recipe", ["examples/s2s_ft/xsum.sh", "examples/palm/cnndm.sh"])
def test_missing_data_directory_is_named(tmp_path, recipe):
    proc = run_recipe(recipe, "/nonexistent", str(tmp_path / "work"), cwd=tmp_path, STAGES="prepare")
    assert proc.returncode != 0
    assert "/nonexistent" in proc.stderr and "no such" in proc.stderr, proc.stderr
    assert "Traceback" not in proc.stderr


def test_missing_vocabulary_is_named(tmp_path):
    work = str(tmp_path / "work")
    proc = run_recipe("examples/s2s_ft/xsum.sh", str(tmp_path), work, cwd=tmp_path, STAGES="prepare")
    assert proc.returncode != 0
    assert "VOCAB=./vocab.txt: no such file" in proc.stderr, proc.stderr


def test_missing_release_file_is_named(tmp_path):
    """A data directory without the XSum split file: the prepare script names the file it looked for."""
    vocab = tmp_path / "vocab.txt"
    vocab.write_text("[PAD]\n[UNK]\n[CLS]\n[SEP]\n[MASK]\nthe\n")
    raw = tmp_path / "raw"
    raw.mkdir()
    work = str(tmp_path / "work")
    recipe = "examples/s2s_ft/xsum.sh"
    proc = run_recipe(recipe, str(raw), work, cwd=tmp_path, STAGES="prepare", VOCAB=str(vocab))
    assert proc.returncode != 0
    assert "XSum-TRAINING-DEV-TEST-SPLIT-90-5-5.json" in proc.stderr, proc.stderr[-2000:]


@pytest.mark.parametrize(
    "recipe",
    ["examples/unilmv2_pretrain/pretrain_base.sh", "examples/unilm_v1_pretrain/pretrain_large.sh",
     "examples/palm/pretrain_base.sh"],
)  # fmt: skip
def test_pretraining_recipes_without_their_folders_print_their_usage(tmp_path, recipe):
    """Under set -u a missing DATA_BIN was "$1: unbound variable"."""
    proc = run_recipe(recipe, cwd=tmp_path)
    assert proc.returncode == 1 and "usage: bash" in proc.stderr and "unbound" not in proc.stderr


@pytest.mark.parametrize("recipe", ["examples/s2s_ft/cnndm.sh", "examples/palm/cnndm.sh"])
def test_a_misspelt_stage_is_refused_before_any_work(tmp_path, recipe):
    """STAGES=preprocess,trian skipped training and decoded a checkpoint nothing had made (exit 0)."""
    work = tmp_path / "work"
    proc = run_recipe(recipe, str(tmp_path), str(work), cwd=tmp_path, STAGES="preprocess,trian,generate")
    assert proc.returncode == 2 and "STAGES: 'trian' is none of prepare,preprocess,train" in proc.stderr
    assert not work.exists()


@pytest.mark.parametrize("recipe", ["examples/s2s_ft/cnndm.sh", "examples/palm/gigaword.sh"])
def test_later_stages_name_the_missing_prepared_file(tmp_path, recipe):
    work = tmp_path / "work"
    proc = run_recipe(recipe, str(tmp_path), str(work), cwd=tmp_path, STAGES="preprocess")
    assert proc.returncode != 0 and f"{work}/text/train.src: no such file" in proc.stderr, proc.stderr
    proc = run_recipe(recipe, str(tmp_path), str(work), cwd=tmp_path, STAGES="train")
    assert proc.returncode != 0 and f"{work}/text/train.src: no such file" in proc.stderr, proc.stderr


@pytest.mark.parametrize(
    "visible, count, asked",
    [(None, "3", 1), ("0,1,2", "3", 1), ("", "0", 0), ("-1", "0", 0)],
)
def test_the_cuda_device_count_is_asked_once_and_not_when_every_device_is_hidden(
    tmp_path, visible, count, asked
):
    """count_cuda_devices, which FP16, CPU and GPUS default from: torch (here a stand-in python that sees 3
    devices) is asked at most once per run, and not at all when CUDA_VISIBLE_DEVICES hides every device."""
    log = tmp_path / "asked"
    python = tmp_path / "python"
    python.write_text(f'#!/bin/sh\necho "$*" >> {log}\necho 3\n')
    python.chmod(0o755)
    script = (
        ". examples/common/seq2seq_stages.sh; count_cuda_devices; TOTAL_BATCH=6 BATCH_PER_GPU=2 split_batch; "
        'count_cuda_devices; echo "$CUDA_DEVICE_COUNT $GPUS $UPDATE_FREQ"'
    )
    env = {key: value for key, value in clean_environment(PYTHON=str(python)).items() if key != "GPUS"}
    if visible is not None:
        env["CUDA_VISIBLE_DEVICES"] = visible
    proc = subprocess.run(
        ["bash", "-c", script], cwd=REPO, env=env, capture_output=True, text=True, timeout=60
    )
    assert proc.returncode == 0, proc.stderr
    gpus = max(int(count), 1)
    assert proc.stdout.split() == [count, str(gpus), str(6 // (gpus * 2))]
    questions = log.read_text().splitlines() if log.exists() else []
    assert len(questions) == asked and all("torch.cuda.device_count()" in q for q in questions), questions


# ------------------------------------------------------------------------- command lines, with stubs


@pytest.fixture
def stubs(tmp_path):
    """fairseq-train and fairseq-generate stand-ins that print their arguments, one a line."""
    folder = tmp_path / "stubs"
    folder.mkdir()
    for tool in ("fairseq-train", "fairseq-generate"):
        stub = folder / tool
        stub.write_text(f'#!/usr/bin/env bash\necho "{tool}"\nprintf "%s\\n" "$@"\n')
        stub.chmod(0o755)
    return folder


def stubbed_run(stubs, tmp_path, recipe: str, examples: int, **env: str) -> Dict[str, List[str]]:
    """Run the train and generate stages on a prepared training set of ``examples`` lines; the
    arguments each stub saw."""
    work = tmp_path / "work"
    (work / "text").mkdir(parents=True)
    (work / "text" / "train.src").write_text("a b c\n" * examples)
    path = f"{stubs}{os.pathsep}{os.environ['PATH']}"
    environ = clean_environment(PATH=path, STAGES="train,generate", **env)
    proc = subprocess.run(
        ["bash", os.path.join(REPO, recipe), str(tmp_path), str(work)],
        cwd=tmp_path, env=environ, capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    runs = {"fairseq-train": proc.stdout.splitlines()}
    with open(work / "gen.out", encoding="utf-8") as f:
        runs["fairseq-generate"] = f.read().splitlines()
    assert runs["fairseq-train"][0] == "fairseq-train" and runs["fairseq-generate"][0] == "fairseq-generate"
    return runs


def flag(args: List[str], name: str) -> Optional[str]:
    return args[args.index(name) + 1] if name in args else None


def test_s2s_ft_counts_epochs_into_updates_and_passes_the_decoding_options(stubs, tmp_path):
    runs = stubbed_run(stubs, tmp_path, "examples/s2s_ft/cnndm.sh", examples=1000)
    train, generate = runs["fairseq-train"], runs["fairseq-generate"]
    updates = (1000 + 63) // 64 * 14  # UniLMv2 Table 10: 14 epochs of batch 64
    assert flag(train, "--max-update") == flag(train, "--total-num-update") == str(updates)
    assert flag(train, "--warmup-updates") == str(updates * 2 // 100)  # warm-up ratio 0.02
    assert flag(train, "--adam-eps") == "1e-6" and flag(train, "--adam-betas") == "(0.9, 0.999)"
    assert flag(train, "--update-freq") == "8" and flag(train, "--batch-size") == "8"
    assert flag(generate, "--lenpen") == "0.7" and flag(generate, "--lenpen-style") == "gnmt"
    assert flag(generate, "--no-repeat-ngram-exempt") == "."


def test_s2s_ft_leaves_the_exemption_out_when_it_is_empty(stubs, tmp_path):
    runs = stubbed_run(stubs, tmp_path, "examples/s2s_ft/squad_qg.sh", examples=96, STEPS="7", WARMUP="3")
    train, generate = runs["fairseq-train"], runs["fairseq-generate"]
    assert flag(train, "--max-update") == "7" and flag(train, "--warmup-updates") == "3"
    assert "--no-repeat-ngram-exempt" not in generate
    assert flag(generate, "--beam") == "8" and flag(generate, "--lenpen") == "1.3"
    runs = stubbed_run(stubs, tmp_path / "b", "examples/s2s_ft/xsum.sh", examples=10, NGRAM_EXEMPT="")
    assert "--no-repeat-ngram-exempt" not in runs["fairseq-generate"]
    assert flag(runs["fairseq-generate"], "--lenpen-style") == "gnmt"


@pytest.mark.parametrize(
    "recipe, lenpen", [("examples/palm/cnndm.sh", "0.95"), ("examples/palm/gigaword.sh", "1.0"),
                       ("examples/palm/marco.sh", "1.0")],
)  # fmt: skip
def test_palm_recipes_decode_with_gnmt_length_penalty(stubs, tmp_path, recipe, lenpen):
    """PALM names no length penalty; the recipes pass GNMT's form (this project's choice, docs/recipes.md)."""
    generate = stubbed_run(stubs, tmp_path, recipe, examples=64)["fairseq-generate"]
    assert flag(generate, "--lenpen-style") == "gnmt" and flag(generate, "--lenpen") == lenpen
    generate = stubbed_run(stubs, tmp_path / "b", recipe, examples=64, LENPEN_STYLE="fairseq")[
        "fairseq-generate"
    ]
    assert flag(generate, "--lenpen-style") == "fairseq"


def test_palm_counts_epochs_into_updates_with_a_linear_schedule(stubs, tmp_path):
    runs = stubbed_run(stubs, tmp_path, "examples/palm/marco.sh", examples=1000)
    train = runs["fairseq-train"]
    assert flag(train, "--max-update") == flag(train, "--total-num-update") == str((1000 + 63) // 64 * 10)
    assert flag(train, "--lr-scheduler") == "polynomial_decay" and flag(train, "--lr") == "1e-5"
    assert flag(train, "--warmup-updates") == "10000" and flag(runs["fairseq-generate"], "--beam") == "5"


def test_palm_builds_the_model_its_pretrained_checkpoint_describes(stubs, tmp_path):
    """A palm PRETRAINED gives its own architecture and sizes (ARCH overrides them); what the checkpoint
    importer makes (model_args.txt beside it) initialises the encoder, with the sizes model_args.txt names."""
    import torch

    palm = tmp_path / "palm"
    palm.mkdir()
    sizes = argparse.Namespace(arch="palm_tiny", encoder_layers=3, decoder_layers=1, encoder_embed_dim=32)
    torch.save({"cfg": {"model": sizes}}, palm / "checkpoint_best.pt")
    env = {"PRETRAINED": str(palm / "checkpoint_best.pt"), "PYTHON": sys.executable, "FP16": "0"}
    train = stubbed_run(stubs, tmp_path / "a", "examples/palm/cnndm.sh", examples=64, **env)["fairseq-train"]
    assert (flag(train, "--arch"), flag(train, "--encoder-layers"), flag(train, "--decoder-layers")) == (
        "palm_tiny", "3", "1",
    )  # fmt: skip
    assert flag(train, "--pretrained-checkpoint") == env["PRETRAINED"] and "--pretrained-encoder" not in train
    train = stubbed_run(stubs, tmp_path / "b", "examples/palm/cnndm.sh", examples=64, ARCH="palm_base", **env)
    assert flag(train["fairseq-train"], "--arch") == "palm_base"
    assert "--encoder-layers" not in train["fairseq-train"]
    imported = tmp_path / "imported"
    imported.mkdir()
    (imported / "model.pt").write_bytes(b"")
    (imported / "model_args.txt").write_text(MINILM_ARGS + "\n")
    env["PRETRAINED"] = str(imported / "model.pt")
    train = stubbed_run(stubs, tmp_path / "c", "examples/palm/cnndm.sh", examples=64, **env)["fairseq-train"]
    assert flag(train, "--pretrained-encoder") == env["PRETRAINED"] and "--pretrained-checkpoint" not in train
    assert (flag(train, "--arch"), flag(train, "--encoder-layers"), flag(train, "--encoder-embed-dim")) == (
        "palm_base", "6", "384",
    )  # fmt: skip
    assert "--max-positions" not in train and "--rel-pos-bins" not in train  # unilmv2's own options


@pytest.mark.parametrize("recipe", ["examples/s2s_ft/xsum.sh", "examples/palm/gigaword.sh"])
def test_validation_decodes_as_the_test_set_is_decoded_unless_turned_off(stubs, tmp_path, recipe):
    runs = stubbed_run(stubs, tmp_path / "a", recipe, examples=64)
    train, generate = runs["fairseq-train"], runs["fairseq-generate"]
    settings = json.loads(flag(train, "--eval-rouge-args"))
    for option in ("beam", "lenpen", "min_len", "max_len_a", "max_len_b", "no_repeat_ngram_size"):
        assert float(settings[option]) == float(flag(generate, "--" + option.replace("_", "-"))), option
    assert flag(train, "--lenpen-style") == flag(generate, "--lenpen-style") == "gnmt"
    assert flag(train, "--no-repeat-ngram-exempt") == flag(generate, "--no-repeat-ngram-exempt")
    assert (
        flag(train, "--best-checkpoint-metric") == "rouge_l" and "--maximize-best-checkpoint-metric" in train
    )
    assert flag(train, "--eval-rouge-detok") == ("wordpiece" if "s2s_ft" in recipe else "sentencepiece")
    train = stubbed_run(stubs, tmp_path / "b", recipe, examples=64, EVAL_ROUGE="0")["fairseq-train"]
    assert not [arg for arg in train if arg.startswith("--") and "rouge" in arg] and "rouge_l" not in train


def squad_run(stubs, tmp_path, recipe: str, version: str, **env: str) -> Dict[str, List[str]]:
    """Run a SQuAD recipe on a tiny synthetic set with fairseq-train and predict_squad.py stubbed; the
    arguments each saw."""
    squad = tmp_path / "squad"
    squad.mkdir(parents=True)
    (squad / "dict.txt").write_text("\n".join(vocabulary()) + "\n")
    for split, seed in (("train", 1), ("dev", 2)):
        data = squad_json(10, seed, unanswerable_prob=0.3 if version == "2.0" else 0.0)
        (squad / f"{split}-v{version}.json").write_text(json.dumps(data))
    python = stubs / "python"  # predict_squad.py prints its arguments; everything else runs for real
    python.write_text(
        f'#!/usr/bin/env bash\nif [ "$1" = "{REPO}/scripts/predict_squad.py" ]; then echo predict_squad.py; '
        f'printf "%s\\n" "${{@:2}}"; else exec {sys.executable} "$@"; fi\n'
    )
    python.chmod(0o755)
    environ = clean_environment(PATH=f"{stubs}{os.pathsep}{os.environ['PATH']}", DICT=str(squad / "dict.txt"),
                                PYTHONPATH=REPO, **env)  # fmt: skip
    proc = subprocess.run(
        ["bash", os.path.join(REPO, recipe), str(squad), str(tmp_path / "work")],
        cwd=tmp_path, env=environ, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    train, predict = lines.index("fairseq-train"), lines.index("predict_squad.py")
    return {"fairseq-train": lines[train + 1 : predict], "predict_squad.py": lines[predict + 1 :]}


def test_squad_v2_uses_the_answerability_classifier(stubs, tmp_path):
    # UniLMv2 §4.2: the classifier on [SOS] decides "no answer" for SQuAD v2.0
    runs = squad_run(stubs, tmp_path / "a", "examples/squad/squad_v2.sh", "2.0")
    train, predict = runs["fairseq-train"], runs["predict_squad.py"]
    assert "--answerability-head" in train and flag(train, "--answerability-weight") == "1.0"
    assert "--version-2-with-negative" in predict and flag(predict, "--answerability-threshold") == "0.5"
    assert flag(predict, "--no-answer-prob-output").endswith("no_answer_probs.json")
    # ANSWERABILITY_HEAD=0: BERT's null-span rule
    runs = squad_run(stubs, tmp_path / "b", "examples/squad/squad_v2.sh", "2.0", ANSWERABILITY_HEAD="0")
    train, predict = runs["fairseq-train"], runs["predict_squad.py"]
    assert "--answerability-head" not in train and "--answerability-threshold" not in predict
    assert "--version-2-with-negative" in predict and flag(predict, "--null-score-diff-threshold") == "0.0"
    # v1.1 has no unanswerable questions: no classifier, and always a span
    runs = squad_run(stubs, tmp_path / "c", "examples/squad/squad_v1.sh", "1.1")
    assert "--answerability-head" not in runs["fairseq-train"]
    assert "--version-2-with-negative" not in runs["predict_squad.py"]


def test_palm_pretraining_passes_the_limits_the_encoder_init_and_the_stage2_loss(stubs, tmp_path):
    """pretrain_base.sh: PALM §2.2/§3.1's 400/100 limits in both stages, the converted RoBERTa for stage 1
    (§3.1), and stage 2 without the extra MLM term (§2.2)."""
    path = f"{stubs}{os.pathsep}{os.environ['PATH']}"
    environ = clean_environment(PATH=path, PRETRAINED_ENCODER="roberta/model.pt")
    proc = subprocess.run(
        ["bash", os.path.join(REPO, "examples/palm/pretrain_base.sh"), "bin", str(tmp_path / "save")],
        cwd=tmp_path, env=environ, capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    runs = proc.stdout.split("fairseq-train\n")[1:]
    assert len(runs) == 2
    stage1, stage2 = (run.splitlines() for run in runs)
    for args in (stage1, stage2):
        assert (
            flag(args, "--max-context-tokens") == "400" and flag(args, "--max-continuation-tokens") == "100"
        )
        assert flag(args, "--max-fragment-tokens") == "500" and flag(args, "--ddp-backend") == "legacy_ddp"
    assert flag(stage1, "--stage") == "1" and flag(stage1, "--pretrained-encoder") == "roberta/model.pt"
    assert flag(stage2, "--stage") == "2" and flag(stage2, "--mlm-weight") == "0"
    assert "--pretrained-encoder" not in stage2  # stage 2 takes its encoder from stage 1
    environ.pop("PRETRAINED_ENCODER")
    proc = subprocess.run(
        ["bash", os.path.join(REPO, "examples/palm/pretrain_base.sh"), "bin", str(tmp_path / "save")],
        cwd=tmp_path, env=environ, capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert proc.returncode == 0 and "--pretrained-encoder" not in proc.stdout, proc.stderr


# ------------------------------------------------------------------- fairseq-hydra-train configs

# each YAML config, the recipe whose fairseq-train command it restates (the n-th run of it) and the GPUs
# that command is for (the YAML's distributed_world_size)
CONFIGS = {
    "examples/s2s_ft/config/cnndm.yaml": ("examples/s2s_ft/cnndm.sh", 0, 1),
    "examples/s2s_ft/config/xsum.yaml": ("examples/s2s_ft/xsum.sh", 0, 1),
    "examples/s2s_ft/config/gigaword.yaml": ("examples/s2s_ft/gigaword.sh", 0, 1),
    "examples/s2s_ft/config/squad_qg.yaml": ("examples/s2s_ft/squad_qg.sh", 0, 1),
    "examples/s2s_ft/config/finetune.yaml": ("examples/s2s_ft/finetune.sh", 0, 1),
    "examples/unilmv2_pretrain/config/pretrain_base.yaml": (
        "examples/unilmv2_pretrain/pretrain_base.sh",
        0,
        8,
    ),
    "examples/palm/config/cnndm.yaml": ("examples/palm/cnndm.sh", 0, 1),
    "examples/palm/config/gigaword.yaml": ("examples/palm/gigaword.sh", 0, 1),
    "examples/palm/config/marco.yaml": ("examples/palm/marco.sh", 0, 1),
    "examples/unilm_v1_pretrain/config/pretrain_large.yaml": (
        "examples/unilm_v1_pretrain/pretrain_large.sh",
        0,
        8,
    ),
    "examples/palm/config/pretrain_stage1.yaml": ("examples/palm/pretrain_base.sh", 0, 16),
    "examples/palm/config/pretrain_stage2.yaml": ("examples/palm/pretrain_base.sh", 1, 16),
    **{
        f"examples/squad/config/squad_v{version}{paper}.yaml": (f"examples/squad/squad_v{version}.sh", 0, 1)
        for version in ("1", "2")
        for paper in ("", "_unilm_v1")
    },
    **{
        f"examples/glue/config/glue_{paper}.yaml": ("examples/glue/glue.sh", 0, 1)
        for paper in ("unilmv2", "unilm_v1")
    },
}
# the environment a config's recipe runs in (SQuAD's UniLM v1 configs: a unilm_v1 architecture)
CONFIG_ENV = {
    f"examples/squad/config/squad_v{version}_unilm_v1.yaml": {"ARCH": "unilm_v1_large"}
    for version in ("1", "2")
}
CONFIG_ENV["examples/glue/config/glue_unilm_v1.yaml"] = {"MODEL_ARGS": "--arch unilm_v1_base"}
# paths and files: given on the command line (the YAML leaves them ??? or null)
PATH_FLAGS = {"user-dir", "save-dir", "pretrained-checkpoint", "stage1-checkpoint", "pretrained-encoder"}
PATH_KEYS = {"common.user_dir", "task.data", "checkpoint.save_dir", "task.pretrained_checkpoint",
             "task.stage1_checkpoint", "task.pretrained_encoder"}  # fmt: skip
# values a YAML takes from the environment (${oc.env:NAME}: an error when unset), under the recipes' names:
# what the recipes count from the prepared data (epochs into updates), and checkpoints to start from
ENV_KEYS = {
    "STEPS": "optimization.max_update",
    "WARMUP": "lr_scheduler.warmup_updates",
    "PRETRAINED": "task.pretrained_checkpoint",
    "STAGE1_CHECKPOINT": "task.stage1_checkpoint",
}
ENV_VALUE = re.compile(r"^\$\{oc\.env:([A-Z0-9_]+)\}$")
# flags that pick a registry entry: its _name
NAME_FLAGS = {"task": "task", "arch": "model", "criterion": "criterion", "optimizer": "optimizer",
              "lr-scheduler": "lr_scheduler"}  # fmt: skip
SECTIONS = ("common", "task", "model", "criterion", "optimizer", "lr_scheduler", "optimization", "dataset",
            "distributed_training", "checkpoint")  # fmt: skip
YAML_LINE = re.compile(r"^\s*([a-z_]+):\s*(.*?)\s*(?:#\s*(.*))?$")


# what scripts/convert_hf_checkpoint.py writes to model_args.txt for finetune.sh's default MiniLM
MINILM_ARGS = (
    "--arch unilmv2_base --encoder-layers 6 --encoder-embed-dim 384 --token-embed-dim 0 "
    "--encoder-ffn-embed-dim 1536 --encoder-attention-heads 12 --activation-fn gelu --max-positions 512 "
    "--num-segments 2 --rel-pos-bins 0 --max-rel-pos 0 --layernorm-eps 1e-12"
)


def train_commands(stubs, tmp_path, recipe: str, gpus: int) -> List[List[str]]:
    """The arguments of every fairseq-train run of a recipe (1,000 prepared training pairs), stubbed."""
    work = tmp_path / "work"
    (work / "text").mkdir(parents=True)
    (work / "text" / "train.src").write_text("a b c\n" * 1000)
    (work / "text" / "train.tgt").write_text("a b\n" * 1000)  # finetune.sh's MAX_TGT follows their lengths
    environ = clean_environment(PATH=f"{stubs}{os.pathsep}{os.environ['PATH']}", STAGES="train")
    environ["GPUS"] = str(gpus)
    environ["FP16"] = "1"  # the configs are the GPU runs; without CUDA the s2s-ft recipes default to FP16=0
    if recipe.endswith("finetune.sh"):  # raw pairs and a converted model with its model_args.txt
        for name in ("train.src", "train.tgt", "valid.src", "valid.tgt", "test.src", "test.tgt"):
            (tmp_path / "bin").mkdir(exist_ok=True)
            (tmp_path / "bin" / name).write_text("a b c\n")
        (tmp_path / "minilm").mkdir()
        (tmp_path / "minilm" / "model_args.txt").write_text(MINILM_ARGS + "\n")
        (tmp_path / "minilm" / "model.pt").write_bytes(b"")  # finetune.sh checks that it exists,
        (tmp_path / "minilm" / "dict.txt").write_text("[PAD]\n")  # with its dictionary beside it
        environ.update(PRETRAINED=str(tmp_path / "minilm" / "model.pt"), CPU="1")
    proc = subprocess.run(
        ["bash", os.path.join(REPO, recipe), str(tmp_path / "bin"), str(work)],
        cwd=tmp_path, env=environ, capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    output = proc.stdout
    if (work / "logs" / "train.log").exists():  # finetune.sh keeps fairseq-train's whole output there
        output += (work / "logs" / "train.log").read_text()
    runs = output.split("fairseq-train\n")[1:]
    assert runs, output
    return [run.splitlines() for run in runs]


def glue_train_command(tmp_path, env: Dict[str, str]) -> List[str]:
    """The arguments of glue.sh's fairseq-train run on RTE, through tests/helpers/recipe_stubs.py."""
    from ..helpers.recipe_stubs import Scenario, glue_raw, run_scenario

    files = {"glue/x": "", **glue_raw("input0", "input1", "label")}
    (tmp_path / "glue").mkdir()
    log = run_scenario(Scenario("examples/glue/glue.sh", "", ("RTE", "{TMP}/glue", "{TMP}/work"), env, files),
                       str(tmp_path / "glue"))  # fmt: skip
    train = [line for line in log.splitlines() if line.startswith("fairseq-train ")]
    assert len(train) == 1, log
    return shlex.split(train[0])[1:]


def command_config(argv: List[str]):
    """fairseq's config for a fairseq-train command line (the plugin from this checkout)."""
    from fairseq import options
    from fairseq.dataclass.utils import convert_namespace_to_omegaconf

    argv = list(argv)
    argv[argv.index("--user-dir") + 1] = os.path.join(REPO, "unilm_fairseq")
    args = options.parse_args_and_arch(options.get_training_parser(), argv)
    return convert_namespace_to_omegaconf(args)


def normalized(value):
    """Values as both sides write them: "(0.9, 0.999)" and [0.9, 0.999], 1e-6 and "1e-6", enums."""
    from enum import Enum

    from omegaconf import ListConfig

    if isinstance(value, Enum):
        value = value.value
    if isinstance(value, str):
        try:
            value = ast.literal_eval(value)
        except (ValueError, SyntaxError):
            return value
    if isinstance(value, (list, tuple, ListConfig)):
        return [normalized(v) for v in value]
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return float(value)
    return value


def command_value(cfg, path: str):
    """The value at ``path`` of a command's config, and whether it has one of its own (not absent, not an
    interpolation of another). A legacy model's or optimizer's section (palm, adamax) is the argparse
    namespace of every option: only its own options count there."""
    from fairseq.models import ARCH_MODEL_REGISTRY
    from fairseq.registry import REGISTRIES
    from omegaconf import OmegaConf

    section, key = path.split(".", 1)
    node = cfg[section]
    if isinstance(node, argparse.Namespace):
        parser = argparse.ArgumentParser(argument_default=argparse.SUPPRESS)
        if section == "model":
            ARCH_MODEL_REGISTRY[node.arch].add_args(parser)
        else:  # a legacy optimizer (adamax) or the like: its own options
            REGISTRIES[section]["registry"][getattr(node, section)].add_args(parser)
        own = {action.dest for action in parser._actions} | {"_name"}
        return getattr(node, key, None), key in own
    if node is None or key not in node:
        return None, False
    return OmegaConf.select(cfg, path), not OmegaConf.is_interpolation(node, key)


def copied_from(cfg, section: str, key: str) -> Optional[str]:
    """The option a section's fairseq dataclass copies this one from by default (``II(...)``: ``optimizer.lr``
    from ``optimization.lr``), or None."""
    from fairseq.dataclass.configs import FairseqConfig
    from fairseq.models import ARCH_MODEL_REGISTRY
    from fairseq.registry import REGISTRIES
    from fairseq.tasks import TASK_DATACLASS_REGISTRY

    name = getattr(cfg[section], "_name", None)
    if section == "task":
        dataclass = TASK_DATACLASS_REGISTRY.get(name)
    elif section == "model":
        dataclass = getattr(ARCH_MODEL_REGISTRY.get(name), "__dataclass", None)
    elif section in REGISTRIES:
        dataclass = REGISTRIES[section]["dataclass_registry"].get(name)
    else:
        dataclass = FairseqConfig.__dataclass_fields__[section].type
    field = getattr(dataclass, "__dataclass_fields__", {}).get(key)
    default = field.default if field is not None else None
    match = re.fullmatch(r"\$\{([\w.]+)\}", default) if isinstance(default, str) else None
    return match.group(1) if match else None


def leaves(tree, prefix=""):
    for key, value in tree.items():
        if isinstance(value, dict):
            yield from leaves(value, f"{prefix}{key}.")
        else:
            yield f"{prefix}{key}", value


def test_every_recipe_config_is_checked():
    found = {
        os.path.relpath(p, REPO) for p in glob.glob(os.path.join(REPO, "examples", "*", "config", "*.yaml"))
    }
    assert found == set(CONFIGS)


@pytest.mark.parametrize("config", sorted(CONFIGS))
def test_config_restates_its_recipe(stubs, tmp_path, monkeypatch, config):
    """Every value the YAML sets is the recipe's fairseq-train command's, and every option that command
    passes is set in the YAML (in each section fairseq keeps it), paths aside. The updates the recipe counts
    from the data come from the environment, set here to the recipe's count."""
    from omegaconf import OmegaConf

    recipe, run, gpus = CONFIGS[config]
    if recipe.startswith("examples/squad/"):
        version = "2.0" if recipe.endswith("v2.sh") else "1.1"
        argv = squad_run(stubs, tmp_path, recipe, version, **CONFIG_ENV.get(config, {}))["fairseq-train"]
    elif recipe == "examples/glue/glue.sh":
        argv = glue_train_command(tmp_path, CONFIG_ENV.get(config, {}))
    else:
        argv = train_commands(stubs, tmp_path, recipe, gpus)[run]
    cfg = command_config(argv)
    yaml = OmegaConf.load(os.path.join(REPO, config))
    hydra = OmegaConf.to_container(yaml.hydra)  # the log beside the checkpoints, the working directory kept
    assert hydra["job"]["chdir"] is False and hydra["run"]["dir"] == "${checkpoint.save_dir}"
    assert yaml.common.user_dir == "unilm_fairseq"  # relative to the repository root
    del yaml["hydra"]
    raw = dict(leaves(OmegaConf.to_container(yaml)))
    # fairseq merges a section into its dataclass, where ??? keeps the default (max_update 0: no end):
    # only task.data, whose default is missing too, may be left ???
    assert [path for path, value in raw.items() if value == "???"] == ["task.data"], config
    for path, value in raw.items():
        env = ENV_VALUE.match(str(value))
        if env:
            assert ENV_KEYS.get(env.group(1)) == path, f"{config}: {path} from ${env.group(1)}"
            monkeypatch.setenv(env.group(1), str(command_value(cfg, path)[0]))
    values = dict(leaves(OmegaConf.to_container(yaml, resolve=True)))
    for path, value in values.items():
        if path in PATH_KEYS or path == "distributed_training.distributed_world_size":
            continue
        if path.startswith("generation."):  # the test decoding, which --eval-rouge-args carries
            continue
        theirs, own = command_value(cfg, path)
        if not own and path.endswith(".lr") and raw[path] == "${optimization.lr}":
            continue  # the copy a legacy optimizer (adamax) reads from its own section under Hydra
        assert own, f"{config}: {path} is not an option of the recipe's fairseq-train command"
        assert normalized(value) == normalized(theirs), (
            f"{config}: {path} = {value!r}, the recipe: {theirs!r}"
        )
    assert values["distributed_training.distributed_world_size"] == gpus
    for flag in (token[2:] for token in argv if token.startswith("--")):
        if flag in PATH_FLAGS:
            continue
        if flag in NAME_FLAGS:
            assert f"{NAME_FLAGS[flag]}._name" in values, f"{config}: no {NAME_FLAGS[flag]}._name"
            continue
        key = flag.replace("-", "_")
        places = [f"{s}.{key}" for s in SECTIONS if command_value(cfg, f"{s}.{key}")[1]]
        assert places, f"{config}: --{flag} has no place in fairseq's config"
        for path in places:
            if path in values:
                continue
            source = copied_from(cfg, *path.split(".", 1))  # the YAML may leave a copy to its default
            assert source, f"{config}: the recipe passes --{flag}, the YAML does not set {path}"
            theirs = normalized(command_value(cfg, path)[0])
            assert normalized(values.get(source)) == theirs, f"{config}: {path} (= {source}) != --{flag}"


@pytest.mark.parametrize("config", sorted(CONFIGS))
def test_every_config_hyperparameter_names_its_source(config):
    """Its comment cites, or the annotation above it does; a copy of another setting (``${model.dropout}``)
    is that setting's."""
    hyper_keys = {flag.replace("-", "_") for flag in HYPER_FLAGS}
    unsourced = []
    above = ""
    for line in read(config).splitlines():
        match = YAML_LINE.match(line)
        if match and match.group(1) in hyper_keys and match.group(2):
            copy = re.fullmatch(r"\$\{[a-z_.]+\}", match.group(2))
            cited = CITATION.search(match.group(3) or "") or CITATION.search(above.split("|")[-1])
            if not (copy or (cited and (match.group(3) or above.startswith("#:")))):
                unsourced.append(line.strip())
        above = line.strip()
    assert not unsourced, f"{config}: settings whose comment names no table or section: {unsourced}"


def test_no_script_hides_lines_of_fairseq_output():
    """Nothing fairseq says is thrown away: a recipe shows it as it is, or keeps all of it in a log file and
    shows a documented selection (finetune.sh's `tee LOG | grep`). A `grep -v` that drops lines, like the old
    `grep -v tensorboard`, hides what fairseq says; so does a selecting grep with no `tee` before it."""
    scripts = glob.glob(os.path.join(REPO, "examples", "**", "*.sh"), recursive=True)
    scripts += glob.glob(os.path.join(REPO, "scripts", "*.sh"))
    hiding = [
        f"{os.path.relpath(path, REPO)}:{number}"
        for path in scripts
        for number, line in enumerate(read(path).splitlines(), 1)
        if re.search(r"\|\s*grep\s+(-\w*v|--invert-match)", line)
        or (re.search(r"\|\s*\{?\s*grep\s+--line-buffered", line) and not re.search(r"\btee\b", line))
    ]
    assert scripts and not hiding, hiding


def test_a_quiet_steps_console_lines_drop_the_logging_prefix(tmp_path):
    """run_step with QUIET_LOGS: the heartbeat shows the log's last line and step_summary its summary lines,
    each without the logging prefix (fairseq's commands write "INFO:name:" or "date | INFO | name | ")."""
    step = (
        "echo '2026-11-28 21:01:08 | INFO | fairseq_cli.generate | 300 sentences written' >&2; "
        "echo 'INFO:fairseq.logging.progress_bar::      3 / 11 wps=181' >&2; sleep 3"
    )
    script = (
        f". examples/common/seq2seq_stages.sh; QUIET_LOGS={tmp_path}; HEARTBEAT_S=1; "
        f'run_step demo bash -c "$1"; step_summary demo "sentences written"'
    )
    proc = subprocess.run(["bash", "-c", script, "script", step], cwd=REPO, env=clean_environment(),
                          capture_output=True, text=True, timeout=60)  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    beats = [line for line in proc.stdout.splitlines() if line.startswith("   ... ")]
    assert beats and all(re.fullmatch(r"   \.\.\. \d+ s: 3 / 11 wps=181", b) for b in beats)
    assert proc.stdout.splitlines()[-1] == "   300 sentences written"


def _quiet_training(tmp_path, lines, *flags):
    """run_train_step (QUIET_LOGS set) on a stand-in for fairseq-train that prints LINES and ignores FLAGS."""
    stub = tmp_path / "fake-train"
    stub.write_text("#!/bin/sh\n" + "".join(f"echo '{line}'\n" for line in lines))
    stub.chmod(0o755)
    script = f'. examples/common/seq2seq_stages.sh; QUIET_LOGS={tmp_path}/logs; run_train_step "$@"'
    proc = subprocess.run(["bash", "-c", script, "script", str(stub), "bin", *flags], cwd=REPO,
                          env=clean_environment(), capture_output=True, text=True, timeout=60)  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    return proc.stdout.splitlines()


INNER = "INFO | train_inner | epoch 001: loss=6.04, num_updates={}, train_wall={}, wall={}"


def test_a_quiet_training_says_once_when_its_budget_ends(tmp_path):
    """A minute into training the console gets one line: the rest of the budget (the last --max-update, as
    fairseq reads it) at the pace so far, fairseq's wall clock over its update count; 20 updates in 80 s of
    1,000 leave 980 x 4 s = 65 min. Lines before the minute give no estimate, and no line repeats it."""
    lines = [INNER.format(10, 29, 30), INNER.format(20, 79, 80), INNER.format(30, 119, 120)]
    console = _quiet_training(tmp_path, lines, "--max-update", "100", "--max-update", "1000")
    assert console[:2] == lines[:2] and console[3] == lines[2], console
    assert re.fullmatch(r"   \.\.\. 20 updates in 80 s: at this pace the 1000 updates end in about 1 h 5 min "
                        r"\(about \d\d:\d\d\)", console[2]), console  # fmt: skip
    assert len(console) == 4
    with open(tmp_path / "logs" / "train.log") as log:
        assert log.read().splitlines() == lines  # the log holds what the command printed, nothing added


def test_the_estimate_names_a_time_limit_that_ends_training_first(tmp_path):
    """With --stop-time-hours shorter than the budget's rest, the line says both; a limit already reached
    (or a rest under a minute) says nothing, and so does a budget given with '=' once its rest is short."""
    lines = [INNER.format(20, 79, 80)]
    console = _quiet_training(tmp_path, lines, "--max-update=1000", "--stop-time-hours", "0.5")
    assert re.fullmatch(r"   \.\.\. 20 updates in 80 s: at this pace the 1000 updates would take 1 h 5 min "
                        r"more; the time limit \(--stop-time-hours 0\.5\) stops training in about 29 min "
                        r"\(about \d\d:\d\d\)", console[1]), console  # fmt: skip
    assert _quiet_training(tmp_path, lines, "--max-update", "1000", "--stop-time-hours=0.01") == lines
    assert _quiet_training(tmp_path, lines, "--max-update=30") == lines  # 10 x 4 s left
    assert _quiet_training(tmp_path, lines) == lines  # no budget given
