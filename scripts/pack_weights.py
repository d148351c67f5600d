#!/usr/bin/env python
"""Pack a checkpoint's weights small enough for the repository, or put packed weights into a checkpoint.

    python scripts/pack_weights.py pack CHECKPOINT OUT.pt.xz
    python scripts/pack_weights.py unpack PACKED.pt.xz BASE_MODEL.pt OUT_MODEL.pt

``pack`` keeps only the model's weights of a fairseq checkpoint: int8 rows with a float16 scale each, other
tensors as float16, xz-compressed (``unilm_fairseq/checkpoint/packed_weights.py``). ``unpack`` writes
``BASE_MODEL.pt`` (a checkpoint of the same architecture, such as ``scripts/convert_hf_checkpoint.py``'s
``model.pt``, which brings its config) with the packed weights in place of its own; a packed tensor that the
base lacks, or of another shape, is an error, and so is a base weight the packed file lacks, except the
pooler: it is frozen (never trained), so the base's own values are the ones training would have kept, and
weights packed before the importer kept it still unpack. The main job unpacks
``data/minilm-continued-ae.pt.xz`` this way onto the converted MiniLM (docs/results.md says how those
weights were made).
"""

import argparse
import logging
import os
import sys

import torch

from unilm_fairseq.checkpoint.packed_weights import (
    PACKED_KEY,
    pack_state_dict,
    read_packed,
    unpack_state_dict,
    write_packed,
)
from unilm_fairseq.models.unilmv2 import POOLER

logger = logging.getLogger("pack_weights")


def load_checkpoint(path: str):
    if not os.path.isfile(path):
        raise ValueError(f"{path}: no such file")
    try:
        state = torch.load(path, map_location="cpu", weights_only=True)
    except Exception as error:  # torch raises several types for a file that is not a checkpoint
        raise ValueError(f"{path}: not a fairseq checkpoint ({type(error).__name__}: {error})") from error
    if not isinstance(state, dict) or "model" not in state:
        raise ValueError(f"{path}: not a fairseq checkpoint (no 'model' weights)")
    return state


def pack(checkpoint: str, output: str) -> None:
    weights = load_checkpoint(checkpoint)["model"]
    write_packed(pack_state_dict(weights), output)
    logger.info("packed %d tensors of %s into %s (%.1f MB)", len(weights), checkpoint, output,
                os.path.getsize(output) / 1e6)  # fmt: skip


def unpack(packed_path: str, base: str, output: str) -> None:
    weights = unpack_state_dict(read_packed(packed_path))
    state = load_checkpoint(base)
    own = state["model"]
    carried = sorted(k for k in own if k.startswith(POOLER) and k not in weights)
    if carried:  # frozen, so training keeps the base's values
        logger.info("%s has no %s: keeping %s's (frozen, never trained)", packed_path, carried, base)
        weights.update((k, own[k]) for k in carried)
    missing, extra = sorted(set(own) - set(weights)), sorted(set(weights) - set(own))
    if missing or extra:
        raise ValueError(
            f"{packed_path} does not fit {base}: {len(missing)} weights missing (first {missing[:3]}), "
            f"{len(extra)} unknown (first {extra[:3]})"
        )
    wrong = [name for name in own if own[name].shape != weights[name].shape]
    if wrong:
        raise ValueError(f"{packed_path} does not fit {base}: other shapes for {wrong[:3]}")
    state["model"] = {name: weights[name].to(own[name].dtype) for name in own}
    state.pop("last_optimizer_state", None)
    # the model card of an export says where the weights came from (hf_export/model_card.py)
    state["extra_state"] = {**(state.get("extra_state") or {}), PACKED_KEY: os.path.abspath(packed_path)}
    os.makedirs(os.path.dirname(os.path.abspath(output)), exist_ok=True)
    torch.save(state, output)
    logger.info("wrote %s: %s with the weights of %s", output, base, packed_path)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    commands = parser.add_subparsers(dest="command", required=True)
    packer = commands.add_parser("pack", help="a checkpoint's weights -> packed .pt.xz")
    packer.add_argument("checkpoint")
    packer.add_argument("output")
    unpacker = commands.add_parser("unpack", help="packed weights onto a checkpoint of the same architecture")
    unpacker.add_argument("packed")
    unpacker.add_argument("base")
    unpacker.add_argument("output")
    args = parser.parse_args(argv)
    logging.basicConfig(
        format="%(asctime)s | %(levelname)s | %(name)s | %(message)s", level=logging.INFO, force=True
    )
    try:
        if args.command == "pack":
            pack(args.checkpoint, args.output)
        else:
            unpack(args.packed, args.base, args.output)
    except (OSError, ValueError) as error:
        logger.error("%s", error)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
