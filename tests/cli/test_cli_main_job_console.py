"""The main job's console, on the smoke budget CI also runs: readable, and nothing fairseq said is lost.

``examples/aclsum/demo.sh`` (what ``bash scripts/demo.sh`` runs after its set-up) with 2 updates and 4
test pairs. On the console: each step's header, fairseq's training and validation lines, the ROUGE table
and the examples, and where the full logs are; no warning and no printed module tree. In the log files:
everything the commands said, the model's module tree included.
"""

import os
import re
import shutil

import pytest

from ..helpers.cli import REPO, run_cli

pytestmark = pytest.mark.slow

HEADERS = ("== ACLSum", "== the MiniLM with continued PMLM pre-training", "== convert", "== tokenize",
           "== binarize", "== fine-tune", "== generate", "== ROUGE")  # fmt: skip
# finetune.sh's logs; the main job's start (the converted MiniLM with the shipped weights) logs in start/
LOGS = ("tokenize", "binarize", "train", "generate")


@pytest.fixture(scope="module")
def smoke(tmp_path_factory):
    work = tmp_path_factory.mktemp("main-job")
    env = {"UPDATES": "2", "TEST_PAIRS": "4", "GEN_BATCH": "4", "PYTHONWARNINGS": "", "OMP_NUM_THREADS": "2"}
    proc = run_cli(
        [shutil.which("bash"), os.path.join(REPO, "examples", "aclsum", "demo.sh"), str(work)], env=env
    )
    return proc.stdout + proc.stderr, work


def test_console_shows_the_steps_the_training_the_table_and_the_logs(smoke):
    console, work = smoke
    for header in HEADERS:
        assert re.search(rf"^{re.escape(header)}", console, re.M), header
    for command in ("convert_hf_checkpoint.py", "pack_weights.py", "tokenize_text.py", "fairseq-preprocess",
                    "fairseq-train", "fairseq-generate", "rouge_table.py"):  # fmt: skip
        assert re.search(rf"^\+ .*{re.escape(command)} ", console, re.M), (
            f"the {command} command is not shown"
        )
    assert re.search(r"\| train_inner \||\| train \| epoch", console), "no training line"
    assert re.search(r"\| valid \| .*valid on 'valid' subset", console), "no validation line"
    assert re.search(r"^system +ROUGE-1 +ROUGE-2 +ROUGE-L +\(4 pairs", console, re.M), "no ROUGE table"
    assert re.search(r"^\[0\] reference: ", console, re.M), "no example"
    named = re.search(r"^== full logs: (\S+)/ \((.*)\)$", console, re.M)
    assert named, "the log files are not named"
    assert sorted(named.group(2).split()) == sorted(f"{name}.log" for name in LOGS)


def test_console_has_no_warning_and_no_module_tree(smoke):
    console, _ = smoke
    warnings = [line for line in console.splitlines() if re.search("warning", line, re.I)]
    assert not warnings, warnings
    assert not re.search(r"ModuleList\(|UniLMv2Model\(|\(layers\):", console)
    assert len(console.splitlines()) < 120, len(console.splitlines())


def test_the_log_files_keep_everything(smoke):
    _, work = smoke
    logs = {name: (work / "run" / "logs" / f"{name}.log").read_text() for name in LOGS}
    assert "UniLMv2Model(" in logs["train"]  # the module tree fairseq-train prints
    assert re.search(r"\| train_inner \|.*num_updates=|\| train \| epoch", logs["train"])
    assert "Dictionary: 30522 types" in logs["binarize"]
    assert "Translated 4 sentences" in logs["generate"]
    assert re.search(r"^S-\d+\t", (work / "run" / "generate-test.out").read_text(), re.M)
