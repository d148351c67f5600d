"""--tensorboard-logdir with the plugin's tasks: fairseq writes TensorBoard event files (through tensorboardX,
a dependency) for the training and validation statistics of a short s2s-ft run."""

import random

import pytest

from ..helpers.cli import binarize_pairs, run_cli

pytestmark = pytest.mark.slow


def test_training_writes_event_files(tmp_path):
    rng = random.Random(0)
    words = [f"w{i}" for i in range(20)]
    pairs = [(line, line) for line in (" ".join(rng.choices(words, k=6)) for _ in range(24))]
    data = binarize_pairs(tmp_path, pairs)
    logdir = tmp_path / "tensorboard"
    train = ["fairseq-train", str(data), "--user-dir", "unilm_fairseq", "--task", "unilm_seq2seq",
             "--arch", "unilmv2_tiny", "--criterion", "unilm_seq2seq", "--max-source-positions", "16",
             "--max-target-positions", "16", "--batch-size", "8", "--optimizer", "adam", "--lr", "1e-3",
             "--max-update", "3", "--log-format", "simple", "--log-interval", "1", "--cpu",
             "--num-workers", "0", "--save-dir", str(tmp_path / "ckpt")]  # fmt: skip
    proc = run_cli([*train, "--tensorboard-logdir", str(logdir)])
    assert "tensorboard not found" not in proc.stdout + proc.stderr
    for subset in ("train", "valid"):  # one writer per subset, as fairseq names them
        events = list((logdir / subset).glob("events.out.tfevents.*"))
        assert len(events) == 1, (subset, sorted(p.name for p in logdir.rglob("*")))
        content = events[0].read_bytes()
        assert b"loss" in content and b"nll_loss" in content, subset  # the scalars' tags
