"""The one check that weights read from a checkpoint fit a model, and loading once they do.

Every initialisation from a checkpoint runs :func:`check_fits`, so every mismatch reads the same::

    PATH does not fit this model: missing [...], unexpected [...], shape mismatches [(key, (R, C), (R', C'))]

(shapes: the checkpoint's, then the model's), followed by the caller's hints. Keys the caller allows to be
missing (they keep the model's initialisation) or extra (they are dropped) are given as full keys or as
prefixes ending in ``"."``.
"""

import logging
from dataclasses import dataclass, field
from typing import Any, Callable, Dict, Iterable, List, Mapping, Optional, Sequence, Tuple, Union

from torch import Tensor

logger = logging.getLogger(__name__)

SHOWN = 5  # keys named per kind of problem
VOCABULARY_HINT = (
    "the token embeddings are not the dictionary's size: binarize with the checkpoint's dict.txt "
    "(fairseq-preprocess --srcdict DICT --tgtdict DICT) and use its sizes"
)

Mismatch = Tuple[str, Tuple[int, ...], Tuple[int, ...]]  # key, shape in the checkpoint, shape in the model
WIDTH_HINT = (
    "the token embeddings have the dictionary's size but another width: the model was built with other "
    "sizes than the checkpoint's; give its architecture flags (model_args.txt beside a converted checkpoint)"
)


def token_table_hint(mismatch: Optional[Mismatch]) -> str:
    """The hint for a token table that does not fit: a vocabulary of another size, or another width."""
    if mismatch is not None and mismatch[1][:1] == mismatch[2][:1]:
        return WIDTH_HINT
    return VOCABULARY_HINT


def saved_option(model_cfg: Any, name: str) -> Optional[Any]:
    """Option ``name`` of a saved model config: a dict, an omegaconf container or argparse's ``args``."""
    if isinstance(model_cfg, dict):
        return model_cfg.get(name)
    return getattr(model_cfg, name, None)


def checkpoint_option(checkpoint: Dict[str, Any], name: str) -> Optional[Any]:
    """Option ``name`` of the model config saved in ``checkpoint`` (None when it has no config)."""
    cfg = checkpoint.get("cfg") or {}
    model_cfg = cfg.get("model") if hasattr(cfg, "get") else None
    return None if model_cfg is None else saved_option(model_cfg, name)


def check_same_settings(checkpoint: Dict[str, Any], own: Any, names: Iterable[str], source: str) -> None:
    """Options that change what a model computes but no weight's shape (attention heads, activation,
    LayerNorm epsilon ...) must be the ones ``checkpoint`` was trained with: its weights would load
    without a complaint into a model that computes another function. ``own``: the model's config. An
    option either side lacks is not compared."""
    differ = []
    for name in names:
        theirs, ours = checkpoint_option(checkpoint, name), saved_option(own, name)
        if theirs is None or ours is None:
            continue
        same = float(theirs) == float(ours) if isinstance(ours, float) else str(theirs) == str(ours)
        if not same:
            differ.append(f"--{name.replace('_', '-')} {theirs} (this model: {ours})")
    if differ:
        raise ValueError(
            f"{source} was trained with {', '.join(differ)}: give the checkpoint's settings (model_args.txt "
            "beside a converted checkpoint lists them)"
        )


def matches(key: str, names: Iterable[str]) -> bool:
    """Whether ``key`` is one of ``names`` or lies under one of them that ends in ``"."``."""
    return any(key == name or (name.endswith(".") and key.startswith(name)) for name in names)


def _shown(items: Sequence) -> str:
    more = f" and {len(items) - SHOWN} more" if len(items) > SHOWN else ""
    return f"{list(items[:SHOWN])}{more}"


class CheckpointMismatch(ValueError):
    """Weights that do not fit a model: ``missing`` and ``unexpected`` keys (sorted) and ``mismatched``
    shapes, each ``(key, shape in the checkpoint, shape in the model)``."""

    def __init__(
        self,
        source: str,
        target: str,
        missing: List[str],
        unexpected: List[str],
        mismatched: List[Mismatch],
        hints: Sequence[str] = (),
    ):
        self.source, self.target = source, target
        self.missing, self.unexpected, self.mismatched = missing, unexpected, mismatched
        message = (
            f"{source} does not fit {target}: missing {_shown(missing)}, unexpected {_shown(unexpected)}, "
            f"shape mismatches {_shown(mismatched)}"
        )
        super().__init__("; ".join([message, *hints]))


@dataclass
class Fit:
    """The keys :func:`check_fits` let through: allowed to be missing, and allowed extra (both sorted)."""

    missing: List[str] = field(default_factory=list)
    unexpected: List[str] = field(default_factory=list)


def check_fits(
    model_state: Mapping[str, Tensor],
    loaded_state: Mapping[str, Tensor],
    *,
    source: str,
    target: str = "this model",
    allowed_missing: Iterable[str] = (),
    allowed_unexpected: Iterable[str] = (),
    hints: Optional[Mapping[str, Union[str, Callable[[Optional[Mismatch]], str]]]] = None,
    advice: Optional[str] = None,
) -> Fit:
    """Check that ``loaded_state`` (read from ``source``) fits ``model_state``: same keys, same shapes.

    Args:
        model_state, loaded_state: key -> tensor (state dicts, or the parts of them being loaded).
        source: where the weights come from (a path), first word of the error.
        target: what they must fit, as the error names it.
        allowed_missing: keys or ``"prefix."`` es of ``model_state`` that ``loaded_state`` may lack.
        allowed_unexpected: keys or prefixes of ``loaded_state`` that ``model_state`` may lack.
        hints: key or prefix -> a sentence added to the error when such a key is missing, unexpected or
            of another shape (e.g. :data:`VOCABULARY_HINT`), or a function of that key's shape mismatch
            (None when it is missing or extra) that returns the sentence (:func:`token_table_hint`).
        advice: a sentence added to any error.
    Returns:
        the allowed missing and extra keys that were found.
    Raises:
        CheckpointMismatch: naming every other missing or extra key and every shape mismatch.
    """
    allowed_missing, allowed_unexpected = tuple(allowed_missing), tuple(allowed_unexpected)
    absent = sorted(set(model_state) - set(loaded_state))
    extra = sorted(set(loaded_state) - set(model_state))
    fit = Fit(
        missing=[k for k in absent if matches(k, allowed_missing)],
        unexpected=[k for k in extra if matches(k, allowed_unexpected)],
    )
    missing = [k for k in absent if not matches(k, allowed_missing)]
    unexpected = [k for k in extra if not matches(k, allowed_unexpected)]
    mismatched = [
        (k, tuple(loaded_state[k].shape), tuple(v.shape))
        for k, v in model_state.items()
        if k in loaded_state and loaded_state[k].shape != v.shape
    ]
    if missing or unexpected or mismatched:
        problems = missing + unexpected + [k for k, _, _ in mismatched]
        by_key = {m[0]: m for m in mismatched}
        notes = []
        for name, hint in (hints or {}).items():
            hit = [k for k in problems if matches(k, (name,))]
            if hit:
                notes.append(hint(by_key.get(hit[0])) if callable(hint) else hint)
        raise CheckpointMismatch(
            source, target, missing, unexpected, mismatched, notes + ([advice] if advice else [])
        )
    return fit


def load_fitting_state(model, state: Mapping[str, Tensor], source: str, **check) -> Fit:
    """Load ``state`` (read from ``source``) into ``model`` once :func:`check_fits` passes.

    ``check`` takes :func:`check_fits`'s keyword arguments: allowed extra keys are dropped, allowed missing
    ones keep the model's values; everything else is loaded strictly.
    """
    own = model.state_dict()
    fit = check_fits(own, state, source=source, **check)
    dropped = set(fit.unexpected)
    loaded = {k: v for k, v in state.items() if k not in dropped}
    loaded.update((k, own[k]) for k in fit.missing)
    model.load_state_dict(loaded)
    logger.info("initialised from %s", source)
    return fit
