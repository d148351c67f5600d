"""The ae_par criterion: Eq. 7 bookkeeping, per-objective logging, label smoothing."""

import math

import pytest
import torch
from fairseq import metrics

from unilm_fairseq.criterions.ae_par import AEPARCriterion
from unilm_fairseq.data.pretraining.pmlm_dataset import CONTEXT

from ..helpers.models import make_dictionary, tiny_model
from ..helpers.pmlm_batches import Task, batch, pmlm_dataset


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
    with torch.no_grad():
        ae, par = manual_nll(model, sample, "ae_mask"), manual_nll(model, sample, "par_mask")
    assert float(log["ae_loss"]) == pytest.approx(float(ae), rel=1e-5)
    assert float(log["par_loss"]) == pytest.approx(float(par), rel=1e-5)
    assert float(loss.detach()) == pytest.approx(float(ae + par), rel=1e-5)
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
    with torch.no_grad():
        plain, _, plain_log = AEPARCriterion(Task(d), label_smoothing=0.0)(model, sample)
        smooth, _, smooth_log = AEPARCriterion(Task(d), label_smoothing=0.1)(model, sample)
    assert float(smooth_log["nll_loss"]) == pytest.approx(float(plain_log["nll_loss"]), rel=1e-6)
    assert float(plain_log["nll_loss"]) == pytest.approx(float(plain), rel=1e-6)
    assert abs(float(smooth) - float(plain)) > 1e-3


# a third of the masked inputs left unchanged, so the two short examples have several
SKIP_OPTIONS = dict(leave_unmasked_prob=0.3, par_skip_unchanged=True)


def test_par_skip_unchanged_sample_size_and_logs():
    d = make_dictionary()
    model, sample = tiny_model(d), batch(d, **SKIP_OPTIONS)
    loss, sample_size, log = AEPARCriterion(Task(d, par_skip_unchanged=True))(model, sample)
    n_masked, skipped = sample["num_masked"], sample["num_par_skipped"]
    assert skipped > 0
    # every masked token is still in the loss through AE; PAR lost the skipped ones
    assert sample_size == n_masked == log["ae_tokens"] == int(sample["ae_mask"].sum())
    assert log["par_tokens"] == n_masked - skipped == int(sample["par_mask"].sum())
    assert log["par_skipped"] == skipped
    with torch.no_grad():
        ae, par = manual_nll(model, sample, "ae_mask"), manual_nll(model, sample, "par_mask")
    assert float(loss.detach()) == pytest.approx(float(ae + par), rel=1e-5)

    with metrics.aggregate() as agg:
        AEPARCriterion.reduce_metrics([log])
    values = agg.get_smoothed_values()
    bits = math.log(2)
    assert values["loss"] == pytest.approx(float(ae + par) / n_masked / bits, abs=1e-3)
    assert values["par_loss"] == pytest.approx(float(par) / (n_masked - skipped) / bits, abs=1e-3)
    assert values["par_skipped"] == pytest.approx(skipped / n_masked, abs=1e-3)
    # an update with nothing skipped counts in the epoch's mean as a zero, not left out of it
    with metrics.aggregate() as agg:
        AEPARCriterion.reduce_metrics([log])
        AEPARCriterion.reduce_metrics([{**log, "par_skipped": 0}])
    assert agg.get_smoothed_values()["par_skipped"] == pytest.approx(skipped / (2 * n_masked), abs=1e-3)
    # the remaining PAR terms keep their default weight: loss = ae + par * par_tokens / masked
    expected = values["ae_loss"] + values["par_loss"] * (n_masked - skipped) / n_masked
    assert values["loss"] == pytest.approx(expected, abs=2e-3)


def test_default_logs_no_par_skipped():
    d = make_dictionary()
    model, sample = tiny_model(d), batch(d)
    _, _, log = AEPARCriterion(Task(d))(model, sample)
    assert sample["num_par_skipped"] == 0 and "par_skipped" not in log
    with metrics.aggregate() as agg:
        AEPARCriterion.reduce_metrics([log])
    assert "par_skipped" not in agg.get_smoothed_values()


def par_loss_touches(model, sample, criterion) -> torch.Tensor:
    """``(B, T)`` bool: the PAR loss has a nonzero gradient w.r.t. the input embedding at that column.

    The criterion runs on the PAR targets alone (AE targets cleared). The embeddings are made
    leaves by a hook; the model embeds the contexts, then the appended columns (two calls).
    """
    leaves = []

    def embeddings_as_leaf(module, args, embedded):
        leaf = embedded.detach().requires_grad_(True)
        leaves.append(leaf)
        return leaf

    par_only = {
        **sample,
        "ae_mask": torch.zeros_like(sample["ae_mask"]),
        "net_input": {**sample["net_input"], "masked_tokens": sample["par_mask"]},
    }
    handle = model.transformer.embeddings.register_forward_hook(embeddings_as_leaf)
    try:
        loss, _, log = criterion(model, par_only)
    finally:
        handle.remove()
    assert log["ae_tokens"] == 0 and log["par_tokens"] == int(sample["par_mask"].sum())
    loss.backward()
    context, appended = leaves  # B x context_len x C, B x appended x C
    return torch.cat([context.grad, appended.grad], dim=1).ne(0).any(-1)


def test_par_skip_unchanged_gradient_of_skipped_pseudo_masks():
    """A skipped [P] gets no gradient from the PAR loss unless a [P] of its own step is still a
    target: those attend to it (Figure 5), which the option leaves as it is."""
    d = make_dictionary()
    model = tiny_model(d)
    criterion = AEPARCriterion(Task(d))
    plain, skip = batch(d, leave_unmasked_prob=0.3), batch(d, **SKIP_OPTIONS)
    for key in ("tokens", "positions", "attn_mask"):
        assert torch.equal(plain["net_input"][key], skip["net_input"][key])
    # the factorization step of every column (0 in the contexts and padding)
    width = skip["net_input"]["context_len"]
    step = torch.zeros_like(skip["target"])
    dataset = pmlm_dataset(d, **SKIP_OPTIONS)
    for b in range(2):
        item = dataset[b]
        appended = item["step"][item["kind"] != CONTEXT]
        step[b, width : width + len(appended)] = appended
    pseudo = plain["par_mask"]  # with the option off, every [P] is a PAR target
    skipped = pseudo & ~skip["par_mask"]
    step_has_target = torch.zeros_like(skipped)
    for b, t in pseudo.nonzero().tolist():
        same_step = pseudo[b] & step[b].eq(step[b, t])
        step_has_target[b, t] = bool((same_step & skip["par_mask"][b]).any())
    alone = skipped & ~step_has_target
    with_targets = skipped & step_has_target
    assert alone.any() and with_targets.any()  # both cases occur in this batch

    touches_plain = par_loss_touches(model, plain, criterion)
    assert touches_plain[pseudo].all()
    touches_skip = par_loss_touches(model, skip, criterion)
    assert not touches_skip[alone].any()
    assert touches_skip[pseudo & ~alone].all()  # targets, and skipped [P] their step-mates read


class RiggedModel(torch.nn.Module):
    """Returns logits whose top token is the original for the rows in ``correct_rows`` only."""

    def __init__(self, sample, vocab_size, correct_rows):
        super().__init__()
        self.target = sample["target"][sample["net_input"]["masked_tokens"]]  # N
        self.vocab_size, self.correct_rows = vocab_size, set(correct_rows)

    def forward(self, masked_tokens, **unused):
        logits = torch.zeros(len(self.target), self.vocab_size)
        for row, token in enumerate(self.target.tolist()):
            top = token if row in self.correct_rows else (token + 1) % self.vocab_size
            logits[row, top] = 5.0
        return logits, None


def test_masked_token_accuracy_counts_top1_hits_per_objective():
    d = make_dictionary()
    sample = batch(d)
    is_ae = sample["ae_mask"][sample["net_input"]["masked_tokens"]].tolist()
    ae_rows = [row for row, ae in enumerate(is_ae) if ae]
    par_rows = [row for row, ae in enumerate(is_ae) if not ae]
    # three AE predictions and one PAR prediction right, every other one wrong
    model = RiggedModel(sample, len(d), ae_rows[:3] + par_rows[:1])
    _, _, log = AEPARCriterion(Task(d))(model, sample)
    assert int(log["ae_correct"]) == 3 and int(log["par_correct"]) == 1
    with metrics.aggregate() as agg:
        AEPARCriterion.reduce_metrics([log, log])  # two workers: counts add up
    values = agg.get_smoothed_values()
    assert values["ae_acc"] == pytest.approx(100 * 3 / len(ae_rows), abs=0.01)
    assert values["par_acc"] == pytest.approx(100 * 1 / len(par_rows), abs=0.01)


def test_masked_token_accuracy_of_a_real_model_matches_its_argmax():
    d = make_dictionary()
    model, sample = tiny_model(d), batch(d)
    _, _, log = AEPARCriterion(Task(d))(model, sample)
    logits, _ = model(**{**sample["net_input"], "masked_tokens": None})  # B x T x V
    hits = logits.argmax(-1) == sample["target"]
    assert int(log["ae_correct"]) == int(hits[sample["ae_mask"]].sum())
    assert int(log["par_correct"]) == int(hits[sample["par_mask"]].sum())
