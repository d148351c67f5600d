"""UniLM v1 examples: hand-checked layouts, objective and NSP sampling, cloze statistics, seeding.

Tolerances are about 4 standard deviations of the sampled proportion at the stated sample size.
"""

import numpy as np
import pytest
import torch

from unilm_fairseq.data.pretraining.cloze_masking import cloze_budget, cloze_mask_picks
from unilm_fairseq.data.pretraining.segment_pairs import trim_pair
from unilm_fairseq.data.pretraining.unilm_cloze_dataset import UniLMClozeDataset
from unilm_fairseq.data.pretraining.unilm_objectives import (
    BIDIRECTIONAL,
    IS_NEXT,
    LEFT_TO_RIGHT,
    NO_NSP,
    NOT_NEXT,
    RIGHT_TO_LEFT,
    SEQ2SEQ,
    block_document_ranges,
    other_document_block,
)

from ..helpers.models import make_dictionary
from ..helpers.unilm_v1 import ONLY, PAPER_WEIGHTS, objective_dataset, synthetic_corpus


def hand_blocks(d):
    """Block 0: "w1 w2 ." "w3 ." (document 0); block 1: "w4 w5 w6 ." (document 1)."""
    w, eos = d.index, d.eos()
    return [[w("w1"), w("w2"), eos, w("w3"), eos], [w("w4"), w("w5"), w("w6"), eos]]


def rows(mask):
    return mask.int().tolist()


@pytest.mark.parametrize(
    "objective, segments, visible",
    [
        # "[SOS] w1 w2 [EOS] | w3 [EOS]": A/B are segments 0/1; everyone sees everyone
        (BIDIRECTIONAL, [0, 0, 0, 0, 1, 1], [[1] * 6] * 6),
        # same packing, source "[SOS] w1 w2 [EOS]" = segment 4, target "w3 [EOS]" = segment 5;
        # the source sees the source only, target j sees the source and targets <= j
        (
            SEQ2SEQ,
            [4, 4, 4, 4, 5, 5],
            [[1, 1, 1, 1, 0, 0]] * 4 + [[1, 1, 1, 1, 1, 0], [1, 1, 1, 1, 1, 1]],
        ),
    ],
)
def test_pair_layouts_by_hand(objective, segments, visible):
    d = make_dictionary()
    data = objective_dataset(hand_blocks(d), [0, 1], d, ONLY[objective], nsp_random_prob=0.0)
    item = data[0]
    assert item["objective"] == objective
    assert item["tokens"].tolist() == [d.bos(), d.index("w1"), d.index("w2"), d.eos(), d.index("w3"), d.eos()]
    assert item["segments"].tolist() == segments
    assert item["nsp_label"] == (IS_NEXT if objective == BIDIRECTIONAL else NO_NSP)
    cloze = UniLMClozeDataset(data, d, d.index("<mask>"), seed=1)
    assert rows(cloze.collater([cloze[0]])["net_input"]["attn_mask"][0]) == visible


@pytest.mark.parametrize(
    "objective, segment, visible",
    [
        # "[SOS] w1 w2 w3 [EOS]" as one text; query q sees keys k <= q
        (
            LEFT_TO_RIGHT,
            2,
            [[1, 0, 0, 0, 0], [1, 1, 0, 0, 0], [1, 1, 1, 0, 0], [1, 1, 1, 1, 0], [1, 1, 1, 1, 1]],
        ),
        # keys k >= q
        (
            RIGHT_TO_LEFT,
            3,
            [[1, 1, 1, 1, 1], [0, 1, 1, 1, 1], [0, 0, 1, 1, 1], [0, 0, 0, 1, 1], [0, 0, 0, 0, 1]],
        ),
    ],
)
def test_single_text_layouts_by_hand(objective, segment, visible):
    d = make_dictionary()
    data = objective_dataset(hand_blocks(d), [0, 1], d, ONLY[objective])
    item = data[0]
    assert item["tokens"].tolist() == [d.bos(), d.index("w1"), d.index("w2"), d.index("w3"), d.eos()]
    assert item["segments"].tolist() == [segment] * 5
    assert item["nsp_label"] == NO_NSP
    cloze = UniLMClozeDataset(data, d, d.index("<mask>"), seed=1)
    assert rows(cloze.collater([cloze[0]])["net_input"]["attn_mask"][0]) == visible


def test_batch_of_mixed_objectives_is_padded_per_example():
    d = make_dictionary()
    blocks = hand_blocks(d)
    pair = UniLMClozeDataset(objective_dataset(blocks, [0, 1], d, ONLY[SEQ2SEQ]), d, d.index("<mask>"), 1)
    single = UniLMClozeDataset(
        objective_dataset(blocks, [0, 1], d, ONLY[LEFT_TO_RIGHT]), d, d.index("<mask>"), 1
    )
    batch = pair.collater([pair[0], single[0]])
    visible = batch["net_input"]["attn_mask"]
    assert visible.shape == (2, 6, 6)
    assert rows(visible[1, :5, :5]) == rows(torch.ones(5, 5).tril())
    assert visible[1, :, 5].tolist() == [False] * 5 + [True]  # padding: seen by no real token
    assert batch["objective"].tolist() == [SEQ2SEQ, LEFT_TO_RIGHT]
    assert batch["net_input"]["segments"].tolist() == [[4, 4, 4, 4, 5, 5], [2, 2, 2, 2, 2, 0]]
    assert batch["net_input"]["positions"].tolist() == [list(range(6))] * 2


def test_document_ranges_and_other_document_block():
    # lines: doc 0 = lines 0-1, empty line 2, doc 1 = line 3, empty 4, doc 2 = lines 5-6
    sizes = np.array([4, 3, 1, 5, 1, 2, 6])
    block_lines = np.array([[0, 1], [3, 3], [5, 5], [6, 6]])
    first, last = block_document_ranges(sizes, block_lines)
    assert first.tolist() == [0, 1, 2, 2] and last.tolist() == [0, 1, 2, 2]
    rng = np.random.default_rng(0)
    drawn = {other_document_block(rng, 2, first, last) for _ in range(200)}
    assert drawn == {0, 1}  # never block 2 itself nor block 3 of the same document
    one_doc = np.zeros(3, dtype=np.int64)
    assert other_document_block(rng, 1, one_doc, one_doc) is None
    # a block spanning documents 0-1 (--sample-break-mode none) may only borrow from document 2
    assert {other_document_block(rng, 0, np.array([0, 1, 2]), np.array([1, 1, 2])) for _ in range(50)} == {2}


def test_trim_pair_cuts_the_longer_segment_first():
    assert trim_pair(3, 4, 10) == (3, 4)
    assert trim_pair(20, 3, 10) == (7, 3)
    assert trim_pair(3, 20, 10) == (3, 7)
    assert trim_pair(20, 30, 10) == (5, 5)
    assert trim_pair(20, 30, 11) == (6, 5)  # both over half the budget: A keeps the larger half


def test_objective_ratios_and_nsp_balance_and_source_of_random_segments():
    d = make_dictionary(num_words=40)
    blocks, docs = synthetic_corpus(d, n_docs=6, blocks_per_doc=500)  # 3000 blocks
    data = objective_dataset(blocks, docs, d, PAPER_WEIGHTS, seed=7)
    labels, objectives = [], []
    for epoch in (1, 2):
        data.set_epoch(epoch)
        for i in range(len(data)):
            item = data[i]
            objectives.append(item["objective"])
            if item["objective"] != BIDIRECTIONAL:
                continue
            labels.append(item["nsp_label"])
            tokens = item["tokens"].numpy()
            b_part = tokens[item["segments"].numpy() == 1]
            b_words = b_part[b_part != d.eos()] - d.index("w0")
            own = docs[i]
            if item["nsp_label"] == NOT_NEXT:
                assert (b_words // 6 != own).all(), "a random second segment came from its own document"
                assert len(set((b_words // 6).tolist())) == 1  # one other document
            else:
                assert (b_words // 6 == own).all()
                a_and_b = tokens[1:][tokens[1:] != d.eos()]
                assert a_and_b.tolist() == [t for t in blocks[i] if t != d.eos()]  # the true continuation
    n = len(objectives)  # 6000
    share = np.bincount(objectives, minlength=4) / n
    assert share == pytest.approx([1 / 3, 1 / 3, 1 / 6, 1 / 6], abs=0.025)
    labels = np.array(labels)
    assert (labels != NO_NSP).all()  # every block has >= 2 sentences and other documents exist
    assert (labels == NOT_NEXT).mean() == pytest.approx(0.5, abs=0.045)  # ~2000 pairs


def test_same_seed_same_batches_different_seed_different():
    d = make_dictionary(num_words=40)
    blocks, docs = synthetic_corpus(d, n_docs=3, blocks_per_doc=20)

    def batches(seed, epoch):
        cloze = UniLMClozeDataset(
            objective_dataset(blocks, docs, d, PAPER_WEIGHTS, seed=seed), d, d.index("<mask>"), seed
        )
        cloze.set_epoch(epoch)
        order = cloze.ordered_indices()
        return [cloze.collater([cloze[int(i)] for i in order[k : k + 8]]) for k in range(0, len(order), 8)]

    def same(a, b):
        keys = ("target", "objective", "nsp_target")
        net = ("tokens", "segments", "attn_mask", "masked_tokens")
        return all(
            all(torch.equal(x[k], y[k]) for k in keys)
            and all(torch.equal(x["net_input"][k], y["net_input"][k]) for k in net)
            for x, y in zip(a, b)
        )

    first = batches(3, 1)
    assert same(first, batches(3, 1))
    assert not same(first, batches(4, 1))
    assert not same(first, batches(3, 2))  # a new epoch draws new objectives and masks


def test_cloze_picks_are_80_percent_tokens_20_percent_bigrams_or_trigrams():
    rng = np.random.default_rng(0)
    lengths = []
    for _ in range(200):
        maskable = np.ones(2000, dtype=bool)
        maskable[rng.choice(2000, 100, replace=False)] = False  # scattered special tokens
        picks = cloze_mask_picks(maskable, rng)
        masked = np.concatenate(picks)
        assert len(masked) == len(set(masked.tolist())) == cloze_budget(1900, 0.15) == 285
        assert maskable[masked].all()
        assert all((np.diff(p) == 1).all() for p in picks)  # n-grams are consecutive tokens
        lengths += [len(p) for p in picks]
    lengths = np.array(lengths)  # ~48000 picks
    assert set(lengths.tolist()) == {1, 2, 3}
    assert (lengths >= 2).mean() == pytest.approx(0.2, abs=0.008)
    assert (lengths == 2).sum() / (lengths >= 2).sum() == pytest.approx(0.5, abs=0.03)


def test_cloze_budget_rounds_and_caps():
    assert cloze_budget(20, 0.15) == 3
    assert cloze_budget(10, 0.15) == 2  # 1.5 rounds up
    assert cloze_budget(90, 0.35) == 32  # 31.5, though 0.35 * 90 is 31.499999999999996
    assert cloze_budget(3, 0.15) == 1  # at least one
    assert cloze_budget(0, 0.15) == 0
    assert cloze_budget(1000, 0.15, max_predictions=20) == 20


def test_cloze_dataset_statistics():
    d = make_dictionary(num_words=2000)  # a random replacement rarely equals the original
    rng = np.random.default_rng(1)
    words = np.arange(d.nspecial, d.index("<mask>"))
    blocks = [
        rng.choice(words, 39).tolist() + [d.eos()] + rng.choice(words, 39).tolist() + [d.eos()]
        for _ in range(600)
    ]
    data = UniLMClozeDataset(
        objective_dataset(blocks, np.arange(600), d, PAPER_WEIGHTS, max_length=128),
        d,
        d.index("<mask>"),
        seed=2,
    )
    sources, targets, picks = [], [], []
    for i in range(len(data)):
        item = data[i]
        tokens = item["tokens"]
        maskable = int((tokens != d.bos()).logical_and(tokens != d.eos()).sum())  # 78 words
        masked = item["target"] != d.pad()
        assert int(masked.sum()) == cloze_budget(maskable, 0.15) == 12  # 15% of 78, rounded
        assert torch.equal(item["target"][masked], tokens[masked])
        assert not masked[(tokens == d.bos()) | (tokens == d.eos())].any()  # specials never masked
        sources.append(item["source"][masked])
        targets.append(tokens[masked])
        picks += item["pick_lengths"]
    source, target = torch.cat(sources), torch.cat(targets)  # 7200 masked tokens
    is_mask = (source == d.index("<mask>")).float().mean()
    unchanged = (source == target).float().mean()
    assert is_mask == pytest.approx(0.8, abs=0.02)
    assert unchanged == pytest.approx(0.1, abs=0.015)
    assert 1 - is_mask - unchanged == pytest.approx(0.1, abs=0.015)
    # ~5700 picks. Each pick is an n-gram with probability 0.2 (tested above with large budgets), but with
    # a budget of 12 tokens the pooled share is lower (~0.18): the last pick is cut to the budget, and a
    # budget runs out after fewer picks when they are n-grams. The dataset must match the masking
    # function's share at this budget, simulated on independent draws.
    rng = np.random.default_rng(123)
    simulated = [len(p) for _ in range(4000) for p in cloze_mask_picks(np.ones(78, dtype=bool), rng)]
    expected = (np.array(simulated) >= 2).mean()
    assert 0.17 < expected < 0.2
    picks = np.array(picks)
    assert (picks >= 2).mean() == pytest.approx(expected, abs=0.021)  # 4 sd of the dataset's share


def test_seq2seq_masks_source_and_target_tokens():
    """Pre-training masks both segments of a seq2seq pair (paper section 2.1)."""
    d = make_dictionary(num_words=40)
    blocks, docs = synthetic_corpus(d, n_docs=2, blocks_per_doc=50)
    data = UniLMClozeDataset(objective_dataset(blocks, docs, d, ONLY[SEQ2SEQ]), d, d.index("<mask>"), seed=5)
    in_source = in_target = 0
    for i in range(len(data)):
        item = data[i]
        masked = (item["target"] != d.pad()).nonzero().view(-1)
        in_source += int((masked < item["source_len"]).sum())
        in_target += int((masked >= item["source_len"]).sum())
    assert in_source > 0 and in_target > 0
