"""PALM pre-training pairs: which text goes to the encoder and which to the decoder (pure functions).

A document is a run of non-empty lines (one sentence per line) between empty
lines. Every sentence of a document starts one window (a stride of one
sentence); the window takes whole sentences while they fit in ``max_tokens``
and never reaches into the next document. The window's first part (about
``context_ratio`` of its tokens) is the encoder's context, the rest the
continuation the decoder generates.
"""

import math
from dataclasses import dataclass, fields
from typing import List, Sequence, Tuple

import numpy as np

# the fewest tokens a window needs: one of context and one of continuation
MIN_PAIR_TOKENS = 2


@dataclass(frozen=True)
class Fragment:
    """One pre-training pair, in line indices of the binarized split.

    The text is the concatenation of lines ``first_line .. first_line + num_lines - 1``
    (their closing ``</s>`` removed) cut to ``length`` tokens; its first ``context``
    tokens are the encoder's input, the other ``length - context`` the decoder's target.
    """

    first_line: int
    num_lines: int
    length: int
    context: int


@dataclass
class FragmentStats:
    """What building the pairs of one split kept and skipped."""

    lines: int = 0
    empty_lines: int = 0
    documents: int = 0
    windows: int = 0
    pairs: int = 0
    windows_too_short: int = 0
    documents_without_pair: int = 0
    truncated: int = 0
    split_at_boundary: int = 0
    split_mid_sentence: int = 0

    def add(self, other: "FragmentStats") -> None:
        for f in fields(self):
            setattr(self, f.name, getattr(self, f.name) + getattr(other, f.name))


def context_length(
    sentence_lengths: Sequence[int], length: int, context_ratio: float, tolerance: float
) -> int:
    """How many of a window's ``length`` tokens go to the encoder.

    The ideal cut is at ``context_ratio * length`` tokens. Among the sentence
    boundaries strictly inside the window, the one nearest to the ideal cut is
    used (the later one on a tie) when it lies within ``tolerance * length``
    tokens of it. Otherwise the cut falls mid-sentence, at the ideal cut rounded
    to the nearest token. Both sides always keep at least one token.

    Args:
        sentence_lengths: ``(n,)`` token counts of the window's sentences, in order;
            their sum may exceed ``length`` only when the window cuts its last sentence.
        length: tokens in the window, at least :data:`MIN_PAIR_TOKENS`.
    Returns:
        the context length, in ``[1, length - 1]``.
    """
    if length < MIN_PAIR_TOKENS:
        raise ValueError(f"a window of {length} token(s) cannot be split into context and continuation")
    ideal = context_ratio * length
    boundaries = np.cumsum(sentence_lengths)[:-1]
    boundaries = boundaries[(boundaries > 0) & (boundaries < length)]
    if len(boundaries):
        distance = np.abs(boundaries - ideal)
        nearest = int(boundaries[np.flatnonzero(distance == distance.min())[-1]])
        if abs(nearest - ideal) <= tolerance * length:
            return nearest
    return min(max(math.floor(ideal + 0.5), 1), length - 1)


def document_fragments(
    sentence_lengths: Sequence[int],
    max_tokens: int,
    context_ratio: float = 0.8,
    tolerance: float = 0.1,
    first_line: int = 0,
) -> Tuple[List[Fragment], FragmentStats]:
    """All pairs of one document: one window per sentence, stride one sentence.

    Window ``k`` starts at sentence ``k`` and takes sentences ``k, k+1, ...`` while
    their total stays within ``max_tokens``; when sentence ``k`` alone is longer,
    the window is its first ``max_tokens`` tokens (counted as truncated). Windows
    of fewer than :data:`MIN_PAIR_TOKENS` tokens are skipped and counted; the
    context/continuation cut follows :func:`context_length`.

    Args:
        sentence_lengths: ``(n,)`` token counts of the document's sentences, each >= 1.
        first_line: line index of the document's first sentence (fragments use line indices).
    Returns:
        the fragments in window order, and their counts.
    """
    if max_tokens < MIN_PAIR_TOKENS:
        raise ValueError(f"--max-fragment-tokens {max_tokens} leaves no room for a pair")
    if not 0.0 < context_ratio < 1.0:
        raise ValueError(f"--context-ratio {context_ratio} must lie strictly between 0 and 1")
    lengths = np.asarray(sentence_lengths, dtype=np.int64)
    ends = np.concatenate([[0], np.cumsum(lengths)])  # ends[i]: tokens before sentence i
    stats = FragmentStats(documents=1 if len(lengths) else 0, windows=len(lengths))
    fragments = []
    for k in range(len(lengths)):
        # the last sentence j with ends[j + 1] - ends[k] <= max_tokens
        stop = int(np.searchsorted(ends, ends[k] + max_tokens, side="right")) - 1
        num = max(stop - k, 1)
        length = min(int(ends[k + num] - ends[k]), max_tokens)
        if length < int(ends[k + num] - ends[k]):
            stats.truncated += 1
        if length < MIN_PAIR_TOKENS:
            stats.windows_too_short += 1
            continue
        context = context_length(lengths[k : k + num], length, context_ratio, tolerance)
        at_boundary = context in set((ends[k + 1 : k + num] - ends[k]).tolist())
        stats.split_at_boundary += at_boundary
        stats.split_mid_sentence += not at_boundary
        fragments.append(Fragment(first_line + k, num, length, context))
    stats.pairs = len(fragments)
    stats.documents_without_pair = int(stats.documents and not fragments)
    return fragments, stats


def corpus_fragments(
    line_lengths: Sequence[int], max_tokens: int, context_ratio: float = 0.8, tolerance: float = 0.1
) -> Tuple[List[Fragment], FragmentStats]:
    """The pairs of a whole split: documents are runs of non-empty lines.

    Args:
        line_lengths: ``(L,)`` text tokens per line (``</s>`` not counted); 0 marks an
            empty line, a document break. Consecutive empty lines make no document.
    """
    lengths = np.asarray(line_lengths, dtype=np.int64)
    stats = FragmentStats()
    fragments: List[Fragment] = []
    start = None
    for i in range(len(lengths) + 1):
        if i < len(lengths) and lengths[i] > 0:
            start = i if start is None else start
            continue
        if start is not None:
            found, counts = document_fragments(lengths[start:i], max_tokens, context_ratio, tolerance, start)
            fragments.extend(found)
            stats.add(counts)
            start = None
    stats.lines, stats.empty_lines = len(lengths), int((lengths == 0).sum())
    return fragments, stats
