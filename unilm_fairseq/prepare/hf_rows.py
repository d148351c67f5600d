"""Seq2seq examples from row files: JSON lines and Parquet, as the Hugging Face ``datasets`` library exports
them (``Dataset.to_json``, ``Dataset.to_parquet``, the Hub's ``{split}-00000-of-00003.parquet`` shards).

A split's files are ``{split}.jsonl``, ``{split}.json``, ``{split}.parquet`` or their shards
``{split}-*.{jsonl,json,parquet}`` in the input directory (``valid`` also matches ``validation``, ``val``
and ``dev``). A ``.json`` file holds one object per line (JSON lines) or one array of objects; a SQuAD
document (one object with a ``"data"`` list) is not a row file (:func:`holds_rows`).

Fields name a row's keys; a dotted name reaches into nested objects (``answers.text``) unless the row has
the dotted name as a key of its own (``Dataset.flatten()`` exports). :data:`LAYOUTS` gives the fields of the
known datasets (``--format``), and :func:`infer_layout` recognises them from a row's keys.

A row that cannot give an example is skipped, counted in ``stats`` and logged (the first
:data:`LOGGED_ROWS` of a split, by file and row number): ``row_unreadable`` (a line that is not a JSON
object), ``row_missing_field`` (a field absent or null), ``row_not_text`` (a field that is not a string;
targets may also be a list of strings, one per sentence), ``row_empty`` (a field with nothing but
whitespace), ``row_no_answer`` (question generation: a row whose answer list is empty). ``rows`` counts
every row read. A Parquet file without a column of a field, or a file that is not valid UTF-8 text, raises
``ValueError`` naming it; Parquet needs ``pyarrow`` (:func:`import_pyarrow`).
"""

import glob
import json
import logging
import os
from collections import Counter
from typing import Any, Dict, Iterator, List, NamedTuple, Optional, Sequence, Tuple

from ..encoders.text_lines import UTF8_BOM, decode_line
from .seq2seq_release_formats import GIGAWORD_UNK, SPLIT_ALIASES, Pair, normalize, replace_words, squad_pair

logger = logging.getLogger(__name__)

EXTENSIONS = (".jsonl", ".json", ".parquet")
LOGGED_ROWS = 20  # bad rows logged one by one per split; the summary counts them all
PARQUET_BATCH = 1024
SKIP_REASONS = {
    "row_unreadable": "unreadable lines",
    "row_missing_field": "without a field",
    "row_not_text": "whose field is not text",
    "row_empty": "with an empty field",
    "row_no_answer": "without an answer",
}


class Layout(NamedTuple):
    """Where a row keeps its source and target (question generation: its passage, question and answer)."""

    source: str
    target: str
    answer: Optional[str] = None


# the Hugging Face datasets' fields: cnn_dailymail, xsum (EdinburghNLP/xsum), gigaword, squad
LAYOUTS = {
    "cnndm": Layout("article", "highlights"),
    "xsum": Layout("document", "summary"),
    "gigaword": Layout("document", "summary"),
    "squad_qg": Layout("context", "question", "answers"),
}
# CNN/DailyMail's highlights hold one sentence a line
TARGET_LINES = {"cnndm"}


def row_files(directory: str, split: str) -> Optional[List[str]]:
    """The row files of ``split`` in ``directory`` (one file or its shards, in name order), or None. A
    ``.json`` file that is not a row file (a SQuAD document) does not count."""
    for alias in SPLIT_ALIASES[split]:
        for ext in EXTENSIONS:
            whole = os.path.join(directory, alias + ext)
            shards = sorted(glob.glob(os.path.join(glob.escape(directory), f"{glob.escape(alias)}-*{ext}")))
            found = [whole] if os.path.isfile(whole) else shards
            found = [p for p in found if ext != ".json" or holds_rows(p)]
            if found:
                return found
    return None


def holds_rows(path: str) -> bool:
    """Whether a ``.json`` file holds rows: JSON lines, or one array (a SQuAD document is one object)."""
    with open(path, encoding="utf-8-sig", errors="replace") as f:
        for line in f:
            if line.strip():
                head = line.lstrip()
                if head.startswith("["):
                    return True
                try:
                    first = json.loads(line)
                except json.JSONDecodeError:
                    return False  # a document spread over lines
                return isinstance(first, dict) and not isinstance(first.get("data"), list)
    return False


def import_pyarrow():
    """``pyarrow.parquet``, or an ``ImportError`` that says how to install it."""
    try:
        import pyarrow.parquet as parquet
    except ImportError as err:
        raise ImportError(f"reading Parquet files needs pyarrow: pip install pyarrow ({err})") from err
    return parquet


def iter_rows(path: str, fields: Sequence[str] = ()) -> Iterator[Tuple[int, Any]]:
    """``(row number, row)`` of a row file, from 1; a JSON line that is not UTF-8 or does not parse
    gives ``(number, None)``. ``fields``: a Parquet file must have their columns, and only those are read."""
    if path.endswith(".parquet"):
        yield from _parquet_rows(path, fields)
        return
    with open(path, "rb") as f:
        if f.read(len(UTF8_BOM)) != UTF8_BOM:  # a byte-order mark is not text: encoders/text_lines.py
            f.seek(0)
        first = f.read(1)
        while first.isspace():
            first = f.read(1)
        if first == b"[":  # one JSON array: one document, so a bad byte spoils all of it
            try:
                rows = json.loads((first + f.read()).decode("utf-8"))
            except UnicodeDecodeError as err:
                raise ValueError(f"{path}: not UTF-8 text ({err})") from err
            except json.JSONDecodeError as err:
                raise ValueError(f"{path}: not a JSON array of objects ({err})") from err
            yield from enumerate(rows, 1)
            return
        f.seek(0)
        for number, raw in enumerate(f, 1):  # JSON lines: each line decoded alone, a bad one skipped
            if not raw.strip():
                continue
            try:
                yield number, json.loads(decode_line(raw, number, path))
            except ValueError:  # not UTF-8, or not JSON (json.JSONDecodeError is a ValueError)
                yield number, None


def _parquet_rows(path: str, fields: Sequence[str]) -> Iterator[Tuple[int, Dict[str, Any]]]:
    parquet = import_pyarrow()
    table = parquet.ParquetFile(path)
    names = table.schema_arrow.names
    columns = sorted({name if name in names else name.split(".")[0] for name in fields})
    missing = [c for c in columns if c not in names]
    if missing:
        listed = ", ".join(map(repr, missing))
        raise ValueError(f"{path}: no column {listed} (its columns: {', '.join(names)})")
    number = 0
    for batch in table.iter_batches(batch_size=PARQUET_BATCH, columns=columns or None):
        for row in batch.to_pylist():
            number += 1
            yield number, row


def first_row(paths: Sequence[str]) -> Any:
    """The first row of the first file that has one (None if none has)."""
    for path in paths:
        for _, row in iter_rows(path):
            return row
    return None


_MISSING = object()


def get_field(row: Dict[str, Any], name: str) -> Any:
    """``row[name]``, or for a dotted name the nested value (``answers.text``); absent or null: a marker
    that :func:`is_missing` recognises."""
    if name in row:
        value = row[name]
    else:
        value = row
        for part in name.split("."):
            if not isinstance(value, dict) or part not in value:
                return _MISSING
            value = value[part]
    return _MISSING if value is None else value


def is_missing(value: Any) -> bool:
    return value is _MISSING


def infer_layout(row: Any) -> Optional[str]:
    """The known layout whose fields a row has (question generation first: a SQuAD row also has a
    ``title``), or None."""
    if not isinstance(row, dict):
        return None
    for name in ("squad_qg", "cnndm", "xsum"):  # gigaword's fields are xsum's
        layout = LAYOUTS[name]
        if all(not is_missing(get_field(row, f)) for f in layout if f):
            return name
    return None


class RowReader:
    """Pairs from the row files of one split; bad rows are skipped, counted and logged.

    Args:
        layout: the fields; ``answer`` set makes question-generation pairs (source segments answer and
            passage, or passage and answer with ``answer_first=False``:
            :func:`.seq2seq_release_formats.squad_pair`).
        target_lines: a target string holds one sentence a line (CNN/DailyMail highlights).
        unk_token: replaces Gigaword's ``UNK`` in both sides.
    """

    def __init__(
        self,
        layout: Layout,
        stats: Counter,
        target_lines: bool = False,
        answer_first: bool = True,
        unk_token: Optional[str] = None,
        split: str = "",
    ):
        self.layout, self.stats, self.target_lines = layout, stats, target_lines
        self.answer_first, self.unk_token, self.split = answer_first, unk_token, split
        self.logged = 0

    def skip(self, reason: str, where: str, detail: str) -> None:
        self.stats[reason] += 1
        if self.logged < LOGGED_ROWS:
            logger.warning("%s: skipped: %s", where, detail)
        elif self.logged == LOGGED_ROWS:
            logger.warning("%s: more rows skipped; the split's summary counts them", self.split or where)
        self.logged += 1

    def text(self, row: Dict[str, Any], name: str, where: str, sentences=False) -> Optional[List[str]]:
        """A field's text as a list (one item, or a target's sentences), or None after skipping the row."""
        value = get_field(row, name)
        if is_missing(value):
            self.skip("row_missing_field", where, f"no field {name!r}")
            return None
        if sentences and isinstance(value, list) and all(isinstance(v, str) for v in value):
            parts = value
        elif isinstance(value, str):
            parts = value.split("\n") if sentences and self.target_lines else [value]
        else:
            self.skip("row_not_text", where, f"field {name!r} is {type(value).__name__}, not text")
            return None
        parts = [normalize(p) for p in parts]
        parts = [p for p in parts if p]
        if not parts:
            self.skip("row_empty", where, f"field {name!r} is empty")
            return None
        if self.unk_token:
            parts = [replace_words(p, GIGAWORD_UNK, self.unk_token) for p in parts]
        return parts

    def answer(self, row: Dict[str, Any], where: str) -> Optional[Tuple[str, Optional[int]]]:
        """The first answer and its offset in the passage (None when not given): from SQuAD's
        ``{"text": [...], "answer_start": [...]}`` (flattened: ``answers.text`` beside
        ``answers.answer_start``), a list of answers, or one string."""
        name = self.layout.answer
        value = get_field(row, name)
        start = None
        if isinstance(value, dict) and "text" in value:
            start, value = value.get("answer_start"), value["text"]
        elif name.endswith(".text"):  # flattened: the offsets in their own column
            start = get_field(row, name[: -len("text")] + "answer_start")
        if isinstance(value, list):
            if not value:
                self.skip("row_no_answer", where, f"field {name!r} lists no answer")
                return None
            value = value[0]
            start = start[0] if isinstance(start, list) and start else None
        if is_missing(value) or value is None:
            self.skip("row_missing_field", where, f"no field {name!r}")
            return None
        if not isinstance(value, str):
            self.skip("row_not_text", where, f"the answer in {name!r} is {type(value).__name__}, not text")
            return None
        if not value.strip():
            self.skip("row_empty", where, f"the answer in {name!r} is empty")
            return None
        return value, start if isinstance(start, int) and not isinstance(start, bool) else None

    def pair(self, row: Any, where: str) -> Optional[Pair]:
        if not isinstance(row, dict):
            self.skip("row_unreadable", where, "not a JSON object (or not UTF-8)")
            return None
        if self.layout.answer:
            if self.text(row, self.layout.source, where) is None:
                return None
            question = self.text(row, self.layout.target, where)
            answer = self.answer(row, where) if question is not None else None
            if answer is None:
                return None
            # the passage as written: the answer's offset counts its characters
            passage = get_field(row, self.layout.source)
            return squad_pair(passage, question[0], answer[0], answer[1], self.answer_first, self.stats)
        source = self.text(row, self.layout.source, where)
        target = self.text(row, self.layout.target, where, sentences=True) if source is not None else None
        if target is None:
            return None
        return Pair((" ".join(source),), tuple(target))

    def read(self, paths: Sequence[str]) -> Iterator[Pair]:
        fields = [name for name in self.layout if name]
        for path in paths:
            for number, row in iter_rows(path, fields):
                self.stats["rows"] += 1
                pair = self.pair(row, f"{path}:{number}")
                if pair is not None:
                    yield pair


def summary(split: str, stats: Counter) -> str:
    """One line: rows read and rows skipped, by reason."""
    skipped = ", ".join(f"{stats[key]} {what}" for key, what in SKIP_REASONS.items())
    return f"{split}: {stats['rows']} rows read; skipped {skipped}"
