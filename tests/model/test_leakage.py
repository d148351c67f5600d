"""No attention leakage, explicit or implicit (UniLMv2 paper section 3.2).

With dropout off, the gradient of every output (a fixed random projection of
its features or logits) is taken w.r.t. the input embedding of every token.
Information of key ``k`` can reach query ``q`` only along a path of attention
edges, one per layer, or through the residual (a token reaches itself), so the
oracle is reachability in ``visible | I`` within ``encoder_layers`` hops.

Each layout states its rules in words as a "must not see" set. The tests check
that the mask respects that set even transitively, that the gradient is exactly
zero wherever the oracle says no information can arrive, and that it is nonzero
wherever some can: the last part keeps the check from passing vacuously. The
negative controls break the masks on purpose, including leaks that exist only
across layers (implicit leakage).
"""

import numpy as np
import pytest
import torch
from fairseq.data import ListDataset
from torch import Tensor

from unilm_fairseq import masks
from unilm_fairseq.data.pretraining.pmlm_dataset import CONTEXT, ORIGINAL, PSEUDO, PMLMDataset
from unilm_fairseq.data.pretraining.segment_pair_dataset import SegmentPairDataset

from ..helpers.leakage import assert_no_leakage, input_dependence
from ..helpers.models import make_dictionary, tiny_model

OUTPUTS = ["features", "logits"]


def pmlm_must_not_see(kind: Tensor, step: Tensor) -> Tensor:
    """PMLM rules in words, ``kind``/``step`` ``(L,)`` -> ``(L, L)`` bool.

    The context (AE predictions at ``[M]`` included) sees no appended token. A
    ``[P]`` of step ``i`` (a PAR prediction) sees no original of steps ``>= i``
    and no ``[P]`` of another step. An original of step ``i`` sees no ``[P]``
    and no original of a later step.
    """
    q_kind, k_kind = kind[:, None], kind[None, :]
    q_step, k_step = step[:, None], step[None, :]
    context = (q_kind == CONTEXT) & (k_kind != CONTEXT)
    pseudo = (q_kind == PSEUDO) & (
        ((k_kind == ORIGINAL) & (k_step >= q_step)) | ((k_kind == PSEUDO) & (k_step != q_step))
    )
    original = (q_kind == ORIGINAL) & ((k_kind == PSEUDO) | ((k_kind == ORIGINAL) & (k_step > q_step)))
    return context | pseudo | original


def hand_pmlm_example(mask_idx: int):
    """A PMLM layout built by hand, its appended blocks deliberately out of step order.

    Steps: ``M_1`` a span of 3, ``M_2`` one token, ``M_3`` a span of 2, ``M_4`` one
    token. All originals are appended, the last step's included, so the test sees
    that no prediction reads them.
    """
    gen = torch.Generator().manual_seed(1)
    originals = torch.randint(4, mask_idx, (12,), generator=gen)
    segments = torch.tensor([0] * 6 + [1] * 6)
    spans = {1: [2, 3, 4], 2: [7], 3: [9, 10], 4: [5]}
    context = originals.clone()
    for span in spans.values():
        context[span] = mask_idx
    blocks = [(4, ORIGINAL), (2, PSEUDO), (1, ORIGINAL), (1, PSEUDO), (3, PSEUDO), (3, ORIGINAL)]
    blocks += [(2, ORIGINAL), (4, PSEUDO)]
    tokens, positions, kind, step = (
        [context],
        [torch.arange(12)],
        [torch.full((12,), CONTEXT)],
        [torch.zeros(12)],
    )
    for i, k in blocks:
        span = torch.tensor(spans[i])
        tokens.append(originals[span] if k == ORIGINAL else torch.full((len(span),), mask_idx))
        positions.append(span)
        kind.append(torch.full((len(span),), k))
        step.append(torch.full((len(span),), i))
    tokens, positions, kind, step = (torch.cat(t).long() for t in (tokens, positions, kind, step))
    appended = kind != CONTEXT
    visible = masks.pmlm_mask(12, step[appended], kind[appended] == PSEUDO)
    return tokens, segments[positions], positions, visible, kind, step


def run(model, tokens, segments, positions, visible, output):
    return input_dependence(model, tokens[None], segments[None], positions[None], visible[None], output)[0]


@pytest.fixture(scope="module")
def model():
    return tiny_model(make_dictionary())


@pytest.mark.parametrize("output", OUTPUTS)
def test_pmlm_hand_layout_has_no_leakage(model, output):
    tokens, segments, positions, visible, kind, step = hand_pmlm_example(model.dictionary.index("<mask>"))
    touches = run(model, tokens, segments, positions, visible, output)
    assert_no_leakage(touches, visible, pmlm_must_not_see(kind, step), model.cfg.encoder_layers)


def pairs_pmlm_dataset(dictionary, seed: int) -> PMLMDataset:
    """Two short segment pairs, masked by :class:`PMLMDataset` with AE and PAR on."""
    rng = np.random.default_rng(0)

    def word(n):  # ordinary symbols only: no specials, no <mask>
        return rng.integers(dictionary.nspecial, len(dictionary) - 1, n).tolist()

    eos = [dictionary.eos()]
    blocks = [torch.tensor(word(7) + eos + word(9) + eos), torch.tensor(word(5) + eos + word(6) + eos)]
    pairs_ = SegmentPairDataset(
        ListDataset(blocks, sizes=np.array([len(b) for b in blocks])), dictionary, max_length=32, seed=0
    )
    return PMLMDataset(pairs_, dictionary, dictionary.index("<mask>"), seed=seed, mask_prob=0.3)


def has_wanted_steps(sample, mask_idx: int, pad: int) -> bool:
    """At least 3 steps, one a span and one a single token, and an AE input that is ``[M]``."""
    pseudo = sample["kind"] == PSEUDO
    sizes = torch.bincount(sample["step"][pseudo])[1:]
    masked_context = (sample["kind"] == CONTEXT) & (sample["target"] != pad)
    has_m = bool((sample["source"][masked_context] == mask_idx).any())
    return len(sizes) >= 3 and bool((sizes >= 2).any()) and bool((sizes == 1).any()) and has_m


@pytest.mark.parametrize("output", OUTPUTS)
def test_pmlm_dataset_batch_has_no_leakage(model, output):
    dictionary = model.dictionary
    mask_idx = dictionary.index("<mask>")
    dataset = next(
        d
        for d in (pairs_pmlm_dataset(dictionary, seed) for seed in range(100))
        if all(has_wanted_steps(d[i], mask_idx, dictionary.pad()) for i in range(len(d)))
    )
    samples = [dataset[0], dataset[1]]
    batch = dataset.collater(samples)
    net = batch["net_input"]
    touches = input_dependence(
        model, net["tokens"], net["segments"], net["positions"], net["attn_mask"], output
    )
    width = net["context_len"]  # every example's appended tokens start at this column
    for b, sample in enumerate(samples):
        n, context = len(sample["source"]), int((sample["kind"] == 0).sum())
        columns = torch.cat([torch.arange(context), width + torch.arange(n - context)])
        padding = torch.ones(net["tokens"].size(1), dtype=torch.bool)
        padding[columns] = False
        visible = net["attn_mask"][b][columns][:, columns]
        must_not_see = pmlm_must_not_see(sample["kind"], sample["step"])
        assert_no_leakage(touches[b][columns][:, columns], visible, must_not_see, model.cfg.encoder_layers)
        assert not touches[b][columns][:, padding].any(), "real tokens depend on padding"
    # the predictions the losses read are among the rows checked
    assert batch["ae_mask"].any() and batch["par_mask"].any()


@pytest.mark.parametrize("output", OUTPUTS)
def test_seq2seq_has_no_leakage(model, output):
    source, target = 5, 4
    length = source + target
    visible = masks.seq2seq_mask(source, target)
    tokens = torch.randint(4, 30, (length,), generator=torch.Generator().manual_seed(2))
    segments = torch.tensor([0] * source + [1] * target)
    # source sees no target; target j (which predicts j + 1) sees no target after j
    index = torch.arange(length)
    q, k = index[:, None], index[None, :]
    must_not_see = ((q < source) & (k >= source)) | ((q >= source) & (k > q))
    touches = run(model, tokens, segments, index, visible, output)
    assert_no_leakage(touches, visible, must_not_see, model.cfg.encoder_layers)


@pytest.mark.parametrize("output", OUTPUTS)
def test_pseudo_masked_seq2seq_has_no_leakage(model, output):
    source, target = 5, 4
    visible = masks.pseudo_masked_seq2seq_mask(source, target)
    tokens = torch.randint(4, 30, (source + 2 * target,), generator=torch.Generator().manual_seed(3))
    tokens[source + target :] = model.dictionary.index("<mask>")
    segments = torch.tensor([0] * source + [1] * (2 * target))
    target_j = torch.arange(target)
    positions = torch.cat([torch.arange(source + target), source + target_j])  # pseudo j at target j
    role = torch.tensor([0] * source + [1] * target + [2] * target)  # source, target, pseudo
    j = torch.cat([torch.full((source,), -1), target_j, target_j])
    q_role, k_role, q_j, k_j = role[:, None], role[None, :], j[:, None], j[None, :]
    # source sees no target and no pseudo; target j sees no later target and no pseudo;
    # pseudo j (predicting target j) sees no target >= j and no other pseudo
    must_not_see = (
        ((q_role == 0) & (k_role != 0))
        | ((q_role == 1) & (((k_role == 1) & (k_j > q_j)) | (k_role == 2)))
        | ((q_role == 2) & (((k_role == 1) & (k_j >= q_j)) | ((k_role == 2) & (k_j != q_j))))
    )
    touches = run(model, tokens, segments, positions, visible, output)
    assert_no_leakage(touches, visible, must_not_see, model.cfg.encoder_layers)


@pytest.mark.parametrize("direction", ["left_to_right", "right_to_left"])
def test_unidirectional_has_no_leakage(model, direction):
    length = 8
    tokens = torch.randint(4, 30, (length,), generator=torch.Generator().manual_seed(4))
    index = torch.arange(length)
    q, k = index[:, None], index[None, :]
    if direction == "left_to_right":
        visible, must_not_see = masks.left_to_right_mask(length), k > q
    else:
        visible, must_not_see = masks.right_to_left_mask(length), k < q
    touches = run(model, tokens, torch.zeros_like(tokens), index, visible, "logits")
    assert_no_leakage(touches, visible, must_not_see, model.cfg.encoder_layers)


def test_negative_control_bidirectional_mask_leaks(model):
    """The same check on a PMLM layout with everything visible: every forbidden pair leaks."""
    tokens, segments, positions, visible, kind, step = hand_pmlm_example(model.dictionary.index("<mask>"))
    must_not_see = pmlm_must_not_see(kind, step)
    correct = run(model, tokens, segments, positions, visible, "logits")
    wrong = run(model, tokens, segments, positions, torch.ones_like(visible), "logits")
    assert not (correct & must_not_see).any()
    assert (wrong & must_not_see)[must_not_see].all()
    with pytest.raises(AssertionError, match="must not be seen"):
        assert_no_leakage(wrong, visible, must_not_see, model.cfg.encoder_layers)


def test_negative_control_implicit_pmlm_leak(model):
    """Originals seeing every original: no ``[P]`` sees a forbidden token directly,
    yet ``[P]`` of step ``i`` reads originals of step ``i`` through those of step ``i-1``."""
    tokens, segments, positions, visible, kind, step = hand_pmlm_example(model.dictionary.index("<mask>"))
    must_not_see = pmlm_must_not_see(kind, step)
    original = kind == ORIGINAL
    wrong = visible.clone()
    wrong[original[:, None] & original[None, :]] = True
    pseudo_rows = kind == PSEUDO
    assert not (wrong & must_not_see)[pseudo_rows].any(), "the [P] rows must stay directly correct"
    touches = run(model, tokens, segments, positions, wrong, "logits")
    leaked = (touches & must_not_see)[pseudo_rows]
    assert leaked.any(), "an implicit leak across layers went unnoticed"
    # exactly the [P] of steps >= 2 leak: step 1 has no earlier original to leak through
    leaking_steps = set(step[pseudo_rows][leaked.any(-1)].tolist())
    assert leaking_steps == {2, 3, 4}


def test_negative_control_implicit_seq2seq_leak(model):
    """A bidirectional source over ``[source | target]``: targets still see no later target
    directly, but read them through the source one layer later."""
    source, target = 5, 4
    length = source + target
    wrong = masks.seq2seq_mask(source, target)
    wrong[:source] = True
    index = torch.arange(length)
    later_target = (index[:, None] >= source) & (index[None, :] > index[:, None])
    assert not (wrong & later_target).any()
    tokens = torch.randint(4, 30, (length,), generator=torch.Generator().manual_seed(2))
    touches = run(model, tokens, (index >= source).long(), index, wrong, "logits")
    assert (touches & later_target)[later_target].all()
