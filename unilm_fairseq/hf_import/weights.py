"""Find and read the weights of a Hugging Face model directory (safetensors or PyTorch pickles)."""

import json
import logging
import os
from typing import Dict, List

import torch
from torch import Tensor

from .config import ConversionError

logger = logging.getLogger(__name__)

SAFETENSORS_FILE = "model.safetensors"
PYTORCH_FILE = "pytorch_model.bin"
# sharded checkpoints list their shards in an index next to them
INDEX_SUFFIX = ".index.json"
WEIGHT_FILES = (SAFETENSORS_FILE, PYTORCH_FILE)


def find_weights(model_dir: str) -> str:
    """The weights file (or shard index) of ``model_dir``, safetensors first."""
    for name in WEIGHT_FILES:
        for candidate in (name, name + INDEX_SUFFIX):
            path = os.path.join(model_dir, candidate)
            if os.path.isfile(path):
                return path
    raise ConversionError(f"{model_dir}: no weights found (expected {' or '.join(WEIGHT_FILES)})")


def _read_one(path: str) -> Dict[str, Tensor]:
    if path.endswith(".safetensors"):
        try:
            from safetensors.torch import load_file
        except ImportError:
            raise ConversionError(f"{path}: reading safetensors needs `pip install safetensors`") from None
        return load_file(path)
    # weights_only: a pickled checkpoint may not run code while loading
    state = torch.load(path, map_location="cpu", weights_only=True)
    if not isinstance(state, dict):
        raise ConversionError(f"{path}: expected a state dict, found {type(state).__name__}")
    return state


def _shards(index_path: str) -> List[str]:
    with open(index_path, encoding="utf-8") as f:
        weight_map = json.load(f).get("weight_map")
    if not isinstance(weight_map, dict) or not weight_map:
        raise ConversionError(f"{index_path}: no weight_map")
    folder = os.path.dirname(index_path)
    return [os.path.join(folder, name) for name in sorted(set(weight_map.values()))]


def read_weights(path: str) -> Dict[str, Tensor]:
    """Every tensor of a weights file, or of all shards a ``*.index.json`` lists.

    Raises:
        ConversionError: naming the file that cannot be read.
    """
    paths = _shards(path) if path.endswith(INDEX_SUFFIX) else [path]
    state: Dict[str, Tensor] = {}
    for shard in paths:
        if not os.path.isfile(shard):
            raise ConversionError(f"{path}: shard {shard} not found")
        try:
            state.update(_read_one(shard))
        except ConversionError:
            raise
        except Exception as err:  # corrupt or truncated files raise many different types
            raise ConversionError(f"{shard}: cannot read weights ({type(err).__name__}: {err})") from None
    logger.info("read %d tensors from %s", len(state), path)
    return state
