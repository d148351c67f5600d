#!/usr/bin/env python
"""How often a PMLM prediction can read an original token it should not, on real text.

UniLMv2 (§4.1) corrupts the masked inputs of the context 80% ``[M]`` / 10% random token / 10% unchanged,
and every ``[P]`` sees the whole context (Figure 5). A masked token left unchanged is therefore in plain
sight of every ``[P]``: of its own one (the PAR prediction of that very token, whose answer it is), and
of the ``[P]`` of every other factorization step. Eq. 5 conditions step ``i`` on the originals of the
steps before it only, so the token is a leak for the ``[P]`` of its own step and of earlier steps; for
later steps it is not: they see it anyway, appended as an original of an earlier step.

This script runs the repository's own pipeline on the embedded Austen corpus
(``scripts/prepare_corpus.py`` -> ``fairseq-preprocess --only-source`` -> the ``pmlm`` task with its
default settings: 512-token blocks, 15% blockwise masking, 80/10/10) and counts, over the masked
positions of the training split:

* what the context holds at a masked position: ``[M]``, a random token other than the original, or the
  original (the unchanged 10%, plus random draws that happen to give the original back);
* for each ``[P]`` (PAR prediction): whether it can read its own original in the context, the original
  of another token of its own step (a span sibling), or of a token of a later step;
* for each (``[P]``, shown original) pair: whether the ``[P]`` is of the same step, an earlier step
  (a leak) or a later step (visible anyway through the appended originals);

for blockwise factorization (the default) and one token per step (``--no-blockwise``), and checks that
``--par-skip-unchanged`` leaves out of PAR exactly the positions whose original is shown.

Usage::

    python benchmarks/pmlm_visible_originals.py                 # builds a corpus in a temp directory
    python benchmarks/pmlm_visible_originals.py --data data-bin --max-items 200
"""

import argparse
import logging
import os
import subprocess
import sys
import tempfile
from collections import Counter

import numpy as np

from unilm_fairseq.data.pretraining.pmlm_dataset import CONTEXT, PSEUDO
from unilm_fairseq.tasks.pmlm import PMLMConfig, PMLMTask

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
MODES = {"blockwise (default)": False, "--no-blockwise": True}


def parse_args():
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--data", help="a fairseq-preprocess --only-source directory (default: build one)")
    parser.add_argument("--max-docs", type=int, default=12, help="Austen documents to prepare")
    parser.add_argument("--vocab-size", type=int, default=8000, help="sentencepiece vocabulary")
    parser.add_argument("--max-items", type=int, default=0, help="measure only the first N blocks (0: all)")
    parser.add_argument("--seed", type=int, default=1, help="the task's seed (masks)")
    parser.add_argument("--epoch", type=int, default=1, help="the epoch whose masks are measured")
    return parser.parse_args()


def prepare(work: str, max_docs: int, vocab_size: int) -> str:
    """The repository's corpus preparation on the embedded corpus; returns the data-bin directory."""
    text, data_bin = os.path.join(work, "text"), os.path.join(work, "bin")
    run = dict(check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    subprocess.run([sys.executable, os.path.join(REPO, "scripts", "prepare_corpus.py"), "--out", text,
                    "--max-docs", str(max_docs), "--valid-docs", "1", "--vocab-size", str(vocab_size)],
                   **run)  # fmt: skip
    subprocess.run([sys.executable, "-m", "fairseq_cli.preprocess", "--only-source", "--trainpref",
                    os.path.join(text, "train.spm"), "--destdir", data_bin, "--workers", "1"],
                   **run)  # fmt: skip
    return data_bin


def load(data: str, seed: int, epoch: int, **options):
    task = PMLMTask.setup_task(PMLMConfig(data=data, seed=seed, **options))
    task.load_dataset("train")
    dataset = task.datasets["train"]
    dataset.set_epoch(epoch)
    return task, dataset


def measure(dataset, mask_idx: int, pad: int, count: int) -> Counter:
    """Counts over the first ``count`` items (see the module docstring)."""
    c = Counter()
    for index in range(count):
        item = {k: v.numpy() if hasattr(v, "numpy") else v for k, v in dataset[index].items()}
        n = int((item["kind"] == CONTEXT).sum())
        source, original = item["source"][:n], item["target"][:n]
        masked = original != pad
        shown = masked & (source == original)
        c["blocks"] += 1
        c["masked"] += int(masked.sum())
        c["context [M]"] += int((masked & (source == mask_idx)).sum())
        c["context random"] += int((masked & (source != mask_idx) & (source != original)).sum())
        c["context original"] += int(shown.sum())

        pseudo = item["kind"] == PSEUDO
        p_pos, p_step = item["positions"][pseudo], item["step"][pseudo]
        c["steps"] += int(p_step.max()) if len(p_step) else 0
        step_of = np.zeros(n, dtype=np.int64)
        step_of[p_pos] = p_step
        s_pos = np.flatnonzero(shown)
        s_step = step_of[s_pos]
        for pos, step in zip(p_pos, p_step):
            own = bool(shown[pos])
            sibling = int(((s_step == step) & (s_pos != pos)).sum())
            later = int((s_step > step).sum())
            c["par"] += 1
            c["par own"] += own
            c["par sibling"] += sibling > 0
            c["par later"] += later > 0
            c["par any"] += own or sibling > 0 or later > 0
            if not own:  # still a PAR target with --par-skip-unchanged
                c["kept par"] += 1
                c["kept par leak"] += sibling > 0 or later > 0
            c["pairs own"] += own
            c["pairs sibling"] += sibling
            c["pairs earlier"] += later  # this [P] is of an earlier step than the shown token
            c["pairs later"] += int((s_step < step).sum())
    return c


def check_skip(data, args, no_blockwise: bool, count: int, expected: Counter, pad: int) -> int:
    """PAR targets with --par-skip-unchanged: must be the [P] whose original is not shown."""
    _, dataset = load(data, args.seed, args.epoch, no_blockwise=no_blockwise, par_skip_unchanged=True)
    targets = 0
    for index in range(count):
        item = dataset[index]
        targets += int(((item["kind"] == PSEUDO) & (item["target"] != pad)).sum())
    if targets != expected["kept par"]:
        raise SystemExit(f"--par-skip-unchanged kept {targets} PAR targets, expected {expected['kept par']}")
    return targets


def pct(part: int, whole: int) -> str:
    return f"{100.0 * part / max(whole, 1):.1f}%"


def main():
    args = parse_args()
    logging.disable(logging.INFO)  # the task logs every split it loads; only the table matters here
    with tempfile.TemporaryDirectory() as work:
        data = args.data or prepare(work, args.max_docs, args.vocab_size)
        results = {}
        for name, no_blockwise in MODES.items():
            task, dataset = load(data, args.seed, args.epoch, no_blockwise=no_blockwise)
            count = min(args.max_items or len(dataset), len(dataset))
            pad, mask_idx = task.dictionary.pad(), task.mask_idx
            c = measure(dataset, mask_idx, pad, count)
            c["skip targets"] = check_skip(data, args, no_blockwise, count, c, pad)
            results[name] = c
        cfg = task.cfg
        print(
            f"Austen ({'--data ' + args.data if args.data else f'first {args.max_docs} documents'}), "
            f"vocab {len(task.dictionary)}, {cfg.tokens_per_sample}-token blocks, mask {cfg.mask_prob}, "
            f"span prob {cfg.span_prob} ({cfg.min_span_length}-{cfg.max_span_length}), unchanged "
            f"{cfg.leave_unmasked_prob}, random {cfg.random_token_prob}, seed {args.seed}, epoch {args.epoch}"
        )
        names = list(results)
        columns = [table_column(results[n]) for n in names]
        table = [[label] + [column[i] for column in columns] for i, label in enumerate(ROW_LABELS)]
        widths = [max(len(r[i]) for r in table + [[""] + names]) for i in range(len(names) + 1)]
        print("| " + " | ".join([" " * widths[0]] + [n.ljust(w) for n, w in zip(names, widths[1:])]) + " |")
        print("|" + "|".join("-" * (w + 2) for w in widths) + "|")
        for row in table:
            cells = [row[0].ljust(widths[0])] + [cell.rjust(w) for cell, w in zip(row[1:], widths[1:])]
            print("| " + " | ".join(cells) + " |")


ROW_LABELS = [
    "blocks / masked positions / factorization steps",
    "context at a masked position: [M]",
    "  random token (not the original)",
    "  the original (visible to every [P])",
    "[P] that can read, in the context: its own original",
    "  an original of its own step (span sibling)",
    "  an original of a later step",
    "  any original Eq. 5 hides from it",
    "([P], shown original) pairs: own token",
    "  same step, other token (leak)",
    "  [P] of an earlier step (leak)",
    "  [P] of a later step (visible anyway)",
    "--par-skip-unchanged: PAR targets kept",
    "  of which still see a hidden original",
]


def table_column(c: Counter):
    """One mode's cells, in the order of ``ROW_LABELS``."""
    pairs = c["pairs own"] + c["pairs sibling"] + c["pairs earlier"] + c["pairs later"]
    return [
        f"{c['blocks']} / {c['masked']} / {c['steps']}",
        pct(c["context [M]"], c["masked"]),
        pct(c["context random"], c["masked"]),
        pct(c["context original"], c["masked"]),
        pct(c["par own"], c["par"]),
        pct(c["par sibling"], c["par"]),
        pct(c["par later"], c["par"]),
        pct(c["par any"], c["par"]),
        pct(c["pairs own"], pairs),
        pct(c["pairs sibling"], pairs),
        pct(c["pairs earlier"], pairs),
        pct(c["pairs later"], pairs),
        f"{c['skip targets']} ({pct(c['skip targets'], c['par'])})",
        pct(c["kept par leak"], c["kept par"]),
    ]


if __name__ == "__main__":
    main()
