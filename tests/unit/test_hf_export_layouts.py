"""The export's pieces against the importer's: activation names, config fields and weight layouts map back
to what they came from; task heads are left out and listed, never silently."""

import logging
import os

import pytest
import torch

from unilm_fairseq.hf_export import export_checkpoint
from unilm_fairseq.hf_export.layouts import HF_ACTIVATIONS, LAYOUTS, export_state, hf_config
from unilm_fairseq.hf_import.config import ACTIVATIONS, read_source_config, unilmv2_config
from unilm_fairseq.models.unilmv2 import layer_key

from ..helpers.hf import write_json
from ..helpers.hf_export import (
    exported_tensors,
    fairseq_dictionary,
    perturbed_model,
    read_json,
    wordpiece_dictionary,
    write_checkpoint,
)

pytest.importorskip("safetensors")

# the config fields the importer reads back; the rest (heads, dropout of activations ...) have no HF field
ROUND_TRIP_FIELDS = (
    "encoder_layers", "encoder_embed_dim", "encoder_ffn_embed_dim", "encoder_attention_heads",
    "activation_fn", "dropout", "attention_dropout", "max_positions", "num_segments", "rel_pos_bins",
    "max_rel_pos", "layernorm_eps", "seq2seq_source_segment", "seq2seq_target_segment",
)  # fmt: skip


def test_activation_names_are_the_importers_inverse():
    assert {ours: ACTIVATIONS[hf] for ours, hf in HF_ACTIVATIONS.items()} == {o: o for o in HF_ACTIVATIONS}
    # every activation the importer produces can be exported
    assert set(ACTIVATIONS.values()) <= set(HF_ACTIVATIONS)


@pytest.mark.parametrize(
    "layout, overrides, type_ids",
    [
        ("bert", dict(rel_pos_bins=0, activation_fn="gelu_accurate", dropout=0.05, layernorm_eps=1e-7), None),
        ("unilm", dict(rel_pos_bins=16, max_rel_pos=7, num_segments=6, attention_dropout=0.2), (4, 5)),
        ("s2s-ft", dict(num_segments=0, activation_fn="relu", seq2seq_source_segment=0), (0, 1)),
    ],
)
def test_config_reads_back_as_the_same_model(tmp_path, layout, overrides, type_ids):
    model = perturbed_model(wordpiece_dictionary(), **overrides)
    if type_ids:
        model.cfg.seq2seq_source_segment, model.cfg.seq2seq_target_segment = type_ids
    rows = model.cfg.num_segments or (1 if layout == "bert" else 0)
    config = hf_config(
        model.cfg, LAYOUTS[layout], len(model.dictionary), model.dictionary.pad(), rows, type_ids
    )
    write_json(str(tmp_path / "config.json"), config)
    back = unilmv2_config(read_source_config(str(tmp_path)))
    expected = {name: getattr(model.cfg, name) for name in ROUND_TRIP_FIELDS}
    if not model.cfg.num_segments and layout == "bert":
        expected["num_segments"] = 2  # BERT's single zero row, read back as two (the importer's minimum)
    if not model.cfg.rel_pos_bins:
        expected["max_rel_pos"] = 0  # unused without buckets; not written
    if not type_ids:  # BERT's config has no s2s-ft segment ids: 0/1 on the way back
        expected["seq2seq_source_segment"], expected["seq2seq_target_segment"] = 0, 1
    assert {name: getattr(back, name) for name in ROUND_TRIP_FIELDS} == expected


def test_fused_layout_holds_every_projection(caplog):
    model = perturbed_model(fairseq_dictionary(), rel_pos_bins=16, max_rel_pos=7)
    state = model.state_dict()
    weights, rows = export_state(state, model.cfg.encoder_layers, LAYOUTS["unilm"])
    out = weights.state
    assert rows == model.cfg.num_segments
    for i in range(model.cfg.encoder_layers):
        p = f"bert.encoder.layer.{i}.attention.self."
        q, k, v = (state[layer_key(i, f"self_attn.{n}_proj.weight")] for n in "qkv")
        assert torch.equal(out[p + "qkv_linear.weight"], torch.cat([q, k, v]))
        assert out[p + "q_bias"].shape == (1, 1, q.size(0))
        assert torch.equal(out[p + "q_bias"].flatten(), state[layer_key(i, "self_attn.q_proj.bias")])
        assert torch.equal(out[p + "v_bias"].flatten(), state[layer_key(i, "self_attn.v_proj.bias")])
        assert not any(key.startswith(p + n) for key in out for n in ("query", "key", "value"))
    table = state["transformer.rel_pos_bias.table.weight"]  # (bins, heads)
    assert torch.equal(out["bert.rel_pos_bias.weight"], table.t())
    # the tied output weight is the word embeddings, one tensor under both names
    assert out["cls.predictions.decoder.weight"] is out["bert.embeddings.word_embeddings.weight"]
    # the perturbed key biases are not zero: each layer's is reported as left out
    assert sum("key bias" in note for note in weights.notes) == model.cfg.encoder_layers


def test_separate_layouts_keep_the_key_bias():
    model = perturbed_model(wordpiece_dictionary(), rel_pos_bins=0)
    state = model.state_dict()
    weights, _ = export_state(state, model.cfg.encoder_layers, LAYOUTS["bert"])
    key = "bert.encoder.layer.1.attention.self.key.bias"
    assert torch.equal(weights.state[key], state[layer_key(1, "self_attn.k_proj.bias")])
    assert "cls.predictions.decoder.weight" not in weights.state  # transformers ties it; its files omit it
    assert not weights.notes and not weights.dropped


def test_task_heads_are_left_out_listed_and_logged(tmp_path, caplog):
    model = perturbed_model(wordpiece_dictionary(), rel_pos_bins=0)
    model.register_classification_head("sst2", num_classes=3)
    model.register_span_head("squad")
    checkpoint = write_checkpoint(model, str(tmp_path / "ckpt"))
    with caplog.at_level(logging.WARNING):
        result = export_checkpoint(checkpoint, str(tmp_path / "out"), "bert")
    assert result.dropped == ["classification_heads.sst2", "span_heads.squad"]
    assert "classification_heads.sst2" in caplog.text and "span_heads.squad" in caplog.text
    tensors = exported_tensors(result.out_dir)
    assert not any("classification" in k or "span" in k or "pooler" in k for k in tensors)
    # the encoder and MLM head are all there: one tensor per weight of the model without its heads
    own = {k for k in model.state_dict() if not k.startswith(("classification_heads.", "span_heads."))}
    assert len(tensors) == len(own) - 1  # the tied LM-head output is the word embeddings


def test_vocabulary_keeps_the_ids(tmp_path):
    for name, dictionary in (("wordpiece", wordpiece_dictionary()), ("fairseq", fairseq_dictionary())):
        model = perturbed_model(dictionary, rel_pos_bins=0)
        checkpoint = write_checkpoint(model, str(tmp_path / name))
        out = export_checkpoint(checkpoint, str(tmp_path / f"out-{name}"), "bert").out_dir
        with open(os.path.join(out, "vocab.txt"), encoding="utf-8") as f:
            assert f.read().splitlines() == list(dictionary.symbols)
        tokenizer = read_json(os.path.join(out, "tokenizer_config.json"))
        for role, field in (
            ("bos", "cls_token"),
            ("eos", "sep_token"),
            ("pad", "pad_token"),
            ("unk", "unk_token"),
        ):
            assert tokenizer[field] == dictionary[getattr(dictionary, role)()]
        assert tokenizer["mask_token"] == dictionary[dictionary.index("<mask>")]
        assert read_json(os.path.join(out, "config.json"))["pad_token_id"] == dictionary.pad()
