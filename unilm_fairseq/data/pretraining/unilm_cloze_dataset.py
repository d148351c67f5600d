"""UniLM v1 cloze task over objective examples: masking, corruption and batching."""

from typing import Dict, List

import numpy as np
import torch
from fairseq.data import data_utils

from ... import masks
from ..complete_batches import CompleteBatchesMixin
from ..masking import MaskedInputCorruption, MaskingConfig
from ..seeded import SeededDataset
from .cloze_masking import cloze_mask_picks
from .unilm_objectives import CLOZE_STREAM, LEFT_TO_RIGHT, RIGHT_TO_LEFT, SEQ2SEQ


def objective_mask(objective: int, length: int, source_len: int) -> torch.Tensor:
    """The objective's ``(length, length)`` visibility, from :mod:`unilm_fairseq.masks`.

    seq2seq: the source is ``tokens[:source_len]`` ("[SOS] A [EOS]"), the rest the target.
    """
    if objective == LEFT_TO_RIGHT:
        return masks.left_to_right_mask(length)
    if objective == RIGHT_TO_LEFT:
        return masks.right_to_left_mask(length)
    if objective == SEQ2SEQ:
        return masks.seq2seq_mask(source_len, length - source_len)
    return masks.bidirectional_mask(length)


class UniLMClozeDataset(CompleteBatchesMixin, SeededDataset):
    """Mask tokens of every objective's example, seeded per (seed, epoch, index).

    Any token but the specials may be masked, in both segments of a pair: the
    paper masks source and target tokens alike in seq2seq pre-training
    (section 2.1); only fine-tuning restricts masks to the target. Masked
    inputs become ``[MASK]`` (80%), a random token (10%) or stay (10%).

    Item: the wrapped item plus ``source`` (corrupted input) and ``target``
    (pad except at masked positions) ``(N,)`` long, and ``pick_lengths``.
    """

    def __init__(
        self,
        dataset,
        dictionary,
        mask_idx: int,
        seed: int,
        mask_prob=MaskingConfig.mask_prob,
        span_prob=0.2,
        max_span=3,
        max_predictions=0,
        leave_unmasked_prob=MaskingConfig.leave_unmasked_prob,
        random_token_prob=MaskingConfig.random_token_prob,
    ):
        super().__init__(seed)
        self.dataset = dataset
        self.pad = dictionary.pad()
        self.special = np.array([dictionary.bos(), dictionary.eos(), dictionary.pad()])
        self.mask_idx = mask_idx
        self.mask_args = dict(
            mask_prob=mask_prob, span_prob=span_prob, max_span=max_span, max_predictions=max_predictions
        )
        self.corrupt = MaskedInputCorruption(dictionary, mask_idx, leave_unmasked_prob, random_token_prob)

    def __len__(self):
        return len(self.dataset)

    @property
    def sizes(self):
        return self.dataset.sizes

    def size(self, index):
        return self.dataset.size(index)

    def num_tokens(self, index):
        return self.dataset.num_tokens(index)

    def num_tokens_vec(self, indices):
        return np.asarray(self.sizes)[indices]

    def set_epoch(self, epoch, **unused):
        super().set_epoch(epoch)
        self.dataset.set_epoch(epoch)

    def __getitem__(self, index) -> Dict:
        item = dict(self.dataset[index])  # a copy: the wrapped dataset's item is not ours to change
        tokens = item["tokens"].numpy()
        rng = self.rng(index, CLOZE_STREAM)
        picks = cloze_mask_picks(~np.isin(tokens, self.special), rng, **self.mask_args)
        masked = np.concatenate(picks) if picks else np.zeros(0, dtype=np.int64)
        source, target = tokens.copy(), np.full_like(tokens, self.pad)
        source[masked] = self.corrupt(tokens[masked], rng)
        target[masked] = tokens[masked]
        item.update(
            id=index,
            source=torch.from_numpy(source),
            target=torch.from_numpy(target),
            pick_lengths=[len(p) for p in picks],
        )
        return item

    def collater(self, samples: List[Dict]):
        """Right-padded batch; ``attn_mask`` ``(B, T, T)`` holds each example's objective mask."""
        if not samples:
            return {}
        lengths = [len(s["source"]) for s in samples]
        visible = masks.pad_masks(
            [objective_mask(s["objective"], n, s["source_len"]) for s, n in zip(samples, lengths)]
        )
        tokens = data_utils.collate_tokens([s["source"] for s in samples], self.pad)
        target = data_utils.collate_tokens([s["target"] for s in samples], self.pad)
        positions = torch.arange(tokens.size(1)).expand_as(tokens).contiguous()
        predicted = target.ne(self.pad)
        return {
            "id": torch.LongTensor([s["id"] for s in samples]),
            "nsentences": len(samples),
            "ntokens": sum(lengths),
            "num_masked": int(predicted.sum()),
            "net_input": {
                "tokens": tokens,
                "segments": data_utils.collate_tokens([s["segments"] for s in samples], 0),
                "positions": positions,
                "attn_mask": visible,
                "masked_tokens": predicted,
            },
            "target": target,
            "objective": torch.LongTensor([s["objective"] for s in samples]),
            "nsp_target": torch.LongTensor([s["nsp_label"] for s in samples]),
            "nsp_skipped": sum(int(s["nsp_skipped"]) for s in samples),
            "trimmed": sum(int(s["trimmed"]) for s in samples),
        }
