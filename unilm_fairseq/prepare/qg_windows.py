"""Answer-aware passage windows for question-generation sources (UniLM v1 §3.3).

UniLM v1 §3.3 makes the source "the concatenation of input passage and answer" and, when it is too long,
truncates the input "by selecting a passage chunk which contains the answer" (to 464 tokens; UniLMv2
Table 10 keeps 464). The paper does not say where the chunk sits. This project's choice:

1. nothing is cut while passage, separator and answer fit the budget (``--max-source-tokens``);
   otherwise the answer stays whole and the passage gets the tokens the answer and separator leave;
2. the passage window is made of whole sentences: the sentence(s) holding the answer, then one
   neighbouring sentence at a time on the side with fewer tokens so far (before the answer on a tie),
   so the answer stays near the centre. A side stops when its next sentence does not fit; the other
   side goes on. Tokens left over when neither neighbour fits stay unused: the window ends at sentence
   boundaries;
3. when the answer's own sentence(s) do not fit, the window is grown the same way from the answer's
   words, one word at a time;
4. an answer that is not in the passage keeps the passage's head (the longest run of words from its
   start that fits), and the answer whole; an answer too long to leave room for one passage word falls
   back to plain truncation of the joined source.

Sentences end at a word ending in ``.``, ``!`` or ``?`` (closing quotes and brackets allowed) that is a
mark on its own (tokenized text) or is followed by a word that does not start in lower case. This simple
rule misses or invents a few boundaries (``Mr. Smith``); that only moves a window edge.

The answer is found at the character offset the data gives (SQuAD's ``answer_start``, carried in
:attr:`Pair.answer_start`), else by searching its text in the passage (first occurrence). The windows
are cut between whitespace-separated words, where the sentencepiece, WordPiece and whitespace
tokenizers of :mod:`.seq2seq_release_formats` never join text, and the window's tokens are checked against the
budget after tokenizing it.

Counts go into ``stats``: ``qg_window`` (passages cut to a window around the answer),
``qg_window_moved`` (of those, windows that do not start at the passage's first word: plain truncation
would have kept other text), ``qg_answer_searched`` (answers found by searching their text),
``qg_answer_not_found``, ``qg_answer_too_long`` and ``qg_unsplit`` (one-line sources without the
separator, truncated plainly).
"""

import re
from collections import Counter
from typing import Callable, List, Optional, Sequence, Tuple

from .seq2seq_release_formats import Pair, join_segments, truncate

Tokenize = Callable[[str], List[str]]
SENTENCE_END = re.compile(r"[.!?][\"'”’)\]]*$")
SENTENCE_MARK = re.compile(r"^[.!?][\"'”’)\]]*$")


def sentence_ends(words: Sequence[str]) -> List[bool]:
    """``ends[i]``: a sentence ends with word ``i`` (the last word always ends one)."""
    ends = []
    for i, word in enumerate(words):
        last = i == len(words) - 1
        ends.append(
            last
            or bool(SENTENCE_MARK.match(word))
            or bool(SENTENCE_END.search(word) and not words[i + 1][:1].islower())
        )
    return ends


def grow(costs: Sequence[int], lo: int, hi: int, budget: int) -> Tuple[int, int]:
    """Grow the unit range ``[lo, hi)`` by whole neighbouring units while the total cost fits ``budget``.

    Each step adds the next unit on the side whose added cost is smaller so far (the left one on a
    tie); a side whose next unit does not fit stops, the other goes on.
    """
    total = sum(costs[lo:hi])
    left = right = 0
    left_open, right_open = lo > 0, hi < len(costs)
    while left_open or right_open:
        take_left = left_open and (not right_open or left <= right)
        unit = lo - 1 if take_left else hi
        if total + costs[unit] > budget:
            if take_left:
                left_open = False
            else:
                right_open = False
            continue
        total += costs[unit]
        if take_left:
            lo, left = unit, left + costs[unit]
            left_open = lo > 0
        else:
            hi, right = unit + 1, right + costs[unit]
            right_open = hi < len(costs)
    return lo, hi


def answer_window(
    word_costs: Sequence[int], ends: Sequence[bool], answer: Tuple[int, int], budget: int
) -> Optional[Tuple[int, int]]:
    """The window ``[start, end)`` of words around the answer's words ``[a, b)`` (rules 2-3 of the
    module docstring), or None when the answer's words alone exceed ``budget``."""
    a, b = answer
    if sum(word_costs[a:b]) > budget:
        return None
    starts = [0] + [i + 1 for i, end in enumerate(ends[:-1]) if end]
    bounds = list(zip(starts, starts[1:] + [len(ends)]))  # sentences as word ranges
    first = max(k for k, (s, _) in enumerate(bounds) if s <= a)
    last = max(k for k, (s, _) in enumerate(bounds) if s < b)
    sentence_costs = [sum(word_costs[s:e]) for s, e in bounds]
    if sum(sentence_costs[first : last + 1]) <= budget:
        lo, hi = grow(sentence_costs, first, last + 1, budget)
        return bounds[lo][0], bounds[hi - 1][1]
    return grow(word_costs, a, b, budget)


def head_window(word_costs: Sequence[int], budget: int) -> Tuple[int, int]:
    """The longest run of words from the passage's start that fits ``budget``."""
    total = end = 0
    while end < len(word_costs) and total + word_costs[end] <= budget:
        total += word_costs[end]
        end += 1
    return 0, end


def locate(passage: str, answer: str, hint: Optional[int]) -> Tuple[Optional[Tuple[int, int]], bool]:
    """The answer's character span in ``passage``: at ``hint`` when it is there, else its first
    occurrence; and whether it had to be searched. ``(None, True)`` when it is nowhere."""
    if hint is not None and passage[hint : hint + len(answer)] == answer:
        return (hint, hint + len(answer)), False
    found = passage.find(answer)
    return ((found, found + len(answer)) if found >= 0 else None), True


def words_of_span(words: Sequence[str], span: Tuple[int, int]) -> Tuple[int, int]:
    """Word range ``[a, b)`` covering the character span of ``" ".join(words)``."""
    a = b = None
    offset = 0
    for i, word in enumerate(words):
        end = offset + len(word)
        if a is None and end > span[0]:
            a = i
        if offset < span[1]:
            b = i + 1
        offset = end + 1
    return a, b


class AnswerWindow:
    """``fit_source`` for :func:`.seq2seq_release_formats.format_pairs`: a QG pair's source tokens within the
    limit, with a passage window around the answer.

    A pair's source is ``(answer, passage)`` (``answer_first``) or ``(passage, answer)``, from SQuAD
    JSON; or one line ``passage SEP answer`` (Du et al. line files, used in their own order), split at
    its last separator.
    """

    def __init__(self, tokenize: Tokenize, separator: str, answer_first: bool, stats: Counter):
        self.tokenize, self.separator, self.answer_first = tokenize, separator, answer_first
        self.stats = stats

    def segments(self, pair: Pair) -> Optional[Tuple[str, str, bool]]:
        """``(passage, answer, answer_first)``, or None for a line without the separator."""
        if len(pair.source) == 2:
            answer, passage = pair.source if self.answer_first else pair.source[::-1]
            return passage, answer, self.answer_first
        marker = f" {self.separator} "
        if len(pair.source) != 1 or not self.separator or marker not in pair.source[0]:
            return None
        passage, answer = pair.source[0].rsplit(marker, 1)
        return passage, answer, False

    def join(self, passage_tokens: List[str], answer_tokens: List[str], answer_first: bool) -> List[str]:
        parts = [answer_tokens, passage_tokens] if answer_first else [passage_tokens, answer_tokens]
        return parts[0] + ([self.separator] if self.separator else []) + parts[1]

    def __call__(self, pair: Pair, limit: int) -> Tuple[List[str], bool]:
        parsed = self.segments(pair)
        if parsed is None:
            self.stats["qg_unsplit"] += 1
            return truncate(join_segments(pair.source, self.tokenize, self.separator), limit, self.separator)
        passage, answer, answer_first = parsed
        span, searched = locate(passage, answer, pair.answer_start)
        self.stats["qg_answer_searched"] += searched and span is not None
        self.stats["qg_answer_not_found"] += span is None
        answer_tokens = self.tokenize(answer)
        source = self.join(self.tokenize(passage), answer_tokens, answer_first)
        if not limit or len(source) <= limit:
            return source, False
        budget = limit - len(answer_tokens) - bool(self.separator)  # what the answer and separator leave
        words = passage.split(" ")  # the readers normalize whitespace: one space between words
        costs = [len(self.tokenize(word)) for word in words]
        answer_words = None if span is None else words_of_span(words, span)
        window = None
        if budget >= 1:
            window = (
                head_window(costs, budget)
                if span is None
                else answer_window(costs, sentence_ends(words), answer_words, budget)
            )
        passage_tokens = []
        while window is not None and window[0] < window[1]:
            passage_tokens = self.tokenize(" ".join(words[window[0] : window[1]]))
            if len(passage_tokens) <= budget:
                break
            window = shrink(window, answer_words)  # a tokenizer that joins text across words
        if window is None or window[0] >= window[1]:
            self.stats["qg_answer_too_long"] += 1
            return truncate(source, limit, self.separator)
        if span is not None:
            self.stats["qg_window"] += 1
            self.stats["qg_window_moved"] += window[0] > 0
        return self.join(passage_tokens, answer_tokens, answer_first), True


def shrink(window: Tuple[int, int], answer: Optional[Tuple[int, int]]) -> Optional[Tuple[int, int]]:
    """``window`` less one word on the side farther from the answer (the end for a head window), or
    None when only the answer's words are left."""
    start, end = window
    if answer is None:
        return start, end - 1
    a, b = answer
    if start < a and (a - start >= end - b):
        return start + 1, end
    if end > b:
        return start, end - 1
    if start < a:
        return start + 1, end
    return None
