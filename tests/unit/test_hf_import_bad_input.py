"""Model directories that cannot be converted: a clear error naming the file and the mismatch, and no
output left behind."""

import json
import os
import shutil
import sys

import pytest
import torch

from ..helpers.cli import REPO, run_cli
from ..helpers.hf import TINY, save_hf, wordpiece_tokens

transformers = pytest.importorskip("transformers")
pytest.importorskip("safetensors")

from unilm_fairseq.hf_import import ConversionError, convert_hf_checkpoint  # noqa: E402
from unilm_fairseq.hf_import import convert as convert_module  # noqa: E402


@pytest.fixture(scope="module")
def bert_dir(tmp_path_factory):
    tokens = wordpiece_tokens()
    torch.manual_seed(0)
    model = transformers.BertForMaskedLM(transformers.BertConfig(vocab_size=len(tokens), **TINY))
    path = str(tmp_path_factory.mktemp("hf") / "bert")
    return save_hf(model, path, {"vocab.txt": "\n".join(tokens) + "\n"})


@pytest.fixture
def model_dir(bert_dir, tmp_path):
    """A private copy to break."""
    return shutil.copytree(bert_dir, str(tmp_path / "model"))


def edit_config(model_dir, **changes):
    path = os.path.join(model_dir, "config.json")
    with open(path) as f:
        config = json.load(f)
    config.update(changes)
    with open(path, "w") as f:
        json.dump(config, f)


def assert_fails_cleanly(model_dir, out_dir, match, **kwargs):
    parent = os.path.dirname(out_dir)
    before = sorted(os.listdir(parent))
    with pytest.raises(ConversionError, match=match):
        convert_hf_checkpoint(model_dir, out_dir, **kwargs)
    assert not os.path.exists(out_dir)
    assert sorted(os.listdir(parent)) == before  # no temporary folder left either


def test_unknown_model_type(model_dir, tmp_path):
    edit_config(model_dir, model_type="gpt2")
    assert_fails_cleanly(
        model_dir, str(tmp_path / "out"), r"config\.json: model_type 'gpt2' is not supported"
    )


def test_missing_config(model_dir, tmp_path):
    os.remove(os.path.join(model_dir, "config.json"))
    assert_fails_cleanly(model_dir, str(tmp_path / "out"), r"config\.json not found")


def test_missing_weights(model_dir, tmp_path):
    os.remove(os.path.join(model_dir, "model.safetensors"))
    assert_fails_cleanly(
        model_dir, str(tmp_path / "out"), "no weights found.*model.safetensors or pytorch_model.bin"
    )


def test_missing_vocabulary(model_dir, tmp_path):
    os.remove(os.path.join(model_dir, "vocab.txt"))
    assert_fails_cleanly(model_dir, str(tmp_path / "out"), "no vocabulary found.*vocab.txt or tokenizer.json")


def test_corrupt_weights(model_dir, tmp_path):
    with open(os.path.join(model_dir, "model.safetensors"), "r+b") as f:
        f.truncate(100)
    assert_fails_cleanly(model_dir, str(tmp_path / "out"), r"model\.safetensors: cannot read weights")


def test_shape_contradicts_config(model_dir, tmp_path):
    edit_config(model_dir, intermediate_size=TINY["intermediate_size"] + 8)
    assert_fails_cleanly(
        model_dir,
        str(tmp_path / "out"),
        r"model\.safetensors: bert\.encoder\.layer\.0\.intermediate\.dense\.weight has shape \(40, 24\) "
        r"but .*config\.json gives \(48, 24\)",
    )


def test_more_layers_than_the_weights(model_dir, tmp_path):
    edit_config(model_dir, num_hidden_layers=TINY["num_hidden_layers"] + 1)
    assert_fails_cleanly(
        model_dir, str(tmp_path / "out"), r"model\.safetensors: missing weight 'bert\.encoder\.layer\.2"
    )


def test_fewer_layers_than_the_weights(model_dir, tmp_path):
    edit_config(model_dir, num_hidden_layers=TINY["num_hidden_layers"] - 1)
    assert_fails_cleanly(model_dir, str(tmp_path / "out"), r"model\.safetensors: \d+ weights have no place")


def test_config_vocab_size_contradicts_embeddings(model_dir, tmp_path):
    edit_config(model_dir, vocab_size=len(wordpiece_tokens()) + 4)
    assert_fails_cleanly(
        model_dir, str(tmp_path / "out"), r"has 46 rows but .*config\.json says vocab_size 50"
    )


def test_vocabulary_does_not_match_embeddings(model_dir, tmp_path):
    with open(os.path.join(model_dir, "vocab.txt"), "a") as f:
        f.write("extra\n")
    assert_fails_cleanly(
        model_dir,
        str(tmp_path / "out"),
        r"vocab\.txt gives 47 tokens but .*model\.safetensors has 46 word embeddings",
    )


def test_relative_bias_missing_from_weights(model_dir, tmp_path):
    edit_config(model_dir, rel_pos_bins=32, max_rel_pos=128)
    assert_fails_cleanly(model_dir, str(tmp_path / "out"), r"no weights for \['transformer\.rel_pos_bias")


@pytest.mark.parametrize(
    "type_ids, match",
    [
        (
            dict(source_type_id=4, target_type_id=5),
            r"config\.json: source_type_id 4 has no row among type_vocab_size 2",
        ),
        (dict(target_type_id="1"), r"config\.json: 'target_type_id' must be a non-negative integer, got '1'"),
    ],
)
def test_s2s_ft_type_ids_outside_the_segment_table(model_dir, tmp_path, type_ids, match):
    edit_config(model_dir, **type_ids)
    assert_fails_cleanly(model_dir, str(tmp_path / "out"), match)


def test_existing_output_is_kept(model_dir, tmp_path):
    out = tmp_path / "out"
    out.mkdir()
    (out / "keep.txt").write_text("mine")
    with pytest.raises(ConversionError, match="already exists and is not empty"):
        convert_hf_checkpoint(model_dir, str(out))
    assert os.listdir(out) == ["keep.txt"]
    convert_hf_checkpoint(model_dir, str(out), overwrite=True)
    assert sorted(os.listdir(out)) == ["dict.txt", "model.pt", "model_args.txt"]


def test_failure_while_writing_leaves_nothing(model_dir, tmp_path, monkeypatch):
    def disk_full(*args, **kwargs):
        raise OSError("No space left on device")

    monkeypatch.setattr(convert_module.torch, "save", disk_full)
    parent = tmp_path / "outputs"
    parent.mkdir()
    with pytest.raises(OSError, match="No space"):
        convert_hf_checkpoint(model_dir, str(parent / "out"))
    assert os.listdir(parent) == []


def test_cli_reports_the_error(model_dir, tmp_path):
    edit_config(model_dir, model_type="t5")
    script = os.path.join(REPO, "scripts", "convert_hf_checkpoint.py")
    proc = run_cli([sys.executable, script, model_dir, str(tmp_path / "out")], check=False)
    assert proc.returncode == 1
    assert "model_type 't5' is not supported" in proc.stderr
    assert not (tmp_path / "out").exists()


def test_fitting_errors_come_from_check_fits(model_dir, tmp_path):
    """The conversion's last step is the check every initialisation runs; its error names the HF weights."""
    from unilm_fairseq.checkpoint.fitting import CheckpointMismatch
    from unilm_fairseq.models.unilmv2 import RELATIVE_POSITION_BIAS

    edit_config(model_dir, rel_pos_bins=32, max_rel_pos=128)
    with pytest.raises(ConversionError) as error:
        convert_hf_checkpoint(model_dir, str(tmp_path / "out"))
    mismatch = error.value.__cause__
    assert isinstance(mismatch, CheckpointMismatch)
    assert mismatch.missing == [RELATIVE_POSITION_BIAS + "table.weight"]
    assert mismatch.source == os.path.join(model_dir, "model.safetensors")
