"""s2s-ft training layout vs decoding (docs/masks.md section 4), the seq2seq data and pre-trained loading.

Tiny models, dropout off. The decoding model has its weights scaled up (sharper, less uniform
predictions, so beam search has no near-ties) and a bias towards [EOS] so hypotheses end at different
steps and fairseq's generator shrinks and reorders the batch while decoding.
"""

import argparse

import numpy as np
import pytest
import torch
from fairseq import utils
from fairseq.data import data_utils
from torch.profiler import ProfilerActivity, profile

from unilm_fairseq import seq2seq_layout
from unilm_fairseq.checkpoint.unilmv2_init import load_pretrained_weights
from unilm_fairseq.checkpoint.upgrade import tile_rows
from unilm_fairseq.data.seq2seq.seq2seq_dataset import Seq2SeqDataset
from unilm_fairseq.masks import seq2seq_mask
from unilm_fairseq.models.unilmv2 import POSITION_TABLE
from unilm_fairseq.seq2seq_layout import Seq2SeqSpec
from unilm_fairseq.tasks.unilm_seq2seq import _TokenList

from ..helpers.benchmarks import dispatched_calls
from ..helpers.models import make_dictionary, save_checkpoint, tiny_model
from ..helpers.seq2seq import (
    EOS,
    MASK,
    PAD,
    SOURCES,
    TARGETS,
    TOL,
    WORDS,
    D,
    assert_same_hypotheses,
    collate,
    decoding_model,
    generate,
    incremental_logprobs,
    line,
    make_task,
    pairs_dataset,
    recomputed_logprobs,
    teacher_forced_logits,
    training_logprobs,
)

# tiny tensors gain nothing from intra-op threads (see conftest.one_thread)
pytestmark = pytest.mark.usefixtures("one_thread")


# ---------------------------------------------------------------------------------------------------
# training forward == teacher-forced incremental decoding


def shift_target_positions(net_input):
    """Negative control: every target-side token one position later."""
    positions = net_input["positions"].clone()
    positions[net_input["segments"].eq(seq2seq_layout.TARGET_SEGMENT)] += 1
    return dict(net_input, positions=positions)


@pytest.mark.parametrize("method", seq2seq_layout.METHODS)
def test_training_forward_equals_incremental_decoding(method):
    model = decoding_model(method)
    src_tokens = collate(pairs_dataset(method))["net_input"]["src_tokens"]
    assert src_tokens[2, 0] == PAD and src_tokens[2, -1] == EOS  # left-padded, as generation sees it
    trained, targets = training_logprobs(model, method)
    decoded = incremental_logprobs(model, src_tokens, targets)
    for i, (a, b) in enumerate(zip(trained, decoded)):
        assert a.shape == (len(targets[i]),)
        assert torch.allclose(a, b, atol=TOL), (method, i, (a - b).abs().max())


@pytest.mark.parametrize("method", seq2seq_layout.METHODS)
def test_training_forward_equals_recomputed_decoding(method):
    model = decoding_model(method)
    src_tokens = collate(pairs_dataset(method))["net_input"]["src_tokens"]
    trained, targets = training_logprobs(model, method)
    recomputed = recomputed_logprobs(model, src_tokens, targets)
    cached = incremental_logprobs(model, src_tokens, targets)
    for i, (a, b, c) in enumerate(zip(trained, recomputed, cached)):
        assert torch.allclose(a, b, atol=TOL), (method, i, (a - b).abs().max())
        assert torch.allclose(b, c, atol=TOL), (method, i, (b - c).abs().max())


def test_causal_step_zero_feeds_the_start_token_at_the_first_target_position():
    # s2s-ft §2.1, Figure 1a: "[SOS] source" is the source segment; [EOS] at position S - 1 (target
    # segment, sees the source and itself) predicts t_1. Built by hand, not through seq2seq_layout.
    model = decoding_model("causal")
    items = [pairs_dataset("causal")[i] for i in range(3)]
    src_tokens = data_utils.collate_tokens([it["source"] for it in items], PAD, left_pad=True)
    with torch.no_grad():
        encoder_out = model.encoder(src_tokens)
        lengths = [len(it["source"]) - 1 for it in items]  # "[SOS] source" without its [EOS]
        assert encoder_out["lengths"][0].tolist() == lengths
        assert encoder_out["padding"][0][:, -1].all()  # the [EOS] column is not in the source segment
        state = {}
        logits, _ = model.decoder(torch.full((3, 1), EOS), encoder_out, incremental_state=state)
        for i, item in enumerate(items):
            n = lengths[i]
            tokens = item["source"].unsqueeze(0)  # [SOS] source [EOS]
            segments = torch.tensor([[0] * n + [1]])
            visible = seq2seq_mask(n, 1).unsqueeze(0)
            hidden, _ = model.transformer(tokens, segments, torch.arange(n + 1).unsqueeze(0), visible)
            expected = model.lm_head(hidden[0, n])
            assert torch.allclose(logits[i, 0], expected, atol=TOL)


@pytest.mark.parametrize("method", seq2seq_layout.METHODS)
def test_agreement_check_detects_shifted_target_positions(method):
    model = decoding_model(method)
    src_tokens = collate(pairs_dataset(method))["net_input"]["src_tokens"]
    trained, targets = training_logprobs(model, method, perturb=shift_target_positions)
    decoded = incremental_logprobs(model, src_tokens, targets)
    gap = max(float((a - b).abs().max()) for a, b in zip(trained, decoded))
    assert gap > 1e-3


# ---------------------------------------------------------------------------------------------------
# cached decoding == recomputed decoding through fairseq's SequenceGenerator


def cached_and_recomputed(method, batch=None, **options):
    model = decoding_model(method)
    batch = collate(pairs_dataset(method)) if batch is None else batch
    cached = generate(model, batch, incremental=True, **options)
    recomputed = generate(model, batch, incremental=False, **options)
    assert_same_hypotheses(cached, recomputed)
    return cached


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")
@pytest.mark.parametrize("method", seq2seq_layout.METHODS)
def test_cached_decoding_equals_recompute_on_cuda(method):
    # the recomputing decoder lays examples out on the CPU and moves them: it once mixed devices on CUDA
    model = decoding_model(method).cuda()
    batch = utils.move_to_cuda(collate(pairs_dataset(method)))
    cached = generate(model, batch, incremental=True, beam=4)
    assert_same_hypotheses(cached, generate(model, batch, incremental=False, beam=4))
    on_cpu = generate(model.cpu(), utils.move_to_cpu(batch), incremental=True, beam=4)
    assert [hyps[0]["tokens"].tolist() for hyps in cached] == [hyps[0]["tokens"].tolist() for hyps in on_cpu]


@pytest.mark.parametrize("beam", [1, 4])
@pytest.mark.parametrize("method", seq2seq_layout.METHODS)
def test_cached_decoding_equals_recompute(method, beam):
    hypos = cached_and_recomputed(method, beam=beam)
    assert [len(h) for h in hypos] == [beam] * 3  # beam 4: all four hypotheses (n-best) compared
    lengths = {len(h["tokens"]) for hyps in hypos for h in hyps}
    assert len(lengths) > 1 or beam == 1  # hypotheses ended at different steps


@pytest.mark.parametrize("size", [1, 2])
@pytest.mark.parametrize("method", seq2seq_layout.METHODS)
def test_cached_equals_recompute_with_ngram_blocking(method, size):
    # size 1 once banned the start token </s> too, so no hypothesis could end and fairseq's generator
    # failed an assertion at the length limit
    hypos = cached_and_recomputed(method, beam=4, no_repeat_ngram_size=size, max_len_a=0, min_len=5)
    for hyps in hypos:
        for h in hyps:
            tokens = h["tokens"].tolist()
            assert tokens[-1] == EOS
            ngrams = list(zip(*(tokens[i:] for i in range(size))))
            assert len(ngrams) == len(set(ngrams)), tokens


@pytest.mark.parametrize("method", seq2seq_layout.METHODS)
def test_cached_equals_recompute_with_min_len(method):
    min_len = 4
    free = generate(decoding_model(method), collate(pairs_dataset(method)), incremental=True, beam=4)
    assert min(len(h["tokens"]) - 1 for hyps in free for h in hyps) < min_len  # the constraint bites
    hypos = cached_and_recomputed(method, beam=4, min_len=min_len)
    assert all(len(h["tokens"]) - 1 >= min_len for hyps in hypos for h in hyps)


@pytest.mark.parametrize("method", seq2seq_layout.METHODS)
def test_cached_equals_recompute_when_sampling(method):
    hypos = cached_and_recomputed(method, beam=2, sampling=True, sampling_topk=8, seed=7)
    greedy = generate(decoding_model(method), collate(pairs_dataset(method)), incremental=True, beam=2)
    assert [[h["tokens"].tolist() for h in hyps] for hyps in hypos] != [
        [h["tokens"].tolist() for h in hyps] for hyps in greedy
    ]


@pytest.mark.parametrize("method", seq2seq_layout.METHODS)
def test_cached_equals_recompute_with_prefix_tokens(method):
    prefix = torch.tensor([[WORDS[1], WORDS[2]], [WORDS[3], WORDS[4]], [WORDS[5], WORDS[6]]])
    hypos = cached_and_recomputed(method, beam=4, prefix_tokens=prefix)
    for hyps, p in zip(hypos, prefix.tolist()):
        assert all(h["tokens"][:2].tolist() == p for h in hyps)


@pytest.mark.parametrize("method", seq2seq_layout.METHODS)
def test_cache_holds_only_real_tokens(method):
    model = decoding_model(method)
    items = [pairs_dataset(method)[i] for i in range(3)]
    src_tokens = data_utils.collate_tokens([it["source"] for it in items], PAD, left_pad=True)
    fed = torch.stack([it["target"][:3] for it in items])  # three real tokens per row
    prev = torch.cat([torch.full((3, 1), EOS), fed], 1)
    state = {}
    with torch.no_grad():
        encoder_out = model.encoder(src_tokens)
        source_keys = [k.clone() for k in encoder_out["keys"]]
        for t in range(4):
            model.decoder(prev[:, : t + 1], encoder_out, incremental_state=state)
            cache = model.decoder.get_incremental_state(state, "cache")
            # causal also caches its start token [EOS], fed at step 0 at the first target position
            cached = t + 1 if method == "causal" else t
            layers, heads = len(model.transformer.layers), model.transformer.layers[0].self_attn.num_heads
            # every layer's keys and values, of the cached tokens only (the source's stay in encoder_out)
            assert cache["kv"].shape[:5] == (layers, 2, 3, heads, cached)
            for i, item in enumerate(items):
                first = first_target_position(method, item)
                assert cache["key_positions"][i].tolist() == list(range(first, first + cached))
        for before, after in zip(source_keys, encoder_out["keys"]):
            assert torch.equal(before, after)  # decoding never writes into the source's keys
        # the cached keys and values of the fed tokens are those of the real sequence (no mask token)
        for i, item in enumerate(items):
            n = first_target_position(method, item)  # causal: "[SOS] source" then [EOS] and the targets
            tokens = torch.cat([item["source"], fed[i]]).unsqueeze(0)
            positions = torch.arange(tokens.size(1)).unsqueeze(0)
            segments = (positions >= n).long()
            visible = seq2seq_mask(n, tokens.size(1) - n).unsqueeze(0)
            _, kv = model.transformer(tokens, segments, positions, visible)
            for layer, (k, v) in enumerate(kv):
                assert torch.allclose(cache["kv"][layer, 0, i], k[0, :, n:], atol=TOL)
                assert torch.allclose(cache["kv"][layer, 1, i], v[0, :, n:], atol=TOL)


def first_target_position(method, item):
    """Where the target side starts: after "[SOS] source [EOS]", or (causal) at its [EOS]."""
    return len(item["source"]) - 1 if method == "causal" else len(item["source"])


@pytest.mark.parametrize(
    "new_order",
    [
        [0, 0, 1, 1, 2, 2],  # beam 2: each sentence's keys read by two rows, never copied
        [1, 1, 1, 2, 2, 2],  # a finished sentence left the batch: the rest are gathered once
        [2, 0, 1, 0],  # any other order: the keys are copied per row
    ],
)
@pytest.mark.parametrize("method", seq2seq_layout.METHODS)
def test_shared_source_keys_equal_per_row_source(method, new_order):
    model = decoding_model(method)
    items = [pairs_dataset(method)[i] for i in range(3)]
    src_tokens = data_utils.collate_tokens([it["source"] for it in items], PAD, left_pad=True)
    new_order = torch.tensor(new_order)
    prev = torch.cat(
        [torch.full((len(new_order), 1), EOS), torch.tensor(WORDS[:4]).repeat(len(new_order), 1)], 1
    )
    shared = teacher_forced_logits(model, src_tokens, prev, new_order)
    per_row = teacher_forced_logits(model, src_tokens[new_order], prev)  # every row its own sentence
    assert torch.allclose(shared, per_row, atol=TOL), (shared - per_row).abs().max()


def test_beam_reorders_keep_the_shared_keys_and_regroup_only_when_rows_change():
    model = decoding_model("masked")
    items = [pairs_dataset("masked")[i] for i in range(3)]
    src_tokens = data_utils.collate_tokens([it["source"] for it in items], PAD, left_pad=True)
    with torch.no_grad():
        encoder_out = model.encoder.reorder_encoder_out(
            model.encoder(src_tokens), torch.tensor([0, 0, 1, 1, 2, 2])
        )
        keys = encoder_out["keys"][0]
        # a beam step: every row stays in its sentence's block, the keys are the same tensors, and the
        # host reads one answer (torch.equal) instead of grouping the rows again
        order = torch.tensor([1, 1, 2, 3, 5, 4])
        with profile(activities=[ProfilerActivity.CPU]) as prof:
            beam = model.encoder.reorder_encoder_out(encoder_out, order)
        assert beam["keys"][0] is keys and beam["rows"][0].tolist() == [0, 0, 1, 1, 2, 2]
        per_row = len(encoder_out) - 2  # every entry but the keys and values
        assert dispatched_calls(prof) == ["aten::index_select"] * per_row + ["aten::equal"]
        # same size, rows crossing sentences: the keys are copied per row, and read as such
        crossed = model.encoder.reorder_encoder_out(encoder_out, torch.tensor([2, 0, 1, 3, 4, 5]))
        assert crossed["keys"][0].size(0) == 6 and crossed["rows"][0].tolist() == list(range(6))
        assert torch.equal(crossed["keys"][0][0], keys[1]) and torch.equal(crossed["keys"][0][1], keys[0])


def test_sentence_groups():
    from unilm_fairseq.models.generation import sentence_groups

    assert sentence_groups(torch.tensor([0, 0, 1, 1, 2, 2])).tolist() == [0, 1, 2]
    assert sentence_groups(torch.tensor([1, 1, 1, 3, 3, 3])).tolist() == [1, 3]
    assert sentence_groups(torch.tensor([4])).tolist() == [4]
    assert sentence_groups(torch.tensor([0, 0, 1])) is None  # unequal blocks
    assert sentence_groups(torch.tensor([1, 1, 0, 0])) is None  # not increasing
    assert sentence_groups(torch.tensor([0, 1, 0, 1])) is None  # interleaved


@pytest.mark.parametrize("method", seq2seq_layout.METHODS)
def test_batch_decoding_equals_decoding_each_example_alone(method):
    model, dataset = decoding_model(method), pairs_dataset(method)
    together = generate(model, collate(dataset), incremental=True, beam=4)
    alone = [generate(model, collate(dataset, [i]), incremental=True, beam=4)[0] for i in range(3)]
    assert_same_hypotheses(together, alone)


# ---------------------------------------------------------------------------------------------------
# the position table bounds decoding


def test_inference_step_caps_generation_inside_the_position_table():
    table = 24
    task = make_task(max_source_positions=20, max_target_positions=8)
    model = tiny_model(D, seq2seq_method="pseudo_masked", max_positions=table)
    with torch.no_grad():
        model.lm_head.bias[EOS] = -1e4  # never ends early: generation runs to its cap
    long_source, short_source = line(30, 1), line(4, 2)
    seen = []
    hook = model.transformer.embeddings.positions.register_forward_hook(
        lambda module, inputs, output: seen.append(int(inputs[0].max()))
    )
    generator = task.build_generator([model], argparse.Namespace(beam=2, max_len_b=50))
    try:
        for incremental in (True, False):
            generator.model.has_incremental = incremental
            dataset = Seq2SeqDataset(_TokenList([long_source]), None, D, Seq2SeqSpec("pseudo_masked", 20, 8))
            batch = collate(dataset)
            assert batch["net_input"]["src_tokens"].size(1) == 20  # truncated to max_source_positions
            seen.clear()
            with torch.no_grad():
                hypos = task.inference_step(generator, [model], batch)
            assert max(seen) == table - 1  # decoding ran right up to the table's last row
            # the cap: 3 tokens then the forced [EOS] at position 23
            assert [len(h["tokens"]) for h in hypos[0]] == [table - 20, table - 20]
    finally:
        hook.remove()
    # a shorter source next gets more room: the cap is recomputed, not sticky
    batch = collate(Seq2SeqDataset(_TokenList([short_source]), None, D, Seq2SeqSpec("pseudo_masked", 20, 8)))
    with torch.no_grad():
        task.inference_step(generator, [model], batch)
    assert generator.max_len == table - 6


@pytest.mark.parametrize("incremental", [True, False])
def test_decoder_past_the_position_table_raises(incremental):
    model = tiny_model(D, seq2seq_method="pseudo_masked", max_positions=24)
    src_tokens = torch.cat([torch.tensor([D.bos()]), line(18, 1)]).unsqueeze(0)  # 20 tokens
    prev = torch.tensor([[EOS] + WORDS[:5]])
    with torch.no_grad():
        encoder_out = model.encoder(src_tokens)
        if not incremental:
            model.decoder(prev[:, :4], encoder_out)  # asks for position 23: fine
            with pytest.raises(ValueError, match="max_positions=24"):
                model.decoder(prev[:, :5], encoder_out)  # position 24
            return
        state = {}
        for t in range(4):  # positions 20..23
            model.decoder(prev[:, : t + 1], encoder_out, incremental_state=state)
        with pytest.raises(ValueError, match="max_positions=24"):
            model.decoder(prev[:, :5], encoder_out, incremental_state=state)


# ---------------------------------------------------------------------------------------------------
# Seq2SeqDataset


def test_truncation_keeps_the_special_tokens():
    source, target = line(30, 1), line(20, 2)
    dataset = pairs_dataset("pseudo_masked", [source, line(2, 3)], [target, line(1, 4)], 10, 6)
    item = dataset[0]
    assert item["source"].tolist() == [D.bos()] + source[:8].tolist() + [EOS]
    assert item["target"].tolist() == target[:5].tolist() + [EOS]
    short = dataset[1]
    assert short["source"].tolist() == [D.bos()] + line(2, 3).tolist()
    assert short["target"].tolist() == line(1, 4).tolist()
    assert dataset.sizes.tolist() == [10 + 6, 4 + 2]
    batch = collate(dataset)
    assert batch["net_input"]["tokens"].size(1) == 10 + 6 + 6
    assert int(batch["net_input"]["positions"].max()) == 10 + 6 - 1


def masked_dataset(n_examples, length, **kwargs):
    sources = [line(3, i) for i in range(n_examples)]
    targets = [line(length - 1, i) for i in range(n_examples)]  # length tokens with [EOS]
    return pairs_dataset("masked", sources, targets, **kwargs)


def test_masked_predicts_at_least_one_token_per_example():
    dataset = masked_dataset(200, 3, target_mask_prob=0.05)
    counts = [int(dataset[i]["predict"].sum()) for i in range(len(dataset))]
    assert min(counts) >= 1
    assert counts.count(1) > 150  # mostly the forced single prediction at this rate


def test_masked_prediction_rate_and_80_10_10_corruption():
    dataset = masked_dataset(400, 20, target_mask_prob=0.3, seed=3)
    predicted = total = as_mask = as_original = as_random = 0
    for i in range(len(dataset)):
        item = dataset[i]
        predict, inputs, target = item["predict"], item["target_inputs"], item["target"]
        assert inputs[~predict].tolist() == target[~predict].tolist()  # unpredicted inputs are real
        total += len(target)
        predicted += int(predict.sum())
        chosen_inputs, chosen_targets = inputs[predict], target[predict]
        as_mask += int(chosen_inputs.eq(MASK).sum())
        as_original += int(chosen_inputs.eq(chosen_targets).sum())
        randoms = chosen_inputs[chosen_inputs.ne(MASK) & chosen_inputs.ne(chosen_targets)]
        as_random += len(randoms)
        assert all(D.nspecial <= t < MASK for t in randoms.tolist())  # a real word, never special
    assert abs(predicted / total - 0.3) < 0.03
    assert abs(as_mask / predicted - 0.8) < 0.03
    assert abs(as_original / predicted - 0.1) < 0.025
    assert abs(as_random / predicted - 0.1) < 0.025


def test_masked_noise_is_seeded_per_seed_epoch_and_index():
    def noise(dataset, epoch):
        dataset.set_epoch(epoch)
        return [(dataset[i]["predict"].tolist(), dataset[i]["target_inputs"].tolist()) for i in range(30)]

    a, b = masked_dataset(30, 8, seed=5), masked_dataset(30, 8, seed=5)
    assert noise(a, 1) == noise(b, 1)
    first = noise(a, 1)
    assert noise(a, 2) != first  # a new epoch, new noise
    assert noise(a, 1) == first  # and back
    assert noise(masked_dataset(30, 8, seed=6), 1) != first
    items = noise(a, 1)
    assert len({str(x) for x in items}) > 1  # examples differ from each other


def test_pseudo_word_drop_corrupts_real_inputs_and_every_target_is_still_predicted():
    # word_drop_prob of the real target inputs are corrupted 80/10/10 ([M] / random word / unchanged)
    n, length, rate = 400, 12, 0.25
    sources = [line(3, i) for i in range(n)]
    targets = [line(length - 1, i) for i in range(n)]
    dataset = pairs_dataset("pseudo_masked", sources, targets, word_drop_prob=rate)
    as_mask = as_random = 0
    for i in range(n):
        item = dataset[i]
        assert item["predict"].all()
        inputs, target = item["target_inputs"], item["target"]
        changed = inputs.ne(target)
        as_mask += int(inputs.eq(MASK).sum())
        randoms = inputs[changed & inputs.ne(MASK)]
        as_random += len(randoms)
        assert all(D.nspecial <= t < MASK for t in randoms.tolist())
    tokens = n * length
    assert abs(as_mask / tokens - 0.8 * rate) < 0.03
    assert abs(as_random / tokens - 0.1 * rate) < 0.015
    batch = collate(dataset, range(4))
    net_input = batch["net_input"]
    assert int(net_input["masked_tokens"].sum()) == 4 * length == batch["ntokens"]
    assert (
        batch["layout_target"][net_input["masked_tokens"]].tolist()
        == torch.cat([dataset[i]["target"] for i in range(4)]).tolist()
    )
    # the real-target slots hold the corrupted inputs; the [P] slots, read for every target, all hold [M]
    real = net_input["tokens"][:, -2 * length : -length]
    assert real.tolist() == [dataset[i]["target_inputs"].tolist() for i in range(4)]
    assert net_input["tokens"][:, -length:].eq(MASK).all()


@pytest.mark.parametrize("method", seq2seq_layout.METHODS)
def test_sizes_and_num_tokens(method):
    dataset = pairs_dataset(method)
    src = [len(s) + 1 for s in SOURCES]  # [SOS] added
    tgt = [len(t) for t in TARGETS]
    assert dataset.sizes.tolist() == [s + t for s, t in zip(src, tgt)]
    expected = [s + (2 * t if method == "pseudo_masked" else t) for s, t in zip(src, tgt)]
    assert [dataset.num_tokens(i) for i in range(3)] == expected
    assert dataset.num_tokens_vec(np.arange(3)).tolist() == expected
    for i in range(3):  # the batching estimate bounds the packed layout
        layout = collate(dataset, [i])["net_input"]["tokens"]
        assert layout.size(1) <= expected[i]
        if method != "causal":
            assert layout.size(1) == expected[i]
    order = dataset.ordered_indices()
    assert sorted(order.tolist()) == [0, 1, 2]
    assert [expected[i] for i in order] == sorted(expected)


def test_inference_collater_has_generation_inputs_only():
    dataset = pairs_dataset("masked", targets=None)
    assert dataset.sizes.tolist() == [len(s) + 1 for s in SOURCES]
    batch = collate(dataset)
    assert set(batch["net_input"]) == {"src_tokens", "src_lengths"}
    assert "target" not in batch and "layout_target" not in batch
    assert batch["net_input"]["src_lengths"].tolist() == [7, 11, 5]
    src_tokens = batch["net_input"]["src_tokens"]
    assert src_tokens[2].tolist() == [PAD] * 6 + [D.bos()] + SOURCES[2].tolist()  # left-padded


# ---------------------------------------------------------------------------------------------------
# pre-trained weights


def test_tile_rows_repeats_the_learned_rows_in_order():
    table = torch.tensor([[0.0], [1.0], [2.0]])
    assert tile_rows(table, 7).tolist() == [[0.0], [1.0], [2.0], [0.0], [1.0], [2.0], [0.0]]
    assert tile_rows(table, 2).tolist() == [[0.0], [1.0]]


def test_load_pretrained_tiles_a_shorter_position_table(tmp_path):
    old = tiny_model(D, seed=1, max_positions=16)
    path = tmp_path / "pretrained.pt"
    save_checkpoint(old.state_dict(), path)
    new = tiny_model(D, seed=2, max_positions=40)
    load_pretrained_weights(new, str(path))
    old_state, new_state = old.state_dict(), new.state_dict()
    old_table, new_table = old_state[POSITION_TABLE], new_state[POSITION_TABLE]
    assert new_table.shape == (40, old_table.size(1))
    for i in range(40):
        assert torch.equal(new_table[i], old_table[i % 16])
    for key, value in old_state.items():
        if key != POSITION_TABLE:
            assert torch.equal(new_state[key], value), key


def test_load_pretrained_rejects_another_vocabulary(tmp_path):
    old = tiny_model(make_dictionary(30))
    path = tmp_path / "other_vocab.pt"
    save_checkpoint(old.state_dict(), path)
    new = tiny_model(D)
    with pytest.raises(ValueError) as error:
        load_pretrained_weights(new, str(path))
    message = str(error.value)
    assert str(path) in message
    assert "(35, 24)" in message and f"({len(D)}, 24)" in message


def test_load_pretrained_rejects_a_missing_key(tmp_path):
    state = tiny_model(D).state_dict()
    del state["lm_head.dense.weight"]
    path = tmp_path / "missing.pt"
    save_checkpoint(state, path)
    with pytest.raises(ValueError, match=r"missing \['lm_head\.dense\.weight'\]"):
        load_pretrained_weights(tiny_model(D), str(path))


@pytest.mark.parametrize("size", [1, 2, 3])
def test_cpu_ngram_blocking_bans_exactly_the_repeating_tokens(size):
    from unilm_fairseq.modules.ngram_block import PrefixNGramRepeatBlock

    blocker = PrefixNGramRepeatBlock(size)
    blocker.use_extension = False  # the tensor path, taken without the CUDA extension
    # two rows, a buffer wider than the prefix: the last columns are padding, as fairseq passes them
    tokens = torch.tensor([[EOS, 5, 6, 5, 6, PAD, PAD], [EOS, 7, 8, 9, 7, PAD, PAD]])
    step = 4  # five real columns
    lprobs = blocker(tokens, torch.zeros(2, len(D)), bsz=2, beam_size=1, step=step)
    banned = [sorted(torch.nonzero(row.isinf()).flatten().tolist()) for row in lprobs]
    expected = {
        1: [[5, 6], [7, 8, 9]],  # every generated token; never the start token </s>, which ends hypotheses
        2: [[5], [8]],  # after "6": 6->5 was seen; after "7": 7->8 was seen
        3: [[5], []],  # after "5 6": "5 6 5" was seen; "9 7" is new
    }[size]
    assert banned == expected


def test_unigram_ban_at_step_0_bans_nothing():
    from unilm_fairseq.modules.ngram_block import PrefixNGramRepeatBlock

    tokens = torch.tensor([[EOS, PAD, PAD]])
    lprobs = PrefixNGramRepeatBlock(1)(tokens, torch.zeros(1, len(D)), bsz=1, beam_size=1, step=0)
    assert not lprobs.isinf().any()


@pytest.mark.parametrize("method", seq2seq_layout.METHODS)
def test_source_keys_and_values_without_the_last_layer_equal_the_full_encoding(method):
    """Decoding encodes the source up to the last layer's keys and values only; those equal the full
    encoding's, and the hidden states are then not computed at all."""
    model = decoding_model(method)
    src = collate(pairs_dataset(method))["net_input"]["src_tokens"]
    with torch.no_grad():
        full_hidden, full_kv, padding, positions = model.encoder.source_states(src)
        hidden, kv, padding_kv, positions_kv = model.encoder.source_states(src, keys_values_only=True)
    assert hidden is None and full_hidden is not None
    assert torch.equal(padding, padding_kv) and torch.equal(positions, positions_kv)
    assert len(kv) == len(full_kv) == len(model.encoder.transformer.layers)
    for (k, v), (full_k, full_v) in zip(kv, full_kv):
        assert torch.equal(k, full_k) and torch.equal(v, full_v)
