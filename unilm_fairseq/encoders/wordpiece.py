"""``--bpe wordpiece``: BERT's WordPiece tokenization from a local ``vocab.txt``, in pure Python.

Two stages, as in BERT:

1. basic tokenization: drop NUL, U+FFFD and control characters, turn every
   whitespace character into a space, put spaces around CJK ideographs, NFC-normalise,
   split on whitespace, then (uncased) lowercase and strip accents, and split every
   punctuation character off as its own token. The special tokens ``[PAD]``, ``[UNK]``,
   ``[CLS]``, ``[SEP]`` and ``[MASK]`` are cut out of the raw text first and kept whole.
2. WordPiece: each word becomes the greedy longest-match-first sequence of vocabulary
   pieces, continuations marked ``##``; a word with no such split, or longer than
   :data:`MAX_WORD_CHARS` characters, becomes ``[UNK]``.

fairseq's own ``--bpe bert`` needs ``transformers`` and, without ``--bpe-vocab-file``,
silently builds a 5-token vocabulary when offline; this one reads only the given file.
"""

import functools
import os
import re
import string
import unicodedata
from dataclasses import dataclass, field
from typing import Dict, List

from fairseq.data.encoders import register_bpe
from fairseq.dataclass import FairseqDataclass
from omegaconf import MISSING

from ..scoring.metrics import WORDPIECE_CONTINUATION, detokenize_wordpiece

UNK = "[UNK]"
SPECIAL_TOKENS = ("[PAD]", UNK, "[CLS]", "[SEP]", "[MASK]")  # never split, never lowercased
MAX_WORD_CHARS = 100  # BERT's limit: longer words are [UNK] without a WordPiece search
WORD_CACHE_SIZE = 1 << 16  # words are Zipf-distributed: a modest cache serves most lookups
# BERT treats every non-alphanumeric printable ASCII character as punctuation, "$", "+", "^" and "`" included
ASCII_PUNCTUATION = frozenset(string.punctuation)
# CJK Unified Ideographs blocks (and compatibility blocks): each ideograph is a word of its own
CJK_RANGES = (
    (0x4E00, 0x9FFF),
    (0x3400, 0x4DBF),
    (0x20000, 0x2A6DF),
    (0x2A700, 0x2B73F),
    (0x2B740, 0x2B81F),
    (0x2B820, 0x2CEAF),
    (0xF900, 0xFAFF),
    (0x2F800, 0x2FA1F),
)
_SPECIAL_PATTERN = re.compile("(" + "|".join(re.escape(t) for t in SPECIAL_TOKENS) + ")")


def is_whitespace(char: str) -> bool:
    """Space, tab, newline, carriage return, or any Unicode space separator (Zs)."""
    return char in " \t\n\r" or unicodedata.category(char) == "Zs"


def is_control(char: str) -> bool:
    """A Unicode "other" character (Cc, Cf, Co, Cn, Cs); tab and newlines count as whitespace instead."""
    return char not in "\t\n\r" and unicodedata.category(char).startswith("C")


def is_punctuation(char: str) -> bool:
    """Unicode punctuation (P*) or any printable non-alphanumeric ASCII character."""
    return char in ASCII_PUNCTUATION or unicodedata.category(char).startswith("P")


def is_cjk(char: str) -> bool:
    code = ord(char)
    return any(low <= code <= high for low, high in CJK_RANGES)


def clean_text(text: str) -> str:
    """Drop NUL, U+FFFD and control characters; every whitespace character becomes a space."""
    kept = []
    for char in text:
        if char in "\x00\ufffd" or is_control(char):
            continue
        kept.append(" " if is_whitespace(char) else char)
    return "".join(kept)


def strip_accents(text: str) -> str:
    """Decompose (NFD) and drop the combining marks (Mn): ``"café"`` -> ``"cafe"``."""
    return "".join(c for c in unicodedata.normalize("NFD", text) if unicodedata.category(c) != "Mn")


def split_punctuation(word: str) -> List[str]:
    """``"don't!"`` -> ``["don", "'", "t", "!"]``: every punctuation character stands alone."""
    pieces: List[str] = []
    start_new = True
    for char in word:
        if is_punctuation(char):
            pieces.append(char)
            start_new = True
        elif start_new:
            pieces.append(char)
            start_new = False
        else:
            pieces[-1] += char
    return pieces


def basic_tokenize(text: str, lowercase: bool = True) -> List[str]:
    """BERT's basic tokenizer on text without special tokens (see the module docstring)."""
    text = clean_text(text)
    text = "".join(f" {c} " if is_cjk(c) else c for c in text)
    # one character, one code point: "e" + combining acute and "é" must meet the same vocabulary entry
    text = unicodedata.normalize("NFC", text)
    words: List[str] = []
    for word in text.split():
        if lowercase:
            word = strip_accents(word.lower())
        words.extend(split_punctuation(word))
    return words


def wordpiece_split(word: str, vocab) -> List[str]:
    """Greedy longest-match-first split of one word into vocabulary pieces; ``[UNK]`` when impossible.

    ``"unaffable"`` -> ``["un", "##aff", "##able"]`` given those pieces.
    """
    if len(word) > MAX_WORD_CHARS:
        return [UNK]
    pieces: List[str] = []
    start = 0
    while start < len(word):
        prefix = WORDPIECE_CONTINUATION if start else ""
        for end in range(len(word), start, -1):
            piece = prefix + word[start:end]
            if piece in vocab:
                break
        else:
            return [UNK]
        pieces.append(piece)
        start = end
    return pieces


def load_vocab(path: str) -> Dict[str, int]:
    """BERT ``vocab.txt``: one token per line, its id the line number."""
    with open(path, encoding="utf-8") as f:
        return {line.rstrip("\n"): i for i, line in enumerate(f)}


@dataclass
class WordPieceConfig(FairseqDataclass):
    wordpiece_vocab: str = field(
        default=MISSING, metadata={"help": "BERT vocab.txt (one WordPiece per line) of the model"}
    )
    wordpiece_cased: bool = field(
        default=False,
        metadata={
            "help": "keep case and accents (cased vocabularies); by default text is lowercased and "
            "accents are stripped, as for uncased BERT"
        },
    )


@register_bpe("wordpiece", dataclass=WordPieceConfig)
class WordPieceBPE:
    """Text -> space-separated WordPiece tokens (``"playing"`` -> ``"play ##ing"``) and back."""

    def __init__(self, cfg: WordPieceConfig):
        path = cfg.wordpiece_vocab
        if path in (None, MISSING) or not os.path.isfile(path):
            raise FileNotFoundError(
                f"--bpe wordpiece needs --wordpiece-vocab, a local BERT vocab.txt (got {path!r})"
            )
        self.vocab = load_vocab(path)
        self.lowercase = not cfg.wordpiece_cased
        self._split_word = functools.lru_cache(maxsize=WORD_CACHE_SIZE)(self._split_uncached)

    def _split_uncached(self, word: str) -> List[str]:
        return wordpiece_split(word, self.vocab)

    def tokenize(self, text: str) -> List[str]:
        """WordPiece tokens of ``text``; special tokens such as ``[SEP]`` pass through whole."""
        tokens: List[str] = []
        for i, chunk in enumerate(_SPECIAL_PATTERN.split(text)):
            if i % 2:  # the pattern's captured group: a special token
                tokens.append(chunk)
                continue
            for word in basic_tokenize(chunk, self.lowercase):
                tokens.extend(self._split_word(word))
        return tokens

    def encode(self, x: str) -> str:
        return " ".join(self.tokenize(x))

    def decode(self, x: str) -> str:
        return detokenize_wordpiece(x)

    def is_beginning_of_word(self, x: str) -> bool:
        return not x.startswith(WORDPIECE_CONTINUATION)
