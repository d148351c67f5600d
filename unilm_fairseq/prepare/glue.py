"""Read the GLUE benchmark's released TSV files into (sentence, [sentence,] label) examples.

Each task's files keep the layout of the public GLUE release: a header line
naming the columns (CoLA's train/dev files have none: source, label, original
label, sentence), tab-separated fields, and no quoting (MNLI and QQP hold bare
``"`` characters, so the files are split on tabs alone). The test files carry
no labels. A row with too few fields or an empty sentence is skipped and
counted, never fatal: QQP's train file is known to hold a few broken rows.
"""

import csv
import logging
import os
from collections import Counter
from typing import Dict, Iterator, List, NamedTuple, Optional, Sequence, Tuple

logger = logging.getLogger(__name__)


class GlueTask(NamedTuple):
    folder: str  # the task's folder in the release
    sentences: Tuple[str, ...]  # header names of the sentence columns (CoLA: column numbers)
    label: str  # header name of the label column (CoLA: a column number)
    regression: bool = False
    files: Tuple[Tuple[str, str], ...] = (("train", "train.tsv"), ("valid", "dev.tsv"), ("test", "test.tsv"))
    headerless: Tuple[str, ...] = ()  # splits whose file has no header line
    header_sentences: Tuple[str, ...] = ()  # sentence columns by name where a headerless task has a header


GLUE_TASKS: Dict[str, GlueTask] = {
    "CoLA": GlueTask("CoLA", ("3",), "1", headerless=("train", "valid"), header_sentences=("sentence",)),
    "SST-2": GlueTask("SST-2", ("sentence",), "label"),
    "MRPC": GlueTask("MRPC", ("#1 String", "#2 String"), "Quality"),
    "QQP": GlueTask("QQP", ("question1", "question2"), "is_duplicate"),
    "STS-B": GlueTask("STS-B", ("sentence1", "sentence2"), "score", regression=True),
    "MNLI": GlueTask(
        "MNLI",
        ("sentence1", "sentence2"),
        "gold_label",
        files=(
            ("train", "train.tsv"),
            ("valid", "dev_matched.tsv"),
            ("valid1", "dev_mismatched.tsv"),
            ("test", "test_matched.tsv"),
            ("test1", "test_mismatched.tsv"),
        ),
    ),
    "QNLI": GlueTask("QNLI", ("question", "sentence"), "label"),
    "RTE": GlueTask("RTE", ("sentence1", "sentence2"), "label"),
    "WNLI": GlueTask("WNLI", ("sentence1", "sentence2"), "label"),
}


class GlueExample(NamedTuple):
    sentences: Tuple[str, ...]
    label: Optional[str]  # None for test files


def task_spec(name: str) -> GlueTask:
    for key, spec in GLUE_TASKS.items():
        if key.lower() == name.lower():
            return spec
    raise ValueError(f"unknown GLUE task {name!r}: one of {', '.join(GLUE_TASKS)}")


def _column(header: Optional[List[str]], name: str, path: str) -> int:
    if header is None:
        return int(name)
    if name not in header:
        raise ValueError(f"{path}: no column {name!r} in the header {header}")
    return header.index(name)


def read_glue_file(
    path: str,
    spec: GlueTask,
    has_header: bool = True,
    stats: Optional[Counter] = None,
    needs_label: bool = False,
) -> Iterator[GlueExample]:
    """The examples of one GLUE TSV file. A test file (no label column) gives ``label=None``; with
    ``needs_label`` (a train or dev file) a header without the label column is an error. A leading
    byte-order mark (MRPC's files have one) is not part of the first column's name.

    Rows with missing fields or an empty sentence are skipped and counted in
    ``stats["skipped_malformed"]``.
    """
    stats = Counter() if stats is None else stats
    with open(path, encoding="utf-8-sig", newline="") as f:
        rows = csv.reader(f, delimiter="\t", quoting=csv.QUOTE_NONE)
        header = next(rows, None) if has_header else None
        if has_header and header is None:
            return
        names = spec.header_sentences if header is not None and spec.header_sentences else spec.sentences
        sentence_columns = [_column(header, name, path) for name in names]
        labelled = header is None or spec.label in header
        if needs_label and not labelled:
            raise ValueError(f"{path}: no label column {spec.label!r} in the header {header}")
        label_column = _column(header, spec.label, path) if labelled else None
        needed = max(sentence_columns + ([label_column] if labelled else [])) + 1
        for row in rows:
            if len(row) < needed:
                stats["skipped_malformed"] += 1
                continue
            sentences = tuple(row[c].strip() for c in sentence_columns)
            label = row[label_column].strip() if labelled else None
            if not all(sentences) or (labelled and not label):
                stats["skipped_malformed"] += 1
                continue
            stats["read"] += 1
            yield GlueExample(sentences, label)


def split_files(input_dir: str, spec: GlueTask, splits: Sequence[str]) -> List[Tuple[str, str, bool]]:
    """``(split, path, has_header)`` for the requested splits found in ``input_dir`` (missing ones logged)."""
    found = []
    for split, filename in spec.files:
        if split.rstrip("1") not in splits:
            continue
        path = os.path.join(input_dir, filename)
        if not os.path.exists(path):
            logger.warning("%s: no %s file (%s), skipped", spec.folder, split, path)
            continue
        found.append((split, path, split not in spec.headerless))
    return found
