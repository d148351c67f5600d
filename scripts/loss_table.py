#!/usr/bin/env python
"""Print the pre-training losses from a ``fairseq-train`` log (``--log-format simple``).

    python scripts/loss_table.py train.log [--require-falling]

Columns: whichever the log has of UniLMv2's AE and PAR losses (``--criterion ae_par``), UniLM v1's
four cloze losses and NSP (``--criterion unilm``), PALM's ``mlm_loss`` and (stage 2) ``lm_loss``
(``--criterion palm``). With ``--require-falling`` the exit status is 1 unless every LM objective's
loss (NSP aside) ends lower than it started, so a recipe fails loudly when training does not learn.
"""

import argparse
import re
import sys

FIELD = re.compile(r"(\w+)=([-\d.e]+)")
OBJECTIVE_LOSSES = (
    "ae_loss",
    "par_loss",
    "bidir_loss",
    "s2s_loss",
    "l2r_loss",
    "r2l_loss",
    "mlm_loss",
    "lm_loss",
)
COLUMNS = ("num_updates", "loss", *OBJECTIVE_LOSSES, "nsp_loss", "nsp_acc", "nll_loss", "ppl")


def read_train_records(path):
    records = []
    with open(path, encoding="utf-8") as f:
        for line in f:
            if "| train_inner |" in line:
                records.append({k: float(v) for k, v in FIELD.findall(line)})
    return records


def main():
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("log")
    parser.add_argument("--require-falling", action="store_true")
    args = parser.parse_args()
    records = read_train_records(args.log)
    if not records:
        sys.exit(f"{args.log}: no train_inner lines (was --log-format simple used?)")
    columns = [c for c in COLUMNS if c in records[0]]
    print(" ".join(f"{c:>12}" for c in columns))
    for record in records:
        print(" ".join(f"{record.get(c, float('nan')):>12.3f}" for c in columns))
    verdicts, falling = [], True
    for name in OBJECTIVE_LOSSES:
        if name in records[0]:
            first, last = records[0][name], records[-1][name]
            falling &= last < first
            verdicts.append(f"{name} {first:.3f} -> {last:.3f}")
    print(("falling: " if falling else "NOT falling: ") + ", ".join(verdicts))
    if args.require_falling and not falling:
        sys.exit(1)


if __name__ == "__main__":
    main()
