"""BERT's WordPiece tokenizer in pure Python: the one implementation behind every WordPiece path.

Two stages, as in BERT:

1. basic tokenization (:func:`word_tokens`, :func:`basic_tokenize`): drop NUL, U+FFFD and control
   characters, turn every whitespace character into a space, put spaces around CJK ideographs
   (:data:`CJK_RANGES`), NFC-normalise, split on whitespace, then (uncased) lowercase and strip accents,
   and split every punctuation character off as its own token;
2. WordPiece (:func:`wordpiece_split`): each word becomes the greedy longest-match-first sequence of
   vocabulary pieces, continuations marked ``##``; a word with no such split, or longer than
   :data:`MAX_WORD_CHARS` characters, becomes ``[UNK]``.

Every token remembers the character span ``[start, end)`` of the original text it was made from, so
extractive QA can answer with the original passage text (:meth:`WordPieceTokenizer.tokens`).

Casing is one rule everywhere (:func:`resolve_lowercase`): an explicit choice wins; otherwise a vocabulary
with cased entries (an entry other than a bracketed special token that lowercasing changes) is cased, any
other vocabulary uncased, as BERT's uncased vocabularies hold only lowercased text.
"""

import functools
import io
import logging
import re
import string
import unicodedata
from typing import Dict, Iterable, Iterator, List, NamedTuple, Optional, Sequence, Tuple

WORDPIECE_CONTINUATION = "##"  # marks a WordPiece that continues the previous word


logger = logging.getLogger(__name__)

UNK = "[UNK]"
MAX_WORD_CHARS = 100  # BERT's limit: longer words are [UNK] without a WordPiece search
WORD_CACHE_SIZE = 1 << 16  # words are Zipf-distributed: a modest cache serves most lookups
# BERT treats every non-alphanumeric printable ASCII character as punctuation, "$", "+", "^" and "`" included
ASCII_PUNCTUATION = frozenset(string.punctuation)
DROPPED_CHARACTERS = "\x00\ufffd"  # NUL and the replacement character: BERT deletes both
# CJK Unified Ideographs blocks (main, extensions A-E, compatibility and its supplement): each ideograph
# is a word of its own
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
_CJK_LOWEST = min(low for low, _ in CJK_RANGES)
_PLAIN = re.compile(r"[\x20-\x7e]*\Z")  # printable ASCII and spaces
_WORD = re.compile(r"\S+")  # whitespace as str.split() sees it
_ASCII_RUN = re.compile("[" + re.escape(string.punctuation) + "]|[^" + re.escape(string.punctuation) + "]+")
# vocabulary entries that are markers, not text: "[CLS]", "[unused0]", "<s>", "<unk>"
SPECIAL_BRACKETS = (("[", "]"), ("<", ">"))


class Token(NamedTuple):
    """A token and the character span ``text[start:end]`` it was made from."""

    text: str
    start: int
    end: int


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
    return code >= _CJK_LOWEST and any(low <= code <= high for low, high in CJK_RANGES)


def _cleaned(text: str) -> Iterator[Tuple[str, int]]:
    """``(character, its index in text)`` after BERT's clean-up: dropped characters skipped, whitespace
    characters turned into spaces."""
    for i, char in enumerate(text):
        if char in DROPPED_CHARACTERS or is_control(char):
            continue
        yield (" " if is_whitespace(char) else char), i


def clean_text(text: str) -> str:
    """Drop NUL, U+FFFD and control characters; every whitespace character becomes a space."""
    return "".join(char for char, _ in _cleaned(text))


def strip_accents(text: str) -> str:
    """Decompose (NFD) and drop the combining marks (Mn): ``"café"`` -> ``"cafe"``."""
    return "".join(c for c in unicodedata.normalize("NFD", text) if unicodedata.category(c) != "Mn")


def _punctuation_runs(word: str) -> List[Tuple[int, int]]:
    """``[start, end)`` of the tokens of ``word``: every punctuation character alone, the rest in runs."""
    if word.isascii():
        return [m.span() for m in _ASCII_RUN.finditer(word)]
    runs: List[Tuple[int, int]] = []
    start = 0
    for i, char in enumerate(word):
        if is_punctuation(char):
            if start < i:
                runs.append((start, i))
            runs.append((i, i + 1))
            start = i + 1
    if start < len(word):
        runs.append((start, len(word)))
    return runs


def split_punctuation(word: str) -> List[str]:
    """``"don't!"`` -> ``["don", "'", "t", "!"]``: every punctuation character stands alone."""
    return [word[start:end] for start, end in _punctuation_runs(word)]


# For each character of a string, the [start, end) of the original text it came from: lists, or ranges
# where the string is the text itself.
Spans = Tuple[Sequence[int], Sequence[int]]


def _nfc(chars: str, origin: List[int]) -> Tuple[str, Spans]:
    """NFC form of ``chars`` (whose character ``i`` came from ``origin[i]``) with per-character spans.

    Characters NFC leaves alone keep their own one-character span; the characters of a run that
    composes (``"e" + U+0301`` -> ``"é"``) share the span of the whole run.
    """
    starts, ends = list(origin), [i + 1 for i in origin]
    if unicodedata.is_normalized("NFC", chars):
        return chars, (starts, ends)
    # runs that normalize independently: each starts at a starter (combining class 0), and a run that
    # composes or reorders with the previous one joins it
    runs: List[Tuple[int, int]] = []
    start = 0
    for i in range(1, len(chars) + 1):
        if i < len(chars) and unicodedata.combining(chars[i]):
            continue
        if runs:
            previous = runs[-1][0]
            joined = unicodedata.normalize("NFC", chars[previous:i])
            apart = unicodedata.normalize("NFC", chars[previous:start]) + unicodedata.normalize(
                "NFC", chars[start:i]
            )
            if joined != apart:
                runs[-1] = (previous, i)
                start = i
                continue
        runs.append((start, i))
        start = i
    text, new_starts, new_ends = [], [], []
    for begin, end in runs:
        run = chars[begin:end]
        normal = unicodedata.normalize("NFC", run)
        text.append(normal)
        if normal == run:
            new_starts += starts[begin:end]
            new_ends += ends[begin:end]
        else:
            new_starts += [starts[begin]] * len(normal)
            new_ends += [ends[end - 1]] * len(normal)
    return "".join(text), (new_starts, new_ends)


def _mapped(word: str, spans: Spans, whole: str, per_char: Sequence[str]) -> Spans:
    """Spans of ``whole``, the image of ``word`` under a character-wise map whose images are ``per_char``;
    when the word's image is not the concatenation of its characters' images (Greek final sigma), every
    character gets the span of the whole word."""
    starts, ends = spans
    if "".join(per_char) != whole:
        return [starts[0]] * len(whole), [ends[-1]] * len(whole)
    new_starts: List[int] = []
    new_ends: List[int] = []
    for image, start, end in zip(per_char, starts, ends):
        new_starts += [start] * len(image)
        new_ends += [end] * len(image)
    return new_starts, new_ends


def _uncased(word: str, spans: Spans) -> Tuple[str, Spans]:
    """``word`` lowercased, then stripped of accents, as BERT does for uncased vocabularies."""
    if word.isascii():
        return word.lower(), spans
    lowered = word.lower()
    spans = _mapped(word, spans, lowered, [c.lower() for c in word])
    stripped = strip_accents(lowered)
    return stripped, _mapped(lowered, spans, stripped, [strip_accents(c) for c in lowered])


def _basic_words(text: str, lowercase: bool) -> Iterator[Tuple[str, Spans]]:
    """BERT's basic tokens of ``text``, each with the spans of its characters."""
    if _PLAIN.match(text):  # nothing to clean, no ideograph, already NFC: the text maps onto itself
        normal, starts, ends = text, range(len(text)), range(1, len(text) + 1)
    else:
        chars: List[str] = []
        origin: List[int] = []
        for char, i in _cleaned(text):
            if is_cjk(char):  # the spaces around an ideograph point at its own edges
                chars += [" ", char, " "]
                origin += [i, i, i + 1]
            else:
                chars.append(char)
                origin.append(i)
        normal, (starts, ends) = _nfc("".join(chars), origin)
    for match in _WORD.finditer(normal):
        begin, end = match.span()
        word, spans = match.group(), (starts[begin:end], ends[begin:end])
        if lowercase:
            word, spans = _uncased(word, spans)
        for a, b in _punctuation_runs(word):
            yield word[a:b], (spans[0][a:b], spans[1][a:b])


def word_tokens(text: str, lowercase: bool = True) -> List[Token]:
    """BERT's basic tokens of ``text`` with their character spans.

    ``"Don't stop!"`` -> ``don [0,3) ' [3,4) t [4,5) stop [6,10) ! [10,11)`` (uncased). A word that
    normalizes to nothing (only combining marks, uncased) is dropped.
    """
    return [Token(word, starts[0], ends[-1]) for word, (starts, ends) in _basic_words(text, lowercase)]


def word_character_spans(text: str, lowercase: bool = True) -> Iterator[Tuple[str, Spans]]:
    """BERT's basic tokens of ``text``, each with the ``(starts, ends)`` in ``text`` of every one of its
    characters (a character of a lowercased or accent-stripped word may come from several of ``text``)."""
    return _basic_words(text, lowercase)


def basic_tokenize(text: str, lowercase: bool = True) -> List[str]:
    """BERT's basic tokens of ``text`` (see the module docstring): ``"Héllo,WORLD"`` -> ``hello , world``."""
    return [word for word, _ in _basic_words(text, lowercase)]


def wordpiece_split(word: str, vocab, max_chars: int = MAX_WORD_CHARS, unk: str = UNK) -> List[str]:
    """Greedy longest-match-first split of one word into vocabulary pieces; ``unk`` when impossible.

    ``"unaffable"`` -> ``["un", "##aff", "##able"]`` given those pieces.
    """
    if len(word) > max_chars:
        return [unk]
    pieces: List[str] = []
    start = 0
    while start < len(word):
        prefix = WORDPIECE_CONTINUATION if start else ""
        for end in range(len(word), start, -1):
            piece = prefix + word[start:end]
            if piece in vocab:
                break
        else:
            return [unk]
        pieces.append(piece)
        start = end
    return pieces


def load_vocab(path: str) -> Dict[str, int]:
    """BERT ``vocab.txt``: one token per line, its id the line number.

    Invalid UTF-8 is a ``ValueError`` naming the file and the line; so is a file without any token.
    """
    with open(path, "rb") as f:
        data = f.read()
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as error:
        line = data.count(b"\n", 0, error.start) + 1
        column = error.start - (data.rfind(b"\n", 0, error.start) + 1) + 1
        raise ValueError(
            f"{path}:{line}: not UTF-8 (byte {data[error.start]:#04x} at column {column})"
        ) from None
    vocab = {line.rstrip("\r\n"): i for i, line in enumerate(io.StringIO(text, newline=None))}
    if not vocab:
        raise ValueError(f"{path}: empty vocabulary (a BERT vocab.txt has one token per line)")
    return vocab


def is_special(entry: str) -> bool:
    """A marker such as ``[CLS]``, ``[unused0]`` or ``<s>`` rather than a piece of text."""
    return len(entry) > 2 and any(entry[0] == o and entry[-1] == c for o, c in SPECIAL_BRACKETS)


def cased_entries(vocab: Iterable[str]) -> List[str]:
    """The entries of ``vocab`` that lowercasing changes, special markers aside."""
    return [entry for entry in vocab if entry != entry.lower() and not is_special(entry)]


def resolve_lowercase(
    lowercase: Optional[bool], vocab: Iterable[str], source: str = "the vocabulary"
) -> bool:
    """Whether to lowercase and strip accents: ``lowercase`` when given, else inferred from ``vocab``
    (uncased unless some entry has cased letters). The choice is logged, naming ``source``."""
    if lowercase is not None:
        logger.info("WordPiece over %s: %s, as set", source, "uncased" if lowercase else "cased")
        return lowercase
    cased = cased_entries(vocab)
    if cased:
        logger.info(
            "WordPiece over %s: cased, inferred from its cased entries (%d, e.g. %r)",
            source,
            len(cased),
            cased[0],
        )
    else:
        logger.info("WordPiece over %s: uncased, inferred (no entry has cased letters)", source)
    return not cased


def casing_choice(
    cased: bool, lowercase: bool, flags: Tuple[str, str] = ("--cased", "--lowercase")
) -> Optional[bool]:
    """The ``lowercase`` argument of :func:`resolve_lowercase` from a pair of override flags (named
    ``flags`` in errors): ``None``, inferred from the vocabulary, when neither is set."""
    if cased and lowercase:
        raise ValueError(f"{flags[0]} and {flags[1]} contradict each other: give one of them")
    return True if lowercase else False if cased else None


LOWERCASE_HELP = (
    "lowercase the text (WordPiece: and strip accents, as BERT's uncased models); by default a WordPiece "
    "vocabulary decides (cased when it has entries with cased letters), other tokenizers keep the case"
)


def add_casing_arguments(
    parser, lowercase_help: str = LOWERCASE_HELP, cased_help: str = "keep case and accents"
):
    """``--lowercase`` and ``--cased`` (at most one), stored in ``lowercase``: ``True``, ``False``, or
    ``None`` (neither), which lets a WordPiece vocabulary decide. The preparation scripts' help by default."""
    casing = parser.add_mutually_exclusive_group()
    casing.add_argument(
        "--lowercase", dest="lowercase", action="store_const", const=True, default=None, help=lowercase_help
    )
    casing.add_argument("--cased", dest="lowercase", action="store_const", const=False, help=cased_help)


class WordPieceTokenizer:
    """BERT WordPiece over a vocabulary given as its pieces (``##`` continuations).

    ``tokenizer(text)`` gives the pieces, :meth:`tokens` the pieces with their character spans.
    ``lowercase=None`` infers the casing from the vocabulary (:func:`resolve_lowercase`).
    """

    def __init__(
        self,
        vocab: Iterable[str],
        lowercase: Optional[bool] = None,
        unk: str = UNK,
        max_chars_per_word: int = MAX_WORD_CHARS,
        source: str = "the vocabulary",
    ):
        self.vocab = frozenset(vocab)
        self.lowercase = resolve_lowercase(lowercase, self.vocab, source)
        self.unk, self.max_chars_per_word = unk, max_chars_per_word
        self.word_pieces = functools.lru_cache(maxsize=WORD_CACHE_SIZE)(self._word_pieces)

    @classmethod
    def from_file(cls, path: str, lowercase: Optional[bool] = None, **kwargs) -> "WordPieceTokenizer":
        """``vocab.txt``: one token a line (the line number is its id)."""
        return cls(load_vocab(path), lowercase, source=path, **kwargs)

    def _word_pieces(self, word: str) -> List[str]:
        return wordpiece_split(word, self.vocab, self.max_chars_per_word, self.unk)

    def __call__(self, text: str) -> List[str]:
        return [piece for word, _ in _basic_words(text, self.lowercase) for piece in self.word_pieces(word)]

    def tokens(self, text: str) -> List[Token]:
        """The pieces of ``text`` with the character spans they spell (an unknown word: the whole word)."""
        tokens: List[Token] = []
        for word, (starts, ends) in _basic_words(text, self.lowercase):
            pieces = self.word_pieces(word)
            if pieces == [self.unk]:
                tokens.append(Token(self.unk, starts[0], ends[-1]))
                continue
            offset = 0
            for i, piece in enumerate(pieces):
                length = len(piece) - (len(WORDPIECE_CONTINUATION) if i else 0)
                tokens.append(Token(piece, starts[offset], ends[offset + length - 1]))
                offset += length
        return tokens


def detokenize_wordpiece(text: str) -> str:
    """Join BERT WordPiece tokens: ``"hel ##lo world"`` -> ``"hello world"``.

    A continuation piece with nothing before it (a hypothesis may start with one) loses its ``##``;
    ``##`` alone is the two characters, not a continuation.
    """
    words: List[str] = []
    for token in text.split():
        continues = token.startswith(WORDPIECE_CONTINUATION) and len(token) > len(WORDPIECE_CONTINUATION)
        piece = token[len(WORDPIECE_CONTINUATION) :] if continues else token
        if continues and words:
            words[-1] += piece
        else:
            words.append(piece)
    return " ".join(words)
