"""UniLMv2 pseudo-masked LM examples: "[context with [M]] + appended [P]/original blocks"."""

from typing import Dict, List

import numpy as np
import torch
from fairseq.data import data_utils

from ... import masks
from ..complete_batches import CompleteBatchesMixin
from ..masking import MaskedInputCorruption, MaskingConfig
from ..seeded import SeededDataset
from .blockwise_masking import blockwise_mask_steps

CONTEXT, ORIGINAL, PSEUDO = 0, 1, 2


class PMLMDataset(CompleteBatchesMixin, SeededDataset):
    """Blockwise masking plus the PMLM layout, seeded per (seed, epoch, index).

    Each item of the wrapped dataset (``{"tokens", "segments"}``) becomes:

    * context: the tokens, with masked positions corrupted 80/10/10 when the AE
      objective is on (``[M]`` only otherwise), positions ``0..N-1``;
    * appended (PAR objective): for each factorization step ``i`` in order, the
      ``[P]`` tokens of ``M_i`` then the originals of ``M_i``, all with the
      position and segment ids of ``M_i``. The last step's originals are left
      out: no prediction may see them.

    AE targets sit on the context's masked positions, PAR targets on the
    ``[P]`` tokens. With ``blockwise=False`` every masked token is its own step
    (the paper's AE+AR ablation).

    With ``par_skip_unchanged`` (this project's choice, off by default: the
    paper applies 80/10/10 and says nothing more), a masked position whose
    context token equals its original (the "unchanged" 10%, and the rare
    random replacement that draws the original back) keeps its ``[P]`` and its
    AE target but gets no PAR target: every ``[P]`` sees the context, so its
    own ``[P]`` would read the answer there. Random replacements that differ
    from the original hide it, so they stay in the PAR loss.
    """

    def __init__(
        self,
        dataset,
        dictionary,
        mask_idx: int,
        seed: int,
        mask_prob=MaskingConfig.mask_prob,
        span_prob=0.4,
        min_span=2,
        max_span=6,
        leave_unmasked_prob=MaskingConfig.leave_unmasked_prob,
        random_token_prob=MaskingConfig.random_token_prob,
        ae=True,
        par=True,
        blockwise=True,
        par_skip_unchanged=False,
    ):
        super().__init__(seed)
        self.dataset = dataset
        if not (ae or par):
            raise ValueError("at least one of the AE and PAR objectives must be on")
        if par_skip_unchanged and not (ae and par):
            raise ValueError(
                "par_skip_unchanged needs both the AE and PAR objectives: only the AE corruption leaves "
                "masked tokens unchanged in the context, and only PAR targets are skipped"
            )
        self.pad = dictionary.pad()
        self.special = np.array([dictionary.bos(), dictionary.eos(), dictionary.pad()])
        self.mask_idx = mask_idx
        self.mask_args = dict(mask_prob=mask_prob, span_prob=span_prob, min_span=min_span, max_span=max_span)
        self.ae, self.par, self.blockwise = ae, par, blockwise
        self.par_skip_unchanged = par_skip_unchanged
        self.corrupt = MaskedInputCorruption(dictionary, mask_idx, leave_unmasked_prob, random_token_prob)
        context = np.asarray(dataset.sizes)
        # batching needs a fixed upper bound: the masked budget can overshoot by one span
        most_masked = np.ceil(mask_prob * context).astype(np.int64) + max_span
        self._num_tokens = context + (2 * most_masked if par else 0)

    def __len__(self):
        return len(self.dataset)

    @property
    def sizes(self):
        """Context lengths: the number of position ids an item uses."""
        return self.dataset.sizes

    def size(self, index):
        return self.dataset.size(index)

    def num_tokens(self, index):
        return int(self._num_tokens[index])

    def num_tokens_vec(self, indices):
        return self._num_tokens[indices]

    def __getitem__(self, index) -> Dict[str, torch.Tensor]:
        item = self.dataset[index]
        tokens, segments = item["tokens"].numpy(), item["segments"].numpy()
        rng = self.rng(index)
        maskable = ~np.isin(tokens, self.special)
        steps = blockwise_mask_steps(maskable, rng, **self.mask_args)
        if not self.blockwise:
            steps = [np.array([p]) for p in rng.permutation(np.concatenate(steps))] if steps else []
        masked = np.concatenate(steps) if steps else np.zeros(0, dtype=np.int64)

        context = tokens.copy()
        if self.ae:
            context[masked] = self.corrupt(tokens[masked], rng)
        else:
            context[masked] = self.mask_idx
        # masked positions whose original token any [P] can read in the context
        shown = masked[context[masked] == tokens[masked]] if self.par_skip_unchanged else masked[:0]
        n = len(tokens)
        parts = {
            "source": [context],
            "target": [np.full(n, self.pad)],
            "positions": [np.arange(n)],
            "segments": [segments],
            "kind": [np.full(n, CONTEXT)],
            "step": [np.zeros(n, dtype=np.int64)],
        }
        if self.ae:
            parts["target"][0][masked] = tokens[masked]
        if self.par:
            for i, span in enumerate(steps, start=1):
                kinds = [PSEUDO] if i == len(steps) else [PSEUDO, ORIGINAL]
                for kind in kinds:
                    parts["source"].append(
                        np.full(len(span), self.mask_idx) if kind == PSEUDO else tokens[span]
                    )
                    target = np.where(np.isin(span, shown), self.pad, tokens[span])
                    parts["target"].append(target if kind == PSEUDO else np.full(len(span), self.pad))
                    parts["positions"].append(span)
                    parts["segments"].append(segments[span])
                    parts["kind"].append(np.full(len(span), kind))
                    parts["step"].append(np.full(len(span), i))
        out = {k: torch.from_numpy(np.concatenate(v).astype(np.int64)) for k, v in parts.items()}
        out["id"] = index
        out["num_masked"] = len(masked)
        out["num_par_skipped"] = len(shown)
        return out

    def collater(self, samples: List[Dict]):
        """Batch as ``[contexts, padded | appended tokens, padded]``.

        Every appended part starts at column ``context_len`` (the longest
        context), so the model can run the contexts first and let the appended
        tokens reuse their keys and values (``net_input["context_len"]``).
        """
        if not samples:
            return {}
        pad = self.pad
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
