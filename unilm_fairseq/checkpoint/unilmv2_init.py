"""Initialise a model from a pre-trained (or converted) unilmv2 checkpoint."""

import logging
from typing import Optional, Tuple

import torch
from fairseq import checkpoint_utils
from fairseq.utils import safe_getattr

from .. import seq2seq_layout
from ..models.unilmv2 import SEGMENT_TABLE, TOKEN_TABLE
from .converted import TYPE_ID_KEYS, converted_type_ids
from .fitting import check_fits, check_same_settings, load_fitting_state, token_table_hint

logger = logging.getLogger(__name__)

FINETUNING_TASK = "unilm_seq2seq"  # checkpoints of this task record the segment ids they were tuned with
# what changes the computation but no weight's shape; a relative position bias's reach too (its table's
# size is --rel-pos-bins: --max-rel-pos maps distances onto it)
SAME_SETTINGS = ("encoder_attention_heads", "activation_fn", "layernorm_eps", "max_rel_pos")


def load_pretrained_weights(model, path: str, state: Optional[dict] = None) -> None:
    """Copy every weight of ``path`` into ``model``; clear errors on any mismatch (:func:`check_fits`).

    ``state``: the checkpoint already read from ``path`` (it is consumed), so it is not read twice.

    A shorter position table is tiled to the model's length; a shorter segment
    table fills the first segment ids and the model's other ids keep their fresh
    initialization (BERT's 2 segments -> UniLM v1's 6 LM identifiers); the
    vocabulary must match exactly (fine-tune with the pre-training ``dict.txt``).
    The model's own ``upgrade_state_dict_named`` runs first, so a pre-training
    NSP head is dropped or kept fresh as the model needs.
    """
    checkpoint = state if state is not None else checkpoint_utils.load_checkpoint_to_cpu(path)
    check_same_settings(checkpoint, model.cfg, SAME_SETTINGS, path)
    state = checkpoint["model"]
    own = model.state_dict()
    model.upgrade_state_dict_named(state, "")
    if (
        SEGMENT_TABLE in state
        and SEGMENT_TABLE in own
        and state[SEGMENT_TABLE].size(0) < own[SEGMENT_TABLE].size(0)
        and state[SEGMENT_TABLE].size(1) == own[SEGMENT_TABLE].size(1)
    ):
        have, need = state[SEGMENT_TABLE].size(0), own[SEGMENT_TABLE].size(0)
        logger.info("segment ids %d..%d are new: keeping their fresh initialization", have, need - 1)
        state[SEGMENT_TABLE] = torch.cat([state[SEGMENT_TABLE], own[SEGMENT_TABLE][have:]])
    hints = {TOKEN_TABLE: token_table_hint}
    if TOKEN_TABLE in state:  # the vocabulary first: its error says what to do
        check_fits(
            {TOKEN_TABLE: own[TOKEN_TABLE]}, {TOKEN_TABLE: state[TOKEN_TABLE]}, source=path, hints=hints
        )
    load_fitting_state(model, state, path, hints=hints)


def checkpoint_seq2seq_segments(path: str, state: Optional[dict] = None) -> Tuple[Tuple[int, int], str]:
    """The source and target segment ids s2s-ft fine-tuning from the checkpoint ``path`` uses, and why.

    ``state``: the checkpoint already read from ``path``; read here when not given.

    What the checkpoint records wins; only a checkpoint that records nothing is judged by its segment table:

    1. fine-tuned by ``--task unilm_seq2seq``: the ids its config records (0/1 when it predates the record);
    2. converted from a model whose ``config.json`` gives ``source_type_id``/``target_type_id``: those, a
       missing one taking 0 or 1 as the original s2s-ft code's config does;
    3. anything else (pre-trained here, converted without them): UniLM v1's six segment rows or more mean
       4/5, fewer 0/1 (:func:`unilm_fairseq.seq2seq_layout.pretrained_segments`).

    Returns:
        ``((source, target), reason)``; the reason is for the log.
    """
    if state is None:
        state = checkpoint_utils.load_checkpoint_to_cpu(path)
    cfg = state.get("cfg")
    task = safe_getattr(cfg, "task") if cfg is not None else None
    if task is not None and safe_getattr(task, "_name") == FINETUNING_TASK:
        segments = seq2seq_layout.Seq2SeqSpec.from_checkpoint(cfg).segments
        return segments, f"{path} was fine-tuned by --task {FINETUNING_TASK} with them"
    recorded = converted_type_ids(state)
    if recorded is not None and any(i is not None for i in recorded):
        segments = tuple(
            default if i is None else i for i, default in zip(recorded, seq2seq_layout.PAIR_SEGMENTS)
        )
        return segments, f"{path} records them: its config.json's {'/'.join(TYPE_ID_KEYS)}"
    table = state["model"].get(SEGMENT_TABLE)
    rows = 0 if table is None else table.size(0)
    segments = seq2seq_layout.pretrained_segments(rows)
    if segments == seq2seq_layout.UNILM_V1_SEGMENTS:
        rule = "UniLM v1's seq2seq LM ids, as UniLM v1's code fine-tunes such a model"
    else:
        rule = "BERT's sentence A/B, s2s-ft's default"
    return segments, f"{path} records none and has {rows} segment embeddings: {rule}"
