"""bfloat16 training through ``fairseq-train``: ``--amp-bf16`` for pmlm, unilm_seq2seq and palm, and the
clear errors of fairseq's ``--bf16`` (its TPU mode) and of conflicting precision options.

Each task trains a tiny model from the same seed, without dropout, once in float32 and once with
``--amp-bf16`` (on CPU: torch's CPU autocast in bfloat16). The first update's loss is that of the same
weights on the same batch, so the two differ only by bfloat16 rounding. The bfloat16 run's checkpoints
after updates 1 and 2 (the last) hold float32 weights that a small learning rate still moves: pure
bfloat16 weights of this size would round such steps away.
"""

import math
import random

import pytest
import torch

from ..helpers.cli import binarize, binarize_pairs, run_cli, train_records

pytestmark = pytest.mark.slow

WORDS = [f"w{i}" for i in range(24)]
# the first update's loss, bfloat16 against float32
LOSS_RTOL = 0.03
# an Adam step moves each weight by about the learning rate: 1e-5 is below bfloat16's spacing (2^-8
# relative) for weights of the initialisation's size, so only float32 weights keep it
SMALL_LR = "1e-5"

COMMON = ["--user-dir", "unilm_fairseq", "--optimizer", "adam", "--dropout", "0", "--attention-dropout", "0",
          "--log-format", "simple", "--log-interval", "1", "--num-workers", "0", "--seed", "1",
          "--disable-validation", "--distributed-world-size", "1"]  # fmt: skip
# CPU autocast here; where a GPU is present the same runs on it, the option's real target
DEVICES = [
    pytest.param(["--cpu"], id="cpu"),
    pytest.param([], id="cuda", marks=pytest.mark.skipif(not torch.cuda.is_available(), reason="no GPU")),
]


def sentences(rng, n, length):
    return [" ".join(rng.choices(WORDS, k=length)) for _ in range(n)]


@pytest.fixture(scope="module")
def pmlm_bin(tmp_path_factory):
    rng = random.Random(0)
    lines = []
    for _ in range(8):  # documents of 4 sentences, an empty line after each
        lines += sentences(rng, 4, 7) + [""]
    return binarize(tmp_path_factory.mktemp("bf16_pmlm"), lines)


@pytest.fixture(scope="module")
def pairs_bin(tmp_path_factory):
    rng = random.Random(1)
    pairs = [(source, " ".join(source.split()[:4])) for source in sentences(rng, 48, 6)]
    return binarize_pairs(tmp_path_factory.mktemp("bf16_pairs"), pairs)


TASKS = {
    "pmlm": ["--task", "pmlm", "--arch", "unilmv2_tiny", "--criterion", "ae_par", "--tokens-per-sample", "32",
             "--batch-size", "8"],
    "unilm_seq2seq": ["--task", "unilm_seq2seq", "--arch", "unilmv2_tiny", "--criterion", "unilm_seq2seq",
                      "--max-source-positions", "16", "--max-target-positions", "8", "--max-positions", "32",
                      "--batch-size", "16"],
    "palm": ["--task", "palm_seq2seq", "--arch", "palm_tiny", "--criterion", "label_smoothed_cross_entropy",
             "--max-source-positions", "16", "--max-target-positions", "8", "--batch-size", "16"],
}  # fmt: skip


@pytest.fixture
def data(request, pmlm_bin, pairs_bin):
    return pmlm_bin if request.param == "pmlm" else pairs_bin


def train(data, task, save, *extra):
    proc = run_cli(["fairseq-train", str(data), *COMMON, *TASKS[task], "--save-dir", str(save), *extra])
    log = proc.stdout + proc.stderr
    records = train_records(log)
    assert records, log[-3000:]
    return records


def weights(path):
    return torch.load(path, map_location="cpu", weights_only=True)["model"]


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("task, data", [(t, t) for t in TASKS], indirect=["data"])
def test_amp_bf16_first_update_matches_float32(task, data, device, tmp_path):
    fp32 = train(data, task, tmp_path / "fp32", *device, "--lr", SMALL_LR, "--max-update", "1", "--no-save")
    save = tmp_path / "bf16"
    bf16 = train(data, task, save, *device, "--amp-bf16", "--lr", SMALL_LR, "--max-update", "2",
                      "--save-interval-updates", "1", "--no-epoch-checkpoints")  # fmt: skip
    first, reference = bf16[0], fp32[0]
    assert first["num_updates"] == reference["num_updates"] == 1
    print(f"{task}: first-update loss float32 {reference['loss']} / --amp-bf16 {first['loss']}; "
          f"gnorm {reference['gnorm']} / {first['gnorm']}")  # fmt: skip
    assert first["loss"] == pytest.approx(reference["loss"], rel=LOSS_RTOL)
    assert all(math.isfinite(r["gnorm"]) and r["gnorm"] > 0 for r in bf16)
    assert first["gnorm"] == pytest.approx(reference["gnorm"], rel=0.1)

    after_one, after_two = weights(save / "checkpoint_1_1.pt"), weights(save / "checkpoint_last.pt")
    assert after_one.keys() == after_two.keys()
    unchanged = []
    for name, value in after_two.items():
        if not value.is_floating_point():
            continue
        assert value.dtype == torch.float32, name  # the weights (and so the checkpoint) stay float32
        assert torch.isfinite(value).all(), name
        if torch.equal(value, after_one[name]):
            unchanged.append(name)
    # every weight moved on the second update, by steps bfloat16 weights could not hold; fairseq's
    # encoders and decoders keep a float "version" buffer
    assert all(name.endswith(".version") for name in unchanged), unchanged


def test_bf16_names_amp_bf16_instead_of_failing_in_torch_xla(pmlm_bin, tmp_path):
    for flag in ("--bf16", "--memory-efficient-bf16"):
        proc = run_cli(["fairseq-train", str(pmlm_bin), *COMMON, *TASKS["pmlm"], "--lr", SMALL_LR,
                        "--max-update", "1", "--no-save", "--save-dir", str(tmp_path), "--cpu", flag],
                       check=False)  # fmt: skip
        assert proc.returncode != 0
        assert "use --amp-bf16 instead" in proc.stderr and "torch_xla is not installed" in proc.stderr
        assert "xla_device" not in proc.stderr and "get_tpu_device" not in proc.stderr


@pytest.mark.parametrize("flag", ["--amp", "--memory-efficient-fp16"])
def test_amp_bf16_with_another_precision_option_is_a_clear_error(pairs_bin, tmp_path, flag):
    proc = run_cli(["fairseq-train", str(pairs_bin), *COMMON, *TASKS["unilm_seq2seq"], "--cpu", "--lr",
                    SMALL_LR, "--max-update", "1", "--no-save", "--save-dir", str(tmp_path), "--amp-bf16",
                    flag],
                   check=False)  # fmt: skip
    assert proc.returncode != 0
    assert "--amp-bf16 cannot be combined with" in proc.stderr


def test_amp_bf16_in_a_hydra_config(pmlm_bin, tmp_path):
    """The recipes' configs set ``common.fp16``; ``+task.amp_bf16=true`` replaces it (the task section of a
    recipe's YAML does not list the option, hence Hydra's ``+``)."""
    hydra = ["fairseq-hydra-train", "--config-dir", "examples/unilmv2_pretrain/config", "--config-name",
             "pretrain_base", f"checkpoint.save_dir={tmp_path}", "checkpoint.no_save=true", "common.cpu=true",
             "common.log_interval=1", "dataset.num_workers=0", "dataset.batch_size=4",
             "optimization.update_freq=[1]", "distributed_training.distributed_world_size=1",
             "dataset.disable_validation=true", f"task.data={pmlm_bin}", "task.tokens_per_sample=32",
             "model._name=unilmv2_tiny", "optimization.max_update=1", "lr_scheduler.warmup_updates=1",
             "+task.amp_bf16=true"]  # fmt: skip
    proc = run_cli([*hydra, "common.fp16=false"])
    (record,) = train_records(proc.stdout + proc.stderr)
    assert record["num_updates"] == 1 and record["loss"] > 0 and math.isfinite(record["gnorm"])
    proc = run_cli(hydra, check=False)
    assert proc.returncode != 0 and "--amp-bf16 cannot be combined with --fp16" in proc.stderr
