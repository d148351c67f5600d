"""A model folder's generation.json: read strictly, and the precedence of generate()'s settings (given, then
the folder's, then the built-in ones with the model's target length)."""

import json
from types import SimpleNamespace

import pytest

from unilm_fairseq.hub.base import UniLMHubInterface, read_generation_defaults


def test_a_folder_without_the_file_has_no_defaults(tmp_path):
    assert read_generation_defaults(str(tmp_path)) == {}


def test_every_kind_of_setting_reads_back(tmp_path):
    settings = {"checkpoint": "checkpoint_best.pt", "bpe": "wordpiece", "beam": 5, "lenpen": 1,
                "max_len_a": 0.5, "min_len": 20, "max_len_b": 48, "no_repeat_ngram_size": 3,
                "no_repeat_ngram_exempt": [".", ","], "lenpen_style": "gnmt"}  # fmt: skip
    (tmp_path / "generation.json").write_text(json.dumps(settings))
    assert read_generation_defaults(str(tmp_path)) == settings


@pytest.mark.parametrize(
    "text, message",
    [
        ("{beam: 5", "not a JSON object"),
        ("[5]", "not a JSON object"),
        ('{"beems": 5}', "unknown setting 'beems'"),
        ('{"beam": "5"}', 'beam is "5", not integer'),
        ('{"beam": 4.5}', "beam is 4.5, not integer"),
        ('{"lenpen": true}', "lenpen is true, not number"),
        ('{"no_repeat_ngram_exempt": "."}', 'no_repeat_ngram_exempt is ".", not list of text'),
        ('{"checkpoint": null}', "checkpoint is null, not text"),
    ],
)
def test_a_broken_file_is_an_error_naming_it(tmp_path, text, message):
    (tmp_path / "generation.json").write_text(text)
    with pytest.raises(ValueError, match=message) as error:
        read_generation_defaults(str(tmp_path))
    assert "generation.json" in str(error.value)


def hub(defaults, max_target_positions=48):
    interface = UniLMHubInterface.__new__(UniLMHubInterface)  # the settings logic alone, no model
    interface.generation_defaults = defaults
    interface.cfg = SimpleNamespace(task=SimpleNamespace(max_target_positions=max_target_positions))
    return interface


def test_given_settings_win_then_the_folders_then_the_builtin_ones(tmp_path):
    (tmp_path / "generation.json").write_text(json.dumps({"beam": 4, "min_len": 20, "max_len_b": 40}))
    interface = hub(read_generation_defaults(str(tmp_path)))
    unset = dict(
        beam=None, lenpen=None, no_repeat_ngram_size=None, min_len=None, max_len_a=None, max_len_b=None
    )
    assert interface._decoding_settings(**{**unset, "min_len": 3}) == {
        "beam": 4, "lenpen": 1.0, "no_repeat_ngram_size": 0, "min_len": 3, "max_len_a": 0, "max_len_b": 40,
    }  # fmt: skip
    # without a folder file, an output may be as long as the model's target positions, not 200 tokens
    assert hub({}, max_target_positions=32)._decoding_settings(**unset)["max_len_b"] == 32
    # an s2s-ft task's settled spec holds the limit the checkpoint was fine-tuned with
    interface = hub({}, max_target_positions=32)
    interface.task = SimpleNamespace(seq2seq_spec=SimpleNamespace(max_target=20))
    assert interface._decoding_settings(**unset)["max_len_b"] == 20


def write_folder(*args):
    import subprocess
    import sys

    from ..helpers.cli import REPO

    script = f"{REPO}/scripts/write_model_folder.py"
    return subprocess.run([sys.executable, script, *map(str, args)], capture_output=True, text=True)


def test_the_folder_writer_copies_what_loading_needs_and_refuses_what_is_missing(tmp_path):
    (tmp_path / "bin").mkdir()
    for side in ("src", "tgt"):
        (tmp_path / "bin" / f"dict.{side}.txt").write_text("[PAD]\n")
    (tmp_path / "ckpt").mkdir()
    (tmp_path / "ckpt" / "checkpoint_best.pt").write_bytes(b"")
    (tmp_path / "vocab").write_text("[PAD]\nword\n")
    common = ["--dicts", tmp_path / "bin", "--checkpoint", "checkpoint_best.pt", "--beam", "4",
              "--lenpen", "0.6", "--min-len", "3", "--max-len-b", "20",
              "--no-repeat-ngram-size", "3"]  # fmt: skip
    done = write_folder(tmp_path / "ckpt", *common, "--bpe", "wordpiece", "--bpe-file", tmp_path / "vocab",
                        "--lenpen-style", "gnmt", "--no-repeat-ngram-exempt", ". ,")  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert (tmp_path / "ckpt" / "vocab.txt").read_text() == "[PAD]\nword\n"
    settings = read_generation_defaults(str(tmp_path / "ckpt"))
    assert settings["no_repeat_ngram_exempt"] == [".", ","] and settings["lenpen"] == 0.6
    assert "lowercase" not in settings  # by default the vocabulary decides
    # the casing of the training text, and the folder's own files given back to it (settings rewritten)
    ckpt = tmp_path / "ckpt"
    for flag, lowercase in (("--lowercase", True), ("--cased", False)):
        own = ["--dicts", ckpt, *common[2:], "--bpe", "wordpiece", "--bpe-file", ckpt / "vocab.txt", flag]
        done = write_folder(ckpt, *own)
        assert done.returncode == 0, done.stderr
        assert read_generation_defaults(str(ckpt))["lowercase"] is lowercase
    assert (ckpt / "vocab.txt").read_text() == "[PAD]\nword\n"
    refused = write_folder(tmp_path / "ckpt", *common, "--bpe", "none", "--bpe-file", tmp_path / "vocab")
    assert refused.returncode == 2 and "--bpe-file goes with" in refused.stderr
    missing = write_folder(tmp_path / "ckpt", *common[:3], "checkpoint_last.pt", *common[4:], "--bpe", "none")
    assert missing.returncode == 1 and "checkpoint_last.pt: no such file" in missing.stderr


def test_the_unilm_model_class_leaves_the_checkpoint_to_the_folder(monkeypatch):
    """``UniLMv2Model.from_pretrained(FOLDER)`` loads the checkpoint the folder's generation.json names, as
    ``UniLMModel.from_pretrained(FOLDER)`` does: it used to ask for ``checkpoint_best.pt`` whatever the folder
    had decoded."""
    from unilm_fairseq.models.unilmv2 import UniLMv2Model

    calls = []
    monkeypatch.setattr(
        UniLMHubInterface, "from_pretrained", classmethod(lambda cls, *args, **kw: calls.append(args))
    )
    UniLMv2Model.from_pretrained("folder")
    assert calls == [("folder", None, ".")]


def test_the_palm_model_class_leaves_the_checkpoint_to_the_folder(monkeypatch):
    """``PALMModel.from_pretrained(FOLDER)`` loads the checkpoint the folder's generation.json names (the one
    that was decoded), as the hub interface does, rather than always ``checkpoint_best.pt``."""
    from unilm_fairseq.hub.palm import PALMHubInterface
    from unilm_fairseq.models.palm import PALMModel

    calls = []
    monkeypatch.setattr(
        PALMHubInterface, "from_pretrained", classmethod(lambda cls, *args, **kw: calls.append(args))
    )
    PALMModel.from_pretrained("folder")
    assert calls == [("folder", None, ".")]
    assert issubclass(PALMHubInterface, UniLMHubInterface)  # generation.json and the target-length default
