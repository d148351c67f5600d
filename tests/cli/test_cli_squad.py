"""Extractive QA end to end: fairseq-train --task squad_qa on a learnable SQuAD-format set (v2.0, with
unanswerable questions), then scripts/predict_squad.py and the official EM/F1."""

import json
import os
import re
import sys

import pytest

from ..helpers.cli import REPO, run_cli
from ..helpers.squad import write_squad_dir

pytestmark = pytest.mark.slow

WINDOW = ["--max-seq-length", "64", "--doc-stride", "24", "--max-query-length", "16"]


@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    work = tmp_path_factory.mktemp("squad")
    write_squad_dir(work, train_paragraphs=1500, valid_paragraphs=100, unanswerable_prob=0.3)
    out = run_cli(["fairseq-train", str(work), "--user-dir", "unilm_fairseq", "--task", "squad_qa",
                   "--arch", "unilmv2_tiny", "--criterion", "squad_span", *WINDOW, "--batch-size", "32",
                   "--optimizer", "adam", "--lr", "5e-3", "--lr-scheduler", "polynomial_decay",
                   "--warmup-updates", "50", "--total-num-update", "800", "--max-update", "800",
                   "--dropout", "0", "--attention-dropout", "0", "--log-format", "simple",
                   "--log-interval", "100", "--cpu", "--num-workers", "0", "--seed", "1",
                   "--save-dir", str(work / "ckpt"), "--no-epoch-checkpoints", "--validate-interval", "100",
                   "--required-batch-size-multiple", "1"])  # fmt: skip
    return work, out.stdout + out.stderr


def predict(work, data_file, *extra):
    out = run_cli([sys.executable, os.path.join(REPO, "scripts", "predict_squad.py"), "--checkpoint",
                   str(work / "ckpt" / "checkpoint_last.pt"), "--input", str(data_file), "--output",
                   str(work / "pred.json"), "--cpu", *extra])  # fmt: skip
    metrics = json.loads(out.stdout[out.stdout.index("{") :])
    with open(work / "pred.json") as f:
        return metrics, json.load(f)


def test_train_logs_windows_and_span_accuracy(trained):
    _, log = trained
    # passages of ~30-90 pieces: most are longer than one 64-token window
    windows = int(re.search(r"train\.json: \d+ questions -> (\d+) windows", log).group(1))
    questions = int(re.search(r"train\.json: (\d+) questions", log).group(1))
    assert windows > 1.2 * questions
    accuracies = [float(a) for a in re.findall(r"span_acc=([\d.]+)", log)]
    assert accuracies[-1] > 80 > accuracies[0], log[-3000:]


def test_v2_predictions_reach_high_f1_with_no_answers(trained):
    work, _ = trained
    metrics, predictions = predict(work, work / "valid.json", "--version-2-with-negative")
    with open(work / "valid.json") as f:
        paragraphs = json.load(f)["data"][0]["paragraphs"]
    qas = [qa for p in paragraphs for qa in p["qas"]]
    assert set(predictions) == {qa["id"] for qa in qas}
    assert metrics["NoAns_total"] >= 15 and metrics["HasAns_total"] >= 50
    assert metrics["f1"] >= 80 and metrics["HasAns_f1"] >= 80 and metrics["NoAns_f1"] >= 80, metrics
    # answers are cut from the original passage: case kept
    capitalized = [
        qa for qa in qas if qa["answers"] and qa["answers"][0]["text"] != qa["answers"][0]["text"].lower()
    ]
    assert sum(predictions[qa["id"]] == qa["answers"][0]["text"] for qa in capitalized) >= 0.8 * len(
        capitalized
    )


def test_v1_predictions_always_answer(trained, tmp_path):
    work, _ = trained
    with open(work / "valid.json") as f:
        data = json.load(f)
    for paragraph in data["data"][0]["paragraphs"]:
        paragraph["qas"] = [qa for qa in paragraph["qas"] if not qa["is_impossible"]]
    data["version"] = "1.1"
    (tmp_path / "dev-v1.1.json").write_text(json.dumps(data))
    metrics, predictions = predict(work, tmp_path / "dev-v1.1.json", "--max-answer-length", "30")
    assert all(predictions.values())  # v1.1: never the empty answer
    assert metrics["exact"] >= 70 and metrics["f1"] >= 80, metrics


def test_answerability_classifier_trains_and_decides_no_answer(tmp_path):
    """--answerability-head (UniLMv2 §4.2's classifier on [SOS]) trains with the span loss, and
    predict_squad.py answers '' exactly where its probability of no answer exceeds the threshold."""
    write_squad_dir(tmp_path, train_paragraphs=1500, valid_paragraphs=100, unanswerable_prob=0.3)
    out = run_cli(["fairseq-train", str(tmp_path), "--user-dir", "unilm_fairseq", "--task", "squad_qa",
                   "--answerability-head", "--arch", "unilmv2_tiny", "--criterion", "squad_span", *WINDOW,
                   "--batch-size", "32", "--optimizer", "adam", "--lr", "5e-3", "--lr-scheduler",
                   "polynomial_decay", "--warmup-updates", "50", "--total-num-update", "400", "--max-update",
                   "400", "--dropout", "0", "--attention-dropout", "0", "--log-format", "simple",
                   "--log-interval", "100", "--cpu", "--num-workers", "0", "--seed", "1", "--save-dir",
                   str(tmp_path / "ckpt"), "--no-epoch-checkpoints", "--required-batch-size-multiple",
                   "1"])  # fmt: skip
    log = out.stdout + out.stderr
    accuracies = [float(a) for a in re.findall(r"answerability_acc=([\d.]+)", log)]
    losses = [float(a) for a in re.findall(r"answerability_loss=([\d.]+)", log)]
    assert accuracies[-1] > 95 > accuracies[0] and losses[-1] < losses[0] / 4, log[-3000:]
    last_valid = re.findall(r"valid on 'valid' subset .*", log)[-1]
    assert "num_updates 400" in last_valid
    assert float(re.search(r"answerability_acc ([\d.]+)", last_valid).group(1)) > 95

    probs_file = tmp_path / "no_answer_probs.json"
    metrics, predictions = predict(tmp_path, tmp_path / "valid.json", "--version-2-with-negative",
                                   "--no-answer-prob-output", str(probs_file))  # fmt: skip
    probs = json.loads(probs_file.read_text())
    assert set(probs) == set(predictions)
    assert {qid for qid, p in probs.items() if p > 0.5} == {qid for qid, a in predictions.items() if a == ""}
    assert metrics["NoAns_total"] >= 15 and metrics["NoAns_f1"] >= 90, metrics
    assert metrics["HasAns_f1"] >= 60 and metrics["f1"] >= 70, metrics
    # a threshold no probability exceeds: every question gets a span
    _, answered = predict(tmp_path, tmp_path / "valid.json", "--version-2-with-negative",
                          "--answerability-threshold", "1.0")  # fmt: skip
    assert all(answered.values())
