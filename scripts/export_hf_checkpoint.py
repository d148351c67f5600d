#!/usr/bin/env python
"""Export a fairseq ``unilmv2`` checkpoint (pre-trained by --task pmlm or unilm, fine-tuned by --task
unilm_seq2seq, or written by convert_hf_checkpoint.py) into a Hugging Face model directory: ``config.json``,
the weights, ``vocab.txt`` (the model's token ids, one per line) and ``tokenizer_config.json``.

    python scripts/export_hf_checkpoint.py checkpoints/checkpoint_best.pt out/bert              # transformers
    python scripts/export_hf_checkpoint.py checkpoints/checkpoint_best.pt out/unilm --format unilm

--format bert   transformers' BertForMaskedLM / BertModel (model.safetensors); no relative position bias
--format unilm  UniLM's fused "fast QKV" layout of the released UniLMv2/MiniLM checkpoints, with
                rel_pos_bias (pytorch_model.bin); s2s-ft's run_seq2seq.py --model_type unilm starts from it
--format s2s-ft separate query/key/value with rel_pos_bias (pytorch_model.bin): what s2s-ft's
                decode_seq2seq.py --model_path reads

Task heads (classification, span) are left out, with a warning naming them. Every export writes a model
card, README.md: the base model, the architecture, the training settings, and what the model folder holds
beside the checkpoint (generation.json, scores.json and commands.sh, which examples/s2s_ft/finetune.sh
writes). A model fine-tuned by --task unilm_seq2seq also gets generation.json (the s2s-ft method, limits,
segment ids and decoding settings) and, with --format bert and a WordPiece vocabulary, generate.py, which
generates from the folder with plain transformers:

    python out/bert/generate.py out/bert "A text to summarize."
"""

import argparse
import logging
import sys

from unilm_fairseq.encoders.wordpiece_tokenizer import add_casing_arguments
from unilm_fairseq.hf_export import LAYOUTS, ExportError, export_checkpoint
from unilm_fairseq.hf_export.model_card import command_line

logger = logging.getLogger("export_hf_checkpoint")


def main(argv=None) -> int:
    formatter = argparse.RawDescriptionHelpFormatter
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=formatter)
    parser.add_argument("checkpoint", help="fairseq checkpoint of a unilmv2 model (.pt)")
    parser.add_argument("out_dir", help="output directory, created by the export")
    parser.add_argument(
        "--format", choices=list(LAYOUTS), default="bert", help="target layout (default bert)"
    )
    parser.add_argument(
        "--data", help="folder with the dictionary of the checkpoint's task, when it has moved since training"
    )
    add_casing_arguments(
        parser,
        lowercase_help="tokenizer_config.json: do_lower_case true (by default the vocabulary decides: cased "
        "when it has entries with cased letters, as --bpe wordpiece decides)",
        cased_help="do_lower_case false",
    )
    parser.add_argument("--overwrite", action="store_true", help="replace an existing non-empty OUT_DIR")
    args = parser.parse_args(argv)
    logging.basicConfig(  # fairseq's format; force: importing the plugin may have configured logging already
        level=logging.INFO,
        format="%(asctime)s | %(levelname)s | %(name)s | %(message)s",
        datefmt="%Y-%m-%d %H:%M:%S",
        force=True,
    )
    try:
        export_checkpoint(
            args.checkpoint,
            args.out_dir,
            args.format,
            args.data,
            args.lowercase,
            overwrite=args.overwrite,
            command=command_line(
                ["python", "scripts/export_hf_checkpoint.py"] + list(sys.argv[1:] if argv is None else argv)
            ),
        )
    except ExportError as err:
        logger.error("%s", err)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
