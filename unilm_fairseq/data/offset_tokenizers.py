"""Tokenizers that remember where each token came from in the original text.

Extractive QA predicts a span of tokens and must answer with the ORIGINAL passage text, so every token
carries the character span ``[start, end)`` of the text it was made from. Two tokenizers:

* :func:`word_tokens`: BERT's basic tokenization (split on whitespace, and around every punctuation
  mark and CJK ideograph; optionally lowercase and strip accents), one token per word or mark;
* :class:`WordPieceOffsets`: those words, then BERT's greedy longest-match-first WordPiece split
  (``##`` continuations) against a vocabulary, each piece with its share of the word's characters;
* :class:`SentencePieceOffsets`: those words, each encoded by a sentencepiece model.

Control characters are dropped and do not end a word, as in BERT's ``clean_text``.
"""

import functools
import unicodedata
from typing import Iterable, List, NamedTuple, Optional

from ..encoders.wordpiece import (
    UNK,
    WORD_CACHE_SIZE,
    is_cjk,
    is_control,
    is_punctuation,
    is_whitespace,
    wordpiece_split,
)
from ..scoring.metrics import WORDPIECE_CONTINUATION

DROPPED_CHARACTERS = "\x00\ufffd"  # NUL and the replacement character: BERT deletes both
SENTENCEPIECE_SPACE = "\u2581"  # "▁": sentencepiece's mark of a word start


class Token(NamedTuple):
    """A token and the character span ``text[start:end]`` it was made from."""

    text: str
    start: int
    end: int


def normalize_word(word: str, lowercase: bool) -> str:
    """NFC form (one code point per character); uncased: lowercased with accents stripped (NFD, no Mn)."""
    word = unicodedata.normalize("NFC", word)
    if lowercase:
        word = unicodedata.normalize("NFD", word.lower())
        word = "".join(c for c in word if unicodedata.category(c) != "Mn")
    return word


def word_tokens(text: str, lowercase: bool = True) -> List[Token]:
    """BERT's basic tokens of ``text`` with their character spans.

    ``"Don't stop!"`` -> ``don [0,3) ' [3,4) t [4,5) stop [6,10) ! [10,11)`` (uncased). A word that
    normalizes to nothing (only combining marks) is dropped.
    """
    tokens: List[Token] = []
    chars: List[str] = []
    start = 0

    def flush(end: int) -> None:
        if chars:
            word = normalize_word("".join(chars), lowercase)
            if word:
                tokens.append(Token(word, start, end))
            chars.clear()

    last_kept = 0
    for i, char in enumerate(text):
        if char in DROPPED_CHARACTERS or (is_control(char) and not is_whitespace(char)):
            continue
        if is_whitespace(char):
            flush(last_kept)
        elif is_punctuation(char) or is_cjk(char):
            flush(last_kept)
            tokens.append(Token(normalize_word(char, lowercase) or char, i, i + 1))
        else:
            if not chars:
                start = i
            chars.append(char)
        last_kept = i + 1
    flush(last_kept)
    return tokens


def piece_spans(pieces: List[str], word: Token, lengths: Optional[List[int]] = None) -> List[Token]:
    """Character spans of a word's pieces, given how many characters of the word each piece spells
    (default: WordPiece, the piece minus its ``##``).

    When normalization kept the word's length, the spans are exact; otherwise (a character that
    lowercases or decomposes into several) each piece gets its cumulative share, clipped to the word,
    and the last piece ends where the word ends.
    """
    if pieces == [UNK]:
        return [Token(UNK, word.start, word.end)]
    if lengths is None:
        lengths = [len(p) - (len(WORDPIECE_CONTINUATION) if i else 0) for i, p in enumerate(pieces)]
    spans, offset = [], 0
    for i, (piece, length) in enumerate(zip(pieces, lengths)):
        start = min(word.start + offset, word.end)
        end = word.end if i == len(pieces) - 1 else min(word.start + offset + length, word.end)
        spans.append(Token(piece, start, end))
        offset += length
    return spans


class WordPieceOffsets:
    """WordPiece tokens with character spans, for a vocabulary given as its pieces (``##`` continuations)."""

    def __init__(self, vocab: Iterable[str], lowercase: bool = True):
        self.vocab = frozenset(vocab)
        self.lowercase = lowercase
        self._pieces = functools.lru_cache(maxsize=WORD_CACHE_SIZE)(self._pieces_uncached)

    def _pieces_uncached(self, word: str) -> List[str]:
        return wordpiece_split(word, self.vocab)

    def __call__(self, text: str) -> List[Token]:
        tokens: List[Token] = []
        for word in word_tokens(text, self.lowercase):
            tokens.extend(piece_spans(self._pieces(word.text), word))
        return tokens


class SentencePieceOffsets:
    """Sentencepiece pieces of each basic token, with character spans.

    Each word (or punctuation mark) of :func:`word_tokens` is encoded alone, so a piece never crosses a
    word and its span is exact; a piece's leading ``▁`` (the word boundary) spells no character. Models
    trained on raw text may split punctuation next to a word differently than here.
    """

    def __init__(self, model_file: str, lowercase: bool = False):
        import sentencepiece as spm

        self.processor = spm.SentencePieceProcessor(model_file=model_file)
        self.lowercase = lowercase
        self._pieces = functools.lru_cache(maxsize=WORD_CACHE_SIZE)(self._pieces_uncached)

    def _pieces_uncached(self, word: str) -> List[str]:
        return self.processor.encode(word, out_type=str)

    def __call__(self, text: str) -> List[Token]:
        tokens: List[Token] = []
        for word in word_tokens(text, self.lowercase):
            pieces = self._pieces(word.text)
            tokens.extend(piece_spans(pieces, word, [len(p.lstrip(SENTENCEPIECE_SPACE)) for p in pieces]))
        return tokens


def words_tokenizer(lowercase: bool = True):
    """The word-level tokenizer as a callable like :class:`WordPieceOffsets`."""

    def tokenize(text: str) -> List[Token]:
        return word_tokens(text, lowercase)

    return tokenize
