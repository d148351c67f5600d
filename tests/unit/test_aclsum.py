"""ACLSum pairs, baselines and bad input (pure functions), and the ROUGE table script."""

import importlib.util
import json
import os
import subprocess
import sys

import pytest

from unilm_fairseq.prepare import aclsum

from ..helpers.cli import REPO, load_script
from ..helpers.resources import minilm_model_dir


def words(text: str) -> int:
    return len(text.split())


def paper(abstract, introduction=(), summaries=None, paper_id="P1"):
    if summaries is None:
        summaries = {"challenge": "c sum", "approach": "a sum", "outcome": "o sum"}
    return {
        "id": paper_id,
        "summary": summaries,
        "sentences": {"abstract": list(abstract), "introduction": list(introduction), "conclusion": []},
    }


def test_source_is_aspect_then_abstract_then_whole_introduction_sentences_within_budget():
    text, sentences, intro_used, truncated = aclsum.build_source(
        "approach", ["a1 a2 .", "a3 ."], ["i1 i2 .", "i3 i4 i5 .", "i6 ."], words, max_tokens=12
    )
    # "approach :" 2 + abstract 5 + "i1 i2 ." 3 = 10; "i3 i4 i5 ." (4) would make 14 > 12: stop there
    assert text == "approach : a1 a2 . a3 . i1 i2 ."
    assert sentences == ["a1 a2 .", "a3 .", "i1 i2 ."]
    assert (intro_used, truncated) == (1, False)
    assert words(text) <= 12


def test_an_abstract_over_the_budget_is_cut_and_reported():
    text, sentences, intro_used, truncated = aclsum.build_source(
        "outcome", ["a b c d e f g ."], ["i ."], words, max_tokens=6
    )
    assert text == "outcome : a b c d"
    assert (intro_used, truncated) == (0, True)


def test_a_budget_that_keeps_no_word_of_an_abstract_is_an_error():
    """Sources of the aspect prefix alone would have nothing to summarize, and the oracle baseline nothing to
    pick: the budget is refused with the paper and the prefix named."""
    with pytest.raises(ValueError, match="a budget of 2 source tokens keeps no word of paper 'P1'"):
        aclsum.build_pairs([paper(["a b c ."])], words, max_tokens=2)
    pairs, _ = aclsum.build_pairs([paper(["a b c ."])], words, max_tokens=3)  # "challenge : a"
    assert pairs[0].source == "challenge : a" and pairs[0].sentences == ["a"]  # the oracle has one to pick


def test_pairs_skip_empty_abstracts_and_missing_summaries_and_count_them():
    papers = [
        paper(["x y ."], ["i ."], paper_id="P1"),
        paper([], ["i ."], paper_id="P2"),  # no abstract: skipped
        paper(["u v ."], summaries={"challenge": "c", "approach": "  ", "outcome": None}, paper_id="P3"),
    ]
    pairs, stats = aclsum.build_pairs(papers, words, max_tokens=50)
    assert [(p.paper_id, p.aspect) for p in pairs] == [
        ("P1", "challenge"), ("P1", "approach"), ("P1", "outcome"), ("P3", "challenge"),
    ]  # fmt: skip
    assert (stats.papers, stats.pairs, stats.skipped_no_abstract, stats.skipped_no_summary) == (3, 4, 1, 2)
    assert "1 papers with an empty abstract and 2 aspects with no summary" in stats.describe()


def test_joined_pairs_are_one_per_complete_paper_with_its_three_summaries_in_aspect_order():
    papers = [
        paper(["x y ."], ["i ."], {"outcome": "o .", "challenge": "c .", "approach": "a ."}, paper_id="P1"),
        paper(["u v ."], summaries={"challenge": "c", "approach": "  ", "outcome": None}, paper_id="P2"),
        paper(["s ."], summaries={"challenge": "c2 .", "approach": "a2 .", "outcome": "o2 ."}, paper_id="P3"),
    ]
    pairs, stats = aclsum.build_pairs(papers, words, max_tokens=50, joined=True)
    assert [(p.paper_id, p.aspect, p.source, p.target) for p in pairs] == [
        ("P1", "joined", "x y . i .", "c . a . o ."), ("P3", "joined", "s .", "c2 . a2 . o2 ."),
    ]  # fmt: skip
    assert pairs[0].summaries == ("c .", "a .", "o .")
    # P2 lacks two of its summaries: counted, and its paper skipped, since its target would be incomplete
    assert (stats.papers, stats.pairs, stats.skipped_no_summary) == (3, 2, 2)
    assert (
        "2 aspects with no summary (their papers skipped: a joined target needs all three)"
        in stats.describe()
    )
    # no aspect prefix: the budget is the source's own
    text, *_ = aclsum.build_source(aclsum.JOINED, ["a b c d e f g ."], [], words, max_tokens=6)
    assert text == "a b c d e f"


def test_joined_baselines_join_three_sentences():
    abstract = ["first s .", "second s .", "third s .", "last s ."]
    summaries = {"challenge": "first s", "approach": "the cat sat on a mat", "outcome": "last s"}
    pairs, _ = aclsum.build_pairs(
        [paper(abstract, ["the cat sat on the mat ."], summaries)], words, max_tokens=50, joined=True
    )
    assert aclsum.baseline_hypotheses(pairs, "lead") == ["first s . second s . third s ."]
    assert aclsum.baseline_hypotheses(pairs, "positional") == ["first s . second s . last s ."]
    # each aspect's best sentence against that aspect's summary, in aspect order
    assert aclsum.baseline_hypotheses(pairs, "oracle", aclsum.summed_rouge) == [
        "first s . the cat sat on the mat . last s ."
    ]
    # a one-sentence abstract gives its sentence once
    short, _ = aclsum.build_pairs([paper(["only s ."])], words, max_tokens=50, joined=True)
    assert aclsum.baseline_hypotheses(short, "positional") == aclsum.baseline_hypotheses(short, "lead")
    assert aclsum.baseline_hypotheses(short, "lead") == ["only s ."]


def test_ptb_brackets_and_quotes_are_written_back():
    assert aclsum.clean_sentence("a -LRB- b -RRB- `` c ''") == 'a ( b ) " c "'


def test_baselines_lead_positional_and_oracle():
    pairs, _ = aclsum.build_pairs(
        [paper(["first s .", "second s .", "last s ."], ["the cat sat on the mat ."],
               summaries={"challenge": "x", "approach": "y", "outcome": "the cat sat on a mat"})],
        words, max_tokens=50,
    )  # fmt: skip
    assert aclsum.baseline_hypotheses(pairs, "lead") == ["first s ."] * 3
    assert aclsum.baseline_hypotheses(pairs, "positional") == ["first s .", "second s .", "last s ."]
    # the oracle picks the source sentence (introduction included) closest to the reference
    assert aclsum.baseline_hypotheses(pairs, "oracle", aclsum.summed_rouge)[2] == "the cat sat on the mat ."
    with pytest.raises(ValueError, match="unknown baseline"):
        aclsum.baseline_hypotheses(pairs, "best")


def test_missing_package_names_the_install_command(monkeypatch):
    monkeypatch.setattr(importlib.util, "find_spec", lambda name: None)
    with pytest.raises(aclsum.ACLSumNotInstalled, match="pip install aclsum"):
        aclsum.dataset_dir()


def test_a_bad_dataset_line_is_named(tmp_path, capsys):
    """A line that is not a paper's JSON object, or a file that is not UTF-8, is one error naming the file
    (and line), from the reader and from scripts/prepare_aclsum.py."""
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"id": "P1"}\n\n{"id": "P2", \n', encoding="utf-8")
    with pytest.raises(ValueError, match=r"bad.jsonl:3: not a JSON line"):
        aclsum.read_papers(str(bad))
    bad.write_text('{"id": "P1"}\n[1, 2]\n', encoding="utf-8")
    with pytest.raises(ValueError, match=r"bad.jsonl:2: a JSON list, not a paper's object"):
        aclsum.read_papers(str(bad))
    bad.write_bytes(b'{"id": "\xff"}\n')
    with pytest.raises(ValueError, match=r"bad.jsonl:1: not UTF-8 \(byte 0xff"):
        aclsum.read_papers(str(bad))
    assert aclsum.read_papers(str(write_bom(tmp_path / "bom.jsonl"))) == [{"id": "P1"}]
    for name in aclsum.SPLITS.values():
        (tmp_path / "data" / f"{name}.jsonl").parent.mkdir(exist_ok=True)
        (tmp_path / "data" / f"{name}.jsonl").write_text("not json\n", encoding="utf-8")
    prepare = load_script("scripts/prepare_aclsum.py", "prepare_aclsum_script")
    vocab = os.path.join(minilm_model_dir(), "vocab.txt")
    argv = [
        "--dataset-dir",
        str(tmp_path / "data"),
        "--output",
        str(tmp_path / "out"),
        "--wordpiece-vocab",
        vocab,
    ]
    assert prepare.main(argv) == 1
    err = capsys.readouterr().err
    assert ".jsonl:1: not a JSON line" in err and "--max-source-tokens" not in err


def write_bom(path):
    path.write_bytes(b'\xef\xbb\xbf{"id": "P1"}\n')
    return path


def test_real_aclsum_pairs_fit_the_budget_and_keep_every_summary():
    """On the installed data: 300/150/300 pairs, every source within the WordPiece budget."""
    from unilm_fairseq.encoders.wordpiece import WordPieceBPE, WordPieceConfig

    bpe = WordPieceBPE(WordPieceConfig(wordpiece_vocab=os.path.join(minilm_model_dir(), "vocab.txt")))
    folder = aclsum.dataset_dir()
    counts = {}
    for split, name in aclsum.SPLITS.items():
        papers = aclsum.read_papers(os.path.join(folder, f"{name}.jsonl"))
        pairs, stats = aclsum.build_pairs(papers, lambda t: len(bpe.tokenize(t)), max_tokens=126)
        counts[split] = stats.pairs
        assert all(len(bpe.tokenize(p.source)) <= 126 for p in pairs[:30])
        assert all(p.target and p.source.startswith(f"{p.aspect} :") for p in pairs)
        joined, _ = aclsum.build_pairs(papers, lambda t: len(bpe.tokenize(t)), max_tokens=126, joined=True)
        counts[f"{split} joined"] = len(joined)
        # each joined target is its paper's three aspect pairs' targets, in aspect order
        assert [p.target for p in joined] == [
            " ".join(p.target for p in pairs[3 * i : 3 * i + 3]) for i in range(len(joined))
        ]
    assert counts == {"train": 300, "valid": 150, "test": 300, "train joined": 100, "valid joined": 50,
                      "test joined": 100}  # fmt: skip


def rouge_table(*args):
    return subprocess.run(
        [sys.executable, os.path.join(REPO, "scripts", "rouge_table.py"), *args],
        capture_output=True, text=True, cwd=REPO,
    )  # fmt: skip


def test_rouge_table_rows_examples_and_json(tmp_path):
    ref = tmp_path / "ref.txt"
    ref.write_text("the cat sat on the mat\npolice arrested a man\n")
    (tmp_path / "src.txt").write_text("The cat sat. It was on a mat.\nA man ran! Police came.\n")
    (tmp_path / "copy.hyp").write_text("the cat sat on the mat\npolice arrested a man\n")
    gen = tmp_path / "gen.out"
    gen.write_text("S-1\tx\nD-1\t-0.5\tpolice ar ##rested a man\nD-0\t-0.4\tthe cat\nT-0\tthe cat\n")
    out = rouge_table("--ref", str(ref), "--lead", str(tmp_path / "src.txt"), "--system",
                      f"copy={tmp_path / 'copy.hyp'}", "--generated", f"model={gen}", "--detok", "wordpiece",
                      "--examples", "2", "--json", str(tmp_path / "s.json"),
                      "--hypotheses-out", str(tmp_path / "test.hyp"))  # fmt: skip
    assert out.returncode == 0, out.stderr
    # the model's outputs in test order (id 0 first, though the log has id 1 first), detokenized as scored
    assert (tmp_path / "test.hyp").read_text() == "the cat\npolice arrested a man\n"
    rows = {line.split()[0]: line.split()[1:] for line in out.stdout.splitlines()[1:4]}
    assert rows["copy"] == ["100.00", "100.00", "100.00"]
    # lead = "The cat sat." (F1 2/3) and "A man ran!" (P 2/3, R 2/4: F1 4/7); the mean is 61.90
    assert rows["lead"][0] == "61.90"
    assert "[1] model: police arrested a man" in out.stdout
    scores = json.loads((tmp_path / "s.json").read_text())
    assert scores["num_pairs"] == 2 and scores["scores"]["model"]["rouge1"] == pytest.approx(
        100 * (0.5 + 1) / 2
    )


def test_rouge_table_refuses_a_log_that_dropped_pairs(tmp_path):
    ref = tmp_path / "ref.txt"
    ref.write_text("a\nb\nc\n")
    gen = tmp_path / "gen.out"
    gen.write_text("H-0\t-1\ta\nH-2\t-1\tc\n")
    out = rouge_table("--ref", str(ref), "--generated", f"m={gen}", "--hypotheses-out", str(tmp_path / "h"))
    assert out.returncode == 1
    assert "1 of 3 test pairs have no hypothesis (first id 1)" in out.stderr
    assert not (tmp_path / "h").exists()  # no partial predictions file
    out = rouge_table("--ref", str(ref), "--system", f"s={ref}", "--hypotheses-out", str(tmp_path / "h"))
    assert out.returncode == 2 and "needs a --generated system" in out.stderr
