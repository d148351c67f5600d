#!/usr/bin/env python
"""Official-rule SQuAD exact match and F1 of a predictions file: ``evaluate_squad.py DATA.json PREDS.json``.

Works for v1.1 and v2.0 (unanswerable questions match only the empty answer; HasAns/NoAns reported).
"""

import argparse
import json
import logging
import sys

from unilm_fairseq.scoring.squad import evaluate, squad_gold


def main(argv=None):
    logging.basicConfig(format="%(levelname)s | %(message)s", level=logging.INFO)
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("data_file", help="SQuAD JSON with the gold answers")
    parser.add_argument("prediction_file", help="JSON {question id: answer text}")
    args = parser.parse_args(argv)
    with open(args.data_file, encoding="utf-8") as f:
        golds = squad_gold(json.load(f)["data"])
    with open(args.prediction_file, encoding="utf-8") as f:
        predictions = json.load(f)
    print(json.dumps(evaluate(golds, predictions), indent=2))


if __name__ == "__main__":
    sys.exit(main())
