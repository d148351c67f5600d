#!/usr/bin/env python
"""Turn a local copy of a GLUE task into the files ``fairseq-preprocess`` binarizes for sentence prediction.

``--input`` is the task's folder of the public release (``CoLA/``, ``SST-2/``, ``MRPC/``,
``QQP/``, ``STS-B/``, ``MNLI/``, ``QNLI/``, ``RTE/``, ``WNLI/``, each with ``train.tsv``,
``dev.tsv`` (MNLI: ``dev_matched.tsv``, ``dev_mismatched.tsv``) and ``test.tsv``); nothing is
downloaded. For each split it writes ``{split}.input0`` (first sentence), ``{split}.input1``
(second sentence, pair tasks) and ``{split}.label`` (the label as text; STS-B: the score), tokens
separated by spaces: sentencepiece pieces (``--spm-model``), BERT WordPiece
(``--wordpiece-vocab``), or the text's own words. MNLI's mismatched dev/test sets become
``valid1``/``test1``. Test files have no labels, so no ``test.label`` is written.
"""

import argparse
import logging
import os
import sys
from collections import Counter

from unilm_fairseq.encoders.wordpiece_tokenizer import add_casing_arguments
from unilm_fairseq.prepare import glue
from unilm_fairseq.prepare import seq2seq_release_formats as sources

logger = logging.getLogger("prepare_glue")


def parse_args(argv=None):
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--task", required=True, help=f"one of {', '.join(glue.GLUE_TASKS)}")
    parser.add_argument("--input", required=True, help="the task's folder of the GLUE release")
    parser.add_argument("--output", required=True, help="directory for {split}.input0/.input1/.label")
    parser.add_argument("--splits", default="train,valid,test", help="comma-separated, of train,valid,test")
    tokenizer = parser.add_mutually_exclusive_group()
    tokenizer.add_argument("--spm-model", help="sentencepiece model: write its pieces")
    tokenizer.add_argument("--wordpiece-vocab", help="BERT vocab.txt: write WordPiece tokens")
    add_casing_arguments(parser)
    args = parser.parse_args(argv)
    args.splits = [s.strip() for s in args.splits.split(",") if s.strip()]
    return args


def main(argv=None):
    args = parse_args(argv)
    logging.basicConfig(
        level=logging.INFO, format="%(asctime)s | %(name)s | %(message)s", stream=sys.stderr, force=True
    )
    spec = glue.task_spec(args.task)
    tokenize = sources.make_tokenizer(args.spm_model, args.wordpiece_vocab, args.lowercase)
    os.makedirs(args.output, exist_ok=True)
    files = glue.split_files(args.input, spec, args.splits)
    if not files:
        raise SystemExit(f"no {spec.folder} files for splits {args.splits} in {args.input}")
    for split, path, has_header in files:
        stats = Counter()
        try:  # a train or dev file must have its labels: only test files are read without them
            examples = list(glue.read_glue_file(path, spec, has_header, stats, not split.startswith("test")))
        except ValueError as err:
            raise SystemExit(f"{spec.folder} {split}: {err}") from err
        outputs = {f"input{i}": [] for i in range(len(spec.sentences))}
        labels = []
        for example in examples:
            for i, sentence in enumerate(example.sentences):
                outputs[f"input{i}"].append(" ".join(tokenize(sentence)))
            labels.append(example.label)
        if examples and examples[0].label is not None:
            outputs["label"] = labels
        for name, lines in outputs.items():
            with open(os.path.join(args.output, f"{split}.{name}"), "w", encoding="utf-8") as f:
                f.writelines(line + "\n" for line in lines)
        logger.info(
            "%s %s: %d examples written, %d malformed rows skipped%s",
            spec.folder,
            split,
            len(examples),
            stats["skipped_malformed"],
            "" if "label" in outputs else " (no labels: a test file)",
        )


if __name__ == "__main__":
    main()
