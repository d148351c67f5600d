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
import os
import shlex
import subprocess

import pytest

from ..helpers.cli import REPO
from ..helpers.recipe_stubs import (
    Files,
    Scenario,
    glue_raw,
    run_scenario,
    run_scenario_process,
    run_scenario_with_console,
)

GOLDEN = os.path.join(REPO, "tests", "fixtures", "recipe_commands")
UPDATE = os.environ.get("RECIPE_COMMANDS_UPDATE") == "1"

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


def finetune_outputs(work: str) -> Files:
    """What examples/s2s_ft/finetune.sh's stubbed stages would leave in WORK: the tokenized pairs, the
    binarized dictionaries and the checkpoint its generate stage decodes (then it writes the model folder)."""
    return {
        **text_pairs(f"{work}/text", 100),
        f"{work}/bin/dict.src.txt": "[PAD] 1\n",
        f"{work}/checkpoints/checkpoint_best.pt": "",
    }


FINETUNE_FILES = {
    **text_pairs("data", 100),
    **model_folder("work/model"),
    "hf/config.json": "{}",
    **finetune_outputs("work"),
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


# fmt: off
# domain-adaptive pre-training from the main job's start, AE only: the shipped weights are unpacked onto the
# converted MiniLM before pre-training, and fine-tuning starts from the result
CONTINUE_PMLM_FROM_CONTINUED = Scenario(
    "examples/aclsum/continue_pmlm.sh",
    "continued",
    ("{TMP}/work",),
    {"CPU": "1", "MODEL_DIR": "{TMP}/hf", "START": "continued", "PMLM_OBJECTIVES": "ae",
     "PMLM_UPDATES": "400"},
    {**model_folder("work/model"), **text_pairs("work/data", 100), **finetune_outputs("work/run")},
)

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
    Scenario("examples/s2s_ft/finetune.sh", "continued", ("{TMP}/data", "{TMP}/work"),
             {"CPU": "1", "MODEL_DIR": "{TMP}/hf", "START": "continued"}, FINETUNE_FILES),
    Scenario("examples/s2s_ft/finetune.sh", "overrides", ("{TMP}/data", "{TMP}/work", *EXTRA),
             {"CPU": "0", "PRETRAINED": "{TMP}/minilm/model.pt", "METHOD": "masked", "UPDATES": "40",
              "EVAL_ROUGE": "1", "MINUTES": "5", "INIT": "random", "CKPT": "last", "BATCH": "4",
              "FRESH": "1", "BOOTSTRAP": "0"},
             {**FINETUNE_FILES, **model_folder("minilm"), "data/test.lead.hyp": 10,
              "data/test.bart.hyp": 10}),
    # the best setting scripts/tune_decoding.py wrote (a stand-in) decodes the test set and the model folder
    Scenario("examples/s2s_ft/finetune.sh", "tune", ("{TMP}/data", "{TMP}/work"),
             {"CPU": "1", "MODEL_DIR": "{TMP}/hf", "TUNE": "1", "TUNE_GRID": "--lenpen 0.6,1.3 --min-len 3,5",
              "STAGES": "generate"},
             {**FINETUNE_FILES, "work/tuned-settings.txt": "BEAM=4\nLENPEN=1.3\nMIN_LEN=5\nMAX_LEN_B=40\n"
              "NO_REPEAT_NGRAM_SIZE=2\n"}),
    Scenario("examples/s2s_ft/finetune.sh", "rows", ("{TMP}/rows.jsonl", "{TMP}/work"),
             {"CPU": "1", "MODEL_DIR": "{TMP}/hf", "SOURCE_FIELD": "document", "TARGET_FIELD": "summary",
              "MIN_LEN": "3", "STAGES": "tokenize,binarize,train,generate,score"},
             {"rows.jsonl": "{}\n", **text_pairs("work/data", 100), **model_folder("work/model"),
              **finetune_outputs("work")}),
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
             {"DICT": "{TMP}/squad/dict.txt"}, {"squad/v1.1": ""}),
    Scenario("examples/squad/squad_v2.sh", "", ("{TMP}/squad", "{TMP}/work", *EXTRA),
             {"DICT": "{TMP}/squad/dict.txt", "GPUS": "2", "PRETRAINED": "{TMP}/minilm/model.pt"},
             {"squad/v2.0": ""}),
    Scenario("examples/squad/squad_v2.sh", "null_rule", ("{TMP}/squad", "{TMP}/work"),
             {"DICT": "{TMP}/squad/dict.txt", "ANSWERABILITY_HEAD": "0", "ARCH": "unilm_v1_large"},
             {"squad/v2.0": ""}),
    Scenario("examples/squad/finetune.sh", "", ("{TMP}/squad", "{TMP}/work"),
             {"MODEL": "{TMP}/minilm", "DICT": "{TMP}/squad/dict.txt", "MAX_SEQ_LENGTH": "128",
              "DOC_STRIDE": "32", "TOTAL_BATCH": "8", "EPOCHS": "2", "LR": "3e-5"},
             {"squad/v1.1": "", **model_folder("minilm")}),
    Scenario("examples/glue/glue.sh", "RTE", ("RTE", "{TMP}/glue", "{TMP}/work"), {},
             {"glue/x": "", **glue_raw("input0", "input1", "label")}),
    Scenario("examples/glue/glue.sh", "STS-B", ("STS-B", "{TMP}/glue", "{TMP}/work", *EXTRA),
             {"MODEL_ARGS": "--arch unilm_v1_base", "CPU": "--cpu", "PRETRAINED": "{TMP}/m.pt",
              "DICT": "{TMP}/d.txt", "WORDPIECE": "{TMP}/vocab.txt", "LOWERCASE": "1"},
             {"glue/x": "", **glue_raw("input0", "input1", "label")}),
    Scenario("examples/glue/glue.sh", "CoLA", ("CoLA", "{TMP}/glue", "{TMP}/work"),
             {"SPM": "{TMP}/spm.model", "LOWERCASE": "0"}, {"glue/x": "", **glue_raw("input0", "label")}),
    # ---------------------------------------------------------- ACLSum (pip install aclsum: a stand-in)
    # MODEL_DIR stands in for the installed MiniLM; START=continued keeps the default start's commands
    Scenario("examples/aclsum/demo.sh", "", ("{TMP}/work",),
             {"CPU": "1", "MODEL_DIR": "{TMP}/hf", "START": "continued"},
             {**text_pairs("work/data", 100), **model_folder("work/run/model"),
              **finetune_outputs("work/run")}),
    Scenario("examples/aclsum/demo.sh", "released", ("{TMP}/work", *EXTRA),
             {"CPU": "1", "MODEL_DIR": "{TMP}/hf", "START": "released", "TEST_PAIRS": "3", "MAX_SRC": "128"},
             {**text_pairs("work/data", 100), **model_folder("work/run/model"),
              **finetune_outputs("work/run")}),
    Scenario("examples/aclsum/demo.sh", "joined", ("{TMP}/work",),
             {"CPU": "1", "MODEL_DIR": "{TMP}/hf", "START": "continued", "JOINED": "1"},
             {**text_pairs("work/data", 100), **model_folder("work/run/model"),
              **finetune_outputs("work/run")}),
    Scenario("examples/aclsum/seeds.sh", "", ("{TMP}/work", "1", "2"),
             {"CPU": "1", "MODEL_DIR": "{TMP}/hf", "START": "continued"},
             {name: content for seed in (1, 2) for name, content in
              {**text_pairs(f"work/seed{seed}/data", 100), **model_folder(f"work/seed{seed}/run/model"),
               **finetune_outputs(f"work/seed{seed}/run")}.items()}),
    Scenario("examples/aclsum/continue_pmlm.sh", "", ("{TMP}/work", *EXTRA),
             {"CPU": "1", "MODEL_DIR": "{TMP}/hf"},
             {**model_folder("work/model"), **text_pairs("work/data", 100), **finetune_outputs("work/run")}),
    CONTINUE_PMLM_FROM_CONTINUED,
    Scenario("examples/aclsum/run_all.sh", "", ("{TMP}/work",), {"CPU": "1", "MODEL_DIR": "{TMP}/hf"},
             {**text_pairs("work/data", 100),  # prepared already: the prepare step is skipped
              **{name: content for row in ACLSUM_ROWS for name, content in
                 {**model_folder(f"work/{row}/model"), **finetune_outputs(f"work/{row}")}.items()},
              **model_folder("work/pmlm/model"), **text_pairs("work/pmlm/data", 100),
              **finetune_outputs("work/pmlm/run")}),
    # the PAR-only arm (PAR_ONLY=1) would run beside the fine-tuning jobs, in no fixed order: left out
    Scenario("examples/aclsum/pretraining_ablation.sh", "", ("{TMP}/corpus", "{TMP}/work"),
             {"CPU": "1", "DECODE_CPU": "1", "MODEL_DIR": "{TMP}/hf", "PAR_ONLY": "0", "DATASETS": "aclsum",
              "DATA": "{TMP}/data", "FT_UPDATES": "20"},
             {**text_pairs("data", 100), **model_folder("work/model"), "corpus/valid.idx": "",
              **{name: content for row in ("minilm", "ae+par-last", "ae-last", "ae-u10")
                 for name, content in finetune_outputs(f"work/finetune/aclsum-{row}").items()}}),
]
# fmt: on

# recipes that run no fairseq command on their own, or cannot run with stubs; the reason
SKIPPED_RECIPES = {
    "examples/s2s_ft/pipeline.sh": "sourced by the s2s-ft recipes (their scenarios run it)",
    "examples/palm/pipeline.sh": "sourced by the PALM recipes (their scenarios run it)",
    "examples/common/pairs.sh": "shared functions, sourced",
    "examples/common/seq2seq_stages.sh": "the s2s-ft and PALM pipelines' shared stages, sourced",
    "examples/common/training_console.sh": "the console's time estimate, sourced (test_recipes.py runs it)",
    "examples/aclsum/common.sh": "shared functions, sourced",
}


def scenario_id(scenario: Scenario) -> str:
    base = scenario.recipe.replace("/", "__")[: -len(".sh")]
    return f"{base}.{scenario.name}" if scenario.name else base


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


def test_domain_adaptive_pretraining_prints_the_held_out_measures_before_and_after(tmp_path):
    _, console = run_scenario_with_console(CONTINUE_PMLM_FROM_CONTINUED, str(tmp_path))
    assert "== held-out AE / PAR loss of the continued MiniLM" in console
    assert "--objectives ae, 400 updates of 16" in console
    # each measure read by its name from the validation line, whatever the order the criterion logs them in
    for when in ("before", "after"):
        assert f"{when:7} ae_loss 1.1 par_loss 1.3 ae_acc 1.2 par_acc 1.4" in console, console[-1500:]
    assert_commands_shown_as_shell(console, tmp_path / "work" / "commands.sh", "fairseq-train")
    # the pre-training steps are quiet as the main job's: their output in WORK/logs, not on the console
    logs = sorted(os.listdir(tmp_path / "work" / "logs"))
    steps = "binarize convert prepare tokenize train unpack validate-after validate-before".split()
    assert logs == [f"{step}.log" for step in steps]
    lines = console.splitlines()
    first, last = "== pairs and pre-training text", "== held-out AE / PAR loss of the continued MiniLM"
    # the stand-in commands' output went to the logs
    assert lines[lines.index(first) + 1 : lines.index(last)] == []
    assert "stub pairs" in (tmp_path / "work" / "logs" / "prepare.log").read_text()
    assert lines[-1].startswith(
        f"== full logs of the pre-training steps: {tmp_path}/work/logs/ (binarize.log"
    )


def test_continued_pretraining_shows_each_arms_command_and_training_lines(tmp_path):
    """fairseq-train's whole output goes to ARM/train.log; the console gets each arm's command and its
    training, validation and closing lines as they come, not the rest."""
    recipe = "examples/unilmv2_pretrain/continue_pretraining.sh"
    scenario = next(s for s in SCENARIOS if s.recipe == recipe and s.name == "defaults")
    _, console = run_scenario_with_console(scenario, str(tmp_path))
    lines = console.splitlines()
    assert [line.split()[:3] for line in lines if line.startswith("+ fairseq-train ")] == [
        ["+", "fairseq-train", f"{tmp_path}/corpus"]
    ] * 2, console  # the two arms, ae,par and ae
    assert sum(line.startswith("stub | done training in 1.0 seconds") for line in lines) == 2, console
    log = (tmp_path / "work" / "ae" / "train.log").read_text()
    assert "done training in 1.0 seconds" in log and "H-0\t-0.1\tstub" in log
    assert "H-0" not in console
    assert_commands_shown_as_shell(console, tmp_path / "work" / "commands.sh", "fairseq-train")


def test_continued_pretraining_without_the_equal_updates_checkpoint_goes_on(tmp_path):
    """The second arm stopped before the first arm's updates (its time ran out, or --save-interval-updates
    never hit that number): no equal_updates row, said so, and the last row and the curves as usual. The
    script used to stop there without a word (an ls with no match, under pipefail)."""
    recipe = "examples/unilmv2_pretrain/continue_pretraining.sh"
    base = next(s for s in SCENARIOS if s.recipe == recipe and s.name == "defaults")
    scenario = base._replace(args=(*base.args, "--save-interval-updates", "7"))  # the stub saves _1_7.pt only
    proc = run_scenario_process(scenario, str(tmp_path))
    assert proc.returncode == 0, proc.stderr
    assert "no checkpoint at update 10: no equal_updates row for ae" in proc.stdout
    rows = (tmp_path / "work" / "summary.tsv").read_text().splitlines()
    assert [row.split("\t")[:2] for row in rows[1:]] == [
        ["start", "before"],
        ["ae,par", "last"],
        ["ae", "last"],
    ]


def test_continued_pretraining_stops_at_a_failed_validation(tmp_path):
    """A fairseq-validate that fails (out of memory, a wrong dictionary) stops the run with its log's end,
    before any training; it used to leave an empty row and train on for hours."""
    recipe = "examples/unilmv2_pretrain/continue_pretraining.sh"
    scenario = next(s for s in SCENARIOS if s.recipe == recipe and s.name == "defaults")
    failing = {"fairseq-validate": "echo 'RuntimeError: CUDA out of memory'\nexit 1\n"}
    proc = run_scenario_process(scenario, str(tmp_path), failing)
    assert proc.returncode == 1
    assert "error: fairseq-validate failed on" in proc.stderr and "CUDA out of memory" in proc.stderr
    assert "fairseq-train" not in (tmp_path / "commands.log").read_text()


def test_run_all_names_each_failed_row_and_exits_1(tmp_path):
    """A row whose fine-tuning fails is named with its log; the other rows still run and the table is still
    printed, and the script ends with exit status 1 (sequentially, the first failure used to end it without a
    word; side by side, failures went unnoticed)."""
    scenario = next(s for s in SCENARIOS if s.recipe == "examples/aclsum/run_all.sh")
    failing = {"fairseq-train": "echo 'RuntimeError: out of memory'\nexit 1\n"}
    rows = scenario._replace(args=(*scenario.args, "pseudo_masked-pretrained", "causal-random"))
    proc = run_scenario_process(rows, str(tmp_path), failing)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    for row in ("pseudo_masked-pretrained", "causal-random"):
        assert f"== {row} failed: {tmp_path}/work/{row}/log.txt" in proc.stderr
    assert "error: 2 of 2 rows failed" in proc.stderr


def assert_commands_shown_as_shell(console, record, *programs):
    """The record script (WORK/commands.sh) holds each of the programs' commands, quoted for the shell so
    that running it runs what the recipe ran (the Adam betas' parentheses and space would not survive
    unquoted), and every command the console shows ("+ COMMAND"), in the same order."""
    kept = record.read_text().splitlines()
    assert kept[0] == "#!/usr/bin/env bash"
    recorded = kept[1:]
    subprocess.run(["bash", "-n", str(record)], check=True)
    for program in programs:
        assert any(line.startswith(program + " ") for line in recorded), (program, recorded)
    for line in recorded:
        if line.startswith("fairseq-train "):
            words = shlex.split(line)
            assert words[words.index("--adam-betas") + 1] == "(0.9, 0.98)", line
    shown = [line[2:] for line in console.splitlines() if line.startswith("+ ")]
    assert [line for line in recorded if line in shown] == shown, (shown, recorded)


@pytest.mark.parametrize(
    "setting, message",
    [
        ({"START": "minilm"}, "error: START=minilm must be one of"),
        ({"PMLM_OBJECTIVES": "mlm"}, "error: PMLM_OBJECTIVES=mlm must be one of"),
        ({"PMLM_UPDATES": "0"}, "error: PMLM_UPDATES=0 must be a whole number >= 1"),
        ({"PMLM_BATCH": "16x"}, "error: PMLM_BATCH=16x must be a whole number >= 1"),
        ({"PMLM_LR": "fast"}, "error: PMLM_LR=fast must be a number > 0"),
    ],
)
def test_domain_adaptive_pretraining_refuses_bad_settings_before_any_work(tmp_path, setting, message):
    script = os.path.join(REPO, "examples/aclsum/continue_pmlm.sh")
    env = {**os.environ, **setting}
    result = subprocess.run(["bash", script, str(tmp_path / "work")], env=env, capture_output=True, text=True)
    assert result.returncode == 2 and message in result.stderr, result.stderr
    assert not (tmp_path / "work").exists()


# the shared stages (examples/common/seq2seq_stages.sh) as each sequence-to-sequence pipeline uses them
PIPELINE_DEFAULTS = {
    "examples/s2s_ft/cnndm.sh": ({**DEFAULTS, "PRETRAINED": "{TMP}/minilm/model.pt"}, S2S_FILES),
    "examples/palm/cnndm.sh": ({**DEFAULTS, "PRETRAINED": "{TMP}/minilm/model.pt"}, PALM_FILES),
}


@pytest.mark.parametrize("recipe", sorted(PIPELINE_DEFAULTS))
def test_quiet_logs_keep_each_step_in_its_log_and_change_no_command(tmp_path, recipe):
    env, files = PIPELINE_DEFAULTS[recipe]
    quiet = Scenario(recipe, "defaults", S2S_ARGS, {**env, "QUIET_LOGS": "{TMP}/logs"}, files)
    got = run_scenario(quiet, str(tmp_path))
    with open(os.path.join(GOLDEN, scenario_id(quiet) + ".txt"), encoding="utf-8") as f:
        assert got == f.read()
    steps = {"binarize", "train", "generate"} | ({"prepare"} if "s2s_ft" in recipe else set())
    assert {name[: -len(".log")] for name in os.listdir(tmp_path / "logs")} == steps
    assert "stub | done training in" in (tmp_path / "logs" / "train.log").read_text()


@pytest.mark.parametrize("recipe", sorted(PIPELINE_DEFAULTS))
@pytest.mark.parametrize("ckpt", ["best", "last"])
def test_ckpt_names_best_or_last(tmp_path, recipe, ckpt):
    env, files = PIPELINE_DEFAULTS[recipe]
    commands = run_scenario(Scenario(recipe, "", S2S_ARGS, {**env, "CKPT": ckpt}, files), str(tmp_path))
    generate = next(line for line in commands.splitlines() if line.startswith("fairseq-generate"))
    assert f" --path <TMP>/work/checkpoints/checkpoint_{ckpt}.pt " in generate


def test_aclsum_demo_with_another_model_keeps_its_own_weights(tmp_path):
    """The shipped weights fit the MiniLM only: with a MODEL_DIR of another model and no START, the main job
    starts from that model's own weights (as finetune.sh does) instead of failing on the unpack's shapes."""
    base = next(s for s in SCENARIOS if s.recipe == "examples/aclsum/demo.sh" and s.name == "")
    env = {name: value for name, value in base.env.items() if name != "START"}
    proc = run_scenario_process(base._replace(env=env), str(tmp_path))
    assert proc.returncode == 0, proc.stderr
    commands = (tmp_path / "commands.log").read_text()
    assert "convert_hf_checkpoint.py" in commands and "pack_weights.py unpack" not in commands
    with_start = run_scenario_process(base, str(tmp_path / "continued"))
    assert (
        with_start.returncode == 0
        and "pack_weights.py unpack" in (tmp_path / "continued" / "commands.log").read_text()
    )
