"""A model folder's generation.json: read strictly, and the precedence of generate()'s settings (given, then
the folder's, then the built-in ones with the model's target length)."""

import json
from types import SimpleNamespace

import pytest

from unilm_fairseq.hub.unilm import UniLMHubInterface, read_generation_defaults


def test_a_folder_without_the_file_has_no_defaults(tmp_path):
    assert read_generation_defaults(str(tmp_path)) == {}


@pytest.mark.parametrize(
    "text, message",
    [
        ("{beam: 5", "not a JSON object"),
        ("[5]", "not a JSON object"),
        ('{"beems": 5}', "unknown setting 'beems'"),
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
