"""What the plugin's criteria share when they reduce logging outputs: sums, per-item base-2 losses and
the perplexities derived from them."""

import math
from typing import Dict, List

from fairseq import metrics, utils


def summed(logging_outputs: List[Dict], key: str):
    """The sum of ``key`` over the logging outputs (0 where it is missing)."""
    return sum(log.get(key, 0) for log in logging_outputs)


def summed_number(logging_outputs: List[Dict], key: str):
    """:func:`summed` as a host number: the criteria keep their counts on the device in ``forward``, so
    their sums are tensors until here (after fairseq's all-reduce every value is a tensor anyway)."""
    return utils.item(summed(logging_outputs, key))


def log_base2(name: str, total_nats, count) -> None:
    """Log ``total_nats / count`` in bits, weighted by ``count`` (fairseq's loss convention)."""
    metrics.log_scalar(name, total_nats / max(count, 1) / math.log(2), count, round=3)


def log_perplexity(name: str, loss_name: str) -> None:
    """Log ``name`` as 2 to the power of the base-2 meter ``loss_name``, through fairseq's own
    ``utils.get_perplexity``: two decimals in the progress lines (``ppl=674.18``, not the raw float32
    ``674.1148681640625``) and ``inf`` where a diverged loss overflows, instead of an ``OverflowError``
    from the logger."""
    metrics.log_derived(name, lambda meters: utils.get_perplexity(meters[loss_name].avg))
