#!/usr/bin/env python
"""Choose a model folder's decoding settings on the validation split: decode its sources with every
combination of the values given, score each run against the references with ROUGE (rouge-score F1, Porter
stemming, as scripts/rouge_table.py scores the test set), print one table, and with ``--write`` keep the best
in the folder's ``generation.json``, which ``scripts/generate_text.py``, ``UniLMModel.from_pretrained`` and
the model's export then decode with.

    python scripts/tune_decoding.py run/checkpoints --source data/valid.src --reference data/valid.tgt \\
        --lenpen 0.6,0.9,1.3 --min-len 10,20 --write

Each option takes a comma-separated list, and the folder's own value is tried too; an option not given
keeps the folder's value. The default grid is the length penalties of the papers' decoding tables (0.6, 0.9
and 1.3: s2s-ft Table 8, UniLMv2 Table 10) and the folder's own, with the folder's other settings. s2s-ft
picks its hyperparameters by grid search on the development sets (s2s-ft Appendix A, after Table 7), and
UniLM v1 tunes the maximum summary length on them (§3.1); which settings to search, and ranking by ROUGE-L
F1, are this project's choices. Each option's values are tried smallest first; on a tie the folder's own
setting stays, then the earlier one. Sources and references are raw text, one per line, as ``finetune.sh``
reads its ``valid.src`` and ``valid.tgt``. ``--write`` also records the whole search in
``decoding_search.json`` beside it. Settings that differ only in their length penalty share one search: the
penalty only ranks the hypotheses beam search finished, so all ``beam`` of them are kept and ranked by each.

A validation set of a few hundred pairs is a sample, so the table's ``p`` column says, for each setting, in
what share of ``--bootstrap`` resamples of the pairs its lead over the folder's own setting does not keep
its sign (the paired bootstrap of ``scripts/rouge_table.py``). The best is the highest score, as the
papers' grid searches pick; ``--max-p P`` keeps the folder's setting unless the best's p, multiplied by the
number of settings tried beside the folder's (Bonferroni's correction, since the best of many is picked),
is at most P, so a gain that resampling does not bear out changes nothing.
"""

import argparse
import itertools
import json
import logging
import os
import sys
import time
from typing import Dict, List, Optional, Sequence

from unilm_fairseq.encoders.text_lines import missing_output_folder, read_lines
from unilm_fairseq.hub import load_model_folder, log_for_decoding_scripts
from unilm_fairseq.hub.base import GENERATION_FILE, read_generation_defaults
from unilm_fairseq.modules.length_penalty import gnmt_length_penalty
from unilm_fairseq.scoring.bootstrap import paired_comparison, resample_indices

logger = logging.getLogger("tune_decoding")

# the settings a search may vary, fairseq-generate's names, with the value the folder falls back to
GRID_OPTIONS = {
    "beam": (int, 5),
    "lenpen": (float, 1.0),
    "min_len": (int, 1),
    "max_len_b": (int, None),  # None: the model's target positions
    "no_repeat_ngram_size": (int, 0),
}
DEFAULT_LENPENS = "0.6,0.9,1.3"  # the papers' decoding tables (s2s-ft Table 8, UniLMv2 Table 10)
METRICS = {"rougeL": "ROUGE-L", "rouge1": "ROUGE-1", "rouge2": "ROUGE-2", "mean": "mean of the three"}
SEARCH_FILE = "decoding_search.json"


def value_list(kind):
    def parse(text: str):
        try:
            values = [kind(item) for item in text.split(",") if item.strip()]
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} is not a comma-separated list of {kind.__name__}s")
        if not values:
            raise argparse.ArgumentTypeError("an empty list")
        return values  # grid() drops repeats

    return parse


def parse_args(argv=None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("model_dir", help="the model folder (finetune.sh's WORK_DIR/checkpoints)")
    parser.add_argument("--source", required=True, help="validation sources, raw text, one per line")
    parser.add_argument("--reference", required=True, help="their references, one per line")
    for name, (kind, _) in GRID_OPTIONS.items():
        default = DEFAULT_LENPENS if name == "lenpen" else None
        parser.add_argument(
            "--" + name.replace("_", "-"),
            type=value_list(kind),
            default=value_list(kind)(default) if default else None,
            help=f"values to try, comma-separated, beside the folder's [{default or 'none'}]",
        )
    parser.add_argument(
        "--metric", choices=sorted(METRICS), default="rougeL", help="what the best maximises [%(default)s]"
    )
    parser.add_argument(
        "--bootstrap",
        type=int,
        default=1000,
        metavar="N",
        help="resamples of the pairs for each setting's p against the folder's [%(default)s; 0: no p]",
    )
    parser.add_argument(
        "--max-p",
        type=float,
        default=1.0,
        help="keep the folder's setting unless the best's p, x the settings tried, is at most this "
        "[%(default)s: the best always]",
    )
    parser.add_argument("--limit", type=int, help="tune on the first N pairs only [all]")
    parser.add_argument("--write", action="store_true", help=f"keep the best in {GENERATION_FILE}")
    parser.add_argument(
        "--shell-out", help="also write the best as NAME=value lines (BEAM=5 ...) to this file"
    )
    parser.add_argument(
        "--checkpoint-file",
        help="the checkpoint in the folder [generation.json's]; with --write, generation.json then names it",
    )
    parser.add_argument("--batch-size", type=int, default=32, help="sources per batch [%(default)s]")
    parser.add_argument("--cpu", action="store_true", help="decode on the CPU even if CUDA is available")
    args = parser.parse_args(argv)
    for name in ("limit", "batch_size"):
        value = getattr(args, name)
        if value is not None and value < 1:
            parser.error(f"--{name.replace('_', '-')} must be at least 1, not {value}")
    if args.bootstrap < 0:
        parser.error(f"--bootstrap {args.bootstrap}: must be 0 (no p) or more")
    if not 0.0 <= args.max_p <= 1.0:
        parser.error(f"--max-p {args.max_p}: must be between 0 and 1")
    if args.max_p < 1.0 and not args.bootstrap:
        parser.error("--max-p needs --bootstrap N (N > 0)")
    missing = missing_output_folder([("--shell-out", args.shell_out)])
    if missing:
        parser.error(missing)  # before the search, and before --write changes the folder
    for name in ("beam", "min_len", "max_len_b", "no_repeat_ngram_size"):
        low = 1 if name in ("beam", "max_len_b") else 0
        bad = [value for value in getattr(args, name) or [] if value < low]
        if bad:
            parser.error(f"--{name.replace('_', '-')}: {bad[0]} is below {low}")
    return args


def folder_settings(defaults: Dict) -> Dict:
    """The folder's value of every searchable setting (its generation.json, else the decoder's default)."""
    return {name: defaults.get(name, fallback) for name, (_, fallback) in GRID_OPTIONS.items()}


def ordered(values: List) -> List:
    """The distinct values, smallest first (None, the model's own limit, last)."""
    distinct = list(dict.fromkeys(values))
    return sorted(v for v in distinct if v is not None) + [v for v in distinct if v is None]


def grid(args, current: Dict) -> List[Dict]:
    """Every combination of the values given and the folder's own (so the search never ends below the
    folder's setting), but those whose fewest tokens exceed their most."""
    axes = {name: ordered([*(getattr(args, name) or []), current[name]]) for name in GRID_OPTIONS}
    settings = [dict(zip(axes, values)) for values in itertools.product(*axes.values())]
    possible = [s for s in settings if s["max_len_b"] is None or s["min_len"] <= s["max_len_b"]]
    if len(possible) < len(settings):
        logger.warning(
            "%d settings left out: their min_len is above their max_len_b", len(settings) - len(possible)
        )
    return possible


def score(hyps: Sequence[str], refs: Sequence[str]) -> Dict[str, List[float]]:
    """Each metric of :data:`METRICS` per pair, x100 (``mean``: of ROUGE-1, 2 and L)."""
    from unilm_fairseq.scoring.metrics import rouge_pair_scores

    found = {key: [100 * v for v in values] for key, values in rouge_pair_scores(hyps, refs).items()}
    found["mean"] = [sum(three) / 3 for three in zip(found["rouge1"], found["rouge2"], found["rougeL"])]
    return {key: found[key] for key in METRICS}


def length_divisor(length: int, lenpen: float, style: str) -> float:
    """What a finished hypothesis of ``length`` tokens (``</s>`` included) has its summed log-probability
    divided by: fairseq's ``length ** lenpen``, or GNMT's ``((5 + length) / 6) ** lenpen``."""
    return gnmt_length_penalty(length, lenpen) if style == "gnmt" else float(length) ** lenpen


def lenpen_style(hub) -> str:
    """The length penalty's form the folder decodes with (its generation.json, else the task's option)."""
    return str(
        hub.generation_defaults.get("lenpen_style") or getattr(hub.task.cfg, "lenpen_style", "fairseq")
    )


def best_by_lenpen(hypotheses: List[List[Dict]], lenpen: float, style: str) -> List[Dict]:
    """Each input's best hypothesis under ``lenpen``, among all ``beam`` that the search finished.

    Beam search expands and finishes hypotheses by their summed log-probabilities; the length penalty only
    ranks the finished ones (fairseq's ``finalize_hypos``), so one search serves every length penalty.
    """
    chosen = []
    for hypos in hypotheses:
        raw = [float(h["positional_scores"].double().sum()) for h in hypos]
        ranked = [r / length_divisor(len(h["tokens"]), lenpen, style) for r, h in zip(raw, hypos)]
        chosen.append(hypos[max(range(len(hypos)), key=ranked.__getitem__)])
    return chosen


def search(hub, sources, refs, settings: List[Dict], batch_size: int) -> List[Dict]:
    """Decode and score each setting: one row per setting, its scores, mean output words and seconds.

    The settings that differ only in their length penalty share one search (all ``beam`` finished
    hypotheses kept); each penalty then picks its best of them, as a search with it would have (up to
    rounding: the scores are summed again in double precision). ``seconds`` is the search's time on the
    first setting of a group and the ranking's on the others."""
    ids = [hub.encode(source) for source in sources]
    style = lenpen_style(hub)
    groups: Dict[str, List[Dict]] = {}
    for setting in settings:
        groups.setdefault(describe({k: v for k, v in setting.items() if k != "lenpen"}), []).append(setting)
    rows = []
    for group in groups.values():
        start = time.monotonic()
        shared = {k: v for k, v in group[0].items() if v is not None}
        hypotheses = hub.generate(ids, batch_size=batch_size, nbest=shared["beam"], **shared)
        for setting in group:
            hyps = [hub.decode(h["tokens"]) for h in best_by_lenpen(hypotheses, setting["lenpen"], style)]
            seconds = time.monotonic() - start
            per_pair = score(hyps, refs)
            row = {"setting": setting, **{key: sum(v) / len(v) for key, v in per_pair.items()}}
            row["pairs"] = per_pair  # for the bootstrap; not recorded
            row["words"] = sum(len(hyp.split()) for hyp in hyps) / len(hyps)
            row["seconds"] = round(seconds, 1)
            rows.append(row)
            logger.info(
                "%d/%d %s: ROUGE-1/2/L %.2f / %.2f / %.2f, %.1f words (%.0f s)",
                len(rows), len(settings), describe(setting), row["rouge1"], row["rouge2"], row["rougeL"],
                row["words"], seconds,
            )  # fmt: skip
            start = time.monotonic()
    order = {id(setting): n for n, setting in enumerate(settings)}
    return sorted(rows, key=lambda row: order[id(row["setting"])])


def describe(setting: Dict) -> str:
    return ", ".join(f"{name} {value}" for name, value in setting.items() if value is not None)


def best_row(rows: List[Dict], metric: str, current: Dict) -> Dict:
    """The row with the highest ``metric``; on a tie the folder's own setting, then the earliest."""
    top = max(row[metric] for row in rows)
    tied = [row for row in rows if row[metric] == top]
    return next((row for row in tied if row["setting"] == current), tied[0])


def add_p(rows: List[Dict], mine: Dict, metric: str, resamples: int) -> None:
    """Each row's ``p``: the share of paired resamples of the pairs in which its lead over the folder's
    row on ``metric`` does not keep its sign (1.0 for the folder's own row and for equal scores)."""
    indices = resample_indices(len(mine["pairs"][metric]), resamples, seed=1)
    for row in rows:
        row["p"] = paired_comparison(row["pairs"][metric], mine["pairs"][metric], indices).not_ahead


def adjusted_p(row: Dict, rows: List[Dict]) -> float:
    """The row's p times the number of settings tried beside the folder's, at most 1 (Bonferroni's
    correction): the best of many settings is ahead by chance more often than any one of them."""
    return min(1.0, row["p"] * max(len(rows) - 1, 1))


def guarded_best(best: Dict, mine: Optional[Dict], rows: List[Dict], max_p: float) -> Dict:
    """The best row, or the folder's own (``mine``) when the best's adjusted p against it is above
    ``max_p``."""
    if mine is not None and best is not mine and "p" in best and adjusted_p(best, rows) > max_p:
        return mine
    return best


def table(rows: List[Dict], varied: List[str], best: Dict, current: Dict) -> str:
    names = varied or ["lenpen"]
    width = max(10, *(len(name) + 2 for name in names))
    with_p = all("p" in row for row in rows)
    head = "".join(f"{name:<{width}}" for name in names) + "ROUGE-1  ROUGE-2  ROUGE-L   words      s"
    lines = [head + ("      p" if with_p else "")]
    for row in rows:
        mark = " <- best" if row is best else ""
        if row["setting"] == current:
            mark += " (the folder's)"
        cells = "".join(f"{str(row['setting'][name]):<{width}}" for name in names)
        scores = "".join(f"{row[key]:>7.2f}  " for key in ("rouge1", "rouge2", "rougeL"))
        p = f" {row['p']:>6.3f}" if with_p and row["setting"] != current else ("      -" if with_p else "")
        lines.append(f"{cells}{scores}{row['words']:>6.1f} {row['seconds']:>6.0f}{p}{mark}")
    return "\n".join(lines)


def write_choice(model_dir: str, best: Dict, record: Dict, checkpoint: Optional[str] = None) -> None:
    """Keep ``best``'s settings in the folder's generation.json, and the checkpoint they were chosen on
    when it is not the one generation.json names, so that the folder decodes that checkpoint with them."""
    path = os.path.join(model_dir, GENERATION_FILE)
    defaults = read_generation_defaults(model_dir)
    defaults.update({name: value for name, value in best["setting"].items() if value is not None})
    if checkpoint:
        defaults["checkpoint"] = checkpoint
    with open(path, "w", encoding="utf-8") as f:
        json.dump(defaults, f, indent=2)
        f.write("\n")
    with open(os.path.join(model_dir, SEARCH_FILE), "w", encoding="utf-8") as f:
        json.dump(record, f, indent=2)
        f.write("\n")


def main(argv=None) -> int:
    args = parse_args(argv)
    log_for_decoding_scripts(logger)
    try:
        sources, refs = read_lines(args.source), read_lines(args.reference)
        if len(sources) != len(refs):
            raise ValueError(f"{args.source} has {len(sources)} lines but {args.reference} has {len(refs)}")
        pairs = [(s, r) for s, r in zip(sources, refs) if s.strip() and r.strip()]
        if not pairs:
            raise ValueError(f"{args.source}: no pair with both a source and a reference")
        skipped, pairs = len(sources) - len(pairs), pairs[: args.limit]
        current = folder_settings(read_generation_defaults(args.model_dir))
        hub = load_model_folder(args.model_dir, args.checkpoint_file, args.cpu)
    except (OSError, ValueError) as error:  # a missing folder or file, a bad generation.json or input
        print(f"error: {error}", file=sys.stderr)
        return 1
    settings = grid(args, current)
    if not settings:
        print("error: every setting has its min_len above its max_len_b", file=sys.stderr)
        return 1
    varied = [name for name in GRID_OPTIONS if len({str(s[name]) for s in settings}) > 1]
    logger.info(
        "%d settings x %d validation pairs%s", len(settings), len(pairs),
        f" ({skipped} of the file's with an empty side left out)" if skipped else "",
    )  # fmt: skip
    sources, refs = [s for s, _ in pairs], [r for _, r in pairs]
    try:
        rows = search(hub, sources, refs, settings, args.batch_size)
    except ValueError as error:  # a setting the search cannot honour (e.g. --min-len beyond the positions)
        print(f"error: {error}", file=sys.stderr)
        return 1
    best = best_row(rows, args.metric, current)
    mine = next((row for row in rows if row["setting"] == current), None)  # None: its min_len > max_len
    if args.bootstrap and mine is not None:
        add_p(rows, mine, args.metric, args.bootstrap)
    tested = ""
    if "p" in best:
        tested = f"; p: its lead over the folder's in {args.bootstrap} resamples of the pairs"
    print(f"{len(pairs)} validation pairs, rouge-score F1 x100, the best by {METRICS[args.metric]}{tested}:")
    print(table(rows, varied, best, current))
    gain = f" ({args.metric} {mine[args.metric]:.2f} -> {best[args.metric]:.2f})" if mine else ""
    print(f"best: {describe(best['setting'])}{gain}")
    if guarded_best(best, mine, rows, args.max_p) is not best:
        print(
            f"its p {best['p']:.3f} x {len(rows) - 1} settings tried beside the folder's = "
            f"{adjusted_p(best, rows):.3f} is above --max-p {args.max_p:g}: the folder's setting stays"
        )
        best = mine
    record = {
        "checkpoint": args.checkpoint_file or read_generation_defaults(args.model_dir).get("checkpoint"),
        "source": args.source,
        "reference": args.reference,
        "pairs": len(pairs),
        "metric": args.metric,
        "before": current,
        "chosen": best["setting"],
        "bootstrap": args.bootstrap,
        "max_p": args.max_p,
        "rows": [{k: v for k, v in row.items() if k != "pairs"} for row in rows],
    }
    if args.write:
        write_choice(args.model_dir, best, record, args.checkpoint_file)
        print(
            f"kept in {os.path.join(args.model_dir, GENERATION_FILE)}; the search in {SEARCH_FILE} beside it"
        )
    if args.shell_out:
        with open(args.shell_out, "w", encoding="utf-8") as f:
            for name, value in best["setting"].items():
                if value is not None:
                    f.write(f"{name.upper()}={value}\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
