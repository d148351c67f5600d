"""Criterion ``squad_span``: cross-entropy of an answer's start and end positions (extractive QA), and of
the answerability classifier when the task adds one."""

from dataclasses import dataclass, field

from fairseq import metrics
from fairseq.criterions import FairseqCriterion, register_criterion
from fairseq.dataclass import FairseqDataclass

from ..losses import answerability_targets, masked_span_scores, sentence_losses, span_losses
from .reduce import log_base2, summed, summed_number


@dataclass
class SquadSpanCriterionConfig(FairseqDataclass):
    answerability_weight: float = field(
        default=1.0,
        metadata={"help": "with --answerability-head: weight of the classifier's cross-entropy added to each "
                  "window's span loss (this project's choice: 1; UniLMv2 §4.2 names no weighting)"},
    )  # fmt: skip


@register_criterion("squad_span", dataclass=SquadSpanCriterionConfig)
class SquadSpanCriterion(FairseqCriterion):
    """BERT's SQuAD loss: the mean of the start and end cross-entropies, per window.

    Spans may start and end only at [SOS] (no answer) and at the window's passage tokens
    (``sample["span_mask"]``). The head is the task's ``--span-head-name``. Logs ``loss`` (base 2,
    per window) and ``start_acc``/``end_acc``/``span_acc`` (argmax of the masked scores hits the
    target; span: both).

    With the task's ``--answerability-head`` (UniLMv2 §4.2: "For SQuAD v2.0, we use the output vector
    of [SOS] to predict whether the instance is unanswerable or not"), each window adds
    ``--answerability-weight`` times the cross-entropy of that classifier, whose target is "no answer
    in this window" (:func:`unilm_fairseq.losses.answerability_targets`), and logs
    ``answerability_loss`` (base 2, per window) and ``answerability_acc``.

    The hit counts stay device tensors in the logging outputs, as fairseq's ``masked_lm`` keeps its counts:
    reading them back in ``forward`` would wait for the device every step.
    """

    def __init__(self, task, answerability_weight: float = 1.0):
        super().__init__(task)
        self.span_head_name = task.cfg.span_head_name
        self.answerability_head_name = getattr(task, "answerability_head_name", None)
        self.answerability_weight = answerability_weight

    def forward(self, model, sample, reduce=True):
        logits, extra = model(
            **sample["net_input"],
            span_head_name=self.span_head_name,
            answerability_head_name=self.answerability_head_name,
        )  # B x T x 2
        start, end = sample["target"][:, 0], sample["target"][:, 1]
        start_loss, end_loss = span_losses(logits, sample["span_mask"], start, end)
        loss = ((start_loss + end_loss) / 2).sum()
        predicted = masked_span_scores(logits.detach(), sample["span_mask"]).argmax(dim=1)  # B x 2
        start_hit, end_hit = predicted[:, 0].eq(start), predicted[:, 1].eq(end)
        sample_size = sample["nsentences"]
        logging_output = {
            "loss": loss.data,
            "start_correct": start_hit.sum(),
            "end_correct": end_hit.sum(),
            "span_correct": (start_hit & end_hit).sum(),
            "ntokens": sample["ntokens"],
            "nsentences": sample["nsentences"],
            "sample_size": sample_size,
        }
        if self.answerability_head_name is not None:
            class_loss, correct = sentence_losses(extra["answerability_logits"], answerability_targets(start))
            loss = loss + self.answerability_weight * class_loss.sum()
            logging_output.update(
                loss=loss.data,
                answerability_loss=class_loss.sum().data,
                answerability_correct=correct.sum(),
            )
        return loss, sample_size, logging_output

    @staticmethod
    def reduce_metrics(logging_outputs) -> None:
        def total(key):
            return summed(logging_outputs, key)

        def number(key):  # a count as a host number: it weighs the meters
            return summed_number(logging_outputs, key)

        windows = max(number("sample_size"), 1)
        log_base2("loss", total("loss"), windows)
        for name in ("start", "end", "span"):
            metrics.log_scalar(f"{name}_acc", 100.0 * number(f"{name}_correct") / windows, windows, round=1)
        if any("answerability_loss" in log for log in logging_outputs):
            log_base2("answerability_loss", total("answerability_loss"), windows)
            metrics.log_scalar(
                "answerability_acc", 100.0 * number("answerability_correct") / windows, windows, round=1
            )

    @staticmethod
    def logging_outputs_can_be_summed() -> bool:
        return True
