"""A cached decoding step makes few calls: one stacked q/k/v projection per layer, no no-op casts.

A step feeds one or two tokens per hypothesis, so on a GPU its time goes into launching kernels and
dispatching calls rather than arithmetic (docs: benchmarks/README.md, "Calls per decoding step").
These tests check that the shortcuts give what the plain layers give, and that they stay in place.
"""

import copy

import pytest
import torch
from fairseq.modules import gelu as fairseq_gelu
from torch.profiler import ProfilerActivity, profile

from unilm_fairseq import seq2seq_layout
from unilm_fairseq.modules.attention import BiasedSelfAttention
from unilm_fairseq.modules.transformer import build_activation

from ..helpers.benchmarks import dispatched_calls
from ..helpers.seq2seq import (
    EOS,
    TOL,
    D,
    collate,
    incremental_logprobs,
    pairs_dataset,
    sharpened_model,
    teacher_forced_logits,
    training_logprobs,
)

pytestmark = pytest.mark.usefixtures("one_thread")


def head16_model(method):
    """The decoding test model with 2 heads of 16: its query scale, 0.25, folds into the stacked weights."""
    return sharpened_model(D, method, encoder_embed_dim=32, encoder_attention_heads=2)


def separate_projections(attn: BiasedSelfAttention, x):
    q = attn._heads(attn.q_proj(x)) * attn.head_dim**-0.5
    k, v = attn.keys_values(x)
    return q, k, v


# head size 16: the scale 0.25 is folded into the stacked weights; head size 6: applied to the product
@pytest.mark.parametrize("embed_dim, heads, folded", [(32, 2, True), (24, 4, False)])
def test_stacked_step_projections_equal_the_separate_ones(embed_dim, heads, folded):
    torch.manual_seed(0)
    attn = BiasedSelfAttention(embed_dim, heads)
    x = torch.randn(5, 2, embed_dim)
    with torch.no_grad():
        stacked = attn._step_projections(x)
        expected = separate_projections(attn, x)
    assert (attn._step_weights.scale is None) == folded
    for got, want in zip(stacked, expected):
        assert got.shape == want.shape == (5, heads, 2, embed_dim // heads)
        assert torch.allclose(got, want, atol=1e-6), (got - want).abs().max()


def test_stacked_weights_follow_every_change_of_the_projections():
    torch.manual_seed(0)
    attn = BiasedSelfAttention(32, 2)
    x = torch.randn(3, 2, 32)

    def check():
        inputs = x.to(attn.q_proj.weight.dtype)
        with torch.no_grad():
            stacked, separate = attn._step_projections(inputs), separate_projections(attn, inputs)
        for got, want in zip(stacked, separate):
            assert got.dtype == want.dtype
            assert torch.allclose(got, want, atol=1e-6), (got - want).abs().max()

    check()
    with torch.no_grad():  # an optimizer step: in place, same storage
        attn.v_proj.bias.add_(1.0)
        attn.q_proj.weight.mul_(2.0)
    check()
    other = BiasedSelfAttention(32, 2)
    attn.load_state_dict(other.state_dict())  # a reload copies into the same storage
    check()
    attn.double()  # new storage, new dtype
    check()
    assert attn._step_weights.weight.dtype == torch.float64


def test_stacked_weights_stay_out_of_the_state_dict_and_copies():
    torch.manual_seed(0)
    attn = BiasedSelfAttention(32, 2)
    keys = set(attn.state_dict())
    with torch.no_grad():
        attn._step_projections(torch.randn(2, 1, 32))
    assert set(attn.state_dict()) == keys
    twin = copy.deepcopy(attn)
    with torch.no_grad():
        twin.k_proj.weight.zero_()
        _, k, _ = twin._step_projections(torch.randn(2, 1, 32))
    assert torch.equal(k, twin.k_proj.bias.view(1, 2, 1, 16).expand_as(k))


@pytest.mark.parametrize("method", seq2seq_layout.METHODS)
def test_power_of_two_heads_decode_as_they_train(method):
    """The folded scale (head size 16) on the whole model: cached decoding equals the training forward."""
    model = head16_model(method)
    assert model.encoder.transformer.layers[0].self_attn.head_dim == 16
    src_tokens = collate(pairs_dataset(method))["net_input"]["src_tokens"]
    trained, targets = training_logprobs(model, method)
    decoded = incremental_logprobs(model, src_tokens, targets)
    assert model.encoder.transformer.layers[0].self_attn._step_weights.scale is None  # the folded branch ran
    for i, (a, b) in enumerate(zip(trained, decoded)):
        assert torch.allclose(a, b, atol=TOL), (method, i, (a - b).abs().max())


def step_calls(model, steps=3):
    """Names of the aten calls that the last of ``steps`` teacher-forced decoding steps makes from Python."""
    src_tokens = collate(pairs_dataset("pseudo_masked"))["net_input"]["src_tokens"]
    prev = torch.full((src_tokens.size(0), steps), EOS)
    teacher_forced_logits(model, src_tokens, prev[:, : steps - 1])  # builds the stacked weights
    state = {}
    with torch.no_grad():
        encoder_out = model.encoder(src_tokens)
        for t in range(steps - 1):
            model.decoder(prev[:, : t + 1], encoder_out, incremental_state=state)
        with profile(activities=[ProfilerActivity.CPU]) as prof:
            model.decoder(prev, encoder_out, incremental_state=state)
    return dispatched_calls(prof)


def test_a_float32_step_projects_once_per_layer_and_casts_nothing():
    model = head16_model("pseudo_masked")
    calls = step_calls(model)
    layers = len(model.encoder.transformer.layers)
    # per layer: stacked q/k/v, output projection, fc1, fc2; then the LM head's dense and output layers
    assert calls.count("aten::linear") == 4 * layers + 2
    casts = [name for name in calls if name in ("aten::to", "aten::_to_copy", "aten::type_as")]
    assert casts == []
    assert calls.count("aten::mul") == 0  # the scale is folded into the stacked query weights


def test_a_bfloat16_step_casts_only_where_it_computes_in_float32():
    """The attention bias to float32 once; per layer the probabilities back to bfloat16 (the scores reach
    float32 by adding the bias) and fairseq's float32 gelu (its two casts, also in the LM head)."""
    model = head16_model("pseudo_masked")
    calls = step_calls(model.to(torch.bfloat16))
    layers = len(model.encoder.transformer.layers)
    assert calls.count("aten::to") + calls.count("aten::type_as") == 1 + 3 * layers + 2


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.bfloat16])
def test_gelu_is_fairseqs_in_every_dtype(dtype):
    x = torch.randn(4, 64).mul(4).to(dtype)
    got = build_activation("gelu")(x)
    assert got.dtype == dtype and torch.equal(got, fairseq_gelu(x))


def test_other_activations_are_fairseqs():
    from fairseq import utils

    for name in ("relu", "gelu_accurate", "tanh"):
        assert build_activation(name) is utils.get_activation_fn(name)


def test_a_reorder_copies_every_layers_keys_and_values_in_one_call():
    model = head16_model("pseudo_masked")
    src_tokens = collate(pairs_dataset("pseudo_masked"))["net_input"]["src_tokens"]
    prev = torch.full((src_tokens.size(0), 3), EOS)
    state = {}
    with torch.no_grad():
        encoder_out = model.encoder(src_tokens)
        for t in range(3):
            model.decoder(prev[:, : t + 1], encoder_out, incremental_state=state)
        before = model.decoder.get_incremental_state(state, "cache")
        order = torch.tensor([2, 0, 0])
        with profile(activities=[ProfilerActivity.CPU]) as prof:
            model.decoder.reorder_incremental_state(state, order)
    after = model.decoder.get_incremental_state(state, "cache")
    calls = dispatched_calls(prof)
    assert calls.count("aten::index_select") == len(before) == 3  # keys and values, positions, next position
    layers = len(model.encoder.transformer.layers)
    assert after["kv"].shape == (layers, 2, 3, 2, 2, 16)  # L x 2 x B x H x P x D, two tokens cached
    for row, source_row in enumerate(order.tolist()):
        assert torch.equal(after["kv"][:, :, row], before["kv"][:, :, source_row])
        assert torch.equal(after["key_positions"][row], before["key_positions"][source_row])


def test_cached_steps_with_autograd_on_give_the_same_logits_and_gradients_reach_the_weights():
    """Outside ``torch.no_grad`` the step takes the plain projections and stacks the cache itself."""
    model = head16_model("pseudo_masked")
    src_tokens = collate(pairs_dataset("pseudo_masked"))["net_input"]["src_tokens"]
    prev = torch.full((src_tokens.size(0), 3), EOS)
    reference = teacher_forced_logits(model, src_tokens, prev)
    state, steps = {}, []
    encoder_out = model.encoder(src_tokens)
    for t in range(prev.size(1)):
        logits, _ = model.decoder(prev[:, : t + 1], encoder_out, incremental_state=state)
        steps.append(logits[:, 0])
    with_grad = torch.stack(steps, 1)
    assert torch.allclose(with_grad, reference, atol=TOL), (with_grad - reference).abs().max()
    with_grad.logsumexp(-1).sum().backward()
    grad = model.encoder.transformer.layers[0].self_attn.k_proj.weight.grad
    assert grad is not None and grad.abs().sum() > 0
