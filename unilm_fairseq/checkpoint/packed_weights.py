"""Model weights packed small enough to ship inside the repository: int8 rows, xz-compressed.

Every 2-D weight is stored as int8 with one float32 scale per row (symmetric: ``scale = max |row| / 127``,
``w ~ q * scale``); every other floating-point tensor as float16; a tensor that shares its storage with
another (the LM head's output tied to the word embeddings) as the other's name. The file is a
``torch.save`` of plain dicts, tensors and strings, so the safe ``weights_only`` loader reads it, and xz
compresses it. Unpacking gives float32 tensors under the original names.

    packed = pack_state_dict(state_dict)        # {"format": ..., "tensors": {name: entry}}
    write_packed(packed, "weights.pt.xz"); state_dict = unpack_state_dict(read_packed("weights.pt.xz"))

A 6-layer, 384-wide MiniLM (22.7M parameters) packs into 21 MB; the largest difference from the float
weights is half a quantization step of its row, ``max |row| / 254``.
"""

import io
import lzma
from typing import Dict

import torch
from torch import Tensor

FORMAT = "int8-rows-v1"
PACKED_KEY = "packed_weights"  # the extra_state entry of a checkpoint given packed weights: their file
LEVELS = 127  # symmetric int8: -127 .. 127
TINY_ROW = 1e-12  # an all-zero row keeps a non-zero scale


def pack_state_dict(state_dict: Dict[str, Tensor]) -> Dict:
    """The packed form of a model's ``state_dict`` (see the module docstring)."""
    tensors, first_name = {}, {}
    for name, value in state_dict.items():
        if value.is_floating_point() and value.numel() and value.data_ptr() in first_name:
            tensors[name] = {"tied": first_name[value.data_ptr()]}
            continue
        if value.is_floating_point() and value.numel():
            first_name[value.data_ptr()] = name
        if value.is_floating_point() and value.dim() == 2:
            rows = value.detach().float()
            # float32 scales: in float16, the scale of a row below ~8e-3 loses bits and one below ~4e-6 is 0
            scale = rows.abs().amax(dim=1, keepdim=True).clamp(min=TINY_ROW) / LEVELS  # R x 1
            tensors[name] = {
                "q": torch.round(rows / scale).clamp(-LEVELS, LEVELS).to(torch.int8),
                "scale": scale,
            }
        elif value.is_floating_point():
            tensors[name] = {"half": value.detach().half()}
        else:
            tensors[name] = {"exact": value.detach().clone()}
    return {"format": FORMAT, "tensors": tensors}


def unpack_state_dict(packed: Dict) -> Dict[str, Tensor]:
    """float32 tensors (others as stored) under the original names; tied names share one tensor. Files
    packed with float16 scales read the same way."""
    if packed.get("format") != FORMAT:
        raise ValueError(f"packed weights of format {packed.get('format')!r}; this code reads {FORMAT!r}")
    state, tied = {}, {}
    for name, entry in packed["tensors"].items():
        if "tied" in entry:
            tied[name] = entry["tied"]
        elif "q" in entry:
            state[name] = entry["q"].float() * entry["scale"].float()
        elif "half" in entry:
            state[name] = entry["half"].float()
        else:
            state[name] = entry["exact"]
    for name, source in tied.items():
        if source not in state:
            raise ValueError(f"packed weights: {name} is tied to {source}, which they do not hold")
        state[name] = state[source]
    return {name: state[name] for name in packed["tensors"]}  # the original order


def write_packed(packed: Dict, path: str) -> None:
    buffer = io.BytesIO()
    torch.save(packed, buffer)
    with lzma.open(path, "wb", preset=9) as f:
        f.write(buffer.getvalue())


def read_packed(path: str) -> Dict:
    """The packed dict of an xz file written by :func:`write_packed` (read with ``weights_only=True``)."""
    try:
        with lzma.open(path, "rb") as f:
            data = f.read()
    except lzma.LZMAError as error:
        raise ValueError(f"{path}: not an xz file of packed weights ({error})") from error
    try:
        return torch.load(io.BytesIO(data), map_location="cpu", weights_only=True)
    except Exception as error:  # torch raises several types for a file that is not its own
        raise ValueError(f"{path}: not packed weights ({type(error).__name__}: {error})") from error
