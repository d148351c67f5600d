"""Extractive QA data: offsets, answer spans, sliding windows, max context, batches; bad input."""

import json
import unicodedata
from collections import Counter

import pytest
import torch

from unilm_fairseq.data.dictionary import TokenListDictionary
from unilm_fairseq.encoders.wordpiece import WordPieceBPE, WordPieceConfig
from unilm_fairseq.qa.offset_tokenizers import SentencePieceOffsets, Token, WordPieceOffsets, word_tokens
from unilm_fairseq.qa.squad_dataset import SquadWindowDataset, tokenize_examples
from unilm_fairseq.qa.squad_examples import (
    answer_token_span,
    doc_windows,
    example_windows,
    max_context_flags,
    read_squad_examples,
)

VOCAB = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "the", "light", "##house", "was", "built", "in",
         "18", "##74", ".", "un", "##aff", "##able", "keep", "##ers", "'", "s", "?", "when"]  # fmt: skip


def test_word_tokens_keep_character_spans():
    text = "Don't  stop!\tCafé"
    tokens = word_tokens(text)
    assert [t.text for t in tokens] == ["don", "'", "t", "stop", "!", "cafe"]
    assert [text[t.start : t.end] for t in tokens] == ["Don", "'", "t", "stop", "!", "Café"]
    assert [t.text for t in word_tokens(text, lowercase=False)] == ["Don", "'", "t", "stop", "!", "Café"]


def test_wordpiece_pieces_have_exact_character_spans():
    text = "The Lighthouse was built in 1874."
    tokens = WordPieceOffsets(VOCAB)(text)
    assert [t.text for t in tokens] == ["the", "light", "##house", "was", "built", "in", "18", "##74", "."]
    assert [text[t.start : t.end] for t in tokens] == ["The", "Light", "house", "was", "built", "in", "18",
                                                       "74", "."]  # fmt: skip
    assert WordPieceOffsets(VOCAB)("zzz keepers") == [Token("[UNK]", 0, 3), Token("keep", 4, 8),
                                                      Token("##ers", 8, 11)]  # fmt: skip


def test_wordpiece_tokens_match_the_wordpiece_encoder(tmp_path):
    vocab = tmp_path / "vocab.txt"
    vocab.write_text("\n".join(VOCAB) + "\n")
    text = "When was the lighthouse built?  The keepers' unaffable lighthouse, in 1874."
    encoder = WordPieceBPE(WordPieceConfig(wordpiece_vocab=str(vocab)))
    assert [t.text for t in WordPieceOffsets(VOCAB)(text)] == encoder.tokenize(text)


def test_answer_char_span_to_token_span_with_sub_tokens():
    text = "The lighthouse was built in 1874."
    spans = [(t.start, t.end) for t in WordPieceOffsets(VOCAB)(text)]
    # the, light, ##house, was, built, in, 18, ##74, .
    assert answer_token_span(spans, text.index("1874"), text.index("1874") + 4) == (6, 7)
    assert answer_token_span(spans, text.index("lighthouse"), text.index("lighthouse") + 10) == (1, 2)
    # an answer that ends inside a word piece still covers that piece
    assert answer_token_span(spans, text.index("house"), text.index("house") + 5) == (2, 2)
    assert answer_token_span(spans, text.index("built in"), text.index("built in") + 8) == (4, 5)
    assert answer_token_span(spans, 3, 4) is None  # only the space between "The" and "lighthouse"


def test_sliding_windows_hand_checked():
    # 10 passage tokens, windows of 4, stride 3: starts 0, 3, 6 (the last reaches the end)
    assert doc_windows(10, 4, 3) == [(0, 4), (3, 4), (6, 4)]
    assert doc_windows(4, 4, 3) == [(0, 4)]
    assert doc_windows(5, 4, 3) == [(0, 4), (3, 2)]
    # stride longer than a window: windows never skip tokens
    assert doc_windows(9, 4, 6) == [(0, 4), (4, 4), (8, 1)]
    # score = min(left, right) + 0.01 * length. Token 3: min(3, 0) in window 0, min(0, 3) in window 1:
    # a tie, the first window wins. Tokens 4, 5: min 1 in window 1. Token 6: min(3, 0) in window 1,
    # min(0, 3) in window 2: a tie, window 1. Tokens 7-9: window 2 only.
    flags = [tuple(f.tolist()) for f in max_context_flags(doc_windows(10, 4, 3))]
    assert flags == [(True, True, True, True), (False, True, True, True), (False, True, True, True)]
    # equal side context (0 for token 1 in both): the longer window wins, 0.04 > 0.02
    flags = [f.tolist() for f in max_context_flags([(0, 2), (1, 4)])]
    assert flags == [[True, False], [True, True, True, True]]


def test_windows_targets_and_offsets():
    stats = Counter()
    # question of 2 tokens, max length 9: 9 - 2 - 3 = 4 passage tokens per window, stride 3
    windows = example_windows(0, 2, 10, (4, 5), 9, 3, stats)
    assert [(w.doc_start, w.length) for w in windows] == [(0, 4), (3, 4), (6, 4)]
    # passage token 0 sits at input position 4 ([SOS] q q [EOS]); the answer (4, 5) is only in window 1
    assert [(w.start, w.end) for w in windows] == [(0, 0), (4 + 1, 4 + 2), (0, 0)]
    assert stats == Counter(windows=3, answer_outside_window=2)
    no_answer = example_windows(0, 2, 10, None, 9, 3, Counter())
    assert [(w.start, w.end) for w in no_answer] == [(0, 0)] * 3


def write_squad(path, paragraphs):
    path.write_text(json.dumps({"version": "v2.0", "data": [{"title": "t", "paragraphs": paragraphs}]}))
    return str(path)


@pytest.fixture
def dictionary():
    return TokenListDictionary.from_tokens(VOCAB)


def load(path, dictionary, training=True, max_seq_length=16, stride=3):
    stats = Counter()
    examples = read_squad_examples(path, stats)
    tokenized, windows = tokenize_examples(
        examples, WordPieceOffsets(dictionary.symbols), dictionary, max_seq_length, stride, 8, training, stats
    )
    return SquadWindowDataset(examples, tokenized, windows, dictionary), stats


def test_bad_input_is_skipped_and_counted(tmp_path, dictionary):
    context = "The lighthouse was built in 1874."
    qas = [
        {"id": "ok", "question": "When was it built?", "answers": [{"text": "1874", "answer_start": 28}]},
        {"id": "mismatch", "question": "When?", "answers": [{"text": "1874", "answer_start": 3}]},
        {"id": "empty-q", "question": "  ", "answers": [{"text": "1874", "answer_start": 28}]},
        {"id": "no-answers", "question": "When?", "answers": []},
        {"id": "impossible", "question": "Who?", "answers": [], "is_impossible": True,
         "plausible_answers": [{"text": "1874", "answer_start": 28}]},
    ]  # fmt: skip
    empty_passage = {
        "id": "empty-passage",
        "question": "When?",
        "answers": [{"text": " ", "answer_start": 0}],
    }
    paragraphs = [{"context": context, "qas": qas}, {"context": " ", "qas": [empty_passage]}]
    path = write_squad(tmp_path / "bad.json", paragraphs)
    dataset, stats = load(path, dictionary)
    kept = {dataset.examples[w.example].qid for w in dataset.windows}
    assert kept == {"ok", "impossible"}
    assert stats["answer_mismatch"] == 1 and stats["no_answer"] == 2  # no answers; " " is no answer either
    assert stats["skipped_empty_question"] == 1 and stats["skipped_empty_passage"] == 1
    assert stats["skipped_no_answer_span"] == 2
    impossible = [w for w in dataset.windows if dataset.examples[w.example].qid == "impossible"]
    assert all((w.start, w.end) == (0, 0) for w in impossible)
    # inference answers every question that has a question and a passage
    inference, _ = load(path, dictionary, training=False)
    assert {inference.examples[w.example].qid for w in inference.windows} == {
        "ok", "mismatch", "no-answers", "impossible"}  # fmt: skip


def test_not_squad_json_is_a_clear_error(tmp_path):
    path = tmp_path / "x.json"
    path.write_text(json.dumps({"data": [{"title": "t"}]}))
    with pytest.raises(ValueError, match="not a SQuAD JSON file"):
        read_squad_examples(str(path))


def test_long_passage_is_windowed_and_batched(tmp_path, dictionary):
    context = " ".join(["the lighthouse was built in"] * 4) + " in 1874."  # 28 pieces
    qas = [{"id": "q", "question": "When was the lighthouse built?",
            "answers": [{"text": "1874", "answer_start": context.index("1874")}]}]  # fmt: skip
    dataset, stats = load(write_squad(tmp_path / "long.json", [{"context": context, "qas": qas}]), dictionary)
    # question: when was the light ##house built ? = 7 tokens; 16 - 7 - 3 = 6 passage tokens, stride 3
    assert [(w.doc_start, w.length) for w in dataset.windows] == [(s, 6) for s in range(0, 22, 3)] + [(24, 4)]
    assert stats["windows"] == 9 and stats["answer_outside_window"] == 7
    batch = dataset.collater([dataset[i] for i in range(len(dataset))])
    tokens, target, span_mask = batch["net_input"]["src_tokens"], batch["target"], batch["span_mask"]
    assert tokens.shape == (9, 16)
    d = dictionary
    assert tokens[0, 0] == d.bos() and tokens[0, 8] == d.eos() and tokens[0, 15] == d.eos()
    assert span_mask[0].tolist() == [True] + [False] * 8 + [True] * 6 + [False]
    assert span_mask[-1].tolist() == [True] + [False] * 8 + [True] * 4 + [False] * 3  # 2 of them padding
    assert tokens[-1, -2:].tolist() == [d.pad(), d.pad()]
    # "18 ##74" are passage tokens 25, 26: in the windows starting at 21 and 24; passage starts at input 9
    assert target[:-2].eq(0).all() and target[-2].tolist() == [13, 14] and target[-1].tolist() == [10, 11]
    assert [d[int(i)] for i in tokens[-1, 10:12]] == ["18", "##74"]
    # token 25 has more context in the window starting at 21 (min(4, 1) + .06 vs min(1, 2) + .04)
    assert dataset.windows[-2].max_context[4] and not dataset.windows[-1].max_context[1]
    assert torch.equal(batch["id"], torch.arange(9))


def test_sentencepiece_pieces_have_exact_character_spans(tmp_path):
    import sentencepiece as spm

    lines = ["The lighthouse was built in 1874 by the keepers.", "Keepers built lighthouses."] * 50
    spm.SentencePieceTrainer.train(sentence_iterator=iter(lines), model_prefix=str(tmp_path / "spm"),
                                   vocab_size=30, model_type="unigram", minloglevel=2)  # fmt: skip
    tokenize = SentencePieceOffsets(str(tmp_path / "spm.model"), lowercase=False)
    text = "The  lighthouse, built in 1874."
    tokens = tokenize(text)
    assert len(tokens) > len(word_tokens(text))  # words split into several pieces
    # every character of every word is covered by exactly the pieces that spell it
    for token in tokens:
        assert text[token.start : token.end] == token.text.lstrip("\u2581") or token.text == "<unk>"
    spans = [(t.start, t.end) for t in tokens]
    first, last = answer_token_span(spans, text.index("lighthouse"), text.index("lighthouse") + 10)
    assert text[spans[first][0] : spans[last][1]] == "lighthouse"


def test_sentencepiece_spans_of_a_lowercased_accented_word(tmp_path):
    """A decomposed accent ("E" + U+0301) is one character of the normalized word "ecoles": the piece that
    spells it spans both, and the word's later pieces start after them."""
    import sentencepiece as spm

    lines = ["ecole ecoles ecole the ecoles school", "ecole the schools ecole"] * 50
    spm.SentencePieceTrainer.train(sentence_iterator=iter(lines), model_prefix=str(tmp_path / "spm"),
                                   vocab_size=20, model_type="bpe", minloglevel=2)  # fmt: skip
    tokenize = SentencePieceOffsets(str(tmp_path / "spm.model"), lowercase=True)
    text = "Les E\u0301coles"
    tokens = [t for t in tokenize(text) if t.start >= 4]
    assert "".join(t.text.lstrip("\u2581") for t in tokens) == "ecoles" and len(tokens) > 1
    assert tokens[0].start == 4 and tokens[-1].end == len(text)
    for token in tokens:  # each piece spans exactly the characters it spells, the accent with its letter
        spelled = unicodedata.normalize("NFD", text[token.start : token.end]).lower()
        assert "".join(c for c in spelled if not unicodedata.combining(c)) == token.text.lstrip("\u2581")
