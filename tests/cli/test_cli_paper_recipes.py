"""Each s2s-ft paper recipe (XSum, CNN/DailyMail, Gigaword, SQuAD question generation) runs whole, on 2
updates, from what the checkpoint importer makes: a converted tiny BERT whose folder holds model.pt,
dict.txt and model_args.txt (no vocab.txt), with row files as Hugging Face ``datasets`` exports them.

The recipes must find the vocabulary (dict.txt), binarize through the plugin's task, build the model the
checkpoint's model_args.txt describes, and choose float32 where there is no CUDA."""

import json
import os
import sys

import pytest
import torch

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
    if recipe == "cnndm.sh":
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
    raw = tmp_path / "raw"
    raw.mkdir()
    for split, count in ROWS.items():
        with open(raw / f"{split}.jsonl", "w", encoding="utf-8") as f:
            f.writelines(json.dumps(row(recipe, i)) + "\n" for i in range(count))
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
    from unilm_fairseq import UniLMModel

    model = UniLMModel.from_pretrained(str(work / "checkpoints"))
    assert isinstance(model.generate("w1 w3 w5 w7"), str)
