#!/usr/bin/env python
"""Build the embedded demo corpus from Jane Austen's novels (Project Gutenberg text).

Writes one sentence per line with an empty line between documents (chapters),
the layout ``--sample-break-mode complete_doc`` expects, compressed with xz.
Headings (CHAPTER, VOLUME, titles) are dropped and hard-wrapped lines joined.
Run once by maintainers; the product only reads the committed output.
"""

import argparse
import lzma
import re

CHAPTER = re.compile(r"^(CHAPTER|Chapter)\s+[\dIVXLC]+\.?\s*$")
HEADING = re.compile(r"^[A-Z0-9 .,'\-:;]+$")  # all-caps lines: titles, VOLUME markers
# split after ., ! or ? (optionally closed by quotes/brackets) followed by space and a capital or quote
ABBREVIATION = re.compile(r"\b(Mr|Mrs|Dr|St|Col|Capt|Gen|Esq|Rev|Sir)\.$")
SENTENCE_END = re.compile(r"(?<=[.!?])([\"')\]]*)\s+(?=[\"'(\[]?[A-Z])")


def paragraphs(lines):
    buf = []
    for line in lines:
        line = line.strip()
        if line:
            buf.append(line)
        elif buf:
            yield " ".join(buf)
            buf = []
    if buf:
        yield " ".join(buf)


def sentences(paragraph):
    pieces = SENTENCE_END.split(paragraph)
    # re.split keeps the captured closing quotes as separate items: glue them back
    out = []
    for i in range(0, len(pieces), 2):
        closing = pieces[i + 1] if i + 1 < len(pieces) else ""
        piece = (pieces[i] + closing).strip()
        if out and ABBREVIATION.search(out[-1]):
            out[-1] = f"{out[-1]} {piece}"  # "Mr. Weston" is one sentence
        else:
            out.append(piece)
    return [s for s in out if s]


def build(text):
    docs, current = [], []
    for para in paragraphs(text.splitlines()):
        if CHAPTER.match(para):
            if current:
                docs.append(current)
            current = []
        elif HEADING.match(para) or para.startswith("By Jane Austen"):
            continue
        else:
            current.extend(sentences(para))
    if current:
        docs.append(current)
    return docs


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("source", help="austen.txt")
    parser.add_argument("output", help="output .txt.xz")
    args = parser.parse_args()
    with open(args.source, encoding="utf-8") as f:
        docs = build(f.read())
    with lzma.open(args.output, "wt", encoding="utf-8", preset=9) as out:
        out.write("\n\n".join("\n".join(doc) for doc in docs) + "\n")
    print(f"{len(docs)} documents, {sum(map(len, docs))} sentences -> {args.output}")


if __name__ == "__main__":
    main()
