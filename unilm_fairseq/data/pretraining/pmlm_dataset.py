"""UniLMv2 pseudo-masked LM examples: "[context with [M]] + appended [P]/original blocks"."""

from typing import Dict, List

import numpy as np
import torch

from ... import masks
from ..complete_batches import CompleteBatchesMixin
from ..masking import MaskedInputCorruption, MaskingConfig
from ..seeded import SeededDataset
from .blockwise_masking import blockwise_mask_spans, span_positions

CONTEXT, ORIGINAL, PSEUDO = 0, 1, 2
# the tensors of an item, in order
FIELDS = ("source", "target", "positions", "segments", "kind", "step")


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
        maskable = tokens != self.special[0]  # not a special token (np.isin costs more for three ids)
        for special in self.special[1:]:
            maskable &= tokens != special
        starts, lengths = blockwise_mask_spans(maskable, rng, **self.mask_args)
        masked = span_positions(starts, lengths)  # every step's positions, in factorization order
        if not self.blockwise and len(masked):
            masked = rng.permutation(masked)  # one token per step, in a random order
            lengths = np.ones(len(masked), dtype=np.int64)
        step = np.repeat(np.arange(1, len(lengths) + 1), lengths)  # the step of each masked position

        n, m = len(tokens), len(masked)
        appended = 2 * m - int(lengths[-1]) if self.par and m else 0  # the last step has no originals
        # one (6, n + 2m) block, a row per field; the item's tensors are its rows (views)
        fields = np.empty((len(FIELDS), n + (2 * m if appended else 0)), dtype=np.int64)
        source, target, positions, segment, kind, step_of = fields
        source[:n] = tokens
        originals = tokens[masked]
        if self.ae:
            source[masked] = self.corrupt(originals, rng)
        else:
            source[masked] = self.mask_idx
        # masked positions whose original token any [P] can read in the context
        shown = source[masked] == originals if self.par_skip_unchanged else np.zeros(m, dtype=bool)
        target[:n] = self.pad
        if self.ae:
            target[masked] = originals
        positions[:n] = np.arange(n)
        segment[:n] = segments
        kind[:n] = CONTEXT
        step_of[:n] = 0
        if appended:
            self._append(fields, n, masked, lengths, step, originals, shown, segments)
        out: Dict = dict(zip(FIELDS, torch.from_numpy(fields[:, : n + appended]).unbind(0)))
        out["id"] = index
        out["num_masked"] = m
        out["num_par_skipped"] = int(shown.sum())
        return out

    def _append(self, fields, n, masked, lengths, step, originals, shown, segments) -> None:
        """Writes the appended part (UniLMv2 §3.2, Figure 4) into ``fields`` from column ``n``, by
        scatter rather than step by step.

        Step ``i`` (``lengths[i - 1]`` masked positions, the ``i``-th run of ``masked``) takes
        ``2 * lengths[i - 1]`` columns: its ``[P]`` tokens, then its originals. The caller cuts the
        last step's originals off the end.
        """
        before = np.repeat(np.cumsum(lengths) - lengths, lengths)  # masked tokens of the earlier steps
        pseudo = n + before + np.arange(len(masked))  # column of each [P]: 2 * before + offset in its step
        original = pseudo + np.repeat(lengths, lengths)
        source, target, positions, segment, kind, step_of = fields
        source[pseudo], source[original] = self.mask_idx, originals
        target[pseudo], target[original] = np.where(shown, self.pad, originals), self.pad
        positions[pseudo], positions[original] = masked, masked
        segment[pseudo] = segment[original] = segments[masked]
        kind[pseudo], kind[original] = PSEUDO, ORIGINAL
        step_of[pseudo], step_of[original] = step, step

    def collater(self, samples: List[Dict]):
        """Batch as ``[contexts, padded | appended tokens, padded]``.

        Every appended part starts at column ``context_len`` (the longest
        context), so the model can run the contexts first and let the appended
        tokens reuse their keys and values (``net_input["context_len"]``).

        Each field is scattered once for the whole batch (one concatenation, one
        indexed copy), and the attention mask is built from the batch's step and
        kind columns by :func:`~unilm_fairseq.masks.pmlm_batch_mask`.
        """
        if not samples:
            return {}
        pad = self.pad
        bsz = len(samples)
        kind_flat = np.concatenate([s["kind"].numpy() for s in samples])
        lengths = np.array([len(s["kind"]) for s in samples])
        example = np.repeat(np.arange(bsz), lengths)
        context_lengths = np.bincount(example[kind_flat == CONTEXT], minlength=bsz)
        appended_lengths = lengths - context_lengths
        width = int(context_lengths.max())
        length = width + int(appended_lengths.max())
        # token t of example b goes to column t while in the context, to width + (t - C_b) after it
        local = np.arange(len(kind_flat)) - np.repeat(np.cumsum(lengths) - lengths, lengths)
        own_context = context_lengths[example]
        destination = example * length + np.where(local < own_context, local, local + (width - own_context))

        def stack(key, pad_value, flat=None):
            flat = np.concatenate([s[key].numpy() for s in samples]) if flat is None else flat
            out = np.full(bsz * length, pad_value, dtype=flat.dtype)
            out[destination] = flat
            return torch.from_numpy(out.reshape(bsz, length))

        kind = stack("kind", CONTEXT, kind_flat)
        target = stack("target", pad)
        step = stack("step", 0)
        visible = masks.pmlm_batch_mask(
            torch.from_numpy(context_lengths),
            torch.from_numpy(appended_lengths),
            step[:, width:],
            kind[:, width:] == PSEUDO,
        )
        predicted = target.ne(pad)
        ae_mask = predicted & kind.eq(CONTEXT)
        contexts = context_lengths.tolist()  # Python ints
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
