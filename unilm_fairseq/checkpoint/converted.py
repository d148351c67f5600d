"""The last step of converting a Hugging Face model: its mapped weights fitted into a ``unilmv2`` model."""

from typing import Dict, Optional, Tuple

from torch import Tensor

from ..models.unilmv2 import LM_HEAD, LM_HEAD_OUTPUT, TOKEN_TABLE
from .fitting import check_fits

ORIGIN_KEY = "hf_import"  # the extra_state entry of a converted checkpoint: where it came from
# the origin's record of config.json's s2s-ft segment ids (an id, or None when config.json has none)
TYPE_ID_KEYS = ("source_type_id", "target_type_id")


def converted_type_ids(state: dict) -> Optional[Tuple[Optional[int], Optional[int]]]:
    """The ``source_type_id``/``target_type_id`` a converted checkpoint's ``config.json`` recorded.

    Args:
        state: a checkpoint as ``torch.load`` reads it.
    Returns:
        ``(source, target)``, each an id or None where ``config.json`` had none; None for a checkpoint
        that is not a conversion, or one converted before the converter recorded them.
    """
    origin = (state.get("extra_state") or {}).get(ORIGIN_KEY)
    if not isinstance(origin, dict) or not all(key in origin for key in TYPE_ID_KEYS):
        return None
    return tuple(None if origin[key] is None else int(origin[key]) for key in TYPE_ID_KEYS)


def load_converted_weights(model, state: Dict[str, Tensor], has_lm_head: bool, source: str, target: str):
    """Load the converted ``state`` into the freshly built ``model``, the LM head's output tied to the token
    table; without an MLM head in the source (``has_lm_head`` false), the model's fresh one stays.

    Args:
        source: the weights file, ``target``: the config that describes ``model`` (for the error).
    Raises:
        CheckpointMismatch: when a weight is missing, has no place in ``model``, or has another shape.
    """
    own = model.state_dict()
    produced = {**state, LM_HEAD_OUTPUT: state[TOKEN_TABLE]}
    check_fits(
        own,
        produced,
        source=source,
        target=f"the model {target} describes",
        allowed_missing=() if has_lm_head else (LM_HEAD,),
    )
    model.load_state_dict({**own, **produced})
    return model
