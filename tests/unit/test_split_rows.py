"""scripts/split_rows.py: one row file into train/valid/test row files, each row in one split only."""

import datetime
import json
import os
import subprocess
import sys

import pyarrow as pa  # a test dependency (setup.py's "test" extra)
import pyarrow.parquet as pq

from ..helpers.cli import REPO

SCRIPT = os.path.join(REPO, "scripts", "split_rows.py")


def split(rows_file, out, *flags):
    return subprocess.run([sys.executable, SCRIPT, str(rows_file), str(out), *flags], capture_output=True,
                          text=True, cwd=REPO)  # fmt: skip


def read_split(out, name):
    with open(out / f"{name}.jsonl", encoding="utf-8") as f:
        return [json.loads(line) for line in f]


def test_rows_are_split_once_each_and_the_same_for_a_seed(tmp_path):
    rows = [{"source": f"text {i % 5}", "target": f"summary {i % 5}"} for i in range(20)]  # 5 distinct
    lines = [json.dumps(row) for row in rows] + ["[1, 2]", "not json at all"]
    (tmp_path / "rows.jsonl").write_text("\n".join(lines) + "\n")
    proc = split(tmp_path / "rows.jsonl", tmp_path / "a", "--valid-fraction", "0.2", "--test-fraction", "0.2")
    assert proc.returncode == 0, proc.stderr
    assert "5 rows -> train 3, valid 1, test 1" in proc.stderr and "15 duplicate rows left out" in proc.stderr
    assert "2 lines skipped (not a JSON object)" in proc.stderr
    splits = {name: read_split(tmp_path / "a", name) for name in ("train", "valid", "test")}
    seen = [json.dumps(row) for rows in splits.values() for row in rows]
    assert len(seen) == len(set(seen)) == 5  # a repeated row was in train and in test
    split(tmp_path / "rows.jsonl", tmp_path / "b", "--valid-fraction", "0.2", "--test-fraction", "0.2")
    for name in ("train.jsonl", "valid.jsonl", "test.jsonl"):
        assert (tmp_path / "a" / name).read_bytes() == (tmp_path / "b" / name).read_bytes()


def test_parquet_values_json_lacks_are_written_as_text(tmp_path):
    table = pa.table({
        "source": [f"article {i}" for i in range(10)],
        "target": [f"summary {i}" for i in range(10)],
        "published": [datetime.datetime(2020, 1, i + 1) for i in range(10)],
    })  # fmt: skip
    pq.write_table(table, tmp_path / "rows.parquet")
    proc = split(tmp_path / "rows.parquet", tmp_path / "out")
    assert proc.returncode == 0 and "Traceback" not in proc.stderr, proc.stderr
    rows = [row for name in ("train", "valid", "test") for row in read_split(tmp_path / "out", name)]
    assert sorted(row["published"] for row in rows)[0].startswith("2020-01-01")
    assert len(rows) == 10
