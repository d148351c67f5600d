"""bfloat16 and float16 through ``F.scaled_dot_product_attention``: the bias in the compute dtype,
finite fully hidden rows, forward and backward close to float32, autocast, the grouped beam
attention, and cached decoding.

Tolerances are relative to the float32 result's scale (max |x|): float16 keeps 11 significant bits,
bfloat16 8, so bfloat16's bounds are looser. Measured on the tiny model below (CPU, torch 2.13):
features/logits 1.7e-3 (float16) and 8.9e-3 (bfloat16); parameter gradients at most 2.5e-3 and 1.2e-2.
"""

import copy

import pytest
import torch
import torch.nn.functional as F
from fairseq.data import data_utils

from unilm_fairseq import seq2seq_layout
from unilm_fairseq.modules import attention as attention_module
from unilm_fairseq.modules.attention import BiasedSelfAttention, build_attention_bias

from ..helpers.layouts import bidirectional_example, collate, pmlm_example
from ..helpers.models import make_dictionary, tiny_model
from ..helpers.seq2seq import (
    EOS,
    PAD,
    WORDS,
    D,
    generate,
    pairs_dataset,
    sharpened_model,
    teacher_forced_logits,
)
from ..helpers.seq2seq import collate as collate_pairs

HALF = [torch.float16, torch.bfloat16]
OUTPUT_RTOL = {torch.float16: 1e-2, torch.bfloat16: 5e-2}
GRAD_RTOL = {torch.float16: 1e-2, torch.bfloat16: 5e-2}
# fairseq scales the loss in float16 training; without it the tiny model's gradients are subnormal
LOSS_SCALE = 1024.0
# the keys' bias only adds the same q . b to every score of a query: its gradient is zero up to rounding
ZERO_GRADIENT = "self_attn.k_proj.bias"

pytestmark = pytest.mark.usefixtures("one_thread")


def relative_error(value, reference) -> float:
    reference = reference.detach()
    return float((value.detach().float() - reference).abs().max() / reference.abs().max())


# ---------------------------------------------------------------- the bias


@pytest.mark.parametrize("dtype", HALF)
def test_bias_is_built_in_the_compute_dtype_with_its_finite_minimum(dtype):
    torch.manual_seed(0)
    visible = torch.rand(2, 5, 7) > 0.4
    visible[1, 2] = False  # a query that sees nothing
    position_bias = torch.randn(2, 3, 5, 7) * 10
    bias = build_attention_bias(visible, position_bias, dtype)
    assert bias.dtype == dtype and bias.shape == (2, 3, 5, 7)
    hidden = ~visible.unsqueeze(1).expand_as(bias)
    # filled, not added: exactly the minimum, never -inf however negative the position bias
    assert (bias[hidden] == torch.finfo(dtype).min).all()
    assert torch.isfinite(bias).all()
    assert torch.equal(bias[~hidden], position_bias.to(dtype)[~hidden])
    no_position = build_attention_bias(visible, None, dtype)
    assert no_position.dtype == dtype and no_position.shape == (2, 1, 5, 7)
    assert (no_position[~visible.unsqueeze(1)] == torch.finfo(dtype).min).all()


def test_float32_bias_is_unchanged_by_default():
    torch.manual_seed(0)
    visible = torch.rand(2, 5, 7) > 0.4
    position_bias = torch.randn(2, 3, 5, 7)
    expected = position_bias.masked_fill(~visible.unsqueeze(1), torch.finfo(torch.float32).min)
    assert torch.equal(build_attention_bias(visible, position_bias), expected)
    assert torch.equal(build_attention_bias(visible, position_bias, torch.float32), expected)


@pytest.mark.parametrize("dtype", HALF)
def test_fully_hidden_rows_stay_finite_in_sdpa(dtype):
    torch.manual_seed(0)
    q, k, v = (torch.randn(2, 3, 4, 8, dtype=dtype, requires_grad=True) for _ in range(3))
    visible = torch.ones(2, 4, 4, dtype=torch.bool)
    visible[0, 1] = False  # every key hidden from this query
    bias = build_attention_bias(visible, torch.randn(2, 3, 4, 4) * 5, dtype)
    out = F.scaled_dot_product_attention(q, k, v, attn_mask=bias)
    out.float().sum().backward()
    assert torch.isfinite(out).all()
    assert all(torch.isfinite(t.grad).all() for t in (q, k, v))
    if dtype == torch.bfloat16:
        # bfloat16's minimum absorbs the scores: the softmax of the row is uniform
        torch.testing.assert_close(
            out[0, :, 1].float(), v[0].float().mean(1), atol=OUTPUT_RTOL[dtype], rtol=0
        )


# ---------------------------------------------------------------- attention module


def spy_on_sdpa(monkeypatch):
    """Record the query and mask dtypes of every ``F.scaled_dot_product_attention`` call."""
    calls = []
    sdpa = F.scaled_dot_product_attention

    def recording(q, k, v, attn_mask=None, **kwargs):
        calls.append((q.dtype, None if attn_mask is None else attn_mask.dtype))
        return sdpa(q, k, v, attn_mask=attn_mask, **kwargs)

    monkeypatch.setattr(attention_module.F, "scaled_dot_product_attention", recording)
    return calls


@pytest.mark.parametrize("dtype", HALF)
def test_attention_module_forward_and_backward_match_float32(dtype, monkeypatch):
    torch.manual_seed(0)
    attn = BiasedSelfAttention(32, 4).train()  # attention dropout 0
    x = torch.randn(2, 9, 32)
    visible = (torch.rand(2, 9, 9) > 0.5) | torch.eye(9, dtype=torch.bool)
    visible[1, 7:] = False  # padding queries
    visible[:, :, 7:] &= torch.tensor([True, False]).view(2, 1, 1)  # padding keys of example 1
    position_bias = torch.randn(2, 4, 9, 9)
    real = torch.ones(2, 9, dtype=torch.bool)
    real[1, 7:] = False

    def run(module, dtype):
        module.zero_grad()
        out, _ = module(x.to(dtype), build_attention_bias(visible, position_bias.to(dtype), dtype))
        (out[real].float().square().sum() * LOSS_SCALE).backward()
        return out, {n: p.grad.float() / LOSS_SCALE for n, p in module.named_parameters()}

    reference, reference_grads = run(attn, torch.float32)
    calls = spy_on_sdpa(monkeypatch)
    out, grads = run(copy.deepcopy(attn).to(dtype), dtype)
    assert calls == [(dtype, dtype)]
    assert out.dtype == dtype and torch.isfinite(out).all()
    assert relative_error(out[real], reference[real]) < OUTPUT_RTOL[dtype]
    for name, grad in grads.items():
        assert torch.isfinite(grad).all(), name
        if name != "k_proj.bias":
            assert relative_error(grad, reference_grads[name]) < GRAD_RTOL[dtype], name


def test_a_float32_bias_with_a_half_query_takes_explicit_float32_scores(monkeypatch):
    torch.manual_seed(0)
    attn = BiasedSelfAttention(32, 4).eval()
    x = torch.randn(2, 6, 32)
    bias = build_attention_bias(torch.rand(2, 6, 6) > 0.3, torch.randn(2, 4, 6, 6))
    calls = spy_on_sdpa(monkeypatch)
    with torch.no_grad():
        out, _ = copy.deepcopy(attn).to(torch.bfloat16)(x.to(torch.bfloat16), bias)
        reference, _ = attn(x, bias)
    assert calls == [(torch.float32, torch.float32)]  # the float32 reference only
    assert out.dtype == torch.bfloat16
    assert relative_error(out, reference) < OUTPUT_RTOL[torch.bfloat16]


@pytest.mark.parametrize("dtype", HALF)
def test_grouped_beam_attention_in_half_matches_float32_over_copied_keys(dtype):
    """Shared source keys (one copy per sentence) against the same keys copied per row, in float32."""
    torch.manual_seed(0)
    attn = BiasedSelfAttention(32, 4).eval()
    groups, per_group, heads, source_len, cached, length, dim = 2, 3, 4, 7, 2, 2, 8
    bsz = groups * per_group
    q = torch.randn(bsz, heads, length, dim)
    k, v = torch.randn(bsz, heads, cached + length, dim), torch.randn(bsz, heads, cached + length, dim)
    shared = torch.randn(groups, heads, source_len, dim), torch.randn(groups, heads, source_len, dim)
    visible = torch.ones(bsz, length, source_len + cached + length, dtype=torch.bool)
    visible[:per_group, :, source_len - 2 : source_len] = False  # padding of the first sentence's source
    visible[:, 0, -1] = False
    bias = build_attention_bias(visible, torch.randn(bsz, heads, length, visible.size(2)), dtype)
    with torch.no_grad():
        out = attn._attend_with_shared(
            q.to(dtype), k.to(dtype), v.to(dtype), tuple(t.to(dtype) for t in shared), bias, 0.0
        )
        rows = torch.arange(bsz) // per_group
        keys = torch.cat([shared[0][rows], k], 2)
        values = torch.cat([shared[1][rows], v], 2)
        reference = F.scaled_dot_product_attention(q, keys, values, attn_mask=bias.float())
    assert out.dtype == dtype and torch.isfinite(out).all()
    assert relative_error(out, reference) < OUTPUT_RTOL[dtype]


# ---------------------------------------------------------------- tiny unilmv2 model


def model_batch(dictionary):
    """A PMLM example and a shorter bidirectional one, right-padded to 20 (padding queries see nothing)."""
    return collate(
        [
            pmlm_example(dictionary, 9, [[1, 2], [6], [4]], seed=5),
            bidirectional_example(dictionary, 5, seed=6),
        ],
        dictionary.pad(),
        length=20,
    )


def loss_and_gradients(model, batch, real):
    model.zero_grad()
    features, _ = model(*batch, features_only=True)
    logits = model.lm_head(features)
    loss = F.cross_entropy(logits[real].float(), batch[0][real])
    (loss * LOSS_SCALE).backward()
    grads = {n: p.grad.float() / LOSS_SCALE for n, p in model.named_parameters() if p.grad is not None}
    return features, logits, grads


@pytest.mark.parametrize("dtype", HALF)
def test_half_model_forward_and_backward_match_float32(dtype, monkeypatch):
    dictionary = make_dictionary()
    model = tiny_model(dictionary).train()  # dropout 0; relative position bias on
    assert model.transformer.rel_pos_bias is not None
    batch = model_batch(dictionary)
    real = batch[0].ne(dictionary.pad())
    assert not real.all()
    features32, logits32, grads32 = loss_and_gradients(model, batch, real)
    calls = spy_on_sdpa(monkeypatch)
    features, logits, grads = loss_and_gradients(copy.deepcopy(model).to(dtype), batch, real)
    # every layer's attention went through SDPA with a bias of the compute dtype
    assert calls == [(dtype, dtype)] * len(model.transformer.layers)
    assert features.dtype == dtype and logits.dtype == dtype
    assert torch.isfinite(features).all() and torch.isfinite(logits).all()
    assert relative_error(features[real], features32[real]) < OUTPUT_RTOL[dtype]
    assert relative_error(logits[real], logits32[real]) < OUTPUT_RTOL[dtype]
    assert grads.keys() == grads32.keys()
    for name, grad in grads.items():
        assert torch.isfinite(grad).all(), name
        if not name.endswith(ZERO_GRADIENT):
            assert relative_error(grad, grads32[name]) < GRAD_RTOL[dtype], name


def test_autocast_builds_the_bias_in_the_autocast_dtype(monkeypatch):
    dictionary = make_dictionary()
    model = tiny_model(dictionary)
    batch = model_batch(dictionary)
    real = batch[0].ne(dictionary.pad())
    with torch.no_grad():
        reference, _ = model(*batch, features_only=True)
        calls = spy_on_sdpa(monkeypatch)
        with torch.autocast("cpu", dtype=torch.bfloat16):
            features, _ = model(*batch, features_only=True)
    assert calls == [(torch.bfloat16, torch.bfloat16)] * len(model.transformer.layers)
    assert torch.isfinite(features).all()
    assert relative_error(features[real], reference[real]) < OUTPUT_RTOL[torch.bfloat16]


# ---------------------------------------------------------------- decoding


# bfloat16's 8 bits are coarser than the gaps between this model's beam-3 hypotheses (the best one changes
# for two of the three methods), so it is held to greedy decoding, whose token choices are far from ties
@pytest.mark.parametrize("dtype, beam", [(torch.float16, 1), (torch.float16, 3), (torch.bfloat16, 1)])
@pytest.mark.parametrize("method", seq2seq_layout.METHODS)
def test_cached_half_decoding_picks_the_float32_tokens(method, dtype, beam):
    """Half-precision decoding, as GPU users decode: on a model whose scores are far from ties, greedy
    (and, in float16, beam) search picks float32's hypotheses."""
    model = sharpened_model(D, method)
    batch = collate_pairs(pairs_dataset(method))
    expected = generate(model, batch, incremental=True, beam=beam)
    half = generate(copy.deepcopy(model).to(dtype), batch, incremental=True, beam=beam)
    tokens = [hyps[0]["tokens"].tolist() for hyps in half]
    assert tokens == [hyps[0]["tokens"].tolist() for hyps in expected]
    assert max(len(t) for t in tokens) > 4  # several steps
    assert len({tuple(t) for t in tokens}) > 1  # not one output for every source


@pytest.mark.parametrize("dtype", HALF)
@pytest.mark.parametrize("method", seq2seq_layout.METHODS)
def test_half_beam_rows_reading_shared_source_keys_match_float32(method, dtype, monkeypatch):
    """Teacher-forced cached steps, two rows per sentence (the grouped beam attention)."""
    grouped = []
    attend = BiasedSelfAttention._attend_with_shared

    def recording(self, q, *args, **kwargs):
        grouped.append(q.dtype)
        return attend(self, q, *args, **kwargs)

    monkeypatch.setattr(BiasedSelfAttention, "_attend_with_shared", recording)
    model = sharpened_model(D, method)
    items = [pairs_dataset(method)[i] for i in range(3)]
    src_tokens = data_utils.collate_tokens([it["source"] for it in items], PAD, left_pad=True)
    new_order = torch.tensor([0, 0, 1, 1, 2, 2])
    prev = torch.cat([torch.full((6, 1), EOS), torch.tensor(WORDS[:4]).repeat(6, 1)], 1)
    reference = teacher_forced_logits(model, src_tokens, prev, new_order)
    logits = teacher_forced_logits(copy.deepcopy(model).to(dtype), src_tokens, prev, new_order)
    assert grouped and set(grouped) == {torch.float32, dtype}
    assert logits.dtype == dtype and torch.isfinite(logits).all()
    assert relative_error(logits, reference) < OUTPUT_RTOL[dtype]
    assert torch.equal(logits.float().argmax(-1), reference.argmax(-1))
