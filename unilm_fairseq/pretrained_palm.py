"""Initialise a ``palm`` model for fine-tuning from a ``palm`` (pre-training) checkpoint."""

import logging

from fairseq import checkpoint_utils

logger = logging.getLogger(__name__)

TOKEN_TABLE = "encoder.embed_tokens.weight"
POSITION_TABLES = ("encoder.embed_positions.weight", "decoder.embed_positions.weight")
MLM_HEAD = "encoder_mlm_head."  # pre-training only; fine-tuning models are built without it


def load_palm_weights(model, path: str) -> None:
    """Copy every weight of the ``palm`` checkpoint ``path`` into ``model``; clear errors on any mismatch.

    The encoder MLM head is dropped when ``model`` has none. A longer learned position table keeps its
    first rows (fine-tuning with shorter sources or targets); a shorter one is an error naming the limit.
    The vocabulary must match exactly (binarize with the pre-training ``dict.txt``).
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
    if not any(k.startswith(MLM_HEAD) for k in own):
        dropped = [k for k in state if k.startswith(MLM_HEAD)]
        for key in dropped:
            del state[key]
        if dropped:
            logger.info(
                "not loading the encoder MLM head (%d tensors): fine-tuning does not use it", len(dropped)
            )
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
