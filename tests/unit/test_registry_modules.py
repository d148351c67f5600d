"""Every task, model, architecture, criterion, scorer and BPE the plugin registers lives in the module
named after its registry key, so ``--task pmlm`` is found in ``tasks/pmlm.py`` and so on."""

import importlib

import pytest
from fairseq import registry
from fairseq.models import ARCH_CONFIG_REGISTRY, ARCH_MODEL_NAME_REGISTRY, MODEL_REGISTRY
from fairseq.tasks import TASK_REGISTRY

import unilm_fairseq  # noqa: F401  (registers everything)

PACKAGE = "unilm_fairseq"
# fairseq registry name -> the plugin's sub-package for it
PACKAGES = {
    "task": "tasks",
    "model": "models",
    "criterion": "criterions",
    "scoring": "scoring",
    "bpe": "encoders",
}


def plugin_entries():
    """``(kind, key, object)`` for every registry entry defined in the plugin."""
    found = [("task", key, cls) for key, cls in TASK_REGISTRY.items()]
    found += [("model", key, cls) for key, cls in MODEL_REGISTRY.items()]
    for kind in ("criterion", "scoring", "bpe"):
        found += [(kind, key, cls) for key, cls in registry.REGISTRIES[kind]["registry"].items()]
    return [entry for entry in found if entry[2].__module__.startswith(PACKAGE + ".")]


def test_the_plugin_registers_what_its_documentation_names():
    keys = {(kind, key) for kind, key, _ in plugin_entries()}
    expected = {
        ("task", "pmlm"),
        ("task", "unilm"),
        ("task", "unilm_seq2seq"),
        ("task", "palm_pretrain"),
        ("task", "palm_seq2seq"),
        ("task", "squad_qa"),
        ("model", "unilmv2"),
        ("model", "palm"),
        ("criterion", "ae_par"),
        ("criterion", "unilm"),
        ("criterion", "unilm_seq2seq"),
        ("criterion", "palm"),
        ("criterion", "squad_span"),
        ("scoring", "rouge"),
        ("bpe", "wordpiece"),
    }
    assert expected <= keys, sorted(expected - keys)


@pytest.mark.parametrize("kind,key,obj", plugin_entries(), ids=lambda v: v if isinstance(v, str) else "")
def test_each_registered_class_lives_in_the_module_named_after_its_key(kind, key, obj):
    assert obj.__module__ == f"{PACKAGE}.{PACKAGES[kind]}.{key}"
    # and the module is importable under that name (no re-export from elsewhere)
    assert getattr(importlib.import_module(obj.__module__), obj.__name__) is obj


def architecture_module(arch: str) -> str:
    """The module an architecture lives in: the one named after its model, or, for a family that shares
    another family's model (``unilm_v1_*`` of ``unilmv2``), the one named after that family."""
    model = ARCH_MODEL_NAME_REGISTRY[arch]
    family = next((name for name in FAMILIES if arch.startswith(name + "_")), model)
    return f"{PACKAGE}.models.{family}"


# architecture families registered under another family's model
FAMILIES = ("unilm_v1",)


def test_each_architecture_is_defined_beside_its_model():
    archs = {arch: fn for arch, fn in ARCH_CONFIG_REGISTRY.items() if fn.__module__.startswith(PACKAGE + ".")}
    assert {"unilmv2_base", "unilm_v1_base", "unilm_v1_large", "palm_base"} <= set(archs)
    for arch, fn in archs.items():
        assert fn.__module__ == architecture_module(arch), arch
    assert architecture_module("unilm_v1_base") == f"{PACKAGE}.models.unilm_v1"
    assert ARCH_MODEL_NAME_REGISTRY["unilm_v1_base"] == "unilmv2"
