"""Which segment ids ``--seq2seq-segment-ids auto`` fine-tunes a converted checkpoint with: what its
``config.json`` records wins (the original s2s-ft code reads ``source_type_id``/``target_type_id`` from the
model's config); only a checkpoint that records nothing is judged by its segment table (six rows: UniLM v1's
4/5); an explicit value wins over both.

Tiny BERT models with UniLM v1's six token types, converted by the real importer.
"""

import logging
import os

import pytest
import torch

from unilm_fairseq.checkpoint.converted import ORIGIN_KEY
from unilm_fairseq.checkpoint.unilmv2_init import checkpoint_seq2seq_segments

from ..helpers.hf import TINY, save_hf, wordpiece_tokens
from ..helpers.seq2seq import make_task

transformers = pytest.importorskip("transformers")
pytest.importorskip("safetensors")

from unilm_fairseq.hf_import import convert_hf_checkpoint  # noqa: E402

V1, PAIR = (4, 5), (0, 1)
V1_ROWS = 6
LIMITS = dict(max_source_positions=32, max_target_positions=16)


def converted(tmp_path, name, **type_ids):
    """A six-segment BERT whose config.json holds ``type_ids``, converted; the checkpoint's path."""
    tokens = wordpiece_tokens()
    torch.manual_seed(0)
    config = transformers.BertConfig(vocab_size=len(tokens), type_vocab_size=V1_ROWS, **TINY, **type_ids)
    hf_dir = save_hf(transformers.BertForMaskedLM(config), str(tmp_path / f"{name}-hf"), {
        "vocab.txt": "\n".join(tokens) + "\n"})  # fmt: skip
    return os.path.join(convert_hf_checkpoint(hf_dir, str(tmp_path / name)), "model.pt")


@pytest.fixture(scope="module")
def checkpoints(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("converted")
    return {
        "0-1": converted(tmp, "pair", source_type_id=0, target_type_id=1),
        "none": converted(tmp, "none"),
        "target only": converted(tmp, "target", target_type_id=5),
    }


def auto_segments(path, caplog, **overrides):
    """The task's ids for ``path`` and its one log line about them."""
    task = make_task(pretrained_checkpoint=path, **LIMITS, **overrides)
    with caplog.at_level(logging.INFO, logger="unilm_fairseq.tasks.unilm_seq2seq"):
        caplog.clear()
        segments = task.seq2seq_spec.segments
        assert task.seq2seq_spec.segments == segments  # settled once
    lines = [r.getMessage() for r in caplog.records if "seq2seq segment ids" in r.getMessage()]
    assert len(lines) == 1, lines
    return segments, lines[0]


def test_recorded_0_1_win_over_six_segment_rows(checkpoints, caplog):
    segments, line = auto_segments(checkpoints["0-1"], caplog)
    assert segments == PAIR
    assert "source 0, target 1" in line and "config.json's source_type_id/target_type_id" in line


def test_a_checkpoint_recording_nothing_gets_the_inferred_v1_ids(checkpoints, caplog):
    segments, line = auto_segments(checkpoints["none"], caplog)
    assert segments == V1
    assert "records none and has 6 segment embeddings" in line and "UniLM v1" in line


def test_a_missing_id_takes_s2s_ft_config_default(checkpoints):
    # s2s-ft's config defaults each id on its own: source 0 when only the target's is given
    assert checkpoint_seq2seq_segments(checkpoints["target only"])[0] == (0, 5)


@pytest.mark.parametrize("which, explicit, expected", [("0-1", "4-5", V1), ("none", "0-1", PAIR)])
def test_an_explicit_value_wins_over_record_and_rule(checkpoints, caplog, which, explicit, expected):
    segments, line = auto_segments(checkpoints[which], caplog, seq2seq_segment_ids=explicit)
    assert segments == expected and f"--seq2seq-segment-ids {explicit}" in line


def test_a_conversion_from_before_the_record_falls_back_to_the_table(checkpoints, tmp_path):
    state = torch.load(checkpoints["0-1"], weights_only=False)
    state["extra_state"][ORIGIN_KEY] = {
        k: v for k, v in state["extra_state"][ORIGIN_KEY].items() if k in ("model_dir", "model_type")
    }
    torch.save(state, tmp_path / "old.pt")
    segments, reason = checkpoint_seq2seq_segments(str(tmp_path / "old.pt"))
    assert segments == V1 and "records none" in reason
