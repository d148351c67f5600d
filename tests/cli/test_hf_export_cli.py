"""Models trained here a few updates by ``fairseq-train``, exported by ``scripts/export_hf_checkpoint.py``.

* ``--task pmlm`` (``unilmv2_tiny``: a relative position bias) -> ``--format unilm`` and ``--format s2s-ft``
  agree with an independent forward of UniLM's layouts; ``--format bert`` exits 1 naming ``--format unilm``
  and writes nothing.
* ``--task unilm_seq2seq`` (UniLM v1: six segment rows, ids 4/5, no position bias) -> ``--format bert`` loads
  in ``transformers.BertForMaskedLM`` with the trained model's hidden states and logits within ``ATOL``;
  ``--format s2s-ft`` records the segment ids 4/5 it was fine-tuned with.
"""

import json
import logging
import os
import shutil
import sys

import pytest
import torch
from fairseq import checkpoint_utils

from ..helpers.cli import REPO, preprocess, run_cli
from ..helpers.hf import ATOL, max_real_diff, padded_batch, unilm_forward, wordpiece_tokens
from ..helpers.hf_export import exported_tensors, read_json
from ..helpers.unilm_reference import reference_unilm_forward

transformers = pytest.importorskip("transformers")
pytest.importorskip("safetensors")

pytestmark = pytest.mark.slow
logger = logging.getLogger(__name__)

SCRIPT = os.path.join(REPO, "scripts", "export_hf_checkpoint.py")
ENV = {"PYTHONPATH": REPO}  # the script imports this checkout's plugin
FIRST_WORD = 6  # after the special tokens of wordpiece_tokens()
TRAIN = ["--user-dir", "unilm_fairseq", "--optimizer", "adam", "--lr", "1e-3", "--max-update", "5", "--cpu",
         "--num-workers", "0", "--seed", "2", "--no-epoch-checkpoints", "--batch-size", "4"]  # fmt: skip
TINY_V1 = ["--arch", "unilm_v1_base", "--encoder-layers", "2", "--encoder-embed-dim", "32",
           "--encoder-ffn-embed-dim", "48", "--encoder-attention-heads", "4", "--max-positions", "64",
           "--dropout", "0", "--attention-dropout", "0"]  # fmt: skip


def sentences(count: int, offset: int = 0):
    words = wordpiece_tokens()[FIRST_WORD:]
    return [
        " ".join(words[(i * 3 + k) % len(words)] for k in range(4 + i % 5))
        for i in range(offset, offset + count)
    ]


def export(checkpoint, out_dir, *flags, check=True):
    return run_cli([sys.executable, SCRIPT, str(checkpoint), str(out_dir), *flags], env=ENV, check=check)


def load(checkpoint):
    models, _, task = checkpoint_utils.load_model_ensemble_and_task([str(checkpoint)])
    return models[0].eval(), task.source_dictionary


def batch(dictionary, segment_rows, seed=0):
    ids, attention_mask, _ = padded_batch(
        len(dictionary), FIRST_WORD, dictionary.bos(), dictionary.eos(), dictionary.pad(), seed
    )
    segments = (
        torch.randint(0, segment_rows, ids.shape, generator=torch.Generator().manual_seed(seed))
        * attention_mask
    )
    return ids, attention_mask, segments


@pytest.fixture(scope="module")
def vocab(tmp_path_factory):
    path = tmp_path_factory.mktemp("vocab") / "vocab.txt"
    path.write_text("\n".join(wordpiece_tokens()) + "\n")
    return path


def test_pmlm_checkpoint_exports_to_the_unilm_layouts(tmp_path, vocab):
    lines = []
    for doc in range(4):  # documents separated by empty lines
        lines += sentences(6, offset=doc * 6) + [""]
    (tmp_path / "train.txt").write_text("\n".join(lines) + "\n")
    (tmp_path / "valid.txt").write_text("\n".join(sentences(4, offset=50)) + "\n")
    preprocess(["--user-dir", "unilm_fairseq", "--task", "pmlm", "--only-source",
                "--srcdict", str(vocab), "--trainpref", str(tmp_path / "train.txt"),
                "--validpref", str(tmp_path / "valid.txt"), "--destdir", str(tmp_path / "bin"),
                "--workers", "1"])  # fmt: skip
    run_cli(["fairseq-train", str(tmp_path / "bin"), "--task", "pmlm", "--arch", "unilmv2_tiny",
             "--criterion", "ae_par", "--tokens-per-sample", "32", "--rel-pos-bins", "16",
             "--max-rel-pos", "7", "--save-dir", str(tmp_path / "ckpt"), *TRAIN])  # fmt: skip
    checkpoint = tmp_path / "ckpt" / "checkpoint_last.pt"
    model, dictionary = load(checkpoint)
    ids, attention_mask, segments = batch(dictionary, 2)
    hidden, _ = unilm_forward(model, ids, segments, dictionary.pad())
    for layout in ("unilm", "s2s-ft"):
        out = tmp_path / layout
        export(checkpoint, out, "--format", layout)
        state, config = exported_tensors(str(out)), read_json(str(out / "config.json"))
        assert (config["rel_pos_bins"], config["max_rel_pos"], config["type_vocab_size"]) == (16, 7, 2)
        reference = reference_unilm_forward(state, config, ids, attention_mask, segments)
        diff = max_real_diff(reference, hidden, attention_mask)
        logger.info("pmlm-trained model as %s: max |hidden diff| %.2e", layout, diff)
        assert diff < ATOL, layout

    refused = export(checkpoint, tmp_path / "bert", check=False)
    assert refused.returncode == 1
    assert "relative position bias (16 buckets)" in refused.stderr and "--format unilm" in refused.stderr
    assert not (tmp_path / "bert").exists()


def test_seq2seq_checkpoint_exports_to_bert(tmp_path, vocab):
    for split, count, offset in (("train", 12, 0), ("valid", 4, 30)):
        src = sentences(count, offset)
        (tmp_path / f"{split}.src").write_text("\n".join(src) + "\n")
        (tmp_path / f"{split}.tgt").write_text("\n".join(" ".join(s.split()[:3]) for s in src) + "\n")
    preprocess(["--user-dir", "unilm_fairseq", "--task", "unilm_seq2seq",
                "--source-lang", "src", "--target-lang", "tgt", "--joined-dictionary", "--srcdict",
                str(vocab), "--trainpref", str(tmp_path / "train"), "--validpref", str(tmp_path / "valid"),
                "--destdir", str(tmp_path / "bin"), "--workers", "1"])  # fmt: skip
    run_cli(["fairseq-train", str(tmp_path / "bin"), "--task", "unilm_seq2seq",
             "--criterion", "unilm_seq2seq", *TINY_V1, "--seq2seq-segment-ids", "4-5",
             "--max-source-positions", "16", "--max-target-positions", "8",
             "--save-dir", str(tmp_path / "ckpt"), *TRAIN])  # fmt: skip
    checkpoint = tmp_path / "ckpt" / "checkpoint_last.pt"
    model, dictionary = load(checkpoint)
    assert model.cfg.num_segments == 6 and model.cfg.rel_pos_bins == 0
    # what a recipe leaves in the model folder: decoding settings, test scores, the commands it ran
    run_cli([sys.executable, os.path.join(REPO, "scripts", "write_model_folder.py"), str(tmp_path / "ckpt"),
             "--dicts", str(tmp_path / "bin"), "--checkpoint", "checkpoint_last.pt", "--bpe", "wordpiece",
             "--bpe-file", str(vocab), "--beam", "3", "--lenpen", "0.7", "--min-len", "2", "--max-len-b", "6",
             "--no-repeat-ngram-size", "2"])  # fmt: skip
    systems = {"lead": {"rouge1": 11.5, "rouge2": 2.25, "rougeL": 10.0},
               "s2s-ft (pseudo_masked)": {"rouge1": 31.25, "rouge2": 12.5, "rougeL": 29.75}}  # fmt: skip
    scores = {"num_pairs": 4, "rouge_backend": "rouge-score", "scores": systems}
    (tmp_path / "ckpt" / "scores.json").write_text(json.dumps(scores))
    (tmp_path / "ckpt" / "commands.sh").write_text("#!/usr/bin/env bash\nfairseq-train bin --seed 2\n")

    export(checkpoint, tmp_path / "bert")
    hf = transformers.BertForMaskedLM.from_pretrained(str(tmp_path / "bert")).eval()
    ids, attention_mask, segments = batch(dictionary, 6, seed=1)
    hidden, logits = unilm_forward(model, ids, segments, dictionary.pad())
    with torch.no_grad():
        out = hf(
            input_ids=ids, attention_mask=attention_mask, token_type_ids=segments, output_hidden_states=True
        )
    diffs = (
        max_real_diff(out.hidden_states[-1], hidden, attention_mask),
        max_real_diff(out.logits, logits, attention_mask),
    )
    logger.info(
        "seq2seq-trained UniLM v1 model as bert: max |hidden diff| %.2e, max |logit diff| %.2e", *diffs
    )
    assert max(diffs) < ATOL
    assert read_json(str(tmp_path / "bert" / "config.json"))["type_vocab_size"] == 6
    generation = read_json(str(tmp_path / "bert" / "generation.json"))
    assert generation == {
        "method": "pseudo_masked", "source_type_id": 4, "target_type_id": 5, "max_source_positions": 16,
        "max_target_positions": 8, "beam": 3, "lenpen": 0.7, "lenpen_style": "fairseq", "min_len": 2,
        "max_len_a": 0, "max_len_b": 6, "no_repeat_ngram_size": 2, "no_repeat_ngram_exempt": [],
    }  # fmt: skip
    assert (tmp_path / "bert" / "generate.py").is_file()
    card = (tmp_path / "bert" / "README.md").read_text()
    exported_by = f"scripts/export_hf_checkpoint.py {checkpoint} {tmp_path / 'bert'}"
    for fact in ("`pseudo_masked` (pseudo-masked fine-tuning, s2s-ft §2.3)", "at most 16", "at most 8",
                 "| updates done | 5 |", "| learning rate | 0.001 |", "| lead | 11.50 | 2.25 | 10.00 |",
                 "| s2s-ft (pseudo_masked) | 31.25 | 12.50 | 29.75 |", "fairseq-train bin --seed 2",
                 "| beam | 3 |", "python generate.py .", exported_by):  # fmt: skip
        assert fact in card, fact

    done = export(checkpoint, tmp_path / "s2s-ft", "--format", "s2s-ft")
    config = read_json(str(tmp_path / "s2s-ft" / "config.json"))
    assert (config["source_type_id"], config["target_type_id"], config["rel_pos_bins"]) == (4, 5, 0)
    # what the format does not record is said, not dropped silently
    assert "the fine-tuning method (pseudo_masked)" in done.stderr
    assert read_json(str(tmp_path / "s2s-ft" / "generation.json")) == generation
    assert not (tmp_path / "s2s-ft" / "generate.py").exists()  # BertForMaskedLM cannot read this layout
    assert "generation.json" in (tmp_path / "s2s-ft" / "README.md").read_text()

    # the model folder alone: its own dictionaries, given as --data or found once the binarized data is gone
    export(checkpoint, tmp_path / "given", "--data", tmp_path / "ckpt")
    shutil.move(tmp_path / "bin", tmp_path / "bin-moved")
    export(checkpoint, tmp_path / "alone")
    for folder in ("given", "alone"):
        assert (tmp_path / folder / "vocab.txt").read_text() == (tmp_path / "bert" / "vocab.txt").read_text()
