"""Checkpoints a format cannot hold, and unreadable input: a clear ``ExportError`` that names the problem (and
the format or option that would work), and no output left behind."""

import os
import shutil

import pytest
import torch
from fairseq import options

from unilm_fairseq.hf_export import ExportError, export_checkpoint

from ..helpers.hf_export import fairseq_dictionary, perturbed_model, wordpiece_dictionary, write_checkpoint
from ..helpers.palm import palm_model

pytest.importorskip("safetensors")


def assert_fails_cleanly(checkpoint, out_dir, match, **kwargs):
    parent = os.path.dirname(out_dir)
    os.makedirs(parent, exist_ok=True)
    before = sorted(os.listdir(parent))
    with pytest.raises(ExportError, match=match):
        export_checkpoint(checkpoint, out_dir, **kwargs)
    assert not os.path.exists(out_dir)
    assert sorted(os.listdir(parent)) == before  # no temporary folder left either


@pytest.fixture(scope="module")
def rel_pos_checkpoint(tmp_path_factory):
    model = perturbed_model(wordpiece_dictionary(), rel_pos_bins=16, max_rel_pos=7)
    return write_checkpoint(model, str(tmp_path_factory.mktemp("relpos")))


def test_relative_position_bias_into_bert_names_the_unilm_format(rel_pos_checkpoint, tmp_path):
    assert_fails_cleanly(
        rel_pos_checkpoint, str(tmp_path / "out"), r"relative position bias \(16 buckets\).*--format unilm"
    )
    # the formats that hold it take the same checkpoint
    assert export_checkpoint(rel_pos_checkpoint, str(tmp_path / "unilm"), "unilm").format == "unilm"


def test_palm_checkpoint(tmp_path):
    """PALM's encoder-decoder, saved with its argparse configuration as fairseq-train saves it."""
    parser = options.get_training_parser()
    args = options.parse_args_and_arch(
        parser,
        [str(tmp_path), "--user-dir", "unilm_fairseq", "--task", "palm_seq2seq", "--arch", "palm_tiny"],
    )
    path = str(tmp_path / "palm.pt")
    history = [{"criterion_name": "palm", "optimizer_name": "x", "lr_scheduler_state": {}, "num_updates": 1}]
    state = {"args": args, "cfg": None, "model": palm_model().state_dict(), "optimizer_history": history}
    torch.save({**state, "extra_state": {}}, path)
    for layout in ("bert", "unilm"):
        assert_fails_cleanly(
            path, str(tmp_path / "out"), r"palm_tiny model \(PALMModel\).*encoder-decoder", format=layout
        )


def test_electra_style_embeddings(tmp_path):
    model = perturbed_model(wordpiece_dictionary(), rel_pos_bins=0, token_embed_dim=16)
    checkpoint = write_checkpoint(model, str(tmp_path / "ckpt"))
    assert_fails_cleanly(checkpoint, str(tmp_path / "out"), r"16 wide and projected to the hidden size 24")


def test_activation_that_unilm_code_lacks_names_the_bert_format(tmp_path):
    model = perturbed_model(wordpiece_dictionary(), rel_pos_bins=0, activation_fn="tanh")
    checkpoint = write_checkpoint(model, str(tmp_path / "ckpt"))
    assert_fails_cleanly(
        checkpoint, str(tmp_path / "out"), r"'tanh'.*gelu, relu; --format bert can", format="s2s-ft"
    )
    export_checkpoint(checkpoint, str(tmp_path / "bert"), "bert")


def test_unknown_format(rel_pos_checkpoint, tmp_path):
    assert_fails_cleanly(
        rel_pos_checkpoint, str(tmp_path / "out"), r"'roberta' is not supported", format="roberta"
    )


def test_missing_and_unreadable_checkpoints(tmp_path):
    assert_fails_cleanly(str(tmp_path / "nothing.pt"), str(tmp_path / "out"), r"nothing\.pt not found")
    garbage = tmp_path / "garbage.pt"
    garbage.write_bytes(b"not a checkpoint")
    assert_fails_cleanly(
        str(garbage), str(tmp_path / "out"), r"garbage\.pt: cannot read it as a fairseq checkpoint"
    )


def test_moved_dictionary_needs_data(tmp_path):
    model = perturbed_model(fairseq_dictionary(), rel_pos_bins=0)
    checkpoint = write_checkpoint(model, str(tmp_path / "train"))
    moved = shutil.move(str(tmp_path / "train"), str(tmp_path / "moved"))
    checkpoint = os.path.join(moved, os.path.basename(checkpoint))
    assert_fails_cleanly(
        checkpoint, str(tmp_path / "out"), r"cannot load the dictionary of its --task pmlm.*--data"
    )
    assert export_checkpoint(checkpoint, str(tmp_path / "out"), data=moved).format == "bert"


def test_dictionary_of_another_size(tmp_path):
    model = perturbed_model(fairseq_dictionary(), rel_pos_bins=0)
    checkpoint = write_checkpoint(model, str(tmp_path / "ckpt"))
    other = tmp_path / "other"
    other.mkdir()
    wordpiece_dictionary().save(str(other / "dict.txt"))
    assert_fails_cleanly(
        checkpoint,
        str(tmp_path / "out"),
        r"has 46 tokens but the model has 45 word embeddings",
        data=str(other),
    )


def test_bert_specials_as_ordinary_tokens_would_change_roles(tmp_path):
    dictionary = fairseq_dictionary()
    for token in ("[CLS]", "[PAD]", "[SEP]", "[UNK]", "[MASK]"):
        dictionary.add_symbol(token)
    model = perturbed_model(dictionary, rel_pos_bins=0)
    checkpoint = write_checkpoint(model, str(tmp_path / "ckpt"))
    assert_fails_cleanly(
        checkpoint, str(tmp_path / "out"), r"special tokens would change roles \(bos: id 0 -> 45"
    )


def test_existing_output_needs_overwrite(rel_pos_checkpoint, tmp_path):
    out = tmp_path / "out"
    out.mkdir()
    (out / "keep.txt").write_text("x")
    with pytest.raises(ExportError, match="not empty.*--overwrite"):
        export_checkpoint(rel_pos_checkpoint, str(out), "unilm")
    assert os.listdir(out) == ["keep.txt"]
    export_checkpoint(rel_pos_checkpoint, str(out), "unilm", overwrite=True)
    assert sorted(os.listdir(out)) == [
        "README.md",
        "config.json",
        "pytorch_model.bin",
        "tokenizer_config.json",
        "vocab.txt",
    ]
