"""``--bpe wordpiece``: BERT's WordPiece tokenization from a local ``vocab.txt``, in pure Python.

The tokenizer is :class:`~.wordpiece_tokenizer.WordPieceTokenizer`; here the special tokens ``[PAD]``,
``[UNK]``, ``[CLS]``, ``[SEP]`` and ``[MASK]`` are also cut out of the raw text first and kept whole, as
BERT's tokenizer does. Casing follows the vocabulary unless ``--wordpiece-cased`` or
``--wordpiece-lowercase`` says otherwise (:func:`~.wordpiece_tokenizer.resolve_lowercase`).

fairseq's own ``--bpe bert`` needs ``transformers`` and, without ``--bpe-vocab-file``,
silently builds a 5-token vocabulary when offline; this one reads only the given file.
"""

import os
import re
from dataclasses import dataclass, field
from typing import List

from fairseq.data.encoders import register_bpe
from fairseq.dataclass import FairseqDataclass
from omegaconf import MISSING

from .wordpiece_tokenizer import (
    UNK,
    WORDPIECE_CONTINUATION,
    WordPieceTokenizer,
    casing_choice,
    detokenize_wordpiece,
)

SPECIAL_TOKENS = ("[PAD]", UNK, "[CLS]", "[SEP]", "[MASK]")  # never split, never lowercased
_SPECIAL_PATTERN = re.compile("(" + "|".join(re.escape(t) for t in SPECIAL_TOKENS) + ")")


@dataclass
class WordPieceConfig(FairseqDataclass):
    wordpiece_vocab: str = field(
        default=MISSING, metadata={"help": "BERT vocab.txt (one WordPiece per line) of the model"}
    )
    wordpiece_cased: bool = field(
        default=False,
        metadata={
            "help": "keep case and accents; by default the vocabulary decides (cased when it has entries "
            "with cased letters, else lowercased with accents stripped, as for uncased BERT)"
        },
    )
    wordpiece_lowercase: bool = field(
        default=False,
        metadata={"help": "lowercase and strip accents whatever the vocabulary (see --wordpiece-cased)"},
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
        self.tokenizer = WordPieceTokenizer.from_file(
            path,
            casing_choice(
                cfg.wordpiece_cased,
                getattr(cfg, "wordpiece_lowercase", False),  # absent from older saved configurations
                ("--wordpiece-cased", "--wordpiece-lowercase"),
            ),
        )
        self.vocab = self.tokenizer.vocab
        self.lowercase = self.tokenizer.lowercase

    def tokenize(self, text: str) -> List[str]:
        """WordPiece tokens of ``text``; special tokens such as ``[SEP]`` pass through whole."""
        tokens: List[str] = []
        for i, chunk in enumerate(_SPECIAL_PATTERN.split(text)):
            if i % 2:  # the pattern's captured group: a special token
                tokens.append(chunk)
            else:
                tokens.extend(self.tokenizer(chunk))
        return tokens

    def encode(self, x: str) -> str:
        return " ".join(self.tokenize(x))

    def decode(self, x: str) -> str:
        return detokenize_wordpiece(x)

    def is_beginning_of_word(self, x: str) -> bool:
        return not x.startswith(WORDPIECE_CONTINUATION)
