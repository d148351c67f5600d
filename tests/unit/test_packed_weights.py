"""Packed weights (int8 rows, xz): the round trip's error bound, tied tensors, the shipped file, bad input."""

import os
import sys

import pytest
import torch

from tests.helpers.cli import REPO
from unilm_fairseq.checkpoint.converted import ORIGIN_KEY
from unilm_fairseq.checkpoint.packed_weights import (
    PACKED_KEY,
    pack_state_dict,
    read_packed,
    unpack_state_dict,
    write_packed,
)
from unilm_fairseq.hf_export.model_card import _origin_text

sys.path.insert(0, os.path.join(REPO, "scripts"))
import pack_weights  # noqa: E402

SHIPPED = os.path.join(REPO, "data", "minilm-continued-ae.pt.xz")


def toy_state():
    torch.manual_seed(0)
    embeddings = torch.randn(50, 8)
    return {
        "embeddings.weight": embeddings,
        "layer.weight": torch.randn(8, 8) * 3,
        # rows far below 1: a float16 scale lost their precision (1e-4) or the whole row (1e-6)
        "small.weight": torch.randn(3, 8) * torch.tensor([[1e-2], [1e-4], [1e-6]]),
        "zero.weight": torch.zeros(4, 8),
        "layer.bias": torch.randn(8),
        "head.weight": embeddings,  # tied, as the LM head is
        "steps": torch.tensor([3, 4]),
    }


def test_round_trip_within_half_a_step_per_row(tmp_path):
    state = toy_state()
    path = tmp_path / "w.pt.xz"
    write_packed(pack_state_dict(state), str(path))
    back = unpack_state_dict(read_packed(str(path)))
    assert list(back) == list(state)
    for name in ("embeddings.weight", "layer.weight", "small.weight"):
        step = state[name].abs().amax(dim=1, keepdim=True) / 127
        error = (back[name] - state[name]).abs()
        # half a quantization step, plus the float32 rounding of the scale (times up to 127 levels)
        assert bool((error <= step * (0.5 + 127 * 2**-23)).all()), name
    assert torch.equal(back["zero.weight"], state["zero.weight"])
    assert (back["layer.bias"] - state["layer.bias"]).abs().max() < 2e-3  # float16
    assert torch.equal(back["steps"], state["steps"])
    assert back["head.weight"] is back["embeddings.weight"]  # still one tensor


def test_bad_files_are_clear_errors(tmp_path):
    not_xz = tmp_path / "plain.pt"
    not_xz.write_bytes(b"hello")
    with pytest.raises(ValueError, match="not an xz file"):
        read_packed(str(not_xz))
    with pytest.raises(ValueError, match="format"):
        unpack_state_dict({"format": "other", "tensors": {}})
    with pytest.raises(ValueError, match="tied to missing"):
        unpack_state_dict({"format": "int8-rows-v1", "tensors": {"a": {"tied": "missing"}}})


def test_unpack_refuses_a_base_of_another_architecture(tmp_path, capsys):
    write_packed(pack_state_dict(toy_state()), str(tmp_path / "w.pt.xz"))
    torch.save({"model": {"embeddings.weight": torch.zeros(50, 8)}}, tmp_path / "base.pt")
    assert (
        pack_weights.main(
            ["unpack", str(tmp_path / "w.pt.xz"), str(tmp_path / "base.pt"), str(tmp_path / "o.pt")]
        )
        == 1
    )
    assert "does not fit" in capsys.readouterr().err and not (tmp_path / "o.pt").exists()
    state = toy_state()
    state["layer.weight"] = torch.zeros(9, 8)
    torch.save({"model": state}, tmp_path / "base.pt")
    assert (
        pack_weights.main(
            ["unpack", str(tmp_path / "w.pt.xz"), str(tmp_path / "base.pt"), str(tmp_path / "o.pt")]
        )
        == 1
    )
    assert "other shapes for ['layer.weight']" in capsys.readouterr().err


def test_unpack_onto_a_base_keeps_its_config_and_takes_the_weights(tmp_path):
    state = toy_state()
    write_packed(pack_state_dict(state), str(tmp_path / "w.pt.xz"))
    base = {name: torch.zeros_like(value) for name, value in state.items()}
    origin = {"model_dir": "/models/minilm", "model_type": "bert"}  # what the importer records
    torch.save({"model": base, "cfg": {"kept": True}, "last_optimizer_state": {"x": 1},
                "extra_state": {ORIGIN_KEY: origin}}, tmp_path / "base.pt")  # fmt: skip
    assert (
        pack_weights.main(
            ["unpack", str(tmp_path / "w.pt.xz"), str(tmp_path / "base.pt"), str(tmp_path / "o.pt")]
        )
        == 0
    )
    out = torch.load(tmp_path / "o.pt", weights_only=True)
    assert out["cfg"] == {"kept": True} and "last_optimizer_state" not in out
    assert (out["model"]["layer.weight"] - state["layer.weight"]).abs().max() < 0.05
    # the origin stays and the packed file is added: an export's model card names both
    assert out["extra_state"] == {ORIGIN_KEY: origin, PACKED_KEY: str(tmp_path / "w.pt.xz")}
    assert _origin_text(out["extra_state"]) == (
        f"/models/minilm (bert, converted by scripts/convert_hf_checkpoint.py), with the weights of "
        f"{tmp_path / 'w.pt.xz'} (put in by scripts/pack_weights.py unpack)"
    )


def test_the_shipped_weights_fit_the_minilm_and_stay_under_25_mb():
    assert os.path.getsize(SHIPPED) <= 25 * 10**6
    weights = unpack_state_dict(read_packed(SHIPPED))
    assert weights["transformer.embeddings.tokens.weight"].shape == (30522, 384)
    assert weights["lm_head.weight"] is weights["transformer.embeddings.tokens.weight"]
    layers = {name.split(".")[2] for name in weights if name.startswith("transformer.layers.")}
    assert len(layers) == 6


def test_unpack_keeps_the_base_pooler_when_the_packed_weights_have_none(tmp_path, capsys):
    """Weights packed before the importer kept the pooler still unpack onto a base that has one: the
    pooler is frozen, so the base's values are the trained model's; any other missing weight is an error."""
    state = toy_state()
    write_packed(pack_state_dict(state), str(tmp_path / "w.pt.xz"))
    pooler = {"pooler.dense.weight": torch.randn(8, 8), "pooler.dense.bias": torch.randn(8)}
    base = {**{name: torch.zeros_like(value) for name, value in state.items()}, **pooler}
    torch.save({"model": base}, tmp_path / "base.pt")
    argv = ["unpack", str(tmp_path / "w.pt.xz"), str(tmp_path / "base.pt"), str(tmp_path / "o.pt")]
    assert pack_weights.main(argv) == 0
    out = torch.load(tmp_path / "o.pt", weights_only=True)["model"]
    assert all(torch.equal(out[k], v) for k, v in pooler.items())
    assert (out["layer.weight"] - state["layer.weight"]).abs().max() < 0.05
    torch.save({"model": {**base, "other.weight": torch.zeros(2)}}, tmp_path / "base.pt")
    assert pack_weights.main(argv) == 1
    assert "1 weights missing (first ['other.weight'])" in capsys.readouterr().err


def test_start_keeps_the_weights_and_origin_and_drops_the_run_state(tmp_path, capsys):
    """A training run's checkpoint becomes a start without its optimizer state, data position, meters and
    training time; a converted model (no run state) is linked, not copied; a second call replaces the
    first."""
    origin = {"model_dir": "/models/minilm", "model_type": "bert"}
    run_state = {"train_iterator": {"epoch": 3}, "previous_training_time": 4716.0, "metrics": {}, "best": 5.1,
                 "val_loss": 5.1}  # fmt: skip
    trained = {"model": toy_state(), "cfg": {"kept": True}, "optimizer_history": [{"num_updates": 396}],
               "last_optimizer_state": {"state": {}},
               "extra_state": {ORIGIN_KEY: origin, **run_state}}  # fmt: skip
    torch.save(trained, tmp_path / "checkpoint_last.pt")
    torch.save({"model": toy_state(), "extra_state": {ORIGIN_KEY: origin}}, tmp_path / "model.pt")
    out = tmp_path / "work" / "start.pt"
    argv = ["start", str(tmp_path / "model.pt"), str(out)]
    assert pack_weights.main(argv) == 0 and os.path.realpath(out) == str(tmp_path / "model.pt")
    assert pack_weights.main(["start", str(tmp_path / "checkpoint_last.pt"), str(out)]) == 0
    assert not os.path.islink(out)
    start = torch.load(out, weights_only=True)
    assert start["extra_state"] == {ORIGIN_KEY: origin} and start["last_optimizer_state"] is None
    assert start["cfg"] == {"kept": True} and start["optimizer_history"] == [{"num_updates": 396}]
    assert torch.equal(start["model"]["layer.weight"], toy_state()["layer.weight"])
    assert "396 updates, 1.31 h of training" in capsys.readouterr().err
    assert pack_weights.main(argv) == 0 and os.path.islink(out)
    assert pack_weights.main(["start", str(tmp_path / "none.pt"), str(out)]) == 1


def test_start_refuses_to_write_over_its_checkpoint(tmp_path, capsys):
    """OUT naming the checkpoint itself, directly or through a link to it, is an error that leaves the
    checkpoint whole; a link to it left by an earlier call is still replaced."""
    trained = {"model": toy_state(), "last_optimizer_state": {"state": {}},
               "extra_state": {"previous_training_time": 60.0}}  # fmt: skip
    checkpoint = tmp_path / "checkpoint_last.pt"
    torch.save(trained, checkpoint)
    os.symlink(checkpoint, tmp_path / "model.pt")
    for source in (checkpoint, tmp_path / "model.pt"):
        assert pack_weights.main(["start", str(source), str(checkpoint)]) == 1
        assert "give the start another path" in capsys.readouterr().err
        assert torch.load(checkpoint, weights_only=True)["last_optimizer_state"] == {"state": {}}
    assert pack_weights.main(["start", str(checkpoint), str(tmp_path / "model.pt")]) == 0
    assert not os.path.islink(tmp_path / "model.pt")
    assert torch.load(checkpoint, weights_only=True)["last_optimizer_state"] == {"state": {}}
