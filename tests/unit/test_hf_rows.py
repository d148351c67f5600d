"""Seq2seq data from row files, as the Hugging Face ``datasets`` library exports them: JSON lines and Parquet
in the layouts of cnn_dailymail, xsum, gigaword and squad, written here at run time; bad rows skipped,
counted and logged; through the functions and scripts/prepare_seq2seq_data.py."""

import json
import os
import sys
from collections import Counter

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from unilm_fairseq.prepare import hf_rows as rows
from unilm_fairseq.prepare import seq2seq_release_formats as sources
from unilm_fairseq.prepare.seq2seq_release_formats import Pair

from ..helpers.cli import REPO, load_script, run_cli

SCRIPT = os.path.join(REPO, "scripts", "prepare_seq2seq_data.py")

CNNDM = [
    {"article": "The harbour library reopened on Saturday.\nResidents paid for the work.",
     "highlights": "Library reopens\nResidents paid", "id": "c1"},
    {"article": "A ferry will run every hour.", "highlights": "Hourly ferry", "id": "c2"},
]  # fmt: skip
XSUM = [
    {"document": "Engineers built a new path inland.", "summary": "A coastal path has reopened.", "id": "1"},
    {"document": "Volunteers found a rare orchid.", "summary": "A rare orchid was found.", "id": "2"},
    {"document": "The council agreed a budget.", "summary": "A budget was agreed.", "id": "3"},
]
GIGAWORD = [
    {"document": "police said a UNK fire destroyed a warehouse", "summary": "UNK fire destroys warehouse"}
]
# "mill" twice: answer_start points at the second one
PASSAGE = "The old mill stood by the river. Years later a new mill was built on the hill."
SQUAD = [
    {"id": "q1", "title": "Mill", "context": PASSAGE, "question": "What was built on the hill?",
     "answers": {"text": ["mill"], "answer_start": [PASSAGE.rindex("mill")]}},
    {"id": "q2", "title": "Mill", "context": PASSAGE, "question": "Where did the old mill stand?",
     "answers": {"text": ["by the river", "the river"], "answer_start": [19, 22]}},
]  # fmt: skip


def write_jsonl(path, records, extra_lines=()):
    path.parent.mkdir(parents=True, exist_ok=True)
    lines = [json.dumps(r) for r in records] + list(extra_lines)
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def write_parquet(path, records):
    path.parent.mkdir(parents=True, exist_ok=True)
    pq.write_table(pa.Table.from_pylist(records), str(path))
    return path


def read_all(layout, paths, **kwargs):
    stats = Counter()
    return list(rows.RowReader(rows.LAYOUTS[layout], stats, **kwargs).read([str(p) for p in paths])), stats


def prepare(*args, check=True):
    return run_cli(["python", SCRIPT, *map(str, args)], check=check, timeout=300)


def read_split(directory, split):
    return tuple(
        (directory / f"{split}.{side}").read_text(encoding="utf-8").splitlines() for side in ("src", "tgt")
    )


# ------------------------------------------------------------------------------------------ layouts


def test_cnndm_highlights_are_sentences(tmp_path):
    pairs, stats = read_all("cnndm", [write_jsonl(tmp_path / "train.jsonl", CNNDM)], target_lines=True)
    assert pairs == [
        Pair(("The harbour library reopened on Saturday. Residents paid for the work.",),
             ("Library reopens", "Residents paid")),
        Pair(("A ferry will run every hour.",), ("Hourly ferry",)),
    ]  # fmt: skip
    assert stats["rows"] == 2 and not any(stats[k] for k in rows.SKIP_REASONS)


def test_xsum_parquet_shards_in_order(tmp_path):
    shards = [write_parquet(tmp_path / "train-00000-of-00002.parquet", XSUM[:2]),
              write_parquet(tmp_path / "train-00001-of-00002.parquet", XSUM[2:])]  # fmt: skip
    assert rows.row_files(str(tmp_path), "train") == [str(p) for p in shards]
    pairs, _ = read_all("xsum", shards)
    assert [p.target for p in pairs] == [(r["summary"],) for r in XSUM]


def test_gigaword_unk(tmp_path):
    pairs, _ = read_all("gigaword", [write_jsonl(tmp_path / "t.jsonl", GIGAWORD)], unk_token="[UNK]")
    assert pairs == [
        Pair(("police said a [UNK] fire destroyed a warehouse",), ("[UNK] fire destroys warehouse",))
    ]


@pytest.mark.parametrize("kind", ["jsonl", "parquet", "flattened"])
def test_squad_rows_follow_the_squad_json_convention(tmp_path, kind):
    """First answer; its answer_start carried as the offset (the second "mill"); the pair equals what the
    SQuAD JSON reader makes of the same question."""
    if kind == "jsonl":
        path = write_jsonl(tmp_path / "train.json", SQUAD)  # Dataset.to_json writes JSON lines
    elif kind == "parquet":
        path = write_parquet(tmp_path / "train.parquet", SQUAD)  # answers: a struct column
    else:  # Dataset.flatten(): "answers.text" and "answers.answer_start" columns
        flat = [{k: v for k, v in r.items() if k != "answers"} for r in SQUAD]
        for row, record in zip(flat, SQUAD):
            row.update({f"answers.{k}": v for k, v in record["answers"].items()})
        path = write_jsonl(tmp_path / "train.jsonl", flat)
    layout = rows.LAYOUTS["squad_qg"]
    if kind == "flattened":
        layout = layout._replace(answer="answers.text")
    stats = Counter()
    pairs = list(rows.RowReader(layout, stats, answer_first=False).read([str(path)]))
    assert pairs[0] == Pair((PASSAGE, "mill"), ("What was built on the hill?",), PASSAGE.rindex("mill"))
    expected = sources.squad_pair(PASSAGE, "Where did the old mill stand?", "by the river", 19, False)
    assert pairs[1] == expected and expected.answer_start == 19
    assert stats["answer_offset_mismatch"] == 0


def test_a_squad_document_is_not_a_row_file(tmp_path):
    squad = {"version": "1.1", "data": [{"title": "t", "paragraphs": []}]}
    (tmp_path / "train.json").write_text(json.dumps(squad))
    assert rows.row_files(str(tmp_path), "train") is None
    (tmp_path / "train.json").write_text(json.dumps(squad, indent=2))
    assert rows.row_files(str(tmp_path), "train") is None
    (tmp_path / "train.json").write_text(json.dumps(XSUM, indent=2))  # to_json(lines=False): one array
    assert rows.row_files(str(tmp_path), "train") == [str(tmp_path / "train.json")]
    assert [p.source for p in read_all("xsum", [tmp_path / "train.json"])[0]] == [
        (r["document"],) for r in XSUM
    ]


def test_layouts_are_recognised_from_a_row():
    assert rows.infer_layout(CNNDM[0]) == "cnndm" and rows.infer_layout(SQUAD[0]) == "squad_qg"
    assert rows.infer_layout(XSUM[0]) == "xsum" and rows.infer_layout({"text": "a"}) is None
    assert rows.get_field({"answers": {"text": ["x"]}}, "answers.text") == ["x"]
    assert rows.get_field({"answers.text": ["y"], "answers": {"text": ["x"]}}, "answers.text") == ["y"]


# ------------------------------------------------------------------------------------------ bad rows


def test_bad_rows_are_skipped_counted_and_logged(tmp_path, caplog):
    good = CNNDM[1]
    bad = [
        {"article": "   \n ", "highlights": "x"},  # empty
        {"highlights": "no article"},  # missing
        {"article": None, "highlights": "null article"},  # null: missing
        {"article": 42, "highlights": "a number"},  # not text
        {"article": "Text.", "highlights": ["ok", 3]},  # a list with a number: not text
        {"article": "Text.", "highlights": ""},  # empty target
    ]
    path = write_jsonl(tmp_path / "train.jsonl", [good, *bad, good], extra_lines=["{cut off", "[1, 2]"])
    with caplog.at_level("WARNING"):
        pairs, stats = read_all("cnndm", [path], target_lines=True)
    assert len(pairs) == 2 and stats["rows"] == 10
    counts = [stats[f"row_{reason}"] for reason in ("empty", "missing_field", "not_text", "unreadable")]
    assert counts == [2, 2, 2, 2]
    assert f"{path}:2: skipped: field 'article' is empty" in caplog.text
    assert f"{path}:5: skipped: field 'article' is int, not text" in caplog.text
    assert f"{path}:9: skipped: not a JSON object" in caplog.text
    summary = rows.summary("train", stats)
    assert summary == (
        "train: 10 rows read; skipped 2 unreadable lines, 2 without a field, 2 whose field is not text, "
        "2 with an empty field, 0 without an answer"
    )


def test_squad_rows_without_an_answer_are_counted(tmp_path):
    unanswerable = dict(SQUAD[0], answers={"text": [], "answer_start": []})  # SQuAD v2.0
    numeric = dict(SQUAD[0], answers={"text": [7], "answer_start": [0]})
    pairs, stats = read_all(
        "squad_qg", [write_jsonl(tmp_path / "t.jsonl", [unanswerable, numeric, SQUAD[1]])]
    )
    assert len(pairs) == 1 and stats["row_no_answer"] == 1 and stats["row_not_text"] == 1


def test_a_parquet_file_without_the_column_is_named(tmp_path):
    path = write_parquet(tmp_path / "train.parquet", [{"text": "a", "summary": "b"}])
    with pytest.raises(
        ValueError, match=r"train.parquet: no column 'document' \(its columns: text, summary\)"
    ):
        read_all("xsum", [path])


def test_parquet_without_pyarrow_says_how_to_install_it(tmp_path, monkeypatch):
    path = write_parquet(tmp_path / "train.parquet", XSUM)
    monkeypatch.setitem(sys.modules, "pyarrow", None)  # import fails as if it were not installed
    monkeypatch.setitem(sys.modules, "pyarrow.parquet", None)
    with pytest.raises(ImportError, match="reading Parquet files needs pyarrow: pip install pyarrow"):
        read_all("xsum", [path])


# ------------------------------------------------------------------------------------------ the script


def test_cli_reads_each_layout(tmp_path):
    raw = tmp_path / "raw"
    write_jsonl(raw / "cnndm" / "train.jsonl", CNNDM)
    write_parquet(raw / "cnndm" / "validation-00000-of-00001.parquet", CNNDM[1:])
    out = tmp_path / "cnndm"
    log = prepare(
        "--format", "cnndm", "--input", raw / "cnndm", "--output", out, "--splits", "train,valid"
    ).stderr
    assert read_split(out, "train")[1] == ["Library reopens <q> Residents paid", "Hourly ferry"]
    assert read_split(out, "valid") == (["A ferry will run every hour."], ["Hourly ferry"])
    assert "train: 2 rows read; skipped 0 unreadable lines" in log and "valid: 1 rows read" in log

    # QG: the recipe's order (passage [SEP] answer) and a window around the answer the offset names
    write_parquet(raw / "squad" / "train.parquet", SQUAD)
    out = tmp_path / "squad"
    prepare("--format", "squad_qg", "--input", raw / "squad", "--output", out, "--splits", "train",
            "--qg-order", "passage_answer", "--max-source-tokens", 9)  # fmt: skip
    sources_, targets = read_split(out, "train")
    assert sources_[0] == "later a new mill was built on [SEP] mill"  # the second "mill", answer_start's
    assert targets == ["What was built on the hill?", "Where did the old mill stand?"]


def test_cli_fields_format_and_bad_input(tmp_path):
    raw = tmp_path / "raw"
    records = [{"text": "Rain is expected.", "title": "Rain"}, {"text": "", "title": "Nothing"},
               {"title": "No text"}, {"text": "Sun.", "title": {"main": "Sun"}}]  # fmt: skip
    write_jsonl(raw / "train.jsonl", records)
    out = tmp_path / "out"
    proc = prepare("--format", "fields", "--input", raw, "--output", out, "--splits", "train", check=False)
    assert proc.returncode != 0 and "give --source-field and --target-field" in proc.stderr
    assert "['text', 'title']" in proc.stderr and "Traceback" not in proc.stderr
    log = prepare("--format", "fields", "--input", raw, "--output", out, "--splits", "train",
                  "--source-field", "text", "--target-field", "title").stderr  # fmt: skip
    assert read_split(out, "train") == (["Rain is expected."], ["Rain"])
    assert "train: 4 rows read; skipped 0 unreadable lines, 1 without a field, 1 whose field is not text, " \
           "1 with an empty field" in log  # fmt: skip
    assert "train: 1 pairs" in log
    proc = prepare("--format", "xsum", "--input", raw, "--output", out, "--splits", "train", check=False)
    assert proc.returncode != 0 and "train: no examples written" in proc.stderr
    assert "4 without a field" in proc.stderr


def test_a_non_utf8_json_line_is_skipped_and_counted_not_the_whole_file(tmp_path, caplog):
    path = tmp_path / "train.jsonl"
    lines = [json.dumps(r).encode() for r in CNNDM[:2]]
    path.write_bytes(lines[0] + b"\n" + b'{"article": "caf\xe9", "highlights": "x"}\n' + lines[1] + b"\n")
    with caplog.at_level("WARNING"):
        pairs, stats = read_all("cnndm", [str(path)], target_lines=True)
    assert len(pairs) == 2 and stats["rows"] == 3 and stats["row_unreadable"] == 1
    assert f"{path}:2: skipped: not a JSON object (or not UTF-8)" in caplog.text


def test_a_non_utf8_json_array_is_a_clear_error(tmp_path):
    path = tmp_path / "train.json"
    path.write_bytes(b'[{"article": "caf\xe9", "highlights": "x"}]')
    with pytest.raises(ValueError, match="not UTF-8 text"):
        read_all("cnndm", [str(path)], target_lines=True)


@pytest.mark.parametrize(
    "extra, files, message",
    [
        (["--max-source-tokens", "-3"], {}, "--max-source-tokens -3: must be 0 (no limit) or more"),
        (["--max-target-tokens", "-1"], {}, "--max-target-tokens -1: must be 0 (no limit) or more"),
        (["--output", "a_file"], {"a_file": b"x\n"}, "--output a_file is a file, not a folder"),
        (
            ["--wordpiece-vocab", "vocab.txt"],
            {"vocab.txt": b""},
            "error: vocab.txt: empty vocabulary",
        ),
        (["--wordpiece-vocab", "vocab.txt"], {"vocab.txt": b"[UNK]\n\xff\n"}, "vocab.txt:2: not UTF-8"),
        (["--wordpiece-vocab", "missing.txt"], {}, "missing.txt"),
        (["--spm-model", "spm.model"], {"spm.model": b"not a model"}, "ModelProto from spm.model"),
    ],
)
def test_cli_refuses_bad_options_and_models_before_reading(
    tmp_path, monkeypatch, capsys, extra, files, message
):
    monkeypatch.chdir(tmp_path)
    write_jsonl(tmp_path / "raw" / "train.jsonl", XSUM)
    for name, data in files.items():
        (tmp_path / name).write_bytes(data)
    module = load_script("scripts/prepare_seq2seq_data.py")
    monkeypatch.setattr(module.logging, "basicConfig", lambda **kwargs: None)  # pytest keeps the log
    monkeypatch.setattr(module, "read_split", lambda *a: pytest.fail("read before the options were checked"))
    argv = ["--format", "xsum", "--input", "raw", "--output", "out", "--splits", "train", *extra]
    with pytest.raises(SystemExit) as stop:
        module.main(argv)
    assert message in str(stop.value.code) + capsys.readouterr().err
    assert not (tmp_path / "out").exists()
