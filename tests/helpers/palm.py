"""``palm_tiny`` built the way ``fairseq-train --arch palm_tiny`` builds it."""

import argparse

import torch
from fairseq.models import ARCH_CONFIG_REGISTRY, ARCH_MODEL_REGISTRY

from .models import make_dictionary

# the unilmv2 sizes the PALM encoder-initialisation tests convert from
BERT_SIZES = dict(encoder_layers=2, encoder_embed_dim=64, encoder_ffn_embed_dim=96, encoder_attention_heads=4)


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


def batch(dictionary, seed=0, bsz=3, src_len=9, tgt_len=6):
    """Left-padded sources (fairseq's default) with repeated words; decoder inputs start with </s>."""
    g = torch.Generator().manual_seed(seed)
    words = torch.arange(dictionary.nspecial, dictionary.nspecial + 12)  # few words: duplicates
    src = words[torch.randint(len(words), (bsz, src_len), generator=g)]
    src[:, -1] = dictionary.eos()
    src[0, :3] = dictionary.pad()  # a shorter source
    lengths = src.ne(dictionary.pad()).sum(1)
    prev = words[torch.randint(len(words), (bsz, tgt_len), generator=g)]
    prev[:, 0] = dictionary.eos()
    return src, lengths, prev
