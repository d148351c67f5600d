"""Fixed-shape decoding steps (``--decoding-step static`` / ``cuda_graph``) decode as the eager steps do.

A static step attends over a preallocated cache whose unfilled slots the bias masks out, keeps the rows
of finished sentences as unread rows, and takes every per-step value from tensors, so that a CUDA graph
can replay it (docs: benchmarks/README.md, "CUDA graph decoding").
"""

import argparse
import collections
import pickle

import pytest
import torch
from fairseq import utils
from torch.profiler import ProfilerActivity, profile

from unilm_fairseq import seq2seq_layout
from unilm_fairseq.models import static_decoding
from unilm_fairseq.models.static_decoding import StaticDecodingStep

from ..helpers.host_reads import no_host_reads
from ..helpers.seq2seq import (
    EOS,
    MAX_LEN_B,
    TOL,
    WORDS,
    D,
    assert_same_hypotheses,
    collate,
    decoding_model,
    generate,
    line,
    make_task,
    pairs_dataset,
    sharpened_model,
)

pytestmark = pytest.mark.usefixtures("one_thread")


@pytest.fixture(autouse=True)
def nothing_kept():
    """The decoding models are shared between tests: none starts with a state an earlier decode kept."""

    def release():  # decoding_model caches by the method or its name
        for method in [*seq2seq_layout.METHODS, *(m.value for m in seq2seq_layout.METHODS)]:
            decoding_model(method).decoder.release_static_state()

    release()
    yield
    release()


@pytest.fixture
def spied(monkeypatch):
    """Counts the calls of StaticDecodingStep's methods."""
    calls = collections.Counter()
    for name in ("__init__", "step", "reorder", "_take_sources", "eager_cache"):
        method = getattr(StaticDecodingStep, name)

        def counted(*args, _method=method, _name=name, **kwargs):
            calls[_name] += 1
            return _method(*args, **kwargs)

        monkeypatch.setattr(StaticDecodingStep, name, counted)
    return calls


def generate_in(mode, model, batch, **options):
    model.decoder.step_mode = mode
    try:
        return generate(model, batch, incremental=True, **options)
    finally:
        model.decoder.step_mode = "eager"


@pytest.mark.parametrize("beam", [1, 4])
@pytest.mark.parametrize("method", seq2seq_layout.METHODS)
def test_static_steps_decode_as_eager_steps(method, beam, spied):
    model, batch = decoding_model(method), collate(pairs_dataset(method))
    eager = generate_in("eager", model, batch, beam=beam, max_len_b=12)
    assert not spied
    static = generate_in("static", model, batch, beam=beam, max_len_b=12)
    assert_same_hypotheses(static, eager)
    assert len({len(h["tokens"]) for hyps in eager for h in hyps}) > 1  # sentences finished at other steps
    assert spied["__init__"] == 1 and spied["step"] > 3 and not spied["eager_cache"]
    # sentences left the batch: their rows stayed, the remaining sources were copied in place
    assert spied["_take_sources"] >= 1


@pytest.mark.parametrize("method", seq2seq_layout.METHODS)
def test_a_full_static_cache_grows(method, spied, monkeypatch):
    monkeypatch.setattr(static_decoding, "STATIC_CAPACITY", 2)
    model, batch = decoding_model(method), collate(pairs_dataset(method))
    static = generate_in("static", model, batch, beam=4, max_len_b=12)
    assert spied["__init__"] >= 3  # 2 slots, then 4, then 8 (and more)
    assert_same_hypotheses(static, generate_in("eager", model, batch, beam=4, max_len_b=12))


@pytest.mark.parametrize("method", seq2seq_layout.METHODS)
def test_static_steps_follow_the_prefix_tokens_and_ngram_blocking(method):
    model, batch = decoding_model(method), collate(pairs_dataset(method))
    prefix = torch.tensor([[WORDS[1], WORDS[2]], [WORDS[3], WORDS[4]], [WORDS[5], WORDS[6]]])
    options = dict(beam=4, prefix_tokens=prefix, no_repeat_ngram_size=2, min_len=3)
    assert_same_hypotheses(
        generate_in("static", model, batch, **options), generate_in("eager", model, batch, **options)
    )


def test_static_steps_in_bfloat16_give_the_eager_tokens():
    model = sharpened_model(D, "pseudo_masked").to(torch.bfloat16)
    batch = collate(pairs_dataset("pseudo_masked"))
    static = generate_in("static", model, batch, beam=4, max_len_b=10)
    eager = generate_in("eager", model, batch, beam=4, max_len_b=10)
    assert [[h["tokens"].tolist() for h in hyps] for hyps in static] == [
        [h["tokens"].tolist() for h in hyps] for hyps in eager
    ]


def reordered_logits(model, mode, src_tokens, prev, orders):
    """Teacher-forced next-token logits of ``mode`` steps; ``orders[t]`` reorders the rows before step t."""
    state, steps = {}, []
    model.decoder.step_mode = mode
    try:
        with torch.no_grad():
            encoder_out = model.encoder(src_tokens)
            for t in range(prev.size(1)):
                if t in orders:
                    encoder_out = model.encoder.reorder_encoder_out(encoder_out, orders[t])
                    model.decoder.reorder_incremental_state(state, orders[t])
                    prev = prev.index_select(0, orders[t])
                    steps = [s.index_select(0, orders[t]) for s in steps]
                logits, _ = model.decoder(prev[:, : t + 1], encoder_out, incremental_state=state)
                steps.append(logits[:, 0])
    finally:
        model.decoder.step_mode = "eager"
    return torch.stack(steps, 1)


@pytest.mark.parametrize(
    "orders, eager_again",
    [
        ({}, False),
        ({3: torch.tensor([1, 0, 2, 3, 5, 4])}, False),  # beam reorders inside each sentence
        ({2: torch.tensor([0, 1, 4, 5]), 4: torch.tensor([1, 0, 2, 2])}, False),  # a sentence leaves
        ({3: torch.tensor([2, 1, 0, 3, 4, 5])}, True),  # rows cross sentences: one source copy per row
        ({3: torch.tensor([0, 2, 4])}, True),  # one row per sentence: not blocks of the beam size
    ],
    ids=["none", "beam", "sentence-leaves", "crossing", "one-row-each"],
)
@pytest.mark.parametrize("method", seq2seq_layout.METHODS)
def test_static_steps_equal_eager_steps_through_reorders(method, orders, eager_again, spied):
    model = decoding_model(method)
    src_tokens = collate(pairs_dataset(method))["net_input"]["src_tokens"]
    prev = torch.cat([torch.full((6, 1), EOS), torch.tensor(WORDS[1:7]).repeat(6, 1)], 1)
    orders = {0: torch.tensor([0, 0, 1, 1, 2, 2]), **orders}  # beam 2
    got = reordered_logits(model, "static", src_tokens, prev, orders)
    assert spied["step"] > 0 and bool(spied["eager_cache"]) == eager_again
    expected = reordered_logits(model, "eager", src_tokens, prev, orders)
    assert got.shape == expected.shape
    assert torch.allclose(got, expected, atol=TOL), (got - expected).abs().max()


def test_a_static_step_has_one_shape_at_every_step_and_reads_nothing_back():
    """What a CUDA graph needs: the same calls on the same shapes at every step, values from tensors."""
    model = decoding_model("pseudo_masked")
    src_tokens = collate(pairs_dataset("pseudo_masked"))["net_input"]["src_tokens"]
    prev = torch.cat([torch.full((3, 1), EOS), torch.tensor(WORDS[1:6]).repeat(3, 1)], 1)
    state, recorded = {}, []
    model.decoder.step_mode = "static"
    try:
        with torch.no_grad():
            encoder_out = model.encoder(src_tokens)
            for t in range(prev.size(1)):
                model.decoder(prev[:, : t + 1], encoder_out, incremental_state=state)
                static = model.decoder.get_incremental_state(state, "static")
                if static is None:
                    continue
                with no_host_reads(), profile(activities=[ProfilerActivity.CPU], record_shapes=True) as prof:
                    static.forward()
                recorded.append(
                    [(e.name, str(e.input_shapes)) for e in prof.events() if e.name.startswith("aten::")]
                )
    finally:
        model.decoder.step_mode = "eager"
    assert len(recorded) == prev.size(1) - 1  # step 0 feeds the mask token alone (eager)
    assert all(calls == recorded[0] for calls in recorded[1:])
    assert len(recorded[0]) > 50


def test_the_task_sets_the_decoding_step(spied, caplog):
    model, batch = decoding_model("masked"), collate(pairs_dataset("masked"))
    eager = generate_in("eager", model, batch, beam=2)
    for mode, static_states in (("static", 1), ("cuda_graph", 0)):  # no CUDA graph on a CPU
        spied.clear()
        task = make_task(finetune_method="masked", decoding_step=mode)
        generator = task.build_generator([model], argparse.Namespace(beam=2, max_len_b=MAX_LEN_B))
        with torch.no_grad(), caplog.at_level("INFO"):
            hypos = task.inference_step(generator, [model], batch)
        assert model.decoder.step_mode == mode
        model.decoder.step_mode = "eager"
        assert spied["__init__"] == static_states
        assert_same_hypotheses(hypos, eager)
    assert "CUDA graph decoding needs a CUDA device" in caplog.text


def test_an_unknown_decoding_step_is_refused():
    model, batch = decoding_model("masked"), collate(pairs_dataset("masked"))
    model.decoder.step_mode = "graph"
    try:
        with pytest.raises(ValueError, match="step_mode must be one of"):
            generate(model, batch, incremental=True)
    finally:
        model.decoder.step_mode = "eager"


def test_slots_replace_the_prefix_and_need_shared_keys():
    model = decoding_model("masked")
    transformer = model.encoder.transformer
    tokens = torch.full((2, 1), WORDS[0])
    slots = (torch.zeros(len(transformer.layers), 2, 2, 4, 3, 8), torch.tensor([0]))
    with pytest.raises(ValueError, match="kv_slots needs shared keys"):
        transformer(tokens, tokens, tokens, torch.ones(2, 1, 3, dtype=torch.bool), kv_slots=slots)


class ReplayedForward:
    """A stand-in for ``torch.cuda.CUDAGraph`` on a CPU: a replay runs the recorded step again into the
    same output tensor, as a graph's kernels write into the memory they were captured with."""

    def __init__(self):
        self.state, self.replays = None, 0

    def replay(self):
        self.replays += 1
        self.state.logits.copy_(self.state._forward())


def test_graph_steps_capture_once_and_replay_into_one_output(spied, monkeypatch):
    """The cuda_graph path's control flow, with torch.cuda's graph calls stood in for on a CPU."""
    import contextlib

    from unilm_fairseq.models.generation import UniLMIncrementalDecoder

    graphs, outputs = [], []
    stream = type("Stream", (), {"wait_stream": lambda self, other: None})
    monkeypatch.setattr(torch.cuda, "Stream", stream)
    monkeypatch.setattr(torch.cuda, "current_stream", lambda: stream())
    monkeypatch.setattr(torch.cuda, "stream", lambda s: contextlib.nullcontext())
    monkeypatch.setattr(torch.cuda, "CUDAGraph", lambda: graphs.append(ReplayedForward()) or graphs[-1])
    monkeypatch.setattr(torch.cuda, "graph", lambda g: contextlib.nullcontext())
    monkeypatch.setattr(UniLMIncrementalDecoder, "_static_steps", lambda self, device: True)
    capture, step = StaticDecodingStep._capture, StaticDecodingStep.step

    def captured(self):
        capture(self)
        self.cuda_graph.state = self

    def stepped(self, tokens, encoder_out):
        logits = step(self, tokens, encoder_out)
        outputs.append(logits.data_ptr())
        return logits

    monkeypatch.setattr(StaticDecodingStep, "_capture", captured)
    monkeypatch.setattr(StaticDecodingStep, "step", stepped)
    model, batch = decoding_model("pseudo_masked"), collate(pairs_dataset("pseudo_masked"))
    second = other_batch("pseudo_masked")
    model.decoder.step_mode = "cuda_graph"
    try:
        graphed = generate(model, batch, incremental=True, beam=4, max_len_b=12)
        graphed_second = generate(model, second, incremental=True, beam=4, max_len_b=12)
    finally:
        model.decoder.step_mode = "eager"
    # one capture for both generate calls (the batches have one shape): every step replays it
    assert len(graphs) == 1 and graphs[0].replays == len(outputs) > 6
    assert len(set(outputs)) == 1  # every step's logits are the captured output tensor
    assert_same_hypotheses(graphed, generate_in("eager", model, batch, beam=4, max_len_b=12))
    assert_same_hypotheses(graphed_second, generate_in("eager", model, second, beam=4, max_len_b=12))


def other_batch(method):
    """A batch of the same shape as ``collate(pairs_dataset(method))`` with other sources and lengths."""
    sources = [line(9, 7), line(4, 8), line(6, 9)]
    batch = collate(pairs_dataset(method, sources=sources))
    assert (
        batch["net_input"]["src_tokens"].shape
        == collate(pairs_dataset(method))["net_input"]["src_tokens"].shape
    )
    return batch


@pytest.mark.parametrize("method", seq2seq_layout.METHODS)
def test_the_next_decode_of_the_same_shape_restarts_the_kept_state(method, spied):
    model, first, second = decoding_model(method), collate(pairs_dataset(method)), other_batch(method)
    static_first = generate_in("static", model, first, beam=4, max_len_b=12)
    kept = model.decoder._kept_static[0]
    static_second = generate_in("static", model, second, beam=4, max_len_b=12)
    assert spied["__init__"] == 1 and model.decoder._kept_static[0] is kept
    assert_same_hypotheses(static_first, generate_in("eager", model, first, beam=4, max_len_b=12))
    assert_same_hypotheses(static_second, generate_in("eager", model, second, beam=4, max_len_b=12))
    generate_in("static", model, first, beam=2, max_len_b=12)  # another beam: other shapes, a new state
    assert spied["__init__"] == 2 and model.decoder._kept_static[0] is not kept


def test_a_decode_still_running_keeps_its_state_to_itself(spied):
    """A second decode while the first one's incremental state lives gets a state of its own."""
    model = decoding_model("masked")
    src_tokens = collate(pairs_dataset("masked"))["net_input"]["src_tokens"]
    prev = torch.cat([torch.full((6, 1), EOS), torch.tensor(WORDS[1:4]).repeat(6, 1)], 1)
    order = torch.tensor([0, 0, 1, 1, 2, 2])
    model.decoder.step_mode = "static"
    try:
        with torch.no_grad():
            encoder_out = model.encoder.reorder_encoder_out(model.encoder(src_tokens), order)

            def two_steps():  # a decode's first two steps (the second one static); its incremental state
                state = {}
                for t in range(2):
                    model.decoder(prev[:, : t + 1], encoder_out, incremental_state=state)
                return state

            running = two_steps()
            assert spied["__init__"] == 1
            other = two_steps()
            assert spied["__init__"] == 2
            del running, other  # both decodes over: the last state made is free for the next one
            two_steps()
            assert spied["__init__"] == 2
    finally:
        model.decoder.step_mode = "eager"


def test_training_casting_and_pickling_drop_the_kept_state():
    model, batch = sharpened_model(D, "causal"), collate(pairs_dataset("causal"))
    model.eval()
    generate_in("static", model, batch, beam=2)
    assert model.decoder._kept_static[0] is not None
    model.train()
    assert model.decoder._kept_static[0] is None
    model.eval()
    generate_in("static", model, batch, beam=2)
    assert "_kept_static" not in pickle.loads(pickle.dumps(model.decoder)).__dict__
    model.double()
    assert model.decoder._kept_static[0] is None


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")
@pytest.mark.parametrize("method", seq2seq_layout.METHODS)
def test_cuda_graph_steps_decode_as_eager_steps(method, spied, monkeypatch):
    captures = []
    capture = StaticDecodingStep._capture
    monkeypatch.setattr(StaticDecodingStep, "_capture", lambda self: captures.append(1) or capture(self))
    model = decoding_model(method).cuda()
    batch = utils.move_to_cuda(collate(pairs_dataset(method)))
    try:
        graphed = generate_in("cuda_graph", model, batch, beam=4, max_len_b=12)
        eager = generate_in("eager", model, batch, beam=4, max_len_b=12)
    finally:
        model.cpu()
    assert_same_hypotheses(graphed, eager)
    assert captures == [1] and spied["step"] > 3
    assert len({len(h["tokens"]) for hyps in eager for h in hyps}) > 1  # rows finished and stayed
