#!/usr/bin/env python
"""Answer the questions of a SQuAD JSON file with a checkpoint trained by ``--task squad_qa``.

Writes ``--output`` (``{question id: answer text}``, the official predictions format) and, when the file
has gold answers, prints the official exact match and F1 (with HasAns/NoAns for v2.0) as JSON.

    python scripts/predict_squad.py --checkpoint ckpt/checkpoint_best.pt --input dev-v1.1.json \\
        --output predictions.json
    python scripts/predict_squad.py ... --version-2-with-negative --null-score-diff-threshold 0.0

For v2.0, a checkpoint trained with ``--answerability-head`` answers "" when its answerability classifier
(UniLMv2 §4.2) gives a probability of no answer above ``--answerability-threshold``; other checkpoints use
the null-span rule (``--no-answer-rule`` picks one explicitly).
"""

import argparse
import json
import logging
import sys

import torch
from fairseq import checkpoint_utils

from unilm_fairseq.qa.squad_inference import decode_answers, window_scores
from unilm_fairseq.scoring.squad import evaluate, squad_gold

logger = logging.getLogger("predict_squad")

NO_ANSWER_RULES = ("auto", "classifier", "null-span")


def parse_args(argv=None):
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--checkpoint", required=True, help="checkpoint of fairseq-train --task squad_qa")
    parser.add_argument("--input", required=True, help="SQuAD v1.1/v2.0 JSON file to answer")
    parser.add_argument("--output", required=True, help="predictions JSON {question id: answer}")
    parser.add_argument("--data", help="directory with the dict.txt (default: the training data directory)")
    parser.add_argument("--n-best-size", type=int, default=20, help="spans kept per question (and window)")
    parser.add_argument("--max-answer-length", type=int, default=30, help="longest answer, in tokens")
    parser.add_argument(
        "--version-2-with-negative", action="store_true", help="SQuAD v2.0: answer '' when [SOS] wins"
    )
    parser.add_argument(
        "--null-score-diff-threshold",
        type=float,
        default=0.0,
        help="v2.0: answer '' when the null score exceeds the best span's score by more than this",
    )
    parser.add_argument(
        "--no-answer-rule",
        choices=NO_ANSWER_RULES,
        default="auto",
        help="v2.0: how '' is chosen. classifier: the answerability classifier (needs a checkpoint trained "
        "with --answerability-head); null-span: the null score against the best span; auto: the classifier "
        "when the checkpoint has one, else null-span",
    )
    parser.add_argument(
        "--answerability-threshold",
        type=float,
        default=0.5,
        help="v2.0 with the classifier: answer '' when its probability of no answer exceeds this",
    )
    parser.add_argument(
        "--no-answer-prob-output", help="also write each question's classifier probability of no answer here"
    )
    parser.add_argument("--batch-size", type=int, default=32, help="windows per forward pass")
    parser.add_argument("--cpu", action="store_true", help="run on CPU even when CUDA is available")
    parser.add_argument("--nbest-output", help="also write the n-best spans per question here")
    parser.add_argument("--null-odds-output", help="also write each question's null-score difference here")
    parser.add_argument("--metrics-output", help="also write the EM/F1 scores here")
    return parser.parse_args(argv)


def main(argv=None):
    logging.basicConfig(format="%(asctime)s | %(levelname)s | %(name)s | %(message)s", level=logging.INFO)
    args = parse_args(argv)
    overrides = {"data": args.data} if args.data else {}
    models, cfg, task = checkpoint_utils.load_model_ensemble_and_task(
        [args.checkpoint], arg_overrides=overrides
    )
    model = models[0]
    if torch.cuda.is_available() and not args.cpu:
        model.cuda()
    classifier = answerability_head(model, task, args.no_answer_rule)
    if args.no_answer_prob_output and not classifier:
        raise SystemExit("--no-answer-prob-output needs the answerability classifier (see --no-answer-rule)")
    if args.version_2_with_negative:
        logger.info(
            "no answer when %s",
            f"the answerability classifier's probability exceeds {args.answerability_threshold}"
            if classifier
            else f"the null score beats the best span by more than {args.null_score_diff_threshold}",
        )
    dataset = task.load_squad(args.input, training=False)
    scores, no_answer_probs = window_scores(
        model, dataset, task.cfg.span_head_name, args.batch_size, answerability_head_name=classifier
    )
    answers = decode_answers(
        dataset,
        scores,
        args.n_best_size,
        args.max_answer_length,
        args.version_2_with_negative,
        args.null_score_diff_threshold,
        no_answer_probs=no_answer_probs,
        answerability_threshold=args.answerability_threshold,
    )
    _write_json(args.output, answers.text)
    if args.nbest_output:
        _write_json(args.nbest_output, answers.nbest)
    if args.null_odds_output:
        _write_json(args.null_odds_output, answers.null_score_diff)
    if args.no_answer_prob_output:
        _write_json(args.no_answer_prob_output, answers.no_answer_prob)
    logger.info("wrote %d answers to %s", len(answers.text), args.output)
    with open(args.input, encoding="utf-8") as f:
        golds = squad_gold(json.load(f)["data"])
    if any(golds.values()):
        metrics = evaluate(golds, answers.text)
        print(json.dumps(metrics, indent=2))
        if args.metrics_output:
            _write_json(args.metrics_output, metrics)


def answerability_head(model, task, rule: str):
    """The classification head that decides "no answer", or None for the null-span rule."""
    name = getattr(task.cfg, "answerability_head_name", None)
    present = name is not None and name in model.classification_heads
    if rule == "classifier" and not present:
        raise SystemExit(
            "--no-answer-rule classifier: the checkpoint has no answerability classifier (train it with "
            "--answerability-head)"
        )
    return name if present and rule != "null-span" else None


def _write_json(path, value):
    with open(path, "w", encoding="utf-8") as f:
        json.dump(value, f, indent=2, ensure_ascii=False)


if __name__ == "__main__":
    sys.exit(main())
