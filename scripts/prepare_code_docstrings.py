#!/usr/bin/env python
"""Python code -> one-line summary pairs as raw text, from source on this machine (nothing is downloaded).

    python scripts/prepare_code_docstrings.py --output work/docstrings/data
    bash examples/s2s_ft/finetune.sh work/docstrings/data work/docstrings/run

The code-summarization task of CodeSearchNet / CodeXGLUE (code-to-text): the source is a documented
function's code with its docstrings removed, the target the docstring's first sentence. ``--root``
(repeatable; default: the running interpreter's standard library, its tests and site-packages left out)
names the folders whose ``.py`` files are read. Each file goes whole to train, valid or test, by a digest
of its path (``--valid-percent``, ``--test-percent``), so a rebuild splits the same way.

Writes, for each of ``train``/``valid``/``test``: ``{split}.src`` / ``{split}.tgt`` (one pair a line),
``{split}.id`` (``path:Qualified.name``), and ``test.name.hyp``: the name baseline, each function's name as
words ("_line_count" -> "line count"), scored by ``finetune.sh`` beside the lead baseline. ``--max-test``
keeps the first N test pairs (in a fixed order, by digest).

Files that are empty, not UTF-8 or not parseable Python are skipped and counted, as are documented
functions whose docstring does not open with a summary sentence or whose code is a stub, and duplicate
code. Rules: :mod:`unilm_fairseq.prepare.code_docstrings`.
"""

import argparse
import hashlib
import logging
import os
import sys
import sysconfig
from collections import Counter

from unilm_fairseq.prepare import code_docstrings as cd
from unilm_fairseq.prepare.corpus_sources import decode_text

logger = logging.getLogger("prepare_code_docstrings")
SPLITS = ("train", "valid", "test")
SKIP_LABELS = {"non-UTF-8": "not UTF-8"}  # decode_text's reasons, as this script's summary names them


def parse_args(argv=None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--output", required=True, help="folder for the text files")
    parser.add_argument(
        "--root",
        action="append",
        help="a folder of Python source (repeatable; default: this interpreter's standard library)",
    )
    parser.add_argument("--valid-percent", type=int, default=5, help="share of files for valid (default 5)")
    parser.add_argument("--test-percent", type=int, default=10, help="share of files for test (default 10)")
    parser.add_argument("--max-test", type=int, default=0, help="keep at most this many test pairs (0: all)")
    args = parser.parse_args(argv)
    if not (
        0 <= args.valid_percent and 0 <= args.test_percent and args.valid_percent + args.test_percent < 100
    ):
        parser.error("--valid-percent and --test-percent must be >= 0 and leave some files for train")
    if args.max_test < 0:
        parser.error("--max-test must be >= 0")
    return args


def python_files(root: str):
    """(path, path relative to root) of the .py files below root, sorted, skipped folders left out."""
    for folder, dirs, files in os.walk(root):
        dirs[:] = sorted(d for d in dirs if d not in cd.SKIPPED_DIRS)
        for name in sorted(files):
            if name.endswith(".py"):
                path = os.path.join(folder, name)
                yield path, os.path.relpath(path, root)


def read_source(path: str, counts: Counter):
    """The file's text, or None (counted) when it is empty, binary, not UTF-8 (the corpus's rule) or cannot
    be read."""
    try:
        with open(path, "rb") as f:
            status, text = decode_text(f.read())
    except OSError:  # a broken link, a file gone or not readable
        counts["files skipped: unreadable"] += 1
        return None
    if text is None:
        counts[f"files skipped: {SKIP_LABELS.get(status, status)}"] += 1
    return text


def main(argv=None) -> int:
    logging.basicConfig(format="%(asctime)s | %(levelname)s | %(name)s | %(message)s", level=logging.INFO)
    args = parse_args(argv)
    roots = args.root or [sysconfig.get_paths()["stdlib"]]
    for root in roots:
        if not os.path.isdir(root):
            print(f"error: --root {root}: no such folder", file=sys.stderr)
            return 1
    counts, seen = Counter(), set()
    by_split = {split: [] for split in SPLITS}
    for root in roots:
        for path, relative in python_files(root):
            source = read_source(path, counts)
            if source is None:
                continue
            try:
                pairs, left_out = cd.pairs_from_source(source, relative)
            except (SyntaxError, ValueError):
                counts["files skipped: not parseable Python"] += 1
                continue
            counts["files read"] += 1
            counts["functions left out: no summary sentence, or stub code"] += left_out
            split = cd.split_of(relative, args.valid_percent, args.test_percent)
            for pair in pairs:
                digest = cd.code_digest(pair.code)
                if digest in seen:
                    counts["functions left out: duplicate code"] += 1
                    continue
                seen.add(digest)
                by_split[split].append(pair)
    if args.max_test and len(by_split["test"]) > args.max_test:
        # by position: two functions may share an ident (a property's getter and setter)
        test = by_split["test"]
        digests = [hashlib.sha1(pair.ident.encode("utf-8")).hexdigest() for pair in test]
        ordered = sorted(range(len(test)), key=digests.__getitem__)
        kept = set(ordered[: args.max_test])
        by_split["test"] = [pair for i, pair in enumerate(test) if i in kept]
    for split in SPLITS:
        if not by_split[split]:
            print(
                f"error: no {split} pairs from {', '.join(roots)} (summary: {dict(counts)})", file=sys.stderr
            )
            return 1
    os.makedirs(args.output, exist_ok=True)
    for split, pairs in by_split.items():
        columns = {
            "src": [p.code for p in pairs],
            "tgt": [p.summary for p in pairs],
            "id": [p.ident for p in pairs],
        }
        if split == "test":
            columns["name.hyp"] = [cd.name_words(p.name) or p.name for p in pairs]
        for suffix, lines in columns.items():
            with open(os.path.join(args.output, f"{split}.{suffix}"), "w", encoding="utf-8") as f:
                f.writelines(line + "\n" for line in lines)
        logger.info("%s: %d pairs", split, len(pairs))
    for what, number in sorted(counts.items()):
        logger.info("%s: %d", what, number)
    logger.info("wrote %s from %s", args.output, ", ".join(roots))
    return 0


if __name__ == "__main__":
    sys.exit(main())
