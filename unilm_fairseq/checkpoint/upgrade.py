"""The rule a ``unilmv2`` model applies to every checkpoint it loads: task heads and position table fitted."""

import logging
from typing import Dict, Sequence

from torch import Tensor

from .fitting import check_fits, matches

logger = logging.getLogger(__name__)


def tile_rows(table: Tensor, rows: int) -> Tensor:
    """Grow a ``(R, C)`` position table to ``(rows, C)`` by repeating its learned rows in order."""
    repeats = -(-rows // table.size(0))
    return table.repeat(repeats, 1)[:rows].clone()


def fit_position_table(table: Tensor, rows: int) -> Tensor:
    """A checkpoint's ``(R, C)`` position table fitted to ``rows``: tiled when shorter, cut when longer."""
    if table.size(0) < rows:
        logger.info("tiling the pre-trained position table from %d to %d rows", table.size(0), rows)
        return tile_rows(table, rows)
    if table.size(0) > rows:
        logger.info("using the first %d of the pre-trained position table's %d rows", rows, table.size(0))
        return table[:rows]
    return table


def upgrade_state(
    state_dict: Dict[str, Tensor],
    own: Dict[str, Tensor],
    prefix: str,
    *,
    position_table: str,
    heads: Sequence[str],
) -> None:
    """Fit the checkpoint ``state_dict`` in place to a model whose own state is ``own``.

    Task heads (keys under ``heads``) registered in the model but absent from the checkpoint (fine-tuning
    from a pre-trained model) keep the model's fresh initialisation; heads in the checkpoint that the model
    did not register (another task's) are dropped; a head of both must have the same shapes. A position
    table (``position_table``) of another length (``--max-positions``) is tiled or cut. All of it is logged.

    Args:
        prefix: of the model's keys in ``state_dict`` (``""`` or ``"name."``); ``own``'s keys have none.
    """
    positions = prefix + position_table
    if positions in state_dict:
        state_dict[positions] = fit_position_table(state_dict[positions], own[position_table].size(0))
    theirs = {
        k[len(prefix) :]: v
        for k, v in state_dict.items()
        if k.startswith(prefix) and matches(k[len(prefix) :], heads)
    }
    ours = {k: v for k, v in own.items() if matches(k, heads)}
    fit = check_fits(
        ours,
        theirs,
        source="the checkpoint",
        target="this model's task heads",
        allowed_missing=heads,
        allowed_unexpected=heads,
        advice="a head registered under the checkpoint's name must have its sizes (number of classes)",
    )
    for key in fit.unexpected:
        logger.warning("dropping %s: no such head in this model", prefix + key)
        del state_dict[prefix + key]
    for key in fit.missing:
        logger.info("initialising %s (not in the checkpoint)", key)
        state_dict[prefix + key] = own[key]
