#!/usr/bin/env python
"""ACLSum -> aspect-conditioned summarization pairs as raw text, plus the extractive baselines.

    python scripts/prepare_aclsum.py --output work/aclsum/text --wordpiece-vocab model/dict.txt

Reads the ``.jsonl`` files inside the installed ``aclsum`` package (``pip install aclsum``; nothing is
downloaded) and writes, for each of ``train``/``valid``/``test``:

* ``{split}.src`` / ``{split}.tgt``: one pair per line (source: ``"<aspect> :"``, the abstract, then as
  many whole introduction sentences as ``--max-source-tokens`` WordPiece tokens allow; target: the
  aspect's expert summary), and ``{split}.id`` (``paper-id aspect``);
* ``test.{lead,positional,oracle}.hyp``: the baselines' one-sentence summaries of the test pairs;

with ``--joined``, one pair per paper instead: the source without the aspect prefix, the target the three
summaries joined (challenge, approach, outcome), ids ``paper-id joined``, and three-sentence baselines
(lead-3; the first, second and last abstract sentences; each aspect's oracle sentence);

and, with ``--pretraining-text``, ``pretrain.{train,valid}.txt``: the sentences of the train and val papers
(never their summaries, never a test paper) for domain-adaptive pre-training with ``--task pmlm``.

Papers with an empty abstract and aspects with no summary are skipped and counted; sources whose
abstract alone exceeds the budget are cut and counted. See :mod:`unilm_fairseq.prepare.aclsum`.
"""

import argparse
import logging
import os
import sys

from unilm_fairseq.encoders.wordpiece import WordPieceBPE, WordPieceConfig
from unilm_fairseq.encoders.wordpiece_tokenizer import add_casing_arguments
from unilm_fairseq.prepare import aclsum

logger = logging.getLogger("prepare_aclsum")


def parse_args(argv=None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--output", required=True, help="folder for the text files")
    parser.add_argument(
        "--wordpiece-vocab", required=True, help="the model's vocab.txt/dict.txt, to count source tokens"
    )
    parser.add_argument(
        "--max-source-tokens",
        type=int,
        default=254,
        help="source budget in WordPiece tokens, before [SOS]/[EOS] are added (default 254 = 256 positions)",
    )
    add_casing_arguments(parser)
    parser.add_argument(
        "--joined",
        action="store_true",
        help="one pair per paper: the target joins its three aspect summaries (challenge, approach, "
        "outcome), a summary about three times as long as one aspect's; the source has no aspect prefix",
    )
    parser.add_argument(
        "--pretraining-text",
        action="store_true",
        help="also write pretrain.{train,valid}.txt: the sentences of the train / val papers (no summaries, "
        "no test papers), one per line, an empty line between papers, for --task pmlm",
    )
    parser.add_argument("--dataset-dir", help="ACLSum's dataset folder (default: the installed package's)")
    args = parser.parse_args(argv)
    if args.max_source_tokens < 1:
        parser.error(f"--max-source-tokens {args.max_source_tokens}: must be at least 1")
    if not os.path.isfile(args.wordpiece_vocab):
        parser.error(f"--wordpiece-vocab {args.wordpiece_vocab}: no such file")
    return args


def main(argv=None) -> int:
    logging.basicConfig(format="%(asctime)s | %(levelname)s | %(name)s | %(message)s", level=logging.INFO)
    args = parse_args(argv)
    try:
        folder = args.dataset_dir or aclsum.dataset_dir()
    except aclsum.ACLSumNotInstalled as err:
        print(f"error: {err}", file=sys.stderr)
        return 1
    casing = {"wordpiece_cased": args.lowercase is False, "wordpiece_lowercase": args.lowercase is True}
    bpe = WordPieceBPE(WordPieceConfig(wordpiece_vocab=args.wordpiece_vocab, **casing))

    def count_tokens(text: str) -> int:
        return len(bpe.tokenize(text))

    os.makedirs(args.output, exist_ok=True)
    for split, name in aclsum.SPLITS.items():
        path = os.path.join(folder, f"{name}.jsonl")
        if not os.path.isfile(path):
            print(f"error: {path} not found: is aclsum installed whole? pip install --force-reinstall aclsum",
                  file=sys.stderr)  # fmt: skip
            return 1
        try:
            papers = aclsum.read_papers(path)
        except ValueError as err:  # not UTF-8, or a line that is not a paper's JSON object
            print(f"error: {err}", file=sys.stderr)
            return 1
        try:
            pairs, stats = aclsum.build_pairs(
                papers, count_tokens, args.max_source_tokens, joined=args.joined
            )
        except ValueError as err:  # a budget too small for any of an abstract
            print(f"error: --max-source-tokens: {err}", file=sys.stderr)
            return 1
        logger.info("%s: %s", split, stats.describe())
        columns = {
            "src": [p.source for p in pairs],
            "tgt": [p.target for p in pairs],
            "id": [f"{p.paper_id} {p.aspect}" for p in pairs],
        }
        for baseline in aclsum.BASELINES if split == "test" else ():
            columns[f"{baseline}.hyp"] = aclsum.baseline_hypotheses(pairs, baseline, aclsum.summed_rouge)
        for suffix, lines in columns.items():
            with open(os.path.join(args.output, f"{split}.{suffix}"), "w", encoding="utf-8") as f:
                f.writelines(line + "\n" for line in lines)
    if args.pretraining_text:
        for split in ("train", "valid"):
            papers = aclsum.read_papers(os.path.join(folder, f"{aclsum.SPLITS[split]}.jsonl"))
            documents = [aclsum.paper_sentences(paper) for paper in papers]
            documents = [d for d in documents if d]
            with open(os.path.join(args.output, f"pretrain.{split}.txt"), "w", encoding="utf-8") as f:
                f.write("\n\n".join("\n".join(d) for d in documents) + "\n")
            logger.info(
                "pretrain.%s.txt: %d papers, %d sentences (summaries and test papers left out)",
                split, len(documents), sum(len(d) for d in documents),
            )  # fmt: skip
    logger.info("wrote %s", args.output)
    return 0


if __name__ == "__main__":
    sys.exit(main())
