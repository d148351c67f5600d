"""Every task of the plugin prepares its model config (presets filled, keys checked) exactly once per
model it builds: ``tasks/prepared_model.PreparedModelTask`` runs ``prepare_model_config`` before the
task's own ``build_prepared_model``."""

import sys

import pytest
from fairseq import tasks
from fairseq.dataclass.initialize import add_defaults
from omegaconf import OmegaConf

from unilm_fairseq.models import architecture_presets
from unilm_fairseq.tasks.prepared_model import PreparedModelTask

from ..helpers.models import make_dictionary

UNILM = {"_name": "unilmv2_tiny", "encoder_layers": 1, "dropout": 0.0, "attention_dropout": 0.0}
PALM = {"_name": "palm_tiny", "encoder_layers": 1, "decoder_layers": 1, "max_source_positions": 64,
        "max_target_positions": 64}  # fmt: skip

# task section, model section, for each task the plugin registers
CASES = {
    "pmlm": ({}, UNILM),
    "unilm": (
        {},
        {
            **UNILM,
            "_name": "unilm_v1_base",
            "encoder_embed_dim": 16,
            "encoder_ffn_embed_dim": 24,
            "encoder_attention_heads": 2,
        },
    ),
    "unilm_seq2seq": ({"source_lang": "src", "target_lang": "tgt"}, UNILM),
    "unilm_sentence_prediction": (
        {"num_classes": 2, "regression_target": False, "classification_head_name": "head"},
        UNILM,
    ),
    "squad_qa": ({"max_seq_length": 64, "max_query_length": 16}, UNILM),
    "palm_pretrain": ({"max_fragment_tokens": 40, "max_context_tokens": 32}, PALM),
    "palm_seq2seq": ({"source_lang": "src", "target_lang": "tgt"}, PALM),
}


def plugin_tasks():
    return sorted(
        key for key, cls in tasks.TASK_REGISTRY.items() if cls.__module__.startswith("unilm_fairseq.")
    )


def test_every_registered_task_has_a_case_and_the_template():
    assert sorted(CASES) == plugin_tasks()
    for key in CASES:
        assert issubclass(tasks.TASK_REGISTRY[key], PreparedModelTask), key


@pytest.fixture
def data(tmp_path):
    d = make_dictionary()
    for name in ("dict.txt", "dict.src.txt", "dict.tgt.txt"):
        d.save(str(tmp_path / name))
    for folder in ("input0", "label"):
        (tmp_path / folder).mkdir()
    d.save(str(tmp_path / "input0" / "dict.txt"))
    (tmp_path / "label" / "dict.txt").write_text("yes 1\nno 1\n")
    return str(tmp_path)


@pytest.fixture
def prepare_calls(monkeypatch):
    """Counts ``prepare_model_config`` calls, under every name a plugin module imported it as."""
    calls = []
    real = architecture_presets.prepare_model_config

    def counted(cfg, from_checkpoint=False):
        calls.append(from_checkpoint)
        return real(cfg, from_checkpoint)

    for name, module in list(sys.modules.items()):
        if name.startswith("unilm_fairseq") and getattr(module, "prepare_model_config", None) is real:
            monkeypatch.setattr(module, "prepare_model_config", counted)
    return calls


@pytest.mark.parametrize("from_checkpoint", [False, True])
@pytest.mark.parametrize("key", sorted(CASES))
def test_each_task_prepares_the_model_config_once_per_build(
    key, from_checkpoint, data, prepare_calls, one_thread
):
    task_section, model_section = CASES[key]
    cfg = OmegaConf.create({"common": {"seed": 1}, "task": {"_name": key, "data": data, **task_section},
                            "model": dict(model_section)})  # fmt: skip
    add_defaults(cfg)
    task = tasks.setup_task(cfg.task)
    model = task.build_model(cfg.model, from_checkpoint=from_checkpoint)
    assert model is not None
    assert prepare_calls == [from_checkpoint]
