"""The main job's console, on the smoke budget CI also runs: readable, and nothing fairseq said is lost.

``examples/aclsum/demo.sh`` (what ``bash scripts/demo.sh`` runs after its set-up) with the settings
``.ci/run`` gives it (``UPDATES=2 TEST_PAIRS=10``, read from that file). On the console: each step's
header, fairseq's training and validation lines, the pairs each split kept, the ROUGE table and the
examples, and where the full logs are; no warning and no printed module tree. In the log files
(WORK/run/logs): everything the commands said, the model's module tree included.

``.ci/run`` makes that very run first, in a fresh venv without the test extras, and names its console to the
suite (``MAIN_JOB_SMOKE_CONSOLE``); the checks then read that run, from the line that ends the set-up on, and
its work folder, instead of making a second one. Without that name the module runs the smoke job itself.
"""

import os
import pathlib
import re
import shutil

import pytest

from ..helpers.cli import REPO, run_cli

pytestmark = pytest.mark.slow

HEADERS = ("== ACLSum", "== the MiniLM with continued PMLM pre-training", "== convert", "== tokenize",
           "== binarize", "== fine-tune", "== generate", "== ROUGE")  # fmt: skip
# the logs in WORK/run/logs: finetune.sh's stages, the continued weights' unpacking among them
LOGS = ("convert", "unpack", "tokenize", "binarize", "train", "generate")


def ci_smoke_settings():
    """The settings ``.ci/run`` runs the main job with (``NAME=value ... bash scripts/demo.sh``)."""
    text = open(os.path.join(REPO, ".ci", "run"), encoding="utf-8").read()
    line = next(line for line in text.splitlines() if re.search(r"\bbash scripts/demo\.sh\b", line))
    return dict(re.findall(r"\b(UPDATES|TEST_PAIRS)=(\S+)", line))


SMOKE = ci_smoke_settings()
# the console file of the smoke run .ci/run made before the suite (relative to the repository, or absolute)
CI_CONSOLE = "MAIN_JOB_SMOKE_CONSOLE"


def ci_smoke_run(path):
    """The main job's console in the file ``.ci/run`` wrote (after scripts/demo.sh's set-up), and its work
    folder."""
    text = open(os.path.join(REPO, path), encoding="utf-8").read()
    ready = re.search(r"^\[setup\] ready: .*\n", text, re.M)
    assert ready, f"{path}: no '[setup] ready:' line to tell the main job's console from the set-up"
    console = text[ready.end() :]
    logs = re.search(r"^== full logs: (\S+)/run/logs/ ", console, re.M)
    assert logs, f"{path}: the smoke run did not name its logs (did it finish?)"
    return console, pathlib.Path(REPO, logs.group(1))


@pytest.fixture(scope="module")
def smoke(tmp_path_factory):
    if os.environ.get(CI_CONSOLE):
        return ci_smoke_run(os.environ[CI_CONSOLE])
    work = tmp_path_factory.mktemp("main-job")
    env = dict(SMOKE, PYTHONWARNINGS="", OMP_NUM_THREADS="2")
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
    # what each split kept, skipped and cut, as the task counted it
    for split, pairs in (("train", 300), ("valid", 150)):
        assert re.search(
            rf"\| {split}: {pairs} pairs; skipped 0 with an empty source or target; truncated \d+ sources",
            console,
        ), f"no count of the {split} pairs"
    pairs = SMOKE["TEST_PAIRS"]
    assert re.search(rf"^system +ROUGE-1 +ROUGE-2 +ROUGE-L +\({pairs} pairs", console, re.M), "no ROUGE table"
    assert re.search(rf"^95% intervals \(1000 bootstrap resamples of the {pairs} test pairs", console, re.M)
    assert re.search(
        r"^positional +[-+]\d+\.\d\d \([-+]\d+\.\d\d\.\.[-+]\d+\.\d\d\) p [01]\.\d{3}", console, re.M
    )
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
    assert f"Translated {SMOKE['TEST_PAIRS']} sentences" in logs["generate"]
    assert "converted " in logs["convert"]
    assert "with the weights of" in logs["unpack"] and "minilm-continued-ae.pt.xz" in logs["unpack"]
    assert re.search(r"^S-\d+\t", (work / "run" / "generate-test.out").read_text(), re.M)


def test_a_ci_console_is_read_from_the_end_of_the_set_up(tmp_path):
    console = tmp_path / "console.log"
    console.write_text("WARNING: pip's own line\n[setup] ready: unilm_fairseq 0.1.0\n== ACLSum\n"
                       f"== full logs: {tmp_path}/w/run/logs/ (train.log )\n")  # fmt: skip
    text, work = ci_smoke_run(str(console))
    assert text.startswith("== ACLSum\n") and "WARNING" not in text
    assert work == tmp_path / "w"
    console.write_text("[setup] ready: unilm_fairseq 0.1.0\n== ACLSum\n")  # stopped before its end
    with pytest.raises(AssertionError, match="did not name its logs"):
        ci_smoke_run(str(console))
