#!/usr/bin/env python
"""Collect the rows of ``examples/aclsum/run_all.sh`` into one markdown table (printed).

    python examples/aclsum/results_table.py work/aclsum-results

Each row folder holds ``scores.json`` (from ``scripts/rouge_table.py``; the PMLM row's is in ``run/``),
``seconds.txt`` (wall clock of the whole row) and ``log.txt`` (the last validation NLL is read from it).
The baselines come from the rows' own tables (they are scored on the same references).
"""

import json
import os
import re
import sys

VALID = re.compile(r"valid on 'valid' subset \| loss ([\d.]+) \| nll_loss ([\d.]+) \|.*num_updates (\d+)")
HELD_OUT = re.compile(r"ae_loss ([\d.]+) \| par_loss ([\d.]+)")
ORDER = ["pseudo_masked-pretrained", "masked-pretrained", "causal-pretrained", "pseudo_masked-random",
         "masked-random", "causal-random", "pmlm", "pseudo_masked-pretrained-u100",
         "pseudo_masked-pretrained-u400", "pseudo_masked-pretrained-u1200"]  # fmt: skip
BASELINES = ("lead", "positional", "oracle")


def read(path):
    with open(path, encoding="utf-8") as f:
        return f.read()


def row_files(work, row):
    base = os.path.join(work, row)
    scores = os.path.join(base, "run" if row == "pmlm" else "", "scores.json")
    return base, scores


def describe(row):
    if row == "pmlm":
        return "pseudo_masked", "MiniLM + PMLM on ACLSum papers"
    budget = ""
    if re.search(r"-u\d+$", row):
        row, updates = row.rsplit("-u", 1)
        budget = f" ({updates} updates)"
    method, init = row.rsplit("-", 1)
    return method + budget, "MiniLM" if init == "pretrained" else "random"


def main(argv=None) -> int:
    work = (argv or sys.argv[1:])[0]
    rows, baselines = [], {}
    names = [r for r in ORDER if os.path.isdir(os.path.join(work, r))]
    for row in names:
        base, scores_path = row_files(work, row)
        if not os.path.isfile(scores_path):
            continue
        scores = json.loads(read(scores_path))["scores"]
        for name in BASELINES:
            if name in scores:
                baselines[name] = scores[name]
        model = next(v for k, v in scores.items() if k.startswith("s2s-ft"))
        log = read(os.path.join(base, "log.txt")) if os.path.isfile(os.path.join(base, "log.txt")) else ""
        valid = VALID.findall(log)
        seconds = read(os.path.join(base, "seconds.txt")).strip() if os.path.isfile(
            os.path.join(base, "seconds.txt")) else ""  # fmt: skip
        method, init = describe(row)
        extra = ""
        if row == "pmlm":
            held = [
                HELD_OUT.search(read(os.path.join(base, "pmlm", f"valid-{w}.txt")))
                for w in ("before", "after")
            ]
            if all(held):
                before, after = (f"{m.group(1)}/{m.group(2)}" for m in held)
                extra = f"held-out AE/PAR bits {before} -> {after}"
        # the decoded checkpoint is the best one by validation loss (finetune.sh's CKPT=best)
        best = min(valid, key=lambda v: float(v[0])) if valid else None
        if best:
            extra = "; ".join(x for x in (extra, f"best at update {best[2]}") if x)
        rows.append((method, init, model, best[1] if best else "", seconds, extra))
    print("| init | method | ROUGE-1 | ROUGE-2 | ROUGE-L | valid NLL (bits) | minutes | notes |")
    print("|---|---|---:|---:|---:|---:|---:|---|")
    for name in BASELINES:
        if name in baselines:
            s = baselines[name]
            print(
                f"| {name} (baseline) | - | {s['rouge1']:.2f} | {s['rouge2']:.2f} | {s['rougeL']:.2f} | | | |"
            )
    for method, init, s, nll, seconds, extra in rows:
        minutes = f"{int(seconds) / 60:.1f}" if seconds else ""
        print(
            f"| {init} | {method} | {s['rouge1']:.2f} | {s['rouge2']:.2f} | {s['rougeL']:.2f} | {nll} | "
            f"{minutes} | {extra} |"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
