"""UniLM v1 pre-training end to end through the real command-line tools on a sample of the embedded corpus.

prepare_corpus (sentencepiece) -> fairseq-preprocess --only-source -> fairseq-train --task unilm
--criterion unilm -> fairseq-validate.
"""

import math
import os
import re

import pytest

from .conftest import REPO, run_cli
from .test_cli_pmlm import train_records

pytestmark = pytest.mark.slow

OBJECTIVE_LOSSES = ["bidir_loss", "s2s_loss", "l2r_loss", "r2l_loss"]
TRAIN_COMMON = [
    "--user-dir", "unilm_fairseq", "--task", "unilm", "--criterion", "unilm", "--arch", "unilmv2_tiny",
    "--num-segments", "6", "--tokens-per-sample", "64", "--batch-size", "16", "--optimizer", "adam",
    "--lr", "1e-3", "--log-format", "simple", "--log-interval", "10", "--num-workers", "0", "--seed", "3",
    "--cpu",
]  # fmt: skip


@pytest.fixture(scope="module")
def data_bin(tmp_path_factory):
    work = tmp_path_factory.mktemp("unilm_v1")
    run_cli(["python", os.path.join(REPO, "scripts", "prepare_corpus.py"), "--out", str(work / "text"),
             "--max-docs", "6", "--valid-docs", "1", "--vocab-size", "1000"])  # fmt: skip
    run_cli(["fairseq-preprocess", "--only-source", "--trainpref", str(work / "text" / "train.spm"),
             "--validpref", str(work / "text" / "valid.spm"), "--destdir", str(work / "bin"),
             "--workers", "1"])  # fmt: skip
    return work


def test_train_logs_every_objective_and_loss_falls(data_bin):
    save = data_bin / "ckpt"
    out = run_cli(["fairseq-train", str(data_bin / "bin"), *TRAIN_COMMON, "--max-update", "60",
                   "--save-dir", str(save), "--no-epoch-checkpoints"])  # fmt: skip
    log = out.stderr + out.stdout
    assert "objectives: bidir 0.333, s2s 0.333, l2r 0.167, r2l 0.167" in log
    records = train_records(log)
    assert [r["num_updates"] for r in records] == [10, 20, 30, 40, 50, 60]
    for record in records:
        for key in [*OBJECTIVE_LOSSES, "nsp_loss", "nsp_acc", "loss"]:
            assert key in record and math.isfinite(record[key]), (key, record)
        assert 0 <= record["nsp_acc"] <= 1
    assert records[-1]["loss"] < records[0]["loss"] - 0.5
    for key in OBJECTIVE_LOSSES:
        assert records[-1][key] < records[0][key]

    valid = run_cli(["fairseq-validate", str(data_bin / "bin"), "--user-dir", "unilm_fairseq",
                     "--task", "unilm", "--criterion", "unilm", "--path", str(save / "checkpoint_last.pt"),
                     "--tokens-per-sample", "64", "--batch-size", "16", "--cpu",
                     "--num-workers", "0"])  # fmt: skip
    line = next(ln for ln in (valid.stderr + valid.stdout).splitlines() if "valid on 'valid' subset" in ln)
    for key in OBJECTIVE_LOSSES:
        assert 0 < float(re.search(rf"{key} ([\d.]+)", line).group(1)) < records[0][key]
    # the held-out split is one document: no NSP pair can borrow from another document
    assert "nsp_loss" not in line and float(re.search(r"nsp_skipped ([\d.]+)", line).group(1)) > 0


def test_objective_weights_from_the_command_line(data_bin, tmp_path):
    out = run_cli(["fairseq-train", str(data_bin / "bin"), *TRAIN_COMMON, "--max-update", "10",
                   "--objective-weights", "0,1,0,1", "--save-dir", str(tmp_path), "--no-save"])  # fmt: skip
    log = out.stderr + out.stdout
    assert "objectives: bidir 0.000, s2s 0.500, l2r 0.000, r2l 0.500" in log
    record = train_records(log)[-1]
    assert "s2s_loss" in record and "r2l_loss" in record
    assert "bidir_loss" not in record and "l2r_loss" not in record and "nsp_loss" not in record
