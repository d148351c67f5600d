"""PALM pre-training examples: (masked) context for the encoder, continuation for the decoder."""

from typing import Dict, List, Sequence

import numpy as np
import torch
from fairseq.data import data_utils
from fairseq.data.language_pair_dataset import collate

from ..complete_batches import CompleteBatchesMixin
from ..masking import MaskedInputCorruption, MaskingConfig
from ..seeded import SeededDataset
from .palm_fragments import Fragment


def bert_mask_positions(maskable: np.ndarray, rng: np.random.Generator, mask_prob: float) -> np.ndarray:
    """BERT's choice of masked positions: ``mask_prob`` of the maskable tokens, at least one.

    The count is ``mask_prob * n`` rounded randomly (up with probability equal to
    its fractional part), so it averages exactly ``mask_prob * n``.

    Args:
        maskable: ``(S,)`` bool, False for special tokens.
    Returns:
        ``(K,)`` sorted positions; empty only when nothing is maskable.
    """
    candidates = np.flatnonzero(maskable)
    if len(candidates) == 0:
        return candidates
    count = min(max(int(mask_prob * len(candidates) + rng.random()), 1), len(candidates))
    return np.sort(rng.choice(candidates, size=count, replace=False))


class PALMPretrainDataset(CompleteBatchesMixin, SeededDataset):
    """Pairs from :func:`~.palm_fragments.corpus_fragments` over binarized lines.

    Item ``i`` is fragment ``i``: ``source`` = its context plus ``</s>`` (with the
    BERT corruption of masked positions when ``mask_prob > 0``), ``target`` = its
    continuation plus ``</s>``, ``mlm_target`` = the original tokens at the masked
    source positions and pad elsewhere. Masks are seeded per (seed, epoch, index).

    Batches are fairseq's language-pair batches (``src_tokens``, ``src_lengths``,
    ``prev_output_tokens`` = the target shifted right with ``</s>`` first, and
    ``target``), plus ``net_input["src_masked_tokens"]`` ``(B, S)`` and
    ``mlm_target`` ``(B, S)`` in the same layout as ``src_tokens``.
    """

    def __init__(
        self,
        lines,
        fragments: Sequence[Fragment],
        dictionary,
        seed: int,
        mask_prob: float = MaskingConfig.mask_prob,
        leave_unmasked_prob: float = MaskingConfig.leave_unmasked_prob,
        random_token_prob: float = MaskingConfig.random_token_prob,
        left_pad_source: bool = False,
        shuffle: bool = True,
    ):
        super().__init__(seed)
        self.lines = lines
        self.fragment = np.array(
            [(f.first_line, f.num_lines, f.length, f.context) for f in fragments], dtype=np.int64
        ).reshape(-1, 4)
        self.pad, self.eos = dictionary.pad(), dictionary.eos()
        self.mask_idx = dictionary.index("<mask>")
        self.special = np.array([dictionary.bos(), dictionary.eos(), dictionary.pad(), dictionary.unk()])
        self.corrupt = MaskedInputCorruption(
            dictionary, self.mask_idx, leave_unmasked_prob, random_token_prob
        )
        self.mask_prob = mask_prob
        self.left_pad_source = left_pad_source
        self.shuffle = shuffle
        self.src_sizes = self.fragment[:, 3] + 1  # context + </s>
        self.tgt_sizes = self.fragment[:, 2] - self.fragment[:, 3] + 1  # continuation + </s>

    def __len__(self):
        return len(self.fragment)

    @property
    def sizes(self):
        return np.vstack((self.src_sizes, self.tgt_sizes)).T

    def size(self, index):
        return (int(self.src_sizes[index]), int(self.tgt_sizes[index]))

    def num_tokens(self, index):
        return int(max(self.src_sizes[index], self.tgt_sizes[index]))

    def num_tokens_vec(self, indices):
        return np.maximum(self.src_sizes[indices], self.tgt_sizes[indices])

    def ordered_indices(self):
        """Shuffled (seeded), then stably sorted by target then source length, as fairseq's pair data."""
        order = self.shuffled_indices() if self.shuffle else np.arange(len(self))
        order = order[np.argsort(self.tgt_sizes[order], kind="stable")]
        return order[np.argsort(self.src_sizes[order], kind="stable")]

    def filter_indices_by_size(self, indices, max_sizes):
        return data_utils.filter_paired_dataset_indices_by_size(
            self.src_sizes, self.tgt_sizes, indices, max_sizes
        )

    def text(self, index: int) -> torch.Tensor:
        """``(length,)`` the fragment's tokens: its lines without their ``</s>``, cut to length."""
        first, num, length, _ = self.fragment[index].tolist()
        pieces = []
        for line in range(first, first + num):
            tokens = self.lines[line]
            pieces.append(tokens[:-1] if len(tokens) and tokens[-1] == self.eos else tokens)
        return torch.cat(pieces)[:length].long()

    def __getitem__(self, index) -> Dict[str, torch.Tensor]:
        context = int(self.fragment[index, 3])
        text = self.text(index)
        eos = torch.tensor([self.eos])
        source = torch.cat([text[:context], eos])
        mlm_target = torch.full_like(source, self.pad)
        if self.mask_prob > 0:
            rng = self.rng(index)
            original = source.numpy()
            masked = bert_mask_positions(~np.isin(original, self.special), rng, self.mask_prob)
            corrupted = original.copy()
            corrupted[masked] = self.corrupt(original[masked], rng)
            mlm_target[masked] = source[masked]
            source = torch.from_numpy(corrupted)
        return {
            "id": index,
            "source": source,
            "target": torch.cat([text[context:], eos]),
            "mlm_target": mlm_target,
        }

    def collater(self, samples: List[Dict], pad_to_length=None):
        if not samples:
            return {}
        batch = collate(
            samples, self.pad, self.eos, left_pad_source=self.left_pad_source, pad_to_length=pad_to_length
        )
        by_id = {s["id"]: s for s in samples}
        ordered = [by_id[int(i)] for i in batch["id"]]  # collate sorts by source length
        mlm_target = data_utils.collate_tokens(
            [s["mlm_target"] for s in ordered],
            self.pad,
            left_pad=self.left_pad_source,
            pad_to_length=batch["net_input"]["src_tokens"].size(1),
        )
        batch["mlm_target"] = mlm_target
        batch["net_input"]["src_masked_tokens"] = mlm_target.ne(self.pad)
        batch["num_masked"] = int(batch["net_input"]["src_masked_tokens"].sum())
        return batch
