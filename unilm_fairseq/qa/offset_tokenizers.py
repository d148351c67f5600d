"""Tokenizers that remember where each token came from in the original text.

Extractive QA predicts a span of tokens and must answer with the ORIGINAL passage text, so every token
carries the character span ``[start, end)`` of the text it was made from. Three tokenizers:

* :func:`word_tokens`: BERT's basic tokenization (split on whitespace, and around every punctuation
  mark and CJK ideograph; optionally lowercase and strip accents), one token per word or mark;
* :class:`WordPieceOffsets`: those words, then BERT's greedy longest-match-first WordPiece split
  (``##`` continuations) against a vocabulary, each piece with the characters it spells;
* :class:`SentencePieceOffsets`: those words, each encoded by a sentencepiece model.

The basic and WordPiece tokenization are :mod:`unilm_fairseq.encoders.wordpiece_tokenizer`'s.
"""

import functools
from typing import Iterable, List, Optional

from ..encoders.wordpiece_tokenizer import (
    WORD_CACHE_SIZE,
    Token,
    WordPieceTokenizer,
    word_character_spans,
    word_tokens,
)

SENTENCEPIECE_SPACE = "\u2581"  # "▁": sentencepiece's mark of a word start


def piece_spans(pieces: List[str], word: Token, lengths: List[int]) -> List[Token]:
    """Character spans of a word's pieces, given how many characters of the word each piece spells.

    When the pieces spell the word's characters one for one, the spans are exact; otherwise (a model
    that normalizes the text) each piece gets its cumulative share, clipped to the word, and the last
    piece ends where the word ends.
    """
    spans, offset = [], 0
    for i, (piece, length) in enumerate(zip(pieces, lengths)):
        start = min(word.start + offset, word.end)
        end = word.end if i == len(pieces) - 1 else min(word.start + offset + length, word.end)
        spans.append(Token(piece, start, end))
        offset += length
    return spans


class WordPieceOffsets:
    """WordPiece tokens with character spans, for a vocabulary given as its pieces (``##`` continuations);
    ``lowercase=None`` follows the vocabulary's casing."""

    def __init__(self, vocab: Iterable[str], lowercase: Optional[bool] = None):
        self.tokenizer = WordPieceTokenizer(vocab, lowercase, source="the dictionary")
        self.lowercase = self.tokenizer.lowercase

    def __call__(self, text: str) -> List[Token]:
        return self.tokenizer.tokens(text)


class SentencePieceOffsets:
    """Sentencepiece pieces of each basic token, with character spans.

    Each word (or punctuation mark) of :func:`word_tokens` is encoded alone, so a piece never crosses a
    word. When the pieces spell the word's characters one for one, a piece's span is exact: the characters
    of the text its own came from (a lowercased, accent-stripped letter takes its accent along). A piece's
    leading ``▁`` (the word boundary) spells no character. Models
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
        for word, (starts, ends) in word_character_spans(text, self.lowercase):
            pieces = self._pieces(word)
            lengths = [len(p.lstrip(SENTENCEPIECE_SPACE)) for p in pieces]
            if sum(lengths) != len(word):  # the model normalized the word: shares of its span
                tokens.extend(piece_spans(pieces, Token(word, starts[0], ends[-1]), lengths))
                continue
            offset = 0  # one for one: each piece spans what its characters came from (an accent with them)
            for piece, length in zip(pieces, lengths):
                start = starts[offset] if offset < len(word) else ends[-1]
                tokens.append(Token(piece, start, ends[offset + length - 1] if length else start))
                offset += length
        return tokens


def words_tokenizer(lowercase: bool = True):
    """The word-level tokenizer as a callable like :class:`WordPieceOffsets`."""

    def tokenize(text: str) -> List[Token]:
        return word_tokens(text, lowercase)

    return tokenize
