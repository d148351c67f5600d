"""finetune.sh checks its settings and its input files before its first stage (scripts/check_pairs.py)."""

import json
import os
import subprocess
import sys

import pytest
import torch

from tests.helpers.cli import REPO
from unilm_fairseq.checkpoint.packed_weights import PACKED_KEY

sys.path.insert(0, os.path.join(REPO, "scripts"))
import check_pairs  # noqa: E402

FINETUNE = os.path.join(REPO, "examples", "s2s_ft", "finetune.sh")
SPLITS = ("train", "valid", "test")


def write_pairs(folder, lines=3, **overrides):
    """{train,valid,test}.{src,tgt} with ``lines`` good pairs; ``overrides`` maps 'train.src' to bytes."""
    folder.mkdir(parents=True, exist_ok=True)
    for split in ("train", "valid", "test"):
        for side in ("src", "tgt"):
            name = f"{split}.{side}"
            data = overrides.get(name, "".join(f"{side} {split} line {i}\n" for i in range(lines)).encode())
            (folder / name).write_bytes(data)
    for name, data in overrides.items():  # baselines' hypotheses: test.NAME.hyp
        if name.endswith(".hyp"):
            (folder / name).write_bytes(data)
    return folder


@pytest.mark.parametrize(
    "overrides, message",
    [
        ({"train.tgt": b"a\nb\n"}, "train.src has 3 lines but"),
        ({"valid.src": b"ok\n\xffbad\nok\n"}, "valid.src:2: not UTF-8 (byte 0xff at column 1)"),
        ({"test.tgt": b"a\n   \nc\n"}, "test.tgt:2: blank line (1 in all"),
        ({"train.src": b"", "train.tgt": b""}, "train: "),
        ({"test.lead.hyp": b"one\ntwo\n"}, "test.lead.hyp has 2 lines but the test set has 3 pairs"),
        ({"test.oracle.hyp": b"one\n\xfe\nthree\n"}, "test.oracle.hyp:2: not UTF-8 (byte 0xfe at column 1)"),
    ],
)
def test_check_pairs_names_file_line_and_problem(tmp_path, overrides, message):
    data = write_pairs(tmp_path / "data", **overrides)
    problems = check_pairs.check_pairs(str(data))
    assert any(message in problem for problem in problems), problems
    assert check_pairs.main([str(data)]) == 1


def test_check_pairs_accepts_good_files_and_names_missing_ones(tmp_path):
    data = write_pairs(tmp_path / "data", **{"test.lead.hyp": b"a\n\nc\n"})  # an empty hypothesis is fine
    assert check_pairs.check_pairs(str(data)) == [] and check_pairs.main([str(data)]) == 0
    os.remove(data / "valid.tgt")
    assert check_pairs.check_pairs(str(data)) == [f"{data / 'valid.tgt'}: no such file"]


def finetune(data, work, timeout=120, **env):
    """finetune.sh DATA WORK with ``env`` over this environment (CPU=1); a None value unsets a variable."""
    return subprocess.run(
        ["bash", FINETUNE, str(data), str(work)],
        capture_output=True,
        text=True,
        env={k: v for k, v in {**os.environ, "CPU": "1", **env}.items() if v is not None},
        timeout=timeout,
    )


@pytest.mark.parametrize(
    "env, message",
    [
        ({"UPDATES": "0"}, "UPDATES=0 must be a whole number >= 1"),
        ({"MIN_EPOCHS": "2.5"}, "MIN_EPOCHS=2.5 must be a whole number >= 0"),
        ({"MAX_TGT_PERCENTILE": "101"}, "MAX_TGT_PERCENTILE=101 is a percentile: 0 (off) to 100"),
        ({"MAX_TGT_LIMIT": "big"}, "MAX_TGT_LIMIT=big must be a whole number >= 2"),
        ({"VALID_EVERY": "0"}, "VALID_EVERY=0 must be a whole number >= 1"),
        ({"METHOD": "bogus"}, "METHOD=bogus must be one of: pseudo_masked masked causal"),
        ({"LR": "fast"}, "LR=fast must be a number > 0"),
        ({"MIN_LEN": "30", "MAX_LEN": "20"}, "MIN_LEN=30 is above MAX_LEN=20"),
        ({"STAGES": "convert,trian"}, "STAGES: 'trian' is none of"),
        ({"BEAM": "0"}, "BEAM=0 must be a whole number >= 1"),
        ({"MINUTES": "-5"}, "MINUTES=-5 must be a number > 0"),
        ({"BOOTSTRAP": "some"}, "BOOTSTRAP=some must be a whole number >= 0"),
        ({"PRETRAINED": "/nonexistent/checkpoint.pt"}, "PRETRAINED=/nonexistent/checkpoint.pt: no such file"),
        ({"START": "minilm"}, "START=minilm must be one of: continued released"),
        ({"START": "continued", "PRETRAINED": "/a/model.pt"}, "PRETRAINED=/a/model.pt is already the start"),
        ({"TUNE": "1", "CKPT": "/elsewhere/checkpoint.pt"}, "TUNE=1 tunes through the model folder"),
    ],
)
def test_finetune_refuses_bad_settings_before_any_stage(tmp_path, env, message):
    data, work = write_pairs(tmp_path / "data"), tmp_path / "work"
    result = finetune(data, work, **env)
    assert result.returncode == 2 and message in result.stderr, result.stderr
    assert not work.exists()


@pytest.mark.parametrize(
    "overrides, work_name, message",
    [
        ({"train.tgt": b"a\nb\n"}, "work", "train.src has 3 lines but"),
        ({"train.src": b"a\n\xff\nc\n"}, "work", "train.src:2: not UTF-8"),
        ({}, "my,work", "fairseq splits paths on ',' and ':'"),
        ({}, "shard:work", "fairseq splits paths on ',' and ':'"),
    ],
)
def test_finetune_refuses_bad_inputs_before_any_stage(tmp_path, overrides, work_name, message):
    data, work = write_pairs(tmp_path / "data", **overrides), tmp_path / work_name
    result = finetune(data, work)
    assert result.returncode != 0 and message in result.stderr, result.stderr
    assert not work.exists()


def test_finetune_refuses_a_pretrained_checkpoint_without_its_dictionary(tmp_path):
    data, work = write_pairs(tmp_path / "data"), tmp_path / "work"
    (tmp_path / "ckpt").mkdir()
    (tmp_path / "ckpt" / "model.pt").write_bytes(b"")
    result = finetune(data, work, PRETRAINED=str(tmp_path / "ckpt" / "model.pt"))
    assert result.returncode == 2 and "model.pt: no dict.txt beside it" in result.stderr, result.stderr
    assert not work.exists()


@pytest.mark.parametrize(
    "script", ["examples/s2s_ft/finetune.sh", "examples/aclsum/demo.sh", "scripts/demo.sh"]
)
def test_help_prints_the_usage_before_any_work(tmp_path, script):
    result = subprocess.run(
        ["bash", os.path.join(REPO, script), "-h"], capture_output=True, text=True, cwd=tmp_path, timeout=60
    )
    with open(os.path.join(REPO, script), encoding="utf-8") as f:
        second_line = f.read().splitlines()[1].lstrip("# ")  # the header comment, as the usage
    assert result.returncode == 0 and second_line in result.stdout and "UPDATES" in result.stdout
    assert list(tmp_path.iterdir()) == []  # no venv, no work folder


def write_tokenized_targets(work, lengths):
    """WORK/text/train.tgt, as the tokenize stage writes it: one target of each length in ``lengths``."""
    (work / "text").mkdir(parents=True, exist_ok=True)
    (work / "text" / "train.tgt").write_text("".join(" ".join(["w"] * n) + "\n" for n in lengths))


@pytest.mark.parametrize("max_len, expected", [("48", "3"), ("2", "2")])
def test_min_len_defaults_to_the_5th_percentile_of_the_training_targets(tmp_path, max_len, expected):
    data, work = write_pairs(tmp_path / "data"), tmp_path / "work"
    # 40 targets of 1..40 tokens (shuffled): the 5th percentile is the 3rd shortest, 3 tokens
    write_tokenized_targets(work, [(7 * i) % 40 + 1 for i in range(40)])
    checkpoint = tmp_path / "model.pt"
    checkpoint.write_bytes(b"")
    result = finetune(data, work, STAGES="generate", CKPT=str(checkpoint), MAX_LEN=max_len)
    assert f"== MIN_LEN={expected}: the 5th percentile" in result.stdout, result.stdout + result.stderr
    # an explicit MIN_LEN is used as given; without the tokenized targets the default is refused
    result = finetune(data, work, STAGES="generate", CKPT=str(checkpoint), MIN_LEN="7")
    assert "== MIN_LEN=" not in result.stdout and "--min-len 7 " in result.stderr
    os.remove(work / "text" / "train.tgt")
    result = finetune(data, work, STAGES="generate", CKPT=str(checkpoint), MAX_TGT_PERCENTILE="0")
    assert result.returncode == 2 and "MIN_LEN is derived from" in result.stderr, result.stderr


def test_stages_may_be_spaced_and_numbers_may_have_leading_zeros(tmp_path):
    """STAGES="generate, score" runs generate (it passed the check, then no stage ran); BEAM=05 and
    MAX_LEN=032 are 5 and 32, as written, not bash's octal or an error in bash's arithmetic."""
    data, work = write_pairs(tmp_path / "data"), tmp_path / "work"
    write_tokenized_targets(work, list(range(1, 41)))
    checkpoint = tmp_path / "model.pt"
    checkpoint.write_bytes(b"")
    result = finetune(data, work, STAGES="generate, score", CKPT=str(checkpoint), BEAM="05", MAX_LEN="032")
    command = next((line for line in result.stderr.splitlines() if line.startswith("+ fairseq-generate")), "")
    assert " --beam 5 " in command and " --max-len-b 32 " in command, result.stdout + result.stderr


# 100 tokenized training targets of 11..110 tokens (shuffled): the 99th percentile is the longest, 110, the
# 50th the 51st shortest, 61; 63 of them (48 tokens and more) do not fit the config's 48 positions with [EOS]
LONG_TARGETS = [(37 * i) % 100 + 11 for i in range(100)]


@pytest.mark.parametrize(
    "lengths, env, max_tgt, max_len",
    [
        (LONG_TARGETS, {}, 111, 111),  # the 99th percentile + [EOS]; MAX_LEN follows
        (LONG_TARGETS, {"MAX_TGT_PERCENTILE": "50"}, 62, 62),
        (LONG_TARGETS, {"MAX_TGT_PERCENTILE": "051"}, 63, 63),  # a leading zero is decimal: the 52nd shortest
        (LONG_TARGETS, {"MAX_TGT_LIMIT": "64"}, 64, 64),  # at most the limit
        (LONG_TARGETS, {"MAX_TGT": "60"}, 60, 48),  # the caller's own MAX_TGT is kept, and MAX_LEN with it
        (LONG_TARGETS, {"MAX_LEN": "80"}, 111, 80),  # the caller's own MAX_LEN is kept
        (LONG_TARGETS, {"MAX_TGT_PERCENTILE": "0"}, 48, 48),  # off
        (LONG_TARGETS, {"MAX_TGT_PERCENTILE": "100"}, 111, 111),  # the longest (its rank was past the end)
        (list(range(1, 48)), {}, 48, 48),  # targets that fit keep the config's: the main job's case
    ],
)
def test_longer_training_targets_raise_max_tgt_and_max_len_unless_set(
    tmp_path, lengths, env, max_tgt, max_len
):
    data, work = write_pairs(tmp_path / "data"), tmp_path / "work"
    write_tokenized_targets(work, lengths)
    checkpoint = tmp_path / "model.pt"
    checkpoint.write_bytes(b"")
    # the checkpoint is no model, so fairseq-generate itself fails: what matters is the command it was given
    result = finetune(data, work, STAGES="generate", CKPT=str(checkpoint), **env)
    command = next(line for line in result.stderr.splitlines() if line.startswith("+ fairseq-generate"))
    assert f" --max-target-positions {max_tgt} " in command and f" --max-len-b {max_len} " in command, command
    raised = "== MAX_TGT=" in result.stdout
    assert raised == (max_tgt != 48 and "MAX_TGT" not in env), result.stdout
    if raised:
        percentile = {"50": "50th", "051": "51st", "100": "100th"}.get(env.get("MAX_TGT_PERCENTILE"), "99th")
        message = f"== MAX_TGT={max_tgt}: the {percentile} percentile of the training targets' lengths is"
        assert (
            message in result.stdout and "the config's 48 would cut 63 of 100 (set MAX_TGT" in result.stdout
        )
    assert ("== MAX_LEN=" in result.stdout) == (max_len != 48 and "MAX_LEN" not in env), result.stdout


@pytest.mark.parametrize(
    "env, message",
    [
        ({"START": "minilm"}, "START=minilm must be one of: continued released"),
        ({"TEST_PAIRS": "0"}, "TEST_PAIRS=0 must be a positive whole number"),
        ({"JOINED": "yes"}, "JOINED=yes must be one of: 0 1"),
    ],
)
def test_the_main_job_refuses_bad_settings_before_any_work(tmp_path, env, message):
    work = tmp_path / "work"
    result = subprocess.run(
        ["bash", os.path.join(REPO, "examples", "aclsum", "demo.sh"), str(work)],
        capture_output=True, text=True, env={**os.environ, **env}, timeout=60,
    )  # fmt: skip
    assert result.returncode == 2 and message in result.stderr, result.stderr
    assert not work.exists()


def test_max_tgt_needs_the_tokenized_targets_unless_set(tmp_path):
    data, work = write_pairs(tmp_path / "data"), tmp_path / "work"
    (work / "model").mkdir(parents=True)
    (work / "model" / "model_args.txt").write_text("--arch unilmv2_base\n")
    result = finetune(data, work, STAGES="train")
    assert result.returncode == 2 and "MAX_TGT follows the lengths of" in result.stderr, result.stderr
    result = finetune(data, work, STAGES="train", MAX_TGT="48")
    assert "MAX_TGT follows" not in result.stderr and "+ fairseq-train" in result.stderr, result.stderr


def test_a_rerun_resumes_from_the_last_checkpoint_unless_fresh(tmp_path):
    data, work = write_pairs(tmp_path / "data"), tmp_path / "work"
    (work / "checkpoints").mkdir(parents=True)
    (work / "checkpoints" / "checkpoint_last.pt").write_bytes(b"kept")
    (work / "model").mkdir()
    (work / "model" / "model_args.txt").write_text("--arch unilmv2_base\n")
    write_tokenized_targets(work, [5, 9])
    # there is no binarized data here, so fairseq-train itself fails: what matters is what happened before
    result = finetune(data, work, STAGES="train")
    assert "== resuming from" in result.stdout and (work / "checkpoints" / "checkpoint_last.pt").exists()
    result = finetune(data, work, STAGES="train", FRESH="1")
    assert (
        "== resuming from" not in result.stdout and not (work / "checkpoints" / "checkpoint_last.pt").exists()
    )
    result = finetune(data, work, FRESH="yes")
    assert result.returncode == 2 and "FRESH=yes must be one of: 0 1" in result.stderr


@pytest.mark.parametrize(
    "pairs, env, updates, log_interval",
    [
        (100, {}, 250, 5),  # 3 passes of 25 updates are fewer than the config's 250: kept
        (401, {}, 303, 5),  # 3 passes of 101 updates (the last batch of 1 pair counts) are more
        (401, {"MIN_EPOCHS": "5"}, 505, 10),  # at most about 100 training lines
        (401, {"UPDATES": "250"}, 250, 5),  # the caller's own UPDATES is kept
        (401, {"MIN_EPOCHS": "0"}, 250, 5),  # off
        (401, {"UPDATES": "17616"}, 17616, 180),
    ],
)
def test_a_larger_training_set_gets_min_epochs_passes_unless_updates_is_set(
    tmp_path, pairs, env, updates, log_interval
):
    data, work = write_pairs(tmp_path / "data", lines=pairs), tmp_path / "work"
    (work / "model").mkdir(parents=True)
    (work / "model" / "model_args.txt").write_text("--arch unilmv2_base\n")
    write_tokenized_targets(work, [5, 9])
    # there is no binarized data here, so fairseq-train itself fails: what matters is the command it was given
    result = finetune(data, work, STAGES="train", BATCH="4", **env)
    command = next(line for line in result.stderr.splitlines() if line.startswith("+ fairseq-train"))
    assert f" --max-update {updates} " in command and f" --total-num-update {updates} " in command
    assert f" --save-interval-updates {(updates + 1) // 2} " in command, command
    assert f" --log-interval {log_interval} " in command, command
    passes = f"{updates / -(-pairs // 4):.1f}"
    assert f"{updates} updates of 4 pairs ({passes} passes over {pairs} training pairs)" in result.stdout
    assert ("== UPDATES=" in result.stdout) == ("UPDATES" not in env and updates != 250), result.stdout


def test_text_that_is_wordpiece_tokenized_already_is_warned_about(tmp_path, capsys):
    lines = b"".join(b"the wood ##house stood line %d\n" % i for i in range(3))
    data = write_pairs(tmp_path / "data", **{"train.src": lines})
    assert check_pairs.main([str(data)]) == 0  # a warning, not an error
    err = capsys.readouterr().err
    assert "train.src: 3 of 3 lines hold '##' pieces" in err and "train.tgt" not in err
    clean = write_pairs(tmp_path / "clean", **{"train.src": b"a # b\nc ## d\nC## code\n"})
    assert check_pairs.main([str(clean)]) == 0 and "warning" not in capsys.readouterr().err


def write_rows(path, count, source="document", target="summary", bad_lines=0):
    lines = [json.dumps({source: f"source text number {i} .", target: f"summary {i}"}) for i in range(count)]
    path.write_text("\n".join(lines + ["{not json"] * bad_lines) + "\n")
    return path


def test_one_row_file_is_split_and_made_into_text_pairs(tmp_path):
    rows, work = write_rows(tmp_path / "rows.jsonl", 20, bad_lines=1), tmp_path / "work"
    result = finetune(rows, work, STAGES="score")  # the score stage alone fails later: no generation yet
    counts = {split: len((work / "data" / f"{split}.src").read_text().splitlines()) for split in SPLITS}
    assert counts == {"train": 16, "valid": 2, "test": 2}, result.stderr
    for split in SPLITS:  # pairs stay pairs through the shuffle
        sources = (work / "data" / f"{split}.src").read_text().splitlines()
        targets = (work / "data" / f"{split}.tgt").read_text().splitlines()
        assert [s.split()[3] for s in sources] == [t.split()[1] for t in targets]
    assert "20 rows -> train 16, valid 2, test 2" in result.stdout
    assert "1 lines skipped" in (work / "logs" / "rows.log").read_text()
    # the same seed splits the same way
    finetune(rows, tmp_path / "again", STAGES="score")
    assert (tmp_path / "again" / "data" / "test.src").read_text() == (work / "data" / "test.src").read_text()


def test_a_folder_of_row_files_in_a_known_layout_is_read(tmp_path):
    folder, work = tmp_path / "rows", tmp_path / "work"
    folder.mkdir()
    for split, count in (("train", 6), ("validation", 2), ("test", 3)):
        write_rows(folder / f"{split}.jsonl", count, source="article", target="highlights")
    finetune(folder, work, STAGES="score")
    assert len((work / "data" / "test.tgt").read_text().splitlines()) == 3
    assert (work / "data" / "valid.src").read_text().startswith("source text number 0")


def test_too_few_rows_to_split_is_an_error(tmp_path):
    result = finetune(write_rows(tmp_path / "rows.jsonl", 2), tmp_path / "work", STAGES="score")
    assert result.returncode == 1 and "cannot give a train split" in result.stdout + result.stderr
    result = finetune(tmp_path / "rows.jsonl", tmp_path / "w2", TEST_FRACTION="1.5")
    assert (
        result.returncode == 2
        and "TEST_FRACTION=1.5 must be a number at least 0 and below 1" in result.stderr
    )


def test_the_default_start_is_the_continued_minilm_and_released_keeps_its_own_weights(tmp_path):
    """Without MODEL_DIR and PRETRAINED the convert stage puts the shipped continued weights onto the
    converted MiniLM (the main job's start); START=released keeps the MiniLM's own; the two differ."""
    data = write_pairs(tmp_path / "data")
    weights = {}
    for start in ("", "released"):
        work = tmp_path / f"work-{start or 'default'}"
        result = finetune(data, work, timeout=300, STAGES="convert", START=start or None, MODEL_DIR=None,
                          PRETRAINED=None)  # fmt: skip
        assert result.returncode == 0, result.stderr[-2000:]
        unpacked = "== the MiniLM with continued PMLM pre-training" in result.stdout
        assert unpacked == (not start), result.stdout
        state = torch.load(work / "model" / "model.pt", map_location="cpu", weights_only=True)
        assert (PACKED_KEY in state["extra_state"]) == (not start)
        weights[start] = state["model"]["transformer.layers.0.self_attn.q_proj.weight"]
    assert not torch.allclose(weights[""], weights["released"], atol=1e-3)
