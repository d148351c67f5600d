"""Criterion ``palm``: PALM's pre-training losses (encoder masked LM; decoder continuation)."""

from dataclasses import dataclass, field

from fairseq.criterions import FairseqCriterion, register_criterion
from fairseq.dataclass import FairseqDataclass

from ..losses import sequence_token_losses, token_losses, weighted_joint_loss
from .reduce import log_base2, log_perplexity, summed


def masked_token_count(sample) -> int:
    """The batch's number of masked context tokens, which the ``palm_pretrain`` collater counts on the CPU.

    Counting ``src_masked_tokens`` here instead would read a device tensor back every step.
    """
    if "num_masked" not in sample:
        raise ValueError(
            "--criterion palm needs the batch's 'num_masked' (the masked context tokens), "
            "which the palm_pretrain task's collater sets"
        )
    return sample["num_masked"]


@dataclass
class PALMCriterionConfig(FairseqDataclass):
    label_smoothing: float = field(
        default=0.0,
        metadata={"help": "label smoothing of the decoder's continuation loss (the MLM loss is unsmoothed)"},
    )


@register_criterion("palm", dataclass=PALMCriterionConfig)
class PALMCriterion(FairseqCriterion):
    """Stage 1: MLM loss per masked context token. Stage 2: continuation loss per target token
    under the pointer-generator distribution, PALM §2.2's stage-2 objective; with ``--mlm-weight`` > 0
    (this project's choice) plus that weight times the MLM loss per masked token.

    Needs the ``palm_pretrain`` task (its ``stage`` and ``mlm_weight``). Logs, in
    base 2: ``loss`` (what is optimised), ``mlm_loss`` (with ``mlm_ppl``) and, in
    stage 2, ``lm_loss`` (smoothed) and ``nll_loss`` (with ``ppl``) per continuation token.
    """

    def __init__(self, task, label_smoothing: float = 0.0):
        super().__init__(task)
        if not hasattr(task, "trains_decoder"):
            raise ValueError("--criterion palm needs --task palm_pretrain")
        self.label_smoothing = label_smoothing

    def forward(self, model, sample, reduce=True):
        net_input = sample["net_input"]
        masked = net_input["src_masked_tokens"]  # B x S
        mlm_target = sample["mlm_target"][masked]  # N, row-major like the model's MLM logits
        mlm_tokens = masked_token_count(sample)  # a host int: it picks the branch, no device read
        log = {"ntokens": sample["ntokens"], "nsentences": sample["nsentences"], "mlm_tokens": mlm_tokens}
        if not self.task.trains_decoder:
            # through forward (prev_output_tokens None), so distributed wrappers synchronise the gradients
            _, extra = model(
                net_input["src_tokens"], net_input["src_lengths"], None, src_masked_tokens=masked
            )
            logits = extra["encoder_mlm_logits"]
            mlm_sum = token_losses(logits, mlm_target)[1].sum()
            log.update(loss=mlm_sum.data, mlm_loss=mlm_sum.data, sample_size=mlm_tokens)
            return mlm_sum, mlm_tokens, log

        # the MLM head runs on every batch, one without a masked token too: each worker then logs the same
        # keys (fairseq all-reduces them as one list) and DDP sees every parameter used
        trains_mlm = self.task.trains_mlm
        lprobs, extra = model(
            net_input["src_tokens"],
            net_input["src_lengths"],
            net_input["prev_output_tokens"],
            src_masked_tokens=masked if trains_mlm else None,
        )
        lprobs = model.get_normalized_probs((lprobs, extra), log_probs=True)  # B x T x V
        lm, nll = sequence_token_losses(lprobs, sample["target"], self.padding_idx, self.label_smoothing)
        lm_sum, lm_tokens = lm.sum(), lm.numel()
        log.update(lm_loss=lm_sum.data, nll_loss=nll.sum().data, lm_tokens=lm_tokens, sample_size=lm_tokens)
        loss = lm_sum
        if trains_mlm:
            mlm_sum = token_losses(extra["encoder_mlm_logits"], mlm_target)[1].sum()  # 0 when none is masked
            log["mlm_loss"] = mlm_sum.data
            loss = weighted_joint_loss(lm_sum, lm_tokens, mlm_sum, mlm_tokens, self.task.cfg.mlm_weight)
            if mlm_tokens == 0:
                loss = loss + 0.0 * mlm_sum  # the head stays in the graph, with zero gradients
        log["loss"] = loss.data
        return loss, lm_tokens, log

    @staticmethod
    def reduce_metrics(logging_outputs) -> None:
        def total(key):
            return summed(logging_outputs, key)

        log_base2("loss", total("loss"), total("sample_size"))
        mlm_tokens, lm_tokens = total("mlm_tokens"), total("lm_tokens")
        if any("mlm_loss" in log for log in logging_outputs):
            log_base2("mlm_loss", total("mlm_loss"), mlm_tokens)
            log_perplexity("mlm_ppl", "mlm_loss")
        if lm_tokens:
            log_base2("lm_loss", total("lm_loss"), lm_tokens)
            log_base2("nll_loss", total("nll_loss"), lm_tokens)
            log_perplexity("ppl", "nll_loss")

    @staticmethod
    def logging_outputs_can_be_summed() -> bool:
        return True
