"""The PMLM data pipeline as it was before it was vectorized: blockwise masking with one numpy call per
draw, the appended part step by step, per-example masks scattered into the batch and fields padded one
example at a time. The vectorized pipeline must give exactly these items and batches for every seed."""

import math
from typing import Dict, List

import numpy as np
import torch
from fairseq.data import data_utils

from unilm_fairseq import masks
from unilm_fairseq.data.pretraining.blockwise_masking import ATTEMPTS_PER_TOKEN, FLOAT_SLACK
from unilm_fairseq.data.pretraining.pmlm_dataset import CONTEXT, ORIGINAL, PSEUDO
from unilm_fairseq.data.pretraining.segment_pairs import cut_between_sentences, pair_tokens, split_sentences


def reference_mask_steps(maskable, rng, mask_prob=0.15, span_prob=0.4, min_span=2, max_span=6):
    """Algorithm 1 with ``rng.random()`` and ``rng.integers()`` called once per draw."""
    n = len(maskable)
    n_maskable = int(maskable.sum())
    if n_maskable == 0:
        return []
    budget = max(1, math.ceil(mask_prob * n_maskable - FLOAT_SLACK))
    taken = np.zeros(n, dtype=bool)
    steps = []
    covered = 0
    for _ in range(ATTEMPTS_PER_TOKEN * n):
        if covered >= budget:
            break
        length = int(rng.integers(min_span, max_span + 1)) if rng.random() < span_prob else 1
        if length > n:
            continue
        start = int(rng.integers(0, n - length + 1))
        span = slice(start, start + length)
        if not maskable[span].all() or taken[span].any():
            continue
        taken[span] = True
        steps.append(np.arange(start, start + length))
        covered += length
    if covered < budget:
        free = np.flatnonzero(maskable & ~taken)
        for position in rng.permutation(free)[: budget - covered]:
            steps.append(np.array([position]))
    order = rng.permutation(len(steps))
    return [steps[i] for i in order]


def reference_pair(dataset, index) -> Dict[str, torch.Tensor]:
    """``SegmentPairDataset[index]`` through the list of sentences."""
    block = dataset.dataset[index].numpy()
    sentences = split_sentences(block, dataset.eos)
    if len(sentences) > 1:
        first, second = cut_between_sentences(sentences, np.random.default_rng((dataset.seed, index)))
    else:
        first = sentences[0] if sentences else block[:0]
        second = block[:0]
    tokens, source_len, _ = pair_tokens(first, second, dataset.bos, dataset.eos, dataset.max_length)
    segments = (np.arange(len(tokens)) >= source_len).astype(np.int64)
    return {"tokens": torch.from_numpy(tokens), "segments": torch.from_numpy(segments)}


def reference_item(dataset, index) -> Dict:
    """``PMLMDataset[index]``, one factorization step at a time."""
    item = dataset.dataset[index]
    tokens, segments = item["tokens"].numpy(), item["segments"].numpy()
    rng = dataset.rng(index)
    maskable = ~np.isin(tokens, dataset.special)
    steps = reference_mask_steps(maskable, rng, **dataset.mask_args)
    if not dataset.blockwise:
        steps = [np.array([p]) for p in rng.permutation(np.concatenate(steps))] if steps else []
    masked = np.concatenate(steps) if steps else np.zeros(0, dtype=np.int64)
    context = tokens.copy()
    if dataset.ae:
        context[masked] = dataset.corrupt(tokens[masked], rng)
    else:
        context[masked] = dataset.mask_idx
    shown = masked[context[masked] == tokens[masked]] if dataset.par_skip_unchanged else masked[:0]
    n = len(tokens)
    pad = dataset.pad
    parts = {
        "source": [context],
        "target": [np.full(n, pad)],
        "positions": [np.arange(n)],
        "segments": [segments],
        "kind": [np.full(n, CONTEXT)],
        "step": [np.zeros(n, dtype=np.int64)],
    }
    if dataset.ae:
        parts["target"][0][masked] = tokens[masked]
    if dataset.par:
        for i, span in enumerate(steps, start=1):
            for kind in [PSEUDO] if i == len(steps) else [PSEUDO, ORIGINAL]:
                pseudo = kind == PSEUDO
                parts["source"].append(np.full(len(span), dataset.mask_idx) if pseudo else tokens[span])
                target = np.where(np.isin(span, shown), pad, tokens[span])
                parts["target"].append(target if pseudo else np.full(len(span), pad))
                parts["positions"].append(span)
                parts["segments"].append(segments[span])
                parts["kind"].append(np.full(len(span), kind))
                parts["step"].append(np.full(len(span), i))
    out = {k: torch.from_numpy(np.concatenate(v).astype(np.int64)) for k, v in parts.items()}
    out["id"] = index
    out["num_masked"] = len(masked)
    out["num_par_skipped"] = len(shown)
    return out


def reference_collate(dataset, samples: List[Dict]) -> Dict:
    """``PMLMDataset.collater``: every field padded one example at a time, every mask built alone by
    ``masks.pmlm_mask`` and scattered into the batch by ``masks.pad_masks_after_context``."""
    if not samples:
        return {}
    pad = dataset.pad
    contexts = [int((s["kind"] == CONTEXT).sum()) for s in samples]

    def stack(key, pad_value):
        head = data_utils.collate_tokens([s[key][:c] for s, c in zip(samples, contexts)], pad_value)
        tail = [s[key][c:] for s, c in zip(samples, contexts)]
        if max(len(t) for t in tail) == 0:
            return head
        return torch.cat([head, data_utils.collate_tokens(tail, pad_value)], dim=1)

    visible = masks.pad_masks_after_context(
        [masks.pmlm_mask(c, s["step"][c:], s["kind"][c:] == PSEUDO) for s, c in zip(samples, contexts)],
        contexts,
    )
    kind = stack("kind", CONTEXT)
    target = stack("target", pad)
    predicted = target.ne(pad)
    ae_mask = predicted & kind.eq(CONTEXT)
    return {
        "id": torch.LongTensor([s["id"] for s in samples]),
        "nsentences": len(samples),
        "ntokens": sum(contexts),
        "num_masked": sum(s["num_masked"] for s in samples),
        "num_par_skipped": sum(s["num_par_skipped"] for s in samples),
        "net_input": {
            "tokens": stack("source", pad),
            "segments": stack("segments", 0),
            "positions": stack("positions", 0),
            "attn_mask": visible,
            "masked_tokens": predicted,
            "context_len": max(contexts),
        },
        "target": target,
        "ae_mask": ae_mask,
        "par_mask": predicted & ~ae_mask,
    }
