#!/usr/bin/env python
"""Split a one-sentence-per-line corpus into train/valid, train sentencepiece, encode.

Input: plain text or .xz, one sentence per line, documents separated by empty
lines (the embedded ``data/austen.txt.xz`` by default). Output in ``--out``:
``spm.model``/``spm.vocab`` and ``{train,valid}.spm`` (pieces separated by
spaces, empty lines kept as document breaks) ready for
``fairseq-preprocess --only-source``.

With ``--pairs-window K`` it also writes a demo seq2seq set (lead-sentence
extraction): each source is K consecutive sentences of a document, its target
the first of them; ``{train,valid,test}.{src,tgt}`` (sentencepiece pieces) come
from the training documents, the first and the second held-out document, and
``{train,valid,test}.raw.{src,tgt}`` hold the same pairs as plain text (for
another tokenizer, such as an imported model's WordPiece).
"""

import argparse
import logging
import lzma
import os

import sentencepiece as spm

logger = logging.getLogger("prepare_corpus")


def visible(line):
    """Whether a line has a character to show: zero-width, control and private-use ones alone encode to
    no piece, and an empty line in ``*.spm`` would break the document."""
    return any(c.isprintable() and not c.isspace() for c in line)


def read_documents(path):
    """The documents of a one-sentence-per-line file: lists of sentences, a blank (or whitespace-only)
    line between documents; lines with no visible character are left out."""
    opener = lzma.open if path.endswith(".xz") else open
    try:
        with opener(path, "rt", encoding="utf-8-sig") as f:  # -sig: a byte-order mark is not text
            text = f.read()
    except UnicodeDecodeError as err:
        raise SystemExit(f"{path}: not UTF-8 text ({err})") from None
    docs, doc = [], []
    for line in text.split("\n"):
        if not line.strip():
            docs, doc = (docs + [doc] if doc else docs), []
        elif visible(line):
            doc.append(line)
    return docs + [doc] if doc else docs


def write_documents(docs, path, processor=None):
    with open(path, "w", encoding="utf-8") as out:
        for i, doc in enumerate(docs):
            if i:
                out.write("\n")  # empty line: document break
            for sentence in doc:
                out.write(
                    (" ".join(processor.encode(sentence, out_type=str)) if processor else sentence) + "\n"
                )


def lead_pairs(docs, window):
    """(K consecutive sentences, their first sentence) for every window position."""
    return [(" ".join(doc[i : i + window]), doc[i]) for doc in docs for i in range(0, len(doc) - window + 1)]


def write_pairs(pairs, prefix, processor):
    """``prefix.{src,tgt}`` in sentencepiece pieces, ``prefix.raw.{src,tgt}`` as plain text."""
    for side, column in (("src", 0), ("tgt", 1)):
        with open(f"{prefix}.{side}", "w", encoding="utf-8") as pieces, open(
            f"{prefix}.raw.{side}", "w", encoding="utf-8"
        ) as raw:
            for pair in pairs:
                pieces.write(" ".join(processor.encode(pair[column], out_type=str)) + "\n")
                raw.write(pair[column] + "\n")


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    here = os.path.dirname(os.path.abspath(__file__))
    parser.add_argument("--corpus", default=os.path.join(here, "..", "data", "austen.txt.xz"))
    parser.add_argument("--out", required=True, help="output directory")
    parser.add_argument("--vocab-size", type=int, default=8000)
    parser.add_argument("--max-docs", type=int, default=0, help="use only the first N documents (0: all)")
    parser.add_argument("--valid-docs", type=int, default=2, help="documents held out for validation")
    parser.add_argument(
        "--pairs-window", type=int, default=0, help="also write lead-sentence pairs over K-sentence windows"
    )
    args = parser.parse_args()
    logging.basicConfig(level=logging.INFO, format="%(asctime)s | %(name)s | %(message)s")

    docs = read_documents(args.corpus)
    if args.max_docs:
        docs = docs[: args.max_docs]
    if len(docs) <= args.valid_docs:
        raise SystemExit(
            f"{args.corpus}: {len(docs)} documents, need more than --valid-docs {args.valid_docs}"
        )
    train, valid = docs[: -args.valid_docs], docs[-args.valid_docs :]
    os.makedirs(args.out, exist_ok=True)
    write_documents(train, os.path.join(args.out, "train.txt"))
    write_documents(valid, os.path.join(args.out, "valid.txt"))
    prefix = os.path.join(args.out, "spm")
    spm.SentencePieceTrainer.train(
        input=os.path.join(args.out, "train.txt"),
        model_prefix=prefix,
        vocab_size=args.vocab_size,
        model_type="unigram",
        character_coverage=1.0,
        num_threads=2,
        # fairseq's dictionary adds its own <s> <pad> </s> <unk>
        bos_id=-1,
        eos_id=-1,
        minloglevel=2,
        hard_vocab_limit=False,  # a small corpus gets a smaller vocabulary instead of an error
    )
    processor = spm.SentencePieceProcessor(model_file=prefix + ".model")
    write_documents(train, os.path.join(args.out, "train.spm"), processor)
    write_documents(valid, os.path.join(args.out, "valid.spm"), processor)
    if args.pairs_window:
        if len(valid) < 2:
            raise SystemExit("--pairs-window needs --valid-docs >= 2 (one valid and one test document)")
        splits = {"train": train, "valid": valid[:1], "test": valid[1:]}
        for split, split_docs in splits.items():
            pairs = lead_pairs(split_docs, args.pairs_window)
            write_pairs(pairs, os.path.join(args.out, split), processor)
            logger.info("%s: %d lead-sentence pairs", split, len(pairs))
    logger.info(
        "%d train / %d valid documents, %d train sentences, vocab %d -> %s",
        len(train),
        len(valid),
        sum(map(len, train)),
        args.vocab_size,
        args.out,
    )


if __name__ == "__main__":
    main()
