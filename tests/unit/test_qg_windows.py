"""Answer-aware passage windows for question generation (UniLM v1 §3.3), on constructed long passages:
the answer at the start, middle and end, an answer not in the passage, the token budget, the
tokenizers, and the command line."""

import json
import os
import re
from collections import Counter

import pytest

from unilm_fairseq.prepare import seq2seq_release_formats as sources
from unilm_fairseq.prepare.qg_windows import AnswerWindow, answer_window, grow, sentence_ends
from unilm_fairseq.prepare.seq2seq_release_formats import Pair, WordPieceTokenizer

from ..helpers.cli import REPO, run_cli

SCRIPT = os.path.join(REPO, "scripts", "prepare_seq2seq_data.py")
SEP = "[SEP]"


def sentence(k):
    return f"Sentence {k} mentions item{k} among other old things."  # 8 whitespace words


SENTENCES = [sentence(k) for k in range(12)]
PASSAGE = " ".join(SENTENCES)  # 96 words


def window(answer, limit, passage=PASSAGE, answer_first=False, answer_start=None, tokenize=str.split):
    """The source tokens (joined) and the counts, through ``format_pairs`` as the script runs it."""
    stats = Counter()
    segments = (answer, passage) if answer_first else (passage, answer)
    pair = Pair(segments, ("Which item?",), answer_start)
    fit = AnswerWindow(tokenize, SEP, answer_first, stats)
    [(source, _)] = sources.format_pairs(
        [pair], tokenize, SEP, max_source_tokens=limit, stats=stats, fit_source=fit
    )
    return source, stats


def joined(first, last):
    return " ".join(SENTENCES[first : last + 1])


# limit 30: the answer (1 token) and [SEP] leave 28 tokens, three sentences of 8
@pytest.mark.parametrize(
    "answer, first, last, moved",
    [("item0", 0, 2, 0), ("item6", 5, 7, 1), ("item11", 9, 11, 1)],
    ids=["start", "middle", "end"],
)
def test_window_of_whole_sentences_around_the_answer(answer, first, last, moved):
    source, stats = window(answer, 30)
    assert source == f"{joined(first, last)} {SEP} {answer}"
    assert len(source.split()) <= 30
    assert stats["qg_window"] == stats["truncated_source"] == 1
    assert stats["qg_window_moved"] == moved
    assert stats["qg_answer_searched"] == 1  # no offset given: found by its text
    # plain truncation would have cut the answer out of the passage, and the answer itself
    plain = list(
        sources.format_pairs([Pair((PASSAGE, answer), ("q",))], str.split, SEP, max_source_tokens=30)
    )
    assert (answer in plain[0][0].split()) == (answer == "item0")


def test_answer_first_order_keeps_the_same_window():
    source, _ = window("item6", 30, answer_first=True)
    assert source == f"item6 {SEP} {joined(5, 7)}"


def test_within_the_limit_nothing_changes():
    source, stats = window("item6", 200)
    assert source == f"{PASSAGE} {SEP} item6"
    assert stats["qg_window"] == stats["truncated_source"] == 0


def test_answer_sentence_too_long_gives_a_window_of_words_centred_on_it():
    # limit 6: 4 passage tokens, half a sentence; left first on a tie
    source, stats = window("item6", 6)
    assert source == f"6 mentions item6 among {SEP} item6"
    assert stats["qg_window"] == stats["qg_window_moved"] == 1


def test_answer_not_in_the_passage_keeps_the_head_and_the_answer_whole():
    source, stats = window("the lighthouse keeper", 30)
    # 30 - 3 answer tokens - [SEP] = 26 passage tokens from the start
    assert source.split() == PASSAGE.split()[:26] + [SEP, "the", "lighthouse", "keeper"]
    assert stats["qg_answer_not_found"] == 1 and stats["qg_window"] == 0
    assert stats["truncated_source"] == 1
    # counted even when nothing has to be cut
    _, stats = window("the lighthouse keeper", 0)
    assert stats["qg_answer_not_found"] == 1 and stats["truncated_source"] == 0


def test_answer_too_long_for_the_limit_falls_back_to_plain_truncation():
    answer = "Sentence 6 mentions item6 among"
    source, stats = window(answer, 6)  # the answer and [SEP] take all 6 tokens
    assert source.split() == PASSAGE.split()[:6]
    assert stats["qg_answer_too_long"] == 1 and stats["qg_window"] == 0


def test_the_given_offset_picks_the_occurrence():
    # "old things." ends every sentence: the offset says which one is meant
    offset = PASSAGE.index(SENTENCES[6]) + SENTENCES[6].index("old things.")
    source, stats = window("old things.", 31, answer_start=offset)
    assert source == f"{joined(5, 7)} {SEP} old things."
    assert stats["qg_answer_searched"] == 0
    # a wrong offset: searched, first occurrence
    source, stats = window("old things.", 31, answer_start=offset + 1)
    assert source == f"{joined(0, 2)} {SEP} old things."
    assert stats["qg_answer_searched"] == 1


def test_du_line_files_are_split_at_their_separator():
    stats = Counter()
    fit = AnswerWindow(str.split, SEP, answer_first=True, stats=stats)  # line files keep their own order
    pairs = [Pair((f"{PASSAGE} {SEP} item11",), ("q",)), Pair((PASSAGE,), ("q",))]
    lines = list(
        sources.format_pairs(pairs, str.split, SEP, max_source_tokens=30, stats=stats, fit_source=fit)
    )
    assert lines[0][0] == f"{joined(9, 11)} {SEP} item11"
    assert lines[1][0].split() == PASSAGE.split()[:30]  # no separator: plain truncation, counted
    assert stats["qg_unsplit"] == 1 and stats["qg_window"] == 1 and stats["truncated_source"] == 2


WORDPIECE_VOCAB = ["[PAD]", "[UNK]", "[CLS]", SEP, "[MASK]", ".", "sentence", "mention", "##s", "item"]
WORDPIECE_VOCAB += (
    ["among", "other", "old", "thing"] + [str(k) for k in range(12)] + [f"##{k}" for k in range(12)]
)


def test_budget_in_wordpiece_tokens():
    tokenize = WordPieceTokenizer(WORDPIECE_VOCAB, lowercase=True)
    per_sentence = len(tokenize(SENTENCES[0]))
    assert per_sentence == 12  # "mentions", "item0" and "things" are two pieces each, "." one more
    for answer, limit in [("item0", 40), ("item6", 40), ("item11", 40), ("item6", 25), ("item6", 9)]:
        source, stats = window(answer, limit, tokenize=tokenize)
        tokens = source.split()
        assert len(tokens) <= limit
        passage = tokens[: tokens.index(SEP)]
        answer_pieces = tokenize(answer)
        assert tokens[tokens.index(SEP) + 1 :] == answer_pieces
        assert any(passage[i : i + 2] == answer_pieces for i in range(len(passage)))  # in the window
        assert stats["qg_window"] == 1
        if limit == 40:  # 40 - 2 - 1 = 37 tokens: three sentences of 12
            assert len(passage) == 3 * per_sentence and passage[-1] == "."


def test_tokenizer_that_joins_across_words_still_fits():
    """Per-word costs underestimate a tokenizer that makes tokens across words (here: one per space);
    the window is then shrunk from the side farther from the answer until it fits."""

    def spaces_too(text):
        return re.findall(r"\S+| ", text)

    stats = Counter()
    fit = AnswerWindow(spaces_too, SEP, answer_first=False, stats=stats)
    tokens, cut = fit(Pair((PASSAGE, "item6"), ("q",)), 30)
    assert cut and len(tokens) == 29 and tokens[-2:] == [SEP, "item6"]
    # 14 words and 13 spaces (27 <= 28 tokens), cut alternately from both ends of the three sentences
    assert "".join(tokens[:-2]) == " ".join(joined(5, 7).split()[5:19])
    assert stats["qg_window"] == 1


def test_sentence_ends():
    words = ["It", "ended.", "Then", "Mr.", "Smith", "came", '."', "next", "one", "?", "fin"]
    assert sentence_ends(words) == [False, True, False, True, False, False, True, False, False, True, True]
    assert sentence_ends(["so", "it", "went."]) == [False, False, True]


def test_grow_alternates_sides_and_stops_where_a_unit_does_not_fit():
    assert grow([1, 1, 5, 1, 1], 2, 3, budget=9) == (0, 5)
    assert grow([1, 1, 5, 1, 1], 2, 3, budget=8) == (0, 4)  # left, right, left, then right does not fit
    assert grow([4, 1, 5, 1, 1], 2, 3, budget=8) == (1, 5)  # the left side stops, the right goes on
    # sentences [0, 2) [2, 4) [4, 6): the answer word 2 sits in the middle sentence
    assert answer_window([1] * 6, [False, True, False, True, False, True], (2, 3), budget=4) == (0, 4)
    assert answer_window([3] * 6, [False, True] * 3, (2, 4), budget=5) is None  # answer words alone: 6


def test_squad_answer_start_survives_whitespace_normalization(tmp_path):
    context = "The  lighthouse\non Gull Point\n\nwas built in 1874 ;  oil burned until 1921."
    qas = [
        {
            "id": "1",
            "question": "When?",
            "answers": [{"answer_start": context.index("1874"), "text": "1874"}],
        },
        {
            "id": "2",
            "question": "What?",
            "answers": [{"answer_start": context.index("  oil"), "text": "  oil"}],
        },
    ]
    (tmp_path / "train.json").write_text(
        json.dumps({"data": [{"paragraphs": [{"context": context, "qas": qas}]}]})
    )
    pairs = list(sources.read_squad_qg(str(tmp_path), "train", answer_first=False))
    for pair, answer in zip(pairs, ["1874", "oil"]):
        passage = pair.source[0]
        assert passage[pair.answer_start : pair.answer_start + len(answer)] == answer


def test_cli_windows_and_counts(tmp_path):
    context = PASSAGE

    def qa(key, question, answer, start):
        return {"id": key, "question": question, "answers": [{"answer_start": start, "text": answer}]}

    qas = [
        qa("a", "Which item comes last?", "item11", context.index("item11")),
        qa("b", "Which item is missing?", "item99", 0),
        qa("c", "Which item comes first?", "item0", context.index("item0")),
    ]
    raw = tmp_path / "raw"
    raw.mkdir()
    (raw / "train.json").write_text(
        json.dumps({"data": [{"paragraphs": [{"context": context, "qas": qas}]}]})
    )
    common = ["--format", "squad_qg", "--input", raw, "--splits", "train", "--qg-order", "passage_answer",
              "--max-source-tokens", 30]  # fmt: skip
    proc = run_cli(["python", SCRIPT, *map(str, common), "--output", str(tmp_path / "w")])
    src = (tmp_path / "w" / "train.src").read_text().splitlines()
    assert src == [
        f"{joined(9, 11)} {SEP} item11",
        " ".join(PASSAGE.split()[:28]) + f" {SEP} item99",
        f"{joined(0, 2)} {SEP} item0",
    ]
    assert "2 cut to a passage window around the answer, 1 of them away from the passage start" in proc.stderr
    assert "1 answers not found in their passage" in proc.stderr and "truncated 3 sources" in proc.stderr
    # --qg-window head: the old plain truncation, which loses the answer at the end
    head = run_cli(["python", SCRIPT, *map(str, common), "--output", str(tmp_path / "h"),
                    "--qg-window", "head"])  # fmt: skip
    head_src = (tmp_path / "h" / "train.src").read_text().splitlines()
    assert head_src[0].split() == PASSAGE.split()[:30]
    assert "passage window" not in head.stderr
