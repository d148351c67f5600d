"""scripts/score.py and scripts/rouge_table.py on bad input: one error line, exit 1, never a traceback."""

import json
import os
import sys

import pytest

from tests.helpers.cli import REPO

sys.path.insert(0, os.path.join(REPO, "scripts"))
import rouge_table  # noqa: E402
import score  # noqa: E402

GENERATE_LOG = "S-0\tsrc\nT-0\tthe cat sat\nH-0\t-1.0\tthe cat sat\nD-0\t-1.0\tthe cat sat\nT-1\ta dog ran\n"

FILES = {
    "empty": b"",
    "one": b"the cat sat\n",
    "two": b"the cat sat\na dog ran\n",
    "bad": b"the cat sat\n\xffdog\n",
    "cut.out": GENERATE_LOG.encode(),
}


@pytest.fixture
def files(tmp_path, monkeypatch):
    for name, data in FILES.items():
        (tmp_path / name).write_bytes(data)
    monkeypatch.chdir(tmp_path)


def run_score(argv):
    with pytest.raises(SystemExit) as exit_info:
        score.main(argv)
    return str(exit_info.value.code)


@pytest.mark.parametrize(
    "argv, message",
    [
        (["--hyp", "empty", "--ref", "empty"], "error: no hypotheses to score"),
        (["--hyp", "one", "--ref", "two"], "error: one has 1 lines but two has 2"),
        (["--hyp", "bad", "--ref", "two"], "error: bad:2: not UTF-8 (byte 0xff at column 1)"),
        (["--hyp", "one", "--ref", "missing"], "No such file or directory: 'missing'"),
        (["--generate-output", "cut.out"], "error: 1 of 2 targets have no hypothesis (first id 1)"),
        (
            ["--generate-output", "cut.out", "--ref", "two"],
            "error: cut.out against two: 1 of 2 test pairs have",
        ),
        (
            ["--generate-output", "cut.out", "--ref", "empty"],
            "error: cut.out against empty: hypothesis id 0 is",
        ),
    ],
)
def test_score_bad_input(files, argv, message):
    assert message in run_score(argv)


@pytest.mark.parametrize(
    "argv, message",
    [
        (["--generate-output", "cut.out", "--hyp", "one"], "give --generate-output or --hyp, not both"),
        (["--generate-output", "cut.out", "--detok-ref"], "--detok-ref and --ref-detok need --ref"),
        (["--hyp", "one", "--ref", "one", "--detok-ref", "--ref-detok", "none"], "not both"),
    ],
)
def test_score_bad_options(files, capsys, argv, message):
    assert run_score(argv) == "2" and message in capsys.readouterr().err


@pytest.mark.parametrize(
    "argv, message",
    [
        (["--ref", "empty", "--system", "x=empty"], "error: empty is empty: no pairs to score"),
        (["--ref", "two", "--system", "x=one"], "error: one has 1 lines but two has 2"),
        (["--ref", "bad", "--system", "x=two"], "error: bad:2: not UTF-8"),
        (["--ref", "two", "--generated", "x=cut.out"], "1 of 2"),
    ],
)
def test_rouge_table_bad_input(files, capsys, argv, message):
    assert rouge_table.main(argv) == 1
    assert message in capsys.readouterr().err


@pytest.mark.parametrize(
    "script, argv, message",
    [
        (score, ["--hyp", "one", "--ref", "one", "--json", "no/such/folder/s.json"], "--json no/such/folder"),
        (rouge_table, ["--ref", "one", "--system", "x=one", "--json", "no/such/s.json"], "does not exist"),
        (rouge_table, ["--ref", "two", "--system", "x=two", "--system", "x=two"], "name 'x' given twice"),
        (rouge_table, ["--ref", "two", "--lead", "two", "--system", "lead=two"], "name 'lead' given twice"),
        (rouge_table, ["--ref", "two", "--generated", "x=cut.out", "--examples", "-1"], "--examples -1"),
    ],
)
def test_options_are_refused_before_any_scoring(files, capsys, monkeypatch, script, argv, message):
    """A bad --json folder was a traceback after all the scoring; a repeated name dropped a row."""
    scored = []
    monkeypatch.setattr(script, "rouge_scores", lambda *a, **k: scored.append(a) or {}, raising=True)
    with pytest.raises(SystemExit) as exit_info:
        script.main(argv)
    assert exit_info.value.code == 2 and message in capsys.readouterr().err
    assert not scored


def test_rouge_table_drops_a_generated_unknown_word(tmp_path, capsys):
    """As score.py does: a generated [UNK] is no word, so it neither matches nor lengthens a hypothesis."""
    (tmp_path / "ref").write_text("the cat sat on the mat\n")
    (tmp_path / "gen.out").write_text("D-0\t-1.0\tthe [UNK] cat sat\n")
    (tmp_path / "plain.out").write_text("D-0\t-1.0\tthe cat sat\n")
    argv = ["--ref", str(tmp_path / "ref"), "--generated", f"x={tmp_path / 'gen.out'}",
            "--generated", f"y={tmp_path / 'plain.out'}", "--json", str(tmp_path / "s.json")]  # fmt: skip
    assert rouge_table.main(argv) == 0
    assert "x: dropped 1 unknown-word tokens" in capsys.readouterr().err
    scores = json.loads((tmp_path / "s.json").read_text())["scores"]
    assert scores["x"] == scores["y"]
