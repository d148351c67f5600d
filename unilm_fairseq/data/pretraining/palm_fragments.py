"""PALM pre-training pairs: which text goes to the encoder and which to the decoder (pure functions).

A document is a run of non-empty lines (one sentence per line) between empty
lines. Every sentence of a document starts one window (a stride of one
sentence, PALM §3.1); the window takes whole sentences while they fit in
``max_tokens`` and never reaches into the next document. The window's first
part (about ``context_ratio`` of its tokens, PALM §2.2) is the encoder's
context, the rest the continuation the decoder generates.

The context never exceeds ``max_context`` tokens and the continuation never
exceeds ``max_continuation`` (PALM §2.2 and §3.1: at most 400 and 100): hard
limits, which a sentence boundary near the 80% point does not override.
"""

import math
from dataclasses import dataclass, fields
from typing import List, Sequence, Tuple

import numpy as np

# the fewest tokens a window needs: one of context and one of continuation
MIN_PAIR_TOKENS = 2
# PALM §2.2 and §3.1: "the context input consists of at most 400 tokens, and the text output consists of at
# most 100 tokens"
MAX_CONTEXT_TOKENS = 400
MAX_CONTINUATION_TOKENS = 100


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
    # mid-sentence cuts made although a sentence boundary lay within the tolerance: every such boundary
    # would have put more than max_context tokens in the context or max_continuation in the continuation
    boundary_over_limit: int = 0

    def add(self, other: "FragmentStats") -> None:
        for f in fields(self):
            setattr(self, f.name, getattr(self, f.name) + getattr(other, f.name))


def cut_range(length: int, max_context: int, max_continuation: int) -> Tuple[int, int]:
    """The context lengths a window of ``length`` tokens may have: ``[low, high]``, both included.

    Both sides keep at least one token, the context at most ``max_context`` tokens and the
    continuation at most ``max_continuation``. The range is empty (``low > high``) only when
    ``length > max_context + max_continuation`` or ``length < 2``.
    """
    return max(1, length - max_continuation), min(max_context, length - 1)


def boundaries_near_cut(
    sentence_lengths: Sequence[int], length: int, context_ratio: float, tolerance: float
) -> np.ndarray:
    """``(K,)`` the sentence boundaries strictly inside the window that lie within ``tolerance * length``
    tokens of the ideal cut ``context_ratio * length`` (a boundary is the token count before it)."""
    boundaries = np.cumsum(sentence_lengths)[:-1]
    boundaries = boundaries[(boundaries > 0) & (boundaries < length)]
    return boundaries[np.abs(boundaries - context_ratio * length) <= tolerance * length]


def context_length(
    sentence_lengths: Sequence[int],
    length: int,
    context_ratio: float,
    tolerance: float,
    *,
    max_context: int = MAX_CONTEXT_TOKENS,
    max_continuation: int = MAX_CONTINUATION_TOKENS,
) -> int:
    """How many of a window's ``length`` tokens go to the encoder.

    The ideal cut is at ``context_ratio * length`` tokens (PALM §2.2). The rule (where the paper is
    silent, sentence boundaries are this project's choice):

    1. Among the sentence boundaries strictly inside the window that lie within ``tolerance * length``
       tokens of the ideal cut AND leave at most ``max_context`` tokens of context and at most
       ``max_continuation`` of continuation, the one nearest the ideal cut is used (the later one on a
       tie).
    2. Otherwise the cut falls mid-sentence: the ideal cut rounded to the nearest token, then moved
       into the limits (:func:`cut_range`). With PALM's 80%, 400 and 100 and windows of at most 500
       tokens the rounded ideal cut is always within them.

    Both sides always keep at least one token.

    Args:
        sentence_lengths: ``(n,)`` token counts of the window's sentences, in order;
            their sum may exceed ``length`` only when the window cuts its last sentence.
        length: tokens in the window, from :data:`MIN_PAIR_TOKENS` to ``max_context + max_continuation``.
    Returns:
        the context length, in ``[max(1, length - max_continuation), min(max_context, length - 1)]``.
    """
    if length < MIN_PAIR_TOKENS:
        raise ValueError(f"a window of {length} token(s) cannot be split into context and continuation")
    low, high = cut_range(length, max_context, max_continuation)
    if low > high:
        raise ValueError(
            f"a window of {length} tokens does not fit {max_context} tokens of context plus "
            f"{max_continuation} of continuation"
        )
    ideal = context_ratio * length
    near = boundaries_near_cut(sentence_lengths, length, context_ratio, tolerance)
    allowed = near[(near >= low) & (near <= high)]
    if len(allowed):
        distance = np.abs(allowed - ideal)
        return int(allowed[np.flatnonzero(distance == distance.min())[-1]])
    return min(max(math.floor(ideal + 0.5), low), high)


def check_settings(max_tokens: int, context_ratio: float, max_context: int, max_continuation: int) -> None:
    """Clear errors (naming ``palm_pretrain``'s options) for settings that cannot make a pair."""
    if max_tokens < MIN_PAIR_TOKENS:
        raise ValueError(f"--max-fragment-tokens {max_tokens} leaves no room for a pair")
    if not 0.0 < context_ratio < 1.0:
        raise ValueError(f"--context-ratio {context_ratio} must lie strictly between 0 and 1")
    if max_context < 1 or max_continuation < 1:
        raise ValueError(
            f"--max-context-tokens {max_context} and --max-continuation-tokens {max_continuation} must "
            "both be at least 1"
        )
    if max_tokens > max_context + max_continuation:
        raise ValueError(
            f"--max-fragment-tokens {max_tokens} is more than --max-context-tokens {max_context} plus "
            f"--max-continuation-tokens {max_continuation}: a full window could not be split within both "
            "limits (PALM §2.2: 500 = 400 + 100)"
        )


def document_fragments(
    sentence_lengths: Sequence[int],
    max_tokens: int,
    context_ratio: float = 0.8,
    tolerance: float = 0.1,
    first_line: int = 0,
    *,
    max_context: int = MAX_CONTEXT_TOKENS,
    max_continuation: int = MAX_CONTINUATION_TOKENS,
) -> Tuple[List[Fragment], FragmentStats]:
    """All pairs of one document: one window per sentence, stride one sentence.

    Window ``k`` starts at sentence ``k`` and takes sentences ``k, k+1, ...`` while
    their total stays within ``max_tokens``; when sentence ``k`` alone is longer,
    the window is its first ``max_tokens`` tokens (counted as truncated). Windows
    of fewer than :data:`MIN_PAIR_TOKENS` tokens are skipped and counted; the
    context/continuation cut follows :func:`context_length`, so no context is
    longer than ``max_context`` and no continuation longer than ``max_continuation``.

    Args:
        sentence_lengths: ``(n,)`` token counts of the document's sentences, each >= 1.
        max_tokens: at most ``max_context + max_continuation``.
        first_line: line index of the document's first sentence (fragments use line indices).
    Returns:
        the fragments in window order, and their counts.
    """
    check_settings(max_tokens, context_ratio, max_context, max_continuation)
    limits = dict(max_context=max_context, max_continuation=max_continuation)
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
        window = lengths[k : k + num]
        context = context_length(window, length, context_ratio, tolerance, **limits)
        at_boundary = context in set((ends[k + 1 : k + num] - ends[k]).tolist())
        stats.split_at_boundary += at_boundary
        stats.split_mid_sentence += not at_boundary
        if not at_boundary and len(boundaries_near_cut(window, length, context_ratio, tolerance)):
            stats.boundary_over_limit += 1
        fragments.append(Fragment(first_line + k, num, length, context))
    stats.pairs = len(fragments)
    stats.documents_without_pair = int(stats.documents and not fragments)
    return fragments, stats


def corpus_fragments(
    line_lengths: Sequence[int],
    max_tokens: int,
    context_ratio: float = 0.8,
    tolerance: float = 0.1,
    *,
    max_context: int = MAX_CONTEXT_TOKENS,
    max_continuation: int = MAX_CONTINUATION_TOKENS,
) -> Tuple[List[Fragment], FragmentStats]:
    """The pairs of a whole split: documents are runs of non-empty lines.

    Args:
        line_lengths: ``(L,)`` text tokens per line (``</s>`` not counted); 0 marks an
            empty line, a document break. Consecutive empty lines make no document.
    """
    check_settings(max_tokens, context_ratio, max_context, max_continuation)
    limits = dict(max_context=max_context, max_continuation=max_continuation)
    lengths = np.asarray(line_lengths, dtype=np.int64)
    stats = FragmentStats()
    fragments: List[Fragment] = []
    start = None
    for i in range(len(lengths) + 1):
        if i < len(lengths) and lengths[i] > 0:
            start = i if start is None else start
            continue
        if start is not None:
            found, counts = document_fragments(
                lengths[start:i], max_tokens, context_ratio, tolerance, start, **limits
            )
            fragments.extend(found)
            stats.add(counts)
            start = None
    stats.lines, stats.empty_lines = len(lengths), int((lengths == 0).sum())
    return fragments, stats
