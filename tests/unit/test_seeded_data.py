"""The seeded-dataset base and the shared masking rates.

Every seeded dataset must draw the same numbers as the formula the datasets
used before they shared a base: ``np.random.default_rng((seed, epoch, index))``
(with a stream id appended for the UniLM v1 objective and cloze draws) and a
``np.random.default_rng(seed)`` permutation before the length sort. The
expectations below recompute items with that formula and the pure masking
functions, independently of :class:`~unilm_fairseq.data.seeded.SeededDataset`.
"""

import inspect

import numpy as np
import pytest
import torch
from fairseq.data import ListDataset

from unilm_fairseq.data.masking import MaskingConfig, corrupt_masked, random_token_candidates
from unilm_fairseq.data.pretraining import (
    PALMPretrainDataset,
    PMLMDataset,
    SegmentPairDataset,
    corpus_fragments,
)
from unilm_fairseq.data.pretraining.blockwise_masking import blockwise_mask_steps
from unilm_fairseq.data.pretraining.cloze_masking import cloze_mask_picks
from unilm_fairseq.data.pretraining.palm_pretrain_dataset import bert_mask_positions
from unilm_fairseq.data.pretraining.pmlm_dataset import PSEUDO
from unilm_fairseq.data.pretraining.unilm_cloze_dataset import UniLMClozeDataset
from unilm_fairseq.data.pretraining.unilm_objectives import (
    CLOZE_STREAM,
    OBJECTIVE_STREAM,
    UniLMObjectiveDataset,
)
from unilm_fairseq.data.seeded import SeededDataset
from unilm_fairseq.data.seq2seq.seq2seq_dataset import Seq2SeqDataset
from unilm_fairseq.seq2seq_layout import Seq2SeqSpec
from unilm_fairseq.tasks.palm_pretrain import PALMPretrainConfig
from unilm_fairseq.tasks.pmlm import PMLMConfig
from unilm_fairseq.tasks.unilm import UniLMConfig
from unilm_fairseq.tasks.unilm_seq2seq import UniLMSeq2SeqConfig

from ..helpers.models import make_dictionary

D = make_dictionary()
MASK = D.index("<mask>")
W = [D.index(f"w{i}") for i in range(40)]
SPECIAL = np.array([D.bos(), D.eos(), D.pad()])
CANDIDATES = np.array([i for i in range(D.nspecial, len(D)) if i != MASK])
EPOCHS = (0, 1, 3)


def tokens_dataset(rows):
    tensors = [torch.tensor(r, dtype=torch.long) for r in rows]
    return ListDataset(tensors, sizes=np.array([len(t) for t in tensors]))


def corpus(n=24, seed=0):
    """Blocks of 1-4 sentences of 1-11 words, each sentence closed by eos."""
    rng = np.random.default_rng(seed)
    blocks = []
    for _ in range(n):
        block = []
        for _ in range(int(rng.integers(1, 5))):
            block += rng.choice(W, int(rng.integers(1, 12))).tolist() + [D.eos()]
        blocks.append(block)
    return blocks


def old_order(seed, lengths):
    shuffled = np.random.default_rng(seed).permutation(len(lengths))
    return shuffled[np.argsort(np.asarray(lengths)[shuffled], kind="stable")]


class Draws(SeededDataset):
    def __len__(self):
        return 5

    def num_tokens_vec(self, indices):
        return np.array([3, 1, 3, 2, 1])[indices]

    def __getitem__(self, index):
        return self.rng(index).integers(1000, size=4)


@pytest.mark.parametrize("seed", [0, 1, 12345])
def test_rng_is_the_seed_epoch_index_stream(seed):
    data = Draws(seed)
    for epoch in EPOCHS:
        data.set_epoch(epoch)
        for index in range(4):
            expected = np.random.default_rng((seed, epoch, index)).random(6)
            assert np.array_equal(data.rng(index).random(6), expected)
            for stream in (0, 1):
                expected = np.random.default_rng((seed, epoch, index, stream)).random(6)
                assert np.array_equal(data.rng(index, stream).random(6), expected)
    assert np.array_equal(data.ordered_indices(), old_order(seed, [3, 1, 3, 2, 1]))


def test_items_differ_across_epochs():
    data = Draws(7)
    data.set_epoch(1)
    assert not np.array_equal(data[2], Draws(7)[2])


def batch_values(batch):
    """Every tensor of a collated batch, as nested lists, in key order."""
    if torch.is_tensor(batch):
        return batch.tolist()
    if isinstance(batch, dict):
        return [batch_values(batch[key]) for key in sorted(batch)]
    return batch


@pytest.mark.parametrize("workers", [0, 1])
def test_data_loader_workers_draw_each_epoch_anew(workers):
    """Through fairseq's batch iterator, as fairseq-train asks for it each epoch, with data-loader workers
    (fairseq's default --num-workers is 1): epoch 2's batches are the dataset's epoch-2 items. A reused
    iterator kept its persistent workers' copies of the dataset from epoch 1 and repeated its masks."""
    from fairseq.tasks import FairseqTask

    data = pmlm_data()
    task = FairseqTask(None)
    seen = {}
    for epoch in (1, 2):
        iterator = task.get_batch_iterator(data, max_sentences=4, seed=1, num_workers=workers, epoch=epoch)
        seen[epoch] = [batch_values(batch) for batch in iterator.next_epoch_itr(shuffle=False)]
        batches = iterator.frozen_batches
    for epoch in (1, 2):  # the same batches built in this process, at that epoch
        data.set_epoch(epoch)
        assert seen[epoch] == [batch_values(data.collater([data[i] for i in batch])) for batch in batches]
    assert seen[1] != seen[2]


def pmlm_data():
    return PMLMDataset(
        SegmentPairDataset(tokens_dataset(corpus()), D, max_length=24, seed=3), D, MASK, seed=5
    )


def cloze_data():
    docs = np.arange(24) // 5
    objectives = UniLMObjectiveDataset(tokens_dataset(corpus()), (docs, docs), D, 32, 9, [2.0, 2.0, 1.0, 1.0])
    return UniLMClozeDataset(objectives, D, MASK, 9)


MASKED_SPEC = Seq2SeqSpec("masked", 16, 10)


def seq2seq_data():
    rows = [b[:-1][:14] + [D.eos()] for b in corpus()]
    return Seq2SeqDataset(tokens_dataset(rows), tokens_dataset(rows), D, MASKED_SPEC, seed=4)


def palm_data():
    lines = [b[:-1] + [D.eos()] for b in corpus()]
    fragments, _ = corpus_fragments(
        [len(x) - 1 for x in lines], max_tokens=30, max_context=24, max_continuation=8
    )
    return PALMPretrainDataset(tokens_dataset(lines), fragments, D, seed=2)


@pytest.mark.parametrize("build", [pmlm_data, cloze_data, seq2seq_data, palm_data])
def test_a_caller_changing_its_item_changes_no_other_item(build):
    data = build()
    data.set_epoch(2)
    first = data[3]
    kept = {k: v.clone() for k, v in first.items() if isinstance(v, torch.Tensor)}
    for value in kept:
        first[value].fill_(-1)
    again = data[3]
    assert again is not first
    for key, value in kept.items():
        assert torch.equal(again[key], value), key


def test_pmlm_items_follow_the_old_formula():
    pairs = SegmentPairDataset(tokens_dataset(corpus()), D, max_length=24, seed=3)
    data = PMLMDataset(pairs, D, MASK, seed=5)
    for epoch in EPOCHS:
        data.set_epoch(epoch)
        for index in range(len(data)):
            tokens = pairs[index]["tokens"].numpy()
            rng = np.random.default_rng((5, epoch, index))
            steps = blockwise_mask_steps(~np.isin(tokens, SPECIAL), rng)
            masked = np.concatenate(steps)
            context = tokens.copy()
            context[masked] = corrupt_masked(tokens[masked], rng, MASK, CANDIDATES)
            item = data[index]
            assert item["source"][: len(tokens)].tolist() == context.tolist()
            assert item["positions"][item["kind"] == PSEUDO].tolist() == masked.tolist()
            assert sorted(np.flatnonzero(item["target"][: len(tokens)].numpy() != D.pad())) == sorted(masked)
    assert np.array_equal(data.ordered_indices(), old_order(5, data.num_tokens_vec(np.arange(len(data)))))


def test_unilm_v1_items_follow_the_old_formula():
    blocks = corpus(30)
    docs = np.arange(len(blocks)) // 5
    weights = np.array([2.0, 2.0, 1.0, 1.0])
    objectives = UniLMObjectiveDataset(tokens_dataset(blocks), (docs, docs), D, 32, 9, weights)
    cloze = UniLMClozeDataset(objectives, D, MASK, 9)
    for epoch in EPOCHS:
        cloze.set_epoch(epoch)
        assert objectives.epoch == epoch
        for index in range(len(cloze)):
            objective_rng = np.random.default_rng((9, epoch, index, OBJECTIVE_STREAM))
            expected_objective = int(objective_rng.choice(4, p=weights / weights.sum()))
            item = cloze[index]
            assert item["objective"] == expected_objective
            tokens = item["tokens"].numpy()
            rng = np.random.default_rng((9, epoch, index, CLOZE_STREAM))
            picks = cloze_mask_picks(~np.isin(tokens, SPECIAL), rng)
            masked = np.concatenate(picks)
            source = tokens.copy()
            source[masked] = corrupt_masked(tokens[masked], rng, MASK, CANDIDATES)
            assert item["source"].tolist() == source.tolist()
            assert item["pick_lengths"] == [len(p) for p in picks]
    assert np.array_equal(cloze.ordered_indices(), old_order(9, cloze.sizes))
    assert np.array_equal(objectives.ordered_indices(), np.arange(len(objectives)))


def test_seq2seq_items_follow_the_old_formula():
    rows = [b[:-1][:14] + [D.eos()] for b in corpus(12)]
    targets = [list(reversed(b))[1:9] + [D.eos()] for b in corpus(12, seed=1)]
    data = Seq2SeqDataset(tokens_dataset(rows), tokens_dataset(targets), D, MASKED_SPEC, seed=4)
    for epoch in EPOCHS:
        data.set_epoch(epoch)
        for index in range(len(data)):
            target = np.array(targets[index][:-1][:9] + [D.eos()])
            rng = np.random.default_rng((4, epoch, index))
            chosen = rng.random(len(target)) < 0.5
            if not chosen.any():
                chosen[rng.integers(len(target))] = True
            inputs = target.copy()
            inputs[chosen] = corrupt_masked(target[chosen], rng, MASK, CANDIDATES)
            item = data[index]
            assert item["predict"].tolist() == chosen.tolist()
            assert item["target_inputs"].tolist() == inputs.tolist()
    assert np.array_equal(data.ordered_indices(), old_order(4, data.num_tokens_vec(np.arange(len(data)))))


def test_palm_items_follow_the_old_formula():
    lines = [b[:-1] + [D.eos()] if i % 6 else [D.eos()] for i, b in enumerate(corpus(40))]
    fragments, _ = corpus_fragments(
        [len(x) - 1 for x in lines], max_tokens=30, max_context=24, max_continuation=8
    )
    data = PALMPretrainDataset(tokens_dataset(lines), fragments, D, seed=2)
    special = np.array([D.bos(), D.eos(), D.pad(), D.unk()])
    for epoch in EPOCHS:
        data.set_epoch(epoch)
        for index in range(len(data)):
            original = torch.cat(
                [data.text(index)[: fragments[index].context], torch.tensor([D.eos()])]
            ).numpy()
            rng = np.random.default_rng((2, epoch, index))
            masked = bert_mask_positions(~np.isin(original, special), rng, 0.15)
            source = original.copy()
            source[masked] = corrupt_masked(original[masked], rng, MASK, CANDIDATES)
            assert data[index]["source"].tolist() == source.tolist()
    order = np.random.default_rng(2).permutation(len(data))
    order = order[np.argsort(data.tgt_sizes[order], kind="stable")]
    assert np.array_equal(data.ordered_indices(), order[np.argsort(data.src_sizes[order], kind="stable")])


def test_masking_rates_are_berts_and_every_default_is_them():
    cfg = MaskingConfig()
    assert (cfg.mask_prob, cfg.random_token_prob, cfg.leave_unmasked_prob) == (0.15, 0.1, 0.1)
    for config in (PMLMConfig, UniLMConfig, PALMPretrainConfig, UniLMSeq2SeqConfig):
        fields = config.__dataclass_fields__
        assert fields["leave_unmasked_prob"].default == 0.1
        assert fields["random_token_prob"].default == 0.1
        if "mask_prob" in fields:
            assert fields["mask_prob"].default == 0.15
    for function in (
        blockwise_mask_steps,
        cloze_mask_picks,
        corrupt_masked,
        PMLMDataset,
        UniLMClozeDataset,
        PALMPretrainDataset,
        Seq2SeqDataset,
    ):
        parameters = inspect.signature(function).parameters
        for name, value in (("mask_prob", 0.15), ("leave_unmasked_prob", 0.1), ("random_token_prob", 0.1)):
            if name in parameters:
                assert parameters[name].default == value, (function.__name__, name)


def test_random_token_candidates_leave_out_the_specials_and_the_mask():
    assert random_token_candidates(D, MASK).tolist() == CANDIDATES.tolist()
    assert MASK not in random_token_candidates(D, MASK) and D.nspecial == min(
        random_token_candidates(D, MASK)
    )
