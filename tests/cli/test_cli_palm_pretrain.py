"""PALM's two pre-training stages through the command line, on a small sample of the embedded corpus.

prepare_corpus (sentencepiece) -> fairseq-preprocess --only-source -> fairseq-train --stage 1
-> fairseq-train --stage 2 --stage1-checkpoint (and --restore-file); the encoder carried over is checked
by loading both checkpoints.
"""

import math
import os
import re

import pytest
import torch
from fairseq import checkpoint_utils, tasks

from unilm_fairseq.checkpoint.stage_init import load_encoder_from_checkpoint

from ..helpers.cli import REPO, run_cli

pytestmark = pytest.mark.slow

TRAIN_COMMON = [
    "--user-dir", "unilm_fairseq", "--task", "palm_pretrain", "--arch", "palm_tiny", "--criterion", "palm",
    "--max-fragment-tokens", "96", "--batch-size", "8", "--optimizer", "adam", "--lr", "1e-3",
    "--log-format", "simple", "--log-interval", "1", "--num-workers", "0", "--seed", "3", "--cpu",
    "--no-epoch-checkpoints", "--max-update", "4",
]  # fmt: skip


def train_records(log):
    return [
        {k: float(v) for k, v in re.findall(r"(\w+)=([-\d.e]+|inf|nan)", line)}
        for line in log.splitlines()
        if "| train_inner |" in line
    ]


@pytest.fixture(scope="module")
def stages(tmp_path_factory):
    """Stage 1, then stage 2 from its checkpoint; returns the work dir and both logs."""
    work = tmp_path_factory.mktemp("palm_pretrain")
    run_cli(["python", os.path.join(REPO, "scripts", "prepare_corpus.py"), "--out", str(work / "text"),
             "--max-docs", "4", "--valid-docs", "1", "--vocab-size", "800"])  # fmt: skip
    run_cli(["fairseq-preprocess", "--only-source", "--trainpref", str(work / "text" / "train.spm"),
             "--validpref", str(work / "text" / "valid.spm"), "--destdir", str(work / "bin"),
             "--workers", "1"])  # fmt: skip
    one = run_cli(["fairseq-train", str(work / "bin"), *TRAIN_COMMON, "--stage", "1",
                   "--save-dir", str(work / "stage1")])  # fmt: skip
    stage1 = str(work / "stage1" / "checkpoint_last.pt")
    two = run_cli(["fairseq-train", str(work / "bin"), *TRAIN_COMMON, "--stage", "2",
                   "--label-smoothing", "0.1", "--stage1-checkpoint", stage1,
                   "--save-dir", str(work / "stage2")])  # fmt: skip
    return work, one.stdout + one.stderr, two.stdout + two.stderr


def test_stage1_trains_the_encoder_mlm(stages):
    work, log, _ = stages
    assert re.search(r"train: \d+ lines, \d+ empty \(document breaks\) -> 3 documents, \d+ windows", log)
    records = train_records(log)
    assert [r["num_updates"] for r in records] == [1, 2, 3, 4]
    for r in records:
        assert "mlm_loss" in r and "lm_loss" not in r and "nll_loss" not in r
        assert math.isfinite(r["mlm_loss"]) and r["mlm_loss"] > 0
        assert r["loss"] == pytest.approx(r["mlm_loss"], abs=0.002)
    assert "valid on 'valid' subset" in log and (work / "stage1" / "checkpoint_last.pt").exists()


def test_stage2_logs_its_initialisation_and_the_continuation_loss(stages):
    work, _, log = stages
    assert "stage 2 from stage-1 checkpoint" in log
    fresh = re.search(r"freshly initialised: (\d+) tensors: (.*)", log)
    copied = re.search(r"from the checkpoint: (\d+) tensors: (.*)", log)
    assert fresh and "decoder.layers" in fresh.group(2) and "encoder" not in fresh.group(2)
    assert copied and "encoder.layers" in copied.group(2) and "encoder_mlm_head" in copied.group(2)
    assert "decoder" not in copied.group(2)
    records = train_records(log)
    assert [r["num_updates"] for r in records] == [1, 2, 3, 4]
    for r in records:
        for key in ("lm_loss", "nll_loss", "ppl"):
            assert math.isfinite(r[key]) and r[key] > 0
        assert r["lm_loss"] > r["nll_loss"]  # label smoothing 0.1
        # PALM §2.2's stage 2 by default: the continuation loss alone, no MLM term
        assert "mlm_loss" not in r
        assert r["loss"] == pytest.approx(r["lm_loss"], abs=0.002)
    assert (work / "stage2" / "checkpoint_last.pt").exists()


def test_stage2_model_keeps_the_stage1_encoder(stages):
    work, _, _ = stages
    stage1 = torch.load(work / "stage1" / "checkpoint_last.pt", weights_only=True)
    stage2 = torch.load(work / "stage2" / "checkpoint_last.pt", weights_only=True)
    assert set(stage1["model"]) == set(stage2["model"])  # one parameter set in both stages

    # what stage 2 started from: build its model the way fairseq-train does, loading the stage-1 encoder
    cfg = checkpoint_utils.load_checkpoint_to_cpu(str(work / "stage2" / "checkpoint_last.pt"))["cfg"]
    task = tasks.setup_task(cfg.task)
    model = task.build_model(cfg.model)
    state = model.state_dict()
    encoder = [k for k in state if not k.startswith("decoder.")]
    assert any(k.startswith("encoder.layers.") for k in encoder) and any("mlm_head" in k for k in encoder)
    for k in encoder:
        assert torch.equal(state[k], stage1["model"][k]), k
    # the decoder is this model's own: nothing under decoder. was read from the checkpoint
    origin = load_encoder_from_checkpoint(model, str(work / "stage1" / "checkpoint_last.pt"))
    assert sorted(origin["checkpoint"]) == sorted(encoder)
    assert all(k.startswith("decoder.") for k in origin["fresh"] + origin["tied"])
    assert "decoder.embed_tokens.weight" in origin["tied"]  # tied to the encoder's embeddings
    assert any(k.startswith("decoder.layers.") for k in origin["fresh"])

    # stage 2 trained on: its encoder moved away from stage 1's
    assert not torch.equal(
        stage2["model"]["encoder.layers.0.fc1.weight"], stage1["model"]["encoder.layers.0.fc1.weight"]
    )


def test_stage2_takes_the_stage1_encoder_layernorm_eps(stages, tmp_path):
    """A stage 1 started from BERT (--pretrained-encoder: LayerNorm epsilon 1e-12) gives stage 2, which
    cannot take --pretrained-encoder, its epsilon: the encoder computes what stage 1 trained."""
    work, _, _ = stages
    stage1 = checkpoint_utils.load_checkpoint_to_cpu(str(work / "stage1" / "checkpoint_last.pt"))
    assert stage1["cfg"].model.encoder_layernorm_eps != 1e-12
    stage1["cfg"].model.encoder_layernorm_eps = 1e-12
    path = str(tmp_path / "stage1_bert.pt")
    torch.save(stage1, path)
    cfg = checkpoint_utils.load_checkpoint_to_cpu(str(work / "stage2" / "checkpoint_last.pt"))["cfg"]
    cfg.task.stage1_checkpoint = path
    model = tasks.setup_task(cfg.task).build_model(cfg.model)
    assert cfg.model.encoder_layernorm_eps == 1e-12
    assert {m.eps for m in model.encoder.modules() if isinstance(m, torch.nn.LayerNorm)} == {1e-12}


def test_stage2_by_restore_file_with_the_mlm_term(stages, tmp_path):
    """--restore-file loads every stage-1 tensor strictly (the decoder too: stage 1 left it untrained);
    --mlm-weight 1.0 (this project's option) adds the encoder's MLM to the continuation loss."""
    work, _, _ = stages
    out = run_cli(["fairseq-train", str(work / "bin"), *TRAIN_COMMON, "--stage", "2", "--max-update", "2",
                   "--mlm-weight", "1.0",
                   "--restore-file", str(work / "stage1" / "checkpoint_last.pt"), "--reset-optimizer",
                   "--reset-dataloader", "--reset-meters", "--save-dir", str(tmp_path)])  # fmt: skip
    log = out.stdout + out.stderr
    # --restore-file loaded stage 1's checkpoint: its history is carried into the new checkpoint
    stage1 = torch.load(work / "stage1" / "checkpoint_last.pt", weights_only=True)
    restored = torch.load(tmp_path / "checkpoint_last.pt", weights_only=True)
    assert restored["optimizer_history"][:-1] == stage1["optimizer_history"]
    records = train_records(log)
    assert records and all(math.isfinite(r["lm_loss"]) for r in records)
    for r in records:
        # one batch per update: loss per continuation token = lm_loss + 1.0 * mlm_loss (both per token)
        assert math.isfinite(r["mlm_loss"]) and r["mlm_loss"] > 0
        assert r["loss"] == pytest.approx(r["lm_loss"] + r["mlm_loss"], abs=0.01)


def test_continuation_from_the_pretrained_model(stages):
    """A stage-2 checkpoint continues a context: fairseq-interactive and the Python API agree."""
    from unilm_fairseq import PALMHubInterface

    work, _, _ = stages
    context = (work / "text" / "valid.spm").read_text().splitlines()[0]
    out = run_cli(["fairseq-interactive", str(work / "bin"), "--user-dir", "unilm_fairseq",
                   "--task", "palm_pretrain", "--max-fragment-tokens", "96",
                   "--path", str(work / "stage2" / "checkpoint_last.pt"), "--beam", "3", "--max-len-b", "12",
                   "--no-repeat-ngram-size", "2", "--cpu"], input_text=context + "\n")  # fmt: skip
    hypotheses = re.findall(r"^H-0\t\S+\t(.*)$", out.stdout, re.M)
    assert len(hypotheses) == 1 and hypotheses[0].split(), out.stdout[-2000:]
    pieces = hypotheses[0].split()
    bigrams = list(zip(pieces, pieces[1:]))
    assert len(bigrams) == len(set(bigrams))  # --no-repeat-ngram-size 2 held on CPU

    palm = PALMHubInterface.from_pretrained(
        str(work / "stage2"), checkpoint_file="checkpoint_last.pt", data_name_or_path=str(work / "bin"),
        max_fragment_tokens=96,
    )  # fmt: skip
    assert palm.generate([context], beam=3, max_len_b=12, no_repeat_ngram_size=2) == hypotheses


def test_pretrained_model_fine_tunes_generates_and_scores(stages, tmp_path):
    """The whole journey: stage 2 -> palm_seq2seq fine-tuning on real-text pairs -> generate -> ROUGE.

    Pairs are consecutive sentences of the held-out text (sentence -> the next one), in the
    pre-training pieces, binarized with the pre-training dict.txt.
    """
    work, _, _ = stages
    sentences = [s for s in (work / "text" / "valid.spm").read_text().splitlines() if s.strip()]
    pairs = list(zip(sentences, sentences[1:]))
    assert len(pairs) >= 20
    for split, chunk in (("train", pairs), ("valid", pairs[:8]), ("test", pairs[8:20])):
        (tmp_path / f"{split}.src").write_text("".join(s + "\n" for s, _ in chunk))
        (tmp_path / f"{split}.tgt").write_text("".join(t + "\n" for _, t in chunk))
    dictionary = str(work / "bin" / "dict.txt")
    run_cli(["fairseq-preprocess", "--source-lang", "src", "--target-lang", "tgt", "--srcdict", dictionary,
             "--tgtdict", dictionary, "--trainpref", str(tmp_path / "train"), "--validpref",
             str(tmp_path / "valid"), "--testpref", str(tmp_path / "test"),
             "--destdir", str(tmp_path / "bin"), "--workers", "1"])  # fmt: skip
    stage2 = str(work / "stage2" / "checkpoint_last.pt")
    train = run_cli(["fairseq-train", str(tmp_path / "bin"), "--user-dir", "unilm_fairseq",
                     "--task", "palm_seq2seq", "--arch", "palm_tiny", "--pretrained-checkpoint", stage2,
                     "--criterion", "label_smoothed_cross_entropy", "--label-smoothing", "0.1",
                     "--max-source-positions", "97", "--max-target-positions", "97", "--truncate-source",
                     "--batch-size", "8", "--optimizer", "adam", "--lr", "1e-3", "--max-update", "4",
                     "--log-format", "simple", "--log-interval", "1", "--num-workers", "0", "--seed", "3",
                     "--cpu", "--save-dir", str(tmp_path / "ckpt"), "--no-epoch-checkpoints"])  # fmt: skip
    log = train.stdout + train.stderr
    assert f"initialised from {stage2}" in log  # the pre-trained weights were loaded
    # the encoder MLM head is not loaded: the fine-tuned model has none, stage 2's checkpoint has one
    pretrained = torch.load(stage2, weights_only=True)["model"]
    finetuned = torch.load(tmp_path / "ckpt" / "checkpoint_last.pt", weights_only=True)["model"]
    assert any(k.startswith("encoder_mlm_head.") for k in pretrained)
    assert not any(k.startswith("encoder_mlm_head.") for k in finetuned)
    assert re.search(r"valid on 'valid' subset .*\| nll_loss [\d.]+", log), log[-2000:]
    out = run_cli(["fairseq-generate", str(tmp_path / "bin"), "--user-dir", "unilm_fairseq",
                   "--task", "palm_seq2seq", "--path", str(tmp_path / "ckpt" / "checkpoint_last.pt"),
                   "--gen-subset", "test", "--beam", "3", "--lenpen", "1.0", "--min-len", "3",
                   "--max-len-b", "12", "--no-repeat-ngram-size", "3", "--truncate-source",
                   "--batch-size", "8", "--required-batch-size-multiple", "1", "--cpu",
                   "--scoring", "rouge"])  # fmt: skip
    hypotheses = re.findall(r"^H-\d+\t\S+\t(.*)$", out.stdout, re.M)
    assert len(hypotheses) == 12  # every test pair, none dropped
    assert all(len(h.split()) >= 3 for h in hypotheses)  # --min-len held
    rouge = re.search(r"ROUGE-1 = ([\d.]+), ROUGE-2 = ([\d.]+), ROUGE-L = ([\d.]+)", out.stdout)
    assert rouge and all(0.0 <= float(v) <= 100.0 for v in rouge.groups()), out.stdout[-2000:]
