"""No attention leakage in UniLM v1 batches, through every layer (the oracle of tests/helpers/leakage.py).

Batches come from the real pipeline (objective dataset -> cloze dataset -> collater):
per objective, the rules in words give what each prediction must not see, and the
gradient w.r.t. those tokens' input embeddings must be exactly zero with dropout off.
"""

import numpy as np
import pytest
import torch

from unilm_fairseq import masks
from unilm_fairseq.data.pretraining import unilm_cloze_dataset
from unilm_fairseq.data.pretraining.unilm_cloze_dataset import UniLMClozeDataset
from unilm_fairseq.data.pretraining.unilm_objectives import (
    BIDIRECTIONAL,
    LEFT_TO_RIGHT,
    RIGHT_TO_LEFT,
    SEQ2SEQ,
)

from ..helpers.leakage import assert_no_leakage, input_dependence
from ..helpers.models import make_dictionary, tiny_model
from ..helpers.unilm_v1 import ONLY, objective_dataset, synthetic_corpus


def must_not_see(objective: int, length: int, source_len: int) -> torch.Tensor:
    """Rules in words, ``(L, L)`` bool. Left-to-right: no key after the query. Right-to-left:
    no key before it. Seq2seq: the source sees no target; target j sees no target after j.
    Bidirectional: nothing is hidden."""
    index = torch.arange(length)
    q, k = index[:, None], index[None, :]
    if objective == LEFT_TO_RIGHT:
        return k > q
    if objective == RIGHT_TO_LEFT:
        return k < q
    if objective == SEQ2SEQ:
        return ((q < source_len) & (k >= source_len)) | ((q >= source_len) & (k > q))
    return torch.zeros(length, length, dtype=torch.bool)


@pytest.fixture(scope="module")
def setup():
    d = make_dictionary()
    return d, tiny_model(d, num_segments=6), synthetic_corpus(d, n_docs=2, blocks_per_doc=4, seed=3)


def batch_dependence(setup, objective):
    """Collate three examples of ``objective`` and return, per example, its gradient
    pattern, mask, forbidden pairs (``(n, n)`` each), padding dependence and predictions."""
    d, model, (blocks, docs) = setup
    data = UniLMClozeDataset(
        objective_dataset(blocks, docs, d, ONLY[objective], seed=2),
        d,
        d.index("<mask>"),
        seed=2,
        mask_prob=0.3,
    )
    samples = [data[i] for i in range(3)]  # three lengths: padding inside the batch
    assert len({len(s["source"]) for s in samples}) > 1
    net = data.collater(samples)["net_input"]
    touches = input_dependence(
        model, net["tokens"], net["segments"], net["positions"], net["attn_mask"], "logits"
    )
    for b, sample in enumerate(samples):
        n = len(sample["source"])
        forbidden = must_not_see(objective, n, sample["source_len"])
        yield (
            touches[b, :n, :n],
            net["attn_mask"][b, :n, :n],
            forbidden,
            touches[b, :n, n:],
            net["masked_tokens"][b, :n],
            sample["source_len"],
        )


@pytest.mark.parametrize("objective", [LEFT_TO_RIGHT, RIGHT_TO_LEFT, SEQ2SEQ, BIDIRECTIONAL])
def test_unilm_v1_batch_has_no_leakage(setup, objective):
    layers = setup[1].cfg.encoder_layers
    in_source = in_target = 0
    for touches, visible, forbidden, on_padding, predicted, source_len in batch_dependence(setup, objective):
        assert forbidden.any() or objective == BIDIRECTIONAL
        assert_no_leakage(touches, visible, forbidden, layers)
        assert not on_padding.any(), "real tokens depend on padding"
        assert predicted.any()
        in_source += int(predicted[:source_len].sum())
        in_target += int(predicted[source_len:].sum())
    if objective == SEQ2SEQ:  # predictions in both segments are among the rows checked
        assert in_source and in_target


@pytest.mark.parametrize("objective", [LEFT_TO_RIGHT, RIGHT_TO_LEFT, SEQ2SEQ])
def test_negative_control_bidirectional_collater_leaks(setup, objective, monkeypatch):
    """Had the collater given every example the bidirectional mask, every forbidden
    pair would carry gradient and the check above would fail."""
    monkeypatch.setattr(
        unilm_cloze_dataset,
        "objective_mask",
        lambda objective, length, source_len: masks.bidirectional_mask(length),
    )
    for touches, visible, forbidden, *_ in batch_dependence(setup, objective):
        assert (touches & forbidden)[forbidden].all()
        with pytest.raises(AssertionError, match="leaks across layers"):
            assert_no_leakage(touches, visible, forbidden, setup[1].cfg.encoder_layers)


def test_nsp_logits_depend_on_their_own_example_only(setup):
    d, _, (blocks, docs) = setup
    model = tiny_model(d, num_segments=6)
    model.build_nsp_head()
    model.eval()
    data = UniLMClozeDataset(objective_dataset(blocks, docs, d, ONLY[BIDIRECTIONAL]), d, d.index("<mask>"), 1)
    batch = data.collater([data[0], data[1]])
    _, extra = model(**batch["net_input"], nsp=True)
    assert extra["nsp_logits"].shape == (2, 2)
    _, alone_extra = model(**data.collater([data[1]])["net_input"], nsp=True)
    assert torch.allclose(extra["nsp_logits"][1], alone_extra["nsp_logits"][0], atol=1e-5)
    assert np.isfinite(extra["nsp_logits"].detach().numpy()).all()
