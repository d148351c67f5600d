"""Validation on ROUGE for the generation tasks: fairseq's ``--eval-bleu``, for summarization.

With ``--eval-rouge`` each validation batch is also decoded (``--eval-rouge-args``: a JSON object of
generation options, e.g. ``'{"beam": 4, "max_len_b": 48, "no_repeat_ngram_size": 3}'``), the hypotheses
and the batch's references are detokenized (``--eval-rouge-detok``) and scored with rouge-score (F1,
Porter stemming, as ``scripts/rouge_table.py``), and validation logs ``rouge_1``, ``rouge_2`` and
``rouge_l`` (x100, the mean over the validation pairs) beside the loss. So

    fairseq-train ... --eval-rouge --eval-rouge-args '{"beam": 4, "max_len_b": 48}' \\
        --best-checkpoint-metric rouge_l --maximize-best-checkpoint-metric --patience 3

keeps the checkpoint with the best validation ROUGE-L and stops when it has not improved for three
validations. The references are the binarized targets, cut to ``--max-target-positions`` as training cuts
them; the test set is scored against the whole references (``scripts/score.py --ref``,
``scripts/rouge_table.py``), so validation and test ROUGE differ a little.
"""

import json
from argparse import Namespace
from dataclasses import dataclass, field

from fairseq import metrics, utils
from fairseq.dataclass import ChoiceEnum, FairseqDataclass

from ..scoring.metrics import DETOKENIZERS, detokenize, rouge_scores

ROUGE_LOGGED = {"rouge1": "rouge_1", "rouge2": "rouge_2", "rougeL": "rouge_l"}
COUNT = "_rouge_pairs"
# how an unknown word reads in a reference and in a hypothesis: two words, so the two never match
UNKNOWN_IN_REF, UNKNOWN_IN_HYP = "UNKNOWNTOKENINREF", "UNKNOWNTOKENINHYP"
GENERATION_OPTIONS = {"beam", "lenpen", "min_len", "max_len_a", "max_len_b", "no_repeat_ngram_size", "unkpen"}


@dataclass
class RougeValidationConfig(FairseqDataclass):
    eval_rouge: bool = field(
        default=False, metadata={"help": "also decode the validation set and log its ROUGE-1/2/L (x100)"}
    )
    eval_rouge_args: str = field(
        default="{}",
        metadata={
            "help": "generation options for --eval-rouge, as a JSON object, e.g. "
            '\'{"beam": 4, "lenpen": 1.0, "min_len": 5, "max_len_b": 48, "no_repeat_ngram_size": 3}\''
        },
    )
    eval_rouge_detok: ChoiceEnum(list(DETOKENIZERS)) = field(
        default="wordpiece",
        metadata={
            "help": "how hypotheses and references become text before scoring (BERT pieces: wordpiece)"
        },
    )


def generation_args(text: str) -> Namespace:
    """``--eval-rouge-args`` as fairseq's generation options (beam 1 unless given)."""
    try:
        given = json.loads(text or "{}")
    except json.JSONDecodeError as err:
        raise ValueError(f"--eval-rouge-args {text!r}: not JSON ({err})") from err
    if not isinstance(given, dict):
        raise ValueError(f"--eval-rouge-args {text!r}: must be a JSON object")
    unknown = sorted(set(given) - GENERATION_OPTIONS)
    if unknown:
        known = ", ".join(sorted(GENERATION_OPTIONS))
        raise ValueError(f"--eval-rouge-args: unknown option {unknown[0]!r} (known: {known})")
    return Namespace(**{"beam": 1, **given})


def _total(logging_outputs, key: str):
    """The sum of ``key`` over the logging outputs, as a host number (they may be tensors)."""
    return utils.item(sum(log.get(key, 0) for log in logging_outputs))


class RougeValidationTask:
    """Mixin for a generation task whose config has a :class:`RougeValidationConfig`."""

    def build_model(self, cfg, from_checkpoint=False):
        model = super().build_model(cfg, from_checkpoint)
        if getattr(self.cfg, "eval_rouge", False):
            self.rouge_generator = self.build_generator([model], generation_args(self.cfg.eval_rouge_args))
        return model

    def valid_step(self, sample, model, criterion):
        loss, sample_size, logging_output = super().valid_step(sample, model, criterion)
        if getattr(self.cfg, "eval_rouge", False):
            hyps, refs = self.rouge_pairs(model, sample)
            scores = rouge_scores(hyps, refs)
            for name, logged in ROUGE_LOGGED.items():
                logging_output[f"_{logged}_sum"] = scores[name] * len(hyps)
            logging_output[COUNT] = len(hyps)
        return loss, sample_size, logging_output

    def rouge_pairs(self, model, sample):
        """The batch's decoded hypotheses and references, as text."""
        inputs = {
            "src_tokens": sample["net_input"]["src_tokens"],
            "src_lengths": sample["net_input"]["src_lengths"],
        }
        batch = {"id": sample["id"], "net_input": inputs, "nsentences": len(sample["id"])}
        hypotheses = self.inference_step(self.rouge_generator, [model], batch)
        dictionary, kind = self.target_dictionary, str(self.cfg.eval_rouge_detok)

        def text(ids, unknown):
            # an unknown word is written differently on each side, so it never matches (as fairseq's
            # --eval-bleu does): a generated <unk> would otherwise match every word the dictionary lacks
            ids = ids.int().cpu()
            return detokenize(
                dictionary.string(ids, unk_string=unknown, extra_symbols_to_ignore={dictionary.bos()}), kind
            )

        refs = [text(target[target.ne(dictionary.pad())], UNKNOWN_IN_REF) for target in sample["target"]]
        return [text(h[0]["tokens"], UNKNOWN_IN_HYP) for h in hypotheses], refs

    def reduce_metrics(self, logging_outputs, criterion):
        super().reduce_metrics(logging_outputs, criterion)
        if not getattr(self.cfg, "eval_rouge", False):
            return
        # host numbers: after fairseq's all-reduce (more than one worker) every logged value is a tensor
        pairs = _total(logging_outputs, COUNT)
        if pairs == 0:
            return
        metrics.log_scalar(COUNT, pairs)
        for logged in ROUGE_LOGGED.values():
            metrics.log_scalar(f"_{logged}_sum", _total(logging_outputs, f"_{logged}_sum"))
            metrics.log_derived(logged, lambda meters, key=logged: round(
                100 * float(meters[f"_{key}_sum"].sum) / max(float(meters[COUNT].sum), 1), 2
            ))  # fmt: skip
