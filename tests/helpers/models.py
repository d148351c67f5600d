"""Tiny models with distinct small dims, dropout off; their dictionaries and checkpoints."""

import torch
from fairseq.data import Dictionary

import unilm_fairseq  # noqa: F401  (registers the plugin's parts)
from unilm_fairseq.models.unilmv2 import UniLMv2Config, UniLMv2Model


def make_dictionary(num_words: int = 40) -> Dictionary:
    """fairseq dictionary with ``num_words`` dummy symbols and ``<mask>`` last."""
    d = Dictionary()
    for i in range(num_words):
        d.add_symbol(f"w{i}")
    d.add_symbol("<mask>")
    return d


def tiny_config(**overrides) -> UniLMv2Config:
    """3 layers, hidden 24, 4 heads (head dim 6), FFN 40, no dropout."""
    cfg = UniLMv2Config(
        encoder_layers=3,
        encoder_embed_dim=24,
        encoder_ffn_embed_dim=40,
        encoder_attention_heads=4,
        dropout=0.0,
        attention_dropout=0.0,
        activation_dropout=0.0,
        max_positions=64,
        rel_pos_bins=32,
        max_rel_pos=128,
    )
    for key, value in overrides.items():
        setattr(cfg, key, value)
    return cfg


def tiny_model(dictionary=None, seed: int = 0, **overrides) -> UniLMv2Model:
    torch.manual_seed(seed)
    model = UniLMv2Model(tiny_config(**overrides), dictionary or make_dictionary())
    return model.eval()


def save_checkpoint(state_dict, path):
    """The keys fairseq's ``load_checkpoint_to_cpu`` needs around a model state dict."""
    torch.save(
        {
            "model": state_dict,
            "cfg": None,
            "args": None,
            "optimizer_history": [
                {"criterion_name": "x", "optimizer_name": "x", "lr_scheduler_state": {}, "num_updates": 0}
            ],
            "extra_state": {"train_iterator": None},
        },
        path,
    )
