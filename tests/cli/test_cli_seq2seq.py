"""s2s-ft end to end through the real tools: preprocess -> train -> generate -> score, and interactive."""

import json
import os
import random
import re

import pytest
import torch

from unilm_fairseq.data.seq2seq.seq2seq_dataset import SOURCE_SPECIALS
from unilm_fairseq.models.unilmv2 import POSITION_TABLE

from ..helpers.cli import REPO, preprocess, run_cli

pytestmark = pytest.mark.slow

WORDS = [f"w{i}" for i in range(16)]


def write_copy_task(folder, seed=0):
    """Fixed-length copy: target = source. Fixed length makes the copy offset a constant relative distance."""
    rng = random.Random(seed)
    for split, n in (("train", 2000), ("valid", 50), ("test", 40)):
        with open(folder / f"{split}.src", "w") as src, open(folder / f"{split}.tgt", "w") as tgt:
            for _ in range(n):
                line = " ".join(rng.choices(WORDS, k=5))
                src.write(line + "\n")
                tgt.write(line + "\n")


@pytest.fixture(scope="module")
def copy_bin(tmp_path_factory):
    work = tmp_path_factory.mktemp("copy")
    write_copy_task(work)
    preprocess(["--source-lang", "src", "--target-lang", "tgt", "--joined-dictionary",
                "--trainpref", str(work / "train"), "--validpref", str(work / "valid"), "--testpref",
                str(work / "test"), "--destdir", str(work / "bin"), "--workers", "1"])  # fmt: skip
    return work


def train_copy(copy_bin, method):
    save = copy_bin / f"ckpt-{method}"
    run_cli(["fairseq-train", str(copy_bin / "bin"), "--user-dir", "unilm_fairseq", "--task", "unilm_seq2seq",
             "--arch", "unilmv2_tiny", "--criterion", "unilm_seq2seq", "--finetune-method", method,
             "--target-mask-prob", "0.7", "--max-source-positions", "16", "--max-target-positions", "16",
             "--max-positions", "32",
             "--batch-size", "32", "--optimizer", "adam", "--lr", "3e-3", "--lr-scheduler", "inverse_sqrt",
             "--warmup-updates", "30", "--max-update", "250" if method != "masked" else "400",
             "--dropout", "0", "--attention-dropout", "0", "--log-format", "simple", "--log-interval", "50",
             "--cpu", "--num-workers", "0", "--seed", "1", "--save-dir", str(save), "--no-epoch-checkpoints",
             "--disable-validation"])  # fmt: skip
    return save / "checkpoint_last.pt"


def assert_fairseq_command_logging(stderr, command_logger):
    """The records a fairseq command prints have fairseq's format and level, not what importing fairseq left
    (``DEBUG:hydra...`` and ``INFO:name:...``; unilm_fairseq/import_logging.py)."""
    records = stderr.splitlines()
    assert not [line for line in records if re.match(r"(DEBUG|INFO):", line)], stderr[-3000:]
    fairseq_record = rf"^[\d-]+ [\d:]+ \| INFO \| {re.escape(command_logger)} \| "
    assert re.search(fairseq_record, stderr, re.M), stderr[-3000:]


@pytest.mark.parametrize("method", ["pseudo_masked", "masked", "causal"])
def test_learns_copy_task_to_high_rouge(copy_bin, method):
    checkpoint = train_copy(copy_bin, method)
    out = run_cli(["fairseq-generate", str(copy_bin / "bin"), "--user-dir", "unilm_fairseq", "--task",
                   "unilm_seq2seq", "--path", str(checkpoint), "--gen-subset", "test", "--beam", "4",
                   "--batch-size", "16", "--required-batch-size-multiple", "1", "--cpu",
                   "--scoring", "rouge"])  # fmt: skip
    hyps = re.findall(r"^H-\d+\t\S+\t(.*)$", out.stdout, re.M)
    assert len(hyps) == 40  # --required-batch-size-multiple 1: nothing dropped
    assert_fairseq_command_logging(out.stderr, "fairseq_cli.generate")
    rouge_l = float(re.search(r"ROUGE-L = ([\d.]+)", out.stdout).group(1))
    assert rouge_l > 90, out.stdout[-2000:]
    if method == "pseudo_masked":  # the task's fixed-shape decoding steps: the same hypotheses
        static = run_cli(["fairseq-generate", str(copy_bin / "bin"), "--user-dir", "unilm_fairseq", "--task",
                          "unilm_seq2seq", "--path", str(checkpoint), "--gen-subset", "test", "--beam", "4",
                          "--batch-size", "16", "--required-batch-size-multiple", "1", "--cpu",
                          "--decoding-step", "static"])  # fmt: skip
        assert sorted(re.findall(r"^H-(\d+)\t\S+\t(.*)$", static.stdout, re.M)) == sorted(
            re.findall(r"^H-(\d+)\t\S+\t(.*)$", out.stdout, re.M)
        )


def test_interactive_copies_input(copy_bin):
    checkpoint = copy_bin / "ckpt-pseudo_masked" / "checkpoint_last.pt"
    if not checkpoint.exists():
        checkpoint = train_copy(copy_bin, "pseudo_masked")
    lines = ["w1 w2 w3 w4 w5", "w9 w9 w0 w15 w3"]
    stdin = "\n".join(lines) + "\n"
    out = run_cli(["fairseq-interactive", str(copy_bin / "bin"), "--user-dir", "unilm_fairseq",
                   "--task", "unilm_seq2seq", "--path", str(checkpoint), "--beam", "4", "--cpu",
                   "--buffer-size", "2", "--batch-size", "2"], input_text=stdin)  # fmt: skip
    hyps = re.findall(r"^H-\d+\t\S+\t(.*)$", out.stdout, re.M)
    assert hyps == lines
    assert_fairseq_command_logging(out.stderr, "fairseq_cli.interactive")


def test_interactive_constraints_put_each_phrase_in_the_copy(copy_bin):
    """``--constraints``: each input line is the source, then its phrases, tab-separated."""
    checkpoint = copy_bin / "ckpt-pseudo_masked" / "checkpoint_last.pt"
    if not checkpoint.exists():
        checkpoint = train_copy(copy_bin, "pseudo_masked")
    sources = ["w1 w2 w3 w4 w5", "w9 w9 w0 w15 w3"]
    phrases = [["w7 w8"], ["w12", "w6"]]  # words the copy would not write
    stdin = "".join("\t".join([source, *p]) + "\n" for source, p in zip(sources, phrases))
    for order in ("ordered", "unordered"):
        out = run_cli(["fairseq-interactive", str(copy_bin / "bin"), "--user-dir", "unilm_fairseq",
                       "--task", "unilm_seq2seq", "--path", str(checkpoint), "--beam", "4", "--cpu",
                       "--constraints", order, "--max-len-b", "12"], input_text=stdin)  # fmt: skip
        hyps = re.findall(r"^H-\d+\t\S+\t(.*)$", out.stdout, re.M)
        assert len(hyps) == 2
        for hyp, source, wanted in zip(hyps, sources, phrases):
            assert all(f" {p} " in f" {hyp} " for p in wanted), (hyp, wanted)
            assert set(source.split()) & set(hyp.split())  # still a copy around the phrases
        if order == "ordered":
            assert hyps[1].index("w12") < hyps[1].index("w6")


def test_pretrain_finetune_generate_score_on_austen(tmp_path):
    """The real chain on a small Austen sample: PMLM pre-training initialises s2s-ft fine-tuning."""
    text, lm_bin, s2s_bin = tmp_path / "text", tmp_path / "lm-bin", tmp_path / "s2s-bin"
    prepare = os.path.join(REPO, "scripts", "prepare_corpus.py")
    run_cli(["python", prepare, "--out", str(text), "--max-docs", "5", "--valid-docs", "2",
             "--vocab-size", "800", "--pairs-window", "3"])  # fmt: skip
    run_cli(["fairseq-preprocess", "--only-source", "--trainpref", str(text / "train.spm"),
             "--validpref", str(text / "valid.spm"), "--destdir", str(lm_bin), "--workers", "1"])  # fmt: skip
    run_cli(["fairseq-train", str(lm_bin), "--user-dir", "unilm_fairseq", "--task", "pmlm", "--arch",
             "unilmv2_tiny", "--criterion", "ae_par", "--tokens-per-sample", "64", "--batch-size", "8",
             "--optimizer", "adam", "--lr", "1e-3", "--max-update", "10", "--cpu", "--num-workers", "0",
             "--save-dir", str(tmp_path / "lm"), "--no-epoch-checkpoints"])  # fmt: skip
    dict_txt = str(lm_bin / "dict.txt")
    run_cli(["fairseq-preprocess", "--source-lang", "src", "--target-lang", "tgt", "--srcdict", dict_txt,
             "--tgtdict", dict_txt, "--trainpref", str(text / "train"), "--validpref", str(text / "valid"),
             "--testpref", str(text / "test"), "--destdir", str(s2s_bin), "--workers", "1"])  # fmt: skip
    train = run_cli(["fairseq-train", str(s2s_bin), "--user-dir", "unilm_fairseq", "--task", "unilm_seq2seq",
                     "--arch", "unilmv2_tiny", "--criterion", "unilm_seq2seq", "--label-smoothing", "0.1",
                     "--max-source-positions", "200", "--max-target-positions", "100",
                     "--pretrained-checkpoint", str(tmp_path / "lm" / "checkpoint_last.pt"),
                     "--batch-size", "8", "--optimizer", "adam", "--lr", "1e-3", "--max-update", "10",
                     "--log-format", "simple", "--log-interval", "5", "--cpu", "--num-workers", "0",
                     "--save-dir", str(tmp_path / "s2s"), "--no-epoch-checkpoints"])  # fmt: skip
    log = train.stdout + train.stderr
    assert "initialised from" in log
    # the position table grows from the pre-trained 256 rows to 300 (200 source + 100 target)
    pretrained = torch.load(tmp_path / "lm" / "checkpoint_last.pt", weights_only=True)["model"]
    finetuned = torch.load(tmp_path / "s2s" / "checkpoint_last.pt", weights_only=True)["model"]
    assert pretrained[POSITION_TABLE].size(0) == 256 and finetuned[POSITION_TABLE].size(0) == 300
    assert "tiling the pre-trained position table from 256 to 300 rows" in log
    gen = run_cli(["fairseq-generate", str(s2s_bin), "--user-dir", "unilm_fairseq", "--task", "unilm_seq2seq",
                   "--path", str(tmp_path / "s2s" / "checkpoint_last.pt"), "--gen-subset", "test",
                   "--max-source-positions", "200", "--max-target-positions", "100",
                   "--beam", "5", "--lenpen", "0.9", "--no-repeat-ngram-size", "3", "--min-len", "5",
                   "--max-len-b", "30", "--batch-size", "8", "--required-batch-size-multiple", "1",
                   "--scoring", "rouge", "--cpu"])  # fmt: skip
    n_test = sum(1 for _ in open(text / "test.src"))
    # no --post-process: the hypotheses stay in the sentencepiece pieces that blocking sees (joined words
    # can repeat a trigram that no piece sequence repeats)
    hyps = re.findall(r"^D-\d+\t\S+\t(.*)$", gen.stdout, re.M)
    assert len(hyps) == n_test
    for hyp in hyps:  # trigram blocking works on CPU and --min-len holds
        pieces = hyp.split()
        trigrams = [tuple(pieces[i : i + 3]) for i in range(len(pieces) - 2)]
        assert len(trigrams) == len(set(trigrams)) and len(pieces) >= 5, pieces
    assert re.search(r"ROUGE-1 = [\d.]+, ROUGE-2 = [\d.]+, ROUGE-L = [\d.]+", gen.stdout)
    gen_file = tmp_path / "gen.out"
    gen_file.write_text(gen.stdout)
    scored = run_cli(["python", os.path.join(REPO, "scripts", "score.py"), "--generate-output", str(gen_file),
                      "--metrics", "rouge,bleu", "--json", str(tmp_path / "scores.json")])  # fmt: skip
    scores = json.loads((tmp_path / "scores.json").read_text())
    assert scores["num_pairs"] == n_test and "rouge1" in json.dumps(scores).lower(), scored.stdout


@pytest.fixture(scope="module")
def test13_bin(copy_bin):
    """13 test pairs of 30 words (longer than the copy model's 32-row position table), binarized with
    the copy task's dictionary."""
    rng = random.Random(13)
    lines = [" ".join(rng.choices(WORDS, k=30)) for _ in range(13)]
    for side in ("src", "tgt"):
        (copy_bin / f"test13.{side}").write_text("\n".join(lines) + "\n")
    preprocess(["--source-lang", "src", "--target-lang", "tgt", "--joined-dictionary",
                "--srcdict", str(copy_bin / "bin" / "dict.src.txt"), "--testpref", str(copy_bin / "test13"),
                "--destdir", str(copy_bin / "bin13"), "--workers", "1"])  # fmt: skip
    return copy_bin / "bin13"


def test_generate_keeps_last_partial_batch_and_takes_limits_from_checkpoint(copy_bin, test13_bin):
    """No --required-batch-size-multiple (fairseq's default, 8, drops the tail: 13 pairs gave 8) and no
    --max-*-positions: the checkpoint's 16 + 16 limits are used, not the task's defaults (448 + 64,
    which the 32-row position table cannot hold: "Size of sample #0 is invalid")."""
    checkpoint = copy_bin / "ckpt-pseudo_masked" / "checkpoint_last.pt"
    if not checkpoint.exists():
        checkpoint = train_copy(copy_bin, "pseudo_masked")
    out = run_cli(["fairseq-generate", str(test13_bin), "--user-dir", "unilm_fairseq", "--task",
                   "unilm_seq2seq", "--path", str(checkpoint), "--gen-subset", "test", "--beam", "2",
                   "--batch-size", "8", "--cpu", "--scoring", "rouge"])  # fmt: skip
    log = out.stdout + out.stderr
    ids = sorted(int(i) for i in re.findall(r"^H-(\d+)\t", out.stdout, re.M))
    assert ids == list(range(13))
    assert "using --max-source-positions 16 and --max-target-positions 16 from the checkpoint" in log
    # all 13 sources of 30 words were truncated to 16 positions: [SOS], their first 14 words, [EOS]
    sources = {int(i): text.split() for i, text in re.findall(r"^S-(\d+)\t(.*)$", out.stdout, re.M)}
    lines = (test13_bin.parent / "test13.src").read_text().splitlines()
    assert sorted(sources) == list(range(13))
    for i, source in sources.items():
        assert [w for w in source if w in WORDS] == lines[i].split()[: 16 - SOURCE_SPECIALS], source


def test_validation_on_rouge_picks_the_best_checkpoint_and_agrees_with_generate(copy_bin):
    save = copy_bin / "ckpt-eval-rouge"
    args = '{"beam": 2, "max_len_b": 8}'
    train = run_cli(["fairseq-train", str(copy_bin / "bin"), "--user-dir", "unilm_fairseq", "--task",
                     "unilm_seq2seq", "--arch", "unilmv2_tiny", "--criterion", "unilm_seq2seq",
                     "--max-source-positions", "16", "--max-target-positions", "16", "--max-positions", "32",
                     "--batch-size", "32", "--optimizer", "adam", "--lr", "3e-3", "--lr-scheduler",
                     "inverse_sqrt", "--warmup-updates", "30", "--max-update", "150", "--dropout", "0",
                     "--attention-dropout", "0", "--log-format", "simple", "--log-interval", "50", "--cpu",
                     "--num-workers", "0", "--seed", "1", "--save-dir", str(save), "--no-epoch-checkpoints",
                     "--validate-interval-updates", "50", "--save-interval-updates", "50",
                     "--keep-interval-updates", "1", "--eval-rouge", "--eval-rouge-args", args,
                     "--eval-rouge-detok", "none", "--best-checkpoint-metric", "rouge_l",
                     "--maximize-best-checkpoint-metric"])  # fmt: skip
    valid = [line for line in train.stdout.splitlines() if "valid on 'valid' subset" in line]
    rouge_l = [float(re.search(r"\| rouge_l ([\d.]+)", line).group(1)) for line in valid]
    best = [float(x) for x in re.findall(r"\| best_rouge_l ([\d.]+)", "\n".join(valid))]
    assert len(rouge_l) >= 3 and rouge_l[-1] > rouge_l[0], valid
    assert best and best[-1] == max(rouge_l), valid  # fairseq's best checkpoint follows rouge_l
    # the logged score is what fairseq-generate gives the same checkpoint with the same options
    out = run_cli(["fairseq-generate", str(copy_bin / "bin"), "--user-dir", "unilm_fairseq", "--task",
                   "unilm_seq2seq", "--path", str(save / "checkpoint_last.pt"), "--gen-subset", "valid",
                   "--beam", "2", "--max-len-b", "8", "--batch-size", "16", "--required-batch-size-multiple",
                   "1", "--cpu"])  # fmt: skip
    from unilm_fairseq.scoring.metrics import rouge_scores

    hyps = dict(re.findall(r"^H-(\d+)\t\S+\t(.*)$", out.stdout, re.M))
    refs = dict(re.findall(r"^T-(\d+)\t(.*)$", out.stdout, re.M))
    ids = sorted(refs, key=int)
    expected = 100 * rouge_scores([hyps[i] for i in ids], [refs[i] for i in ids])["rougeL"]
    assert abs(rouge_l[-1] - expected) < 0.01, (rouge_l[-1], expected)


def test_validation_on_rouge_with_two_workers(copy_bin, tmp_path):
    """Two processes (gloo): fairseq all-reduces the logged sums into tensors before the task rounds them."""
    launcher = os.path.join(REPO, "scripts", "train_distributed_cpu.py")
    out = run_cli(["torchrun", "--standalone", "--nproc_per_node", "2", launcher, str(copy_bin / "bin"),
                   "--user-dir", "unilm_fairseq", "--task", "unilm_seq2seq", "--arch", "unilmv2_tiny",
                   "--criterion", "unilm_seq2seq", "--max-source-positions", "16", "--max-target-positions",
                   "16", "--max-positions", "32", "--batch-size", "8", "--optimizer", "adam", "--lr", "3e-3",
                   "--max-update", "4", "--validate-interval-updates", "4", "--eval-rouge",
                   "--eval-rouge-args", '{"beam": 2, "max_len_b": 8}', "--eval-rouge-detok", "none",
                   "--no-save", "--required-batch-size-multiple", "1", "--num-workers", "0",
                   "--log-format", "simple", "--save-dir", str(tmp_path)])  # fmt: skip
    valid = [line for line in out.stdout.splitlines() if "valid on 'valid' subset" in line]
    assert valid and re.search(r"\| rouge_l [\d.]+ ", valid[-1]), (out.stdout + out.stderr)[-3000:]
