"""Every criterion's perplexities read as fairseq's do: two decimals, and ``inf`` when a loss diverges."""

import math

import pytest
import torch
from fairseq import metrics
from fairseq.logging.progress_bar import format_stat

from unilm_fairseq.criterions.ae_par import AEPARCriterion
from unilm_fairseq.criterions.palm import PALMCriterion
from unilm_fairseq.criterions.unilm import UniLMCriterion
from unilm_fairseq.criterions.unilm_seq2seq import UniLMSeq2SeqCriterion


def f32(value: float) -> torch.Tensor:
    """A summed loss as the criteria log it in ``forward``: a float32 tensor."""
    return torch.tensor(value, dtype=torch.float32)


def logging_output(criterion, nats: float, tokens: int) -> dict:
    """One logging output of ``criterion`` whose per-token loss is ``nats / tokens``."""
    common = {"loss": f32(nats), "nll_loss": f32(nats), "sample_size": tokens, "ntokens": tokens}
    if criterion is AEPARCriterion:
        return {**common, "ae_tokens": tokens, "par_tokens": 0, "ae_loss": f32(nats), "ae_correct": 0}
    if criterion is PALMCriterion:
        stage_one = {"mlm_loss": f32(nats), "mlm_tokens": tokens}
        return {**common, **stage_one, "lm_loss": f32(nats), "lm_tokens": tokens}
    return common


CRITERIA = [UniLMSeq2SeqCriterion, AEPARCriterion, UniLMCriterion, PALMCriterion]


def perplexities(criterion, nats: float, tokens: int) -> dict:
    with metrics.aggregate() as agg:
        criterion.reduce_metrics([logging_output(criterion, nats, tokens)])
    values = agg.get_smoothed_values()
    return {key: values[key] for key in ("ppl", "mlm_ppl") if key in values}


@pytest.mark.parametrize("criterion", CRITERIA, ids=lambda c: c.__name__)
def test_perplexity_has_two_decimals_in_the_progress_line(criterion):
    found = perplexities(criterion, nats=6.5137, tokens=1)  # 9.397 bits: 2 ** 9.397 = 674.18...
    assert set(found) == ({"ppl", "mlm_ppl"} if criterion is PALMCriterion else {"ppl"})
    for value in found.values():
        assert isinstance(value, float)
        assert value == pytest.approx(2 ** (6.5137 / math.log(2)), abs=0.01)
        assert format_stat(value) == f"{value:g}"
        assert len(format_stat(value).split(".")[1]) <= 2


@pytest.mark.parametrize("criterion", CRITERIA, ids=lambda c: c.__name__)
def test_diverged_loss_gives_infinite_perplexity(criterion):
    found = perplexities(criterion, nats=1e4, tokens=1)  # 14427 bits: 2 ** that overflows a double
    assert found and all(value == math.inf for value in found.values())
