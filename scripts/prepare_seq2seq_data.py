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

Any format also reads row files, as the Hugging Face ``datasets`` library exports them (``to_json``,
``to_parquet``, the Hub's Parquet shards): ``{split}.jsonl``, ``{split}.json`` (one object per line, or one
array), ``{split}.parquet`` (needs ``pyarrow``) or their shards ``{split}-*.parquet`` ... in ``--input``;
they take precedence over the release files. Fields (``--source-field``, ``--target-field``, and for
question generation ``--answer-field``; a dotted name reaches into nested objects) default to the datasets'
own: cnndm ``article``/``highlights`` (one sentence a line), xsum and gigaword ``document``/``summary``,
squad_qg ``context``/``question``/``answers`` (SQuAD's ``{"text": [...], "answer_start": [...]}``: the
first answer, placed like the SQuAD JSON's). ``--format fields`` reads row files of any dataset: the
fields given, or the known layout its rows have. Rows without a field, with a field that is not text or
is empty, and unreadable lines are skipped, logged and counted in a summary line.

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
from unilm_fairseq.prepare import hf_rows as rows
from unilm_fairseq.prepare import seq2seq_release_formats as sources
from unilm_fairseq.prepare.qg_windows import AnswerWindow

logger = logging.getLogger("prepare_seq2seq_data")
NO_SEPARATOR = ("", "none")


def separator(value: str) -> str:
    """A separator token; '' or 'none' for none (surrounding spaces are ignored)."""
    value = value.strip()
    return "" if value.lower() in NO_SEPARATOR else value


def token_limit(limit: int) -> str:
    return f"limit {limit} tokens" if limit else "no limit"


def resolve_layout(args, paths):
    """The row files' fields and whether they make question-generation pairs: the fields given, else the
    format's own, else (``--format fields``) the known layout the first row has."""
    known = rows.LAYOUTS.get(args.format)
    if known is None and not (args.source_field and args.target_field):
        row = rows.first_row(paths)
        name = rows.infer_layout(row)
        if name is None:
            keys = sorted(row) if isinstance(row, dict) else []
            raise SystemExit(
                f"{paths[0]}: give --source-field and --target-field (its first row has the keys {keys}, "
                "none of the known layouts)"
            )
        logger.info("%s: rows with the fields of %s", paths[0], name)
        known = rows.LAYOUTS[name]
    known = known or rows.Layout("", "")
    return rows.Layout(
        args.source_field or known.source,
        args.target_field or known.target,
        args.answer_field or known.answer,
    )


def read_split(args, split, stats):
    paths = rows.row_files(args.input, split)
    if paths:
        logger.info("%s: rows from %s", split, ", ".join(paths))
        reader = rows.RowReader(
            args.layout or resolve_layout(args, paths),
            stats,
            target_lines=args.format in rows.TARGET_LINES,
            answer_first=args.qg_order == "answer_passage",
            unk_token=args.unk_token if args.format == "gigaword" else None,
            split=split,
        )
        args.layout = reader.layout
        return reader.read(paths)
    if args.format == "fields":
        raise FileNotFoundError(f"no {split} row files ({split}.jsonl, .json, .parquet) in {args.input}")
    if args.source_field or args.target_field or args.answer_field:
        logger.warning("%s: no row files in %s: --*-field options unused", split, args.input)
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
    parser.add_argument(
        "--format",
        required=True,
        choices=["cnndm", "xsum", "gigaword", "squad_qg", "fields"],
        help="the dataset; fields: row files of any dataset, with --source-field and --target-field",
    )
    parser.add_argument("--input", required=True, help="directory holding the release files or row files")
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
    parser.add_argument("--source-field", help="row files: the source's field [the format's]")
    parser.add_argument("--target-field", help="row files: the target's field [the format's]")
    parser.add_argument(
        "--answer-field",
        help="row files: the answer's field, for question generation (squad_qg: answers); SQuAD's "
        '{"text": [...], "answer_start": [...]}, a list of answers or a string',
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
    for option in ("max_source_tokens", "max_target_tokens"):
        if getattr(args, option) < 0:
            parser.error(
                f"--{option.replace('_', '-')} {getattr(args, option)}: must be 0 (no limit) or more"
            )
    if os.path.exists(args.output) and not os.path.isdir(args.output):
        parser.error(f"--output {args.output} is a file, not a folder")
    return args


def remove_split(prefix):
    for side in ("src", "tgt"):
        if os.path.exists(f"{prefix}.{side}"):
            os.remove(f"{prefix}.{side}")


def main(argv=None):
    args = parse_args(argv)
    # force: importing fairseq (through the package) has already configured the root logger
    logging.basicConfig(
        level=logging.INFO, format="%(asctime)s | %(name)s | %(message)s", stream=sys.stderr, force=True
    )
    specials = [args.sentence_separator, args.qg_separator, args.unk_token]
    try:  # a missing, empty or unreadable vocabulary or model: one line before any reading
        tokenize = sources.make_tokenizer(args.spm_model, args.wordpiece_vocab, args.lowercase, specials)
        vocab = set(load_vocab(args.wordpiece_vocab)) if args.wordpiece_vocab else set()
    except (OSError, ValueError, RuntimeError) as err:  # sentencepiece reports a bad model as RuntimeError
        path, text = args.spm_model or args.wordpiece_vocab, str(err)
        raise SystemExit(f"error: {text}" if path in text else f"error: {path}: {text}") from None
    if args.wordpiece_vocab:
        qg_separator = args.qg_separator if args.format in ("squad_qg", "fields") else ""
        for token in {qg_separator, args.sentence_separator, args.unk_token} - vocab - {"", None}:
            logger.warning("%r is not in %s: the model will see an unknown word", token, args.wordpiece_vocab)
    os.makedirs(args.output, exist_ok=True)
    args.layout = None  # the row files' fields, once resolved
    for split in args.splits:
        stats = Counter()
        prefix = os.path.join(args.output, split)
        try:
            pairs = read_split(args, split, stats)
        except (OSError, ValueError, ImportError) as err:
            remove_split(prefix)
            raise SystemExit(f"{split}: {err}") from err
        # question generation: squad_qg, or row files with an answer field
        qg = args.format == "squad_qg" or bool(args.layout and args.layout.answer)
        source_separator = args.qg_separator if qg else ""
        fit_source = None
        if qg and args.qg_window == "answer":
            fit_source = AnswerWindow(tokenize, source_separator, args.qg_order == "answer_passage", stats)
        lines = sources.format_pairs(
            pairs,
            tokenize,
            source_separator,
            args.sentence_separator,
            args.max_source_tokens,
            args.max_target_tokens,
            stats,
            fit_source,
        )
        try:
            write_pairs(lines, prefix)
        except (OSError, ValueError, ImportError) as err:  # bad input: no half-written split
            remove_split(prefix)
            raise SystemExit(f"{split}: {err}") from err
        if stats["rows"]:
            logger.info("%s", rows.summary(split, stats))
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
        if stats["highlight_without_sentence"]:
            count = stats["highlight_without_sentence"]
            logger.warning("%s: %d @highlight markers with no sentence after them (ignored)", split, count)
        if stats["answer_offset_mismatch"]:
            logger.warning("%s: %d answers not at their answer_start", split, stats["answer_offset_mismatch"])
        if fit_source is not None:
            log_windows(split, stats)
        if not stats["written"]:
            raise SystemExit(f"{split}: no examples written from {args.input}")


if __name__ == "__main__":
    main()
