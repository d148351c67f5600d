"""Sentence-pair classification and regression with --arch unilmv2_tiny through the real tools.

fairseq's own ``sentence_prediction`` task, fine-tuned from a ``pmlm`` checkpoint with ``--restore-file``
(the head is initialised, the rest restored); regression (STS-B style); and ``unilm_sentence_prediction``
on a BERT-style one-token-per-line vocabulary.
"""

import re

import pytest
import torch

from unilm_fairseq.models.unilmv2 import POSITION_TABLE

from ..helpers.cli import run_cli
from ..helpers.sentence_pairs import WORDS, binarize, write_pair_task

pytestmark = pytest.mark.slow


def finetune(data, save, task="sentence_prediction", extra=()):
    out = run_cli(["fairseq-train", str(data), "--user-dir", "unilm_fairseq", "--task", task,
                   "--arch", "unilmv2_tiny", "--criterion", "sentence_prediction", "--max-positions", "64",
                   "--batch-size", "32", "--optimizer", "adam", "--lr", "1e-3",
                   "--lr-scheduler", "polynomial_decay", "--warmup-updates", "20",
                   "--total-num-update", "300", "--max-update", "300", "--dropout", "0",
                   "--attention-dropout", "0", "--log-format", "simple", "--log-interval", "100",
                   "--cpu", "--num-workers", "0", "--seed", "1", "--save-dir", str(save),
                   "--no-epoch-checkpoints", *extra])  # fmt: skip
    return out.stdout + out.stderr


def last_valid(log, metric):
    values = re.findall(rf"\| valid on 'valid' subset .*?\| {metric} ([\d.]+)", log)
    assert values, log[-3000:]
    return float(values[-1])


def test_classification_from_a_pretrained_checkpoint(tmp_path):
    write_pair_task(tmp_path)
    data = binarize(tmp_path)
    pretrain = tmp_path / "pretrain"
    run_cli(["fairseq-train", str(data / "input0"), "--user-dir", "unilm_fairseq", "--task", "pmlm",
             "--arch", "unilmv2_tiny", "--criterion", "ae_par", "--tokens-per-sample", "32",
             "--batch-size", "8", "--optimizer", "adam", "--lr", "1e-3", "--max-update", "5", "--cpu",
             "--num-workers", "0",
             "--save-dir", str(pretrain), "--no-epoch-checkpoints", "--disable-validation"])  # fmt: skip
    log = finetune(data, tmp_path / "ckpt", extra=["--num-classes", "2", "--init-token", "0",
                   "--restore-file", str(pretrain / "checkpoint_last.pt"), "--reset-optimizer",
                   "--reset-dataloader", "--reset-meters", "--reset-lr-scheduler"])  # fmt: skip
    pretrained = torch.load(pretrain / "checkpoint_last.pt", weights_only=True)
    finetuned = torch.load(tmp_path / "ckpt" / "checkpoint_last.pt", weights_only=True)
    # the head is new: not in the pre-trained checkpoint, initialised and trained in the fine-tuned one
    head = "classification_heads.sentence_classification_head.out_proj.weight"
    assert head not in pretrained["model"] and head in finetuned["model"]
    # --restore-file loaded the pre-trained checkpoint: its history is carried into the new checkpoint
    assert finetuned["optimizer_history"][:-1] == pretrained["optimizer_history"]
    # --max-positions 64 against the pre-trained table of 256 rows
    assert (
        pretrained["model"][POSITION_TABLE].size(0) == 256
        and finetuned["model"][POSITION_TABLE].size(0) == 64
    )
    accuracy = last_valid(log, "accuracy")
    assert accuracy >= 95.0, log[-2000:]


def test_regression(tmp_path):
    write_pair_task(tmp_path, regression=True)
    data = binarize(tmp_path, regression=True)
    log = finetune(data, tmp_path / "ckpt", extra=["--num-classes", "1", "--init-token", "0",
                   "--regression-target", "--best-checkpoint-metric", "loss",
                   "--report-pearson-and-spearman"])  # fmt: skip
    # labels 0 / 1.5 / 3 in equal parts: variance 1.5; predicting the mean would give a loss near it
    assert last_valid(log, "loss") < 0.15, log[-2000:]
    assert last_valid(log, "pearson") > 0.95, log[-2000:]


def test_unilm_task_on_a_token_list_vocabulary(tmp_path):
    vocab = tmp_path / "vocab.txt"
    vocab.write_text("\n".join(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", *WORDS]) + "\n")
    write_pair_task(tmp_path)
    task_args = ["--user-dir", "unilm_fairseq", "--task", "unilm_sentence_prediction"]
    data = binarize(tmp_path, srcdict=vocab, task_args=task_args)
    assert (data / "input0" / "dict.txt").read_text().splitlines()[:3] == ["[PAD]", "[UNK]", "[CLS]"]
    # every valid pair is in a batch: fairseq's batching in multiples of 8 scored 96 of the 100
    from fairseq.tasks.sentence_prediction import SentencePredictionConfig

    from unilm_fairseq.tasks.unilm_sentence_prediction import UniLMSentencePredictionTask

    task = UniLMSentencePredictionTask.setup_task(
        SentencePredictionConfig(data=str(data), num_classes=2, seed=1, max_positions=64)
    )
    valid = task.load_dataset("valid")
    batches = task.get_batch_iterator(valid, max_sentences=32, required_batch_size_multiple=8).next_epoch_itr(
        shuffle=False
    )
    assert sorted(i for batch in batches for i in batch["id"].tolist()) == list(range(100))
    log = finetune(data, tmp_path / "ckpt", task="unilm_sentence_prediction", extra=["--num-classes", "2"])
    assert "--init-token unset: starting every input with [CLS] (id 2)" in log
    assert last_valid(log, "accuracy") >= 95.0, log[-2000:]
