"""A byte-order mark at the start of a file is not text: the readers of pairs, rows and scores drop it. The
scripts check their output files' folders before their work."""

import json
import os

import pytest

from unilm_fairseq.encoders.text_lines import (
    UTF8_BOM,
    decode_line,
    decoded_lines,
    missing_output_folder,
    read_lines,
)
from unilm_fairseq.prepare import hf_rows as rows
from unilm_fairseq.prepare.seq2seq_release_formats import read_line_pairs

from ..helpers.cli import REPO, run_cli

BOM = UTF8_BOM.decode("utf-8")  # U+FEFF


def test_decode_line_drops_the_mark_on_the_first_line_only():
    assert decode_line(UTF8_BOM + b"First line\r\n", 1, "f") == "First line"
    # later in a file U+FEFF is a character of the text (a zero-width no-break space), kept as it is
    assert decode_line(UTF8_BOM + b"third\n", 3, "f") == BOM + "third"
    assert list(decoded_lines([UTF8_BOM + b"a\n", b"b\r\n", b"c"], "f")) == ["a", "b", "c"]


def test_decode_line_names_the_file_line_and_byte():
    with pytest.raises(ValueError, match=r"^pairs\.src:7: not UTF-8 \(byte 0xe9 at column 4\)$"):
        decode_line(b"caf\xe9\n", 7, "pairs.src")
    # the column counts from the line's own bytes, with the mark removed
    with pytest.raises(ValueError, match=r"at column 2\)$"):
        decode_line(UTF8_BOM + b"a\xff\n", 1, "f")


def write(path, text, bom=True):
    path.write_bytes((UTF8_BOM if bom else b"") + text.encode("utf-8"))
    return str(path)


def test_scored_files_read_without_the_mark(tmp_path):
    marked = write(tmp_path / "ref.txt", "And Sir Thomas came.\r\nHe left.\r\n")
    assert read_lines(marked) == ["And Sir Thomas came.", "He left."]


def test_json_lines_with_a_mark_keep_their_first_row(tmp_path):
    records = [
        {"document": "The mill stood by the river.", "summary": "A mill."},
        {"document": "b", "summary": "c"},
    ]
    path = write(tmp_path / "train.jsonl", "".join(json.dumps(r) + "\r\n" for r in records))
    assert list(rows.iter_rows(path)) == [(1, records[0]), (2, records[1])]
    # the layout is recognised from the first row, which the mark used to make unreadable
    assert rows.row_files(str(tmp_path), "train") == [path]


def test_a_json_array_with_a_mark_is_read(tmp_path):
    records = [{"document": "a", "summary": "b"}]
    path = write(tmp_path / "train.json", "\n  " + json.dumps(records))
    assert rows.holds_rows(path)
    assert list(rows.iter_rows(path)) == [(1, records[0])]


def test_release_line_files_with_a_mark(tmp_path):
    source = write(tmp_path / "train.source", "Rain fell all day.\n")
    target = write(tmp_path / "train.target", "Rain.\n")
    (pair,) = read_line_pairs(source, target)
    assert pair.source == ("Rain fell all day.",) and pair.target == ("Rain.",)


def test_prepare_and_check_pairs_cli(tmp_path):
    raw, out = tmp_path / "raw", tmp_path / "out"
    raw.mkdir()
    records = [{"document": "The old mill stood by the river.", "summary": "An old mill."}]
    write(raw / "train.jsonl", json.dumps(records[0]) + "\n")
    run_cli(["python", os.path.join(REPO, "scripts", "prepare_seq2seq_data.py"), "--format", "fields",
             "--input", str(raw), "--output", str(out), "--splits", "train"], timeout=300)  # fmt: skip
    assert (out / "train.src").read_text(encoding="utf-8") == "The old mill stood by the river.\n"
    assert (out / "train.tgt").read_text(encoding="utf-8") == "An old mill.\n"

    # a first line that holds only the mark is a blank line: no pair
    write(tmp_path / "out" / "train.src", "\nsecond\n")
    proc = run_cli(["python", os.path.join(REPO, "scripts", "check_pairs.py"), str(out), "--splits", "train"],
                   check=False)  # fmt: skip
    assert proc.returncode == 1
    assert f"{out / 'train.src'}:1: blank line" in proc.stdout + proc.stderr


def test_missing_output_folder(tmp_path):
    assert (
        missing_output_folder([("--json", None), ("--output", "-"), ("--out", str(tmp_path / "a.txt"))])
        is None
    )
    assert missing_output_folder([("--json", str(tmp_path / "no" / "a.json"))]) == (
        f"--json {tmp_path / 'no' / 'a.json'}: its folder does not exist"
    )
    assert missing_output_folder([("--out", str(tmp_path))]) == f"--out {tmp_path}: a folder, not a file"
    # a relative name is in the working directory, which exists
    assert missing_output_folder([("--json", "scores.json")]) is None
    # the script says so before any scoring (exit 2: argparse's error)
    nowhere = str(tmp_path / "x" / "s.json")
    proc = run_cli(["python", "scripts/score.py", "--hyp", "h", "--ref", "r", "--json", nowhere], check=False)
    assert proc.returncode == 2 and "its folder does not exist" in proc.stderr
