"""scripts/pretraining_curve.py reads held-out curves from fairseq logs; the continuation recipe checks its
settings before any work."""

import json
import os
import subprocess
import sys

import pytest

from tests.helpers.cli import REPO

sys.path.insert(0, os.path.join(REPO, "scripts"))
import pretraining_curve  # noqa: E402

TRAIN_LOG = """\
2026-11-27 00:37:44 | INFO | fairseq.data.data_utils | loaded 472,563 examples from: shard0/train
2026-11-27 00:37:45 | INFO | fairseq.trainer | begin training epoch 1
2026-11-27 00:38:15 | INFO | train_inner | epoch 001:     56 / 353 loss=23.041, ae_loss=11.559, num_updates=50
2026-11-27 00:38:39 | INFO | valid | epoch 001 | valid on 'valid' subset | loss 16.234 | nll_loss 8.117 | \
ae_loss 8.062 | ae_acc 15.5 | par_loss 8.173 | par_acc 14.61 | ppl 277.67 | wps 147434 | num_updates 150
2026-11-27 00:38:55 | INFO | valid | epoch 001 | valid on 'valid' subset | loss 7.022 | nll_loss 7.022 | \
ae_loss 7.022 | ae_acc 24.61 | ppl 137.29 | wps 390833 | num_updates 219
"""
VALIDATE_LOG = """\
2026-11-27 00:36:58 | INFO | valid | valid on 'valid' subset | loss 32.384 | nll_loss 16.192 | \
ae_loss 16.181 | ae_acc 0 | par_loss 16.203 | par_acc 0 | ppl 74864.875 | wps 0 | wpb 196471 | bsz 516
"""


def test_curve_rows_from_a_training_log(tmp_path):
    (tmp_path / "train.log").write_text(TRAIN_LOG)
    (tmp_path / "before.log").write_text(VALIDATE_LOG)
    out = tmp_path / "curve.tsv"
    assert (
        pretraining_curve.main(
            [
                "--log",
                f"ae,par={tmp_path / 'train.log'}",
                "--start",
                str(tmp_path / "before.log"),
                "--tsv",
                str(out),
            ]
        )
        == 0
    )
    rows = [line.split("\t") for line in out.read_text().splitlines()]
    assert rows[0] == ["run", "update", "seconds", "ae_loss", "par_loss", "ae_acc", "par_acc"]
    assert rows[1] == ["ae,par", "0", "0", "16.181", "16.203", "0", "0"]
    # seconds since "begin training" (00:37:45); `loss` is not taken for `ae_loss` or `nll_loss`
    assert rows[2] == ["ae,par", "150", "54", "8.062", "8.173", "15.5", "14.61"]
    # an AE-only validation has no PAR measures: empty cells, not another field's value
    assert rows[3] == ["ae,par", "219", "70", "7.022", "", "24.61", ""]


def test_a_million_updates_and_another_subset(tmp_path):
    """fairseq writes "{:g}": from a million updates on, 1.002e+06 (it was read as update 1); a
    --valid-subset valid,valid1 run's valid1 lines are not the valid curve's rows."""
    log = TRAIN_LOG + (
        "2026-11-27 03:38:55 | INFO | valid | epoch 009 | valid on 'valid' subset | loss 6.5 | "
        "ae_loss 6.5 | ae_acc 30.5 | par_loss nan | num_updates 1.002e+06\n"
        "2026-11-27 03:39:55 | INFO | valid | epoch 009 | valid on 'valid1' subset | loss 6.9 | "
        "ae_loss 6.9 | ae_acc 29.5 | num_updates 1.002e+06\n"
    )
    (tmp_path / "train.log").write_text(log)
    rows = pretraining_curve.read_curve(str(tmp_path / "train.log"))
    assert [update for update, _, _ in rows] == [150, 219, 1002000]
    assert rows[-1][2]["ae_loss"] == 6.5 and str(rows[-1][2]["par_loss"]) == "nan"
    assert [u for u, _, _ in pretraining_curve.read_curve(str(tmp_path / "train.log"), "valid1")] == [1002000]


def run_loss_table(path, *flags):
    script = os.path.join(REPO, "scripts", "loss_table.py")
    return subprocess.run([sys.executable, script, str(path), *flags], capture_output=True, text=True)


def test_loss_table_reads_json_logs_large_numbers_and_nan(tmp_path):
    simple = tmp_path / "simple.log"
    simple.write_text(
        "2026-11-27 00:38:15 | INFO | train_inner | epoch 001:  56 / 353 loss=23.041, ae_loss=11.559, "
        "par_loss=11.48, num_updates=999000, wall=40\n"
        "2026-11-27 00:39:15 | INFO | train_inner | epoch 001:  99 / 353 loss=20.1, ae_loss=10.2, "
        "par_loss=9.9, num_updates=1e+06, wall=1.00008e+06\n"
    )
    out = run_loss_table(simple, "--require-falling")
    assert out.returncode == 0 and "1000000.000" in out.stdout
    assert "falling: ae_loss 11.559 -> 10.200" in out.stdout
    # the same records in fairseq's json format: read, not an empty pass
    records = [
        {"epoch": 1, "loss": "23.041", "ae_loss": "11.559", "par_loss": "11.48", "num_updates": "50"},
        {"epoch": 1, "loss": "24.1", "ae_loss": "12.2", "par_loss": "11.9", "num_updates": "100"},
    ]
    as_json = tmp_path / "json.log"
    as_json.write_text(
        "".join(f"2026-11-27 00:38:15 | INFO | train_inner | {json.dumps(r)}\n" for r in records)
    )
    out = run_loss_table(as_json, "--require-falling")
    assert out.returncode == 1 and "NOT falling: ae_loss 11.559 -> 12.200" in out.stdout
    # a diverged run ends in nan: not falling, and no traceback
    diverged = tmp_path / "nan.log"
    diverged.write_text(simple.read_text().replace("ae_loss=10.2", "ae_loss=nan"))
    out = run_loss_table(diverged, "--require-falling")
    assert out.returncode == 1 and "NOT falling: ae_loss 11.559 -> nan" in out.stdout and not out.stderr
    # no objective loss at all: nothing was checked, so nothing passes
    bare = tmp_path / "bare.log"
    bare.write_text("2026-11-27 00:38:15 | INFO | train_inner | epoch 001: loss=3.2, num_updates=5\n")
    out = run_loss_table(bare, "--require-falling")
    assert out.returncode == 1 and "NOT falling: none of the losses" in out.stdout


@pytest.mark.parametrize(
    "content, spec, message",
    [
        ("no validation here\n", "a={log}", "no validation line"),
        (TRAIN_LOG, "{log}", "expected NAME=PATH"),
    ],
)
def test_bad_logs_are_clear_errors(tmp_path, caplog, content, spec, message):
    log = tmp_path / "train.log"
    log.write_text(content)
    assert pretraining_curve.main(["--log", spec.format(log=log)]) == 1
    assert message in caplog.text


def test_missing_log_is_a_clear_error(tmp_path, caplog):
    assert pretraining_curve.main(["--log", f"a={tmp_path / 'none.log'}"]) == 1
    assert "none.log" in caplog.text


RECIPE = os.path.join(REPO, "examples", "unilmv2_pretrain", "continue_pretraining.sh")


def run_recipe(args, env=None, cwd=None):
    return subprocess.run(
        ["bash", RECIPE, *args], capture_output=True, text=True, env={**os.environ, **(env or {})}, cwd=cwd
    )


def test_recipe_help_exits_zero():
    result = run_recipe(["-h"])
    assert result.returncode == 0 and "ARMS" in result.stdout and "EQUAL_TIME" in result.stdout


@pytest.mark.parametrize(
    "env, message",
    [
        ({"ARMS": "ae,par bogus"}, "'bogus' is none of"),
        ({"UPDATES": "0"}, "UPDATES=0 must be a positive whole number"),
        ({"BATCH": "eight"}, "BATCH=eight"),
        ({"MINUTES": "-1"}, "MINUTES=-1"),
    ],
)
def test_recipe_refuses_bad_settings_before_any_work(tmp_path, env, message):
    result = run_recipe([str(tmp_path / "corpus"), str(tmp_path / "model"), str(tmp_path / "work")], env)
    assert result.returncode == 2 and message in result.stderr
    assert not (tmp_path / "work").exists()


def test_recipe_names_a_missing_input(tmp_path):
    result = run_recipe([str(tmp_path / "corpus"), str(tmp_path / "model"), str(tmp_path / "work")])
    assert result.returncode == 1 and "model.pt: no such file" in result.stderr
