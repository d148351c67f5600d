"""PALM pre-training pairs (80/20 windows, stride one sentence) and their MLM masking, without a model."""

import numpy as np
import pytest
import torch

from unilm_fairseq.data.pretraining import PALMPretrainDataset, corpus_fragments, document_fragments
from unilm_fairseq.data.pretraining.palm_fragments import Fragment, boundaries_near_cut, context_length
from unilm_fairseq.data.pretraining.palm_pretrain_dataset import bert_mask_positions

from ..helpers.models import make_dictionary

DICT = make_dictionary()
PAD, EOS, MASK = DICT.pad(), DICT.eos(), DICT.index("<mask>")
WORDS = np.array([DICT.index(f"w{i}") for i in range(40)])


# ---------------------------------------------------------------- pair construction (pure functions)


def test_hand_checked_document():
    """Sentences of 5, 7, 4, 6, 3 tokens, windows of at most 30 tokens, 80% context, 10% tolerance.

    window 0: 25 tokens, ideal cut 20; boundaries 5 12 16 22 -> 22 (2 <= 2.5 away)
    window 1: 20 tokens, ideal 16; boundaries 7 11 17 -> 17
    window 2: 13 tokens, ideal 10.4; boundaries 4 10 -> 10
    window 3: 9 tokens, ideal 7.2; boundary 6 is 1.2 > 0.9 away -> mid-sentence at 7
    window 4: 3 tokens, no boundary -> round(2.4) = 2
    """
    fragments, stats = document_fragments([5, 7, 4, 6, 3], max_tokens=30)
    assert fragments == [
        Fragment(0, 5, 25, 22),
        Fragment(1, 4, 20, 17),
        Fragment(2, 3, 13, 10),
        Fragment(3, 2, 9, 7),
        Fragment(4, 1, 3, 2),
    ]
    assert (stats.pairs, stats.split_at_boundary, stats.split_mid_sentence, stats.truncated) == (5, 3, 2, 0)


def test_windows_hold_whole_sentences_up_to_the_limit():
    # at most 15 tokens: [5 7] (adding 4 makes 16), [7 4], [4 6 3], [6 3], [3]
    fragments, _ = document_fragments([5, 7, 4, 6, 3], max_tokens=15)
    assert [(f.first_line, f.num_lines, f.length) for f in fragments] == [
        (0, 2, 12),
        (1, 2, 11),
        (2, 3, 13),
        (3, 2, 9),
        (4, 1, 3),
    ]
    # window 0: ideal cut 9.6, boundary 5 is 4.6 > 1.2 away -> exactly 80%, rounded: 10
    assert fragments[0].context == 10


@pytest.mark.parametrize(
    "sentences, length, expected",
    [
        ([10], 10, 8),  # one sentence: no boundary at all
        ([1, 9], 10, 8),  # the only boundary is far from 80%
        ([8, 2], 10, 8),  # a boundary exactly at 80%
        ([7, 3], 10, 7),  # 1 token away, within 10% of 10
        ([2], 2, 1),  # the smallest pair: one token each side
        ([3], 3, 2),  # round(2.4)
        ([4], 4, 3),  # round(3.2); never all four
    ],
)
def test_context_length_boundary_or_exact_fallback(sentences, length, expected):
    assert context_length(sentences, length, 0.8, 0.1) == expected


def test_tie_between_two_boundaries_takes_the_later_one():
    # 20 tokens, ideal cut 16: boundaries 15 and 17 are both 1 away
    assert context_length([15, 2, 3], 20, 0.8, 0.1) == 17


def test_context_ratio_and_tolerance_are_honoured():
    assert context_length([10], 10, 0.5, 0.1) == 5
    assert context_length([6, 4], 10, 0.8, 0.0) == 8  # no tolerance: only an exact boundary counts
    assert context_length([6, 4], 10, 0.8, 0.25) == 6


def test_over_long_sentence_is_cut_and_counted():
    fragments, stats = document_fragments([12, 3], max_tokens=10)
    assert fragments[0] == Fragment(0, 1, 10, 8)
    assert fragments[1] == Fragment(1, 1, 3, 2)
    assert stats.truncated == 1


@pytest.mark.parametrize("seed", range(5))
def test_random_documents_respect_stride_limit_and_ratio(seed):
    rng = np.random.default_rng(seed)
    sentences = rng.integers(1, 40, size=60)
    max_tokens = 100
    fragments, stats = document_fragments(sentences, max_tokens, first_line=7)
    assert [f.first_line for f in fragments] == [7 + k for k in range(60) if sentences[k] >= 2 or k < 59]
    ends = np.concatenate([[0], np.cumsum(sentences)])
    for f in fragments:
        k, n = f.first_line - 7, f.num_lines
        whole = ends[k + n] - ends[k]
        assert f.length == min(whole, max_tokens) <= max_tokens
        if whole <= max_tokens and k + n < len(sentences):
            assert whole + sentences[k + n] > max_tokens  # the next sentence would not fit
        assert 1 <= f.context < f.length
        assert abs(f.context - 0.8 * f.length) <= max(0.1 * f.length, 0.5) or f.length == 2
    assert stats.pairs == len(fragments) and stats.windows == 60


@pytest.mark.parametrize(
    "sentences, first_context, second_context",
    [
        # the boundary at 450 is 50 tokens from the ideal 400, within 10% of 500: not taken, 450 > 400
        ([450, 50], 400, 40),
        # the boundary at 350 is 50 tokens away too: not taken, it would leave 150 > 100 to the decoder
        ([350, 150], 400, 120),
    ],
)
def test_paper_limits_400_100_on_the_issue_documents(sentences, first_context, second_context):
    """PALM §2.2/§3.1: at most 400 context and 100 continuation tokens, whatever the sentence boundaries."""
    fragments, stats = document_fragments(sentences, max_tokens=500)
    assert fragments == [
        Fragment(0, 2, 500, first_context),
        Fragment(1, 1, sentences[1], second_context),
    ]
    for f in fragments:
        assert f.context <= 400 and f.length - f.context <= 100
    assert (stats.split_at_boundary, stats.split_mid_sentence, stats.boundary_over_limit) == (0, 2, 1)
    # without the limits the tolerance rule takes the boundary: the 450/50 and 350/150 splits
    lifted, lifted_stats = document_fragments(sentences, 500, max_context=499, max_continuation=499)
    assert lifted[0] == Fragment(0, 2, 500, sentences[0]) and lifted_stats.boundary_over_limit == 0


@pytest.mark.parametrize(
    "sentences, context",
    [
        ([400, 100], 400),  # a boundary exactly at both limits
        ([395, 90], 395),  # 485 tokens, ideal 388: the boundary 7 tokens away fits both limits
        ([100, 300, 60, 40], 400),  # of 400 and 460 (both near 400), only 400 fits the context limit
    ],
)
def test_sentence_boundaries_are_kept_where_they_fit(sentences, context):
    fragments, stats = document_fragments(sentences, max_tokens=500)
    assert fragments[0].context == context and stats.boundary_over_limit == 0


def test_scaled_down_limits():
    # a 128-token demo window: 102 + 26; the boundary at 110 (8 from the ideal 102.4) exceeds 102
    fragments, stats = document_fragments([110, 18], max_tokens=128, max_context=102, max_continuation=26)
    assert fragments[0] == Fragment(0, 2, 128, 102) and stats.boundary_over_limit == 1
    # the rounded ideal cut is moved into the limits when the ratio disagrees with them
    assert context_length([10], 10, 0.5, 0.1, max_context=400, max_continuation=2) == 8
    assert context_length([10], 10, 0.9, 0.1, max_context=6, max_continuation=100) == 6


@pytest.mark.parametrize("seed", range(40))
def test_no_pair_ever_exceeds_the_limits(seed):
    """Random documents (some sentences longer than a window) and random settings: every pair keeps both
    limits; a boundary near the ideal cut that fits them is used; otherwise the cut is the rounded ideal
    moved into the limits."""
    rng = np.random.default_rng(seed)
    max_context = int(rng.integers(1, 450))
    max_continuation = int(rng.integers(1, 150))
    max_tokens = int(rng.integers(2, max_context + max_continuation + 1))
    ratio, tolerance = float(rng.uniform(0.05, 0.95)), float(rng.uniform(0.0, 0.5))
    sentences = rng.integers(1, 2 * max_tokens, size=int(rng.integers(1, 40)))
    fragments, stats = document_fragments(
        sentences, max_tokens, ratio, tolerance, max_context=max_context, max_continuation=max_continuation
    )
    ends = np.concatenate([[0], np.cumsum(sentences)])
    over_limit = 0
    for f in fragments:
        assert 2 <= f.length <= max_tokens
        assert 1 <= f.context <= max_context and 1 <= f.length - f.context <= max_continuation
        window = sentences[f.first_line : f.first_line + f.num_lines]
        near = boundaries_near_cut(window, f.length, ratio, tolerance)
        fits = near[(near <= max_context) & (f.length - near <= max_continuation)]
        if len(fits):
            assert f.context in fits.tolist()
        else:
            low, high = max(1, f.length - max_continuation), min(max_context, f.length - 1)
            assert f.context == min(max(int(np.floor(ratio * f.length + 0.5)), low), high)
            inner = ends[f.first_line + 1 : f.first_line + f.num_lines] - ends[f.first_line]
            over_limit += bool(len(near)) and f.context not in inner.tolist()
    assert stats.pairs == len(fragments) and stats.boundary_over_limit == over_limit


def test_inconsistent_limits_are_clear_errors():
    with pytest.raises(ValueError, match="--max-fragment-tokens 600 is more than --max-context-tokens 400"):
        document_fragments([5], 600)
    with pytest.raises(ValueError, match="at least 1"):
        corpus_fragments([5], 10, max_context=0)


def test_pairs_never_cross_a_document_boundary():
    # three documents; the second sentence lengths would fit into one window if documents were ignored
    lines = [4, 5, 0, 3, 0, 6, 2, 2]
    fragments, stats = corpus_fragments(lines, max_tokens=50)
    documents = [range(0, 2), range(3, 4), range(5, 8)]
    for f in fragments:
        span = range(f.first_line, f.first_line + f.num_lines)
        assert any(span.start in d and span[-1] in d for d in documents)
        assert all(lines[i] > 0 for i in span)
    assert [f.first_line for f in fragments] == [0, 1, 3, 5, 6, 7]
    assert (stats.documents, stats.empty_lines, stats.pairs) == (3, 2, 6)


def test_short_and_empty_documents_are_skipped_and_counted():
    # leading, repeated and trailing empty lines; a one-token document; a document whose last
    # sentence is a single token (that window alone is skipped)
    lines = [0, 0, 1, 0, 0, 0, 3, 1, 0, 1, 1, 0]
    fragments, stats = corpus_fragments(lines, max_tokens=10)
    assert [f.first_line for f in fragments] == [6, 9]  # [3 1] and [1 1]; windows [1], [1], [1] skipped
    assert stats.documents == 3
    assert stats.documents_without_pair == 1
    assert stats.windows == 5 and stats.windows_too_short == 3
    assert stats.empty_lines == 7 and stats.lines == 12


def test_nothing_but_empty_lines():
    fragments, stats = corpus_fragments([0, 0, 0], max_tokens=10)
    assert fragments == [] and stats.documents == 0 and stats.empty_lines == 3


def test_bad_settings_are_clear_errors():
    with pytest.raises(ValueError, match="context-ratio"):
        document_fragments([5], 10, context_ratio=1.0)
    with pytest.raises(ValueError, match="max-fragment-tokens"):
        document_fragments([5], 1)


# ---------------------------------------------------------------- dataset: items, masking, batches


class FakeLines:
    """What ``load_indexed_dataset`` gives: one LongTensor per line, ``</s>`` closing each."""

    def __init__(self, lengths, seed=0):
        rng = np.random.default_rng(seed)
        self.lines = [torch.tensor([*rng.choice(WORDS, size=n), EOS]) for n in lengths]
        self.sizes = np.array([len(t) for t in self.lines])

    def __getitem__(self, i):
        return self.lines[i]

    def __len__(self):
        return len(self.lines)


def make_dataset(lengths, max_tokens=30, seed=1, **kwargs):
    lines = FakeLines(lengths)
    fragments, _ = corpus_fragments(lines.sizes - 1, max_tokens)
    return lines, PALMPretrainDataset(lines, fragments, DICT, seed=seed, **kwargs)


def test_item_is_context_eos_and_continuation_eos():
    lines, data = make_dataset([5, 7, 4, 6, 3, 0, 4], mask_prob=0.0)
    text = torch.cat([lines[i][:-1] for i in range(5)])  # first document, no inner </s>
    item = data[0]  # Fragment(0, 5, 25, 22)
    assert item["source"].tolist() == [*text[:22].tolist(), EOS]
    assert item["target"].tolist() == [*text[22:25].tolist(), EOS]
    assert (item["mlm_target"] == PAD).all()
    assert data.size(0) == (23, 4)
    last = data[len(data) - 1]  # the 4-token second document: 3 + 1
    assert last["source"].tolist() == [*lines[6][:3].tolist(), EOS]
    assert last["target"].tolist() == [lines[6][3].item(), EOS]


def test_masking_statistics_15_percent_80_10_10():
    lines, data = make_dataset([20] * 300, max_tokens=40)
    masked = kept = as_mask = maskable = 0
    for i in range(len(data)):
        item, original = data[i], torch.cat([data.text(i)[: data.size(i)[0] - 1], torch.tensor([EOS])])
        where = item["mlm_target"].ne(PAD)
        assert item["source"][-1] == EOS and not where[-1]  # </s> is never masked
        assert torch.equal(item["mlm_target"][where], original[where])
        assert torch.equal(item["source"][~where], original[~where])
        masked += int(where.sum())
        maskable += len(original) - 1
        as_mask += int((item["source"][where] == MASK).sum())
        kept += int((item["source"][where] == original[where]).sum())
    assert masked / maskable == pytest.approx(0.15, abs=0.01)
    assert as_mask / masked == pytest.approx(0.8, abs=0.03)
    assert kept / masked == pytest.approx(0.1 + 0.1 / len(WORDS), abs=0.03)  # random may redraw the original
    assert (masked - as_mask - kept) / masked == pytest.approx(0.1, abs=0.03)


def test_bert_mask_positions_masks_at_least_one_and_only_maskable():
    rng = np.random.default_rng(0)
    maskable = np.array([False, True, True, False])
    for _ in range(20):
        chosen = bert_mask_positions(maskable, rng, 0.15)
        assert len(chosen) == 1 and maskable[chosen].all()
    assert len(bert_mask_positions(np.zeros(3, dtype=bool), rng, 0.15)) == 0


def test_masks_are_seeded_by_seed_epoch_and_index():
    _, a = make_dataset([20] * 10, seed=3)
    _, b = make_dataset([20] * 10, seed=3)
    _, other_seed = make_dataset([20] * 10, seed=4)
    batch = lambda d: d.collater([d[i] for i in range(len(d))])  # noqa: E731
    first, again = batch(a), batch(b)
    for key in ("src_tokens", "src_masked_tokens"):
        assert torch.equal(first["net_input"][key], again["net_input"][key])
    assert not torch.equal(first["net_input"]["src_tokens"], batch(other_seed)["net_input"]["src_tokens"])
    b.set_epoch(2)
    assert not torch.equal(first["net_input"]["src_tokens"], batch(b)["net_input"]["src_tokens"])


@pytest.mark.parametrize("left_pad_source", [False, True])
def test_batch_layout(left_pad_source):
    lines, data = make_dataset([5, 7, 4, 6, 3, 0, 2, 9], left_pad_source=left_pad_source)
    samples = [data[i] for i in range(len(data))]
    batch = data.collater(samples)
    net = batch["net_input"]
    by_id = {s["id"]: s for s in samples}
    assert net["src_lengths"].tolist() == sorted(net["src_lengths"].tolist(), reverse=True)
    for row, index in enumerate(batch["id"].tolist()):
        sample, n = by_id[index], len(by_id[index]["source"])
        src = net["src_tokens"][row]
        src = src[-n:] if left_pad_source else src[:n]
        assert torch.equal(src, sample["source"])
        target = sample["target"]
        assert torch.equal(batch["target"][row, : len(target)], target)
        # teacher forcing: </s> first, then the target without its final </s>
        assert net["prev_output_tokens"][row, : len(target)].tolist() == [EOS, *target[:-1].tolist()]
        masked_row = net["src_masked_tokens"][row]
        mlm_row = batch["mlm_target"][row]
        assert torch.equal(masked_row, mlm_row.ne(PAD))
        assert masked_row.any()  # at least one masked token per context
        original = torch.cat([data.text(index)[: n - 1], torch.tensor([EOS])])
        got = mlm_row[-n:] if left_pad_source else mlm_row[:n]
        assert torch.equal(got[got.ne(PAD)], original[got.ne(PAD)])
    # the criterion reads MLM targets row-major over src_masked_tokens
    assert batch["mlm_target"][net["src_masked_tokens"]].numel() == batch["num_masked"]
    assert batch["ntokens"] == sum(len(s["target"]) for s in samples)


def test_ordered_indices_are_seeded_and_sorted_by_source_length():
    _, data = make_dataset([3, 9, 4, 12, 5, 0, 7, 2, 6], seed=5)
    order = data.ordered_indices()
    assert sorted(order.tolist()) == list(range(len(data)))
    assert (np.diff(data.src_sizes[order]) >= 0).all()
    assert np.array_equal(order, make_dataset([3, 9, 4, 12, 5, 0, 7, 2, 6], seed=5)[1].ordered_indices())
