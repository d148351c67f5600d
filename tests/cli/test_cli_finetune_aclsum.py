"""The one-command fine-tuning script on a slice of real ACLSum pairs.

``examples/s2s_ft/finetune.sh`` runs convert -> tokenize -> binarize -> fairseq-train -> fairseq-generate ->
ROUGE table. Here it fine-tunes a tiny randomly initialised model (the real MiniLM's vocabulary and
converter, ``INIT=random`` with a small architecture) on 16 real pairs until it has learnt them, then
decodes those pairs with the main job's decoding settings. The garbage the main job once printed
(``" " " It " " I " " She I " I I "I I I I``) cannot come back unnoticed: the training loss must fall,
the outputs must reproduce the learnt summaries, and no output may collapse into a few repeated tokens.
"""

import collections
import json
import os
import re
import shutil

import pytest

from unilm_fairseq.prepare import aclsum

from ..helpers.cli import REPO, run_cli
from ..helpers.resources import minilm_model_dir

pytestmark = pytest.mark.slow

PAIRS = 16
MAX_SRC = 64


def write_slice(folder):
    """16 train pairs (also the test set: the check is that they were learnt) and 4 valid pairs."""
    data = aclsum.dataset_dir()

    def pairs(name, count):
        papers = aclsum.read_papers(os.path.join(data, f"{name}.jsonl"))
        built, _ = aclsum.build_pairs(papers[: count // 3 + 1], lambda t: len(t.split()), MAX_SRC - 20)
        return built[:count]

    splits = {"train": pairs("train", PAIRS), "valid": pairs("val", 4)}
    splits["test"] = splits["train"]
    for split, items in splits.items():
        for side, texts in (("src", [p.source for p in items]), ("tgt", [p.target for p in items])):
            (folder / f"{split}.{side}").write_text("".join(t + "\n" for t in texts), encoding="utf-8")
    (folder / "test.lead.hyp").write_text("".join(aclsum.lead(p) + "\n" for p in splits["test"]))
    return splits["test"]


def test_finetune_script_learns_real_pairs_without_degenerate_output(tmp_path):
    data, work = tmp_path / "data", tmp_path / "work"
    data.mkdir()
    references = write_slice(data)
    tiny = ["--encoder-layers", "2", "--encoder-embed-dim", "64", "--encoder-ffn-embed-dim", "128",
            "--encoder-attention-heads", "4", "--dropout", "0", "--attention-dropout", "0"]  # fmt: skip
    env = {"MODEL_DIR": minilm_model_dir(), "INIT": "random", "UPDATES": "300", "LR": "2e-3", "WARMUP": "20",
           "BATCH": "8", "MAX_SRC": str(MAX_SRC), "GEN_BATCH": "8", "CPU": "1",
           "CKPT": "last"}  # fmt: skip  # the check is memorisation, not the best validation loss
    script = os.path.join(REPO, "examples", "s2s_ft", "finetune.sh")
    proc = run_cli([shutil.which("bash"), script, str(data), str(work), *tiny], env=env)
    log = proc.stdout + proc.stderr
    # every step is shown as the command it runs
    for command in ("convert_hf_checkpoint.py", "tokenize_text.py", "fairseq-preprocess", "fairseq-train",
                    "fairseq-generate", "rouge_table.py"):  # fmt: skip
        assert re.search(rf"^\+ .*{re.escape(command)}", log, re.M), command

    losses = [float(x) for x in re.findall(r"train_inner .* loss=([\d.]+)", log)]
    assert len(losses) > 10 and losses[-1] < 0.5 * losses[0], losses

    scores = json.loads((work / "scores.json").read_text())["scores"]
    model = scores["s2s-ft (pseudo_masked)"]
    assert set(scores) == {"lead", "s2s-ft (pseudo_masked)"}
    assert model["rougeL"] > 60, scores  # learnt: far above copying the first sentence
    hyps = re.findall(r"^D-(\d+)\t\S+\t(.*)$", (work / "generate-test.out").read_text(), re.M)
    assert sorted(int(i) for i, _ in hyps) == list(range(len(references)))
    # a re-run resumes: 10 more updates after the 300 done, not 310 from the start
    more = run_cli([shutil.which("bash"), script, str(data), str(work), *tiny],
                   env={**env, "UPDATES": "310", "STAGES": "train"})  # fmt: skip
    assert "== resuming from" in more.stdout
    updates = [int(x) for x in re.findall(r"train_inner .*num_updates=(\d+)", more.stdout + more.stderr)]
    assert updates and min(updates) > 300 and max(updates) <= 310, updates
    # test.hyp: the predictions in test order, one per pair, as scored
    predictions = (work / "test.hyp").read_text().splitlines()
    assert predictions == [h for _, h in sorted(hyps, key=lambda pair: int(pair[0]))]
    # the checkpoint folder is a model folder: one argument loads it, text in gives the same text out
    settings = json.loads((work / "checkpoints" / "generation.json").read_text())
    assert settings["checkpoint"] == "checkpoint_last.pt" and settings["max_len_b"] == 48
    from unilm_fairseq import UniLMModel

    model = UniLMModel.from_pretrained(str(work / "checkpoints"))
    sources = (data / "test.src").read_text().splitlines()[:3]
    assert model.generate(sources) == predictions[:3]
    # the record the export's model card reads: every command of both runs, and the test scores
    commands = (work / "checkpoints" / "commands.sh").read_text().splitlines()
    assert commands[0] == "#!/usr/bin/env bash" and sum(line.startswith("# ") for line in commands) == 2
    assert sum("fairseq-train" in line for line in commands) == 2 and any(
        "rouge_table.py" in c for c in commands
    )
    scores = json.loads((work / "checkpoints" / "scores.json").read_text())
    assert scores["num_pairs"] == len(predictions) and "s2s-ft (pseudo_masked)" in scores["scores"]
    for _, hyp in hyps:
        tokens = hyp.split()
        top = collections.Counter(tokens).most_common(1)[0][1]
        assert len(tokens) >= 5 and top <= max(3, 0.2 * len(tokens)), hyp
        assert len(set(tokens)) >= 0.6 * len(tokens), hyp
    # TUNE=1: the settings are chosen on the validation pairs, then the test set and the folder use the best
    grid = "--lenpen 0.6 --max-p 0.05"
    tuned = run_cli([shutil.which("bash"), script, str(data), str(work), *tiny],
                    env={**env, "STAGES": "generate", "TUNE": "1", "TUNE_GRID": grid})  # fmt: skip
    search = json.loads((work / "checkpoints" / "decoding_search.json").read_text())
    assert [row["setting"]["lenpen"] for row in search["rows"]] == [0.6, 1.0] and search["pairs"] == 4
    assert search["max_p"] == 0.05 and all(0.0 <= row["p"] <= 1.0 for row in search["rows"])
    chosen = search["chosen"]["lenpen"]
    assert json.loads((work / "checkpoints" / "generation.json").read_text())["lenpen"] == chosen
    shown = tuned.stdout + tuned.stderr
    assert re.search(rf"^\+ fairseq-generate .* --lenpen {chosen} ", shown, re.M), shown
    assert (
        "4 validation pairs, rouge-score F1 x100, the best by ROUGE-L; p: its lead over the folder's" in shown
    )
