#!/usr/bin/env python
"""Convert a local copy of CNN/DailyMail, XSum, Gigaword or SQuAD (question generation) into parallel
``{split}.src`` / ``{split}.tgt`` files, one example a line, for
``fairseq-preprocess --source-lang src --target-lang tgt``.

Input layouts (``--input`` is a directory; nothing is downloaded):

- cnndm: ``.story`` files anywhere under it plus the url lists ``all_train.txt``/``all_val.txt``/
  ``all_test.txt`` (in ``--url-lists``, default ``--input`` or its ``url_lists/``; a story is named by the
  SHA-1 of its url), or ``{split}.source``/``{split}.target`` line files. Target: the highlights, joined by
  ``--sentence-separator``.
- xsum: ``{bbcid}.summary`` (or ``.data``) files in it or its ``bbc-summary-data/`` plus
  ``XSum-TRAINING-DEV-TEST-SPLIT-90-5-5.json`` (``--split-json``), or ``{split}.source``/``.target``.
  Source: RESTBODY; target: FIRST-SENTENCE.
- gigaword: ``{split}.src.txt``/``{split}.tgt.txt`` or ``{split}.article.txt``/``{split}.title.txt``.
- squad_qg: ``{split}.json`` / ``train-v1.1.json`` / ``dev-v1.1.json`` (SQuAD v1.1): source
  "answer [SEP] passage" (``--qg-order``), target the question; or ``{split}.pa.txt``/``{split}.q.txt``
  line files ("passage [SEP] answer", kept in their order). A source over ``--max-source-tokens`` keeps
  the answer whole and a window of the passage around it (UniLM v1 §3.3; placement:
  ``unilm_fairseq/prepare/qg_windows.py``), unless ``--qg-window head``.

``valid`` also matches files named ``validation``, ``val`` or ``dev``. Tokens are written separated by
spaces: sentencepiece pieces (``--spm-model``), BERT WordPiece (``--wordpiece-vocab``), or the text's own
words. Separator tokens are written as given: they must be in the vocabulary the model is trained with.
"""

import argparse
import logging
import os
import sys
from collections import Counter

from unilm_fairseq.encoders.wordpiece_tokenizer import add_casing_arguments, load_vocab
from unilm_fairseq.prepare import seq2seq_sources as sources
from unilm_fairseq.prepare.qg_windows import AnswerWindow

logger = logging.getLogger("prepare_seq2seq_data")
NO_SEPARATOR = ("", "none")


def separator(value: str) -> str:
    """A separator token; '' or 'none' for none (surrounding spaces are ignored)."""
    value = value.strip()
    return "" if value.lower() in NO_SEPARATOR else value


def token_limit(limit: int) -> str:
    return f"limit {limit} tokens" if limit else "no limit"


def read_split(args, split, stats):
    if args.format == "cnndm":
        return sources.read_cnndm(args.input, split, args.url_lists, args.input_sentence_separator, stats)
    if args.format == "xsum":
        return sources.read_xsum(args.input, split, args.split_json, stats)
    if args.format == "gigaword":
        return sources.read_gigaword(args.input, split, args.unk_token)
    return sources.read_squad_qg(args.input, split, args.qg_order == "answer_passage", stats)


def log_windows(split, stats):
    """The answer-window counts of a QG split; a warning for what could not be placed around the answer."""
    logger.info(
        "%s: QG sources over the limit: %d cut to a passage window around the answer, %d of them away from "
        "the passage start; %d answers found by searching their text",
        split,
        stats["qg_window"],
        stats["qg_window_moved"],
        stats["qg_answer_searched"],
    )
    problems = {
        "qg_answer_not_found": "answers not found in their passage (over the limit: the passage head kept)",
        "qg_answer_too_long": "answers too long to leave room for the passage (source truncated plainly)",
        "qg_unsplit": "line sources without the separator (truncated plainly)",
    }
    for key, what in problems.items():
        if stats[key]:
            logger.warning("%s: %d %s", split, stats[key], what)


def write_pairs(lines, prefix):
    """``prefix.src`` and ``prefix.tgt``, one line each per ``(source, target)``."""
    src = open(f"{prefix}.src", "w", encoding="utf-8")
    tgt = open(f"{prefix}.tgt", "w", encoding="utf-8")
    with src, tgt:
        for source, target in lines:
            src.write(source + "\n")
            tgt.write(target + "\n")


def parse_args(argv=None):
    formatter = argparse.RawDescriptionHelpFormatter
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=formatter)
    parser.add_argument("--format", required=True, choices=["cnndm", "xsum", "gigaword", "squad_qg"])
    parser.add_argument("--input", required=True, help="directory holding the release files")
    parser.add_argument("--output", required=True, help="directory for {split}.src and {split}.tgt")
    parser.add_argument("--splits", default="train,valid,test", help="comma-separated, of train,valid,test")
    parser.add_argument("--url-lists", help="cnndm: directory of all_{train,val,test}.txt (default: --input)")
    parser.add_argument(
        "--split-json", help=f"xsum: the split file (default: --input/{sources.XSUM_SPLIT_JSON})"
    )
    parser.add_argument(
        "--sentence-separator",
        type=separator,
        default="<q>",
        help="token between the sentences of a summary ('none': none) [%(default)s]",
    )
    parser.add_argument(
        "--input-sentence-separator",
        type=separator,
        default="",
        help="cnndm line files: the token that separates sentences in {split}.target",
    )
    parser.add_argument(
        "--qg-separator",
        type=separator,
        default="[SEP]",
        help="squad_qg: token between answer and passage [%(default)s]",
    )
    parser.add_argument(
        "--qg-order",
        choices=["answer_passage", "passage_answer"],
        default="answer_passage",
        help="squad_qg: answer first, or passage first (UniLM v1 §3.3)",
    )
    parser.add_argument(
        "--qg-window",
        choices=["answer", "head"],
        default="answer",
        help="squad_qg, a source over --max-source-tokens: keep the answer whole and a passage window "
        "around it (UniLM v1 §3.3), or truncate the end of the joined source (head)",
    )
    parser.add_argument("--unk-token", help="gigaword: replace the released UNK with this ([UNK], <unk>)")
    tokenizer = parser.add_mutually_exclusive_group()
    tokenizer.add_argument("--spm-model", help="sentencepiece model: write its pieces")
    tokenizer.add_argument("--wordpiece-vocab", help="BERT vocab.txt: write WordPiece tokens")
    add_casing_arguments(parser)
    parser.add_argument("--max-source-tokens", type=int, default=0, help="truncate sources (0: no limit)")
    parser.add_argument("--max-target-tokens", type=int, default=0, help="truncate targets (0: no limit)")
    args = parser.parse_args(argv)
    args.splits = [s.strip() for s in args.splits.split(",") if s.strip()]
    unknown = sorted(set(args.splits) - set(sources.SPLITS))
    if unknown:
        parser.error(f"unknown splits {unknown}: use {','.join(sources.SPLITS)}")
    return args


def main(argv=None):
    args = parse_args(argv)
    # force: importing fairseq (through the package) has already configured the root logger
    logging.basicConfig(
        level=logging.INFO, format="%(asctime)s | %(name)s | %(message)s", stream=sys.stderr, force=True
    )
    source_separator = args.qg_separator if args.format == "squad_qg" else ""
    specials = [args.sentence_separator, args.qg_separator, args.unk_token]
    tokenize = sources.make_tokenizer(args.spm_model, args.wordpiece_vocab, args.lowercase, specials)
    if args.wordpiece_vocab:
        vocab = set(load_vocab(args.wordpiece_vocab))
        for token in {source_separator, args.sentence_separator, args.unk_token} - vocab - {"", None}:
            logger.warning("%r is not in %s: the model will see an unknown word", token, args.wordpiece_vocab)
    os.makedirs(args.output, exist_ok=True)
    for split in args.splits:
        stats = Counter()
        fit_source = None
        if args.format == "squad_qg" and args.qg_window == "answer":
            fit_source = AnswerWindow(tokenize, source_separator, args.qg_order == "answer_passage", stats)
        lines = sources.format_pairs(
            read_split(args, split, stats),
            tokenize,
            source_separator,
            args.sentence_separator,
            args.max_source_tokens,
            args.max_target_tokens,
            stats,
            fit_source,
        )
        prefix = os.path.join(args.output, split)
        try:
            write_pairs(lines, prefix)
        except (OSError, ValueError) as err:  # a missing or malformed input file: no half-written split
            for side in ("src", "tgt"):
                if os.path.exists(f"{prefix}.{side}"):
                    os.remove(f"{prefix}.{side}")
            raise SystemExit(f"{split}: {err}") from err
        logger.info(
            "%s: %d pairs -> %s.{src,tgt}; skipped %d with an empty source or target, %d listed but missing; "
            "truncated %d sources (%s) and %d targets (%s)",
            split,
            stats["written"],
            prefix,
            stats["skipped_empty"],
            stats["missing"],
            stats["truncated_source"],
            token_limit(args.max_source_tokens),
            stats["truncated_target"],
            token_limit(args.max_target_tokens),
        )
        if stats["answer_offset_mismatch"]:
            logger.warning("%s: %d answers not at their answer_start", split, stats["answer_offset_mismatch"])
        if fit_source is not None:
            log_windows(split, stats)
        if not stats["written"]:
            raise SystemExit(f"{split}: no examples written from {args.input}")


if __name__ == "__main__":
    main()
