#!/usr/bin/env python
"""The seeds of ``examples/aclsum/seeds.sh`` in one table (printed, markdown): each seed's test ROUGE and best
validation NLL, their mean, standard deviation and range, and, beside them, how much the test sample alone
moves a score (the bootstrap intervals of ``scripts/rouge_table.py --bootstrap``).

    python examples/aclsum/seeds_table.py work/aclsum-seeds [--resamples 1000] [--baseline NAME] [--json FILE]
    python examples/aclsum/seeds_table.py work/new-start-seeds --against work/aclsum-seeds

Each ``WORK/seedN`` holds the main job's folders: ``data/`` (the references and the baselines' outputs)
and ``run/`` (``test.hyp``, the outputs as scored, and ``logs/train.log``), as ``seeds.sh`` or ``SEED=N
finetune.sh WORK/seedN/data WORK/seedN/run`` leave them. The last rows compare with a baseline
(``data/test.NAME.hyp``, ``--baseline``; default positional) on the same pairs: per seed, the difference
and the paired bootstrap's p (the share of resamples where the difference does not keep its sign), and for
the seeds together, each pair's score averaged over the seeds against the baseline's.

``--against OTHER`` sets the seeds against those of another folder laid out the same way (another start,
recipe or setting, with the same test pairs and seed numbers): per seed that both have, the differences of
validation NLL and ROUGE, since one seed number gives both runs the same batch order; their mean and
standard deviation; and each pair's score averaged over the seeds of each, compared with the paired
bootstrap. That last row is the one that says whether a change is larger than what the seed and the test
sample move.
"""

import argparse
import json
import os
import re
import statistics
import sys

import numpy as np

from unilm_fairseq.encoders.text_lines import read_lines
from unilm_fairseq.scoring.bootstrap import mean_interval, paired_comparison, resample_indices
from unilm_fairseq.scoring.metrics import rouge_pair_scores

COLUMNS = (("rouge1", "ROUGE-1"), ("rouge2", "ROUGE-2"), ("rougeL", "ROUGE-L"))
VALID_NLL = re.compile(r"valid on 'valid' subset \| loss ([\d.]+) \| nll_loss ([\d.]+) \|.*num_updates (\d+)")
DEFAULT_BASELINE = "positional"


def seed_folders(work: str):
    """(seed, folder) of every finished seed in ``work``, by seed."""
    found = []
    for name in os.listdir(work):
        match = re.fullmatch(r"seed(\d+)", name)
        if match and os.path.isfile(os.path.join(work, name, "run", "test.hyp")):
            found.append((int(match.group(1)), os.path.join(work, name)))
    return sorted(found)


def best_valid_nll(log_path: str):
    """The validation NLL (bits) of the checkpoint ``CKPT=best`` decodes, and its update, or None: fairseq's
    checkpoint_best.pt has the lowest validation loss (label-smoothed, so not always the lowest NLL), the
    later of equal ones."""
    if not os.path.isfile(log_path):
        return None
    with open(log_path, encoding="utf-8") as f:
        found = VALID_NLL.findall(f.read())
    best = min(((float(loss), -int(update), float(nll)) for loss, nll, update in found), default=None)
    return None if best is None else (best[2], -best[1])


def spread(values):
    """mean, sample standard deviation, min, max"""
    return (
        statistics.mean(values),
        statistics.stdev(values) if len(values) > 1 else 0.0,
        min(values),
        max(values),
    )


def load_seeds(seeds, refs, what):
    """Per seed: (per-pair ROUGE of run/test.hyp, best validation NLL or None); None, with an error printed,
    when a seed's references are not ``refs``."""
    loaded = []
    for _, folder in seeds:
        if read_lines(os.path.join(folder, "data", "test.tgt")) != refs:
            print(f"error: {folder}/data/test.tgt differs from {what}", file=sys.stderr)
            return None
        per_pair = rouge_pair_scores(read_lines(os.path.join(folder, "run", "test.hyp")), refs)
        loaded.append((per_pair, best_valid_nll(os.path.join(folder, "run", "logs", "train.log"))))
    return loaded


def compare_folders(other_work, seeds, loaded, refs, indices):
    """These seeds against the same seed numbers of ``other_work``: per seed, the differences (this minus
    other) of best validation NLL and of ROUGE x100; the seeds' mean per pair of each, compared with the
    paired bootstrap. None, with an error printed, when no seed number is in both or the references differ."""
    others = dict(seed_folders(other_work)) if os.path.isdir(other_work) else {}
    common = [(i, seed) for i, (seed, _) in enumerate(seeds) if seed in others]
    if not common:
        print(
            f"error: {other_work} has none of the seeds {[seed for seed, _ in seeds]} finished",
            file=sys.stderr,
        )
        return None
    theirs = load_seeds([(seed, others[seed]) for _, seed in common], refs, "this folder's references")
    if theirs is None:
        return None
    per_seed = []
    for (i, seed), (their_pairs, their_nll) in zip(common, theirs):
        our_pairs, our_nll = loaded[i]
        differences = {
            key: 100 * float(np.mean(our_pairs[key]) - np.mean(their_pairs[key])) for key, _ in COLUMNS
        }
        nll = our_nll[0] - their_nll[0] if our_nll and their_nll else None
        per_seed.append({"seed": seed, "valid_nll": nll, "rouge": differences})
    ours = {key: np.mean([loaded[i][0][key] for i, _ in common], axis=0) for key, _ in COLUMNS}
    their_mean = {key: np.mean([pairs[key] for pairs, _ in theirs], axis=0) for key, _ in COLUMNS}
    together = {key: paired_comparison(ours[key], their_mean[key], indices) for key, _ in COLUMNS}
    return {
        "seeds": per_seed,
        "seeds_mean_per_pair": {
            key: [100 * c.difference, 100 * c.low, 100 * c.high, c.not_ahead] for key, c in together.items()
        },
    }


def print_comparison(other_work, other, resamples) -> None:
    """The --against table: per seed, this folder minus the other, then the mean, sd and paired bootstrap."""
    print(f"\nagainst {other_work} (this folder minus it; the same seed numbers and test pairs)\n")
    print("| seed | valid NLL (bits) | " + " | ".join(title for _, title in COLUMNS) + " |")
    print("|---:|---:|---:|---:|---:|")
    rows = other["seeds"]
    for row in rows:
        nll = f"{row['valid_nll']:+.3f}" if row["valid_nll"] is not None else ""
        print(
            f"| {row['seed']} | {nll} | "
            + " | ".join(f"{row['rouge'][key]:+.2f}" for key, _ in COLUMNS)
            + " |"
        )
    nlls = [row["valid_nll"] for row in rows if row["valid_nll"] is not None]
    nll_cell = "{:+.3f} ± {:.3f}".format(*spread(nlls)[:2]) if nlls else ""
    cells = (
        "{:+.2f} ± {:.2f}".format(*spread([row["rouge"][key] for row in rows])[:2]) for key, _ in COLUMNS
    )
    print(f"| mean ± sd over {len(rows)} seeds | {nll_cell} | " + " | ".join(cells) + " |")
    together = other["seeds_mean_per_pair"]
    cells = (
        f"{d:+.2f} ({low:+.2f}..{high:+.2f}) p {p:.3f}"
        for d, low, high, p in (together[k] for k, _ in COLUMNS)
    )
    print("| the seeds' mean per pair (95% interval) p | | " + " | ".join(cells) + " |")
    print(
        f"\np: the share of {resamples} paired bootstrap resamples of the test pairs in which the difference"
        " does not have the observed sign"
    )


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("work", help="the folder of examples/aclsum/seeds.sh (its seedN folders)")
    parser.add_argument("--resamples", type=int, default=1000, help="bootstrap resamples of the test pairs")
    parser.add_argument(
        "--baseline",
        default=DEFAULT_BASELINE,
        help="the baseline the seeds are compared with: data/test.NAME.hyp [%(default)s]",
    )
    parser.add_argument(
        "--against",
        metavar="OTHER",
        help="another seeds folder to set these seeds against, seed by seed and pair by pair",
    )
    parser.add_argument("--json", help="also write the table's numbers here")
    args = parser.parse_args(argv)
    seeds = seed_folders(args.work) if os.path.isdir(args.work) else []
    if not seeds:
        print(f"error: no finished seed in {args.work} (seedN/run/test.hyp)", file=sys.stderr)
        return 1
    name = args.baseline
    baseline_file = os.path.join(seeds[0][1], "data", f"test.{name}.hyp")
    if not os.path.isfile(baseline_file):
        print(f"error: {baseline_file}: no such baseline (--baseline)", file=sys.stderr)
        return 1
    refs = read_lines(os.path.join(seeds[0][1], "data", "test.tgt"))
    baseline = rouge_pair_scores(read_lines(baseline_file), refs)
    indices = resample_indices(len(refs), args.resamples, seed=1)
    loaded = load_seeds(seeds, refs, f"seed {seeds[0][0]}'s references")
    if loaded is None:
        return 1
    other = None
    if args.against:
        other = compare_folders(args.against, seeds, loaded, refs, indices)
        if other is None:
            return 1
    rows, pair_scores = [], []
    for (seed, _), (per_pair, nll) in zip(seeds, loaded):
        pair_scores.append(per_pair)
        scores = {key: 100 * float(np.mean(per_pair[key])) for key, _ in COLUMNS}
        intervals = {key: [100 * x for x in mean_interval(per_pair[key], indices)] for key, _ in COLUMNS}
        against = {key: paired_comparison(per_pair[key], baseline[key], indices) for key, _ in COLUMNS}
        rows.append(
            {
                "seed": seed,
                "scores": scores,
                "intervals": intervals,
                "valid_nll": nll,
                "against": {k: [100 * c.difference, c.not_ahead] for k, c in against.items()},
            }
        )

    def md_row(*cells):
        print("| " + " | ".join(cells) + " |")

    md_row("seed", "valid NLL (bits), best", *(title for _, title in COLUMNS),
           f"ROUGE-L - {name} (p)", f"ROUGE-2 - {name} (p)")  # fmt: skip
    print("|---:|---:|---:|---:|---:|---:|---:|")
    for row in rows:
        nll = f"{row['valid_nll'][0]:.2f} (update {row['valid_nll'][1]})" if row["valid_nll"] else ""
        diffs = (f"{row['against'][k][0]:+.2f} ({row['against'][k][1]:.3f})" for k in ("rougeL", "rouge2"))
        md_row(str(row["seed"]), nll, *(f"{row['scores'][key]:.2f}" for key, _ in COLUMNS), *diffs)
    summary = {key: spread([row["scores"][key] for row in rows]) for key, _ in COLUMNS}
    nlls = [row["valid_nll"][0] for row in rows if row["valid_nll"]]
    nll_cell = "{:.2f} ± {:.2f}".format(*spread(nlls)[:2]) if nlls else ""
    mean_sd = (f"{summary[key][0]:.2f} ± {summary[key][1]:.2f}" for key, _ in COLUMNS)
    md_row(f"mean ± sd over {len(rows)} seeds", nll_cell, *mean_sd, "", "")
    ranges = (f"{summary[key][2]:.2f}-{summary[key][3]:.2f}" for key, _ in COLUMNS)
    md_row("range over the seeds", "", *ranges, "", "")
    widths = {
        key: statistics.mean(row["intervals"][key][1] - row["intervals"][key][0] for row in rows)
        for key, _ in COLUMNS
    }
    md_row(f"95% bootstrap interval over the {len(refs)} test pairs, width (mean over the seeds)", "",
           *(f"{widths[key]:.2f}" for key, _ in COLUMNS), "", "")  # fmt: skip
    averaged = {key: np.mean([p[key] for p in pair_scores], axis=0).tolist() for key, _ in COLUMNS}
    together = {key: paired_comparison(averaged[key], baseline[key], indices) for key, _ in COLUMNS}
    md_row(f"the seeds' mean per pair - {name} (p)", "",
           *(f"{100 * together[key].difference:+.2f} ({together[key].not_ahead:.3f})" for key, _ in COLUMNS),
           "", "")  # fmt: skip
    base = {key: 100 * float(np.mean(baseline[key])) for key, _ in COLUMNS}
    print(
        f"\n{name} baseline: " + " / ".join(f"{base[key]:.2f}" for key, _ in COLUMNS)
        + f"; p: the share of {args.resamples} paired bootstrap resamples of the test pairs in which the "
        "difference from it does not keep its sign"
    )  # fmt: skip
    if other is not None:
        print_comparison(args.against, other, args.resamples)
    if args.json:
        record = {
            "seeds": rows,
            "baseline": {name: base},
            "resamples": args.resamples,
            "mean_sd_min_max": summary,
            "interval_width": widths,
            "seeds_mean_against_baseline": {
                k: [100 * c.difference, c.not_ahead] for k, c in together.items()
            },
        }
        if other is not None:
            record["against"] = {"folder": args.against, **other}
        with open(args.json, "w", encoding="utf-8") as f:
            json.dump(record, f, indent=2)
    return 0


if __name__ == "__main__":
    sys.exit(main())
