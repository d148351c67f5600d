"""Tiny-model properties of the shared Transformer (dropout off, distinct small dims).

Batching does not change results; one PMLM pass equals the per-step
factorization; both attention paths compute the same thing and half precision
stays finite; the relative bias sees only relative distances; padding and the
position table behave; the LM head is tied.
"""

import copy
from typing import Dict

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from torch import Tensor

from unilm_fairseq import masks
from unilm_fairseq.data.pretraining import PMLMDataset
from unilm_fairseq.data.pretraining.pmlm_dataset import CONTEXT, ORIGINAL, PSEUDO
from unilm_fairseq.modules import attention as attention_module
from unilm_fairseq.modules.attention import BiasedSelfAttention, build_attention_bias

from ..helpers.layouts import bidirectional_example, collate, pmlm_example
from ..helpers.models import make_dictionary, tiny_model

ATOL = 1e-5
# loose bounds for half precision against float32 (features are LayerNorm-ed, O(1))
HALF_FEATURE_ATOL = {torch.float16: 2e-2, torch.bfloat16: 1e-1}
HALF_LOGIT_ATOL = {torch.float16: 1e-2, torch.bfloat16: 3e-2}


@pytest.fixture(scope="module")
def dictionary():
    return make_dictionary()


@pytest.fixture(scope="module")
def model(dictionary):
    return tiny_model(dictionary)


@pytest.fixture(scope="module")
def sharp_model(dictionary):
    """BERT init (std 0.02) leaves a tiny model near uniform, so context barely moves its
    outputs; weights 10x larger make differences that matter show above ``ATOL``."""
    model = tiny_model(dictionary, seed=1)
    with torch.no_grad():
        for name, param in model.named_parameters():
            if param.dim() == 2:
                param.mul_(10)
    return model


def forward_one(model, example, features_only=False) -> Tensor:
    """Unbatched forward: ``(L, C)`` features or ``(L, V)`` logits."""
    out, _ = model(
        example["tokens"][None],
        example["segments"][None],
        example["positions"][None],
        example["visible"][None],
        features_only=features_only,
    )
    return out[0]


# ---------------------------------------------------------------- batching


@pytest.mark.parametrize("layout", ["pmlm", "bidirectional"])
def test_batching_with_longer_padded_examples_does_not_change_outputs(sharp_model, dictionary, layout):
    model = sharp_model
    if layout == "pmlm":
        short = pmlm_example(dictionary, 7, [[2, 3], [5]], seed=0)
        others = [
            pmlm_example(dictionary, 13, [[4, 5, 6], [1], [9]], seed=1),
            bidirectional_example(dictionary, 21, seed=2),
        ]
    else:
        short = bidirectional_example(dictionary, 6, seed=0)
        others = [
            bidirectional_example(dictionary, 15, seed=1),
            pmlm_example(dictionary, 12, [[3], [7, 8]], seed=2),
        ]
    assert model.transformer.rel_pos_bias is not None
    n = len(short["tokens"])
    alone_features = forward_one(model, short, features_only=True)
    alone_logits = forward_one(model, short)

    batch = collate([others[0], short, others[1]], dictionary.pad())
    assert batch[0].size(1) > n + 5
    features, _ = model(*batch, features_only=True)
    logits, _ = model(*batch)
    torch.testing.assert_close(features[1, :n], alone_features, atol=ATOL, rtol=0)
    torch.testing.assert_close(logits[1, :n], alone_logits, atol=ATOL, rtol=0)

    # the LM head on selected positions only, flattened row-major
    selected = torch.zeros(batch[0].shape, dtype=torch.bool)
    selected[1, :n:2] = True
    selected[0, 0] = True
    picked, _ = model(*batch, masked_tokens=selected)
    torch.testing.assert_close(picked[1:], alone_logits[::2], atol=ATOL, rtol=0)


# ---------------------------------------------------------------- PMLM one pass


def log_probs_at(logits: Tensor, where: Tensor, target: Tensor) -> Tensor:
    """``(L, V)`` logits -> ``(N,)`` log-probabilities of ``target`` at ``where``."""
    return F.log_softmax(logits[where], dim=-1).gather(-1, target[where].unsqueeze(-1)).squeeze(-1)


def per_step_example(example, i: int, with_earlier_originals: bool = True) -> Dict[str, Tensor]:
    """``[context | originals of steps < i | [P] of step i]``, masked by the PMLM rules."""
    kind, step = example["kind"], example["step"]
    keep = (kind == CONTEXT) | ((kind == PSEUDO) & (step == i))
    if with_earlier_originals:
        keep |= (kind == ORIGINAL) & (step < i)
    sub = {key: example[key][keep] for key in ("tokens", "segments", "positions", "target", "kind", "step")}
    appended = sub["kind"] != CONTEXT
    context_len = int((~appended).sum())
    sub["visible"] = masks.pmlm_mask(context_len, sub["step"][appended], sub["kind"][appended] == PSEUDO)
    return sub


def test_pmlm_one_pass_equals_per_step_factorization(sharp_model, dictionary):
    model = sharp_model
    spans = [[2, 3, 4], [8], [10, 11], [6]]
    example = pmlm_example(dictionary, 14, spans, seed=3)
    one_pass = forward_one(model, example)
    pseudo = example["kind"] == PSEUDO
    for i in range(1, len(spans) + 1):
        in_step = pseudo & (example["step"] == i)
        expected = log_probs_at(one_pass, in_step, example["target"])
        sub = per_step_example(example, i)
        naive = log_probs_at(forward_one(model, sub), sub["kind"] == PSEUDO, sub["target"])
        torch.testing.assert_close(naive, expected, atol=ATOL, rtol=0, msg=f"step {i}")
        if i > 1:
            # the earlier originals do matter, so the equality above is not vacuous
            blind = per_step_example(example, i, with_earlier_originals=False)
            blind_lp = log_probs_at(forward_one(model, blind), blind["kind"] == PSEUDO, blind["target"])
            assert (blind_lp - expected).abs().max() > 1e-2


def test_pmlm_ae_logits_equal_a_forward_over_the_context_alone(sharp_model, dictionary):
    model = sharp_model
    example = pmlm_example(dictionary, 14, [[2, 3, 4], [8], [10, 11], [6]], seed=4)
    context = example["kind"] == CONTEXT
    ae = context & example["target"].ne(dictionary.pad())
    assert int(ae.sum()) == 7
    alone = {key: example[key][context] for key in ("tokens", "segments", "positions")}
    alone["visible"] = masks.bidirectional_mask(int(context.sum()))
    torch.testing.assert_close(
        forward_one(model, alone)[ae[context]], forward_one(model, example)[ae], atol=ATOL, rtol=0
    )


# ---------------------------------------------------------------- attention paths


def attention_inputs(seed: int = 0, length: int = 7):
    """A module (24 dims, 4 heads), ``(2, L, 24)`` inputs and a ``(2, 4, L, L)`` bias
    from a random mask plus a position bias; query 3 of example 0 sees nothing."""
    torch.manual_seed(seed)
    attn = BiasedSelfAttention(24, 4).eval()
    x = torch.randn(2, length, 24)
    visible = (torch.rand(2, length, length) > 0.5) | torch.eye(length, dtype=torch.bool)
    visible[0, 3] = False
    bias = build_attention_bias(visible, torch.randn(2, 4, length, length))
    return attn, x, bias


def cuda_reads_in_place(bias: Tensor) -> bool:
    """torch's rule (attention.cpp, ``aligned_tensor<8>``) for a bias CUDA's memory-efficient attention
    reads without padding a copy of it first."""
    return bias.stride(-1) == 1 and all(stride % 8 == 0 for stride in bias.stride()[:-1])


@pytest.mark.parametrize("keys", [7, 16, 25])
@pytest.mark.parametrize("with_position_bias", [True, False])
def test_bias_is_laid_out_for_cuda_attention_and_passes_the_same_gradient(keys, with_position_bias):
    """The bias every layer shares is one aligned copy whatever the key count (so no layer pads its own),
    holding what the plain ``masked_fill`` of the position bias holds, and the position bias (a permuted
    view, as the relative position table makes it) gets the same gradient through attention."""
    torch.manual_seed(keys)
    queries, heads = 5, 4
    visible = (torch.rand(2, queries, keys) > 0.4) | (torch.arange(keys) < 1)
    table = torch.randn(2, queries, keys, heads, requires_grad=True)  # B x T x S x H, as the lookup gives
    q, k, v = (torch.randn(2, heads, n, 8) for n in (queries, keys, keys))
    grads = []
    for build in ("aligned", "masked_fill"):
        position_bias = table.permute(0, 3, 1, 2) if with_position_bias else None
        if build == "aligned":
            bias = build_attention_bias(visible, position_bias)
            assert cuda_reads_in_place(bias)
        else:
            plain = torch.zeros(2, 1, queries, keys) if position_bias is None else position_bias
            bias = plain.masked_fill(~visible.unsqueeze(1), torch.finfo(torch.float32).min)
            # contiguous, so aligned only when the key count is a multiple of 8: what the aligned copy avoids
            assert cuda_reads_in_place(bias) == (keys % 8 == 0)
        out = F.scaled_dot_product_attention(q, k, v, attn_mask=bias)
        if with_position_bias:
            (out * torch.linspace(-1, 1, out.numel()).view_as(out)).sum().backward()
            grads.append(table.grad.clone())
            table.grad = None
        grads.append(out.detach())
    assert all(torch.equal(a, b) for a, b in zip(grads[: len(grads) // 2], grads[len(grads) // 2 :]))


def manual_attention(attn: BiasedSelfAttention, x: Tensor, bias: Tensor) -> Tensor:
    """Scores plus bias, softmax, weighted values, written out in float32."""
    bsz, length, dim = x.shape

    def heads(t):  # B x T x C -> B x H x T x C/H
        return t.view(bsz, length, attn.num_heads, -1).transpose(1, 2)

    q, k, v = heads(attn.q_proj(x)), heads(attn.k_proj(x)), heads(attn.v_proj(x))
    scores = q @ k.transpose(-1, -2) / attn.head_dim**0.5 + bias
    out = (scores.softmax(-1) @ v).transpose(1, 2).reshape(bsz, length, dim)
    return attn.out_proj(out)


def test_sdpa_path_and_explicit_float32_softmax_path_agree(monkeypatch):
    attn, x, bias = attention_inputs()
    sdpa_calls = []
    sdpa = F.scaled_dot_product_attention

    def counting_sdpa(*args, **kwargs):
        sdpa_calls.append(1)
        return sdpa(*args, **kwargs)

    monkeypatch.setattr(attention_module.F, "scaled_dot_product_attention", counting_sdpa)
    with torch.no_grad():
        fused, _ = attn(x, bias)
        assert len(sdpa_calls) == 1
        # any non-float32 dtype takes the explicit path; float64 isolates it from rounding
        explicit, _ = copy.deepcopy(attn).double()(x.double(), bias)
        assert len(sdpa_calls) == 1
        reference = manual_attention(attn, x, bias)
    assert torch.isfinite(fused).all()
    torch.testing.assert_close(fused, reference, atol=ATOL, rtol=0)
    torch.testing.assert_close(explicit.float(), reference, atol=ATOL, rtol=0)


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
def test_half_precision_attention_is_finite_with_most_negative_fill(dtype):
    attn, x, bias = attention_inputs()
    assert bias.dtype == torch.float32 and (bias == torch.finfo(torch.float32).min).any()
    with torch.no_grad():
        reference, _ = attn(x, bias)
        out, (k, v) = copy.deepcopy(attn).to(dtype)(x.to(dtype), bias)
    assert out.dtype == dtype and k.dtype == dtype
    assert torch.isfinite(out).all()
    torch.testing.assert_close(out.float(), reference, atol=HALF_FEATURE_ATOL[dtype], rtol=0)


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
def test_half_precision_model_is_finite_and_close_to_float32(model, dictionary, dtype):
    batch = collate(
        [
            pmlm_example(dictionary, 9, [[1, 2], [6], [4]], seed=5),
            bidirectional_example(dictionary, 5, seed=6),
        ],
        dictionary.pad(),
        length=20,
    )
    half = copy.deepcopy(model)
    half = half.half() if dtype == torch.float16 else half.to(dtype)
    with torch.no_grad():
        features, _ = half(*batch, features_only=True)
        logits, _ = half(*batch)
        reference_features, _ = model(*batch, features_only=True)
        reference_logits, _ = model(*batch)
    assert features.dtype == dtype and logits.dtype == dtype
    assert torch.isfinite(features).all() and torch.isfinite(logits).all()
    torch.testing.assert_close(features.float(), reference_features, atol=HALF_FEATURE_ATOL[dtype], rtol=0)
    torch.testing.assert_close(logits.float(), reference_logits, atol=HALF_LOGIT_ATOL[dtype], rtol=0)


# ---------------------------------------------------------------- positions


def positions_only_model(dictionary, **overrides):
    """Tiny model whose only position signal is the relative bias (absolute table zeroed)."""
    model = tiny_model(dictionary, **overrides)
    with torch.no_grad():
        model.transformer.embeddings.positions.weight.zero_()
        if model.transformer.rel_pos_bias is not None:
            # BERT init gives the table std 0.02; a unit scale makes its effect plain
            model.transformer.rel_pos_bias.table.weight.normal_()
    return model


def features_at(model, example, positions: Tensor) -> Tensor:
    return forward_one(model, dict(example, positions=positions), features_only=True)


def test_relative_bias_sees_only_relative_distances(dictionary):
    model = positions_only_model(dictionary)
    example = bidirectional_example(dictionary, 11, seed=7)
    base = features_at(model, example, torch.arange(11))
    shifted = features_at(model, example, torch.arange(11) + 17)
    reversed_ = features_at(model, example, torch.arange(11).flip(0))
    torch.testing.assert_close(shifted, base, atol=1e-6, rtol=0)
    assert (reversed_ - base).abs().max() > 1e-2


def test_rel_pos_bins_zero_switches_the_bias_off(dictionary):
    model = tiny_model(dictionary, rel_pos_bins=0)
    assert model.transformer.rel_pos_bias is None
    assert not [name for name in model.state_dict() if "rel_pos" in name]
    example = bidirectional_example(dictionary, 11, seed=8)
    base = features_at(model, example, torch.arange(11))
    # absolute positions are the only position signal left: a shift changes the output
    assert (features_at(model, example, torch.arange(11) + 17) - base).abs().max() > 1e-3
    # without them, position ids do not matter at all
    blind = positions_only_model(dictionary, rel_pos_bins=0)
    blind_base = features_at(blind, example, torch.arange(11))
    torch.testing.assert_close(
        features_at(blind, example, torch.arange(11).flip(0) + 5), blind_base, atol=1e-6, rtol=0
    )


# ---------------------------------------------------------------- padding, limits, head


def test_padded_query_rows_never_produce_nan(model, dictionary):
    examples = [
        pmlm_example(dictionary, 6, [[1, 2], [4]], seed=9),
        bidirectional_example(dictionary, 3, seed=10),
    ]
    batch = collate(examples, dictionary.pad(), length=16)
    features, _ = model(*batch, features_only=True)
    logits, _ = model(*batch)
    assert torch.isfinite(features).all() and torch.isfinite(logits).all()
    # gradients through the padded rows stay finite too
    features.sum().backward()
    assert all(torch.isfinite(p.grad).all() for p in model.parameters() if p.grad is not None)
    model.zero_grad(set_to_none=True)


def test_position_beyond_the_table_raises_naming_max_positions(model, dictionary):
    limit = model.cfg.max_positions
    example = bidirectional_example(dictionary, 5, seed=11)
    last_allowed = torch.arange(5) + limit - 5
    assert torch.isfinite(features_at(model, example, last_allowed)).all()
    with pytest.raises(ValueError, match="max_positions"):
        features_at(model, example, last_allowed + 1)


def test_lm_head_is_tied_to_the_token_embeddings(dictionary):
    model = tiny_model(dictionary)
    embedding = model.transformer.embeddings.tokens.weight
    assert model.lm_head.weight is embedding
    assert sum(p is embedding for p in model.parameters()) == 1
    # the tie survives a copy and a state-dict load
    copied = copy.deepcopy(model)
    assert copied.lm_head.weight is copied.transformer.embeddings.tokens.weight
    other = tiny_model(dictionary, seed=1)
    other.load_state_dict(model.state_dict())
    assert other.lm_head.weight is other.transformer.embeddings.tokens.weight
    torch.testing.assert_close(other.lm_head.weight, embedding, atol=0, rtol=0)


def test_context_first_forward_equals_full_forward():
    """PMLM batches run their contexts first; logits and gradients match the single full pass."""
    d = make_dictionary()

    class Pairs:
        sizes = np.array([30, 21, 26])

        def __getitem__(self, i):
            rng = np.random.default_rng(i)
            n = int(self.sizes[i])
            words = rng.integers(d.nspecial, len(d) - 1, size=n - 3)
            tokens = torch.tensor([d.bos(), *words[:8], d.eos(), *words[8:], d.eos()])
            return {"tokens": tokens, "segments": torch.tensor([0] * 10 + [1] * (n - 10))}

        def __len__(self):
            return 3

    data = PMLMDataset(Pairs(), d, d.index("<mask>"), seed=4)
    net = data.collater([data[i] for i in range(3)])["net_input"]
    assert 0 < net["context_len"] < net["tokens"].size(1)
    model = tiny_model(d)
    split, _ = model(**net)
    split.sum().backward()
    split_grads = [p.grad.clone() for p in model.parameters()]
    model.zero_grad()
    full, _ = model(**{**net, "context_len": None})
    full.sum().backward()
    assert torch.allclose(split, full, atol=1e-5)
    for a, p in zip(split_grads, model.parameters()):
        assert torch.allclose(a, p.grad, atol=1e-5)
