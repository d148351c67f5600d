"""``palm_tiny`` built the way ``fairseq-train --arch palm_tiny`` builds it."""

import argparse

import torch
from fairseq.models import ARCH_CONFIG_REGISTRY, ARCH_MODEL_REGISTRY

from .models import make_dictionary


class _Task:
    def __init__(self, dictionary):
        self.source_dictionary = self.target_dictionary = dictionary


def palm_args(**overrides):
    """``palm_tiny``'s options as ``fairseq-train --arch palm_tiny`` parses them, dropout off."""
    parser = argparse.ArgumentParser(argument_default=argparse.SUPPRESS)
    ARCH_MODEL_REGISTRY["palm_tiny"].add_args(parser)
    args = parser.parse_args([])
    args.arch = "palm_tiny"
    args.max_source_positions, args.max_target_positions = 40, 24
    args.dropout = args.attention_dropout = 0.0
    for key, value in overrides.items():
        setattr(args, key, value)
    ARCH_CONFIG_REGISTRY["palm_tiny"](args)
    return args


def palm_model(dictionary=None, seed=0, **overrides):
    """``palm_tiny`` built the way ``fairseq-train --arch palm_tiny`` builds it, dropout off."""
    torch.manual_seed(seed)
    task = _Task(dictionary or make_dictionary(60))
    return ARCH_MODEL_REGISTRY["palm_tiny"].build_model(palm_args(**overrides), task).eval()
