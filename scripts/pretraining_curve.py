#!/usr/bin/env python
"""Held-out pre-training curves from fairseq-train logs of ``--task pmlm --criterion ae_par``.

Reads each log's validation lines ("valid on 'valid' subset") and writes one row per validation: the run's
name, the update, the seconds since training began (from the log's timestamps) and the held-out AE and PAR
loss (bits per predicted token) and masked-token top-1 accuracy (%), as a tab-separated table. With
``--plot`` it also draws the curves (needs matplotlib, which nothing else here uses). ``--start`` adds a
row at update 0 from a fairseq-validate log of the starting checkpoint.

    python scripts/pretraining_curve.py --log ae,par=work/ae+par/train.log ae=work/ae/train.log \\
        --start work/valid-before.log --tsv work/curve.tsv --plot docs/pretraining-curve.png
"""

import argparse
import logging
import re
import sys
from datetime import datetime

logger = logging.getLogger("pretraining_curve")

MEASURES = ("ae_loss", "par_loss", "ae_acc", "par_acc")
VALID_LINE = re.compile(r"valid on '(\w+)' subset")
TIMESTAMP = re.compile(r"^(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d)")
# the first line fairseq-train logs once the training loop starts
TRAINING_STARTS = re.compile(r"begin training epoch|Start iterating over samples")


def field(line: str, name: str):
    """The number logged as ``| name value |`` in a fairseq log line, or None."""
    # fairseq writes "{:g}": 1.002e+06 from a million on; a diverged loss as nan or inf
    match = re.search(rf"(?:^|\| ){re.escape(name)} ([-+]?(?:nan|inf|[0-9.]+(?:e[-+]?\d+)?))(?= \||$)", line)
    return float(match.group(1)) if match else None


def stamp(line: str):
    match = TIMESTAMP.match(line)
    return datetime.strptime(match.group(1), "%Y-%m-%d %H:%M:%S") if match else None


def is_validation(line: str, subset: str) -> bool:
    """A validation line of ``subset`` (another --valid-subset's lines are another curve)."""
    match = VALID_LINE.search(line)
    return match is not None and match.group(1) == subset


def read_curve(path: str, subset: str = "valid"):
    """``[(update, seconds, {measure: value})]`` for each held-out validation in a fairseq-train log."""
    rows, start = [], None
    with open(path, encoding="utf-8", errors="replace") as log:
        for line in log:
            if start is None and TRAINING_STARTS.search(line):
                start = stamp(line)
            if not is_validation(line, subset):
                continue
            when = stamp(line)
            seconds = (when - start).total_seconds() if when and start else None
            update = field(line, "num_updates")
            rows.append(
                (int(update) if update is not None else None, seconds, {m: field(line, m) for m in MEASURES})
            )
    return rows


def start_row(path: str, subset: str = "valid"):
    """The measures of a fairseq-validate log (its last validation line), as the update-0 row."""
    with open(path, encoding="utf-8", errors="replace") as log:
        lines = [line for line in log if is_validation(line, subset)]
    if not lines:
        raise ValueError(f"{path}: no validation line of the {subset!r} subset")
    return (0, 0.0, {m: field(lines[-1], m) for m in MEASURES})


def write_tsv(curves, out):
    out.write("\t".join(("run", "update", "seconds") + MEASURES) + "\n")
    for name, rows in curves.items():
        for update, seconds, values in rows:
            cells = [name, "" if update is None else str(update), "" if seconds is None else f"{seconds:.0f}"]
            cells += ["" if values[m] is None else f"{values[m]:g}" for m in MEASURES]
            out.write("\t".join(cells) + "\n")


def plot(curves, path: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    figure, (losses, accuracy) = plt.subplots(1, 2, figsize=(10, 4))
    for name, rows in curves.items():
        for measure, axis, style in (
            ("ae_loss", losses, "-"),
            ("par_loss", losses, "--"),
            ("ae_acc", accuracy, "-"),
            ("par_acc", accuracy, "--"),
        ):
            points = [(u, v[measure]) for u, _, v in rows if u is not None and v[measure] is not None]
            if points:
                axis.plot(*zip(*points), style, marker="o", markersize=3, label=f"{name}: {measure}")
    losses.set(xlabel="updates", ylabel="held-out loss (bits per predicted token)")
    accuracy.set(xlabel="updates", ylabel="held-out masked-token top-1 accuracy (%)")
    for axis in (losses, accuracy):
        axis.grid(alpha=0.3)
        axis.legend(fontsize=8)
    figure.tight_layout()
    figure.savefig(path, dpi=110)
    logger.info("wrote %s", path)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--log", nargs="+", required=True, metavar="NAME=PATH", help="fairseq-train logs")
    parser.add_argument("--start", metavar="PATH", help="fairseq-validate log of the starting checkpoint")
    parser.add_argument("--tsv", metavar="PATH", help="write the table here (default: standard output)")
    parser.add_argument("--plot", metavar="PATH", help="also draw the curves into this image (matplotlib)")
    parser.add_argument("--subset", default="valid", help="the validation subset to read (default: valid)")
    args = parser.parse_args(argv)
    logging.basicConfig(format="%(levelname)s | %(name)s | %(message)s", level=logging.INFO)
    curves = {}
    try:
        first = [start_row(args.start, args.subset)] if args.start else []
        for spec in args.log:
            name, sep, path = spec.partition("=")
            if not sep or not name or not path:
                raise ValueError(f"--log {spec!r}: expected NAME=PATH")
            rows = read_curve(path, args.subset)
            if not rows:
                raise ValueError(f"{path}: no validation line (was it trained with validation on?)")
            curves[name] = first + rows
    except (OSError, ValueError) as error:
        logger.error("%s", error)
        return 1
    if args.tsv:
        with open(args.tsv, "w", encoding="utf-8") as out:
            write_tsv(curves, out)
    else:
        write_tsv(curves, sys.stdout)
    if args.plot:
        plot(curves, args.plot)
    return 0


if __name__ == "__main__":
    sys.exit(main())
