"""Forward passes read nothing back from the device; position ids are checked where batches are built.

Reading a tensor's values on the host (``.item()``, ``int()``, ``bool()``, ``.tolist()``, ``.cpu()``
...) waits for every queued GPU kernel. ``helpers.host_reads.no_host_reads`` makes those reads raise, so
these tests run the forward passes of training and cached decoding inside it (on any device).
"""

import argparse

import pytest
import torch
from fairseq.data import data_utils

from unilm_fairseq import seq2seq_layout
from unilm_fairseq.criterions.ae_par import AEPARCriterion
from unilm_fairseq.data.seq2seq.seq2seq_dataset import Seq2SeqDataset
from unilm_fairseq.models.generation import check_decoding_positions, last_decoding_position
from unilm_fairseq.modules.transformer import check_positions
from unilm_fairseq.seq2seq_layout import FinetuneMethod, Seq2SeqSpec
from unilm_fairseq.tasks.unilm_seq2seq import _TokenList

from ..helpers.host_reads import HOST_READS, HostRead, no_host_reads
from ..helpers.models import make_dictionary, tiny_model
from ..helpers.palm import batch as palm_batch
from ..helpers.palm import palm_model
from ..helpers.pmlm_batches import Task
from ..helpers.pmlm_batches import batch as pmlm_batch
from ..helpers.seq2seq import (
    EOS,
    PAD,
    WORDS,
    D,
    collate,
    decoding_model,
    generate,
    line,
    make_task,
    pairs_dataset,
)

pytestmark = pytest.mark.usefixtures("one_thread")


READS = {
    "item": lambda t: t.item(),
    "__int__": int,
    "__float__": float,
    "__bool__": bool,
    "tolist": lambda t: t.tolist(),
    "numpy": lambda t: t.numpy(),
    "cpu": lambda t: t.cpu(),
}


@pytest.mark.parametrize("name", HOST_READS)
def test_no_host_reads_refuses_each_read_and_restores_it(name):
    t = torch.tensor([7])
    with no_host_reads():
        with pytest.raises(HostRead, match=f"Tensor.{name} read"):
            READS[name](t)
    assert READS[name](t) is not None
    assert t.item() == 7 and int(t) == 7 and bool(t) and t.tolist() == [7] and t.cpu().equal(t)


@pytest.mark.parametrize("method", seq2seq_layout.METHODS)
def test_training_forward_reads_nothing_back(method):
    model = tiny_model(D, seq2seq_method=method).train()
    net_input = collate(pairs_dataset(method))["net_input"]
    with no_host_reads():
        logits, _ = model(**net_input)
        logits.float().logsumexp(-1).sum().backward()
    assert logits.shape[0] == int(net_input["masked_tokens"].sum())
    assert model.transformer.embeddings.positions.weight.grad is not None


@pytest.mark.parametrize("options", [{}, {"leave_unmasked_prob": 0.3, "par_skip_unchanged": True}])
def test_ae_par_criterion_forward_reads_nothing_back(options):
    """The loss and its logged counts (tokens per objective, top-1 hits) stay tensors on the device."""
    d = make_dictionary()
    model, sample = tiny_model(d).train(), pmlm_batch(d, **options)
    with no_host_reads():
        loss, sample_size, log = AEPARCriterion(Task(d))(model, sample)
        loss.backward()
    assert log["ae_tokens"] + log["par_tokens"] == int(sample["ae_mask"].sum() + sample["par_mask"].sum())


def test_palm_forward_reads_nothing_back():
    model = palm_model().train()
    src, lengths, prev = palm_batch(model.encoder.dictionary)
    # fairseq's encoder tests a flag it makes on the host, torch.tensor(device is XLA), with bool()
    with no_host_reads(tuple(name for name in HOST_READS if name != "__bool__")):
        lprobs, _ = model(src, lengths, prev)
    assert lprobs.shape[:2] == prev.shape


@pytest.mark.parametrize("method", seq2seq_layout.METHODS)
def test_cached_decoding_steps_read_nothing_back(method):
    model = decoding_model(method)
    items = [pairs_dataset(method)[i] for i in range(3)]
    src_tokens = data_utils.collate_tokens([it["source"] for it in items], PAD, left_pad=True)
    prev = torch.cat([torch.full((6, 1), EOS), torch.tensor(WORDS[:4]).repeat(6, 1)], 1)
    state = {}
    with torch.no_grad():
        encoder_out = model.encoder(src_tokens)
        # beam 2, then the last sentence leaves the batch: the reorders read the host, the steps do not
        encoder_out = model.encoder.reorder_encoder_out(encoder_out, torch.tensor([0, 0, 1, 1, 2, 2]))
        for t in range(3):
            with no_host_reads():
                logits, _ = model.decoder(prev[:, : t + 1], encoder_out, incremental_state=state)
        order = torch.tensor([1, 0, 2, 3])
        encoder_out = model.encoder.reorder_encoder_out(encoder_out, order)
        model.decoder.reorder_incremental_state(state, order)
        with no_host_reads():
            logits, _ = model.decoder(prev[:4, :4], encoder_out, incremental_state=state)
    assert logits.shape == (4, 1, len(D)) and torch.isfinite(logits).all()


@pytest.mark.parametrize("method", seq2seq_layout.METHODS)
def test_beam_search_decoder_steps_read_nothing_back(method, monkeypatch):
    model = decoding_model(method)
    forward, steps = model.decoder.forward, []

    def guarded(*args, **kwargs):
        steps.append(kwargs.get("incremental_state") is not None)
        with no_host_reads():
            return forward(*args, **kwargs)

    monkeypatch.setattr(model.decoder, "forward", guarded)
    hypos = generate(model, collate(pairs_dataset(method)), incremental=True, beam=4)
    assert len(hypos) == 3 and all(len(h) == 4 for h in hypos)
    assert len(steps) > 3 and all(steps)


# ---------------------------------------------------------------------------------------------------
# where positions are checked


def test_check_positions_names_the_id_and_the_table():
    check_positions(torch.tensor([[0, 5, 63]]), 64)
    check_positions(torch.zeros(0, dtype=torch.long), 64)
    with pytest.raises(ValueError, match=r"position id 64 exceeds the position table \(max_positions=64\)"):
        check_positions(torch.tensor([[0, 64, 3]]), 64)


@pytest.mark.parametrize("method", seq2seq_layout.METHODS)
def test_last_decoding_position_is_the_largest_position_a_decode_uses(method):
    """The bound known before decoding equals the largest position id the embeddings see in a decode
    that runs to its last step (no early [EOS]), sources of different lengths batched."""
    model = tiny_model(D, seq2seq_method=method)
    with torch.no_grad():
        model.lm_head.bias[EOS] = -1e4
    seen = []
    hook = model.transformer.embeddings.positions.register_forward_hook(
        lambda module, inputs, output: seen.append(int(inputs[0].max()))
    )
    batch = collate(Seq2SeqDataset(_TokenList([line(4, 1), line(7, 2)]), None, D, Seq2SeqSpec(method, 20, 8)))
    src_len = batch["net_input"]["src_tokens"].size(1)  # 9: the longer "[SOS] source [EOS]"
    try:
        generate(model, batch, incremental=True, beam=2, max_len_b=5)
    finally:
        hook.remove()
    assert max(seen) == last_decoding_position(method, src_len, 5)
    assert last_decoding_position(method, src_len, 5) == (src_len + 4 if method == "causal" else src_len + 5)


def test_last_decoding_position_covers_the_source():
    assert last_decoding_position(FinetuneMethod.MASKED, 30, -5) == 29


def test_inference_step_rejects_a_source_longer_than_the_table():
    task = make_task(max_source_positions=30, max_target_positions=8)
    model = tiny_model(D, seq2seq_method="pseudo_masked", max_positions=24)
    generator = task.build_generator([model], argparse.Namespace(beam=2, max_len_b=5))
    batch = collate(Seq2SeqDataset(_TokenList([line(26, 1)]), None, D, Seq2SeqSpec("pseudo_masked", 30, 8)))
    assert batch["net_input"]["src_tokens"].size(1) == 28
    with pytest.raises(ValueError, match=r"decoding reached position 27, beyond the position table"):
        task.inference_step(generator, [model], batch)


def test_check_decoding_positions_message():
    check_decoding_positions(23, 24)
    with pytest.raises(
        ValueError, match=r"position 24, beyond the position table \(max_positions=24\); lower"
    ):
        check_decoding_positions(24, 24)
