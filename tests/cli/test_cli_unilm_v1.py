"""UniLM v1 pre-training end to end through the real command-line tools on a sample of the embedded corpus.

prepare_corpus (sentencepiece) -> fairseq-preprocess --only-source -> fairseq-train --task unilm
--criterion unilm -> fairseq-validate; and on to s2s-ft fine-tuning, fairseq-generate and the Python API,
which keep the seq2seq LM's segment ids 4/5.
"""

import math
import os
import re

import pytest
import torch
from fairseq import checkpoint_utils
from fairseq.data import data_utils

from unilm_fairseq import UniLMModel
from unilm_fairseq.models.unilmv2 import SEGMENT_TABLE

from ..helpers.cli import REPO, binarize_austen, run_cli, train_records

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
    return binarize_austen(tmp_path_factory.mktemp("unilm_v1"))


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


def hypotheses(generate_output: str):
    """``{sample id: (hypothesis, score in nats)}`` from fairseq-generate's H lines (which print base 2)."""
    found = re.findall(r"^H-(\d+)\t(\S+)\t(.*)$", generate_output, re.M)
    return {int(i): (text, float(score) * math.log(2)) for i, score, text in found}


def test_v1_pretraining_fine_tunes_and_decodes_with_segment_ids_4_5(tmp_path):
    """UniLM v1 pre-training -> s2s-ft fine-tuning initialised from it -> fairseq-generate and the Python
    API: the seq2seq segment ids 4/5 are taken from the checkpoints, no flag given."""
    text, lm_bin, s2s_bin = tmp_path / "text", tmp_path / "lm-bin", tmp_path / "s2s-bin"
    run_cli(["python", os.path.join(REPO, "scripts", "prepare_corpus.py"), "--out", str(text), "--max-docs",
             "5", "--valid-docs", "2", "--vocab-size", "800", "--pairs-window", "3"])  # fmt: skip
    run_cli(["fairseq-preprocess", "--only-source", "--trainpref", str(text / "train.spm"),
             "--validpref", str(text / "valid.spm"), "--destdir", str(lm_bin), "--workers", "1"])  # fmt: skip
    run_cli(["fairseq-train", str(lm_bin), *TRAIN_COMMON, "--max-update", "10",
             "--save-dir", str(tmp_path / "lm"), "--no-epoch-checkpoints"])  # fmt: skip
    for side in ("src", "tgt"):  # a short test set keeps generation quick
        lines = (text / f"test.{side}").read_text().splitlines()[:12]
        (text / f"short.{side}").write_text("\n".join(lines) + "\n")
    dict_txt = str(lm_bin / "dict.txt")
    run_cli(["fairseq-preprocess", "--source-lang", "src", "--target-lang", "tgt", "--srcdict", dict_txt,
             "--tgtdict", dict_txt, "--trainpref", str(text / "train"), "--validpref", str(text / "valid"),
             "--testpref", str(text / "short"), "--destdir", str(s2s_bin), "--workers", "1"])  # fmt: skip
    train = run_cli(["fairseq-train", str(s2s_bin), "--user-dir", "unilm_fairseq", "--task", "unilm_seq2seq",
                     "--arch", "unilmv2_tiny", "--num-segments", "6", "--criterion", "unilm_seq2seq",
                     "--max-source-positions", "128", "--max-target-positions", "64",
                     "--pretrained-checkpoint", str(tmp_path / "lm" / "checkpoint_last.pt"),
                     "--batch-size", "8", "--optimizer", "adam", "--lr", "1e-3", "--max-update", "10",
                     "--log-format", "simple", "--cpu", "--num-workers", "0",
                     "--save-dir", str(tmp_path / "s2s"), "--no-epoch-checkpoints"])  # fmt: skip
    log = train.stdout + train.stderr
    # the pre-trained checkpoint has UniLM v1's 6 segment embeddings, so the seq2seq ids are 4 and 5
    pretrained = torch.load(tmp_path / "lm" / "checkpoint_last.pt", weights_only=True)["model"]
    assert pretrained[SEGMENT_TABLE].size(0) == 6, log[-3000:]
    checkpoint = tmp_path / "s2s" / "checkpoint_last.pt"
    model_cfg = checkpoint_utils.load_checkpoint_to_cpu(str(checkpoint))["cfg"].model
    assert (model_cfg.seq2seq_source_segment, model_cfg.seq2seq_target_segment) == (4, 5)

    def generate(*extra):
        out = run_cli(["fairseq-generate", str(s2s_bin), "--user-dir", "unilm_fairseq", "--task",
                       "unilm_seq2seq", "--path", str(checkpoint), "--gen-subset", "test", "--beam", "2",
                       "--max-len-b", "12", "--batch-size", "4", "--required-batch-size-multiple", "1",
                       "--cpu", *extra])  # fmt: skip
        return out.stdout + out.stderr

    auto = generate()
    assert "seq2seq segment ids: source 4, target 5 (from the checkpoint)" in auto
    assert len(hypotheses(auto)) == 12
    assert hypotheses(generate("--seq2seq-segment-ids", "4-5")) == hypotheses(auto)
    pair = generate("--seq2seq-segment-ids", "0-1")  # the override decodes with other embedding rows
    assert "not the checkpoint's (4, 5)" in pair
    assert [s for _, s in hypotheses(pair).values()] != [s for _, s in hypotheses(auto).values()]

    hub = UniLMModel.from_pretrained(str(tmp_path / "s2s"), checkpoint_file="checkpoint_last.pt",
                                     data_name_or_path=str(s2s_bin)).eval()  # fmt: skip
    assert hub.model.decoder.spec.segments == (4, 5) and hub.model.encoder.spec.source_segment == 4
    sources = data_utils.load_indexed_dataset(str(s2s_bin / "test.src-tgt.src"), hub.src_dict)
    found = hub.generate([sources[i] for i in range(len(sources))], beam=2, max_len_b=12)
    expected = hypotheses(auto)
    for i, hypos in enumerate(found):
        assert hub.string(hypos[0]["tokens"]) == expected[i][0]
        assert abs(float(hypos[0]["score"]) - expected[i][1]) < 1e-4
