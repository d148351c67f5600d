"""Scoring given targets: each target token's log-probability, read where decoding predicts it.

The layout is the training forward of the model's method without target noise, so each token sees
what decoding gives it, the source and the target tokens before it. Causal: the causal layout (the
start token and ``t_1 .. t_{n-1}`` fed, each predicting the next). Pseudo-masked and masked: the
pseudo-masked layout, whose ``[P]`` at ``j`` predicts ``t_j`` from the real tokens before it; for the
masked method that ``[P]`` is the ``[M]`` it decodes with, what a masked training example predicts at
``j`` when ``t_j`` is its only ``[M]``. Both the Python API's ``score`` and ``fairseq-generate
--score-reference`` read the log-probabilities here.
"""

import dataclasses
import math
from typing import List, Sequence

import numpy as np
import torch
import torch.nn.functional as F
from fairseq.data import ListDataset
from torch import Tensor, nn

from ...seq2seq_layout import FinetuneMethod, Seq2SeqSpec
from .seq2seq_dataset import Seq2SeqDataset


def scoring_dataset(
    spec: Seq2SeqSpec, limits: Seq2SeqSpec, dictionary, sources: Sequence[Tensor], targets: Sequence[Tensor]
):
    """The pairs in the scoring layout of ``spec``'s method and segment ids, cut to ``limits``' lengths.

    Args:
        spec: the model's s2s-ft spec (its method and segment ids).
        limits: the task's settled spec, whose ``max_source``/``max_target`` the pairs are truncated to
            (one pair of limits for an ensemble).
        sources, targets: ids ending with ``</s>``, as ``fairseq-preprocess`` writes a line.
    Returns:
        a :class:`Seq2SeqDataset` whose collated batches :func:`target_log_probs` reads.
    """
    layout = FinetuneMethod.CAUSAL if spec.causal else FinetuneMethod.PSEUDO_MASKED
    spec = dataclasses.replace(
        spec, method=layout, max_source=limits.max_source, max_target=limits.max_target
    )
    return Seq2SeqDataset(
        ListDataset(sources, np.array([len(s) for s in sources])),
        ListDataset(targets, np.array([len(t) for t in targets])),
        dictionary, spec, word_drop_prob=0.0,
    )  # fmt: skip


def target_log_probs(model: nn.Module, batch: dict) -> List[Tensor]:
    """A :func:`scoring_dataset` batch's training forward (the criterion's call) -> each row's ``(T,)``
    float32 target log-probabilities, ``</s>`` included."""
    logits, _ = model(**batch["net_input"])  # N x V, the layout's queries in row-major order
    queries = batch["net_input"]["masked_tokens"]
    gold = batch["layout_target"][queries]
    picked = F.log_softmax(logits.float(), dim=-1).gather(1, gold.unsqueeze(1)).squeeze(1)
    return list(picked.split(queries.sum(1).tolist()))


def average_over_models(per_model: Sequence[Sequence[Tensor]]) -> List[Tensor]:
    """Per target, the log of the models' mean probability of each token, as fairseq's ensembles average:
    ``per_model[m][i]`` is model ``m``'s :func:`target_log_probs` of target ``i``."""
    return [torch.logsumexp(torch.stack(scores), 0) - math.log(len(per_model)) for scores in zip(*per_model)]
