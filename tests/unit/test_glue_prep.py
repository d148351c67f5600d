"""GLUE preparation on fixtures in the release's TSV layouts: columns, splits, labels, bad rows."""

import os
import re
import subprocess
import sys
from collections import Counter

import pytest

from unilm_fairseq.prepare import glue

from ..helpers.cli import REPO

FIXTURES = os.path.join(REPO, "tests", "fixtures", "glue")


def prepare(task, out, *extra):
    script = os.path.join(REPO, "scripts", "prepare_glue.py")
    return subprocess.run(
        [sys.executable, script, "--task", task, "--input", os.path.join(FIXTURES, task),
         "--output", str(out), *extra],
        capture_output=True, text=True, check=True, cwd=REPO,
    )  # fmt: skip


def lines(path):
    with open(path, encoding="utf-8") as f:
        return f.read().splitlines()


def test_cola_headerless_train_and_headed_test(tmp_path):
    proc = prepare("CoLA", tmp_path)
    assert lines(tmp_path / "train.input0")[1] == "They drank the pub."
    assert lines(tmp_path / "train.label") == ["1", "0", "1"]
    assert lines(tmp_path / "test.input0") == [
        "Bill whistled past the house.",
        "The car honked its way down the road.",
    ]
    assert not (tmp_path / "test.label").exists()
    assert not (tmp_path / "train.input1").exists()  # single-sentence task
    # the dev file's second row has too few fields: skipped and counted, not fatal
    assert lines(tmp_path / "valid.label") == ["0"]
    assert "CoLA valid: 1 examples written, 1 malformed rows skipped" in proc.stderr


def test_mrpc_pairs_keep_quotes(tmp_path):
    prepare("MRPC", tmp_path, "--splits", "train")
    assert lines(tmp_path / "train.label") == ["1", "0"]
    assert lines(tmp_path / "train.input1")[0].startswith('Referring to him as only "the witness"')
    assert (
        lines(tmp_path / "train.input0")[1]
        == "Yucaipa owned Dominick's before selling the chain to Safeway in 1998."
    )
    assert not (tmp_path / "valid.input0").exists()  # not requested


def test_mnli_matched_and_mismatched_dev_sets(tmp_path):
    prepare("MNLI", tmp_path, "--lowercase")
    assert lines(tmp_path / "train.label") == ["neutral", "entailment"]
    assert lines(tmp_path / "valid.label") == ["neutral"]
    assert lines(tmp_path / "valid1.label") == ["contradiction"]  # gold_label, not label1..5
    assert lines(tmp_path / "train.input1")[0] == "product and geography are what make cream skimming work."


def test_stsb_scores_and_unlabelled_test(tmp_path):
    prepare("STS-B", tmp_path, "--splits", "train,test")
    assert lines(tmp_path / "train.label") == ["5.000", "3.800"]
    assert lines(tmp_path / "test.input1") == ["A girl is brushing her hair."]
    assert not (tmp_path / "test.label").exists()


def test_qqp_broken_row_is_counted():
    stats = Counter()
    path = os.path.join(FIXTURES, "QQP", "train.tsv")
    examples = list(glue.read_glue_file(path, glue.task_spec("qqp"), True, stats))
    assert [e.label for e in examples] == ["0", "1"]
    assert examples[1].sentences == (
        "How do I control my horny emotions?",
        "How do you control your horniness?",
    )
    assert stats["skipped_malformed"] == 1


def test_unknown_task_and_missing_column_are_clear_errors(tmp_path):
    with pytest.raises(ValueError, match="unknown GLUE task"):
        glue.task_spec("SQuAD")
    bad = tmp_path / "train.tsv"
    bad.write_text("text\tlabel\nhello\t1\n")
    with pytest.raises(ValueError, match="no column 'sentence'"):
        list(glue.read_glue_file(str(bad), glue.task_spec("SST-2")))


def test_mrpc_byte_order_mark_and_a_labelled_split_without_labels(tmp_path):
    """MRPC's released files start with a byte-order mark: its header still names the label column. A
    train or dev file without that column is an error, not a test file written without labels."""
    bom = tmp_path / "MRPC" / "train.tsv"
    bom.parent.mkdir()
    bom.write_bytes(b"\xef\xbb\xbf" + open(os.path.join(FIXTURES, "MRPC", "train.tsv"), "rb").read())
    spec = glue.task_spec("MRPC")
    assert [e.label for e in glue.read_glue_file(str(bom), spec, needs_label=True)] == ["1", "0"]
    unlabelled = tmp_path / "SST-2" / "dev.tsv"
    unlabelled.parent.mkdir()
    unlabelled.write_text("index\tsentence\n0\tA fine film .\n")
    assert [e.label for e in glue.read_glue_file(str(unlabelled), glue.task_spec("SST-2"))] == [None]
    with pytest.raises(ValueError, match="dev.tsv: no label column 'label'"):
        list(glue.read_glue_file(str(unlabelled), glue.task_spec("SST-2"), needs_label=True))
    script = os.path.join(REPO, "scripts", "prepare_glue.py")
    proc = subprocess.run(
        [sys.executable, script, "--task", "SST-2", "--input", str(unlabelled.parent), "--output",
         str(tmp_path / "out"), "--splits", "valid"],
        capture_output=True, text=True, cwd=REPO,
    )  # fmt: skip
    assert proc.returncode == 1 and "SST-2 valid: " in proc.stderr and "Traceback" not in proc.stderr


@pytest.mark.slow
@pytest.mark.parametrize("task", ["MRPC", "STS-B", "MNLI"])
def test_recipe_runs_on_the_fixtures(tmp_path, task):
    """examples/glue/glue.sh end to end on the fixture, from another folder than the repository's with a
    relative WORK: prepare, binarize, two updates, dev metric."""
    env = dict(os.environ, MODEL_ARGS="--arch unilmv2_tiny", MAX_POSITIONS="64", CPU="--cpu", EPOCHS="2",
               OMP_NUM_THREADS="1", PYTHONWARNINGS="ignore", PATH=os.path.dirname(sys.executable) + os.pathsep
               + os.environ.get("PATH", ""))  # fmt: skip
    proc = subprocess.run(
        ["bash", os.path.join(REPO, "examples/glue/glue.sh"), task, os.path.join(FIXTURES, task), "work",
         "--num-workers", "0"],
        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    log = proc.stdout + proc.stderr
    assert proc.returncode == 0, log[-3000:]
    metric = {"STS-B": "pearson", "MRPC": "acc_and_f1", "MNLI": "accuracy"}[task]
    assert re.search(rf"valid on 'valid' subset .*\| {metric} [-\d.]+", log), log[-3000:]
    assert (tmp_path / "work" / "checkpoints" / "checkpoint_best.pt").exists()
    if task == "MRPC":  # class 1, the positive class of fairseq's F1, is GLUE's "1" (a paraphrase)
        labels = lines(tmp_path / "work" / "bin" / "label" / "dict.txt")
        assert [line.split()[0] for line in labels] == ["0", "1"]
    if task == "MNLI":  # the mismatched dev set is scored too
        assert re.search(r"valid on 'valid1' subset .*\| accuracy [-\d.]+", log), log[-3000:]
    if task == "STS-B":  # again into the same WORK, without DICT: fairseq-preprocess refused its old dict.txt
        again = subprocess.run(proc.args, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=600)
        assert again.returncode == 0, (again.stdout + again.stderr)[-3000:]


def test_recipe_rejects_an_unknown_casing_before_any_work(tmp_path):
    """LOWERCASE is 1 (--lowercase), 0 (--cased) or auto (the vocabulary decides); anything else stops."""
    env = dict(os.environ, LOWERCASE="yes", MODEL_ARGS="--arch unilmv2_tiny")
    proc = subprocess.run(
        ["bash", "examples/glue/glue.sh", "MRPC", os.path.join(FIXTURES, "MRPC"), str(tmp_path)],
        cwd=REPO, env=env, capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert proc.returncode == 2
    assert "LOWERCASE must be 1, 0 or auto, not 'yes'" in proc.stderr
    assert not (tmp_path / "raw").exists()
