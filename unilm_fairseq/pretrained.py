"""Initialise a model from a pre-trained (or converted) unilmv2 checkpoint."""

import logging

import torch
from fairseq import checkpoint_utils

logger = logging.getLogger(__name__)

POSITION_TABLE = "transformer.embeddings.positions.weight"
TOKEN_TABLE = "transformer.embeddings.tokens.weight"
SEGMENT_TABLE = "transformer.embeddings.segments.weight"


def tile_rows(table: torch.Tensor, rows: int) -> torch.Tensor:
    """Grow a ``(R, C)`` position table to ``(rows, C)`` by repeating its learned rows in order."""
    repeats = -(-rows // table.size(0))
    return table.repeat(repeats, 1)[:rows].clone()


def fit_position_table(table: torch.Tensor, rows: int) -> torch.Tensor:
    """A checkpoint's ``(R, C)`` position table fitted to ``rows``: tiled when shorter, cut when longer."""
    if table.size(0) < rows:
        logger.info("tiling the pre-trained position table from %d to %d rows", table.size(0), rows)
        return tile_rows(table, rows)
    if table.size(0) > rows:
        logger.info("using the first %d of the pre-trained position table's %d rows", rows, table.size(0))
        return table[:rows]
    return table


def load_pretrained_weights(model, path: str) -> None:
    """Copy every weight of ``path`` into ``model``; clear errors on any mismatch.

    A shorter position table is tiled to the model's length; a shorter segment
    table fills the first segment ids and the model's other ids keep their fresh
    initialization (BERT's 2 segments -> UniLM v1's 6 LM identifiers); the
    vocabulary must match exactly (fine-tune with the pre-training ``dict.txt``).
    The model's own ``upgrade_state_dict_named`` runs first, so a pre-training
    NSP head is dropped or kept fresh as the model needs.
    """
    state = checkpoint_utils.load_checkpoint_to_cpu(path)["model"]
    own = model.state_dict()
    model.upgrade_state_dict_named(state, "")
    if (
        SEGMENT_TABLE in state
        and SEGMENT_TABLE in own
        and state[SEGMENT_TABLE].size(0) < own[SEGMENT_TABLE].size(0)
    ):
        have, need = state[SEGMENT_TABLE].size(0), own[SEGMENT_TABLE].size(0)
        logger.info("segment ids %d..%d are new: keeping their fresh initialization", have, need - 1)
        state[SEGMENT_TABLE] = torch.cat([state[SEGMENT_TABLE], own[SEGMENT_TABLE][have:]])
    if TOKEN_TABLE in state and state[TOKEN_TABLE].shape != own[TOKEN_TABLE].shape:
        raise ValueError(
            f"{path}: token embeddings are {tuple(state[TOKEN_TABLE].shape)} but the dictionary gives "
            f"{tuple(own[TOKEN_TABLE].shape)}; binarize with the checkpoint's dict.txt (--srcdict/--tgtdict)"
        )
    if POSITION_TABLE in state:
        state[POSITION_TABLE] = fit_position_table(state[POSITION_TABLE], own[POSITION_TABLE].size(0))
    load_fitting_state(model, state, path)


def load_fitting_state(model, state, path: str) -> None:
    """Load ``state`` (read from ``path``) strictly; a clear error names what does not fit."""
    own = model.state_dict()
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
