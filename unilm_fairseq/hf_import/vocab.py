"""The ``dict.txt`` of a converted model: the source model's token ids, unchanged.

* BERT family (``vocab.txt``, or a WordPiece ``tokenizer.json``): the token list
  itself, one token per line; it loads as a
  :class:`~unilm_fairseq.data.dictionary.TokenListDictionary` (ids are line
  numbers, ``[CLS]/[PAD]/[SEP]/[UNK]/[MASK]`` play fairseq's special roles).
* RoBERTa (``vocab.json``, or a byte-level BPE ``tokenizer.json``): a fairseq
  dictionary whose symbols are the ids themselves (``"4 1"``, ``"5 1"``, ...),
  since fairseq's ``--bpe gpt2 --gpt2-encoder-json vocab.json`` writes each
  token as its id in that file.
* XLM-R (``sentencepiece.bpe.model``, or a Unigram ``tokenizer.json``): a
  fairseq dictionary of the sentencepiece pieces from id 3 on (XLM-R's id is
  the sentencepiece id + 1), read by ``--bpe sentencepiece``.

fairseq's dictionary already puts ``<s> <pad> </s> <unk>`` at ids 0-3, and
``<mask>`` comes last, as in RoBERTa and XLM-R.
"""

import json
import os
from typing import List, Mapping, Sequence

from ..data.dictionary import MASK_SYMBOL, TokenListDictionary
from .config import ConversionError

VOCAB_TXT = "vocab.txt"
VOCAB_JSON = "vocab.json"
SPM_MODEL = "sentencepiece.bpe.model"
TOKENIZER_JSON = "tokenizer.json"
# the files each family's vocabulary can come from, in order of preference
VOCAB_FILES = {
    "bert": (VOCAB_TXT, TOKENIZER_JSON),
    "electra": (VOCAB_TXT, TOKENIZER_JSON),
    "roberta": (VOCAB_JSON, TOKENIZER_JSON),
    "xlm-roberta": (SPM_MODEL, TOKENIZER_JSON),
}
FAIRSEQ_SPECIALS = ("<s>", "<pad>", "</s>", "<unk>")  # fairseq's Dictionary gives them ids 0-3
SPM_SPECIALS = 3  # sentencepiece ids 0-2 (<unk>, <s>, </s>) are replaced by FAIRSEQ_SPECIALS
DICT_COUNT = 1  # dict.txt has a count column; converted models do not use it


def find_vocab(model_dir: str, family: str) -> str:
    for name in VOCAB_FILES[family]:
        path = os.path.join(model_dir, name)
        if os.path.isfile(path):
            return path
    raise ConversionError(
        f"{model_dir}: no vocabulary found (expected {' or '.join(VOCAB_FILES[family])} for {family})"
    )


def id_ordered_tokens(token_to_id: Mapping[str, int], source: str) -> List[str]:
    """Tokens sorted by id; the ids must be exactly ``0 .. N-1``."""
    tokens = [None] * len(token_to_id)
    for token, i in token_to_id.items():
        if not isinstance(i, int) or not 0 <= i < len(tokens) or tokens[i] is not None:
            raise ConversionError(
                f"{source}: token ids are not 0..{len(tokens) - 1}, each once ({token!r}: {i!r})"
            )
        tokens[i] = token
    return tokens


def tokenizer_json_tokens(path: str) -> List[str]:
    """The tokens of a ``tokenizer.json`` in id order (model vocabulary plus added tokens)."""
    try:
        with open(path, encoding="utf-8") as f:
            data = json.load(f)
        vocab = data["model"]["vocab"]
    except (OSError, ValueError, KeyError, TypeError) as err:
        raise ConversionError(f"{path}: cannot read model.vocab ({type(err).__name__}: {err})") from None
    if isinstance(vocab, list):  # Unigram: [piece, score] in id order
        token_to_id = {entry[0]: i for i, entry in enumerate(vocab)}
    else:  # WordPiece, BPE: token -> id
        token_to_id = dict(vocab)
    for added in data.get("added_tokens") or []:
        token_to_id[added["content"]] = added["id"]
    return id_ordered_tokens(token_to_id, path)


def vocab_json_tokens(path: str) -> List[str]:
    try:
        with open(path, encoding="utf-8") as f:
            token_to_id = json.load(f)
    except (OSError, ValueError) as err:
        raise ConversionError(f"{path}: cannot read ({type(err).__name__}: {err})") from None
    return id_ordered_tokens(token_to_id, path)


def sentencepiece_tokens(path: str) -> List[str]:
    """XLM-R's ids over a sentencepiece model: fairseq's four specials, pieces 3.., then ``<mask>``."""
    import sentencepiece as spm

    try:
        sp = spm.SentencePieceProcessor(model_file=path)
    except (OSError, RuntimeError) as err:
        raise ConversionError(f"{path}: cannot load the sentencepiece model ({err})") from None
    if not (sp.is_unknown(0) and sp.is_control(1) and sp.is_control(2)):
        raise ConversionError(
            f"{path}: expected sentencepiece ids 0-2 to be <unk>, <s>, </s> (XLM-R's layout)"
        )
    pieces = [sp.id_to_piece(i) for i in range(SPM_SPECIALS, sp.get_piece_size())]
    return list(FAIRSEQ_SPECIALS) + pieces + [MASK_SYMBOL]


def token_list_text(tokens: Sequence[str], source: str) -> str:
    """BERT-family ``dict.txt``: the tokens, one per line (checked for the special tokens)."""
    try:
        TokenListDictionary.from_tokens(tokens, source)
    except ValueError as err:
        raise ConversionError(str(err)) from None
    bad = [t for t in tokens if not t or len(t.split()) != 1 or t != t.strip()]
    if bad:
        raise ConversionError(f"{source}: token {bad[0]!r} is empty or holds whitespace")
    return "".join(t + "\n" for t in tokens)


def fairseq_dict_text(tokens: Sequence[str], source: str, spell_ids: bool) -> str:
    """A fairseq ``dict.txt`` keeping the ids of ``tokens`` (fairseq's specials first, ``<mask>`` last).

    Args:
        spell_ids: write each token's id as its symbol (RoBERTa read through fairseq's gpt2 BPE).
    """
    if tuple(tokens[: len(FAIRSEQ_SPECIALS)]) != FAIRSEQ_SPECIALS or tokens[-1] != MASK_SYMBOL:
        raise ConversionError(
            f"{source}: ids 0-3 must be {' '.join(FAIRSEQ_SPECIALS)} and the last {MASK_SYMBOL}, as "
            f"fairseq's dictionary has them; found {list(tokens[: len(FAIRSEQ_SPECIALS)])} ... {tokens[-1]!r}"
        )
    body = range(len(FAIRSEQ_SPECIALS), len(tokens) - 1)
    lines = [f"{i if spell_ids else tokens[i]} {DICT_COUNT}" for i in body]
    lines.append(f"{MASK_SYMBOL} {DICT_COUNT}")
    return "".join(line + "\n" for line in lines)


def dict_text(vocab_path: str, family: str) -> str:
    """The ``dict.txt`` content for a model of ``family`` whose vocabulary is ``vocab_path``."""
    name = os.path.basename(vocab_path)
    if family in ("bert", "electra"):
        if name == TOKENIZER_JSON:
            tokens = tokenizer_json_tokens(vocab_path)
        else:
            with open(vocab_path, encoding="utf-8") as f:
                tokens = [line.rstrip("\r\n") for line in f]
            while tokens and not tokens[-1]:
                tokens.pop()
        return token_list_text(tokens, vocab_path)
    if family == "roberta":
        tokens = (
            tokenizer_json_tokens(vocab_path) if name == TOKENIZER_JSON else vocab_json_tokens(vocab_path)
        )
        return fairseq_dict_text(tokens, vocab_path, spell_ids=True)
    tokens = tokenizer_json_tokens(vocab_path) if name == TOKENIZER_JSON else sentencepiece_tokens(vocab_path)
    return fairseq_dict_text(tokens, vocab_path, spell_ids=False)
