"""MS MARCO preparation on tiny fixtures in the release formats (v2.1 columnar JSON, v1.1 JSON lines)."""

import gzip
import os
import shutil

import pytest

from unilm_fairseq.prepare import marco

from ..helpers.cli import REPO, load_script

FIXTURES = os.path.join(REPO, "tests", "fixtures", "marco")
DEV = os.path.join(FIXTURES, "dev_v2.1.json")


def run_prepare(*argv):
    load_script("scripts/prepare_marco_data.py").main(list(argv))


def lines(path):
    with open(path, encoding="utf-8") as f:
        return f.read().splitlines()


def test_well_formed_answers_with_selected_passages(tmp_path, capfd):
    run_prepare("--input", DEV, "--split", "valid", "--output", str(tmp_path))
    assert lines(tmp_path / "valid.src") == [
        "After soaking, a kiln dries the grain so that it stops growing. [SEP] what does a kiln do to malt",
        "Sea otters feed on fish, crabs and urchins. [SEP] what do otters eat",
    ]
    assert lines(tmp_path / "valid.tgt") == [
        "A kiln dries the malted grain so that it stops growing.",
        "Otters eat fish and crabs.",
    ]
    assert lines(tmp_path / "valid.id") == ["1001", "1004"]
    message = capfd.readouterr().err  # the script logs to stderr
    assert "valid: 2 examples" in message and "skipped 2 without a usable well_formed answer" in message


def test_qa_answers_all_passages_and_truncation(tmp_path):
    run_prepare("--input", DEV, "--split", "train", "--output", str(tmp_path), "--answer-type", "answers",
                "--passages", "all", "--lowercase", "--max-source-tokens", "12")  # fmt: skip
    src, tgt = lines(tmp_path / "train.src"), lines(tmp_path / "train.tgt")
    assert lines(tmp_path / "train.id") == ["1001", "1003", "1004"]  # 1002 is "No Answer Present."
    assert tgt == ["a kiln dries the grain.", "two hours", "otters eat fish and crabs."]
    assert src[1] == "the ferry crossing takes two hours. boats leave every morning. [SEP] how"
    assert all(len(s.split()) <= 12 for s in src)


def test_gzip_v1_jsonl_and_eval_without_answers(tmp_path):
    packed = tmp_path / "dev_v2.1.json.gz"
    with open(DEV, "rb") as f, gzip.open(packed, "wb") as g:
        shutil.copyfileobj(f, g)
    run_prepare("--input", str(packed), "--split", "valid", "--output", str(tmp_path / "gz"))
    run_prepare("--input", DEV, "--split", "valid", "--output", str(tmp_path / "plain"))
    assert lines(tmp_path / "gz" / "valid.src") == lines(tmp_path / "plain" / "valid.src")

    v1 = os.path.join(FIXTURES, "train_v1.1.json")
    run_prepare(
        "--input", v1, "--split", "train", "--output", str(tmp_path / "v1"), "--answer-type", "answers"
    )
    assert lines(tmp_path / "v1" / "train.id") == ["1001", "1003", "1004"]
    with pytest.raises(SystemExit, match="answer type 'answers'"):
        run_prepare("--input", v1, "--split", "train", "--output", str(tmp_path / "v1wf"))

    evaluation = os.path.join(FIXTURES, "eval_v2.1_public.json")
    run_prepare(
        "--input", evaluation, "--split", "test", "--output", str(tmp_path / "eval"), "--passages", "all"
    )
    assert lines(tmp_path / "eval" / "test.id") == ["1001", "1002", "1003", "1004"]
    assert len(lines(tmp_path / "eval" / "test.src")) == 4
    assert not (tmp_path / "eval" / "test.tgt").exists()


def test_bad_files_are_clear_errors(tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_text('{"query": "a question"}\nnot json\n')
    with pytest.raises(ValueError, match="bad.json:2: neither MS MARCO v2.1 JSON nor v1.1"):
        list(marco.read_examples(str(bad)))
    bad.write_text('{"passages": []}\n')
    with pytest.raises(ValueError, match="bad.json:1: .* needs a 'query' field"):
        list(marco.read_examples(str(bad)))
    with pytest.raises(SystemExit, match="missing.json"):
        run_prepare("--input", str(tmp_path / "missing.json"), "--split", "valid", "--output", str(tmp_path))
