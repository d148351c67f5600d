#!/usr/bin/env python
"""Does pre-training matter? Pseudo-masked s2s-ft from the converted MiniLM against random initialisation.

Runs ``examples/s2s_ft/minilm_austen.sh`` twice on the same demo pairs, with the same architecture,
flags, seed and number of updates: once initialised from the converted pre-trained MiniLM
(``INIT=pretrained``) and once from random weights (``INIT=random``). Prints the validation loss (base 2,
label-smoothed, and its NLL part) at every validation, and the test ROUGE of each run. This is a
measurement on CPU, not a test: it takes minutes per run.

Usage::

    python benchmarks/compare_init.py --updates 60 --valid-every 20 --docs 20 --work work/compare-init
"""

import argparse
import os
import re
import subprocess
import sys

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
RECIPE = os.path.join(REPO, "examples", "s2s_ft", "minilm_austen.sh")
VALID = re.compile(r"valid on 'valid' subset \| loss ([\d.]+) \| nll_loss ([\d.]+).*num_updates (\d+)")
ROUGE = re.compile(r"ROUGE-1 = ([\d.]+), ROUGE-2 = ([\d.]+), ROUGE-L = ([\d.]+)")
INITS = ("pretrained", "random")


def run(init: str, args) -> dict:
    env = dict(os.environ, INIT=init, S2S_UPDATES=str(args.updates), VALID_EVERY=str(args.valid_every),
               DOCS=str(args.docs))  # fmt: skip
    proc = subprocess.run(["bash", RECIPE, args.work], env=env, cwd=REPO, capture_output=True, text=True)
    if proc.returncode:
        sys.exit(f"{init}: the recipe exited {proc.returncode}\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}")
    with open(os.path.join(args.work, f"train-{init}.log"), encoding="utf-8") as f:
        valid = {int(m.group(3)): (float(m.group(1)), float(m.group(2))) for m in VALID.finditer(f.read())}
    with open(os.path.join(args.work, f"generate-{init}.out"), encoding="utf-8") as f:
        rouge = ROUGE.search(f.read())
    return {"valid": valid, "rouge": tuple(float(x) for x in rouge.groups()) if rouge else None}


def main():
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--updates", type=int, default=60, help="fine-tuning updates per run")
    parser.add_argument("--valid-every", type=int, default=20, help="validate every N updates")
    parser.add_argument("--docs", type=int, default=20, help="chapters of the embedded corpus to use")
    parser.add_argument("--work", default=os.path.join(REPO, "work", "compare-init"), help="output folder")
    args = parser.parse_args()
    results = {init: run(init, args) for init in INITS}
    print(f"pseudo-masked s2s-ft, MiniLM-L6 architecture, {args.updates} updates, first {args.docs} chapters")
    print(f"{'updates':>8}" + "".join(f"{init + ' loss/nll':>24}" for init in INITS))
    for step in sorted(set().union(*(r["valid"] for r in results.values()))):
        cells = [results[i]["valid"].get(step) for i in INITS]
        print(f"{step:>8}" + "".join(f"{f'{c[0]:.3f} / {c[1]:.3f}' if c else '-':>24}" for c in cells))
    for init in INITS:
        rouge = results[init]["rouge"]
        print(f"test ROUGE-1/2/L, {init}: " + ("/".join(f"{x:.2f}" for x in rouge) if rouge else "n/a"))


if __name__ == "__main__":
    main()
