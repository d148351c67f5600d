"""Forward passes read nothing back from the device; position ids are checked where batches are built.

Reading a tensor's values on the host (``.item()``, ``int()``, ``bool()``, ``.tolist()``, ``.cpu()``
...) waits for every queued GPU kernel. ``helpers.host_reads.no_host_reads`` makes those reads raise, so
these tests run the forward passes of training and cached decoding inside it (on any device).
"""

import argparse

import pytest
import torch
from fairseq import metrics
from fairseq.data import data_utils

from unilm_fairseq import seq2seq_layout
from unilm_fairseq.criterions.ae_par import AEPARCriterion
from unilm_fairseq.criterions.palm import PALMCriterion
from unilm_fairseq.criterions.unilm import UniLMCriterion
from unilm_fairseq.data.pretraining.unilm_cloze_dataset import UniLMClozeDataset
from unilm_fairseq.data.pretraining.unilm_objectives import NO_NSP, OBJECTIVE_NAMES, SEQ2SEQ
from unilm_fairseq.data.seq2seq.seq2seq_dataset import Seq2SeqDataset
from unilm_fairseq.losses import sentence_losses, token_losses
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
from ..helpers.unilm_v1 import ONLY, PAPER_WEIGHTS, objective_dataset, synthetic_corpus

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


def reduced(reduce_metrics, logging_outputs):
    """What ``reduce_metrics`` logs: each average meter's (sum, count), unrounded."""
    with metrics.aggregate(new_root=True) as agg:
        reduce_metrics(logging_outputs)
    return {key: (float(m.sum), float(m.count)) for key, m in agg.items() if hasattr(m, "sum")}


def all_reduced(logging_outputs):
    """The one logging output fairseq's trainer passes on after summing over workers: float64 tensors."""
    return [{k: torch.as_tensor(sum(log[k] for log in logging_outputs)).double() for k in logging_outputs[0]}]


def unilm_batch(weights, n=8):
    d = make_dictionary()
    blocks, docs = synthetic_corpus(d, n_docs=3, blocks_per_doc=4)
    data = UniLMClozeDataset(objective_dataset(blocks, docs, d, weights, seed=4), d, d.index("<mask>"), 4)
    return d, data.collater([data[i] for i in range(n)])


def unilm_total_with_host_counts(model, batch):
    """The loss as the criterion computed it with its NSP count read back to the host."""
    predicted = batch["net_input"]["masked_tokens"]
    logits, extra = model(**batch["net_input"], nsp=True)
    has_nsp = batch["nsp_target"].ne(NO_NSP)
    nsp_loss, _ = sentence_losses(extra["nsp_logits"][has_nsp], batch["nsp_target"][has_nsp])
    count = int(has_nsp.sum())
    scale = batch["num_masked"] / count if count else 0.0
    return token_losses(logits, batch["target"][predicted])[0].sum() + scale * nsp_loss.sum()


@pytest.mark.parametrize("weights", [PAPER_WEIGHTS, ONLY[SEQ2SEQ]], ids=["nsp", "no_nsp"])
def test_unilm_criterion_forward_reads_nothing_back(weights):
    """Counts stay device tensors; the loss and what reduce_metrics logs are those of the host counts."""
    d, batch = unilm_batch(weights)
    has_nsp = batch["nsp_target"].ne(NO_NSP)
    assert has_nsp.any() == (weights is PAPER_WEIGHTS)
    model = tiny_model(d, num_segments=6).train()
    model.build_nsp_head()
    with no_host_reads():
        loss, sample_size, log = UniLMCriterion(None)(model, batch)
        loss.backward()
    with torch.no_grad():  # bit for bit, also without NSP examples, where the NSP term is 0
        assert torch.equal(loss.detach(), unilm_total_with_host_counts(model, batch))
    counts = ["nsp_correct", "nsp_examples"] + [f"{name}_tokens" for name in OBJECTIVE_NAMES]
    assert all(torch.is_tensor(log[key]) for key in counts)
    masked = batch["net_input"]["masked_tokens"]
    for i, name in enumerate(OBJECTIVE_NAMES):
        assert log[f"{name}_tokens"] == int(masked[batch["objective"] == i].sum())
    assert log["nsp_examples"] == int(has_nsp.sum()) and sample_size == int(masked.sum())

    # two workers' outputs: as the host counts (ints) logged them, as tensors, as fairseq all-reduces them
    host = [{k: int(v) if k in counts else v for k, v in log.items()}] * 2
    expected = reduced(UniLMCriterion.reduce_metrics, host)
    assert ("nsp_acc" in expected) == (weights is PAPER_WEIGHTS)
    assert reduced(UniLMCriterion.reduce_metrics, [log, log]) == expected
    summed = reduced(UniLMCriterion.reduce_metrics, all_reduced([log, log]))
    assert summed.keys() == expected.keys()
    for key, (total, count) in expected.items():
        assert summed[key] == (pytest.approx(total, rel=1e-6), count)


class PALMTask:
    """What the palm criterion reads of the palm_pretrain task."""

    def __init__(self, dictionary, stage, mlm_weight=0.0):
        self.target_dictionary = dictionary
        self.trains_decoder, self.trains_mlm = stage == 2, stage == 1 or mlm_weight > 0
        self.cfg = argparse.Namespace(mlm_weight=mlm_weight)


def palm_sample(d, masked_positions):
    src, lengths, prev = palm_batch(d)
    masked = torch.zeros_like(src, dtype=torch.bool)
    masked[:, masked_positions] = src[:, masked_positions].ne(d.pad())
    target = torch.cat([prev[:, 1:], torch.full((len(prev), 1), d.eos())], 1)
    target[0, -2:] = d.pad()  # a shorter continuation
    net_input = dict(src_tokens=src, src_lengths=lengths, prev_output_tokens=prev, src_masked_tokens=masked)
    return {
        "net_input": net_input,
        "mlm_target": src.masked_fill(~masked, d.pad()),
        "target": target,
        "ntokens": int(target.ne(d.pad()).sum()),
        "nsentences": len(src),
        "num_masked": int(masked.sum()),  # the collater's count, on the CPU
    }


@pytest.mark.parametrize(
    "stage, mlm_weight, masked_positions",
    [(1, 0.0, [1, 4, 6]), (2, 0.5, [1, 4, 6]), (2, 0.0, []), (2, 0.5, [])],
)
def test_palm_criterion_takes_the_masked_count_from_the_batch(stage, mlm_weight, masked_positions):
    model = palm_model().train()
    d = model.encoder.dictionary
    sample = palm_sample(d, masked_positions)
    criterion = PALMCriterion(PALMTask(d, stage, mlm_weight), label_smoothing=0.1)
    # fairseq's encoder tests a host flag with bool(), as in test_palm_forward_reads_nothing_back
    with no_host_reads(tuple(name for name in HOST_READS if name != "__bool__")):
        loss, sample_size, log = criterion(model, sample)
        loss.backward()
    mlm_tokens = int(sample["net_input"]["src_masked_tokens"].sum())
    assert type(log["mlm_tokens"]) is int and log["mlm_tokens"] == mlm_tokens
    # every batch of a run logs the same keys, one without a masked token too: fairseq all-reduces one list
    assert ("mlm_loss" in log) == (stage == 1 or mlm_weight > 0)
    if stage == 2 and mlm_weight > 0:  # the head is in the graph on every batch (DDP: no unused parameter)
        head = [p for n, p in model.named_parameters() if n.startswith("encoder_mlm_head.")]
        assert head and all(p.grad is not None for p in head)
        if mlm_tokens == 0:  # in the graph with zero gradients: the loss is the continuation loss alone
            assert all(float(p.grad.abs().sum()) == 0 for p in head)
            assert float(log["mlm_loss"]) == 0
            assert float(loss.detach()) == pytest.approx(float(log["lm_loss"]))
    assert sample_size == (mlm_tokens if stage == 1 else sample["ntokens"])
    # two workers' outputs, as logged and as fairseq all-reduces them
    expected = reduced(PALMCriterion.reduce_metrics, [log, log])
    assert ("mlm_loss" in expected) == ("mlm_loss" in log) and ("lm_loss" in expected) == (stage == 2)
    summed = reduced(PALMCriterion.reduce_metrics, all_reduced([log, log]))
    assert summed.keys() == expected.keys()
    for key, (total, count) in expected.items():
        assert summed[key] == (pytest.approx(total, rel=1e-6), count)

    del sample["num_masked"]
    with pytest.raises(ValueError, match="--criterion palm needs the batch's 'num_masked'"):
        criterion(model, sample)


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
