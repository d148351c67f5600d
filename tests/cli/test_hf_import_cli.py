"""A converted checkpoint used directly by the fairseq command-line tools: ``fairseq-preprocess
--srcdict dict.txt``, ``fairseq-train --task unilm_seq2seq --pretrained-checkpoint model.pt`` (20 updates)
with the flags of ``model_args.txt``, and ``fairseq-generate`` (on the fine-tuned and on the converted
model), and ``fairseq-validate --task pmlm`` on the converted model; then
``UniLMModel.from_pretrained(...).generate`` gives the hypotheses ``fairseq-generate`` gave."""

import math
import os
import re
import sys

import pytest
import torch

from unilm_fairseq import UniLMModel

from ..helpers.cli import REPO, preprocess, run_cli
from ..helpers.hf import TINY, save_hf, wordpiece_tokens

transformers = pytest.importorskip("transformers")
pytest.importorskip("safetensors")

pytestmark = pytest.mark.slow

NUM_PAIRS = 12
FIRST_WORD = 6  # after the special tokens of wordpiece_tokens()


def write_pairs(prefix, tokens):
    """Source: a run of words; target: its first three words."""
    words = tokens[FIRST_WORD:]
    src, tgt = [], []
    for i in range(NUM_PAIRS):
        run = [words[(i + k) % len(words)] for k in range(5 + i % 4)]
        src.append(" ".join(run))
        tgt.append(" ".join(run[:3]))
    with open(prefix + ".src", "w") as f:
        f.write("\n".join(src) + "\n")
    with open(prefix + ".tgt", "w") as f:
        f.write("\n".join(tgt) + "\n")


def test_convert_finetune_generate(tmp_path):
    tokens = wordpiece_tokens()
    torch.manual_seed(0)
    hf = transformers.BertForMaskedLM(transformers.BertConfig(vocab_size=len(tokens), **TINY))
    model_dir = save_hf(hf, str(tmp_path / "hf"), {"vocab.txt": "\n".join(tokens) + "\n"})
    converted = tmp_path / "converted"
    run_cli(
        [sys.executable, os.path.join(REPO, "scripts", "convert_hf_checkpoint.py"), model_dir, str(converted)]
    )
    model_args = (converted / "model_args.txt").read_text().split()

    for split in ("train", "valid", "test"):
        write_pairs(str(tmp_path / split), tokens)
    data = tmp_path / "bin"
    run_cli(["fairseq-preprocess", "--user-dir", "unilm_fairseq", "--task", "unilm_seq2seq",
             "--source-lang", "src", "--target-lang", "tgt", "--joined-dictionary",
             "--srcdict", str(converted / "dict.txt"), "--trainpref", str(tmp_path / "train"),
             "--validpref", str(tmp_path / "valid"), "--testpref", str(tmp_path / "test"),
             "--destdir", str(data), "--workers", "1"])  # fmt: skip
    assert (data / "dict.src.txt").read_text() == (converted / "dict.txt").read_text()

    save = tmp_path / "ckpt"
    train = run_cli(["fairseq-train", str(data), "--user-dir", "unilm_fairseq", "--task", "unilm_seq2seq",
                     *model_args, "--pretrained-checkpoint", str(converted / "model.pt"),
                     "--criterion", "unilm_seq2seq", "--max-source-positions", "16",
                     "--max-target-positions", "8", "--batch-size", "4", "--optimizer", "adam",
                     "--lr", "1e-4", "--max-update", "20", "--cpu", "--num-workers", "0",
                     "--save-dir", str(save), "--no-epoch-checkpoints"])  # fmt: skip
    assert "initialised from" in train.stdout + train.stderr

    generate = ["fairseq-generate", str(data), "--user-dir", "unilm_fairseq", "--task", "unilm_seq2seq",
                "--gen-subset", "test", "--beam", "2", "--max-len-b", "5", "--batch-size", "4",
                "--required-batch-size-multiple", "1", "--cpu", "--max-source-positions", "16",
                "--max-target-positions", "8"]  # fmt: skip
    outputs = {}
    for checkpoint in (save / "checkpoint_last.pt", converted / "model.pt"):
        out = outputs[checkpoint] = run_cli([*generate, "--path", str(checkpoint)]).stdout
        assert sum(line.startswith("H-") for line in out.splitlines()) == NUM_PAIRS, out[-2000:]

    # fairseq-validate scores the converted model (saved with the pmlm task) before any training: its
    # checkpoint names no criterion, so the task's own (ae_par) is used
    lm_data = tmp_path / "lm-bin"
    preprocess(["--user-dir", "unilm_fairseq", "--task", "pmlm", "--only-source",
                "--srcdict", str(converted / "dict.txt"), "--trainpref", str(tmp_path / "train.src"),
                "--validpref", str(tmp_path / "valid.src"), "--destdir", str(lm_data),
                "--workers", "1"])  # fmt: skip
    out = run_cli(["fairseq-validate", str(lm_data), "--user-dir", "unilm_fairseq", "--task", "pmlm",
                   "--path", str(converted / "model.pt"), "--tokens-per-sample", "16", "--batch-size", "4",
                   "--cpu"])  # fmt: skip
    log = out.stderr + out.stdout
    # the task's own criterion, ae_par, scored it: its AE loss is among the metrics
    assert re.search(r"valid on 'valid' subset \| loss [\d.]+ \| nll_loss [\d.]+ \| ae_loss [\d.]+", log)

    # the Python API on the fine-tuned checkpoint: the same hypotheses as fairseq-generate
    hypotheses = {}
    for line in outputs[save / "checkpoint_last.pt"].splitlines():
        if line.startswith("H-"):
            index, score, text = line.split("\t")
            hypotheses[int(index[2:])] = (float(score), text)
    unilm = UniLMModel.from_pretrained(
        str(save), "checkpoint_last.pt", str(data), max_source_positions=16, max_target_positions=8
    )
    with open(tmp_path / "test.src") as f:
        sources = [unilm.src_dict.encode_line(line, add_if_not_exist=False) for line in f]
    api = unilm.generate(sources, beam=2, max_len_b=5, batch_size=4)
    assert len(api) == len(hypotheses) == NUM_PAIRS
    for i, hypos in enumerate(api):
        score, text = hypotheses[i]
        assert unilm.string(hypos[0]["tokens"]) == text
        # fairseq-generate prints the score in base 2, to 4 decimals
        assert abs(float(hypos[0]["score"]) / math.log(2) - score) < 1e-4
