#!/usr/bin/env python
"""Print the pre-training losses from a ``fairseq-train`` log (``--log-format simple`` or ``json``).

    python scripts/loss_table.py train.log [--require-falling]

Columns: whichever the log has of UniLMv2's AE and PAR losses (``--criterion ae_par``), UniLM v1's
four cloze losses and NSP (``--criterion unilm``), PALM's ``mlm_loss`` and (stage 2) ``lm_loss``
(``--criterion palm``). With ``--require-falling`` the exit status is 1 unless every LM objective's
loss (NSP aside) ends lower than it started, so a recipe fails loudly when training does not learn; a
log with none of those losses, or one that ends in ``nan``, is not falling.
"""

import argparse
import json
import math
import re
import sys

# fairseq writes its numbers with "{:g}" (1e+06 from a million on) and a diverged loss as nan or inf
NUMBER = r"[-+]?(?:nan|inf|(?:\d+\.?\d*|\.\d+)(?:e[-+]?\d+)?)"
FIELD = re.compile(rf"(\w+)=({NUMBER})(?=,|\s|$)")
TRAIN_INNER = "| train_inner |"
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


def parse_record(text: str) -> dict:
    """The numbers of one ``train_inner`` record: ``key=value, ...`` (simple) or a JSON object (json)."""
    text = text.strip()
    if not text.startswith("{"):
        return {key: float(value) for key, value in FIELD.findall(text)}
    record = {}
    for key, value in json.loads(text).items():
        try:
            record[key] = float(value)
        except (TypeError, ValueError):  # a string that is not a number
            continue
    return record


def read_train_records(path):
    records = []
    with open(path, encoding="utf-8") as f:
        for line in f:
            if TRAIN_INNER in line:
                records.append(parse_record(line.split(TRAIN_INNER, 1)[1]))
    return [record for record in records if record]


def main():
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("log")
    parser.add_argument("--require-falling", action="store_true")
    args = parser.parse_args()
    records = read_train_records(args.log)
    if not records:
        sys.exit(f"{args.log}: no train_inner lines with numbers (--log-format simple or json)")
    columns = [c for c in COLUMNS if c in records[0]]
    print(" ".join(f"{c:>12}" for c in columns))
    for record in records:
        print(" ".join(f"{record.get(c, float('nan')):>12.3f}" for c in columns))
    verdicts, falling = [], True
    for name in OBJECTIVE_LOSSES:
        if name in records[0]:
            first, last = records[0][name], records[-1].get(name, math.nan)
            falling &= last < first  # nan is never lower
            verdicts.append(f"{name} {first:.3f} -> {last:.3f}")
    if not verdicts:
        falling = False
        verdicts.append(f"none of the losses {', '.join(OBJECTIVE_LOSSES)} in the log")
    print(("falling: " if falling else "NOT falling: ") + ", ".join(verdicts))
    if args.require_falling and not falling:
        sys.exit(1)


if __name__ == "__main__":
    main()
