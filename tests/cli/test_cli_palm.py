"""PALM end to end through the real tools: preprocess -> train -> generate -> ROUGE, interactive, the Python
API, --pretrained-checkpoint, and the pointer against --no-copy on a copy-heavy task."""

import os
import random
import re
import shutil

import pytest

from unilm_fairseq import PALMHubInterface
from unilm_fairseq.models.palm import PALMModel

from ..helpers.cli import REPO, preprocess, run_cli

pytestmark = pytest.mark.slow

COMMON = [f"c{i}" for i in range(8)]
RARE = [f"r{i}" for i in range(3000)]  # each rare word appears a handful of times in training
EMPTY_TRAIN_LINES = 3
UPDATES = "150"


def write_rare_word_task(folder, seed=0):
    """Source: 10 words, 4 of them rare; target: the rare words in order (copying is the whole task)."""
    rng = random.Random(seed)
    for split, n in (("train", 1500), ("valid", 100), ("test", 30)):
        sources, targets = [], []
        for _ in range(n):
            rare = rng.sample(RARE, 4)
            slots = sorted(rng.sample(range(10), 4))
            picks = iter(rare)
            sources.append(" ".join(next(picks) if i in slots else rng.choice(COMMON) for i in range(10)))
            targets.append(" ".join(rare))
        if split == "train":  # bad input: empty sources and targets are skipped, not fatal
            sources[5:7], targets[7] = ["", ""], ""
        (folder / f"{split}.src").write_text("\n".join(sources) + "\n")
        (folder / f"{split}.tgt").write_text("\n".join(targets) + "\n")


@pytest.fixture(scope="module")
def rare_bin(tmp_path_factory):
    work = tmp_path_factory.mktemp("palm_rare")
    write_rare_word_task(work)
    preprocess(["--source-lang", "src", "--target-lang", "tgt", "--joined-dictionary",
                "--trainpref", str(work / "train"), "--validpref", str(work / "valid"), "--testpref",
                str(work / "test"), "--destdir", str(work / "bin"), "--workers", "1"])  # fmt: skip
    return work


TRAIN = ["--user-dir", "unilm_fairseq", "--task", "palm_seq2seq", "--arch", "palm_tiny",
         "--criterion", "label_smoothed_cross_entropy", "--report-accuracy", "--max-source-positions", "32",
         "--max-target-positions", "16", "--batch-size", "32", "--optimizer", "adam", "--cpu",
         "--num-workers", "0", "--log-format", "simple", "--no-epoch-checkpoints"]  # fmt: skip
VALID = re.compile(r"valid on 'valid' subset \| loss [\d.]+ \| nll_loss ([\d.]+) .*? accuracy ([\d.]+)")


def train(work, name, *extra):
    proc = run_cli(["fairseq-train", str(work / "bin"), *TRAIN, "--label-smoothing", "0.1", "--lr", "2e-3",
                    "--lr-scheduler", "inverse_sqrt", "--warmup-updates", "30", "--max-update", UPDATES,
                    "--dropout", "0", "--attention-dropout", "0", "--seed", "1",
                    "--save-dir", str(work / name), *extra])  # fmt: skip
    log = proc.stdout + proc.stderr
    last = VALID.findall(log)
    assert last, log[-3000:]
    return log, float(last[-1][0]), float(last[-1][1])


@pytest.fixture(scope="module")
def trained(rare_bin):
    return train(rare_bin, "ckpt-copy")


def test_pointer_learns_copy_heavy_task_faster_than_no_copy(rare_bin, trained):
    log, copy_nll, copy_acc = trained
    assert f"train: 1500 pairs; skipped {EMPTY_TRAIN_LINES} with an empty source or target" in log
    _, plain_nll, plain_acc = train(rare_bin, "ckpt-no-copy", "--no-copy")
    print(f"after {UPDATES} updates: valid nll (bits) copy {copy_nll} / no-copy {plain_nll}; "
          f"accuracy copy {copy_acc} / no-copy {plain_acc}")  # fmt: skip
    assert copy_acc > 90 and copy_acc > plain_acc + 30
    assert copy_nll < plain_nll - 3


def generate_args(rare_bin):
    checkpoint = rare_bin / "ckpt-copy" / "checkpoint_last.pt"
    return ["--user-dir", "unilm_fairseq", "--task", "palm_seq2seq", "--path", str(checkpoint),
            "--beam", "4", "--lenpen", "0.9", "--min-len", "3", "--no-repeat-ngram-size", "3",
            "--max-source-positions", "32", "--max-target-positions", "16", "--cpu"]  # fmt: skip


def test_generate_interactive_and_python_api_agree_and_score(rare_bin, trained):
    out = run_cli(["fairseq-generate", str(rare_bin / "bin"), *generate_args(rare_bin), "--gen-subset",
                   "test", "--batch-size", "8", "--required-batch-size-multiple", "1",
                   "--scoring", "rouge"])  # fmt: skip
    hyps = dict(re.findall(r"^H-(\d+)\t\S+\t(.*)$", out.stdout, re.M))
    assert len(hyps) == 30  # --required-batch-size-multiple 1: nothing dropped
    for hyp in hyps.values():
        words = hyp.split()
        assert len(words) >= 3  # --min-len
        trigrams = [tuple(words[i : i + 3]) for i in range(len(words) - 2)]
        assert len(trigrams) == len(set(trigrams))  # trigram blocking
    rouge_l = float(re.search(r"ROUGE-L = ([\d.]+)", out.stdout).group(1))
    print(f"test ROUGE-L {rouge_l}")
    assert rouge_l > 80, out.stdout[-2000:]

    sources = (rare_bin / "test.src").read_text().splitlines()[:4]
    stdin = "\n".join(sources) + "\n"
    inter = run_cli(["fairseq-interactive", str(rare_bin / "bin"), *generate_args(rare_bin),
                     "--buffer-size", "4", "--batch-size", "4"], input_text=stdin)  # fmt: skip
    inter_hyps = re.findall(r"^H-\d+\t\S+\t(.*)$", inter.stdout, re.M)
    assert inter_hyps == [hyps[str(i)] for i in range(4)]

    palm = PALMHubInterface.from_pretrained(
        str(rare_bin / "ckpt-copy"), checkpoint_file="checkpoint_last.pt",
        data_name_or_path=str(rare_bin / "bin"), max_source_positions=32, max_target_positions=16,
    )  # fmt: skip
    api = palm.generate(sources, beam=4, lenpen=0.9, min_len=3, no_repeat_ngram_size=3)
    assert api == inter_hyps
    features = palm.extract_features(sources[:2])
    assert features.shape == (2, 11, 64)  # 10 words + </s>
    # the model class loads the same interface, as fairseq's from_pretrained returns its hub interface
    from_model = PALMModel.from_pretrained(
        str(rare_bin / "ckpt-copy"), checkpoint_file="checkpoint_last.pt",
        data_name_or_path=str(rare_bin / "bin"), max_source_positions=32, max_target_positions=16,
    )  # fmt: skip
    assert type(from_model) is PALMHubInterface
    assert from_model.generate(sources[:2], beam=4, lenpen=0.9, min_len=3, no_repeat_ngram_size=3) == api[:2]


def test_pretrained_checkpoint_initialises_fine_tuning(rare_bin, trained):
    checkpoint = rare_bin / "ckpt-copy" / "checkpoint_last.pt"
    proc = run_cli(["fairseq-train", str(rare_bin / "bin"), *TRAIN, "--pretrained-checkpoint",
                    str(checkpoint), "--lr", "1e-9", "--max-update", "1",
                    "--save-dir", str(rare_bin / "ckpt-init")])  # fmt: skip
    log = proc.stdout + proc.stderr
    assert "initialised from" in log
    accuracy = float(VALID.findall(log)[-1][1])
    assert accuracy > 90  # the copy model's weights, not a fresh model's


def test_fine_tuning_takes_the_pretrained_encoder_layernorm_eps(rare_bin, trained, tmp_path):
    """--pretrained-checkpoint's encoder LayerNorm epsilon (1e-12 for a BERT-started pre-training) is the
    one the fine-tuned model is built with, whatever the config says."""
    import torch
    from fairseq import checkpoint_utils, tasks

    saved = checkpoint_utils.load_checkpoint_to_cpu(str(rare_bin / "ckpt-copy" / "checkpoint_last.pt"))
    cfg = saved["cfg"]
    own = cfg.model.encoder_layernorm_eps
    assert own != 1e-12
    cfg.model.encoder_layernorm_eps = 1e-12
    torch.save(saved, tmp_path / "bert_started.pt")
    cfg.model.encoder_layernorm_eps = own  # the fine-tuning run's own config
    cfg.task.pretrained_checkpoint = str(tmp_path / "bert_started.pt")
    model = tasks.setup_task(cfg.task).build_model(cfg.model)
    assert {m.eps for m in model.encoder.modules() if isinstance(m, torch.nn.LayerNorm)} == {1e-12}


def test_generate_text_script_loads_a_palm_folder(rare_bin, trained, tmp_path):
    """scripts/generate_text.py on a PALM model folder: PALMHubInterface's outputs, a line per input line."""
    folder = tmp_path / "folder"
    folder.mkdir()
    shutil.copyfile(rare_bin / "ckpt-copy" / "checkpoint_last.pt", folder / "checkpoint_last.pt")
    run_cli(["python", os.path.join(REPO, "scripts", "write_model_folder.py"), str(folder), "--dicts",
             str(rare_bin / "bin"), "--checkpoint", "checkpoint_last.pt", "--bpe", "none", "--beam", "4",
             "--lenpen", "0.9", "--min-len", "3", "--max-len-b", "16",
             "--no-repeat-ngram-size", "3"])  # fmt: skip
    sources = (rare_bin / "test.src").read_text().splitlines()[:3]
    (tmp_path / "in.txt").write_text(sources[0] + "\n\n" + "\n".join(sources[1:]) + "\n")
    run_cli(["python", os.path.join(REPO, "scripts", "generate_text.py"), str(folder), "--input",
             str(tmp_path / "in.txt"), "--output", str(tmp_path / "out.txt"), "--cpu"])  # fmt: skip
    palm = PALMHubInterface.from_pretrained(str(folder))
    expected = palm.generate(sources)
    assert len(set(expected)) == 3 and all(expected)
    assert (tmp_path / "out.txt").read_text().split("\n") == [expected[0], "", *expected[1:], ""]
