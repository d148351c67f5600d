#!/usr/bin/env python
"""Convert MS MARCO release files into ``{split}.src`` / ``{split}.tgt`` (and ``{split}.id``) for
``fairseq-preprocess --source-lang src --target-lang tgt``: generative QA, "passage [SEP] question" -> answer.

    python scripts/prepare_marco_data.py --input dev_v2.1.json.gz --split valid --output marco-text \\
        --spm-model spm.model --max-source-tokens 510

Formats: v2.1 (one columnar JSON object, ``.json`` or ``.json.gz``) and v1.1 (JSON lines); see
:mod:`unilm_fairseq.prepare.marco`. ``--answer-type well_formed`` (default) trains on the well-formed
answers of the natural-language-generation task, ``answers`` on the QA task's answers; the first answer
is the target.
Unanswerable questions are skipped and counted. The eval release has no answers: only ``{split}.src`` and
``{split}.id`` are written (decode them with ``fairseq-interactive``). ``{split}.id`` holds the query ids, one
per line, for the official evaluation.
"""

import argparse
import logging
import os
import sys
from collections import Counter

from unilm_fairseq.encoders.wordpiece_tokenizer import add_casing_arguments
from unilm_fairseq.prepare import marco
from unilm_fairseq.prepare import seq2seq_release_formats as sources

logger = logging.getLogger("prepare_marco_data")


def parse_args(argv=None):
    formatter = argparse.RawDescriptionHelpFormatter
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=formatter)
    parser.add_argument("--input", required=True, help="an MS MARCO release file (.json, .json.gz, .jsonl)")
    parser.add_argument("--split", required=True, help="output name: train, valid or test")
    parser.add_argument("--output", required=True, help="directory for {split}.src, {split}.tgt, {split}.id")
    parser.add_argument("--answer-type", choices=list(marco.ANSWER_FIELDS), default="well_formed")
    parser.add_argument(
        "--passages", choices=marco.PASSAGE_CHOICES, default="selected",
        help="the passages marked is_selected (joined in order), or all (the eval release marks none)",
    )  # fmt: skip
    parser.add_argument(
        "--separator", default="[SEP]", help="token between passage and question (must be in the vocabulary)"
    )
    tokenizer = parser.add_mutually_exclusive_group()
    tokenizer.add_argument("--spm-model", help="sentencepiece model: write its pieces")
    tokenizer.add_argument("--wordpiece-vocab", help="BERT vocab.txt: write WordPiece tokens")
    add_casing_arguments(parser)
    parser.add_argument("--max-source-tokens", type=int, default=0, help="truncate sources (0: no limit)")
    parser.add_argument("--max-target-tokens", type=int, default=0, help="truncate targets (0: no limit)")
    return parser.parse_args(argv)


def main(argv=None):
    args = parse_args(argv)
    # force: importing fairseq (through the package) has already configured the root logger
    logging.basicConfig(
        level=logging.INFO, format="%(asctime)s | %(name)s | %(message)s", stream=sys.stderr, force=True
    )
    tokenize = sources.make_tokenizer(args.spm_model, args.wordpiece_vocab, args.lowercase, [args.separator])
    stats = Counter()
    try:
        examples = list(marco.read_marco(args.input, args.answer_type, args.passages, stats))
    except (OSError, ValueError) as err:
        raise SystemExit(f"{args.input}: {err}") from err
    if not examples:
        raise SystemExit(f"{args.input}: no usable examples ({dict(stats)})")
    with_targets = not stats["without_answers"]
    os.makedirs(args.output, exist_ok=True)
    prefix = os.path.join(args.output, args.split)
    truncated = Counter()
    with open(f"{prefix}.src", "w", encoding="utf-8") as src, open(
        f"{prefix}.id", "w", encoding="utf-8"
    ) as ids:
        tgt = open(f"{prefix}.tgt", "w", encoding="utf-8") if with_targets else None
        for query_id, pair in examples:
            source = sources.join_segments(pair.source, tokenize, args.separator)
            source, cut = sources.truncate(source, args.max_source_tokens)
            truncated["source"] += cut
            src.write(" ".join(source) + "\n")
            ids.write(query_id + "\n")
            if tgt is not None:
                target, cut = sources.truncate(tokenize(pair.target[0]), args.max_target_tokens)
                truncated["target"] += cut
                tgt.write(" ".join(target) + "\n")
        if tgt is not None:
            tgt.close()
    written = "{src,tgt,id}" if with_targets else "{src,id} (no answers in the file)"
    logger.info(
        "%s: %d examples -> %s.%s; skipped %d without a usable %s answer and %d without a passage or "
        "question; truncated %d sources and %d targets",
        args.split, len(examples), prefix, written, stats["no_answer"], args.answer_type, stats["no_passage"],
        truncated["source"], truncated["target"],
    )  # fmt: skip


if __name__ == "__main__":
    main()
