"""Importing the plugin allow-lists fairseq's checkpoint classes and nothing that runs code."""

import argparse
import os
import pickle
import pickletools
import subprocess
import sys

import numpy as np
import pytest
import torch
from omegaconf import OmegaConf

import unilm_fairseq  # noqa: F401
from unilm_fairseq.checkpoint.safe_loading import fairseq_checkpoint_globals
from unilm_fairseq.hf_import.convert import checkpoint_state

from ..helpers.models import tiny_model


class RunsACommand:
    """Pickles to ``os.system(command)``: what a malicious checkpoint would hold."""

    def __init__(self, command):
        self.command = command

    def __reduce__(self):
        return os.system, (self.command,)


def fairseq_like_state():
    return {
        "args": argparse.Namespace(arch="unilmv2_tiny", lr=[0.001]),
        "cfg": OmegaConf.create({"model": {"_name": "unilmv2", "encoder_layers": 3}, "lr": [0.1]}),
        "model": {"w": torch.ones(2)},
        "extra_state": {"metrics": {"loss": np.float64(1.5), "hist": np.arange(3)}},
    }


def test_fairseq_state_loads_weights_only(tmp_path):
    path = tmp_path / "state.pt"
    torch.save(fairseq_like_state(), path)
    state = torch.load(path, weights_only=True)
    assert state["args"].arch == "unilmv2_tiny"
    assert state["cfg"].model.encoder_layers == 3
    assert state["extra_state"]["metrics"]["loss"] == 1.5
    assert torch.equal(state["model"]["w"], torch.ones(2))


def test_allow_list_is_what_makes_it_load(tmp_path):
    """Without the plugin's import, the same file is refused by torch's safe loader."""
    path = tmp_path / "state.pt"
    torch.save(fairseq_like_state(), path)
    probe = (
        "import sys, torch\n"
        "try:\n    torch.load(sys.argv[1])\n"
        "except Exception as e:\n    print(type(e).__name__)"
    )
    out = subprocess.run([sys.executable, "-c", probe, str(path)], capture_output=True, text=True, check=True)
    assert "UnpicklingError" in out.stdout


def test_arbitrary_callable_is_refused(tmp_path):
    marker = tmp_path / "pwned"
    path = tmp_path / "evil.pt"
    with open(path, "wb") as f:
        pickle.dump({"model": RunsACommand(f"touch {marker}")}, f, protocol=2)  # torch.save's protocol
    with pytest.raises(pickle.UnpicklingError):
        torch.load(path)  # the default: weights_only stays on
    with pytest.raises(pickle.UnpicklingError):
        torch.load(path, weights_only=True)
    assert not marker.exists()


def test_safe_loading_stays_on():
    assert "TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD" not in os.environ
    allowed = set(fairseq_checkpoint_globals())
    assert os.system not in allowed and eval not in allowed and getattr not in allowed
    assert argparse.Namespace in allowed


def pickled_globals(path) -> set:
    """``module.name`` of every class or function a ``torch.save`` file references."""
    import zipfile

    with zipfile.ZipFile(path) as archive:
        data = archive.read(next(n for n in archive.namelist() if n.endswith("data.pkl")))
    ops = list(pickletools.genops(data))
    found = set()
    for i, (op, arg, _) in enumerate(ops):
        if op.name == "GLOBAL":
            found.add(arg.replace(" ", "."))
        elif op.name == "STACK_GLOBAL":
            found.add(f"{ops[i - 2][1]}.{ops[i - 1][1]}")
    return found


def test_checkpoints_reference_no_class_of_the_plugin(tmp_path):
    """A checkpoint holds its config as plain containers next to the tensors (what fairseq's trainer and the
    conversion save): no class of this package is pickled, so its module paths may move."""
    model = tiny_model()
    path = tmp_path / "model.pt"
    torch.save(checkpoint_state(model, model.cfg, str(tmp_path), {"model_dir": "hf"}), path)
    found = pickled_globals(path)
    assert "collections.OrderedDict" in found  # the scan sees the state dict's class
    assert not [name for name in found if name.startswith("unilm_fairseq")]
    state = torch.load(path, weights_only=True)
    assert state["cfg"]["model"]["encoder_layers"] == 3
