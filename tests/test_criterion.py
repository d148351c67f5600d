"""The ae_par criterion: Eq. 7 bookkeeping, per-objective logging, label smoothing."""

import math

import numpy as np
import pytest
import torch
from fairseq import metrics
from fairseq.data import FairseqDataset

from unilm_fairseq.criterions.ae_par import AEPARCriterion
from unilm_fairseq.data import PMLMDataset

from .conftest import make_dictionary, tiny_model


class Pairs(FairseqDataset):
    def __init__(self, items):
        self.items = items
        self.sizes = np.array([len(i["tokens"]) for i in items])

    def __getitem__(self, index):
        return self.items[index]

    def __len__(self):
        return len(self.items)


def batch(dictionary, ae=True, par=True):
    rng = np.random.default_rng(0)
    items = []
    for n in (30, 22):
        words = rng.integers(dictionary.nspecial, len(dictionary) - 1, size=n - 3)
        tokens = [dictionary.bos(), *words[:10], dictionary.eos(), *words[10:], dictionary.eos()]
        segments = [0] * 12 + [1] * (n - 12)
        items.append({"tokens": torch.tensor(tokens), "segments": torch.tensor(segments)})
    dataset = PMLMDataset(Pairs(items), dictionary, dictionary.index("<mask>"), seed=1, ae=ae, par=par)
    return dataset.collater([dataset[0], dataset[1]])


class Task:
    def __init__(self, dictionary):
        self.target_dictionary = dictionary


def manual_nll(model, sample, which):
    logits, _ = model(**{**sample["net_input"], "masked_tokens": None})  # B x T x V
    lprobs = torch.log_softmax(logits.float(), dim=-1)
    mask = sample[which]
    return -lprobs[mask].gather(-1, sample["target"][mask].unsqueeze(-1)).sum()


def test_loss_is_ae_plus_par_over_masked_tokens():
    d = make_dictionary()
    model, sample = tiny_model(d), batch(d)
    loss, sample_size, log = AEPARCriterion(Task(d))(model, sample)
    n_masked = sample["num_masked"]
    assert sample_size == n_masked == int(sample["ae_mask"].sum()) == int(sample["par_mask"].sum())
    ae, par = manual_nll(model, sample, "ae_mask"), manual_nll(model, sample, "par_mask")
    assert float(log["ae_loss"]) == pytest.approx(float(ae), rel=1e-5)
    assert float(log["par_loss"]) == pytest.approx(float(par), rel=1e-5)
    assert float(loss) == pytest.approx(float(ae + par), rel=1e-5)
    assert log["ae_tokens"] == log["par_tokens"] == n_masked

    with metrics.aggregate() as agg:
        AEPARCriterion.reduce_metrics([log])
    values = agg.get_smoothed_values()
    assert values["ae_loss"] == pytest.approx(float(ae) / n_masked / math.log(2), abs=1e-3)
    assert values["par_loss"] == pytest.approx(float(par) / n_masked / math.log(2), abs=1e-3)
    assert values["loss"] == pytest.approx(values["ae_loss"] + values["par_loss"], abs=2e-3)


@pytest.mark.parametrize("ae, par", [(True, False), (False, True)])
def test_single_objective_logs_only_its_loss(ae, par):
    d = make_dictionary()
    model, sample = tiny_model(d), batch(d, ae=ae, par=par)
    loss, sample_size, log = AEPARCriterion(Task(d))(model, sample)
    assert (log["ae_tokens"] > 0) == ae and (log["par_tokens"] > 0) == par
    with metrics.aggregate() as agg:
        AEPARCriterion.reduce_metrics([log])
    values = agg.get_smoothed_values()
    assert ("ae_loss" in values) == ae and ("par_loss" in values) == par


def test_label_smoothing_changes_loss_not_nll():
    d = make_dictionary()
    model, sample = tiny_model(d), batch(d)
    plain, _, plain_log = AEPARCriterion(Task(d), label_smoothing=0.0)(model, sample)
    smooth, _, smooth_log = AEPARCriterion(Task(d), label_smoothing=0.1)(model, sample)
    assert float(smooth_log["nll_loss"]) == pytest.approx(float(plain_log["nll_loss"]), rel=1e-6)
    assert float(plain_log["nll_loss"]) == pytest.approx(float(plain), rel=1e-6)
    assert abs(float(smooth) - float(plain)) > 1e-3
