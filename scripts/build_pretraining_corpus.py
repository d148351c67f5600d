#!/usr/bin/env python
"""Build a pre-training corpus for ``--task pmlm`` from English prose that installs offline.

    sudo scripts/setup_corpus_sources.sh            # the Debian documentation packages read below
    python scripts/build_pretraining_corpus.py --wordpiece-vocab MODEL/dict.txt --output corpus \\
        --shard-tokens 10000000 --workers 2
    fairseq-train "$(cat corpus/DATA)" --user-dir unilm_fairseq --task pmlm --criterion ae_par ...

Reads each source (``--sources``, default all; ``--list-sources`` says what each is and why it is
there) one document at a time -- a page, a manual, a chapter, a paper, a group of dictionary entries --
extracts its prose (HTML with html.parser, code blocks and navigation left out; POD and roff parsed;
see ``unilm_fairseq/prepare/corpus_text.py``), splits it into sentences, drops exact duplicates (a digest
of the case- and space-normalized text), and holds out whole documents for validation (a fixed share,
chosen by the digest, so a rebuild holds out the same ones). Empty, binary and non-UTF-8 files and
duplicate documents are skipped and counted. The text is WordPiece-tokenized with the model's vocabulary
(``--wordpiece-vocab``; lowercased when the vocabulary is uncased, as for MiniLM), written one sentence
per line with an empty line between documents (what ``--sample-break-mode complete_doc`` reads), spread
over shards at random (each shard a mix of all sources) and binarized with ``fairseq-preprocess
--only-source --srcdict``. The output is fairseq's sharded layout: ``OUTPUT/shard0``, ``OUTPUT/shard1``,
... each with ``train.{bin,idx}``, ``valid.{bin,idx}`` (the same held-out set in every shard; fairseq
reads it from the first) and ``dict.txt``; ``OUTPUT/DATA`` holds the colon-separated list to pass as
fairseq's data argument (one shard per epoch), ``OUTPUT/summary.txt`` the counts per source.

The sources are English written by people, in quantity, under licences that allow redistribution, and
installable offline: Debian's documentation packages (Python, Perl, PostgreSQL, Git, Linux, Java, Rust,
SciPy and more), manual pages and Info manuals for technical prose; the King James Bible and the embedded
Austen novels for long narrative; ACLSum's train papers for scientific prose (never their summaries, never
the val/test papers); GCIDE (Webster's 1913), FOLDOC, the Jargon File, the Devil's Dictionary and fortune
files for definitions, quotations and wit. Measured on Debian 12 with MiniLM's vocabulary, all of them give
56.7M WordPiece tokens in 45,765 documents (GCIDE 11.1M, manual pages 6.0M, the Java API 5.5M, the Linux
documentation 5.5M, Perl 2.3M, Vim's help 2.2M, Python 1.8M, ...), built in about 6 minutes with 2
workers into 159 MB; docs/pretraining.md has the table per source. Package descriptions from apt or dpkg
(kept for an independent evaluation), changelogs and copyright files are never read.
"""

import argparse
import logging
import math
import os
import random
import shutil
import subprocess
import sys
import time
from collections import Counter, defaultdict
from multiprocessing import Pool

from unilm_fairseq.prepare.corpus_build import BoundedFeed, CorpusStats, init_worker, process_item
from unilm_fairseq.prepare.corpus_sources import LOCAL_PATTERNS, SOURCES, local_source

logger = logging.getLogger("build_pretraining_corpus")
REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PROGRESS_SECONDS = 30
ITEMS_IN_FLIGHT = 256  # work items handed to the pool ahead of the results read back
CHUNK_ITEMS = 8  # items per task sent to a worker
OUTPUT_MARKS = {"DATA", "summary.txt", "text", "shard0"}  # what an earlier build leaves in --output
SHARD_SEED = 1


def parse_args(argv=None):
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--output", help="output directory (shards, DATA, summary.txt)")
    parser.add_argument("--wordpiece-vocab", help="the model's vocabulary: its dict.txt or BERT vocab.txt")
    parser.add_argument(
        "--sources",
        default="all",
        help=f"comma-separated sources to read, or 'all' (default; sources not installed are skipped with "
        f"a warning): {','.join(SOURCES)}",
    )
    parser.add_argument(
        "--local-dir",
        help="also read the files of this folder as the source 'local', by extension ("
        + " ".join(p for p, _ in LOCAL_PATTERNS)
        + "); '--sources local' reads only them",
    )
    parser.add_argument("--list-sources", action="store_true", help="describe the sources and exit")
    size = parser.add_mutually_exclusive_group()
    size.add_argument(
        "--shard-tokens", type=int, default=20_000_000, help="training tokens per shard (about)"
    )
    size.add_argument("--shards", type=int, help="number of shards (instead of --shard-tokens)")
    parser.add_argument("--max-tokens", type=int, default=0, help="stop after this many tokens (0: no cap)")
    parser.add_argument(
        "--valid-fraction", type=float, default=0.005, help="share of documents held out for validation"
    )
    parser.add_argument("--workers", type=int, default=1, help="processes for extraction and binarizing")
    parser.add_argument("--keep-text", action="store_true", help="keep the tokenized text under OUTPUT/text")
    parser.add_argument("--overwrite", action="store_true", help="replace an existing OUTPUT")
    args = parser.parse_args(argv)
    if args.list_sources:
        return args
    if not args.output or not args.wordpiece_vocab:
        parser.error("--output and --wordpiece-vocab are required")
    if not os.path.isfile(args.wordpiece_vocab):
        parser.error(f"--wordpiece-vocab {args.wordpiece_vocab}: no such file")
    if args.workers < 1:
        parser.error("--workers must be at least 1")
    if (args.shards is not None and args.shards < 1) or args.shard_tokens < 1:
        parser.error("--shards and --shard-tokens must be positive")
    if not 0 <= args.valid_fraction < 1:
        parser.error("--valid-fraction must be in [0, 1)")
    if os.path.exists(args.output) and not os.path.isdir(args.output):
        parser.error(f"--output {args.output} is a file, not a folder")
    if os.path.exists(args.output) and os.listdir(args.output):
        if not args.overwrite:
            parser.error(f"--output {args.output} exists and is not empty (add --overwrite)")
        if not set(os.listdir(args.output)) & OUTPUT_MARKS:
            parser.error(f"--output {args.output} holds files but no corpus (--overwrite replaces a corpus)")
    if args.local_dir:
        if not os.path.isdir(args.local_dir):
            parser.error(f"--local-dir {args.local_dir}: not a folder")
        SOURCES["local"] = local_source(args.local_dir)
    names = (
        list(SOURCES) if args.sources == "all" else [s.strip() for s in args.sources.split(",") if s.strip()]
    )
    unknown = [n for n in names if n not in SOURCES]
    if unknown or not names:
        parser.error(f"--sources: unknown {unknown or 'empty list'}; choose from {','.join(SOURCES)}")
    args.source_names = []
    for name in names:
        problem = SOURCES[name].available()
        if problem and args.sources != "all":
            parser.error(f"--sources {name}: {problem}")
        if problem:
            logger.warning("source %s left out: %s", name, problem)
        else:
            args.source_names.append(name)
    if not args.source_names:
        parser.error("no source is installed (run scripts/setup_corpus_sources.sh)")
    return args


def work_items(names):
    for name in names:
        source = SOURCES[name]
        yield from source.items(source)


def extract(args, text_dir, stats: CorpusStats):
    """Read, deduplicate, hold out and tokenize; write text_dir/{train.all,valid}.txt."""
    seen = set()
    valid_threshold = int(args.valid_fraction * 2**32)
    last = previous = time.monotonic()
    with open(os.path.join(text_dir, "train.all.txt"), "w", encoding="utf-8") as train, open(
        os.path.join(text_dir, "valid.txt"), "w", encoding="utf-8"
    ) as valid, Pool(args.workers, init_worker, (args.wordpiece_vocab,)) as pool:
        started = {"train": False, "valid": False}
        feed = BoundedFeed(work_items(args.source_names), ITEMS_IN_FLIGHT)
        for result in pool.imap(process_item, feed, chunksize=CHUNK_ITEMS):
            feed.done()
            source, status, lines, num_bytes, digest = result
            per = stats.sources[source]
            per["files"] += 1
            per["bytes"] += num_bytes
            now = time.monotonic()
            per["seconds"] += now - previous  # sources are read in turn: the wait is this one's
            previous = now
            if status != "ok":
                per[status] += 1
            elif digest in seen:
                per["duplicate"] += 1
            else:
                seen.add(digest)
                split = "valid" if int.from_bytes(digest[:4], "big") < valid_threshold else "train"
                out = valid if split == "valid" else train
                if started[split]:
                    out.write("\n")  # the empty line between documents
                out.write("\n".join(lines) + "\n")
                started[split] = True
                tokens = sum(len(line.split()) for line in lines)
                per[f"{split}_documents"] += 1
                per[f"{split}_sentences"] += len(lines)
                per[f"{split}_tokens"] += tokens
                stats.tokens += tokens
            if time.monotonic() - last >= PROGRESS_SECONDS:
                last = time.monotonic()
                logger.info("progress: %s", stats.progress(source))
            if args.max_tokens and stats.tokens >= args.max_tokens:
                logger.info("--max-tokens %d reached", args.max_tokens)
                feed.stop()
                pool.terminate()
                break


def split_shards(text_dir, num_shards):
    """Spread the training documents of train.all.txt over shardK.txt: each run of ``num_shards``
    documents goes one to each shard in a seeded random order, so every shard mixes all sources and
    gets the same number of documents (give or take one)."""
    rng = random.Random(SHARD_SEED)
    outs = [open(os.path.join(text_dir, f"shard{k}.txt"), "w", encoding="utf-8") for k in range(num_shards)]
    started = [False] * num_shards
    order = []
    try:
        with open(os.path.join(text_dir, "train.all.txt"), encoding="utf-8") as f:
            for document in _documents(f):
                if not order:
                    order = rng.sample(range(num_shards), num_shards)
                k = order.pop()
                if started[k]:
                    outs[k].write("\n")  # the empty line between documents
                outs[k].writelines(document)
                started[k] = True
    finally:
        for out in outs:
            out.close()
    os.remove(os.path.join(text_dir, "train.all.txt"))
    if not all(started):
        raise SystemExit(
            f"error: {started.count(False)} of {num_shards} shards got no document: use fewer --shards"
        )


def _documents(lines):
    """Lists of lines between empty lines."""
    document = []
    for line in lines:
        if line.strip():
            document.append(line)
        elif document:
            yield document
            document = []
    if document:
        yield document


def binarize(args, text_dir, num_shards):
    """fairseq-preprocess each shard with the model's dictionary; the valid set goes in every shard."""
    for k in range(num_shards):
        destdir = os.path.join(args.output, f"shard{k}")
        command = [
            "fairseq-preprocess", "--user-dir", os.path.join(REPO, "unilm_fairseq"), "--task", "pmlm",
            "--only-source", "--srcdict", args.wordpiece_vocab, "--destdir", destdir,
            "--trainpref", os.path.join(text_dir, f"shard{k}.txt"), "--workers", str(args.workers),
        ]  # fmt: skip
        if k == 0:
            command += ["--validpref", os.path.join(text_dir, "valid.txt")]
        logger.info("binarizing shard%d: %s", k, " ".join(command))
        started = time.monotonic()
        log_path = os.path.join(text_dir, f"preprocess{k}.log")
        with open(log_path, "w") as log:
            process = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT)
            while process.poll() is None:
                try:
                    process.wait(PROGRESS_SECONDS)
                except subprocess.TimeoutExpired:
                    logger.info(
                        "progress: binarizing shard%d/%d, %.0f s", k, num_shards, time.monotonic() - started
                    )
        if process.returncode:
            with open(log_path) as log:
                tail = log.read()[-2000:]
            raise SystemExit(
                f"error: fairseq-preprocess failed on shard{k} (exit {process.returncode}):\n{tail}"
            )
        if k:
            for suffix in ("bin", "idx"):
                first = os.path.join(args.output, "shard0", f"valid.{suffix}")
                _link_or_copy(first, os.path.join(destdir, f"valid.{suffix}"))


def _link_or_copy(source, destination):
    try:
        os.link(source, destination)
    except OSError:
        shutil.copyfile(source, destination)


def disk_bytes(path):
    return sum(os.path.getsize(os.path.join(d, f)) for d, _, files in os.walk(path) for f in files)


def main(argv=None):
    logging.basicConfig(
        level=logging.INFO, format="%(asctime)s | %(levelname)s | %(name)s | %(message)s", force=True
    )
    args = parse_args(argv)
    if args.list_sources:
        for source in SOURCES.values():
            problem = source.available()
            print(f"{source.name:18} {source.package}: {source.why}" + (f" [{problem}]" if problem else ""))
        return 0
    started = time.monotonic()
    if os.path.exists(args.output):
        shutil.rmtree(args.output)
    text_dir = os.path.join(args.output, "text")
    os.makedirs(text_dir)
    stats = CorpusStats(defaultdict(Counter), 0, started)
    logger.info("sources: %s", ", ".join(args.source_names))
    extract(args, text_dir, stats)
    train_tokens = sum(per["train_tokens"] for per in stats.sources.values())
    valid_documents = sum(per["valid_documents"] for per in stats.sources.values())
    if not train_tokens or not valid_documents:
        raise SystemExit(
            f"error: {train_tokens} training tokens and {valid_documents} held-out documents: need both "
            "(more sources, a larger --max-tokens or --valid-fraction)"
        )
    num_shards = args.shards or max(1, math.ceil(train_tokens / args.shard_tokens))
    logger.info("extracted in %.0f s; spreading %d training tokens over %d shards",
                time.monotonic() - started,
                train_tokens, num_shards)  # fmt: skip
    split_shards(text_dir, num_shards)
    binarize(args, text_dir, num_shards)
    if not args.keep_text:
        shutil.rmtree(text_dir)
    data = ":".join(os.path.join(os.path.abspath(args.output), f"shard{k}") for k in range(num_shards))
    with open(os.path.join(args.output, "DATA"), "w") as f:
        f.write(data + "\n")
    summary = stats.summary(num_shards, disk_bytes(args.output), data)
    with open(os.path.join(args.output, "summary.txt"), "w", encoding="utf-8") as f:
        f.write(summary + "\n")
    for line in summary.splitlines():
        logger.info("%s", line)
    return 0


if __name__ == "__main__":
    sys.exit(main())
