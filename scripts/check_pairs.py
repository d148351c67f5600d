#!/usr/bin/env python
"""Check a folder of raw text pairs before any work is done on it: ``{split}.src`` and ``{split}.tgt``.

    python scripts/check_pairs.py DATA_DIR [--splits train valid test]

Each split's two files must exist, hold the same number of lines (one example per line), be valid UTF-8,
have no blank line (every pair needs a source and a target) and hold at least one pair. A baseline's
hypotheses ``test.NAME.hyp`` (scored beside the model) must be valid UTF-8 and hold one line per test
pair (a blank line is an empty hypothesis, allowed). Every problem
found is printed as one line naming the file, the line and what is wrong; the exit status is 1 if there
was any, 0 otherwise. ``examples/s2s_ft/finetune.sh`` runs this first, so a bad file stops it before the
conversion, tokenizing and binarizing stages rather than in the middle of them.

Text that looks WordPiece-tokenized already (``wood ##house``: more than 1% of a file's lines hold a
``##`` continuation piece) gets a warning, not an error: finetune.sh tokenizes raw text, and tokenizing
pieces again splits them (``wood # # house``).
"""

import argparse
import os
import re
import sys
from typing import List, Tuple

SIDES = ("src", "tgt")
CONTINUATION_PIECE = re.compile(r"(^|\s)##\w")
PRETOKENIZED_SHARE = 0.01


def scan(path: str) -> Tuple[int, List[str]]:
    """``(lines, problems)`` of one text file; stops listing blank lines after the first (it counts them)."""
    problems, blank, first_blank, lines = [], 0, None, 0
    with open(path, "rb") as f:
        for number, raw in enumerate(f, 1):
            lines = number
            try:
                text = raw.decode("utf-8")
            except UnicodeDecodeError as error:
                problems.append(
                    f"{path}:{number}: not UTF-8 (byte {raw[error.start]:#04x} at column {error.start + 1})"
                )
                continue
            if number == 1:  # a byte-order mark is not text (the readers drop it: encoders/text_lines.py)
                text = text.removeprefix("\ufeff")
            if not text.strip():
                blank += 1
                first_blank = first_blank or number
    if blank:
        problems.append(
            f"{path}:{first_blank}: blank line ({blank} in all; every pair needs a source and a target)"
        )
    return lines, problems


def check_pairs(data: str, splits=("train", "valid", "test")) -> List[str]:
    """Every problem of ``data``'s pair files, one line each (empty: the files are fine)."""
    problems = []
    for split in splits:
        paths = [os.path.join(data, f"{split}.{side}") for side in SIDES]
        missing = [path for path in paths if not os.path.isfile(path)]
        if missing:
            problems += [f"{path}: no such file" for path in missing]
            continue
        (sources, source_problems), (targets, target_problems) = (scan(path) for path in paths)
        problems += source_problems + target_problems
        if sources != targets:
            problems.append(
                f"{split}: {paths[0]} has {sources} lines but {paths[1]} has {targets} (one pair per line)"
            )
        elif sources == 0:
            problems.append(f"{split}: {paths[0]} and {paths[1]} are empty")
        if split == "test" and not missing:
            problems += baseline_problems(data, targets)
    return problems


def pretokenized_warnings(data: str, splits=("train", "valid", "test")) -> List[str]:
    """A line for each pair file that looks WordPiece-tokenized already (see the module's docstring)."""
    warnings = []
    for split in splits:
        for side in SIDES:
            path = os.path.join(data, f"{split}.{side}")
            if not os.path.isfile(path):
                continue
            with open(path, encoding="utf-8", errors="replace") as f:
                lines = f.read().splitlines()
            pieces = sum(1 for line in lines if CONTINUATION_PIECE.search(line))
            if lines and pieces > PRETOKENIZED_SHARE * len(lines):
                warnings.append(
                    f"{path}: {pieces} of {len(lines)} lines hold '##' pieces: the text looks WordPiece-"
                    "tokenized already; give raw text (tokenizing again turns 'wood ##house' into "
                    "'wood # # house')"
                )
    return warnings


def baseline_problems(data: str, pairs: int) -> List[str]:
    """Problems of ``data``'s ``test.NAME.hyp`` files: invalid UTF-8, or not one line per test pair."""
    problems = []
    for name in sorted(os.listdir(data)):
        if name.startswith("test.") and name.endswith(".hyp"):
            path = os.path.join(data, name)
            lines, found = scan(path)
            problems += [problem for problem in found if "blank line" not in problem]
            if lines != pairs:
                problems.append(
                    f"{path} has {lines} lines but the test set has {pairs} pairs (one hypothesis each)"
                )
    return problems


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("data", help="folder with {split}.src and {split}.tgt")
    parser.add_argument("--splits", nargs="+", default=["train", "valid", "test"], help="splits to check")
    args = parser.parse_args(argv)
    problems = check_pairs(args.data, args.splits)
    if not problems:
        for warning in pretokenized_warnings(args.data, args.splits):
            print(f"warning: {warning}", file=sys.stderr)
    for problem in problems:
        print(f"error: {problem}", file=sys.stderr)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
