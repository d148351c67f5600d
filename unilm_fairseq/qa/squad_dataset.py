"""Extractive-QA windows as a fairseq dataset: "[SOS] question [EOS] passage window [EOS]".

The question is segment 0 and the passage segment 1 (the model derives both from the first [EOS]).
Each item is one window; the batch carries the start/end targets and ``span_mask``, the positions a span
may start or end at: [SOS] (no answer) and the window's passage tokens.
"""

import logging
from collections import Counter
from typing import Dict, List, NamedTuple, Optional, Sequence, Tuple

import numpy as np
import torch
from fairseq.data import Dictionary, FairseqDataset, data_utils

from ..data.complete_batches import CompleteBatchesMixin
from .squad_examples import Example, Tokenize, Window, answer_token_span, example_windows

logger = logging.getLogger(__name__)


class TokenizedExample(NamedTuple):
    """Token ids of a question and its passage; ``doc_spans`` ``(N, 2)``: each passage token's characters."""

    question_ids: np.ndarray
    doc_ids: np.ndarray
    doc_spans: np.ndarray


def tokenize_examples(
    examples: Sequence[Example],
    tokenize: Tokenize,
    dictionary: Dictionary,
    max_seq_length: int,
    doc_stride: int,
    max_query_length: int,
    training: bool,
    stats: Counter,
) -> Tuple[Dict[int, TokenizedExample], List[Window]]:
    """Tokenize every usable example and lay out its windows.

    Returns ``{example index: TokenizedExample}`` and every window, in example order. Skipped (counted):
    empty questions and passages; for training also answerable questions without a usable answer span
    (mismatched or missing, or no token under it).
    """
    passages: Dict[str, TokenizedExample] = {}  # questions on one paragraph share its tokens
    tokenized: Dict[int, TokenizedExample] = {}
    windows: List[Window] = []
    for index, example in enumerate(examples):
        question = tokenize(example.question)
        if not question:
            stats["skipped_empty_question"] += 1
            continue
        if len(question) > max_query_length:
            stats["truncated_question"] += 1
            question = question[:max_query_length]
        if example.context not in passages:
            doc = tokenize(example.context)
            passages[example.context] = TokenizedExample(
                None,
                np.array([dictionary.index(t.text) for t in doc], dtype=np.int64),
                np.array([(t.start, t.end) for t in doc], dtype=np.int64).reshape(-1, 2),
            )
        passage = passages[example.context]
        if len(passage.doc_ids) == 0:
            stats["skipped_empty_passage"] += 1
            continue
        answer = None
        if example.answer is not None:
            answer = answer_token_span(passage.doc_spans, *example.answer)
        if training and not example.is_impossible and answer is None:
            stats["skipped_no_answer_span"] += 1
            continue
        question_ids = np.array([dictionary.index(t.text) for t in question], dtype=np.int64)
        tokenized[index] = passage._replace(question_ids=question_ids)
        num_doc = len(passage.doc_ids)
        windows.extend(
            example_windows(index, len(question_ids), num_doc, answer, max_seq_length, doc_stride, stats)
        )
    return tokenized, windows


class SquadWindowDataset(CompleteBatchesMixin, FairseqDataset):
    """One item per window; ``examples``/``tokenized`` let inference map windows back to passages.

    ``stats``: the counts of loading (questions, windows, skips), kept for logging and tests.
    """

    def __init__(
        self,
        examples: Sequence[Example],
        tokenized: Dict[int, TokenizedExample],
        windows: Sequence[Window],
        dictionary: Dictionary,
        stats: Optional[Counter] = None,
    ):
        self.stats = Counter() if stats is None else stats
        self.examples = examples
        self.tokenized = tokenized
        self.windows = list(windows)
        self.dictionary = dictionary
        self.sizes = np.array(
            [len(tokenized[w.example].question_ids) + w.length + 3 for w in self.windows], dtype=np.int64
        )

    def __getitem__(self, index: int) -> Dict:
        window = self.windows[index]
        example = self.tokenized[window.example]
        d = self.dictionary
        doc = example.doc_ids[window.doc_start : window.doc_start + window.length]
        tokens = np.concatenate([[d.bos()], example.question_ids, [d.eos()], doc, [d.eos()]])
        passage_offset = len(example.question_ids) + 2
        return {
            "id": index,
            "tokens": torch.from_numpy(tokens.astype(np.int64)),
            "passage": (passage_offset, window.length),
            "target": (window.start, window.end),
        }

    def __len__(self) -> int:
        return len(self.windows)

    def collater(self, samples: List[Dict]) -> Dict:
        """A batch: ``src_tokens`` ``(B, T)``, ``target`` ``(B, 2)`` start/end, ``span_mask`` ``(B, T)``."""
        if not samples:
            return {}
        tokens = data_utils.collate_tokens([s["tokens"] for s in samples], self.dictionary.pad())
        span_mask = torch.zeros_like(tokens, dtype=torch.bool)
        span_mask[:, 0] = True  # [SOS]: no answer in this window
        for row, sample in enumerate(samples):
            offset, length = sample["passage"]
            span_mask[row, offset : offset + length] = True
        return {
            "id": torch.tensor([s["id"] for s in samples]),
            "nsentences": len(samples),
            "ntokens": int(sum(len(s["tokens"]) for s in samples)),
            "net_input": {"src_tokens": tokens},
            "target": torch.tensor([s["target"] for s in samples], dtype=torch.long),
            "span_mask": span_mask,
        }

    def num_tokens(self, index: int) -> int:
        return int(self.sizes[index])

    def size(self, index: int) -> int:
        return int(self.sizes[index])

    def ordered_indices(self):
        return np.argsort(self.sizes, kind="mergesort")
