"""Initialise a model from a pre-trained (or converted) unilmv2 checkpoint."""

import logging
from typing import Sequence

import torch
from fairseq import checkpoint_utils

logger = logging.getLogger(__name__)

POSITION_TABLE = "transformer.embeddings.positions.weight"
TOKEN_TABLE = "transformer.embeddings.tokens.weight"


def tile_rows(table: torch.Tensor, rows: int) -> torch.Tensor:
    """Grow a ``(R, C)`` position table to ``(rows, C)`` by repeating its learned rows in order."""
    repeats = -(-rows // table.size(0))
    return table.repeat(repeats, 1)[:rows].clone()


def load_pretrained_weights(model, path: str, skip_prefixes: Sequence[str] = ()) -> None:
    """Copy every weight of ``path`` into ``model``; clear errors on any mismatch.

    A shorter position table is tiled to the model's length; the vocabulary must
    match exactly (fine-tune with the pre-training ``dict.txt``). Checkpoint
    weights under ``skip_prefixes`` (another task's heads) are left out, logged.
    """
    state = checkpoint_utils.load_checkpoint_to_cpu(path)["model"]
    skipped = [k for k in state if k.startswith(tuple(skip_prefixes))] if skip_prefixes else []
    if skipped:
        logger.info("%s: leaving out %d weights under %s", path, len(skipped), ", ".join(skip_prefixes))
        for key in skipped:
            del state[key]
    own = model.state_dict()
    if TOKEN_TABLE in state and state[TOKEN_TABLE].shape != own[TOKEN_TABLE].shape:
        raise ValueError(
            f"{path}: token embeddings are {tuple(state[TOKEN_TABLE].shape)} but the dictionary gives "
            f"{tuple(own[TOKEN_TABLE].shape)}; binarize with the checkpoint's dict.txt (--srcdict/--tgtdict)"
        )
    if POSITION_TABLE in state:
        have, need = state[POSITION_TABLE].size(0), own[POSITION_TABLE].size(0)
        if have < need:
            logger.info("tiling the pre-trained position table from %d to %d rows", have, need)
            state[POSITION_TABLE] = tile_rows(state[POSITION_TABLE], need)
        elif have > need:
            state[POSITION_TABLE] = state[POSITION_TABLE][:need]
    missing = sorted(set(own) - set(state))
    unexpected = sorted(set(state) - set(own))
    mismatched = [k for k in own if k in state and state[k].shape != own[k].shape]
    if missing or unexpected or mismatched:
        raise ValueError(
            f"{path} does not fit this model: missing {missing[:5]}, unexpected {unexpected[:5]}, "
            f"shape mismatches {[(k, tuple(state[k].shape), tuple(own[k].shape)) for k in mismatched[:5]]}"
        )
    model.load_state_dict(state)
    logger.info("initialised from %s", path)
