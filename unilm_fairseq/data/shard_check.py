"""Check a binarized split (``PATH.idx`` + ``PATH.bin``) before fairseq's loader reads it.

fairseq memory-maps the data file and trusts its index: a truncated ``.bin`` fails only when a batch
reaches the missing bytes, deep in a data loader, and a missing ``.idx`` reads as "dataset not found".
:func:`check_binarized_split` reads the index header of fairseq's ``mmap`` format (the default of
``fairseq-preprocess``) and compares both file sizes with what the index describes, so a corrupt
shard stops training at once with its name and what is wrong.
"""

import os
import struct
from typing import Optional

import numpy as np
from fairseq.data import indexed_dataset

MMAP_MAGIC = indexed_dataset.MMapIndexedDataset.Index._HDR_MAGIC
# magic, version (<Q), dtype code (<B), number of items (<Q); then one int32 size and one int64
# pointer per item (fairseq 0.12's MMapIndexedDataset.Index)
HEADER = struct.Struct("<9sQBQ")
SIZE_BYTES = np.dtype(np.int32).itemsize
POINTER_BYTES = np.dtype(np.int64).itemsize


class CorruptShardError(ValueError):
    """A binarized split whose files are missing, truncated or inconsistent."""


def check_binarized_split(path: str) -> Optional[str]:
    """Raise :class:`CorruptShardError` when ``path.idx``/``path.bin`` are inconsistent.

    Returns None when neither file exists (the caller reports a missing split its own way), else the
    dataset format found (``"mmap"``, or ``"other"`` for fairseq's older formats, checked for presence
    only).
    """
    index_path, data_path = indexed_dataset.index_file_path(path), indexed_dataset.data_file_path(path)
    present = [p for p in (index_path, data_path) if os.path.exists(p)]
    if not present:
        return None
    shard = os.path.dirname(path) or "."
    name = os.path.basename(path)
    if len(present) == 1:
        missing = os.path.basename(index_path if present[0] == data_path else data_path)
        raise CorruptShardError(
            f"data shard {shard}: {missing} is missing ({os.path.basename(present[0])} is there)"
        )
    index_bytes = os.path.getsize(index_path)
    with open(index_path, "rb") as f:
        header = f.read(HEADER.size)
    if not header.startswith(MMAP_MAGIC[:8]):
        return "other"
    if len(header) < HEADER.size:
        raise CorruptShardError(
            f"data shard {shard}: {name}.idx is truncated ({index_bytes} bytes, no full header)"
        )
    _, version, dtype_code, num_items = HEADER.unpack(header)
    if version != 1 or dtype_code not in indexed_dataset._code_to_dtype:
        raise CorruptShardError(
            f"data shard {shard}: {name}.idx has an unknown version {version} or dtype code {dtype_code}"
        )
    expected_index = HEADER.size + num_items * (SIZE_BYTES + POINTER_BYTES)
    if index_bytes != expected_index:
        raise CorruptShardError(
            f"data shard {shard}: {name}.idx has {index_bytes} bytes, its header ({num_items} items) "
            f"needs {expected_index}"
        )
    sizes = np.memmap(index_path, dtype=np.int32, mode="r", offset=HEADER.size, shape=(num_items,))
    itemsize = np.dtype(indexed_dataset._code_to_dtype[dtype_code]).itemsize
    expected_data = int(sizes.sum(dtype=np.int64)) * itemsize
    data_bytes = os.path.getsize(data_path)
    if data_bytes != expected_data:
        state = "truncated" if data_bytes < expected_data else "longer than its index"
        raise CorruptShardError(
            f"data shard {shard}: {name}.bin is {state} ({data_bytes} bytes, {name}.idx describes "
            f"{expected_data}); rebuild the shard"
        )
    return "mmap"
