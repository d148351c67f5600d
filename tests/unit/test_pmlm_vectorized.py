"""The vectorized PMLM data pipeline draws and builds exactly what the step-by-step one did
(tests/helpers/pmlm_reference.py): the same spans, generator states, items and batches for every seed,
objective and layout option."""

import numpy as np
import pytest
import torch

from unilm_fairseq import masks
from unilm_fairseq.data.pretraining import PMLMDataset, SegmentPairDataset
from unilm_fairseq.data.pretraining.blockwise_masking import (
    blockwise_mask_spans,
    blockwise_mask_steps,
    pcg64_draws,
    span_positions,
)
from unilm_fairseq.data.pretraining.segment_pairs import sentence_starts, split_sentences

from ..helpers.models import make_dictionary
from ..helpers.pmlm_reference import reference_collate, reference_item, reference_mask_steps, reference_pair

DICT = make_dictionary(60)
MASK = DICT.index("<mask>")
EOS = DICT.eos()


class Blocks:
    """Token blocks as ``TokenBlockDataset`` gives them: 1-D LongTensors, ``eos`` closing sentences."""

    def __init__(self, count: int, seed: int = 0, longest: int = 120):
        rng = np.random.default_rng(seed)
        self.blocks = []
        for i in range(count):
            n = longest if i % 5 == 0 else int(rng.integers(0, longest))
            block = rng.integers(DICT.nspecial, len(DICT) - 1, size=n)
            block[rng.random(n) < 0.08] = EOS  # sentence ends, some adjacent or leading
            self.blocks.append(torch.from_numpy(block.astype(np.int64)))
        self.sizes = np.array([len(b) for b in self.blocks])

    def __getitem__(self, index):
        return self.blocks[index]

    def __len__(self):
        return len(self.blocks)


def assert_same(actual, expected, where=()):
    """Equal values, dtypes, shapes and key order, nested."""
    assert type(actual) is type(expected), (where, type(actual), type(expected))
    if isinstance(expected, dict):
        assert list(actual) == list(expected), where
        for key in expected:
            assert_same(actual[key], expected[key], where + (key,))
    elif isinstance(expected, torch.Tensor):
        assert actual.dtype == expected.dtype and actual.shape == expected.shape, where
        assert torch.equal(actual, expected), where
    else:
        assert actual == expected, where


# ---------------------------------------------------------------- draws


def test_pcg64_draws_are_the_generators_own_calls():
    rng, mine = np.random.default_rng(11), np.random.default_rng(11)
    random, integers, finish = pcg64_draws(mine, chunk=3)  # refills many times
    choices = np.random.default_rng(0)
    for _ in range(3000):
        kind = int(choices.integers(0, 4))
        if kind == 0:
            assert random() == rng.random()
        else:
            low = int(choices.integers(-5, 5))
            high = low + int(choices.integers(1, [2, 7, 600][kind - 1] + 1))  # includes high - low == 1
            assert integers(low, high) == rng.integers(low, high)
    finish()
    assert mine.bit_generator.state == rng.bit_generator.state
    assert mine.integers(0, 1000, size=20).tolist() == rng.integers(0, 1000, size=20).tolist()


@pytest.mark.parametrize("span", [3, 5, 600, 2**31 + 1])
def test_pcg64_draws_reject_like_numpy(span):
    # a kept half of 0 gives leftover 0, below the threshold of any span not a power of two: redraw
    rng, mine = np.random.default_rng(5), np.random.default_rng(5)
    for generator in (rng, mine):
        state = generator.bit_generator.state
        state["has_uint32"], state["uinteger"] = 1, 0
        generator.bit_generator.state = state
    random, integers, finish = pcg64_draws(mine, chunk=2)
    assert integers(10, 10 + span) == rng.integers(10, 10 + span)
    assert random() == rng.random()
    finish()
    assert mine.bit_generator.state == rng.bit_generator.state


def test_pcg64_draws_keep_a_half_left_by_earlier_calls():
    rng, mine = np.random.default_rng(3), np.random.default_rng(3)
    assert rng.integers(0, 9) == mine.integers(0, 9)  # leaves the high half of a draw kept
    random, integers, finish = pcg64_draws(mine, chunk=4)
    assert [integers(0, 100), random(), integers(0, 7)] == [
        rng.integers(0, 100),
        rng.random(),
        rng.integers(0, 7),
    ]
    finish()
    assert mine.bit_generator.state == rng.bit_generator.state


def maskables(count: int):
    """Sequences of many lengths and special-token densities, with masking options to go with them."""
    rng = np.random.default_rng(2)
    for i in range(count):
        n = int(rng.integers(0, 700)) if i % 7 else 1 + i % 4
        density = [0.0, 0.05, 0.5, 0.95][i % 4]
        kwargs = [{}, {"mask_prob": 0.6}, {"mask_prob": 0.3, "max_span": 11}, {"span_prob": 1.0}][i % 4]
        yield rng.random(n) >= density, kwargs


def test_blockwise_spans_are_the_step_by_step_draws_and_leave_the_same_state():
    for i, (maskable, kwargs) in enumerate(maskables(600)):
        rng, mine = np.random.default_rng((i, 4)), np.random.default_rng((i, 4))
        expected = reference_mask_steps(maskable, rng, **kwargs)
        steps = blockwise_mask_steps(maskable, mine, **kwargs)
        assert len(steps) == len(expected), i
        for step, want in zip(steps, expected):
            assert step.dtype == want.dtype and step.tolist() == want.tolist(), i
        assert mine.bit_generator.state == rng.bit_generator.state, i


def test_blockwise_spans_with_another_bit_generator_use_its_own_calls():
    for i, (maskable, kwargs) in enumerate(maskables(100)):
        rng = np.random.Generator(np.random.MT19937(i))
        mine = np.random.Generator(np.random.MT19937(i))
        expected = reference_mask_steps(maskable, rng, **kwargs)
        starts, lengths = blockwise_mask_spans(maskable, mine, **kwargs)
        assert [s.tolist() for s in expected] == [list(range(s, s + n)) for s, n in zip(starts, lengths)]
        assert mine.integers(0, 2**31, size=8).tolist() == rng.integers(0, 2**31, size=8).tolist()


def test_span_positions_concatenate_the_spans_in_order():
    starts, lengths = np.array([7, 0, 3]), np.array([2, 1, 4])
    assert span_positions(starts, lengths).tolist() == [7, 8, 0, 3, 4, 5, 6]
    assert span_positions(starts[:0], lengths[:0]).tolist() == []


# ---------------------------------------------------------------- segment pairs


@pytest.mark.parametrize(
    "block",
    [[], [EOS], [EOS, EOS], [9], [9, EOS], [EOS, 9, 10, EOS, EOS, 11], [9, 10, EOS, 11, EOS, EOS, 12, 13]],
)
def test_sentence_starts_are_split_sentences(block):
    block = np.array(block, dtype=np.int64)
    text, starts = sentence_starts(block, EOS)
    pieces = np.split(text, starts[1:]) if len(starts) else []
    assert [p.tolist() for p in pieces] == [s.tolist() for s in split_sentences(block, EOS)]


@pytest.mark.parametrize("max_length", [512, 40, 8])
def test_segment_pairs_are_the_sentence_list_formula(max_length):
    pairs = SegmentPairDataset(Blocks(150), DICT, max_length=max_length, seed=7)
    for index in range(len(pairs)):
        assert_same(pairs[index], reference_pair(pairs, index), (index,))


# ---------------------------------------------------------------- items and batches

OPTIONS = [
    {},
    {"par": False},
    {"ae": False},
    {"blockwise": False},
    {"ae": False, "blockwise": False},
    {"par_skip_unchanged": True},
    {"mask_prob": 0.5, "max_span": 9},
]


@pytest.mark.parametrize(
    "options", OPTIONS, ids=lambda o: ",".join(f"{k}={v}" for k, v in o.items()) or "default"
)
def test_items_and_batches_are_the_step_by_step_ones(options):
    for max_length in (512, 24):
        pairs = SegmentPairDataset(Blocks(30, seed=max_length), DICT, max_length=max_length, seed=3)
        data = PMLMDataset(pairs, DICT, MASK, seed=5, **options)
        for epoch in (1, 2):
            data.set_epoch(epoch)
            items = [data[i] for i in range(len(data))]
            for index, item in enumerate(items):
                assert_same(item, reference_item(data, index), (max_length, epoch, index))
            for size in (1, 4, 30):
                for start in range(0, len(items), size):
                    batch = items[start : start + size]
                    assert_same(
                        data.collater(batch), reference_collate(data, batch), (max_length, size, start)
                    )
    assert data.collater([]) == {}


def test_collater_takes_cut_out_items_like_the_naive_benchmark():
    # benchmarks/bench_pmlm.py collates items cut down to the first steps: any appended steps in order
    pairs = SegmentPairDataset(Blocks(12), DICT, max_length=64, seed=1)
    data = PMLMDataset(pairs, DICT, MASK, seed=2)
    cut = []
    for index in range(len(data)):
        item = data[index]
        keep = (item["kind"] == 0) | (item["step"] <= 1 + index % 3)
        cut.append({key: value[keep] if torch.is_tensor(value) else value for key, value in item.items()})
    assert_same(data.collater(cut), reference_collate(data, cut))


def test_batch_mask_is_the_per_example_masks_scattered():
    rng = np.random.default_rng(0)
    for trial in range(200):
        bsz = int(rng.integers(1, 6))
        contexts = rng.integers(0, 9, size=bsz)
        steps, pseudo = [], []
        for _ in range(bsz):
            a = int(rng.integers(0, 10)) if trial % 4 else 0
            steps.append(torch.from_numpy(rng.integers(1, 5, size=a)))  # any order, repeats
            pseudo.append(torch.from_numpy(rng.random(a) < 0.5))
        expected = masks.pad_masks_after_context(
            [masks.pmlm_mask(int(c), s, p) for c, s, p in zip(contexts, steps, pseudo)], contexts.tolist()
        )
        width = max((len(s) for s in steps), default=0)
        step = torch.zeros(bsz, width, dtype=torch.long)
        is_pseudo = torch.zeros(bsz, width, dtype=torch.bool)
        for i, (s, p) in enumerate(zip(steps, pseudo)):
            step[i, : len(s)], is_pseudo[i, : len(p)] = s, p
            step[i, len(s) :] = 7  # padding columns hold anything
            is_pseudo[i, len(s) :] = bool(trial % 2)
        lengths = torch.tensor([len(s) for s in steps])
        actual = masks.pmlm_batch_mask(torch.from_numpy(contexts), lengths, step, is_pseudo)
        assert actual.dtype == torch.bool and torch.equal(actual, expected), trial


def test_batch_mask_rejects_mismatched_shapes():
    two = torch.tensor([1, 1])
    with pytest.raises(ValueError, match="one shape"):
        masks.pmlm_batch_mask(
            two, two, torch.ones(2, 3, dtype=torch.long), torch.ones(2, 2, dtype=torch.bool)
        )
    with pytest.raises(ValueError, match="must be"):
        masks.pmlm_batch_mask(
            two[:1], two, torch.ones(2, 3, dtype=torch.long), torch.ones(2, 3, dtype=torch.bool)
        )
    with pytest.raises(ValueError, match="longer"):
        masks.pmlm_batch_mask(
            two, two * 4, torch.ones(2, 3, dtype=torch.long), torch.ones(2, 3, dtype=torch.bool)
        )
