"""Each s2s-ft paper recipe (XSum, CNN/DailyMail, Gigaword, SQuAD question generation) runs whole, on 2
updates, from what the checkpoint importer makes: a converted tiny BERT whose folder holds model.pt,
dict.txt and model_args.txt (no vocab.txt), with row files as Hugging Face ``datasets`` exports them.

The recipes must find the vocabulary (dict.txt), binarize through the plugin's task, build the model the
checkpoint's model_args.txt describes, and choose float32 where there is no CUDA. The PALM recipes
(CNN/DailyMail, Gigaword) start their encoder from the same checkpoint. Every recipe validates on ROUGE with
its test decoding settings and leaves a model folder that the hub loads with one argument, holding the test
scores and the commands that made it."""

import json
import os
import re
import subprocess
import sys

import pytest
import torch

from unilm_fairseq.scoring.metrics import detokenize

from ..helpers.cli import REPO, run_cli
from ..helpers.hf import TINY, save_hf, wordpiece_tokens

transformers = pytest.importorskip("transformers")
pytest.importorskip("safetensors")

pytestmark = pytest.mark.slow

ROWS = {"train": 8, "valid": 2, "test": 3}


def words(i, count):
    return " ".join(f"w{2 * ((i + k) % 15) + 1}" for k in range(count))


def row(recipe, i):
    """One row in the layout of the recipe's Hugging Face dataset."""
    if recipe == "cnndm.sh":  # s2s-ft's and PALM's
        return {"article": words(i, 12) + " .", "highlights": words(i, 3) + " .\n" + words(i + 1, 2) + " ."}
    if recipe == "squad_qg.sh":
        context = words(i, 12)
        answer = context.split()[4]
        return {
            "context": context,
            "question": words(i, 4),
            "answers": {"text": [answer], "answer_start": [0]},
        }
    return {"document": words(i, 12), "summary": words(i, 3)}


def write_rows(raw, recipe):
    """``raw/{split}.jsonl``: the recipe's rows, as Hugging Face ``datasets`` exports them."""
    raw.mkdir()
    for split, count in ROWS.items():
        with open(raw / f"{split}.jsonl", "w", encoding="utf-8") as f:
            f.writelines(json.dumps(row(recipe, i)) + "\n" for i in range(count))
    return raw


@pytest.fixture(scope="module")
def converted(tmp_path_factory):
    folder = tmp_path_factory.mktemp("importer")
    tokens = wordpiece_tokens() + ["."]  # the recipes exempt "." from n-gram blocking
    torch.manual_seed(0)
    hf = transformers.BertForMaskedLM(transformers.BertConfig(vocab_size=len(tokens), **TINY))
    model_dir = save_hf(hf, str(folder / "hf"), {"vocab.txt": "\n".join(tokens) + "\n"})
    run_cli([sys.executable, os.path.join(REPO, "scripts", "convert_hf_checkpoint.py"), model_dir,
             str(folder / "converted")])  # fmt: skip
    assert not (folder / "converted" / "vocab.txt").exists()
    return folder / "converted"


@pytest.mark.parametrize("recipe", ["xsum.sh", "cnndm.sh", "gigaword.sh", "squad_qg.sh"])
def test_paper_recipe_runs_from_an_importer_checkpoint(tmp_path, converted, recipe):
    raw = write_rows(tmp_path / "raw", recipe)
    env = {"PRETRAINED": str(converted / "model.pt"), "STEPS": "2", "WARMUP": "1", "GPUS": "1",
           "TOTAL_BATCH": "2", "BATCH_PER_GPU": "2", "MAX_SRC": "32", "MAX_TGT": "8", "GEN_BATCH": "4",
           "BEAM": "2", "MIN_LEN": "1", "MAX_LEN_B": "5", "WORKERS": "1", "METRICS": "rouge",
           "SAVE_INTERVAL": "2", "CUDA_VISIBLE_DEVICES": ""}  # fmt: skip
    work = tmp_path / "work"
    proc = run_cli(["bash", os.path.join(REPO, "examples", "s2s_ft", recipe), str(raw), str(work),
                    "--cpu", "--num-workers", "0"], env=env)  # fmt: skip
    log = proc.stdout + proc.stderr
    # the model the importer's model_args.txt describes (24 wide, 2 layers), initialised from it
    assert "--encoder-embed-dim 24" in log or "encoder_embed_dim': 24" in log, log[-3000:]
    assert "initialised from" in log
    assert "--fp16" not in log.split("fairseq-train")[-1].split("\n")[0]
    hypotheses = [line for line in (work / "gen.out").read_text().splitlines() if line.startswith("H-")]
    assert len(hypotheses) == ROWS["test"]
    assert "ROUGE" in (work / "scores.txt").read_text()
    # the checkpoint folder is a model folder with the recipe's decoding settings
    settings = json.loads((work / "checkpoints" / "generation.json").read_text())
    assert (settings["beam"], settings["max_len_b"], settings["lenpen_style"]) == (2, 5, "gnmt")
    check_validation_and_record(proc, work)
    from unilm_fairseq import UniLMModel

    model = UniLMModel.from_pretrained(str(work / "checkpoints"))
    assert isinstance(model.generate("w1 w3 w5 w7"), str)


def check_validation_and_record(proc, work):
    """Validation logged ROUGE and picked the best checkpoint by it; the model folder holds the test scores
    and every command the recipe printed, in order, as a script."""
    train = next(line for line in proc.stderr.splitlines() if line.startswith("+ fairseq-train "))
    assert "--eval-rouge " in train and "--best-checkpoint-metric rouge_l" in train
    assert re.search(r"valid on 'valid' subset \|.* rouge_l [\d.]+", proc.stdout + proc.stderr)
    folder = work / "checkpoints"
    scores = json.loads((folder / "scores.json").read_text())
    assert scores == json.loads((work / "scores.json").read_text()) and "rougeL" in json.dumps(scores)
    printed = [line[2:] for line in proc.stderr.splitlines() if line.startswith("+ ")]
    record = (folder / "commands.sh").read_text().splitlines()
    assert record[0] == "#!/usr/bin/env bash" and record[1:] == printed
    programs = [line.split()[0] for line in printed]
    assert programs == [
        "python",
        "fairseq-preprocess",
        "fairseq-train",
        "fairseq-generate",
        "python",
        "python",
    ]
    assert subprocess.run(["bash", "-n", str(folder / "commands.sh")]).returncode == 0
    # the test set is scored against the whole references, not the T- lines cut to MAX_TGT
    score = next(line for line in printed if "scripts/score.py" in line)
    assert f"--ref {work}/text/test.tgt" in score and scores["num_pairs"] == ROWS["test"]


@pytest.mark.parametrize("recipe", ["cnndm.sh", "gigaword.sh"])
def test_palm_recipe_starts_from_an_importer_checkpoint_and_leaves_a_model_folder(
    tmp_path, converted, recipe
):
    raw = write_rows(tmp_path / "raw", recipe)
    env = {"PRETRAINED": str(converted / "model.pt"), "STEPS": "2", "WARMUP": "1", "GPUS": "1",
           "TOTAL_BATCH": "2", "BATCH_PER_GPU": "2", "MAX_SRC": "32", "MAX_TGT": "8", "GEN_BATCH": "4",
           "BEAM": "2", "LENPEN": "0.8", "MIN_LEN": "1", "MAX_LEN_B": "5", "NO_REPEAT_NGRAM": "2",
           "WORKERS": "1", "METRICS": "rouge", "SAVE_INTERVAL": "2", "CUDA_VISIBLE_DEVICES": ""}  # fmt: skip
    work = tmp_path / "work"
    proc = run_cli(["bash", os.path.join(REPO, "examples", "palm", recipe), str(raw), str(work),
                    "--cpu", "--num-workers", "0", "--decoder-layers", "1"], env=env)  # fmt: skip
    log = proc.stdout + proc.stderr
    # the importer's encoder (24 wide, 2 layers, WordPiece over its dict.txt) initialises PALM's encoder
    train = next(line for line in proc.stderr.splitlines() if line.startswith("+ fairseq-train "))
    assert "--encoder-embed-dim 24" in train and "--encoder-layers 2" in train, train
    assert f"--pretrained-encoder {converted / 'model.pt'}" in train and "--fp16" not in train
    assert "initialised the encoder and the shared embeddings from" in log, log[-3000:]
    preprocess = next(line for line in proc.stderr.splitlines() if line.startswith("+ fairseq-preprocess "))
    assert "--task palm_seq2seq" in preprocess and "--wordpiece-vocab" in proc.stderr
    generated = (work / "gen.out").read_text()
    sources = dict(re.findall(r"^S-(\d+)\t(.*)$", generated, re.M))
    hypotheses = dict(re.findall(r"^H-(\d+)\t\S+\t(.*)$", generated, re.M))
    assert len(hypotheses) == ROWS["test"]
    assert "ROUGE" in (work / "scores.txt").read_text()
    check_validation_and_record(proc, work)
    # the model folder: one argument loads it, and generate() decodes as the test set was decoded
    folder = work / "checkpoints"
    settings = json.loads((folder / "generation.json").read_text())
    decoding = {"beam": 2, "lenpen": 0.8, "min_len": 1, "max_len_a": 0, "max_len_b": 5,
                "no_repeat_ngram_size": 2}  # fmt: skip
    assert {key: settings[key] for key in decoding} == decoding
    assert (settings["bpe"], settings["lenpen_style"], settings["checkpoint"]) == (
        "wordpiece", "gnmt", "checkpoint_best.pt",
    )  # fmt: skip
    from unilm_fairseq import PALMHubInterface, UniLMModel
    from unilm_fairseq.models.palm import PALMModel

    palm = PALMModel.from_pretrained(str(folder))
    assert type(palm) is PALMHubInterface
    # the UniLM entry point gives a PALM folder PALM's interface too (its score runs PALM's forward)
    assert type(UniLMModel.from_pretrained(str(folder))) is PALMHubInterface
    assert palm._decoding_settings(**dict.fromkeys(decoding)) == decoding
    assert palm.generation_defaults["lenpen_style"] == "gnmt"
    # the test set's hypotheses again, from its sources as text, in fairseq-generate's batch (GEN_BATCH)
    ids = sorted(sources, key=int)
    expected = [detokenize(hypotheses[i], "wordpiece") for i in ids]
    assert palm.generate([sources[i] for i in ids], batch_size=4) == expected
    text = palm.generate("w9 w11 w13 w15 w17 w19 w21 .")
    assert isinstance(text, str) and text.strip()
    ids = palm.encode(text)
    assert len(ids) > 1 and palm.src_dict.unk() not in ids.tolist()  # words of the vocabulary
