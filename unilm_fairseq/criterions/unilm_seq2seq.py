"""Criterion ``unilm_seq2seq``: (label-smoothed) cross-entropy on the predicted target tokens."""

from dataclasses import dataclass, field

from fairseq.criterions import FairseqCriterion, register_criterion
from fairseq.dataclass import FairseqDataclass

from ..losses import token_losses
from .reduce import log_base2, log_perplexity, summed


@dataclass
class UniLMSeq2SeqCriterionConfig(FairseqDataclass):
    label_smoothing: float = field(default=0.0, metadata={"help": "label smoothing epsilon, 0 disables"})


@register_criterion("unilm_seq2seq", dataclass=UniLMSeq2SeqCriterionConfig)
class UniLMSeq2SeqCriterion(FairseqCriterion):
    """Loss per predicted target token, logged like fairseq's label_smoothed_cross_entropy.

    Only the layout's query positions reach the LM head (``masked_tokens``);
    ``layout_target`` holds their tokens.
    """

    def __init__(self, task, label_smoothing: float = 0.0):
        super().__init__(task)
        self.label_smoothing = label_smoothing

    def forward(self, model, sample, reduce=True):
        predicted = sample["net_input"]["masked_tokens"]
        logits, _ = model(**sample["net_input"])  # N x V
        target = sample["layout_target"][predicted]
        loss, nll = token_losses(logits, target, self.label_smoothing)
        sample_size = sample["ntokens"]
        logging_output = {
            "loss": loss.sum().data,
            "nll_loss": nll.sum().data,
            "ntokens": sample["ntokens"],
            "nsentences": sample["nsentences"],
            "sample_size": sample_size,
        }
        return loss.sum(), sample_size, logging_output

    @staticmethod
    def reduce_metrics(logging_outputs) -> None:
        def total(key):
            return summed(logging_outputs, key)

        log_base2("loss", total("loss"), total("sample_size"))
        log_base2("nll_loss", total("nll_loss"), total("ntokens"))
        log_perplexity("ppl", "nll_loss")

    @staticmethod
    def logging_outputs_can_be_summed() -> bool:
        return True
