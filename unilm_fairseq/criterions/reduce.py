"""What the plugin's criteria share when they reduce logging outputs: sums and per-item base-2 losses."""

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
