"""Segment pairs and the PMLM example layout (docs/pretraining.md; docs/masks.md section 5) on tiny
fake token blocks.
"""

import numpy as np
import pytest
import torch

from unilm_fairseq.data.pretraining import PMLMDataset, SegmentPairDataset
from unilm_fairseq.data.pretraining.pmlm_dataset import CONTEXT, ORIGINAL, PSEUDO

from ..helpers.models import make_dictionary

DICT = make_dictionary()
BOS, PAD, EOS = DICT.bos(), DICT.pad(), DICT.eos()
MASK = DICT.index("<mask>")
W = [DICT.index(f"w{i}") for i in range(40)]  # ordinary word ids


class FakeBlocks:
    """What ``TokenBlockDataset`` gives: 1-D LongTensor blocks, ``eos`` closing each sentence."""

    def __init__(self, blocks):
        self.blocks = [torch.tensor(b, dtype=torch.long) for b in blocks]
        self.sizes = np.array([len(b) for b in blocks])

    def __getitem__(self, index):
        return self.blocks[index]

    def __len__(self):
        return len(self.blocks)


def pair_item(block, max_length=64, seed=1, index=0):
    blocks = [block] * (index + 1)
    item = SegmentPairDataset(FakeBlocks(blocks), DICT, max_length=max_length, seed=seed)[index]
    return item["tokens"].tolist(), item["segments"].tolist()


# ---------------------------------------------------------------- SegmentPairDataset


def test_two_sentences_become_sos_s1_eos_s2_eos():
    tokens, segments = pair_item([W[0], W[1], EOS, W[2], EOS])
    assert tokens == [BOS, W[0], W[1], EOS, W[2], EOS]
    assert segments == [0, 0, 0, 0, 1, 1]


def test_interior_eos_dropped_whichever_split_is_drawn():
    block = [W[0], W[1], EOS, W[2], W[3], W[4], EOS, W[5], EOS]
    split_after_first = (
        [BOS, W[0], W[1], EOS, W[2], W[3], W[4], W[5], EOS],
        [0, 0, 0, 0, 1, 1, 1, 1, 1],
    )
    split_after_second = (
        [BOS, W[0], W[1], W[2], W[3], W[4], EOS, W[5], EOS],
        [0, 0, 0, 0, 0, 0, 0, 1, 1],
    )
    seen = set()
    for seed in range(30):
        got = pair_item(block, seed=seed)
        assert got in (split_after_first, split_after_second)
        seen.add(got == split_after_first)
    assert seen == {True, False}  # the split point is drawn, not fixed


def test_single_sentence_block_is_sos_s1_eos():
    assert pair_item([W[0], W[1], W[2], EOS]) == ([BOS, W[0], W[1], W[2], EOS], [0, 0, 0, 0, 0])
    # a block cut mid-sentence has no closing eos of its own
    assert pair_item([W[0], W[1]]) == ([BOS, W[0], W[1], EOS], [0, 0, 0, 0])


def test_block_ending_mid_sentence_and_empty_sentences():
    # TokenBlockDataset may cut a block inside a sentence and may hold empty lines (a lone eos)
    assert pair_item([W[0], EOS, EOS, W[1], W[2]]) == ([BOS, W[0], EOS, W[1], W[2], EOS], [0, 0, 0, 1, 1, 1])


def test_over_long_pair_is_truncated_from_its_longer_segment():
    block = [W[0], W[1], W[2], W[3], W[4], W[5], EOS, W[6], W[7], EOS]  # S1 has 6 tokens, S2 has 2
    tokens, segments = pair_item(block, max_length=8)
    assert tokens == [BOS, W[0], W[1], W[2], EOS, W[6], W[7], EOS]
    assert segments == [0, 0, 0, 0, 0, 1, 1, 1]


def test_over_long_single_sentence_is_truncated():
    tokens, segments = pair_item([*W[:10], EOS], max_length=8)
    assert tokens == [BOS, *W[:6], EOS]
    assert segments == [0] * 8


@pytest.mark.parametrize("second_len", [10, 7])
def test_two_over_long_sentences_keep_both_segments(second_len):
    # both sentences exceed the budget: trimming must keep both segments, not drop S2
    first, second = W[:10], W[10 : 10 + second_len]
    tokens, segments = pair_item([*first, EOS, *second, EOS], max_length=8)
    assert len(tokens) == 8
    assert segments.count(1) >= 2  # S2 keeps at least one token besides its [EOS]
    n1 = segments.count(0) - 2
    assert tokens[1 : 1 + n1] == first[:n1] and tokens[1 + n1] == EOS
    assert tokens[2 + n1 : -1] == second[: 8 - 3 - n1] and tokens[-1] == EOS


def random_blocks(count, seed=0, min_len=20, max_len=120):
    """Blocks of 1-6 sentences of random words, each sentence closed by eos (the last one maybe cut)."""
    rng = np.random.default_rng(seed)
    blocks = []
    for _ in range(count):
        length = int(rng.integers(min_len, max_len + 1))
        block = rng.choice(W, size=length)
        ends = rng.choice(np.arange(2, length), size=int(rng.integers(0, 6)), replace=False)
        block[ends] = EOS
        if rng.random() < 0.5:
            block[-1] = EOS
        blocks.append(block.tolist())
    return blocks


def test_every_pair_fits_max_length_and_sizes_bound_it():
    blocks = FakeBlocks(random_blocks(60))
    pairs = SegmentPairDataset(blocks, DICT, max_length=50, seed=3)
    assert len(pairs) == 60
    for i in range(len(pairs)):
        item = pairs[i]
        tokens, segments = item["tokens"], item["segments"]
        assert len(tokens) == len(segments) <= 50
        assert len(tokens) <= pairs.size(i) == pairs.num_tokens(i)
        assert tokens[0] == BOS and tokens[-1] == EOS
        # one eos closing each segment, none inside
        assert int((tokens == EOS).sum()) == 1 + int(segments.max())
        # segments: zeros then ones, switching right after the first eos
        first_eos = int((tokens == EOS).nonzero()[0])
        assert segments[: first_eos + 1].eq(0).all() and segments[first_eos + 1 :].eq(1).all()


def test_pairs_deterministic_for_same_seed():
    blocks = FakeBlocks(random_blocks(40))
    a = SegmentPairDataset(blocks, DICT, max_length=64, seed=5)
    b = SegmentPairDataset(blocks, DICT, max_length=64, seed=5)
    c = SegmentPairDataset(blocks, DICT, max_length=64, seed=6)
    assert all(torch.equal(a[i]["tokens"], b[i]["tokens"]) for i in range(40))
    assert any(not torch.equal(a[i]["tokens"], c[i]["tokens"]) for i in range(40))


# ---------------------------------------------------------------- PMLMDataset


def make_pmlm(num_items=40, seed=1, **kwargs):
    pairs = SegmentPairDataset(
        FakeBlocks(random_blocks(num_items, min_len=30)), DICT, max_length=128, seed=seed
    )
    return pairs, PMLMDataset(pairs, DICT, MASK, seed=seed, **kwargs)


def split_item(item):
    kind = item["kind"]
    return kind == CONTEXT, kind == PSEUDO, kind == ORIGINAL


def step_blocks(item):
    """Appended tokens grouped by step: {step: (pseudo positions, original positions)}."""
    _, pseudo, original = split_item(item)
    steps = {}
    for i in item["step"][pseudo | original].unique().tolist():
        here = item["step"] == i
        steps[i] = (item["positions"][here & pseudo].tolist(), item["positions"][here & original].tolist())
    return steps


@pytest.fixture(scope="module")
def pmlm():
    return make_pmlm()


def test_context_is_the_pair_with_positions_0_to_n(pmlm):
    pairs, data = pmlm
    for i in range(len(data)):
        pair, item = pairs[i], data[i]
        n = len(pair["tokens"])
        context, _, _ = split_item(item)
        assert context[:n].all() and not context[n:].any()  # context first, then the appended blocks
        assert item["positions"][:n].tolist() == list(range(n))
        assert torch.equal(item["segments"][:n], pair["segments"])
        assert item["step"][:n].eq(0).all()
        unmasked = item["target"][:n] == PAD
        assert torch.equal(item["source"][:n][unmasked], pair["tokens"][unmasked])


def test_appended_tokens_carry_position_and_segment_of_their_masked_token(pmlm):
    pairs, data = pmlm
    for i in range(len(data)):
        tokens, segments = pairs[i]["tokens"], pairs[i]["segments"]
        item = data[i]
        _, pseudo, original = split_item(item)
        positions = item["positions"][pseudo | original]
        assert torch.equal(item["segments"][pseudo | original], segments[positions])
        assert item["source"][pseudo].eq(MASK).all()
        assert torch.equal(item["source"][original], tokens[item["positions"][original]])


def test_step_blocks_are_contiguous_spans_and_last_originals_absent(pmlm):
    _, data = pmlm
    for i in range(len(data)):
        item = data[i]
        steps = step_blocks(item)
        last = max(steps)
        assert sorted(steps) == list(range(1, last + 1))
        for step, (pseudo_positions, original_positions) in steps.items():
            start = pseudo_positions[0]
            assert pseudo_positions == list(range(start, start + len(pseudo_positions)))
            assert original_positions == ([] if step == last else pseudo_positions)
        # layout: [P] of step 1, originals of step 1, [P] of step 2, ... [P] of the last step
        layout = []
        for step, (pseudo_positions, original_positions) in sorted(steps.items()):
            layout += [(step, PSEUDO)] * len(pseudo_positions) + [(step, ORIGINAL)] * len(original_positions)
        n = int((item["kind"] == CONTEXT).sum())
        assert list(zip(item["step"][n:].tolist(), item["kind"][n:].tolist())) == layout


def test_ae_targets_on_masked_context_par_targets_on_pseudo(pmlm):
    pairs, data = pmlm
    for i in range(len(data)):
        tokens = pairs[i]["tokens"]
        item = data[i]
        context, pseudo, original = split_item(item)
        masked = sorted(p for ps, _ in step_blocks(item).values() for p in ps)
        assert len(masked) == len(set(masked)) == item["num_masked"] > 0
        context_target = item["target"][context]
        expected = torch.full_like(tokens, PAD)
        expected[masked] = tokens[masked]
        assert torch.equal(context_target, expected)
        assert torch.equal(item["target"][pseudo], tokens[item["positions"][pseudo]])
        assert item["target"][original].eq(PAD).all()
        # no special token is ever masked
        assert not np.isin(tokens[masked].numpy(), [BOS, EOS, PAD]).any()


def test_ae_corrupts_masked_context_80_10_10():
    pairs, data = make_pmlm(num_items=200)
    sources, originals = [], []
    for i in range(len(data)):
        item = data[i]
        n = len(pairs[i]["tokens"])
        masked = item["target"][:n] != PAD
        sources.append(item["source"][:n][masked])
        originals.append(pairs[i]["tokens"][masked])
    sources, originals = torch.cat(sources), torch.cat(originals)
    assert len(sources) > 2000
    # mostly [M]; some left unchanged, some replaced by a word (standard error ~0.009 at ~2000 tokens)
    assert 0.76 < sources.eq(MASK).float().mean() < 0.84
    assert sources.eq(originals).any() and (sources.ne(MASK) & sources.ne(originals)).any()
    assert not np.isin(sources.numpy(), [BOS, EOS, PAD]).any()


def test_par_only_context_masks_are_all_mask_and_no_ae_targets():
    pairs, data = make_pmlm(num_items=20, ae=False)
    for i in range(len(data)):
        item = data[i]
        n = len(pairs[i]["tokens"])
        context, pseudo, _ = split_item(item)
        assert item["target"][context].eq(PAD).all()
        masked = item["positions"][pseudo]
        assert len(masked) == item["num_masked"] > 0
        assert item["source"][masked].eq(MASK).all()
        unmasked = torch.ones(n, dtype=torch.bool)
        unmasked[masked] = False
        assert torch.equal(item["source"][:n][unmasked], pairs[i]["tokens"][unmasked])


def test_ae_only_has_no_appended_tokens():
    pairs, data = make_pmlm(num_items=20, par=False)
    for i in range(len(data)):
        item = data[i]
        n = len(pairs[i]["tokens"])
        assert len(item["source"]) == n
        assert item["kind"].eq(CONTEXT).all()
        assert int(item["target"].ne(PAD).sum()) == item["num_masked"] > 0


def test_no_objective_is_rejected():
    with pytest.raises(ValueError, match="at least one"):
        make_pmlm(num_items=2, ae=False, par=False)


def test_not_blockwise_every_step_is_one_token():
    _, data = make_pmlm(num_items=20, blockwise=False)
    spans = 0
    for i in range(len(data)):
        steps = step_blocks(data[i])
        assert all(len(pseudo_positions) == 1 for pseudo_positions, _ in steps.values())
        assert len(steps) == data[i]["num_masked"]
    _, blockwise = make_pmlm(num_items=20)
    for i in range(len(blockwise)):
        spans += sum(len(p) > 1 for p, _ in step_blocks(blockwise[i]).values())
    assert spans > 0  # the same data masked blockwise does have spans


def items_equal(a, b):
    return all(torch.equal(a[k], b[k]) for k in ("source", "target", "positions", "segments", "kind", "step"))


def test_same_seed_epoch_index_same_item_and_epoch_changes_masks():
    _, a = make_pmlm(num_items=10)
    _, b = make_pmlm(num_items=10)
    a.set_epoch(1)
    b.set_epoch(1)
    first = [a[i] for i in range(10)]
    assert all(items_equal(first[i], b[i]) for i in range(10))
    a.set_epoch(2)
    second = [a[i] for i in range(10)]
    assert sum(not items_equal(x, y) for x, y in zip(first, second)) >= 8
    a.set_epoch(1)
    assert all(items_equal(first[i], a[i]) for i in range(10))
    # a different seed masks differently too
    _, c = make_pmlm(num_items=10, seed=2)
    c.set_epoch(1)
    assert any(c[i]["num_masked"] and not items_equal(first[i], c[i]) for i in range(10))


def test_fetching_an_item_twice_does_not_change_it(pmlm):
    _, data = pmlm
    first = {k: v.clone() if torch.is_tensor(v) else v for k, v in data[3].items()}
    data.collater([data[3], data[4]])
    assert items_equal(first, data[3])


def test_num_tokens_bounds_item_length(pmlm):
    _, data = pmlm
    for i in range(len(data)):
        assert len(data[i]["source"]) <= data.num_tokens(i)
    assert np.array_equal(
        data.num_tokens_vec(np.arange(len(data))), [data.num_tokens(i) for i in range(len(data))]
    )


def example_columns(sample, width):
    """Batch columns of an example: its context from column 0, its appended part from ``width``."""
    n, c = len(sample["source"]), int((sample["kind"] == 0).sum())
    return torch.cat([torch.arange(c), width + torch.arange(n - c)])


def test_collater_shapes_and_masks(pmlm):
    _, data = pmlm
    samples = [data[i] for i in (0, 5, 9)]
    contexts = [int((s["kind"] == 0).sum()) for s in samples]
    appended = [len(s["source"]) - c for s, c in zip(samples, contexts)]
    batch = data.collater(samples)
    B, L = 3, max(contexts) + max(appended)  # appended parts all start after the longest context
    net = batch["net_input"]
    assert net["context_len"] == max(contexts)
    for key in ("tokens", "segments", "positions"):
        assert net[key].shape == (B, L), key
    assert batch["target"].shape == (B, L)
    assert net["attn_mask"].shape == (B, L, L) and net["attn_mask"].dtype == torch.bool
    assert torch.equal(net["masked_tokens"], batch["ae_mask"] | batch["par_mask"])
    assert not (batch["ae_mask"] & batch["par_mask"]).any()
    assert batch["num_masked"] == sum(s["num_masked"] for s in samples)
    assert int(batch["ae_mask"].sum()) == batch["num_masked"]
    assert int(batch["par_mask"].sum()) == batch["num_masked"]
    assert batch["nsentences"] == 3
    assert batch["id"].tolist() == [0, 5, 9]
    for b, s in enumerate(samples):
        columns = example_columns(s, net["context_len"])
        padding = torch.ones(L, dtype=torch.bool)
        padding[columns] = False
        assert torch.equal(net["tokens"][b, columns], s["source"])
        assert net["tokens"][b, padding].eq(PAD).all()
        assert torch.equal(batch["par_mask"][b, columns], s["kind"] == PSEUDO)


def test_collated_attention_mask_follows_pmlm_rules(pmlm):
    _, data = pmlm
    samples = [data[i] for i in (1, 2)]
    net = data.collater(samples)["net_input"]
    for b, s in enumerate(samples):
        n = len(s["source"])
        columns = example_columns(s, net["context_len"])
        padding = torch.ones(net["tokens"].size(1), dtype=torch.bool)
        padding[columns] = False
        v = net["attn_mask"][b][columns][:, columns]
        context, pseudo, original = split_item(s)
        step = s["step"]
        # context sees only context; padded keys are invisible to real queries
        assert v[context][:, ~context].sum() == 0
        assert net["attn_mask"][b][columns][:, padding].sum() == 0
        for q in range(n):
            if context[q]:
                continue
            keys_original = original & (step <= step[q]) if not pseudo[q] else original & (step < step[q])
            keys_pseudo = pseudo & (step == step[q]) if pseudo[q] else torch.zeros_like(pseudo)
            expected = context | keys_original | keys_pseudo
            assert torch.equal(v[q, :n], expected), q
        # a [P] never sees the original of its own position (no explicit leakage)
        pos = s["positions"]
        for q in pseudo.nonzero().flatten().tolist():
            same_position = original & (pos == pos[q])
            assert not v[q, :n][same_position].any()


# ---------------------------------------------------------------- --par-skip-unchanged


def par_targets(item):
    """Positions of the [P] tokens that carry a PAR target, in layout order."""
    _, pseudo, _ = split_item(item)
    return item["positions"][pseudo & (item["target"] != PAD)].tolist()


def test_par_skip_unchanged_hand_checked_example():
    """One seeded pair, read by hand: the masked positions whose context shows the original lose
    their PAR target, and nothing else changes.

    Pair ``<s> w0 .. w11 </s> w12 .. w23 </s>`` (position p holds w(p-1) in S1, w(p-2) in S2).
    Steps: ``M_1 = {21}``, ``M_2 = {1..6}``, ``M_3 = {9..12}``. Context at the masked positions:
    1, 2, 5, 6, 9, 12 ``[M]``; 3 ``w2`` and 21 ``w19`` (their originals, left unchanged);
    4 ``w26``, 10 ``w2``, 11 ``w38`` (random tokens that are not the originals w3, w9, w10).
    """
    block = [*W[:12], EOS, *W[12:24], EOS]
    pairs = SegmentPairDataset(FakeBlocks([block]), DICT, max_length=64, seed=5)
    args = dict(mask_prob=0.3, leave_unmasked_prob=0.3, random_token_prob=0.2)
    plain = PMLMDataset(pairs, DICT, MASK, seed=5, **args)[0]
    skip = PMLMDataset(pairs, DICT, MASK, seed=5, par_skip_unchanged=True, **args)[0]
    assert {s: p for s, (p, _) in step_blocks(skip).items()} == {
        1: [21],
        2: [1, 2, 3, 4, 5, 6],
        3: [9, 10, 11, 12],
    }
    masked = [1, 2, 3, 4, 5, 6, 9, 10, 11, 12, 21]
    context = {1: MASK, 2: MASK, 3: W[2], 4: W[26], 5: MASK, 6: MASK}
    context.update({9: MASK, 10: W[2], 11: W[38], 12: MASK, 21: W[19]})
    assert {p: int(skip["source"][p]) for p in masked} == context
    assert par_targets(plain) == [21, 1, 2, 3, 4, 5, 6, 9, 10, 11, 12]
    assert par_targets(skip) == [1, 2, 4, 5, 6, 9, 10, 11, 12]  # 21 and 3 are gone
    assert (plain["num_par_skipped"], skip["num_par_skipped"]) == (0, 2)
    # the layout, the inputs and the AE targets are those of the default
    for key in ("source", "positions", "segments", "kind", "step"):
        assert torch.equal(plain[key], skip[key]), key
    n = len(pairs[0]["tokens"])
    assert torch.equal(plain["target"][:n], skip["target"][:n])


def test_par_skip_unchanged_removes_exactly_the_shown_originals():
    pairs, plain = make_pmlm(num_items=60)
    _, skip = make_pmlm(num_items=60, par_skip_unchanged=True)
    total_skipped = total_random = 0
    for i in range(len(plain)):
        a, b = plain[i], skip[i]
        tokens = pairs[i]["tokens"]
        n = len(tokens)
        for key in ("source", "positions", "segments", "kind", "step"):
            assert torch.equal(a[key], b[key]), key
        assert torch.equal(a["target"][:n], b["target"][:n])  # AE untouched
        _, pseudo, original = split_item(b)
        positions = b["positions"][pseudo]
        shown = b["source"][positions] == tokens[positions]  # the context shows the original
        assert torch.equal(b["target"][pseudo], torch.where(shown, PAD, tokens[positions]))
        assert b["target"][original].eq(PAD).all()
        assert b["num_par_skipped"] == int(shown.sum())
        random = (b["source"][positions] != MASK) & ~shown
        total_skipped += int(shown.sum())
        total_random += int(random.sum())
        assert torch.equal(b["target"][pseudo][random], tokens[positions][random])  # random: still PAR
    assert total_skipped > 0 and total_random > 0


def test_par_skip_unchanged_covers_random_draws_of_the_original():
    # random replacement only, from the 40 words: about 1 draw in 40 gives the original back
    pairs, data = make_pmlm(
        num_items=100, leave_unmasked_prob=0.0, random_token_prob=1.0, par_skip_unchanged=True
    )
    skipped = kept = 0
    for i in range(len(data)):
        item, tokens = data[i], pairs[i]["tokens"]
        _, pseudo, _ = split_item(item)
        positions = item["positions"][pseudo]
        drawn_back = item["source"][positions] == tokens[positions]
        assert item["target"][pseudo][drawn_back].eq(PAD).all()
        assert item["target"][pseudo][~drawn_back].ne(PAD).all()
        skipped += int(drawn_back.sum())
        kept += int((~drawn_back).sum())
    assert skipped > 0 and kept > 10 * skipped


@pytest.mark.parametrize("objectives", [dict(ae=False), dict(par=False)])
def test_par_skip_unchanged_needs_both_objectives(objectives):
    with pytest.raises(ValueError, match="par_skip_unchanged needs both"):
        make_pmlm(num_items=2, par_skip_unchanged=True, **objectives)


def test_par_skip_unchanged_collated_counts():
    _, data = make_pmlm(num_items=40, par_skip_unchanged=True)
    samples = [data[i] for i in range(40)]
    batch = data.collater(samples)
    skipped = sum(s["num_par_skipped"] for s in samples)
    assert batch["num_par_skipped"] == skipped > 0
    assert int(batch["ae_mask"].sum()) == batch["num_masked"]
    assert int(batch["par_mask"].sum()) == batch["num_masked"] - skipped
    assert torch.equal(batch["net_input"]["masked_tokens"], batch["ae_mask"] | batch["par_mask"])
