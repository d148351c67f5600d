"""PALM model properties: the pointer-generator's distribution (Eq. 2-8), gradients, padding,
incremental decoding, beam reordering, the encoder MLM head and fp16."""

import pytest
import torch
import torch.nn.functional as F

from unilm_fairseq.modules.pointer_generator import log_copy_distribution

from ..helpers.palm import batch, palm_model

# a gate pre-activation this large makes lambda exactly 1 (or 0) in float32
SATURATED_GATE = 200.0


def saturate_gate(model, sign: float):
    pointer = model.decoder.pointer
    with torch.no_grad():
        pointer.gate_context.weight.zero_()
        pointer.gate_state.weight.zero_()
        pointer.gate_context.bias.fill_(sign * SATURATED_GATE)


def test_shared_embeddings_and_tied_heads():
    model = palm_model()
    table = model.encoder.embed_tokens.weight
    assert model.decoder.embed_tokens.weight is table
    assert model.decoder.pointer.embed_weight is table  # W^e
    assert model.encoder_mlm_head.weight is table
    assert len(model.encoder.layers) == len(model.decoder.layers) == 2
    assert model.encoder.layers[0].fc1.out_features == 96 and table.size(1) == 64


@pytest.mark.parametrize("no_copy", [False, True])
def test_distribution_sums_to_one(no_copy):
    model = palm_model(no_copy=no_copy)
    src, lengths, prev = batch(model.encoder.dictionary)
    lprobs, extra = model(src, lengths, prev)
    assert lprobs.shape == (3, 6, len(model.encoder.dictionary)) and lprobs.dtype == torch.float32
    assert torch.allclose(lprobs.exp().sum(-1), torch.ones(3, 6), atol=1e-5)
    assert torch.allclose(model.get_normalized_probs((lprobs, extra), log_probs=True), lprobs, atol=1e-6)
    if no_copy:
        assert extra["attn"] == [None]
    else:
        alpha = extra["attn"][0]
        assert alpha.shape == (3, 6, 9)
        assert torch.allclose(alpha.sum(-1), torch.ones(3, 6), atol=1e-6)
        gate = extra["copy_gate"][0]
        assert gate.shape == (3, 6, 1) and bool(((gate > 0) & (gate < 1)).all())


def test_gate_one_recovers_vocabulary_softmax_exactly():
    model = palm_model()
    saturate_gate(model, +1.0)
    src, lengths, prev = batch(model.encoder.dictionary)
    lprobs, extra = model(src, lengths, prev)
    assert bool((extra["copy_gate"][0] == 1).all())
    features, _ = model(src, lengths, prev, features_only=True)
    pointer = model.decoder.pointer
    plain = torch.log_softmax(F.linear(pointer.vocab_proj(features), pointer.embed_weight), dim=-1)
    assert torch.equal(lprobs, plain)
    # the same as the ablated model with the same weights; the ablated model has no copy parameters
    ablated = palm_model(no_copy=True)
    missing, unexpected = ablated.load_state_dict(model.state_dict(), strict=False)
    assert not missing and {k.rsplit(".", 1)[0] for k in unexpected} == {
        "decoder.pointer.source_proj", "decoder.pointer.state_proj", "decoder.pointer.score",
        "decoder.pointer.gate_context", "decoder.pointer.gate_state",
    }  # fmt: skip
    assert torch.equal(ablated(src, lengths, prev)[0], lprobs)


def test_gate_zero_puts_all_mass_on_source_words_by_attention():
    model = palm_model()
    saturate_gate(model, -1.0)
    src, lengths, prev = batch(model.encoder.dictionary)
    assert any(len(set(row.tolist())) < len(row) for row in src)  # duplicates to add up
    lprobs, extra = model(src, lengths, prev)
    alpha = extra["attn"][0]
    expected = torch.zeros_like(lprobs)
    for b in range(src.size(0)):
        for pos, word in enumerate(src[b].tolist()):
            expected[b, :, word] += alpha[b, :, pos]
    probs = lprobs.detach().exp()
    assert torch.allclose(probs, expected, atol=1e-6)
    outside = torch.ones_like(probs, dtype=torch.bool)
    outside.scatter_(2, src.unsqueeze(1).expand(-1, probs.size(1), -1), False)
    assert float(probs[outside].max()) == 0.0
    pad = model.encoder.dictionary.pad()
    assert float(probs[..., pad].max()) == 0.0  # padding is in src_tokens but gets no attention


def test_pad_positions_get_zero_attention_and_do_not_change_outputs():
    model = palm_model()
    src, lengths, prev = batch(model.encoder.dictionary)
    lprobs, extra = model(src, lengths, prev)
    assert bool((extra["attn"][0][0, :, :3] == 0).all())
    alone, alone_extra = model(src[:1, 3:], lengths[:1], prev[:1])  # the padded example without padding
    assert torch.allclose(alone, lprobs[:1], atol=1e-5)
    assert torch.allclose(alone_extra["attn"][0], extra["attn"][0][:1, :, 3:], atol=1e-6)


def test_gradients_reach_every_pointer_parameter():
    model = palm_model().train()
    src, lengths, prev = batch(model.encoder.dictionary)
    lprobs, _ = model(src, lengths, prev)
    target = src[:, -6:]  # copyable targets
    F.nll_loss(lprobs.view(-1, lprobs.size(-1)), target.reshape(-1)).backward()
    pointer = model.decoder.pointer
    named = {
        "W^v": pointer.vocab_proj.weight, "b^v": pointer.vocab_proj.bias,
        "W^m": pointer.source_proj.weight, "W^s": pointer.state_proj.weight, "b": pointer.state_proj.bias,
        "w": pointer.score.weight, "w^z": pointer.gate_context.weight, "b^m": pointer.gate_context.bias,
        "w^s": pointer.gate_state.weight,
    }  # fmt: skip
    for name, param in named.items():
        assert param.grad is not None and float(param.grad.abs().sum()) > 0, name
        assert bool(torch.isfinite(param.grad).all()), name


def test_log_copy_distribution_matches_scatter_add():
    g = torch.Generator().manual_seed(3)
    scores = torch.randn(2, 4, 7, generator=g)
    scores[1, :, :2] = torch.finfo(scores.dtype).min  # padding
    log_alpha = torch.log_softmax(scores, -1)
    src = torch.tensor([[5, 6, 5, 7, 5, 8, 2], [1, 1, 9, 9, 3, 4, 2]])
    expected = torch.zeros(2, 4, 12).scatter_add(2, src.unsqueeze(1).expand(-1, 4, -1), log_alpha.exp())
    got = log_copy_distribution(log_alpha, src, 12)
    present = expected > 0
    assert torch.allclose(got[present], expected[present].log(), atol=1e-6)
    assert bool((got[~present] == torch.finfo(torch.float32).min).all())


def decode_step_by_step(model, src, lengths, prev):
    encoder_out = model.encoder(src, src_lengths=lengths)
    state, steps = {}, []
    for t in range(prev.size(1)):
        lprobs, _ = model.decoder(prev[:, : t + 1], encoder_out=encoder_out, incremental_state=state)
        steps.append(lprobs)
    return torch.cat(steps, dim=1)


@pytest.mark.parametrize("no_copy", [False, True])
def test_incremental_decoding_equals_full_decoding(no_copy):
    model = palm_model(no_copy=no_copy)
    src, lengths, prev = batch(model.encoder.dictionary)
    full, _ = model(src, lengths, prev)
    steps = decode_step_by_step(model, src, lengths, prev)
    assert (steps - full).abs().max() < 1e-5


@pytest.mark.parametrize("no_copy", [False, True])
def test_beam_reordering_of_encoder_out_and_incremental_state(no_copy):
    model = palm_model(no_copy=no_copy)
    src, lengths, prev = batch(model.encoder.dictionary)
    new_order = torch.tensor([2, 0, 0, 1, 2])  # beams drop, duplicate and move rows
    full, _ = model(src[new_order], lengths[new_order], prev[new_order])
    encoder_out = model.encoder(src, src_lengths=lengths)
    state, steps, split = {}, [], 3
    for t in range(split):
        steps.append(model.decoder(prev[:, : t + 1], encoder_out=encoder_out, incremental_state=state)[0])
    encoder_out = model.encoder.reorder_encoder_out(encoder_out, new_order)
    assert torch.equal(encoder_out["src_tokens"][0], src[new_order])
    model.decoder.reorder_incremental_state_scripting(state, new_order)
    prefix = torch.cat(steps, dim=1)[new_order]
    later = []
    for t in range(split, prev.size(1)):
        step_input = prev[new_order][:, : t + 1]
        later.append(model.decoder(step_input, encoder_out=encoder_out, incremental_state=state)[0])
    got = torch.cat([prefix, *later], dim=1)
    assert (got - full).abs().max() < 1e-5


def test_encoder_mlm_logits():
    model = palm_model()
    src, lengths, prev = batch(model.encoder.dictionary)
    masked = torch.zeros_like(src, dtype=torch.bool)
    masked[0, 4], masked[1, 0], masked[1, 5], masked[2, 2] = True, True, True, True
    logits = model.forward_encoder_mlm(src, lengths, masked)
    assert logits.shape == (4, len(model.encoder.dictionary))
    _, extra = model(src, lengths, prev, src_masked_tokens=masked)
    assert torch.equal(extra["encoder_mlm_logits"], logits)
    nothing, encoder_only = model(src, lengths, None, src_masked_tokens=masked)  # stage 1 through forward
    assert nothing is None and torch.equal(encoder_only["encoder_mlm_logits"], logits)
    states = model.encoder(src, src_lengths=lengths)["encoder_out"][0].transpose(0, 1)
    assert torch.allclose(model.encoder_mlm_head(states[1, 5]), logits[2], atol=1e-6)  # row-major order
    no_head = palm_model(no_encoder_mlm_head=True)
    assert no_head.encoder_mlm_head is None
    with pytest.raises(ValueError, match="no encoder MLM head"):
        no_head.forward_encoder_mlm(src, lengths, masked)


def test_fp16_outputs_stay_finite_and_normalised():
    model = palm_model().half()
    src, lengths, prev = batch(model.encoder.dictionary)
    lprobs, extra = model(src, lengths, prev)
    assert lprobs.dtype == torch.float32 and bool(torch.isfinite(lprobs).all())
    assert torch.allclose(lprobs.exp().sum(-1), torch.ones(3, 6), atol=1e-3)
    assert bool((extra["attn"][0][0, :, :3] == 0).all())
