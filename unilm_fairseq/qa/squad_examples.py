"""SQuAD v1.1 / v2.0 examples: reading the official JSON, answer spans, sliding windows.

The official format: ``data`` -> articles -> ``paragraphs`` -> ``context`` and ``qas``; each question has
an ``id``, a ``question``, ``answers`` (``text`` and character ``answer_start``) and, in v2.0,
``is_impossible`` (with ``plausible_answers`` instead of answers).

A passage longer than a window is covered by overlapping windows (BERT's scheme): each holds at most
``max_seq_length - len(question) - 3`` passage tokens ([SOS], [EOS], [EOS]) and starts ``doc_stride``
tokens after the previous one. A token seen by several windows is read from the one where it has the most
context (:func:`max_context_flags`).

Counts go into a ``collections.Counter``: ``questions``, ``empty_question``, ``empty_passage``,
``answer_mismatch`` (no answer text is at its ``answer_start``), ``no_answer`` (an answerable question
without a non-blank answer), ``truncated_question``, ``windows``, ``answer_outside_window``.
"""

import json
from collections import Counter
from typing import Callable, Dict, List, NamedTuple, Optional, Sequence, Tuple

import numpy as np

from .offset_tokenizers import Token

Tokenize = Callable[[str], List[Token]]
SPECIALS_PER_WINDOW = 3  # [SOS] question [EOS] passage [EOS]
MAX_CONTEXT_LENGTH_WEIGHT = 0.01  # BERT: among windows with equal side context, the longer window wins
NO_ANSWER = (0, 0)  # start and end target of "no answer": the [SOS] position


class Example(NamedTuple):
    """One question on one passage; ``answer`` is the first gold answer's character span, if any."""

    qid: str
    question: str
    context: str
    answers: Tuple[str, ...]
    is_impossible: bool
    answer: Optional[Tuple[int, int]]


class Window(NamedTuple):
    """One model input: passage tokens ``[doc_start, doc_start + length)`` of question ``example``.

    ``start``/``end``: positions of the answer's first/last token in the packed input, ``(0, 0)`` when
    the window does not hold the whole answer; ``max_context`` ``(length,)`` bool: ``max_context[i]``
    says this window is the best place to read passage token ``doc_start + i``.
    """

    example: int
    doc_start: int
    length: int
    start: int
    end: int
    max_context: np.ndarray


def read_squad_examples(path: str, stats: Optional[Counter] = None) -> List[Example]:
    """Every question of a SQuAD v1.1 or v2.0 JSON file, in file order.

    Raises:
        ValueError: the file is not JSON in SQuAD's layout (names the file and the missing field).
    """
    stats = Counter() if stats is None else stats
    try:
        with open(path, encoding="utf-8") as f:
            articles = json.load(f)["data"]
        examples = []
        for article in articles:
            for paragraph in article["paragraphs"]:
                context = paragraph["context"]
                for qa in paragraph["qas"]:
                    examples.append(parse_question(qa, context, stats))
    except (json.JSONDecodeError, KeyError, TypeError, ValueError) as err:
        raise ValueError(f"{path}: not a SQuAD JSON file ({type(err).__name__}: {err})") from err
    return examples


def parse_question(qa: Dict, context: str, stats: Counter) -> Example:
    """One ``qas`` entry; the first non-blank answer whose text is at its ``answer_start`` gives the span."""
    stats["questions"] += 1
    impossible = bool(qa.get("is_impossible", False))
    answers = tuple(a["text"] for a in qa.get("answers", []))
    span = None
    if not impossible:
        given = [a for a in qa.get("answers", []) if a["text"].strip()]
        for answer in given:
            start, text = int(answer["answer_start"]), answer["text"]
            if start >= 0 and context[start : start + len(text)] == text:
                span = (start, start + len(text))
                break
        if span is None:
            stats["answer_mismatch" if given else "no_answer"] += 1
    return Example(str(qa["id"]), qa["question"], context, answers, impossible, span)


def answer_token_span(spans, char_start: int, char_end: int) -> Optional[Tuple[int, int]]:
    """First and last token overlapping the characters ``[char_start, char_end)``, or None if none does.

    Args:
        spans: ``(N, 2)`` each token's character span ``[start, end)``.
    A token that only partly overlaps is included (a WordPiece holding the answer's edge).
    """
    spans = np.asarray(spans, dtype=np.int64).reshape(-1, 2)
    inside = np.flatnonzero((spans[:, 0] < char_end) & (spans[:, 1] > char_start))
    return (int(inside[0]), int(inside[-1])) if len(inside) else None


def doc_windows(num_tokens: int, max_tokens: int, stride: int) -> List[Tuple[int, int]]:
    """``(start, length)`` of BERT's sliding windows over ``num_tokens`` passage tokens.

    Each window holds up to ``max_tokens``; the next starts ``min(length, stride)`` later; the last one
    reaches the end. An empty passage gives one empty window.
    """
    if max_tokens < 1 or stride < 1:
        raise ValueError(f"windows need max_tokens >= 1 and stride >= 1 (got {max_tokens}, {stride})")
    windows, start = [], 0
    while True:
        length = min(num_tokens - start, max_tokens)
        windows.append((start, length))
        if start + length >= num_tokens:
            return windows
        start += min(length, stride)


def max_context_flags(windows: Sequence[Tuple[int, int]]) -> List[np.ndarray]:
    """For each window, a ``(length,)`` bool array: whether it is the best window for each of its tokens.

    A token's score in a window is ``min(tokens left of it, tokens right of it) + 0.01 * window length``;
    the window with the highest score wins, the first one on a tie.
    """
    best: Dict[int, Tuple[float, int]] = {}
    for w, (start, length) in enumerate(windows):
        for position in range(start, start + length):
            score = min(position - start, start + length - 1 - position) + MAX_CONTEXT_LENGTH_WEIGHT * length
            if position not in best or score > best[position][0]:
                best[position] = (score, w)
    return [
        np.array([best[p][1] == w for p in range(s, s + n)], dtype=bool) for w, (s, n) in enumerate(windows)
    ]


def example_windows(
    example_index: int,
    num_question_tokens: int,
    num_doc_tokens: int,
    answer: Optional[Tuple[int, int]],
    max_seq_length: int,
    doc_stride: int,
    stats: Counter,
) -> List[Window]:
    """The windows of one (tokenized) question and passage, with training targets.

    Args:
        answer: the answer's passage-token span (None: no answer, target [SOS]).
    """
    max_doc = max_seq_length - num_question_tokens - SPECIALS_PER_WINDOW
    spans = doc_windows(num_doc_tokens, max_doc, doc_stride)
    offset = num_question_tokens + 2  # passage token 0 sits after [SOS] question [EOS]
    windows = []
    for (start, length), flags in zip(spans, max_context_flags(spans)):
        target = NO_ANSWER
        if answer is not None:
            if start <= answer[0] and answer[1] < start + length:
                target = (offset + answer[0] - start, offset + answer[1] - start)
            else:
                stats["answer_outside_window"] += 1
        windows.append(Window(example_index, start, length, *target, flags))
    stats["windows"] += len(windows)
    return windows
