"""Initialise a ``palm`` model for fine-tuning from a ``palm`` (pre-training) checkpoint."""

import logging

from fairseq import checkpoint_utils

logger = logging.getLogger(__name__)

TOKEN_TABLE = "encoder.embed_tokens.weight"
POSITION_TABLES = ("encoder.embed_positions.weight", "decoder.embed_positions.weight")
# parts a checkpoint may have that the model does not build: pre-training's MLM head, and the copy
# attention when fine-tuning with --no-copy
OPTIONAL_PARTS = {
    "encoder_mlm_head.": "the encoder MLM head (fine-tuning has none)",
    "decoder.pointer.source_proj.": "the copy attention (--no-copy)",
    "decoder.pointer.state_proj.": "the copy attention (--no-copy)",
    "decoder.pointer.score.": "the copy attention (--no-copy)",
    "decoder.pointer.gate_context.": "the copy gate (--no-copy)",
    "decoder.pointer.gate_state.": "the copy gate (--no-copy)",
}


def load_palm_weights(model, path: str) -> None:
    """Copy every weight of the ``palm`` checkpoint ``path`` into ``model``; clear errors on any mismatch.

    Parts ``model`` does not build (:data:`OPTIONAL_PARTS`) are dropped, with a log line. A longer learned
    position table keeps its first rows (fine-tuning with shorter sources or targets); a shorter one is an
    error naming the limit. The vocabulary must match exactly (binarize with the pre-training ``dict.txt``).
    """
    state = checkpoint_utils.load_checkpoint_to_cpu(path)["model"]
    own = model.state_dict()
    if TOKEN_TABLE not in state:
        raise ValueError(f"{path} is not a palm checkpoint (it has no {TOKEN_TABLE})")
    if state[TOKEN_TABLE].shape != own[TOKEN_TABLE].shape:
        raise ValueError(
            f"{path}: token embeddings are {tuple(state[TOKEN_TABLE].shape)} but the dictionary gives "
            f"{tuple(own[TOKEN_TABLE].shape)}; binarize with the checkpoint's dict.txt "
            "(fairseq-preprocess --srcdict DICT --tgtdict DICT)"
        )
    for key in POSITION_TABLES:
        if key in state and key in own and state[key].size(0) != own[key].size(0):
            have, need = state[key].size(0), own[key].size(0)
            if have < need:
                side = "source" if key.startswith("encoder") else "target"
                raise ValueError(
                    f"{path}: {key} has {have} rows but the model needs {need}: lower "
                    f"--max-{side}-positions by {need - have} (at most the pre-training length)"
                )
            state[key] = state[key][:need].clone()
    for prefix, part in OPTIONAL_PARTS.items():
        if any(k.startswith(prefix) for k in own):
            continue
        dropped = [k for k in state if k.startswith(prefix)]
        for key in dropped:
            del state[key]
        if dropped:
            logger.info("not loading %s: %d tensors under %s", part, len(dropped), prefix)
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
