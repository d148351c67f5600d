#!/usr/bin/env python
"""Make a checkpoint folder a model folder: ``UniLMModel.from_pretrained(FOLDER)`` then loads it with one
argument and generates from text with the settings the test set was decoded with.

    python scripts/write_model_folder.py WORK/checkpoints --dicts WORK/bin --checkpoint checkpoint_best.pt \\
        --bpe wordpiece --bpe-file MODEL/dict.txt --beam 5 --lenpen 1.0 --min-len 20 --max-len-b 48 \\
        --no-repeat-ngram-size 3

Copies the binarized data's ``dict.src.txt`` and ``dict.tgt.txt`` and the tokenizer's file (as
``vocab.txt`` for WordPiece, ``spm.model`` for sentencepiece) into FOLDER, and writes ``generation.json``:
the checkpoint to load, the tokenizer, the decoding settings and, with ``--lowercase`` or ``--cased``, how
the training text was cased (``unilm_fairseq/hub/base.py`` reads it). The recipes run this after their
generate stage; ``scripts/generate_text.py FOLDER --input FILE`` then generates for a file of new sources.
"""

import argparse
import json
import os
import shutil
import sys

BPE_FILE_NAMES = {"wordpiece": "vocab.txt", "sentencepiece": "spm.model"}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("folder", help="the checkpoint folder (fairseq's --save-dir)")
    parser.add_argument(
        "--dicts", required=True, help="the binarized data folder (dict.src.txt, dict.tgt.txt)"
    )
    parser.add_argument("--checkpoint", required=True, help="the checkpoint file in FOLDER that was decoded")
    parser.add_argument("--bpe", choices=["wordpiece", "sentencepiece", "none"], required=True)
    parser.add_argument("--bpe-file", help="the WordPiece vocabulary or sentencepiece model (not for none)")
    parser.add_argument("--beam", type=int, required=True)
    parser.add_argument("--lenpen", type=float, required=True)
    parser.add_argument("--lenpen-style", choices=["fairseq", "gnmt"])
    parser.add_argument("--min-len", type=int, required=True)
    parser.add_argument("--max-len-a", type=float, default=0)
    parser.add_argument("--max-len-b", type=int, required=True)
    parser.add_argument("--no-repeat-ngram-size", type=int, required=True)
    parser.add_argument("--no-repeat-ngram-exempt", help="space-separated symbols never blocked")
    casing = parser.add_mutually_exclusive_group()
    casing.add_argument(
        "--lowercase", dest="lowercase", action="store_true", default=None,
        help="the training text was lowercased: so is the hub's input (by default the vocabulary decides)",
    )  # fmt: skip
    casing.add_argument(
        "--cased", dest="lowercase", action="store_false", help="the training text kept its case"
    )
    args = parser.parse_args(argv)
    if (args.bpe == "none") != (args.bpe_file is None):
        parser.error("--bpe-file goes with --bpe wordpiece or sentencepiece, and only with them")
    needed = [os.path.join(args.dicts, f"dict.{side}.txt") for side in ("src", "tgt")]
    needed += [os.path.join(args.folder, args.checkpoint)] + ([args.bpe_file] if args.bpe_file else [])
    missing = [path for path in needed if not os.path.isfile(path)]
    if missing:
        print(f"error: {missing[0]}: no such file", file=sys.stderr)
        return 1
    copies = [(path, os.path.join(args.folder, os.path.basename(path))) for path in needed[:2]]
    if args.bpe_file:
        copies.append((args.bpe_file, os.path.join(args.folder, BPE_FILE_NAMES[args.bpe])))
    for source, destination in copies:  # a folder's own files (its settings rewritten) stay as they are
        if not (os.path.exists(destination) and os.path.samefile(source, destination)):
            shutil.copyfile(source, destination)
    settings = {
        "checkpoint": args.checkpoint,
        "bpe": None if args.bpe == "none" else args.bpe,
        "beam": args.beam,
        "lenpen": args.lenpen,
        "min_len": args.min_len,
        "max_len_a": args.max_len_a,
        "max_len_b": args.max_len_b,
        "no_repeat_ngram_size": args.no_repeat_ngram_size,
        "lowercase": args.lowercase,
    }
    if args.lenpen_style:
        settings["lenpen_style"] = args.lenpen_style
    if args.no_repeat_ngram_exempt:
        settings["no_repeat_ngram_exempt"] = args.no_repeat_ngram_exempt.split()
    settings = {key: value for key, value in settings.items() if value is not None}
    with open(os.path.join(args.folder, "generation.json"), "w", encoding="utf-8") as f:
        json.dump(settings, f)
        f.write("\n")
    generate_text = os.path.relpath(
        os.path.join(os.path.dirname(os.path.abspath(__file__)), "generate_text.py")
    )
    print(f"== model folder: {args.folder} (dictionaries, tokenizer, generation.json)")
    print(f"   new sources, one a line: python {generate_text} {args.folder} --input FILE")
    print(
        f'   in Python: from_pretrained("{args.folder}").generate("text") of UniLMModel (s2s-ft) or '
        "PALMHubInterface"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
