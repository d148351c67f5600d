"""End to end through the real command-line tools on a small sample of the embedded corpus.

prepare_corpus (sentencepiece) -> fairseq-preprocess --only-source -> fairseq-train --task pmlm
-> --restore-file resume -> fairseq-validate; the paper's ablations; a 2-process CPU run and resume.
"""

import os
import re

import pytest
import torch
from fairseq import checkpoint_utils

from ..helpers.cli import REPO, binarize_austen, run_cli, train_records

pytestmark = pytest.mark.slow

TRAIN_COMMON = [
    "--user-dir", "unilm_fairseq", "--task", "pmlm", "--arch", "unilmv2_tiny", "--criterion", "ae_par",
    "--tokens-per-sample", "64", "--batch-size", "8", "--optimizer", "adam", "--lr", "1e-3",
    "--log-format", "simple", "--log-interval", "5", "--num-workers", "0", "--seed", "3",
    "--no-epoch-checkpoints",
]  # fmt: skip


@pytest.fixture(scope="module")
def data_bin(tmp_path_factory):
    return binarize_austen(tmp_path_factory.mktemp("pmlm"))


def test_train_resume_validate(data_bin):
    save = data_bin / "ckpt"
    first = run_cli(["fairseq-train", str(data_bin / "bin"), *TRAIN_COMMON, "--cpu",
                     "--max-update", "20", "--save-dir", str(save)])  # fmt: skip
    records = train_records(first.stderr + first.stdout)
    assert [r["num_updates"] for r in records] == [5, 10, 15, 20]
    for key in ("ae_loss", "par_loss"):
        assert all(key in r and r[key] > 0 for r in records)
    assert records[-1]["loss"] < records[0]["loss"]
    assert (save / "checkpoint_last.pt").exists()

    # the checkpoint loads with torch's safe loader
    state = torch.load(save / "checkpoint_last.pt", weights_only=True)
    assert state["optimizer_history"][-1]["num_updates"] == 20

    resumed = run_cli(["fairseq-train", str(data_bin / "bin"), *TRAIN_COMMON, "--cpu",
                       "--max-update", "30", "--save-dir", str(save),
                       "--restore-file", str(save / "checkpoint_last.pt")])  # fmt: skip
    log = resumed.stderr + resumed.stdout
    # resumed from the checkpoint of update 20: its history is carried into the new checkpoint
    history = torch.load(save / "checkpoint_last.pt", weights_only=True)["optimizer_history"]
    assert [h["num_updates"] for h in history] == [20, 30]
    assert [r["num_updates"] for r in train_records(log)] == [25, 30]

    valid = run_cli(["fairseq-validate", str(data_bin / "bin"), "--user-dir", "unilm_fairseq", "--task",
                     "pmlm", "--path", str(save / "checkpoint_last.pt"), "--tokens-per-sample", "64",
                     "--batch-size", "8", "--cpu", "--num-workers", "0"])  # fmt: skip
    line = next(ln for ln in (valid.stderr + valid.stdout).splitlines() if "valid on 'valid' subset" in ln)
    ae = float(re.search(r"ae_loss ([\d.]+)", line).group(1))
    par = float(re.search(r"par_loss ([\d.]+)", line).group(1))
    loss = float(re.search(r"\| loss ([\d.]+)", line).group(1))
    assert ae > 0 and par > 0 and loss == pytest.approx(ae + par, abs=0.01)


@pytest.mark.parametrize(
    "flags, message",
    [
        # the tiny model's position table has 256 rows: fairseq would skip every block, then fail in batching
        (["--tokens-per-sample", "300", "--batch-size", "8"], "--tokens-per-sample 300 is longer than the"),
        (["--max-tokens", "48"], "--tokens-per-sample 64 is longer than the 48 tokens"),
        # 64 tokens of context, two pseudo tokens per masked one: 64 + 2 * (ceil(0.15 * 64) + max span 6)
        # = 96; fairseq asserted without naming an option
        (["--max-tokens", "70"], "--max-tokens 70 is less than the 96 tokens of the longest example"),
    ],
)
def test_limits_below_the_block_length_are_named(data_bin, tmp_path, flags, message):
    common = [f for f in TRAIN_COMMON if f not in ("--batch-size", "8")]
    out = run_cli(["fairseq-train", str(data_bin / "bin"), *common, "--cpu", "--max-update", "1",
                   "--save-dir", str(tmp_path), "--no-save", *flags], check=False)  # fmt: skip
    assert out.returncode != 0 and message in out.stderr


@pytest.mark.parametrize(
    "flags, present, absent",
    [
        (["--objectives", "ae"], ["ae_loss"], ["par_loss"]),
        (["--objectives", "par"], ["par_loss"], ["ae_loss"]),
        (["--no-blockwise"], ["ae_loss", "par_loss"], []),
    ],
)
def test_ablations(data_bin, tmp_path, flags, present, absent):
    out = run_cli(["fairseq-train", str(data_bin / "bin"), *TRAIN_COMMON, "--cpu", "--max-update", "5",
                   "--save-dir", str(tmp_path), "--no-save", *flags])  # fmt: skip
    record = train_records(out.stderr + out.stdout)[-1]
    for key in present:
        assert key in record
    for key in absent:
        assert key not in record


def test_par_skip_unchanged(data_bin, tmp_path):
    out = run_cli(["fairseq-train", str(data_bin / "bin"), *TRAIN_COMMON, "--cpu", "--max-update", "10",
                   "--save-dir", str(tmp_path), "--no-save", "--par-skip-unchanged"])  # fmt: skip
    records = train_records(out.stderr + out.stdout)
    assert [r["num_updates"] for r in records] == [5, 10]
    for r in records:
        assert r["ae_loss"] > 0 and r["par_loss"] > 0
        # about 10% of the masked tokens stay unchanged (--leave-unmasked-prob 0.1), of ~300 per record
        assert 0.03 < r["par_skipped"] < 0.2
        assert r["loss"] == pytest.approx(r["ae_loss"] + r["par_loss"] * (1 - r["par_skipped"]), abs=0.01)
    # the option needs both objectives: a clear error, not a silent no-op
    bad = run_cli(["fairseq-train", str(data_bin / "bin"), *TRAIN_COMMON, "--cpu", "--max-update", "1",
                   "--save-dir", str(tmp_path), "--no-save", "--par-skip-unchanged", "--objectives", "par"],
                  check=False)  # fmt: skip
    assert bad.returncode != 0 and "par_skip_unchanged needs both the AE and PAR objectives" in bad.stderr


def test_two_process_cpu_train_and_resume(data_bin, tmp_path):
    launcher = os.path.join(REPO, "scripts", "train_distributed_cpu.py")
    torchrun = ["torchrun", "--standalone", "--nproc_per_node", "2", launcher, str(data_bin / "bin"),
                *TRAIN_COMMON, "--save-dir", str(tmp_path)]  # fmt: skip
    first = run_cli([*torchrun, "--max-update", "10"])
    log = first.stderr + first.stdout
    cfg = checkpoint_utils.load_checkpoint_to_cpu(str(tmp_path / "checkpoint_last.pt"))["cfg"]
    assert cfg.distributed_training.distributed_world_size == 2
    records = train_records(log)
    assert records and records[-1]["num_updates"] == 10
    assert records[-1]["bsz"] == 16  # two workers of 8
    # resuming broadcasts rank 0's checkpoint state: this needs the omegaconf allow-list
    second = run_cli([*torchrun, "--max-update", "15"])
    log = second.stderr + second.stdout
    history = torch.load(tmp_path / "checkpoint_last.pt", weights_only=True)["optimizer_history"]
    assert [h["num_updates"] for h in history] == [10, 15]
    assert train_records(log)[-1]["num_updates"] == 15


@pytest.mark.parametrize("flags", [["--memory-efficient-fp16"], ["--fp16", "--fp16-no-flatten-grads"]])
def test_fp16_training_on_cpu(data_bin, tmp_path, flags):
    """Real fp16 parameters on CPU: the half-precision attention path must not overflow."""
    out = run_cli(["fairseq-train", str(data_bin / "bin"), *TRAIN_COMMON, "--cpu", "--max-update", "10",
                   "--save-dir", str(tmp_path), "--no-save", *flags])  # fmt: skip
    records = train_records(out.stderr + out.stdout)
    assert [r["num_updates"] for r in records] == [5, 10]
    assert all("loss_scale" in r and 0 < r["ae_loss"] < 20 and 0 < r["par_loss"] < 20 for r in records)


def test_fairseq_train_with_checkpoint_activations(data_bin, tmp_path):
    out = run_cli(["fairseq-train", str(data_bin / "bin"), *TRAIN_COMMON, "--cpu", "--max-update", "2",
                   "--log-interval", "1", "--save-dir", str(tmp_path),
                   "--checkpoint-activations"])  # fmt: skip
    records = train_records(out.stderr + out.stdout)
    assert [r["num_updates"] for r in records] == [1, 2]
    assert all(torch.isfinite(torch.tensor(r["loss"])) for r in records)
    state = checkpoint_utils.load_checkpoint_to_cpu(str(tmp_path / "checkpoint_last.pt"))
    assert state["cfg"].model.checkpoint_activations is True


def test_a_run_started_from_a_training_checkpoint_counts_only_its_own_time(data_bin, tmp_path):
    """fairseq carries a checkpoint's training time into a run started from it with --finetune-from-model,
    so --stop-time-hours counted the earlier run's hours too: continue_pretraining.sh with MINUTES, started
    from an earlier run's checkpoint_last.pt, stopped before its first update. ``scripts/pack_weights.py
    start`` gives that checkpoint's weights without the run's state, and the new run trains."""
    first = tmp_path / "first"
    run_cli(["fairseq-train", str(data_bin / "bin"), *TRAIN_COMMON, "--cpu", "--max-update", "5",
             "--save-dir", str(first)])  # fmt: skip
    state = torch.load(first / "checkpoint_last.pt", weights_only=True)
    state["extra_state"]["previous_training_time"] = 7200.0  # as after two hours of training
    torch.save(state, tmp_path / "long.pt")

    def updates_from(start, save):
        run = run_cli(["fairseq-train", str(data_bin / "bin"), *TRAIN_COMMON, "--cpu", "--max-update", "5",
                       "--stop-time-hours", "1", "--finetune-from-model", str(start),
                       "--save-dir", str(tmp_path / save)])  # fmt: skip
        return [record["num_updates"] for record in train_records(run.stderr + run.stdout)]

    assert updates_from(tmp_path / "long.pt", "as_is") == []  # fairseq's own behaviour
    run_cli(["python", "scripts/pack_weights.py", "start", str(tmp_path / "long.pt"),
             str(tmp_path / "start.pt")])  # fmt: skip
    assert updates_from(tmp_path / "start.pt", "started") == [5]
    started = torch.load(tmp_path / "start.pt", weights_only=True)
    assert "previous_training_time" not in started["extra_state"] and started["last_optimizer_state"] is None
