#!/usr/bin/env python
"""Tokenize raw text files line by line for ``fairseq-preprocess`` with one of fairseq's ``--bpe`` encoders.

    python scripts/tokenize_text.py --bpe wordpiece --wordpiece-vocab vocab.txt \\
        --inputs train.raw.src train.raw.tgt --outputs train.src train.tgt --workers 2
    python scripts/tokenize_text.py --bpe sentencepiece --sentencepiece-model spm.model ...
    python scripts/tokenize_text.py --bpe gpt2 --gpt2-encoder-json vocab.json --gpt2-vocab-bpe merges.txt ...

Each ``--inputs`` file is written, tokens separated by spaces, to the ``--outputs`` file at the same
place (``-`` reads stdin or writes stdout). Every input must exist and no output may be an input or
appear twice (that would overwrite text before it is read); these and an encoder that cannot be built
(a missing or unreadable vocabulary or model) are one error line before anything is written. Line ``i``
of an output is always line ``i`` of its input, and an empty (or blank) line stays empty, so source and
target files stay aligned. Lines end at ``\\n`` only.
The encoder's options are fairseq's own (``--bpe`` picks any registered encoder, including the plugin's
``wordpiece``); every path must be a local file: nothing is downloaded.
"""

import argparse
import contextlib
import logging
import multiprocessing
import multiprocessing.pool
import os
import sys
import time
from typing import Optional

from fairseq.data.encoders import BPE_REGISTRY, build_bpe
from fairseq.dataclass.utils import gen_parser_from_dataclass
from fairseq.registry import REGISTRIES

import unilm_fairseq  # noqa: F401  (registers --bpe wordpiece)
from unilm_fairseq.encoders.text_lines import decoded_lines

logger = logging.getLogger("tokenize_text")

UNSET = "???"  # omegaconf's mandatory-value marker, the default of options such as --sentencepiece-model
REMOTE = ("http://", "https://")
CHUNK_LINES = 256  # lines handed to a worker at a time
PROGRESS_SECONDS = 30  # a progress line at least this often on long inputs

_encoder = None  # one per worker process, built by _init_worker


def _init_worker(args: argparse.Namespace) -> None:
    global _encoder
    _encoder = build_bpe(args)


def encode_line(line: str) -> str:
    """One raw line (newline removed) -> space-separated tokens; a blank line stays empty."""
    if not line.strip():
        return ""
    # whitespace inside a token (a carriage return, U+2028) would split the line for fairseq-preprocess
    return " ".join(_encoder.encode(line).split())


def parse_args(argv=None) -> argparse.Namespace:
    # help comes last, so that `--bpe X --help` lists the options of encoder X too
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter, add_help=False
    )
    parser.add_argument("--bpe", required=True, choices=sorted(BPE_REGISTRY), help="fairseq encoder to apply")
    parser.add_argument("--inputs", nargs="+", required=True, help="raw text files ('-' reads stdin)")
    parser.add_argument(
        "--outputs", nargs="+", required=True, help="tokenized files, one per input ('-' writes stdout)"
    )
    parser.add_argument("--workers", type=int, default=1, help="processes encoding in parallel")
    chosen = argparse.ArgumentParser(add_help=False)
    chosen.add_argument("--bpe")
    dataclass = REGISTRIES["bpe"]["dataclass_registry"].get(chosen.parse_known_args(argv)[0].bpe)
    if dataclass is not None:  # the encoder's own options, named and documented as in fairseq
        gen_parser_from_dataclass(parser, dataclass())
    parser.add_argument("-h", "--help", action="help", help="show this help message and exit")
    args = parser.parse_args(argv)
    unset = [f"--{k.replace('_', '-')}" for k, v in vars(args).items() if v == UNSET]
    if unset:
        parser.error(f"--bpe {args.bpe} needs {', '.join(unset)}")
    remote = [f"--{k.replace('_', '-')} {v}" for k, v in vars(args).items() if str(v).startswith(REMOTE)]
    if remote:  # fairseq's defaults for --bpe gpt2 are URLs it would download
        parser.error(f"give local files, nothing is downloaded: {', '.join(remote)}")
    if len(args.inputs) != len(args.outputs):
        parser.error(f"{len(args.inputs)} --inputs but {len(args.outputs)} --outputs")
    if args.workers < 1:
        parser.error("--workers must be at least 1")
    problem = file_problem(args.inputs, args.outputs)
    if problem:
        parser.error(problem)
    return args


def file_problem(inputs, outputs) -> Optional[str]:
    """What is wrong with the ``--inputs``/``--outputs`` pairing, before anything is opened for writing:
    a missing input, an output written twice, or an output that is also an input (it would be emptied
    before it is read). None when nothing is."""
    missing = [path for path in inputs if path != "-" and not os.path.isfile(path)]
    if missing:
        return f"no such input file: {', '.join(missing)}"
    written = [os.path.realpath(path) for path in outputs if path != "-"]
    twice = sorted({path for path in written if written.count(path) > 1})
    if twice:
        return f"--outputs names {', '.join(twice)} more than once: one would overwrite the other"
    read = {os.path.realpath(path) for path in inputs if path != "-"}
    clobbered = [path for path in outputs if path != "-" and os.path.realpath(path) in read]
    if clobbered:
        return f"--outputs {', '.join(clobbered)} is also an input: it would be emptied before it is read"
    return None


def _open(path: str, mode: str, stack: contextlib.ExitStack):
    if path == "-":
        return sys.stdin.buffer if "r" in mode else sys.stdout
    if "r" in mode:  # bytes: each line is decoded alone, so a bad byte is reported with its line
        return stack.enter_context(open(path, "rb"))
    # newline="\n": a stray carriage return is whitespace inside a line, not a line break
    return stack.enter_context(open(path, mode, encoding="utf-8", newline="\n"))


def tokenize_file(source: str, destination: str, pool: Optional[multiprocessing.pool.Pool]) -> None:
    with contextlib.ExitStack() as stack:
        reader, writer = _open(source, "r", stack), _open(destination, "w", stack)
        lines = decoded_lines(reader, source)
        encoded = pool.imap(encode_line, lines, chunksize=CHUNK_LINES) if pool else map(encode_line, lines)
        num_lines = num_empty = num_tokens = 0
        last_report = time.monotonic()
        for tokens in encoded:
            writer.write(tokens + "\n")
            num_lines += 1
            num_empty += not tokens
            num_tokens += len(tokens.split())
            if time.monotonic() - last_report >= PROGRESS_SECONDS:
                logger.info("%s: %d lines, %d tokens so far", source, num_lines, num_tokens)
                last_report = time.monotonic()
    logger.info(
        "%s -> %s: %d lines (%d empty), %d tokens", source, destination, num_lines, num_empty, num_tokens
    )


def main(argv=None) -> None:
    logging.basicConfig(level=logging.INFO, format="%(asctime)s | %(name)s | %(message)s", stream=sys.stderr)
    args = parse_args(argv)
    try:
        _init_worker(args)  # fails here, once, on a bad option or a missing or unreadable file
    except (OSError, ValueError, RuntimeError) as error:  # sentencepiece reports a bad model as RuntimeError
        message = str(error)
        sys.exit(f"error: {message if message.startswith('--bpe') else f'--bpe {args.bpe}: {message}'}")
    with contextlib.ExitStack() as stack:
        pool = None
        if args.workers > 1:
            pool = stack.enter_context(multiprocessing.Pool(args.workers, _init_worker, (args,)))
        for source, destination in zip(args.inputs, args.outputs):
            try:
                tokenize_file(source, destination, pool)
            except (OSError, ValueError) as error:
                sys.exit(f"error: {error} ({destination} is incomplete)")


if __name__ == "__main__":
    main()
