"""Initialise a model from a pre-trained (or converted) unilmv2 checkpoint."""

import logging
from typing import Tuple

import torch
from fairseq import checkpoint_utils
from fairseq.utils import safe_getattr

from .. import seq2seq_layout

logger = logging.getLogger(__name__)

POSITION_TABLE = "transformer.embeddings.positions.weight"
TOKEN_TABLE = "transformer.embeddings.tokens.weight"
SEGMENT_TABLE = "transformer.embeddings.segments.weight"
FINETUNING_TASK = "unilm_seq2seq"  # checkpoints of this task record the segment ids they were tuned with


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


def checkpoint_seq2seq_segments(path: str) -> Tuple[Tuple[int, int], str]:
    """The source and target segment ids s2s-ft fine-tuning from the checkpoint ``path`` uses, and why.

    A checkpoint fine-tuned by ``--task unilm_seq2seq`` keeps the ids its config records (0/1 when it
    predates the record). Any other checkpoint (pre-trained, converted) is judged by its segment
    table: UniLM v1's six rows or more mean 4/5, fewer 0/1
    (:func:`unilm_fairseq.seq2seq_layout.pretrained_segments`).

    Returns:
        ``((source, target), reason)``; the reason is for the log.
    """
    state = checkpoint_utils.load_checkpoint_to_cpu(path)
    cfg = state.get("cfg")
    task = safe_getattr(cfg, "task") if cfg is not None else None
    if task is not None and safe_getattr(task, "_name") == FINETUNING_TASK:
        model = cfg.model
        segments = (
            int(safe_getattr(model, "seq2seq_source_segment", seq2seq_layout.SOURCE_SEGMENT)),
            int(safe_getattr(model, "seq2seq_target_segment", seq2seq_layout.TARGET_SEGMENT)),
        )
        return segments, f"{path} was fine-tuned by --task {FINETUNING_TASK} with them"
    table = state["model"].get(SEGMENT_TABLE)
    rows = 0 if table is None else table.size(0)
    return seq2seq_layout.pretrained_segments(rows), f"{path} has {rows} segment embeddings"
