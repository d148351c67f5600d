"""Criterion ``squad_span``: cross-entropy of an answer's start and end positions (extractive QA)."""

from fairseq import metrics
from fairseq.criterions import FairseqCriterion, register_criterion

from ..losses import masked_span_scores, span_losses
from .reduce import log_base2, summed


@register_criterion("squad_span")
class SquadSpanCriterion(FairseqCriterion):
    """BERT's SQuAD loss: the mean of the start and end cross-entropies, per window.

    Spans may start and end only at [SOS] (no answer) and at the window's passage tokens
    (``sample["span_mask"]``). The head is the task's ``--span-head-name``. Logs ``loss`` (base 2,
    per window) and ``start_acc``/``end_acc``/``span_acc`` (argmax of the masked scores hits the
    target; span: both).
    """

    def __init__(self, task):
        super().__init__(task)
        self.span_head_name = task.cfg.span_head_name

    def forward(self, model, sample, reduce=True):
        logits, _ = model(**sample["net_input"], span_head_name=self.span_head_name)  # B x T x 2
        start, end = sample["target"][:, 0], sample["target"][:, 1]
        start_loss, end_loss = span_losses(logits, sample["span_mask"], start, end)
        loss = ((start_loss + end_loss) / 2).sum()
        predicted = masked_span_scores(logits.detach(), sample["span_mask"]).argmax(dim=1)  # B x 2
        start_hit, end_hit = predicted[:, 0].eq(start), predicted[:, 1].eq(end)
        sample_size = sample["nsentences"]
        logging_output = {
            "loss": loss.data,
            "start_correct": start_hit.sum().item(),
            "end_correct": end_hit.sum().item(),
            "span_correct": (start_hit & end_hit).sum().item(),
            "ntokens": sample["ntokens"],
            "nsentences": sample["nsentences"],
            "sample_size": sample_size,
        }
        return loss, sample_size, logging_output

    @staticmethod
    def reduce_metrics(logging_outputs) -> None:
        def total(key):
            return summed(logging_outputs, key)

        windows = max(total("sample_size"), 1)
        log_base2("loss", total("loss"), windows)
        for name in ("start", "end", "span"):
            metrics.log_scalar(f"{name}_acc", 100.0 * total(f"{name}_correct") / windows, windows, round=1)

    @staticmethod
    def logging_outputs_can_be_summed() -> bool:
        return True
