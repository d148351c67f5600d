#!/usr/bin/env python
"""Generate from a model folder for new source texts: one output line per input line, in input order.

    python scripts/generate_text.py run/checkpoints --input new_sources.txt --output summaries.txt
    python scripts/generate_text.py run/checkpoints "a source text" "another source text"
    cat new_sources.txt | python scripts/generate_text.py run/checkpoints --input - > summaries.txt

The folder is one that ``examples/s2s_ft/finetune.sh`` and the paper recipes leave (``WORK_DIR/checkpoints``:
checkpoint, dictionaries, tokenizer and ``generation.json``), an s2s-ft (``unilm_seq2seq``) or a PALM
(``palm_seq2seq``) model; it loads as ``UniLMModel.from_pretrained(FOLDER)`` does (``docs/api.md``). Sources
are raw text, one per line, tokenized with the folder's tokenizer. The decoding settings are the folder's
``generation.json``, those its test set was decoded with; each option below overrides one. A blank input line
gets an empty output line, so the output stays aligned with the input, and the count of them is logged. A
UTF-8 byte-order mark at the start of the input is dropped; a line that is not UTF-8 is an error naming it.
"""

import argparse
import logging
import sys
import time
from typing import List

from unilm_fairseq.encoders.text_lines import decoded_lines, missing_output_folder, read_lines
from unilm_fairseq.hub import load_model_folder, log_for_decoding_scripts

logger = logging.getLogger("generate_text")

# the decoding options, as fairseq-generate names them (``--lenpen`` is ``lenpen``): None keeps the folder's
DECODING_OPTIONS = {
    "beam": int,
    "lenpen": float,
    "min_len": int,
    "max_len_a": float,
    "max_len_b": int,
    "no_repeat_ngram_size": int,
}


def parse_args(argv=None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("model_dir", help="the model folder (finetune.sh's WORK_DIR/checkpoints)")
    parser.add_argument("texts", nargs="*", help="source texts (or --input)")
    parser.add_argument("--input", help="a file of source texts, one per line; - reads standard input")
    parser.add_argument("--output", help="where the outputs go, one per line [standard output]")
    parser.add_argument("--checkpoint-file", help="the checkpoint in the folder [generation.json's]")
    for name, kind in DECODING_OPTIONS.items():
        parser.add_argument("--" + name.replace("_", "-"), type=kind, help="[generation.json's]")
    parser.add_argument("--batch-size", type=int, default=32, help="sources per batch [%(default)s]")
    parser.add_argument(
        "--chunk-lines",
        type=int,
        default=512,
        help="input lines read per step, logged as progress [%(default)s]",
    )
    parser.add_argument("--cpu", action="store_true", help="generate on the CPU even if CUDA is available")
    args = parser.parse_args(argv)
    if bool(args.texts) == bool(args.input):
        parser.error("give source texts or --input FILE (one of them)")
    missing = missing_output_folder([("--output", args.output)])
    if missing:
        parser.error(missing)  # before the decoding, not after it
    for name in ("batch_size", "chunk_lines", "beam"):
        value = getattr(args, name)
        if value is not None and value < 1:
            parser.error(f"--{name.replace('_', '-')} must be at least 1, not {value}")
    return args


def read_sources(args) -> List[str]:
    if args.texts:
        return list(args.texts)
    if args.input == "-":
        return list(decoded_lines(sys.stdin.buffer, "<stdin>"))
    return read_lines(args.input)


def generate_lines(hub, sources: List[str], settings, batch_size: int, chunk_lines: int) -> List[str]:
    """One output per source, in order; a blank source gets ``""`` without being decoded."""
    outputs = [""] * len(sources)
    todo = [i for i, text in enumerate(sources) if text.strip()]
    if len(todo) < len(sources):
        logger.info("%d blank input lines: empty outputs, not decoded", len(sources) - len(todo))
    start = time.monotonic()
    for begin in range(0, len(todo), chunk_lines):
        chunk = todo[begin : begin + chunk_lines]
        for index, text in zip(
            chunk, hub.generate([sources[i] for i in chunk], batch_size=batch_size, **settings)
        ):
            outputs[index] = text
        done = begin + len(chunk)
        logger.info("generated %d of %d sources (%.1f s)", done, len(todo), time.monotonic() - start)
    return outputs


def main(argv=None) -> int:
    args = parse_args(argv)
    log_for_decoding_scripts(logger)
    try:
        sources = read_sources(args)
        hub = load_model_folder(args.model_dir, args.checkpoint_file, args.cpu)
    except (OSError, ValueError) as error:  # a missing folder or checkpoint, a bad generation.json or input
        print(f"error: {error}", file=sys.stderr)
        return 1
    except RuntimeError as error:  # torch on a checkpoint cut short or not a checkpoint at all
        print(f"error: {args.model_dir}: cannot load its checkpoint ({error})", file=sys.stderr)
        return 1
    settings = {name: getattr(args, name) for name in DECODING_OPTIONS if getattr(args, name) is not None}
    try:
        outputs = generate_lines(hub, sources, settings, args.batch_size, args.chunk_lines)
    except ValueError as error:  # a setting the search cannot honour (e.g. --min-len beyond the positions)
        print(f"error: {error}", file=sys.stderr)
        return 1
    text = "".join(line + "\n" for line in outputs)
    if args.output:
        with open(args.output, "w", encoding="utf-8") as f:
            f.write(text)
        logger.info("%d outputs -> %s", len(outputs), args.output)
    else:
        sys.stdout.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
