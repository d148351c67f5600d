"""The last step of converting a Hugging Face model: its mapped weights fitted into a ``unilmv2`` model."""

from typing import Dict

from torch import Tensor

from ..models.unilmv2 import LM_HEAD, LM_HEAD_OUTPUT, TOKEN_TABLE
from .fitting import check_fits


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
