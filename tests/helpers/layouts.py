"""Hand-built examples of the shared Transformer's layouts (PMLM, bidirectional) and their collater."""

from typing import Dict, List

import torch
from torch import Tensor

from unilm_fairseq import masks
from unilm_fairseq.data.pretraining.pmlm_dataset import CONTEXT, ORIGINAL, PSEUDO


def pmlm_example(dictionary, context_len: int, spans: List[List[int]], seed: int) -> Dict[str, Tensor]:
    """A PMLM example laid out as :class:`PMLMDataset` does.

    Context with ``[M]`` on every span, then per step ``i`` (the order of
    ``spans``) the ``[P]`` tokens and the originals of ``M_i``, with the position
    and segment ids of ``M_i``; the last step's originals are left out.
    Values are ``(L,)`` long, ``visible`` ``(L, L)`` bool.
    """
    mask_idx = dictionary.index("<mask>")
    gen = torch.Generator().manual_seed(seed)
    originals = torch.randint(dictionary.nspecial, mask_idx, (context_len,), generator=gen)
    segments = (torch.arange(context_len) >= context_len // 2).long()
    context = originals.clone()
    for span in spans:
        context[span] = mask_idx
    parts = {
        "tokens": [context],
        "target": [torch.full((context_len,), dictionary.pad())],
        "positions": [torch.arange(context_len)],
        "kind": [torch.full((context_len,), CONTEXT)],
        "step": [torch.zeros(context_len, dtype=torch.long)],
    }
    parts["target"][0][sum(spans, [])] = originals[sum(spans, [])]
    for i, span in enumerate(spans, start=1):
        span = torch.tensor(span)
        for kind in [PSEUDO] if i == len(spans) else [PSEUDO, ORIGINAL]:
            n = len(span)
            parts["tokens"].append(torch.full((n,), mask_idx) if kind == PSEUDO else originals[span])
            parts["target"].append(originals[span] if kind == PSEUDO else torch.full((n,), dictionary.pad()))
            parts["positions"].append(span)
            parts["kind"].append(torch.full((n,), kind))
            parts["step"].append(torch.full((n,), i))
    example = {key: torch.cat(value).long() for key, value in parts.items()}
    example["segments"] = segments[example["positions"]]
    appended = example["kind"] != CONTEXT
    example["visible"] = masks.pmlm_mask(
        context_len, example["step"][appended], example["kind"][appended] == PSEUDO
    )
    return example


def bidirectional_example(dictionary, length: int, seed: int) -> Dict[str, Tensor]:
    gen = torch.Generator().manual_seed(seed)
    return {
        "tokens": torch.randint(dictionary.nspecial, len(dictionary), (length,), generator=gen),
        "segments": (torch.arange(length) >= length // 2).long(),
        "positions": torch.arange(length),
        "visible": masks.bidirectional_mask(length),
    }


def collate(examples, pad: int, length=None):
    """Right-pad ``(Li,)`` examples into ``(B, L)`` inputs and a ``(B, L, L)`` mask."""
    length = length or max(len(e["tokens"]) for e in examples)

    def stack(key, value):
        out = torch.full((len(examples), length), value, dtype=torch.long)
        for b, e in enumerate(examples):
            out[b, : len(e[key])] = e[key]
        return out

    return (
        stack("tokens", pad),
        stack("segments", 0),
        stack("positions", 0),
        masks.pad_masks([e["visible"] for e in examples], length),
    )
