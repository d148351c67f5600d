"""Warnings that fairseq 0.12 raises through its libraries on every command and that ask nothing of a user.

fairseq 0.12 configures itself with Hydra 1.0's API, which Hydra 1.3 still runs but warns about at each
call; its data iterators always ask the DataLoader for pinned memory, which a CPU-only torch declines with
a warning; and its ``train_step``/``valid_step`` enter ``torch.cuda.amp.autocast``, a spelling torch 2.4
deprecated; and its ``MultiheadAttention`` (in PALM's decoder, fairseq's own) passes a float future mask
beside a bool padding mask, which torch converts itself but warns about. None of these is about the user's
data, model or flags. Each one is silenced by its category,
its message and (where the location is stable) the module that raises it, so any other warning of the same
libraries still shows. :func:`quiet_known_warnings` runs when fairseq loads the plugin (``--user-dir``),
which happens before fairseq turns the command line into its Hydra config.
"""

import warnings
from typing import NamedTuple, Type


class KnownWarning(NamedTuple):
    category: Type[Warning]
    message: str  # a regular expression matched at the start of the warning's text
    module: str  # a regular expression matched against the module that raised it ("" for any)
    why: str


KNOWN_WARNINGS = (
    KnownWarning(
        UserWarning,
        r"hydra\.experimental\.(initialize|compose)\(\) is no longer experimental",
        r"hydra\.experimental\.",
        "fairseq 0.12 calls Hydra 1.0's experimental initialize/compose",
    ),
    KnownWarning(
        UserWarning,
        r"\s*The version_base parameter is not specified",
        r"hydra\.",
        "fairseq 0.12 predates Hydra's version_base argument",
    ),
    KnownWarning(
        UserWarning,
        r"In 'config': Usage of deprecated keyword in package header '# @package _group_'",
        r"hydra\.",
        "fairseq 0.12's config files use Hydra 1.0's package header",
    ),
    KnownWarning(
        UserWarning,
        r"\s*'config' is validated against ConfigStore schema with the same name",
        "",
        "fairseq 0.12 stores its schema under the config's own name (Hydra 1.0's automatic matching)",
    ),
    KnownWarning(
        UserWarning,
        r"\s*The strict flag in the compose API is deprecated",
        r"hydra\.",
        "fairseq 0.12 passes compose(strict=...)",
    ),
    KnownWarning(
        UserWarning,
        r"'pin_memory' argument is set as true but no accelerator is found",
        r"torch\.utils\.data\.dataloader",
        "fairseq's iterators always ask for pinned memory; without a GPU it is simply not used",
    ),
    KnownWarning(
        FutureWarning,
        r"`torch\.cuda\.amp\.autocast\(args\.\.\.\)` is deprecated",
        r"fairseq\.",
        "fairseq 0.12's train_step and valid_step use the old autocast spelling",
    ),
    KnownWarning(
        UserWarning,
        r"Support for mismatched key_padding_mask and attn_mask is deprecated",
        r"torch\.nn\.functional",
        "fairseq 0.12's decoder self-attention gives a float future mask and a bool padding mask; torch "
        "turns the padding mask into the float one's type, so the attention is the same",
    ),
)


def quiet_known_warnings() -> None:
    """Ignore exactly the warnings of :data:`KNOWN_WARNINGS` (category, message and module must all match)."""
    for known in KNOWN_WARNINGS:
        warnings.filterwarnings("ignore", message=known.message, category=known.category, module=known.module)
