"""Criterion ``ae_par``: UniLMv2's L = L_AE + L_PAR (Eq. 7) from one forward pass."""

from dataclasses import dataclass, field

from fairseq import metrics
from fairseq.criterions import FairseqCriterion, register_criterion
from fairseq.dataclass import FairseqDataclass

from ..losses import token_losses
from .reduce import log_base2, log_perplexity, summed_number


@dataclass
class AEPARConfig(FairseqDataclass):
    label_smoothing: float = field(default=0.0, metadata={"help": "label smoothing epsilon, 0 disables"})


@register_criterion("ae_par", dataclass=AEPARConfig)
class AEPARCriterion(FairseqCriterion):
    """Sum of AE losses (on [M]) and PAR losses (on [P]) over the masked tokens.

    ``sample_size`` is the number of masked tokens, so ``loss / sample_size``
    is the per-token AE loss plus the per-token PAR loss (each objective
    predicts every masked token once). ``ae_loss`` and ``par_loss`` are logged
    per predicted token, in base 2 like fairseq's other losses.

    With the task's ``--par-skip-unchanged`` the PAR loss leaves out the masked
    tokens whose original stays in the context. Every masked token is still in
    the loss through AE, so ``sample_size`` stays the number of masked tokens:
    the remaining PAR terms keep the weight they have without the option (this
    project's choice; dividing PAR by its own count would up-weight them by
    masked / PAR tokens). Then ``loss = ae_loss + par_loss * par_tokens /
    sample_size``, and ``par_skipped`` logs the fraction of masked tokens left
    out of PAR.

    ``ae_acc`` and ``par_acc`` are masked-token top-1 accuracies in percent:
    the share of each objective's predictions whose highest-scoring token is
    the original one (the held-out probe of how well the model fills masks).
    """

    def __init__(self, task, label_smoothing: float = 0.0):
        super().__init__(task)
        self.label_smoothing = label_smoothing
        # logged on every batch while the option is on, zeros included, so the mean is over all of them
        self.logs_skipped = bool(getattr(getattr(task, "cfg", None), "par_skip_unchanged", False))

    def forward(self, model, sample, reduce=True):
        predicted = sample["net_input"]["masked_tokens"]
        logits, _ = model(**sample["net_input"])  # N x V, row-major over `predicted`
        target = sample["target"][predicted]
        is_ae = sample["ae_mask"][predicted]
        loss, nll = token_losses(logits, target, self.label_smoothing)
        ae_loss, par_loss = loss[is_ae].sum(), loss[~is_ae].sum()
        correct = logits.argmax(dim=-1) == target  # N
        ae_correct, par_correct = (correct & is_ae).sum(), (correct & ~is_ae).sum()
        # AE is on whenever PAR targets are skipped, so every masked token is in the loss
        sample_size = sample["num_masked"]
        logging_output = {
            "loss": (ae_loss + par_loss).data,
            "nll_loss": nll.sum().data,
            "ae_loss": ae_loss.data,
            "par_loss": par_loss.data,
            "ae_correct": ae_correct.data,
            "par_correct": par_correct.data,
            # counts stay on the device, as in fairseq's masked_lm: reading them here would stall each step
            "ae_tokens": is_ae.sum(),
            "par_tokens": (~is_ae).sum(),
            "ntokens": sample["ntokens"],
            "nsentences": sample["nsentences"],
            "sample_size": sample_size,
        }
        if self.logs_skipped:
            logging_output["par_skipped"] = sample["num_par_skipped"]
        return ae_loss + par_loss, sample_size, logging_output

    @staticmethod
    def reduce_metrics(logging_outputs) -> None:
        def total(key):
            return summed_number(logging_outputs, key)

        sample_size = total("sample_size")
        predicted = total("ae_tokens") + total("par_tokens")
        log_base2("loss", total("loss"), sample_size)
        log_base2("nll_loss", total("nll_loss"), predicted)
        log_perplexity("ppl", "nll_loss")
        for name in ("ae", "par"):
            count = total(f"{name}_tokens")
            if count:
                log_base2(f"{name}_loss", total(f"{name}_loss"), count)
                metrics.log_scalar(f"{name}_acc", 100.0 * total(f"{name}_correct") / count, count, round=2)
        if any("par_skipped" in log for log in logging_outputs):
            fraction = total("par_skipped") / max(sample_size, 1)
            metrics.log_scalar("par_skipped", fraction, sample_size, round=3)

    @staticmethod
    def logging_outputs_can_be_summed() -> bool:
        return True
