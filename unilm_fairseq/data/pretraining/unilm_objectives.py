"""UniLM v1 examples: one LM objective per example, its layout, segment ids and NSP pair.

Layouts (Dong et al. 2019, section 2):

* bidirectional: "[SOS] A [EOS] B [EOS]", B the true continuation of A or, for
  next-sentence prediction, a segment from another document;
* seq2seq: the same packing, A the source and its true continuation B the target;
* left-to-right and right-to-left: one contiguous text "[SOS] T [EOS]".

Segment ids double as LM identifiers, numbered as in the original UniLM v1
release (a token-type vocabulary of 6): bidirectional A/B = 0/1, left-to-right
2, right-to-left 3, seq2seq source/target = 4/5.
"""

import logging
from typing import Dict, List, Optional, Sequence, Tuple

import numpy as np
import torch

from ...seq2seq_layout import (
    BIDIRECTIONAL,
    LEFT_TO_RIGHT,
    RIGHT_TO_LEFT,
    SEQ2SEQ,
    UNILM_V1_NUM_SEGMENTS,
    UNILM_V1_SEGMENT_IDS,
)
from ..complete_batches import CompleteBatchesMixin
from ..seeded import SeededDataset
from .segment_pairs import (
    SPECIAL_TOKENS_PER_PAIR,
    PairBlockSizes,
    cut_between_sentences,
    pair_tokens,
    split_sentences,
)

logger = logging.getLogger(__name__)

# the objectives (BIDIRECTIONAL, SEQ2SEQ, LEFT_TO_RIGHT, RIGHT_TO_LEFT) and their segment ids are the
# layout module's, where fine-tuning reads them too
OBJECTIVE_NAMES = ("bidir", "s2s", "l2r", "r2l")  # indexed by objective id, used in logs
SEGMENT_IDS = UNILM_V1_SEGMENT_IDS
NUM_SEGMENTS = UNILM_V1_NUM_SEGMENTS
IS_NEXT, NOT_NEXT, NO_NSP = 0, 1, -1  # NSP labels; NO_NSP: the example trains no NSP
SINGLE_TEXT_SPECIALS = 2  # "[SOS]" and "[EOS]" around a unidirectional text
# per-(seed, epoch, index) random streams, so objectives and cloze masks draw independently
OBJECTIVE_STREAM, CLOZE_STREAM = 0, 1


def block_document_ranges(line_sizes: np.ndarray, block_lines: np.ndarray, sep_len: int = 1):
    """First and last document of each block.

    Args:
        line_sizes: ``(L,)`` tokens per binarized line; a line of ``sep_len``
            tokens (the appended eos of an empty line) separates documents.
        block_lines: ``(B, 2)`` first and last line index of each block.
    Returns:
        ``(first, last)``, each ``(B,)`` int, non-decreasing over blocks.
    """
    document_of_line = np.cumsum(np.asarray(line_sizes) <= sep_len)
    return document_of_line[block_lines[:, 0]], document_of_line[block_lines[:, 1]]


def other_document_block(
    rng: np.random.Generator, index: int, first: np.ndarray, last: np.ndarray
) -> Optional[int]:
    """A block drawn uniformly among those sharing no document with block ``index``.

    Blocks follow corpus order, so those wholly before ``index``'s first
    document form a prefix and those wholly after its last one a suffix.
    Returns None when there is none (a one-document corpus).
    """
    before = int(np.searchsorted(last, first[index], side="left"))
    after = int(np.searchsorted(first, last[index], side="right"))
    candidates = before + len(first) - after
    if candidates == 0:
        return None
    draw = int(rng.integers(candidates))
    return draw if draw < before else after + draw - before


class UniLMObjectiveDataset(PairBlockSizes, CompleteBatchesMixin, SeededDataset):
    """Pick an objective per example and lay it out, seeded per (seed, epoch, index).

    Pairs are cut at a sentence boundary drawn uniformly; a block of one
    sentence is cut inside the sentence (the continuation is still the true
    next text). A bidirectional example trains NSP (label ``IS_NEXT`` or, with
    probability ``nsp_random_prob``, ``NOT_NEXT`` with B replaced by text of
    another document, cut to the true B's length) unless the block has no B
    (one token) or the corpus no other document: then its label is ``NO_NSP``
    and ``nsp_skipped`` is set. Items longer than ``max_length`` are trimmed
    (:func:`~unilm_fairseq.data.pretraining.segment_pairs.trim_pair`) and flagged ``trimmed``.

    Item: ``tokens``, ``segments`` ``(N,)`` long; ``objective``, ``source_len``
    (the seq2seq source "[SOS] A [EOS]"; ``N`` for other objectives),
    ``nsp_label`` ints; ``nsp_skipped``, ``trimmed`` bools.
    """

    def __init__(
        self,
        blocks,
        document_ranges: Tuple[np.ndarray, np.ndarray],
        dictionary,
        max_length: int,
        seed: int,
        objective_weights: Sequence[float],
        nsp_random_prob: float = 0.5,
    ):
        super().__init__(seed)
        weights = np.asarray(objective_weights, dtype=np.float64)
        if weights.shape != (len(OBJECTIVE_NAMES),) or (weights < 0).any() or weights.sum() <= 0:
            raise ValueError(
                f"objective weights must be {len(OBJECTIVE_NAMES)} non-negative numbers "
                f"({', '.join(OBJECTIVE_NAMES)}) with a positive sum, got {list(objective_weights)}"
            )
        if not 0.0 <= nsp_random_prob <= 1.0:
            raise ValueError(f"nsp_random_prob must be in [0, 1], got {nsp_random_prob}")
        if max_length <= SPECIAL_TOKENS_PER_PAIR:
            raise ValueError(f"max_length {max_length} leaves no room for text")
        self.dataset = blocks
        self.first_doc, self.last_doc = document_ranges
        self.bos, self.eos = dictionary.bos(), dictionary.eos()
        self.max_length = max_length
        self.probs = weights / weights.sum()
        self.nsp_random_prob = nsp_random_prob
        self.set_pair_sizes(blocks.sizes, max_length)

    def ordered_indices(self):
        """Corpus order: the cloze dataset wrapping these items orders the batches."""
        return np.arange(len(self), dtype=np.int64)

    def __getitem__(self, index) -> Dict:
        rng = self.rng(index, OBJECTIVE_STREAM)
        objective = int(rng.choice(len(self.probs), p=self.probs))
        sentences = split_sentences(self.dataset[index].numpy(), self.eos)
        if objective in (LEFT_TO_RIGHT, RIGHT_TO_LEFT):
            text = np.concatenate(sentences) if sentences else np.zeros(0, dtype=np.int64)
            budget = self.max_length - SINGLE_TEXT_SPECIALS
            tokens = np.concatenate([[self.bos], text[:budget], [self.eos]])
            segments = np.full(len(tokens), SEGMENT_IDS[objective][0])
            item = dict(tokens=tokens, segments=segments, source_len=len(tokens), nsp_label=NO_NSP)
            item.update(nsp_skipped=False, trimmed=len(text) > budget)
        else:
            item = self._pair(objective, sentences, index, rng)
        item["objective"] = objective
        item["tokens"] = torch.from_numpy(np.asarray(item["tokens"], dtype=np.int64))
        item["segments"] = torch.from_numpy(np.asarray(item["segments"], dtype=np.int64))
        return item

    def _pair(self, objective: int, sentences: List[np.ndarray], index: int, rng) -> Dict:
        first, second = self._cut(sentences, rng)
        label, skipped = NO_NSP, False
        if objective == BIDIRECTIONAL:
            partner = other_document_block(rng, index, self.first_doc, self.last_doc)
            if len(second) == 0 or partner is None:
                skipped = True
            elif rng.random() < self.nsp_random_prob:
                others = split_sentences(self.dataset[partner].numpy(), self.eos)
                if others:  # an all-eos block (--sample-break-mode none) has no text to lend
                    start = int(rng.integers(len(others)))
                    label, second = NOT_NEXT, np.concatenate(others[start:])[: len(second)]
                else:
                    skipped = True
            else:
                label = IS_NEXT
        tokens, source_len, trimmed = pair_tokens(first, second, self.bos, self.eos, self.max_length)
        seg_a, seg_b = SEGMENT_IDS[objective]
        segments = np.where(np.arange(len(tokens)) < source_len, seg_a, seg_b)
        return dict(
            tokens=tokens,
            segments=segments,
            source_len=source_len if objective == SEQ2SEQ else len(tokens),
            nsp_label=label,
            nsp_skipped=skipped,
            trimmed=trimmed,
        )

    @staticmethod
    def _cut(sentences: List[np.ndarray], rng) -> Tuple[np.ndarray, np.ndarray]:
        """A at a sentence boundary drawn uniformly; inside the one sentence if there is one."""
        if len(sentences) > 1:
            return cut_between_sentences(sentences, rng)
        text = sentences[0] if sentences else np.zeros(0, dtype=np.int64)
        if len(text) < 2:
            return text, text[:0]
        cut = int(rng.integers(1, len(text)))
        return text[:cut], text[cut:]
