"""(source, target) pairs for s2s-ft: seeded target noise and the packed training layout."""

from typing import Dict, List, Optional

import numpy as np
import torch
from fairseq.data import data_utils

from ... import seq2seq_layout
from ...seq2seq_layout import FinetuneMethod, Seq2SeqSpec
from ..complete_batches import CompleteBatchesMixin
from ..masking import MaskedInputCorruption, MaskingConfig
from ..seeded import SeededDataset

# "[SOS]" and "[EOS]" around the source; the target ends with its own "[EOS]"
SOURCE_SPECIALS, TARGET_SPECIALS = 2, 1


class Seq2SeqDataset(CompleteBatchesMixin, SeededDataset):
    """Pairs from ``fairseq-preprocess`` (each line ends with ``</s>``) in s2s-ft's layout.

    ``spec`` (:class:`~unilm_fairseq.seq2seq_layout.Seq2SeqSpec`, the task's settled one) gives the
    method, the limits and the segment ids. Items hold ``source`` "[SOS] source [EOS]" (truncated to
    ``spec.max_source``) and ``target`` "target [EOS]" (truncated to ``spec.max_target``). With a
    target, the collater adds the packed layout of ``spec.method`` (see
    :mod:`unilm_fairseq.seq2seq_layout`), its noise seeded per (seed, epoch, index):

    * causal: the layout feeds the source's ``[EOS]`` as the target side's start token and every
      target token but the last (s2s-ft §2.1, Figure 1a); ``word_drop_prob`` of the fed target
      tokens (start token excluded) are corrupted 80/10/10, as the original s2s-ft code's causal
      training (``--mask_way v0``) does with its ``--target_mask_prob``; the predictions stay the
      original tokens. Off (0) by default;
    * masked: ``target_mask_prob`` of the target tokens (at least one, ``[EOS]``
      included) are predicted; their inputs are corrupted 80/10/10;
    * pseudo-masked: ``word_drop_prob`` of the real target inputs are corrupted
      80/10/10 the same way, s2s-ft's target masking for this method (every
      token is still predicted from its ``[P]``).

    ``spec.segments`` are the source and target segment ids of the layout (0/1, or 4/5 for UniLM v1,
    :func:`unilm_fairseq.seq2seq_layout.pretrained_segments`). ``indices`` selects which raw pairs are
    used (the task drops empty ones); sample ids are the raw line numbers. Sources without targets may
    carry ``constraints``, a row of packed lexical constraints per raw line (fairseq's
    ``pack_constraints``, ``fairseq-interactive --constraints``): batches then hold them as
    ``constraints``, zero-padded, for the constrained beam search.
    """

    def __init__(
        self,
        src,
        tgt,
        dictionary,
        spec: Seq2SeqSpec,
        seed: int = 1,
        indices: Optional[np.ndarray] = None,
        target_mask_prob: float = 0.5,
        word_drop_prob: float = 0.0,
        leave_unmasked_prob: float = MaskingConfig.leave_unmasked_prob,
        random_token_prob: float = MaskingConfig.random_token_prob,
        constraints: Optional[torch.Tensor] = None,
    ):
        super().__init__(seed)
        if constraints is not None and (tgt is not None or len(constraints) != len(src)):
            raise ValueError("constraints go with sources alone, one row per source line")
        self.constraints = constraints
        self.spec = spec
        self.src, self.tgt = src, tgt
        self.dictionary = dictionary
        self.target_mask_prob = target_mask_prob
        self.word_drop_prob = word_drop_prob
        self.mask_idx = dictionary.index("<mask>")
        self.corrupt = MaskedInputCorruption(
            dictionary, self.mask_idx, leave_unmasked_prob, random_token_prob
        )
        self.indices = np.arange(len(src)) if indices is None else np.asarray(indices)
        # src lines end with </s>; the item adds [SOS]
        self.src_sizes = np.minimum(np.asarray(src.sizes)[self.indices] + 1, spec.max_source)
        self.tgt_sizes = (
            np.minimum(np.asarray(tgt.sizes)[self.indices], spec.max_target) if tgt is not None else None
        )

    def __len__(self):
        return len(self.indices)

    @property
    def sizes(self):
        """Position ids an item uses: source plus target."""
        return self.src_sizes if self.tgt_sizes is None else self.src_sizes + self.tgt_sizes

    def size(self, index):
        return int(self.sizes[index])

    def num_tokens(self, index):
        return int(self.num_tokens_vec(np.array([index]))[0])

    def num_tokens_vec(self, indices):
        """Length of the packed sequence (pseudo masks double the target)."""
        if self.tgt_sizes is None:
            return self.src_sizes[indices]
        extra = self.tgt_sizes[indices] if self.spec.method == FinetuneMethod.PSEUDO_MASKED else 0
        return self.src_sizes[indices] + self.tgt_sizes[indices] + extra

    def __getitem__(self, index) -> Dict:
        raw = int(self.indices[index])
        d = self.dictionary
        body = self.src[raw][:-1][: self.spec.max_source - SOURCE_SPECIALS]
        source = torch.cat([torch.tensor([d.bos()]), body, torch.tensor([d.eos()])])
        item = {"id": raw, "source": source}
        if self.tgt is None:
            if self.constraints is not None:
                item["constraints"] = self.constraints[raw]
            return item
        target = self.tgt[raw][:-1][: self.spec.max_target - TARGET_SPECIALS]
        target = torch.cat([target, torch.tensor([d.eos()])])
        rng = self.rng(index)
        inputs, predict = target.clone(), torch.ones(len(target), dtype=torch.bool)
        if self.spec.method == FinetuneMethod.MASKED:
            chosen = rng.random(len(target)) < self.target_mask_prob
            if not chosen.any():
                chosen[rng.integers(len(target))] = True  # every example predicts something
            predict = torch.from_numpy(chosen)
            noisy = self.corrupt(target.numpy()[chosen], rng)
            inputs[predict] = torch.from_numpy(noisy)
        elif self.word_drop_prob > 0:
            # pseudo-masked feeds every target token, causal all but the last (its start token is the
            # source's [EOS], never corrupted, like s2s-ft's start token at target position 0)
            fed = len(target) - 1 if self.spec.causal else len(target)
            dropped = np.zeros(len(target), dtype=bool)
            dropped[:fed] = rng.random(fed) < self.word_drop_prob
            noisy = self.corrupt(target.numpy()[dropped], rng)
            inputs[torch.from_numpy(dropped)] = torch.from_numpy(noisy)
        item.update(target=target, target_inputs=inputs, predict=predict)
        return item

    def collater(self, samples: List[Dict]):
        if not samples:
            return {}
        pad = self.dictionary.pad()
        sources = [s["source"] for s in samples]
        batch = {
            "id": torch.LongTensor([s["id"] for s in samples]),
            "nsentences": len(samples),
            "net_input": {
                # "[SOS] source [EOS]", left-padded like fairseq's translation data, for generation
                "src_tokens": data_utils.collate_tokens(sources, pad, left_pad=True),
                "src_lengths": torch.LongTensor([len(s) for s in sources]),
            },
        }
        if "target" not in samples[0]:
            batch["ntokens"] = sum(len(s) for s in sources)
            if "constraints" in samples[0]:
                batch["constraints"] = data_utils.collate_tokens([s["constraints"] for s in samples], 0)
            return batch
        spec = self.spec
        layouts = [
            seq2seq_layout.build_example(
                s["source"], s["target_inputs"], s["predict"], spec.method, self.mask_idx, spec.segments
            )
            for s in samples
        ]
        layout = seq2seq_layout.collate_examples(layouts, pad, segment_pad=self.spec.source_segment)
        predicted = torch.cat([s["target"][s["predict"]] for s in samples])
        layout_target = torch.full_like(layout["tokens"], pad)
        layout_target[layout["masked_tokens"]] = predicted
        batch["net_input"].update(layout)
        batch["target"] = data_utils.collate_tokens([s["target"] for s in samples], pad)
        batch["layout_target"] = layout_target
        batch["ntokens"] = len(predicted)
        return batch
