"""Criterion ``unilm``: UniLM v1's cloze losses of all four LM objectives plus NSP."""

from dataclasses import dataclass, field

import torch
from fairseq import metrics
from fairseq.criterions import FairseqCriterion, register_criterion
from fairseq.dataclass import FairseqDataclass

from ..data.pretraining.unilm_objectives import NO_NSP, OBJECTIVE_NAMES
from ..losses import grouped_sums, sentence_losses, token_losses
from .reduce import log_base2, log_perplexity, summed, summed_number


def nsp_scale(sample_size: int, nsp_count: torch.Tensor) -> torch.Tensor:
    """Masked tokens per NSP example, the weight of the batch's NSP loss sum; ``sample_size`` with none.

    With no NSP example the NSP sum is 0, so the scale's value does not matter there; clamping the
    count keeps it a device tensor (no host read to test it). ``torch.div`` divides in one rounding,
    as the host did: ``int / tensor`` would take the tensor's reciprocal first and round twice.
    """
    return torch.div(sample_size, nsp_count.clamp(min=1))


@dataclass
class UniLMCriterionConfig(FairseqDataclass):
    label_smoothing: float = field(
        default=0.0, metadata={"help": "label smoothing epsilon of the cloze loss, 0 disables"}
    )


@register_criterion("unilm", dataclass=UniLMCriterionConfig)
class UniLMCriterion(FairseqCriterion):
    """Masked-token cross-entropy of every objective, plus NSP for bidirectional pairs.

    ``sample_size`` is the number of masked tokens. The NSP sum is scaled by
    masked tokens per NSP example of the batch, so ``loss / sample_size`` is
    the mean cloze loss plus the mean NSP loss, as in BERT. Logged in base 2:
    ``{bidir,s2s,l2r,r2l}_loss`` per masked token of that objective,
    ``nsp_loss`` per NSP example, ``nsp_acc``; ``nsp_skipped`` counts the
    bidirectional examples without an NSP partner, ``trimmed`` the examples
    cut to ``--tokens-per-sample``. The counts stay device tensors in the logging
    outputs (no host read in forward); ``reduce_metrics`` turns their sums into numbers.
    """

    def __init__(self, task, label_smoothing: float = 0.0):
        super().__init__(task)
        self.label_smoothing = label_smoothing

    def forward(self, model, sample, reduce=True):
        net_input = sample["net_input"]
        predicted = net_input["masked_tokens"]  # B x T
        logits, extra = model(**net_input, nsp=True)  # N x V, row-major over `predicted`
        loss, nll = token_losses(logits, sample["target"][predicted], self.label_smoothing)
        objective = sample["objective"].unsqueeze(1).expand_as(predicted)[predicted]  # N
        per_objective = grouped_sums(loss, objective, len(OBJECTIVE_NAMES))
        counts = grouped_sums(objective.new_ones(objective.shape), objective, len(OBJECTIVE_NAMES))

        has_nsp = sample["nsp_target"].ne(NO_NSP)
        nsp_loss, nsp_correct = sentence_losses(extra["nsp_logits"][has_nsp], sample["nsp_target"][has_nsp])
        sample_size = sample["num_masked"]
        nsp_count = has_nsp.sum()
        total = loss.sum() + nsp_scale(sample_size, nsp_count) * nsp_loss.sum()
        logging_output = {
            "loss": total.data,
            "nll_loss": nll.sum().data,
            "nsp_loss": nsp_loss.sum().data,
            # counts stay on the device, as in fairseq's masked_lm: reading them here would stall each step
            "nsp_correct": nsp_correct.sum(),
            "nsp_examples": nsp_count,
            "nsp_skipped": sample["nsp_skipped"],
            "trimmed": sample["trimmed"],
            "ntokens": sample["ntokens"],
            "nsentences": sample["nsentences"],
            "sample_size": sample_size,
        }
        for i, name in enumerate(OBJECTIVE_NAMES):
            logging_output[f"{name}_loss"] = per_objective[i].data
            logging_output[f"{name}_tokens"] = counts[i]
        return total, sample_size, logging_output

    @staticmethod
    def reduce_metrics(logging_outputs) -> None:
        def total(key):
            return summed(logging_outputs, key)

        def number(key):  # a count as a host number: it tests for zero and weighs the meters
            return summed_number(logging_outputs, key)

        sample_size = total("sample_size")
        log_base2("loss", total("loss"), sample_size)
        log_base2("nll_loss", total("nll_loss"), sample_size)
        log_perplexity("ppl", "nll_loss")
        for name in OBJECTIVE_NAMES:
            count = number(f"{name}_tokens")
            if count:
                log_base2(f"{name}_loss", total(f"{name}_loss"), count)
        examples = number("nsp_examples")
        if examples:
            log_base2("nsp_loss", total("nsp_loss"), examples)
            metrics.log_scalar("nsp_acc", number("nsp_correct") / examples, examples, round=3)
        metrics.log_scalar("nsp_skipped", total("nsp_skipped"), round=1)
        metrics.log_scalar("trimmed", total("trimmed"), round=1)

    @staticmethod
    def logging_outputs_can_be_summed() -> bool:
        return True
