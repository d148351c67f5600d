"""Start PALM's stage 2 from a stage-1 checkpoint: the encoder's weights kept, the decoder fresh."""

import logging
import re
from collections import Counter
from typing import Dict, Iterable, List

from fairseq import checkpoint_utils

from ..models.palm import DECODER
from .fitting import check_fits

logger = logging.getLogger(__name__)


def summarize(names: Iterable[str]) -> str:
    """``"decoder.layers (24), decoder.output_projection (1)"``: tensors per module, layers folded."""
    groups = Counter(".".join(re.sub(r"\.\d+(?=\.|$)", "", n).split(".")[:2]) for n in names)
    return ", ".join(f"{group} ({count})" for group, count in sorted(groups.items())) or "none"


def load_encoder_from_checkpoint(model, path: str) -> Dict[str, List[str]]:
    """Copy every weight not under ``decoder.`` from ``path`` into ``model``.

    Stage 1 trains the encoder (and its MLM head) only, but its model has a
    decoder too, left at its random initialisation; this keeps the decoder that
    ``model`` was built with instead. Decoder tensors that share storage with a
    copied one (tied embeddings) follow the copy.

    Returns:
        tensor names by origin: ``"checkpoint"``, ``"tied"`` (decoder tensors
        tied to a copied one) and ``"fresh"``; the same summary is logged.
    Raises:
        CheckpointMismatch: when the checkpoint's non-decoder weights do not fit the model
            (:func:`~unilm_fairseq.checkpoint.fitting.check_fits`).
    """
    state = checkpoint_utils.load_checkpoint_to_cpu(path)["model"]
    own = model.state_dict()
    copied = {k: v for k, v in state.items() if not k.startswith(DECODER)}
    check_fits(
        own,
        copied,
        source=path,
        target="this model's encoder",
        allowed_missing=(DECODER,),
        advice="same --arch and dict.txt as stage 1?",
    )
    names = sorted(copied)
    # the model's own decoder tensors go in beside the copied ones: fairseq's upgrade step reads a decoder
    # without its version buffer as an old checkpoint's and drops a pre-LN decoder's final LayerNorm
    model.load_state_dict({**own, **copied}, strict=True)
    copied_storage = {own[k].data_ptr() for k in names}
    decoder = [k for k in own if k.startswith(DECODER)]
    origin = {
        "checkpoint": names,
        "tied": sorted(k for k in decoder if own[k].data_ptr() in copied_storage),
        "fresh": sorted(k for k in decoder if own[k].data_ptr() not in copied_storage),
    }
    logger.info("stage 2 from stage-1 checkpoint %s", path)
    logger.info(
        "  from the checkpoint: %d tensors: %s", len(origin["checkpoint"]), summarize(origin["checkpoint"])
    )
    logger.info("  tied to a copied tensor: %d: %s", len(origin["tied"]), summarize(origin["tied"]))
    logger.info("  freshly initialised: %d tensors: %s", len(origin["fresh"]), summarize(origin["fresh"]))
    return origin
