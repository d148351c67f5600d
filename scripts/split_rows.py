#!/usr/bin/env python
"""Split one row file (JSON lines, a JSON array, or Parquet) into train / valid / test row files.

    python scripts/split_rows.py rows.jsonl work/rows --valid-fraction 0.1 --test-fraction 0.1

Writes ``OUT_DIR/{train,valid,test}.jsonl``, one JSON object a line, which
``scripts/prepare_seq2seq_data.py --format fields`` (and so ``examples/s2s_ft/finetune.sh``) reads. The
rows are shuffled with ``--seed`` and cut by the fractions (each at least one row when its fraction is
above 0); inside each split they keep the file's order. Lines that are not a JSON object are skipped,
logged (the first few, by line number) and counted. A row identical to an earlier one is left out and
counted, so no row is in two splits. Values JSON has no type for (a Parquet date or bytes) are written as
their text.
"""

import argparse
import json
import logging
import os
import random
import sys

from unilm_fairseq.prepare.hf_rows import EXTENSIONS, iter_rows

logger = logging.getLogger("split_rows")
LOGGED = 5


def split_sizes(rows: int, valid_fraction: float, test_fraction: float):
    """(train, valid, test) row counts: at least one row for a split whose fraction is above 0."""
    test = max(1, round(rows * test_fraction)) if test_fraction > 0 else 0
    valid = max(1, round(rows * valid_fraction)) if valid_fraction > 0 else 0
    if rows - valid - test < 1:
        raise ValueError(
            f"{rows} rows cannot give a train split beside {valid} valid and {test} test rows: give more "
            "rows or smaller fractions"
        )
    return rows - valid - test, valid, test


def main(argv=None) -> int:
    logging.basicConfig(format="%(asctime)s | %(levelname)s | %(name)s | %(message)s", level=logging.INFO)
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("rows", help="one row file: .jsonl, .json or .parquet")
    parser.add_argument("out_dir", help="folder for {train,valid,test}.jsonl")
    parser.add_argument("--valid-fraction", type=float, default=0.1, help="share of rows for valid [0.1]")
    parser.add_argument("--test-fraction", type=float, default=0.1, help="share of rows for test [0.1]")
    parser.add_argument("--seed", type=int, default=1, help="shuffling seed [1]")
    args = parser.parse_args(argv)
    for name in ("valid_fraction", "test_fraction"):
        if not 0 <= getattr(args, name) < 1:
            parser.error(f"--{name.replace('_', '-')} must be at least 0 and below 1")
    if not args.rows.endswith(EXTENSIONS):
        parser.error(f"{args.rows}: a row file ends with one of {', '.join(EXTENSIONS)}")
    if not os.path.isfile(args.rows):
        print(f"error: {args.rows}: no such file", file=sys.stderr)
        return 1
    lines, seen, skipped, duplicates = [], set(), 0, 0
    try:
        for number, row in iter_rows(args.rows):
            if not isinstance(row, dict):
                skipped += 1
                if skipped <= LOGGED:
                    logger.warning("%s:%d: not a JSON object, skipped", args.rows, number)
                continue
            line = json.dumps(row, ensure_ascii=False, default=str) + "\n"
            if line in seen:  # the same row twice: once, or it could land in train and in test
                duplicates += 1
                continue
            seen.add(line)
            lines.append(line)
        sizes = split_sizes(len(lines), args.valid_fraction, args.test_fraction)
    except (ValueError, ImportError) as err:
        print(f"error: {err}", file=sys.stderr)
        return 1
    # the shuffled order's first rows are test, the next valid, the rest train
    order = list(range(len(lines)))
    random.Random(args.seed).shuffle(order)
    split_of = ["train"] * len(lines)
    for position, i in enumerate(order[: sizes[2] + sizes[1]]):
        split_of[i] = "test" if position < sizes[2] else "valid"
    os.makedirs(args.out_dir, exist_ok=True)
    for split in ("train", "valid", "test"):
        with open(os.path.join(args.out_dir, f"{split}.jsonl"), "w", encoding="utf-8") as f:
            f.writelines(line for line, where in zip(lines, split_of) if where == split)
    logger.info(
        "%s: %d rows -> train %d, valid %d, test %d (seed %d); %d lines skipped (not a JSON object), "
        "%d duplicate rows left out",
        args.rows, len(lines), *sizes, args.seed, skipped, duplicates,
    )  # fmt: skip
    return 0


if __name__ == "__main__":
    sys.exit(main())
