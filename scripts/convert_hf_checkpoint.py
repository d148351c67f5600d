#!/usr/bin/env python
"""Convert a Hugging Face model directory (BERT, MiniLM, UniLM fast-QKV, ELECTRA, RoBERTa, XLM-R) into a
fairseq ``unilmv2`` checkpoint: ``OUT/model.pt``, ``OUT/dict.txt`` (the source model's token ids) and
``OUT/model_args.txt`` (the fairseq-train flags of its architecture).

    python scripts/convert_hf_checkpoint.py path/to/hf_model out/minilm
    fairseq-train DATA --user-dir unilm_fairseq --task unilm_seq2seq \\
        --pretrained-checkpoint out/minilm/model.pt $(cat out/minilm/model_args.txt) ...
"""

import argparse
import logging
import sys

from unilm_fairseq.hf_import import FORMATS, ConversionError, convert_hf_checkpoint

logger = logging.getLogger("convert_hf_checkpoint")


def main(argv=None) -> int:
    formatter = argparse.RawDescriptionHelpFormatter
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=formatter)
    parser.add_argument("model_dir", help="Hugging Face model directory (config.json, weights, vocabulary)")
    parser.add_argument("out_dir", help="output directory, created by the conversion")
    parser.add_argument(
        "--model-type",
        choices=sorted(FORMATS),
        help="weight layout, overriding config.json's model_type",
    )
    parser.add_argument("--overwrite", action="store_true", help="replace an existing non-empty OUT_DIR")
    args = parser.parse_args(argv)
    logging.basicConfig(
        level=logging.INFO, format="%(asctime)s | %(levelname)s | %(name)s | %(message)s", force=True
    )
    try:
        convert_hf_checkpoint(args.model_dir, args.out_dir, args.model_type, args.overwrite)
    except ConversionError as err:
        logger.error("%s", err)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
