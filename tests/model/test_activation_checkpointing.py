"""Activation checkpointing (``--checkpoint-activations``): the same gradients as plain training for
``unilmv2`` (each s2s-ft layout and PMLM's context-first pass) and ``palm``; no recomputation without
gradients (validation, cached decoding); the state-dict keys do not change; a ``fairseq-train`` run."""

import copy

import pytest
import torch
import torch.nn.functional as F
import torch.utils.checkpoint
from fairseq.modules import checkpoint_activations

from unilm_fairseq import seq2seq_layout

from ..helpers.layouts import collate, pmlm_example
from ..helpers.models import make_dictionary, tiny_model
from ..helpers.palm import batch as palm_batch
from ..helpers.palm import palm_model
from ..helpers.seq2seq import EOS, WORDS, D, pairs_dataset, teacher_forced_logits
from ..helpers.seq2seq import collate as collate_pairs

pytestmark = pytest.mark.usefixtures("one_thread")


def count_calls(monkeypatch, owner, name):
    """Count the calls of ``owner.name`` (still calling it)."""
    calls = []
    original = getattr(owner, name)

    def counting(*args, **kwargs):
        calls.append(1)
        return original(*args, **kwargs)

    monkeypatch.setattr(owner, name, counting)
    return calls


def gradients(model):
    return {n: p.grad.clone() for n, p in model.named_parameters() if p.grad is not None}


def assert_same_gradients(actual, expected):
    assert actual.keys() == expected.keys() and expected
    for name, grad in expected.items():
        torch.testing.assert_close(actual[name], grad, atol=1e-6, rtol=0, msg=name)


# ---------------------------------------------------------------- unilmv2


def unilmv2_pair(method="pseudo_masked", **overrides):
    """A plain tiny model in training mode and the same weights with checkpointing on."""
    plain = tiny_model(D, seq2seq_method=method, **overrides).train()
    checkpointed = tiny_model(D, seq2seq_method=method, checkpoint_activations=True, **overrides).train()
    checkpointed.load_state_dict(plain.state_dict())
    return plain, checkpointed


def seq2seq_loss(model, method, seed=0):
    batch = collate_pairs(pairs_dataset(method, word_drop_prob=0.0))
    torch.manual_seed(seed)  # the same dropout masks in both models
    logits, _ = model(**batch["net_input"])
    target = batch["layout_target"][batch["net_input"]["masked_tokens"]]
    return F.cross_entropy(logits, target)


@pytest.mark.parametrize("method", seq2seq_layout.METHODS)
def test_unilmv2_checkpointed_gradients_equal_plain_gradients(method, monkeypatch):
    plain, checkpointed = unilmv2_pair(method)
    seq2seq_loss(plain, method).backward()
    calls = count_calls(monkeypatch, torch.utils.checkpoint, "checkpoint")
    seq2seq_loss(checkpointed, method).backward()
    assert len(calls) == len(checkpointed.transformer.layers)
    assert_same_gradients(gradients(checkpointed), gradients(plain))


def test_unilmv2_checkpointing_keeps_dropout_masks():
    """The recomputation replays the forward's random state, so dropout gives the same gradients."""
    plain, checkpointed = unilmv2_pair(dropout=0.1, attention_dropout=0.1)
    seq2seq_loss(plain, "pseudo_masked", seed=7).backward()
    seq2seq_loss(checkpointed, "pseudo_masked", seed=7).backward()
    assert_same_gradients(gradients(checkpointed), gradients(plain))


def test_pmlm_context_first_pass_checkpointed_gradients_equal_plain(monkeypatch):
    """The context's keys and values (a tuple per layer) feed the second pass: gradients reach them."""
    dictionary = make_dictionary()
    plain = tiny_model(dictionary).train()
    checkpointed = tiny_model(dictionary, checkpoint_activations=True).train()
    checkpointed.load_state_dict(plain.state_dict())
    example = pmlm_example(dictionary, 9, [[1, 2], [6], [4]], seed=5)
    tokens, segments, positions, visible = collate([example], dictionary.pad())
    masked = example["target"].ne(dictionary.pad())[None]

    def loss(model):
        logits, _ = model(tokens, segments, positions, visible, masked_tokens=masked, context_len=9)
        return F.cross_entropy(logits, example["target"][masked[0]])

    loss(plain).backward()
    calls = count_calls(monkeypatch, torch.utils.checkpoint, "checkpoint")
    loss(checkpointed).backward()
    assert len(calls) == 2 * len(checkpointed.transformer.layers)  # context, then the rest
    assert_same_gradients(gradients(checkpointed), gradients(plain))


@pytest.mark.parametrize("method", seq2seq_layout.METHODS)
def test_unilmv2_checkpointing_is_off_without_gradients(method, monkeypatch):
    plain, checkpointed = unilmv2_pair(method)
    plain.eval(), checkpointed.eval()
    calls = count_calls(monkeypatch, torch.utils.checkpoint, "checkpoint")
    with torch.no_grad():
        validation = seq2seq_loss(checkpointed, method)
        assert torch.equal(validation, seq2seq_loss(plain, method))
    prev = torch.cat([torch.full((3, 1), EOS), torch.tensor(WORDS[:4]).repeat(3, 1)], 1)
    src_tokens = collate_pairs(pairs_dataset(method))["net_input"]["src_tokens"]
    cached = teacher_forced_logits(checkpointed, src_tokens, prev)  # incremental decoding
    assert torch.equal(cached, teacher_forced_logits(plain, src_tokens, prev))
    assert calls == []


def test_unilmv2_state_dicts_load_across_checkpointing():
    plain, checkpointed = unilmv2_pair()
    assert list(plain.state_dict()) == list(checkpointed.state_dict())
    fresh_plain = tiny_model(D, seed=5)
    fresh_plain.load_state_dict(checkpointed.state_dict())  # strict
    fresh_checkpointed = tiny_model(D, seed=5, checkpoint_activations=True)
    fresh_checkpointed.load_state_dict(plain.state_dict())
    for key, value in plain.state_dict().items():
        assert torch.equal(fresh_plain.state_dict()[key], value)
        assert torch.equal(fresh_checkpointed.state_dict()[key], value)


# ---------------------------------------------------------------- palm


def palm_pair(**overrides):
    plain = palm_model().train()
    checkpointed = palm_model(**overrides).train()
    checkpointed.load_state_dict(plain.state_dict())
    return plain, checkpointed


def palm_loss(model):
    dictionary = model.encoder.dictionary
    src, lengths, prev = palm_batch(dictionary)
    masked = src.ne(dictionary.pad()) & (torch.arange(src.size(1)) % 3 == 0)
    lprobs, extra = model(src, lengths, prev, src_masked_tokens=masked)
    target = torch.roll(prev, -1, dims=1)
    return F.nll_loss(lprobs.flatten(0, 1), target.flatten()) + F.cross_entropy(
        extra["encoder_mlm_logits"], src[masked]
    )


def palm_layers(model):
    return [*model.encoder.layers, *model.decoder.layers]


@pytest.mark.parametrize(
    "options",
    [{"checkpoint_activations": True}, {"offload_activations": True}],
    ids=["checkpoint", "offload"],
)
def test_palm_checkpointed_gradients_equal_plain_gradients(options, monkeypatch):
    plain, checkpointed = palm_pair(**options)
    assert all(hasattr(layer, "precheckpoint_forward") for layer in palm_layers(checkpointed))
    assert not any(hasattr(layer, "precheckpoint_forward") for layer in palm_layers(plain))
    palm_loss(plain).backward()
    calls = count_calls(monkeypatch, checkpoint_activations.CheckpointFunction, "apply")
    palm_loss(checkpointed).backward()
    assert len(calls) == len(palm_layers(checkpointed))
    assert_same_gradients(gradients(checkpointed), gradients(plain))


def palm_decoding_logits(model):
    """Teacher-forced incremental decoding (``incremental_state``), as ``SequenceGenerator`` runs it."""
    src, lengths, prev = palm_batch(model.encoder.dictionary)
    state, steps = {}, []
    with torch.no_grad():
        encoder_out = model.encoder(src, src_lengths=lengths)
        for t in range(prev.size(1)):
            lprobs, _ = model.decoder(prev[:, : t + 1], encoder_out, incremental_state=state)
            steps.append(lprobs[:, -1])
    return torch.stack(steps, 1)


def test_palm_checkpointing_is_off_without_gradients(monkeypatch):
    plain, checkpointed = palm_pair(offload_activations=True)
    plain.eval(), checkpointed.eval()
    calls = count_calls(monkeypatch, checkpoint_activations.CheckpointFunction, "apply")
    with torch.no_grad():
        assert torch.equal(palm_loss(checkpointed), palm_loss(plain))
    assert torch.equal(palm_decoding_logits(checkpointed), palm_decoding_logits(plain))
    assert calls == []


def test_palm_deep_copy_runs_its_own_layers():
    _, checkpointed = palm_pair(checkpoint_activations=True)
    copied = copy.deepcopy(checkpointed)
    with torch.no_grad():
        for p in copied.parameters():
            p.mul_(1.5)
    with torch.no_grad():
        without_grad = palm_loss(copied)
    with_grad = palm_loss(copied)
    torch.testing.assert_close(with_grad.detach(), without_grad, atol=1e-6, rtol=0)
    with torch.no_grad():
        assert not torch.allclose(without_grad, palm_loss(checkpointed))


def test_palm_state_dicts_load_across_checkpointing():
    plain, checkpointed = palm_pair(checkpoint_activations=True)
    assert list(plain.state_dict()) == list(checkpointed.state_dict())
    fresh_plain = palm_model(seed=5)
    fresh_plain.load_state_dict(checkpointed.state_dict())  # strict
    fresh_checkpointed = palm_model(seed=5, checkpoint_activations=True)
    fresh_checkpointed.load_state_dict(plain.state_dict())
    for key, value in plain.state_dict().items():
        assert torch.equal(fresh_plain.state_dict()[key], value)
        assert torch.equal(fresh_checkpointed.state_dict()[key], value)
