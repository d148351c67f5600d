"""Exact-id vocabularies: BERT's one-token-per-line ``vocab.txt`` as a fairseq dictionary, and the
``dict.txt`` written for RoBERTa / XLM-R vocabularies."""

import io
import json

import pytest
import torch
from fairseq.data import Dictionary, data_utils

from unilm_fairseq.data.dictionary import (
    MASK_SYMBOL,
    TokenListDictionary,
    load_dictionary_with_mask,
    read_token_list,
)
from unilm_fairseq.data.masking import random_token_candidates
from unilm_fairseq.hf_import import ConversionError
from unilm_fairseq.hf_import.vocab import fairseq_dict_text, id_ordered_tokens, tokenizer_json_tokens

from ..helpers.cli import preprocess
from ..helpers.hf import wordpiece_tokens

WORDS = ["the", "cat", "##s", "sat", "on", "mat", "."]


def bert_vocab_lines():
    """A BERT-style vocabulary: [PAD], [unused] slots, [UNK] [CLS] [SEP] [MASK], then words."""
    return ["[PAD]", "[unused0]", "[unused1]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"] + WORDS


def write_vocab(path, lines):
    path.write_text("".join(t + "\n" for t in lines), encoding="utf-8")
    return str(path)


def test_read_token_list_detects_the_format():
    assert read_token_list(["[PAD]\n", "a\n", "##b\n", "\n", "\n"]) == ["[PAD]", "a", "##b"]
    assert read_token_list(["a 5\n", "b 3\n"]) is None  # fairseq dict.txt
    assert read_token_list([]) is None
    with pytest.raises(ValueError, match="line 2 is empty"):
        read_token_list(["a\n", "\n", "b\n"])


def test_token_list_dictionary_keeps_line_numbers(tmp_path):
    lines = bert_vocab_lines()
    d = load_dictionary_with_mask(write_vocab(tmp_path / "vocab.txt", lines))
    assert isinstance(d, TokenListDictionary)
    assert len(d) == len(lines)
    assert all(d.index(t) == i for i, t in enumerate(lines))
    assert (d.bos(), d.pad(), d.eos(), d.unk()) == tuple(
        lines.index(t) for t in ("[CLS]", "[PAD]", "[SEP]", "[UNK]")
    )
    # fairseq's names are aliases; <mask> is [MASK] and no symbol is added
    assert d.index("<mask>") == lines.index("[MASK]") and "<mask>" in d
    assert d.index("</s>") == d.eos() and d.index("<s>") == d.bos()
    assert d.index("never-seen") == d.unk()
    assert d.nspecial == lines.index("[MASK]") + 1  # no special or [unused] id is a random replacement
    encoded = d.encode_line("the cats cat", add_if_not_exist=False)
    assert encoded.tolist() == [d.index("the"), d.unk(), d.index("cat"), d.eos()]
    assert d.string(torch.tensor([d.bos(), d.index("cat"), d.eos()])) == "cat"


def test_a_fairseq_dictionary_written_one_per_line_keeps_its_words_as_candidates(tmp_path):
    """A fairseq dictionary with its appended <mask>, written one token per line (as an export does), loads
    back with only fairseq's four specials below nspecial: its words stay random-replacement candidates."""
    fairseq_dict = Dictionary()
    for word in WORDS:
        fairseq_dict.add_symbol(word)
    fairseq_dict.add_symbol(MASK_SYMBOL)
    lines = list(fairseq_dict.symbols)
    assert lines[-1] == MASK_SYMBOL
    d = load_dictionary_with_mask(write_vocab(tmp_path / "vocab.txt", lines))
    assert isinstance(d, TokenListDictionary)
    assert d.nspecial == fairseq_dict.nspecial == 4
    mask = d.index(MASK_SYMBOL)
    assert mask == len(lines) - 1
    assert random_token_candidates(d, mask).tolist() == [d.index(w) for w in WORDS]
    # BERT's layout is unchanged: [MASK] inside the leading block still closes the special range
    bert = load_dictionary_with_mask(write_vocab(tmp_path / "bert.txt", bert_vocab_lines()))
    assert random_token_candidates(bert, bert.index("[MASK]")).tolist() == [bert.index(w) for w in WORDS]


def test_specials_listed_after_the_words_leave_every_word_a_candidate(tmp_path, caplog):
    """A vocabulary with its special tokens on its last lines opens no special range (nspecial 0), and the
    specials themselves are never random replacements; specials among the words reserve the words before
    them, which is logged."""
    specials = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
    d = load_dictionary_with_mask(write_vocab(tmp_path / "last.txt", WORDS + specials))
    assert d.nspecial == 0 and (d.pad(), d.index("<mask>")) == (len(WORDS), len(WORDS) + 4)
    assert random_token_candidates(d, d.index("<mask>")).tolist() == list(range(len(WORDS)))
    assert not [r for r in caplog.records if r.levelname == "WARNING"]
    lines = WORDS[:2] + specials + WORDS[2:]
    with caplog.at_level("WARNING", logger="unilm_fairseq.data.dictionary"):
        d = load_dictionary_with_mask(write_vocab(tmp_path / "among.txt", lines))
    assert d.nspecial == 7 and "2 tokens below the special token '[MASK]' (id 6), first 'the'" in caplog.text
    assert random_token_candidates(d, d.index("<mask>")).tolist() == list(range(7, len(lines)))


def test_random_replacement_needs_a_word(tmp_path):
    only_specials = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
    d = load_dictionary_with_mask(write_vocab(tmp_path / "vocab.txt", only_specials))
    with pytest.raises(ValueError, match="no token to draw random replacements from"):
        random_token_candidates(d, d.index("[MASK]"))


def test_token_list_dictionary_saves_the_same_file(tmp_path):
    path = write_vocab(tmp_path / "vocab.txt", bert_vocab_lines())
    d = load_dictionary_with_mask(path)
    d.save(str(tmp_path / "saved.txt"))
    assert (tmp_path / "saved.txt").read_bytes() == (tmp_path / "vocab.txt").read_bytes()
    buffer = io.StringIO()
    d.save(buffer)
    assert buffer.getvalue() == (tmp_path / "vocab.txt").read_text()


def test_repeated_tokens_keep_their_lines():
    d = TokenListDictionary.from_tokens(bert_vocab_lines() + ["the"])
    assert len(d) == len(bert_vocab_lines()) + 1
    assert d.index("the") == len(d) - 1  # the last line wins, as in BERT's tokenizer


def test_missing_special_tokens_are_named(tmp_path):
    path = write_vocab(tmp_path / "vocab.txt", ["[PAD]", "[UNK]", "[CLS]", "[SEP]"] + WORDS)
    with pytest.raises(ValueError, match=r"vocab\.txt.*\[MASK\]"):
        load_dictionary_with_mask(path)


def test_fairseq_dict_still_gets_mask_appended(tmp_path):
    path = tmp_path / "dict.txt"
    path.write_text("the 10\ncat 5\n")
    d = load_dictionary_with_mask(str(path))
    assert type(d) is Dictionary and d.index("the") == 4 and d.index("<mask>") == 6


def test_fairseq_preprocess_round_trip(tmp_path):
    """``fairseq-preprocess --srcdict vocab.txt`` binarizes with the vocabulary's own ids and writes
    dict files that load back to the same ids."""
    vocab = write_vocab(tmp_path / "vocab.txt", wordpiece_tokens())
    tokens = wordpiece_tokens()
    src = [" ".join(tokens[6:12]), " ".join(tokens[20:24]) + " unknown-piece"]
    tgt = [" ".join(tokens[30:33]), tokens[40]]
    (tmp_path / "train.src").write_text("\n".join(src) + "\n")
    (tmp_path / "train.tgt").write_text("\n".join(tgt) + "\n")
    out = tmp_path / "bin"
    preprocess(["--user-dir", "unilm_fairseq", "--task", "unilm_seq2seq",
                "--source-lang", "src", "--target-lang", "tgt", "--joined-dictionary", "--srcdict", vocab,
                "--trainpref", str(tmp_path / "train"), "--destdir", str(out), "--workers", "1"])  # fmt: skip
    for lang in ("src", "tgt"):
        assert (out / f"dict.{lang}.txt").read_bytes() == (tmp_path / "vocab.txt").read_bytes()
    d = load_dictionary_with_mask(str(out / "dict.src.txt"))
    assert all(d.index(t) == i for i, t in enumerate(tokens))
    sep, unk = tokens.index("[SEP]"), tokens.index("[UNK]")
    data = data_utils.load_indexed_dataset(str(out / "train.src-tgt.src"), d)
    assert data[0].tolist() == list(range(6, 12)) + [sep]
    assert data[1].tolist() == list(range(20, 24)) + [unk, sep]
    data = data_utils.load_indexed_dataset(str(out / "train.src-tgt.tgt"), d)
    assert data[1].tolist() == [40, sep]


def test_roberta_dict_spells_ids():
    tokens = ["<s>", "<pad>", "</s>", "<unk>", "\u0120a", "b", "<mask>"]
    text = fairseq_dict_text(tokens, "vocab.json", spell_ids=True)
    assert text == "4 1\n5 1\n<mask> 1\n"
    d = Dictionary.load(io.StringIO(text))
    assert [d.index(s) for s in ("4", "5", "<mask>")] == [4, 5, 6]


def test_xlmr_dict_keeps_pieces():
    tokens = ["<s>", "<pad>", "</s>", "<unk>", "\u2581a", "b", "<mask>"]
    d = Dictionary.load(io.StringIO(fairseq_dict_text(tokens, "spm", spell_ids=False)))
    assert all(d.index(t) == i for i, t in enumerate(tokens))


def test_fairseq_dict_needs_the_special_layout():
    with pytest.raises(ConversionError, match="vocab.json: ids 0-3 must be"):
        fairseq_dict_text(["<pad>", "<s>", "</s>", "<unk>", "a", "<mask>"], "vocab.json", spell_ids=True)
    with pytest.raises(ConversionError, match="vocab.json: token ids are not 0..2"):
        id_ordered_tokens({"a": 0, "b": 2, "c": 3}, "vocab.json")


def test_tokenizer_json_orders_by_id(tmp_path):
    unigram = {"model": {"type": "Unigram", "vocab": [["<s>", 0.0], ["<pad>", 0.0], ["x", -1.0]]}}
    (tmp_path / "u.json").write_text(json.dumps(unigram))
    assert tokenizer_json_tokens(str(tmp_path / "u.json")) == ["<s>", "<pad>", "x"]
    bpe = {
        "added_tokens": [{"id": 3, "content": "<mask>"}],
        "model": {"type": "BPE", "vocab": {"b": 1, "a": 0, "c": 2}},
    }
    (tmp_path / "b.json").write_text(json.dumps(bpe))
    assert tokenizer_json_tokens(str(tmp_path / "b.json")) == ["a", "b", "c", "<mask>"]


def test_roberta_dict_matches_fairseq_gpt2_bpe(tmp_path):
    """fairseq's ``--bpe gpt2`` over RoBERTa's ``vocab.json`` writes each token as its id there; the
    converted ``dict.txt`` maps those back to the same ids that RoBERTa's own tokenizer gives."""
    from fairseq.data.encoders.gpt2_bpe import GPT2BPE, GPT2BPEConfig

    transformers = pytest.importorskip("transformers")
    pieces = ["h", "e", "l", "o", "\u0120", "he", "ll", "\u0120he", "llo", "hello", "\u0120hello"]
    tokens = ["<s>", "<pad>", "</s>", "<unk>"] + pieces + ["<mask>"]
    (tmp_path / "vocab.json").write_text(json.dumps({t: i for i, t in enumerate(tokens)}))
    merges = ["h e", "l l", "\u0120 he", "ll o", "he llo", "\u0120he llo"]
    (tmp_path / "merges.txt").write_text("#version: 0.2\n" + "\n".join(merges) + "\n", encoding="utf-8")
    text = "hello hello ho"

    config = GPT2BPEConfig(
        gpt2_encoder_json=str(tmp_path / "vocab.json"), gpt2_vocab_bpe=str(tmp_path / "merges.txt")
    )
    bpe = GPT2BPE(config)
    d = Dictionary.load(io.StringIO(fairseq_dict_text(tokens, "vocab.json", spell_ids=True)))
    ours = d.encode_line(bpe.encode(text), add_if_not_exist=False, append_eos=False).tolist()
    tokenizer = transformers.RobertaTokenizer(str(tmp_path / "vocab.json"), str(tmp_path / "merges.txt"))
    assert ours == tokenizer(text, add_special_tokens=False)["input_ids"]
    assert d.unk() not in ours
