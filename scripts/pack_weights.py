#!/usr/bin/env python
"""Pack a checkpoint's weights small enough for the repository, put packed weights into a checkpoint, or
make a training run's checkpoint the start of another run.

    python scripts/pack_weights.py pack CHECKPOINT OUT.pt.xz
    python scripts/pack_weights.py unpack PACKED.pt.xz BASE_MODEL.pt OUT_MODEL.pt
    python scripts/pack_weights.py start CHECKPOINT OUT_MODEL.pt

``pack`` keeps only the model's weights of a fairseq checkpoint: int8 rows with a float16 scale each, other
tensors as float16, xz-compressed (``unilm_fairseq/checkpoint/packed_weights.py``). ``unpack`` writes
``BASE_MODEL.pt`` (a checkpoint of the same architecture, such as ``scripts/convert_hf_checkpoint.py``'s
``model.pt``, which brings its config) with the packed weights in place of its own; a packed tensor that the
base lacks, or of another shape, is an error, and so is a base weight the packed file lacks, except the
pooler: it is frozen (never trained), so the base's own values are the ones training would have kept, and
weights packed before the importer kept it still unpack. The main job unpacks
``data/minilm-continued-ae.pt.xz`` this way onto the converted MiniLM (docs/results.md says how those
weights were made).

``start`` writes the checkpoint another training run starts from with ``--finetune-from-model``: for a
training run's own checkpoint (``checkpoint_last.pt``), ``OUT_MODEL.pt`` with its weights, config and origin
only; for any other, ``OUT_MODEL.pt`` is a link to CHECKPOINT. fairseq carries a run's training time into
the next run, so ``--stop-time-hours`` would count the earlier run's hours too, and it would read the
optimizer state for nothing. ``examples/unilmv2_pretrain/continue_pretraining.sh`` starts from it.
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

# what fairseq's trainer saves of a run besides the model (fairseq/checkpoint_utils.py save_checkpoint and
# trainer.state_dict): the data position, the meters, the best loss and the training time so far
RUN_STATE = ("train_iterator", "previous_training_time", "metrics", "val_loss", "best")


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


def start(checkpoint: str, output: str) -> None:
    """``output``: ``checkpoint`` without a training run's state, or a link to it when it has none."""
    state = load_checkpoint(checkpoint)
    extra = state.get("extra_state") or {}
    # a link left by an earlier call is replaced; the checkpoint itself must not be
    if os.path.exists(output) and not os.path.islink(output) and os.path.samefile(checkpoint, output):
        raise ValueError(f"{output} is {checkpoint}: give the start another path (it would be replaced)")
    if os.path.lexists(output):
        os.remove(output)
    os.makedirs(os.path.dirname(os.path.abspath(output)), exist_ok=True)
    if not any(key in extra for key in RUN_STATE) and state.get("last_optimizer_state") is None:
        os.symlink(os.path.abspath(checkpoint), output)
        return
    updates = (state.get("optimizer_history") or [{}])[-1].get("num_updates", 0)
    hours = float(extra.get("previous_training_time", 0)) / 3600
    state["last_optimizer_state"] = None
    state["extra_state"] = {key: value for key, value in extra.items() if key not in RUN_STATE}
    torch.save(state, output)
    logger.info("%s is a training run's checkpoint (%s updates, %.2f h of training): %s has its weights and "
                "config only", checkpoint, updates, hours, output)  # fmt: skip


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
    starter = commands.add_parser(
        "start", help="the checkpoint another run starts from: CHECKPOINT without a run's state, or a link"
    )
    starter.add_argument("checkpoint")
    starter.add_argument("output")
    args = parser.parse_args(argv)
    logging.basicConfig(
        format="%(asctime)s | %(levelname)s | %(name)s | %(message)s", level=logging.INFO, force=True
    )
    try:
        if args.command == "pack":
            pack(args.checkpoint, args.output)
        elif args.command == "start":
            start(args.checkpoint, args.output)
        else:
            unpack(args.packed, args.base, args.output)
    except (OSError, ValueError) as error:
        logger.error("%s", error)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
