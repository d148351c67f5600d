"""check_fits: missing, unexpected and reshaped keys, the caller's allowed sets; and every path that
initialises a model from a checkpoint reports a mismatch through it, in its one format."""

import argparse
import pickle
import re

import pytest
import torch

from unilm_fairseq.checkpoint.converted import load_converted_weights
from unilm_fairseq.checkpoint.fitting import (
    VOCABULARY_HINT,
    WIDTH_HINT,
    CheckpointMismatch,
    Fit,
    check_fits,
    load_fitting_state,
    token_table_hint,
)
from unilm_fairseq.checkpoint.palm_init import load_palm_weights, load_unilmv2_encoder, palm_arch_flags
from unilm_fairseq.checkpoint.stage_init import load_encoder_from_checkpoint
from unilm_fairseq.checkpoint.unilmv2_init import load_pretrained_weights
from unilm_fairseq.models import palm, unilmv2
from unilm_fairseq.modules.transformer import LM_HEAD_PARTS

from ..helpers.models import make_dictionary, save_checkpoint, tiny_model
from ..helpers.palm import BERT_SIZES, palm_model

# the one format: "SOURCE does not fit TARGET: missing [...], unexpected [...], shape mismatches [...]"
FORMAT = re.compile(
    r"^(?P<source>.+?) does not fit (?P<target>.+?): missing \[.*\], unexpected \[.*\], "
    r"shape mismatches \[.*\]"
)


def tensors(**shapes):
    return {key.replace("_", "."): torch.zeros(shape) for key, shape in shapes.items()}


def assert_format(error: CheckpointMismatch, source: str, target: str):
    found = FORMAT.match(str(error))
    assert found, str(error)
    assert (found["source"], found["target"]) == (source, target)


def test_a_fitting_state_passes():
    model = tensors(a_weight=(2, 3), b_bias=(3,))
    assert check_fits(model, dict(model), source="x.pt") == Fit([], [])


def test_missing_keys_are_named():
    model = tensors(a_weight=(2, 3), b_bias=(3,), c_bias=(1,))
    with pytest.raises(CheckpointMismatch) as error:
        check_fits(model, tensors(a_weight=(2, 3)), source="x.pt")
    assert error.value.missing == ["b.bias", "c.bias"]
    assert error.value.unexpected == [] and error.value.mismatched == []
    assert str(error.value) == (
        "x.pt does not fit this model: missing ['b.bias', 'c.bias'], unexpected [], shape mismatches []"
    )
    assert isinstance(error.value, ValueError)  # what callers caught before


def test_unexpected_keys_are_named():
    with pytest.raises(CheckpointMismatch) as error:
        check_fits(tensors(a_weight=(2,)), tensors(a_weight=(2,), z_weight=(1,)), source="x.pt", target="it")
    assert error.value.unexpected == ["z.weight"] and error.value.missing == []
    assert_format(error.value, "x.pt", "it")
    assert "unexpected ['z.weight']" in str(error.value)


def test_shape_mismatches_name_both_shapes():
    with pytest.raises(CheckpointMismatch) as error:
        check_fits(
            tensors(a_weight=(4, 3), b_bias=(3,)), tensors(a_weight=(5, 3), b_bias=(3,)), source="x.pt"
        )
    assert error.value.mismatched == [("a.weight", (5, 3), (4, 3))]
    assert "shape mismatches [('a.weight', (5, 3), (4, 3))]" in str(error.value)


def test_allowed_sets_take_keys_and_prefixes():
    model = tensors(enc_w=(1,), dec_w=(1,), dec_b=(1,), head_w=(1,))
    loaded = tensors(enc_w=(1,), head_w=(1,), mlm_w=(1,), mlm_b=(1,), extra=(1,))
    fit = check_fits(
        model, loaded, source="x.pt", allowed_missing=["dec."], allowed_unexpected=["mlm.", "extra"]
    )
    assert fit == Fit(missing=["dec.b", "dec.w"], unexpected=["extra", "mlm.b", "mlm.w"])
    # a name without the final dot is a key, not a prefix
    with pytest.raises(CheckpointMismatch) as error:
        check_fits(
            model, loaded, source="x.pt", allowed_missing=["dec"], allowed_unexpected=["mlm.", "extra"]
        )
    assert error.value.missing == ["dec.b", "dec.w"]
    # allowed keys must still have the model's shapes
    with pytest.raises(CheckpointMismatch, match=r"\('head.w', \(2,\), \(1,\)\)"):
        check_fits(model, {**loaded, "head.w": torch.zeros(2)}, source="x.pt", allowed_missing=["dec."],
                   allowed_unexpected=["mlm.", "extra"])  # fmt: skip


def test_hints_name_the_problem_and_advice_is_always_given():
    model = tensors(tokens=(5, 2), other=(1,))
    hints = {"tokens": VOCABULARY_HINT, "absent.": "never shown"}
    with pytest.raises(CheckpointMismatch) as error:
        check_fits(
            model, tensors(tokens=(6, 2), other=(1,)), source="x.pt", hints=hints, advice="same --arch?"
        )
    assert str(error.value).endswith(f"; {VOCABULARY_HINT}; same --arch?")
    assert "never shown" not in str(error.value)
    with pytest.raises(CheckpointMismatch) as error:
        check_fits(model, tensors(tokens=(5, 2)), source="x.pt", hints=hints)
    assert VOCABULARY_HINT not in str(error.value)  # the token table fits


def test_the_token_table_hint_names_width_or_vocabulary():
    model = tensors(tokens=(5, 4))
    hints = {"tokens": token_table_hint}
    with pytest.raises(CheckpointMismatch) as error:
        check_fits(model, tensors(tokens=(5, 8)), source="x.pt", hints=hints)  # same vocabulary, wider
    assert str(error.value).endswith(WIDTH_HINT) and VOCABULARY_HINT not in str(error.value)
    with pytest.raises(CheckpointMismatch) as error:
        check_fits(model, tensors(tokens=(6, 4)), source="x.pt", hints=hints)
    assert str(error.value).endswith(VOCABULARY_HINT)
    with pytest.raises(CheckpointMismatch) as error:
        check_fits(model, {}, source="x.pt", hints=hints)  # missing: the vocabulary hint, as before
    assert str(error.value).endswith(VOCABULARY_HINT)


def test_long_lists_are_cut_and_counted():
    model = {f"k{i}": torch.zeros(1) for i in range(8)}
    with pytest.raises(CheckpointMismatch) as error:
        check_fits(model, {}, source="x.pt")
    assert len(error.value.missing) == 8
    assert "missing ['k0', 'k1', 'k2', 'k3', 'k4'] and 3 more," in str(error.value)


def test_load_fitting_state_drops_allowed_extras_and_keeps_allowed_missing():
    model = torch.nn.Sequential(torch.nn.Linear(2, 2), torch.nn.Linear(2, 1))
    kept = model[1].weight.detach().clone()
    loaded = {"0.weight": torch.ones(2, 2), "0.bias": torch.ones(2), "9.weight": torch.ones(1)}
    fit = load_fitting_state(model, loaded, "x.pt", allowed_missing=["1."], allowed_unexpected=["9."])
    assert fit == Fit(missing=["1.bias", "1.weight"], unexpected=["9.weight"])
    assert torch.equal(model[0].weight, torch.ones(2, 2)) and torch.equal(model[1].weight, kept)
    with pytest.raises(CheckpointMismatch):
        load_fitting_state(model, loaded, "x.pt", allowed_unexpected=["9."])


# ------------------------------------------------------------------- every initialisation path


def test_unilmv2_pretrained_init(tmp_path):
    state = tiny_model().state_dict()
    state["transformer.layers.0.fc1.weight"] = torch.zeros(41, 24)
    path = str(tmp_path / "x.pt")
    save_checkpoint(state, path)
    with pytest.raises(CheckpointMismatch) as error:
        load_pretrained_weights(tiny_model(), path)
    assert_format(error.value, path, "this model")
    assert error.value.mismatched == [(unilmv2.layer_key(0, "fc1.weight"), (41, 24), (40, 24))]


def test_unilmv2_pretrained_init_vocabulary(tmp_path):
    path = str(tmp_path / "x.pt")
    save_checkpoint(tiny_model(make_dictionary(30)).state_dict(), path)
    with pytest.raises(CheckpointMismatch) as error:
        load_pretrained_weights(tiny_model(), path)
    assert_format(error.value, path, "this model")
    assert error.value.mismatched[0][0] == unilmv2.TOKEN_TABLE and str(error.value).endswith(VOCABULARY_HINT)


def test_upgrade_rule_heads(tmp_path):
    """The rule every unilmv2 checkpoint goes through: heads of other names come and go, a head of the same
    name must have the same sizes."""
    old = tiny_model()
    old.register_classification_head("cls", 3)
    old.register_classification_head("other", 2)
    model = tiny_model()
    model.register_classification_head("cls", 3)
    model.register_span_head("qa")
    state = old.state_dict()
    model.upgrade_state_dict_named(state, "")
    assert set(state) == set(model.state_dict())  # "other" dropped, "qa" added
    model.load_state_dict(state)
    assert torch.equal(
        model.classification_heads["cls"].out_proj.weight, old.classification_heads["cls"].out_proj.weight
    )

    model = tiny_model()
    model.register_classification_head("cls", 2)
    with pytest.raises(CheckpointMismatch) as error:
        model.upgrade_state_dict_named(old.state_dict(), "")
    assert_format(error.value, "the checkpoint", "this model's task heads")
    assert ("classification_heads.cls.out_proj.weight", (3, 24), (2, 24)) in error.value.mismatched
    path = str(tmp_path / "x.pt")
    save_checkpoint(old.state_dict(), path)
    with pytest.raises(CheckpointMismatch):
        load_pretrained_weights(model, path)


def test_palm_init(tmp_path):
    dictionary = make_dictionary(60)
    state = palm_model(dictionary).state_dict()
    del state[palm.SOURCE_POSITION_TABLE]
    path = str(tmp_path / "x.pt")
    save_checkpoint(state, path)
    with pytest.raises(CheckpointMismatch) as error:
        load_palm_weights(palm_model(dictionary), path)
    assert_format(error.value, path, "this model")
    assert error.value.missing == [palm.SOURCE_POSITION_TABLE]


def test_palm_init_from_a_model_without_the_pointer_says_no_copy(tmp_path):
    dictionary = make_dictionary(60)
    path = str(tmp_path / "no_copy.pt")
    save_checkpoint(palm_model(dictionary, no_copy=True).state_dict(), path)
    with pytest.raises(CheckpointMismatch) as error:
        load_palm_weights(palm_model(dictionary), path)
    assert error.value.missing and all(k.startswith(palm.POINTER) for k in error.value.missing)
    assert "fine-tune with --no-copy too" in str(error.value)
    load_palm_weights(palm_model(dictionary, no_copy=True), path)  # as the hint says: it loads


PALM_SIZES = {
    "arch": "palm_tiny",
    "encoder_layers": 3,
    "decoder_layers": 1,
    "encoder_embed_dim": 32,
    "activation_fn": "gelu",
}


@pytest.mark.parametrize("layout", ["cfg", "args"])
def test_palm_arch_flags_are_read_from_either_config_layout(tmp_path, layout):
    path = str(tmp_path / "palm.pt")
    config = {"cfg": {"model": PALM_SIZES}, "args": None}
    if layout == "args":  # fairseq's argparse-era checkpoints
        config = {"cfg": None, "args": argparse.Namespace(**PALM_SIZES)}
    torch.save({"model": {"w": torch.zeros(2)}, **config}, path)
    expected = (
        "--arch palm_tiny --encoder-layers 3 --decoder-layers 1 --encoder-embed-dim 32 --activation-fn gelu"
    )
    assert palm_arch_flags(path) == expected.split()


def test_palm_arch_flags_carry_no_copy(tmp_path):
    path = str(tmp_path / "palm.pt")
    torch.save({"model": {}, "cfg": {"model": {**PALM_SIZES, "no_copy": True}}}, path)
    assert palm_arch_flags(path)[-1] == "--no-copy"
    torch.save({"model": {}, "cfg": {"model": {**PALM_SIZES, "no_copy": False}}}, path)
    assert "--no-copy" not in palm_arch_flags(path)


def test_palm_arch_flags_are_none_for_another_model_or_no_config(tmp_path):
    other, bare = str(tmp_path / "unilmv2.pt"), str(tmp_path / "bare.pt")
    torch.save({"model": {}, "cfg": {"model": {"_name": "unilmv2_base", "encoder_layers": 6}}}, other)
    save_checkpoint({"w": torch.zeros(2)}, bare)
    assert palm_arch_flags(other) == [] and palm_arch_flags(bare) == []


class _NotAllowed:  # a class the safe loader's allow-list does not name
    pass


def test_palm_arch_flags_keep_the_safe_loader_on(tmp_path):
    path = str(tmp_path / "palm.pt")
    torch.save({"model": {}, "cfg": {"model": PALM_SIZES}, "extra": _NotAllowed()}, path)
    with pytest.raises(pickle.UnpicklingError):
        palm_arch_flags(path)


def test_palm_init_vocabulary(tmp_path):
    path = str(tmp_path / "x.pt")
    save_checkpoint(palm_model(make_dictionary(60)).state_dict(), path)
    with pytest.raises(CheckpointMismatch) as error:
        load_palm_weights(palm_model(make_dictionary(61)), path)
    assert_format(error.value, path, "this model")
    assert str(error.value).endswith(VOCABULARY_HINT)


def test_palm_encoder_init():
    dictionary = make_dictionary(50)
    unilm = tiny_model(
        dictionary, max_positions=48, **{**BERT_SIZES, "rel_pos_bins": 0, "encoder_ffn_embed_dim": 80}
    )
    with pytest.raises(CheckpointMismatch) as error:
        load_unilmv2_encoder(palm_model(dictionary), unilm.state_dict(), "x.pt")
    assert_format(error.value, "x.pt", "this encoder")
    assert (palm.encoder_layer_key(0, "fc1.weight"), (80, 64), (96, 64)) in error.value.mismatched
    assert error.value.missing == [] and error.value.unexpected == []


def test_stage2_init(tmp_path):
    dictionary = make_dictionary(60)
    state = palm_model(dictionary).state_dict()
    state["encoder.layers.0.fc9.weight"] = torch.zeros(1)
    del state["encoder.layers.1.fc1.bias"]
    path = str(tmp_path / "x.pt")
    save_checkpoint(state, path)
    with pytest.raises(CheckpointMismatch) as error:
        load_encoder_from_checkpoint(palm_model(dictionary), path)
    assert_format(error.value, path, "this model's encoder")
    assert error.value.missing == ["encoder.layers.1.fc1.bias"]
    assert error.value.unexpected == ["encoder.layers.0.fc9.weight"]
    assert str(error.value).endswith("same --arch and dict.txt as stage 1?")


def test_stage2_keeps_a_pre_ln_decoder_whole(tmp_path):
    """Stage 2 takes the encoder from stage 1 and keeps its own decoder as built, the final LayerNorm of a
    pre-LN decoder and its version included."""
    dictionary = make_dictionary(60)
    stage1 = palm_model(dictionary, seed=0, decoder_normalize_before=True)
    path = str(tmp_path / "stage1.pt")
    save_checkpoint(stage1.state_dict(), path)
    stage2 = palm_model(dictionary, seed=1, decoder_normalize_before=True)
    decoder = {k: v.clone() for k, v in stage2.state_dict().items() if k.startswith("decoder.")}
    load_encoder_from_checkpoint(stage2, path)
    assert stage2.decoder.layer_norm is not None
    after = stage2.state_dict()
    assert "decoder.layer_norm.weight" in after and float(after["decoder.version"]) == 3
    tied = {k for k in decoder if after[k].data_ptr() == after["encoder.embed_tokens.weight"].data_ptr()}
    assert all(torch.equal(after[k], v) for k, v in decoder.items() if k not in tied)
    encoder = {k: v for k, v in stage1.state_dict().items() if not k.startswith("decoder.")}
    assert all(torch.equal(after[k], v) for k, v in encoder.items())


def test_converted_weights_fitting():
    model = tiny_model()
    state = {k: v for k, v in model.state_dict().items() if not k.startswith(unilmv2.LM_HEAD)}
    with pytest.raises(CheckpointMismatch) as error:
        load_converted_weights(tiny_model(seed=1), state, True, "model.safetensors", "config.json")
    assert_format(error.value, "model.safetensors", "the model config.json describes")
    assert error.value.missing == sorted(unilmv2.LM_HEAD + part for part in LM_HEAD_PARTS)
    fresh = tiny_model(seed=1)
    head = fresh.lm_head.dense.weight.detach().clone()
    load_converted_weights(fresh, state, False, "model.safetensors", "config.json")  # no MLM head: kept fresh
    assert torch.equal(fresh.lm_head.dense.weight, head)
    assert torch.equal(fresh.transformer.embeddings.tokens.weight, model.transformer.embeddings.tokens.weight)
    assert fresh.lm_head.weight is fresh.transformer.embeddings.tokens.weight


def _pooled_model(seed: int = 3):
    model = tiny_model(make_dictionary(), seed=seed)
    model.add_pooler()
    with torch.no_grad():
        model.pooler.dense.weight.normal_()
        model.pooler.dense.bias.uniform_(-1, 1)
    return model


def test_a_pooler_travels_with_every_checkpoint_and_stays_frozen(tmp_path):
    """A pooler in the checkpoint (imported from a ``BertModel``) joins the model that loads it, by
    ``--pretrained-checkpoint`` or by fairseq's own ``load_state_dict``; it is never trained."""
    source = _pooled_model()
    path = str(tmp_path / "pooled.pt")
    save_checkpoint(source.state_dict(), path)
    fresh = tiny_model(make_dictionary(), seed=4)
    assert fresh.pooler is None and not any(k.startswith(unilmv2.POOLER) for k in fresh.state_dict())
    load_pretrained_weights(fresh, path)
    assert torch.equal(fresh.pooler.dense.weight, source.pooler.dense.weight)
    assert not any(p.requires_grad for p in fresh.pooler.parameters())
    assert all(p.requires_grad for n, p in fresh.named_parameters() if not n.startswith(unilmv2.POOLER))
    features = torch.randn(2, 5, fresh.cfg.encoder_embed_dim)
    assert torch.equal(fresh.pooler(features), torch.tanh(source.pooler.dense(features[:, 0])))
    again = tiny_model(make_dictionary(), seed=5)  # what the hub and fairseq-train's restore do
    again.load_state_dict(fresh.state_dict(), strict=True)
    assert torch.equal(again.pooler.dense.bias, source.pooler.dense.bias)


def test_a_model_with_a_pooler_keeps_it_when_a_checkpoint_has_none(tmp_path):
    model = _pooled_model()
    before = model.pooler.dense.weight.clone()
    other = tiny_model(make_dictionary(), seed=6)
    model.load_state_dict(other.state_dict(), strict=True)
    assert torch.equal(model.pooler.dense.weight, before)
    assert torch.equal(model.transformer.embeddings.tokens.weight, other.transformer.embeddings.tokens.weight)


def test_adding_the_pooler_draws_nothing_from_the_global_random_state():
    model = tiny_model(make_dictionary(), seed=7)
    torch.manual_seed(11)
    model.add_pooler()
    after = torch.rand(3)
    torch.manual_seed(11)
    assert torch.equal(after, torch.rand(3))


def save_with_model_config(model, model_config, path):
    """A checkpoint of ``model``'s weights whose saved config is ``model_config`` (what fairseq-train and
    the importer record)."""
    save_checkpoint(model.state_dict(), path)
    checkpoint = torch.load(path, weights_only=True)
    torch.save({**checkpoint, "cfg": {"model": model_config}}, path)


@pytest.mark.parametrize(
    "option, value", [("encoder_attention_heads", 8), ("layernorm_eps", 1e-6), ("activation_fn", "relu"),
                      ("max_rel_pos", 64)],
)  # fmt: skip
def test_pretrained_weights_refuse_settings_no_shape_shows(tmp_path, option, value):
    """Heads, epsilon, activation and the relative bias's reach change what the weights compute but no
    shape: such a model took the weights without a word and computed another function."""
    d = make_dictionary()
    path = str(tmp_path / "pretrained.pt")
    model = tiny_model(d)
    names = ("encoder_attention_heads", "layernorm_eps", "activation_fn", "max_rel_pos")
    save_with_model_config(model, {name: getattr(model.cfg, name) for name in names}, path)
    load_pretrained_weights(tiny_model(d, seed=1), path)  # the same settings load
    flag = "--" + option.replace("_", "-")
    message = f"{path} was trained with {flag} {getattr(model.cfg, option)} (this model: {value})"
    with pytest.raises(ValueError, match=re.escape(message)):
        load_pretrained_weights(tiny_model(d, seed=1, **{option: value}), path)


def test_palm_weights_refuse_other_attention_heads(tmp_path):
    dictionary = make_dictionary(60)
    path = str(tmp_path / "palm.pt")
    model = palm_model(dictionary)
    save_with_model_config(model, {"encoder_attention_heads": model.args.encoder_attention_heads}, path)
    load_palm_weights(palm_model(dictionary), path)
    other = 2 * model.args.encoder_attention_heads
    with pytest.raises(ValueError, match=f"--encoder-attention-heads {model.args.encoder_attention_heads} "):
        load_palm_weights(palm_model(dictionary, encoder_attention_heads=other), path)
