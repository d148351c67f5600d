"""Model configs the way fairseq-hydra-train builds them: a Hydra config's model section goes through
fairseq's ``add_defaults`` before the task builds the model. An architecture named there applies its
presets to what the section leaves out, as ``--arch`` does; a misspelt option is an error; PALM's own
options reach the model. (tests/cli/test_cli_hydra.py runs the command itself.)"""

import argparse
from dataclasses import fields

import pytest
import torch
from fairseq import options, tasks
from fairseq.dataclass.initialize import add_defaults
from fairseq.dataclass.utils import convert_namespace_to_omegaconf
from fairseq.models import ARCH_CONFIG_REGISTRY
from omegaconf import OmegaConf

from unilm_fairseq.models import PALMConfig, UniLMv2Config

from ..helpers.models import make_dictionary

TINY = {"dropout": 0.0, "attention_dropout": 0.0}


@pytest.fixture
def data(tmp_path):
    make_dictionary().save(str(tmp_path / "dict.txt"))
    return str(tmp_path)


def hydra_config(data, task, model):
    """What fairseq-hydra-train hands fairseq_cli.train.main, after its add_defaults."""
    cfg = OmegaConf.create({"common": {"seed": 1}, "task": {"data": data, **task}, "model": model})
    add_defaults(cfg)
    return cfg


def build(cfg):
    task = tasks.setup_task(cfg.task)
    return task.build_model(cfg.model)


def layers(model):
    return len(model.transformer.layers)


def test_an_architecture_fills_what_the_section_leaves_out(data, one_thread):
    model = build(hydra_config(data, {"_name": "pmlm"}, {"_name": "unilmv2_tiny", **TINY}))
    assert layers(model) == 3 and model.cfg.encoder_embed_dim == 64 and model.cfg.max_positions == 256
    # what the section gives wins over the preset
    model = build(
        hydra_config(data, {"_name": "pmlm"}, {"_name": "unilmv2_tiny", "encoder_layers": 2, **TINY})
    )
    assert layers(model) == 2 and model.cfg.encoder_embed_dim == 64
    # UniLM v1: six segment ids and no relative position bias, not the base model's 2 and 32
    small = {
        "encoder_layers": 1,
        "encoder_embed_dim": 16,
        "encoder_ffn_embed_dim": 24,
        "encoder_attention_heads": 2,
    }
    cfg = hydra_config(data, {"_name": "unilm"}, {"_name": "unilm_v1_base", **small, **TINY})
    model = build(cfg)
    assert model.cfg.num_segments == 6 and model.cfg.rel_pos_bins == 0 and layers(model) == 1


def test_the_model_name_fills_the_base_defaults(data, one_thread):
    small = {
        "encoder_layers": 1,
        "encoder_embed_dim": 16,
        "encoder_ffn_embed_dim": 24,
        "encoder_attention_heads": 2,
    }
    model = build(hydra_config(data, {"_name": "pmlm"}, {"_name": "unilmv2", **small}))
    assert layers(model) == 1 and model.cfg.max_positions == 512 and model.cfg.num_segments == 2
    assert model.cfg.layernorm_eps == 1e-12


def test_a_misspelt_model_option_is_named(data):
    cfg = hydra_config(data, {"_name": "pmlm"}, {"_name": "unilmv2_tiny", "encoder_layer": 2})
    with pytest.raises(ValueError, match=r"\['encoder_layer'\] are not options of model._name unilmv2_tiny"):
        build(cfg)


def test_palm_options_reach_the_model(data, one_thread):
    task = {"_name": "palm_pretrain", "max_fragment_tokens": 40, "max_context_tokens": 32}
    model_cfg = {"_name": "palm_tiny", "encoder_layernorm_eps": 1e-12, "max_source_positions": 64,
                 "max_target_positions": 64, "no_copy": True, "decoder_layers": 1}  # fmt: skip
    model = build(hydra_config(data, task, model_cfg))
    norms = [m for m in model.encoder.modules() if isinstance(m, torch.nn.LayerNorm)]
    assert norms and all(m.eps == 1e-12 for m in norms)
    assert model.encoder_mlm_head is not None and len(model.decoder.layers) == 1
    assert not model.decoder.pointer.copy  # no_copy: the vocabulary softmax alone
    assert model.encoder.embed_tokens.embedding_dim == 64  # palm_tiny's width


def test_the_command_line_builds_the_same_model(data, one_thread):
    """fairseq-train's path is unchanged: --arch presets, explicit options winning."""
    parser = options.get_training_parser()
    args = options.parse_args_and_arch(
        parser, [data, "--user-dir", "unilm_fairseq", "--task", "pmlm", "--arch", "unilmv2_tiny",
                 "--encoder-layers", "2", "--dropout", "0"],
    )  # fmt: skip
    cfg = convert_namespace_to_omegaconf(args)
    model = build(cfg)
    assert layers(model) == 2 and model.cfg.encoder_embed_dim == 64 and model.cfg.max_positions == 256


@pytest.mark.parametrize("config, arch", [(UniLMv2Config, "unilmv2"), (PALMConfig, "palm_base")])
def test_the_base_architecture_takes_its_defaults_from_the_config_dataclass(config, arch):
    """The dataclass is the one place a default is written: the base architecture fills exactly its
    defaults (PALM's own options; fairseq's Transformer ones are PALM's presets)."""
    args = argparse.Namespace()
    ARCH_CONFIG_REGISTRY[arch](args)
    defaults = {f.name: f.default for f in fields(config) if not f.name.startswith("_")}
    assert defaults and {name: getattr(args, name) for name in defaults} == defaults
    args = argparse.Namespace(dropout=0.3)
    ARCH_CONFIG_REGISTRY[arch](args)
    assert args.dropout == 0.3  # a value given is kept


def test_presets_only_state_what_differs_from_the_base():
    """UniLM v1 differs from the base in its segments and position bias; its large sizes are unilmv2's."""
    large, v1_large = argparse.Namespace(), argparse.Namespace()
    ARCH_CONFIG_REGISTRY["unilmv2_large"](large)
    ARCH_CONFIG_REGISTRY["unilm_v1_large"](v1_large)
    differ = {name for name in vars(large) if getattr(large, name) != getattr(v1_large, name)}
    assert differ == {"num_segments", "rel_pos_bins"}
    assert (v1_large.num_segments, v1_large.rel_pos_bins, large.encoder_layers) == (6, 0, 24)
