"""Architecture presets (``unilmv2_tiny``, ``unilm_v1_base``, ``palm_large`` ...) in fairseq-hydra-train's
model configs.

``fairseq-train --arch unilmv2_tiny`` runs the architecture function on its arguments before it builds the
model config, so the preset fills every size the command line leaves out. ``fairseq-hydra-train`` builds
the config first: ``fairseq.dataclass.initialize.add_defaults`` fills ``model`` from the dataclass
registered for the model, and the architecture function that ``fairseq.models.build_model`` runs afterwards
finds nothing left unset. A Hydra config with ``model._name: unilmv2_tiny`` would build a base-sized model
(and ``unilm_v1_base`` one with 2 segments instead of 6) without a word.

So the ``unilmv2`` model keeps its dataclass for ``fairseq-train``'s options and ``--arch`` (the class's
own ``__dataclass``) but leaves fairseq's dataclass registry, like the ``palm`` model, which never had an
entry: a Hydra config's model section then reaches the architecture function as written, and the preset
fills what it leaves out, as on the command line. Every task of the plugin runs
:func:`prepare_model_config` once before it reads model options (``tasks/prepared_model.py``): it runs the
architecture function early and catches a misspelt option, which the dataclass used to.
"""

from dataclasses import MISSING, fields
from typing import Any, Mapping

from fairseq.models import ARCH_CONFIG_REGISTRY, ARCH_MODEL_REGISTRY, MODEL_DATACLASS_REGISTRY
from fairseq.utils import safe_getattr
from omegaconf import OmegaConf, open_dict


def fill_unset(args, values: Mapping[str, Any]) -> None:
    """Set each option of ``values`` that ``args`` leaves unset (absent or None) to its value there."""
    for name, value in values.items():
        setattr(args, name, safe_getattr(args, name, value))


def dataclass_defaults(dataclass) -> dict:
    """``{option: default}`` of a model's config dataclass: the one place its defaults are written."""
    found = {}
    for f in fields(dataclass):
        if f.name.startswith("_"):
            continue  # FairseqDataclass's _name
        if f.default is not MISSING:
            found[f.name] = f.default
        elif f.default_factory is not MISSING:
            found[f.name] = f.default_factory()
    return found


def fill_architecture(cfg) -> None:
    """Run the architecture function that ``cfg._name`` names on a config (Hydra's model section), in
    place; it fills only unset options. Namespaces (``fairseq-train``) already went through it."""
    name = cfg.get("_name") if OmegaConf.is_config(cfg) else None
    if name in ARCH_CONFIG_REGISTRY:
        with open_dict(cfg):
            ARCH_CONFIG_REGISTRY[name](cfg)


def check_model_keys(cfg) -> None:
    """A clear error for an option in a config (Hydra's model section) that its model's dataclass does not
    have (models without a dataclass, like ``palm``, are not checked)."""
    name = cfg.get("_name") if OmegaConf.is_config(cfg) else None
    dataclass = getattr(ARCH_MODEL_REGISTRY.get(name), "__dataclass", None)
    if dataclass is None:
        return
    known = set(dataclass.__dataclass_fields__)
    unknown = sorted(str(key) for key in cfg.keys() if not str(key).startswith("_") and key not in known)
    if unknown:
        raise ValueError(f"model options {unknown} are not options of model._name {name}")


def prepare_model_config(cfg, from_checkpoint: bool = False) -> None:
    """What a task does to a model config before it reads it: the architecture's presets filled in and,
    unless the config comes from a checkpoint (whose options the model's loading handles), its keys
    checked."""
    fill_architecture(cfg)
    if not from_checkpoint:
        check_model_keys(cfg)


def leave_dataclass_registry(model: str, architecture) -> None:
    """Take ``model`` out of fairseq's model dataclass registry and make ``architecture`` the function of
    the architecture named after the model (``register_model`` left a no-op there), so that
    ``model._name: unilmv2`` fills the base model's options (see the module docstring)."""
    MODEL_DATACLASS_REGISTRY.pop(model, None)
    ARCH_CONFIG_REGISTRY[model] = architecture
