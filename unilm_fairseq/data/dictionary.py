"""Dictionary loading shared by the plugin's tasks.

Two file formats load here:

* a fairseq ``dict.txt`` (``<symbol> <count>`` per line; fairseq's four
  special symbols come first, implicitly);
* a token list, one token per line and nothing else (BERT's ``vocab.txt``):
  ids are line numbers, exactly as the pre-trained model saw them, and the
  model's own special tokens take fairseq's roles (:class:`TokenListDictionary`).
"""

import io
import logging
from typing import Dict, List, Optional, Sequence

from fairseq.data import Dictionary

logger = logging.getLogger(__name__)

MASK_SYMBOL = "<mask>"
# fairseq's name for each role a special token plays
FAIRSEQ_ROLES = {"bos": "<s>", "pad": "<pad>", "eos": "</s>", "unk": "<unk>", "mask": MASK_SYMBOL}
# the special tokens a token-list vocabulary may use, tried in this order
SPECIAL_TOKEN_CONVENTIONS = (
    {"bos": "[CLS]", "pad": "[PAD]", "eos": "[SEP]", "unk": "[UNK]", "mask": "[MASK]"},  # BERT family
    dict(FAIRSEQ_ROLES),  # RoBERTa / XLM-R / sentencepiece vocabularies written one per line
)


def read_token_list(lines: Sequence[str]) -> Optional[List[str]]:
    """The tokens of a one-token-per-line file, or None when ``lines`` are in another format.

    A token list has a single whitespace-free field on every non-empty line.
    Trailing empty lines are ignored; an empty line between tokens is an error,
    since it would shift every later id.
    """
    tokens = [line.rstrip("\r\n") for line in lines]
    while tokens and not tokens[-1].strip():
        tokens.pop()
    if not tokens or any(len(t.split()) > 1 or (t and t != t.strip()) for t in tokens):
        return None
    empty = [i + 1 for i, t in enumerate(tokens) if not t]
    if empty:
        raise ValueError(f"line {empty[0]} is empty: every line of a token list is one token (its id)")
    return tokens


def is_reserved_looking(token: str) -> bool:
    """``[unused0]``, ``<pad>``, ``<0x0A>``: a token in brackets, the form special and reserved slots take."""
    return len(token) > 2 and (token[0], token[-1]) in {("[", "]"), ("<", ">")}


class TokenListDictionary(Dictionary):
    """A fairseq dictionary over a one-token-per-line vocabulary: id == line number.

    The vocabulary's special tokens (``[CLS] [PAD] [SEP] [UNK] [MASK]`` for the
    BERT family) take fairseq's roles: ``bos()`` is ``[CLS]``, ``eos()`` is
    ``[SEP]``, and so on. fairseq's names (``<s>``, ``</s>``, ``<pad>``,
    ``<unk>``, ``<mask>``) are aliases of them, so ``index("<mask>")`` is
    ``[MASK]``'s id, without adding a symbol. :meth:`save` writes the same
    one-token-per-line format, so ``fairseq-preprocess --srcdict vocab.txt``
    writes a ``dict.*.txt`` that loads back to the same ids.

    ``nspecial`` is one past the highest special id (``[MASK]`` = 103 in BERT's
    vocabulary): ids below it (specials and ``[unused*]``) are never drawn as
    random replacement tokens. Special tokens on the last lines (a ``<mask>``
    fairseq appended after the words, or specials listed after the words) do not
    count: they would make every word special. A word below ``nspecial`` (a
    vocabulary with its specials among the words) is logged.
    """

    def __init__(self, tokens: Sequence[str], specials: Dict[str, str]):
        super().__init__(bos=specials["bos"], pad=specials["pad"], eos=specials["eos"], unk=specials["unk"])
        # fairseq put its special symbols first; here every id comes from the file
        # (fairseq 0.12.2 has no add_special_symbols=False)
        self.symbols, self.count, self.indices = [], [], {}
        duplicates = []
        for token in tokens:
            if token in self.indices:
                duplicates.append(token)
            # appended even when repeated, so ids stay line numbers; the last line wins (as in BERT)
            self.indices[token] = len(self.symbols)
            self.symbols.append(token)
            self.count.append(1)
        if duplicates:
            logger.warning(
                "%d repeated tokens (first %r): each maps to its last line", len(duplicates), duplicates[0]
            )
        self.mask_word = specials["mask"]
        self.bos_index = self.indices[self.bos_word]
        self.pad_index = self.indices[self.pad_word]
        self.eos_index = self.indices[self.eos_word]
        self.unk_index = self.indices[self.unk_word]
        self.aliases = {FAIRSEQ_ROLES[role]: self.indices[token] for role, token in specials.items()}
        special_ids = set(self.aliases.values())
        # special tokens that end the vocabulary (fairseq's <mask> appended after the words and written back
        # one per line, or a vocabulary that lists its specials last) open no special range: the words
        # before them stay candidates (random_token_candidates leaves the specials themselves out)
        end = len(self.symbols)
        while end > 0 and end - 1 in special_ids:
            end -= 1
        leading = [i for i in special_ids if i < end]
        self.nspecial = 1 + max(leading) if leading else 0
        reserved = [t for t in self.symbols[: self.nspecial] if not is_reserved_looking(t)]
        if reserved:
            logger.warning(
                "%d tokens below the special token %r (id %d), first %r, are never drawn as random "
                "replacements: ids below the highest special id count as reserved",
                len(reserved), self.symbols[self.nspecial - 1], self.nspecial - 1, reserved[0],
            )  # fmt: skip

    @classmethod
    def from_tokens(cls, tokens: Sequence[str], source: str = "vocabulary") -> "TokenListDictionary":
        """Pick the special-token convention ``tokens`` holds completely; error naming ``source`` if none."""
        present = set(tokens)
        for specials in SPECIAL_TOKEN_CONVENTIONS:
            if all(token in present for token in specials.values()):
                return cls(tokens, specials)
        wanted = " or ".join(" ".join(s.values()) for s in SPECIAL_TOKEN_CONVENTIONS)
        raise ValueError(f"{source}: a one-token-per-line vocabulary must contain all of {wanted}")

    @classmethod
    def load(cls, f, add_special_symbols=True) -> "TokenListDictionary":
        """Load a one-token-per-line file (a path or an open text file)."""
        if isinstance(f, str):
            with open(f, encoding="utf-8") as fd:
                return cls.load(fd)
        source = getattr(f, "name", "vocabulary")
        try:
            tokens = read_token_list(f.readlines())
        except ValueError as err:
            raise ValueError(f"{source}: {err}") from None
        if tokens is None:
            raise ValueError(f"{source} is not a one-token-per-line vocabulary")
        return cls.from_tokens(tokens, source)

    def index(self, sym: str) -> int:
        if sym in self.indices:
            return self.indices[sym]
        return self.aliases.get(sym, self.unk_index)

    def __contains__(self, sym) -> bool:
        return sym in self.indices or sym in self.aliases

    def save(self, f) -> None:
        """Write every symbol, one per line, in id order (a path or an open text file)."""
        if isinstance(f, str):
            with open(f, "w", encoding="utf-8") as fd:
                return self.save(fd)
        for symbol in self.symbols:
            f.write(symbol + "\n")


def dictionary_from_lines(lines: Sequence[str], source: str) -> Dictionary:
    """A dictionary from the lines of a file named ``source`` (for messages), with ``<mask>``.

    A token list (BERT's ``vocab.txt``) becomes a :class:`TokenListDictionary`,
    ids unchanged, ``<mask>`` an alias of its mask token. A fairseq ``dict.txt``
    without ``<mask>`` gets it appended (so existing ids are unchanged).
    """
    try:
        tokens = read_token_list(lines)
    except ValueError as err:
        raise ValueError(f"{source}: {err}") from None
    if tokens is not None:
        dictionary = TokenListDictionary.from_tokens(tokens, source)
        logger.info(
            "%s: one token per line, ids are line numbers; %s/%s/%s/%s/%s play <s>/<pad>/</s>/<unk>/<mask>",
            source, dictionary.bos_word, dictionary.pad_word, dictionary.eos_word, dictionary.unk_word,
            dictionary.mask_word,
        )  # fmt: skip
        return dictionary
    dictionary = Dictionary()
    dictionary.add_from_file(io.StringIO("".join(lines)))
    if MASK_SYMBOL not in dictionary:
        dictionary.add_symbol(MASK_SYMBOL)
        logger.info(
            "%s has no %s symbol: added it as id %d", source, MASK_SYMBOL, dictionary.index(MASK_SYMBOL)
        )
    return dictionary


def load_dictionary_with_mask(filename: str) -> Dictionary:
    """Load a fairseq ``dict.txt`` or a one-token-per-line vocabulary (see :func:`dictionary_from_lines`)."""
    with open(filename, encoding="utf-8") as f:
        lines = f.readlines()
    return dictionary_from_lines(lines, filename)
