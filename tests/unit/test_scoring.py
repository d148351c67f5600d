"""Generation metrics: hand-computed ROUGE/BLEU/METEOR cases, detokenisers, the ``rouge`` fairseq scorer
and ``scripts/score.py`` end to end.

METEOR runs against the real WordNet (``bash scripts/setup_wordnet.sh``, run by ``scripts/test.sh``):
these tests fail, never skip, when it is missing.
"""

import json
import math
import os
import subprocess
import sys
import textwrap

import pytest
from fairseq.scoring import build_scorer
from omegaconf import OmegaConf

from unilm_fairseq.scoring import metrics
from unilm_fairseq.scoring.metrics import (
    MeteorUnavailableError,
    bleu4,
    detokenize_sentencepiece,
    detokenize_wordpiece,
    drop_unknown_words,
    meteor,
    rouge_scores,
    split_sentences,
)
from unilm_fairseq.scoring.rouge import RougeConfig, RougeScorer

from ..helpers.cli import REPO, load_script

SCORE_PY = os.path.join(REPO, "scripts", "score.py")


class NoSynonyms:
    """A WordNet stand-in without synonyms: METEOR then counts exact and stem matches only."""

    def synsets(self, word):
        return []


@pytest.fixture(scope="module")
def wordnet():
    try:
        return metrics.load_wordnet()
    except MeteorUnavailableError as err:
        pytest.fail(f"WordNet is required for the METEOR tests: {err}")


def run_score(args, env=None, check=True):
    proc = subprocess.run(
        [sys.executable, SCORE_PY, *args],
        cwd=REPO,
        env=dict(os.environ, PYTHONWARNINGS="ignore", **(env or {})),
        capture_output=True,
        text=True,
        timeout=300,
    )
    if check and proc.returncode != 0:
        raise AssertionError(f"score.py exited {proc.returncode}\n{proc.stdout}\n{proc.stderr[-4000:]}")
    return proc


def write(path, lines):
    path.write_text("".join(line + "\n" for line in lines), encoding="utf-8")
    return str(path)


# ---------------------------------------------------------------------------------------------- ROUGE


def test_rouge_hand_computed():
    # hyp "the cat sat" (3 tokens), ref "the cat sat on the mat" (6 tokens)
    # ROUGE-1: 3 unigrams match -> P = 3/3, R = 3/6, F1 = 2PR/(P+R) = 1/1.5 = 2/3
    # ROUGE-2: hyp bigrams {the cat, cat sat} both in ref (5 bigrams) -> P = 1, R = 2/5, F1 = 0.8/1.4 = 4/7
    # ROUGE-L: LCS "the cat sat" = 3 -> same P, R as ROUGE-1 -> 2/3; one sentence, so Lsum = L
    scores = rouge_scores(["the cat sat"], ["the cat sat on the mat"])
    assert scores["rouge1"] == pytest.approx(2 / 3)
    assert scores["rouge2"] == pytest.approx(4 / 7)
    assert scores["rougeL"] == pytest.approx(2 / 3)
    assert scores["rougeLsum"] == pytest.approx(2 / 3)


def test_rouge_is_mean_over_examples():
    # example 1 is a perfect match (F1 = 1), example 2 shares nothing (F1 = 0)
    scores = rouge_scores(["a b c", "x y"], ["a b c", "p q"])
    assert scores == pytest.approx({"rouge1": 0.5, "rouge2": 0.5, "rougeL": 0.5, "rougeLsum": 0.5})


def test_rouge_stemming():
    # Porter: "cats" -> "cat", "running" -> "run"; with stemming every n-gram matches, without none does
    stemmed = rouge_scores(["cats running"], ["cat run"])
    assert stemmed == pytest.approx(dict.fromkeys(metrics.ROUGE_TYPES, 1.0))
    plain = rouge_scores(["cats running"], ["cat run"], use_stemmer=False)
    assert plain["rouge1"] == 0.0 and plain["rougeL"] == 0.0


def test_rouge_lsum_uses_sentences():
    # ref "the cat sat <q> the dog ran", hyp with the two sentences swapped
    # ROUGE-L on the 6-token texts: LCS = 3 ("the dog ran") -> P = R = F1 = 1/2
    # ROUGE-Lsum: each ref sentence's union-LCS with the hyp sentences covers all its 3 tokens
    # -> 6 hits, P = R = F1 = 1
    hyp, ref = "the dog ran <q> the cat sat", "the cat sat <q> the dog ran"
    scores = rouge_scores([hyp], [ref], sentence_separator="<q>")
    assert scores["rougeL"] == pytest.approx(0.5)
    assert scores["rougeLsum"] == pytest.approx(1.0)
    # without a separator each line is one sentence, so Lsum equals L
    one_line = rouge_scores([hyp], [ref])
    assert one_line["rougeLsum"] == pytest.approx(one_line["rougeL"])
    # the separator itself is not scored as a word: same unigram F1 as the texts without it
    assert scores["rouge1"] == pytest.approx(
        rouge_scores(["the dog ran the cat sat"], [ref.replace("<q>", "")])["rouge1"]
    )


def test_split_sentences():
    assert split_sentences("A b. <q> C d. <q>", "<q>") == "A b.\nC d."
    assert split_sentences("A b. <q> C d.", None) == "A b. <q> C d."


def test_mismatched_lengths_raise():
    with pytest.raises(ValueError, match="2 hypotheses but 1 references"):
        rouge_scores(["a", "b"], ["a"])
    with pytest.raises(ValueError, match="no hypotheses"):
        bleu4([], [])


# ----------------------------------------------------------------------------------------------- BLEU


def test_bleu_perfect_match_is_100():
    sentences = ["the quick brown fox jumps over the lazy dog", "a second sentence , with punctuation ."]
    assert bleu4(sentences, sentences) == pytest.approx(100.0)


def test_bleu_brevity_penalty():
    # hyp (6 tokens) is the ref (7 tokens) minus its last word: every n-gram precision is 1
    # (6/6, 5/5, 4/4, 3/3), so BLEU = BP = exp(1 - r/c) = exp(1 - 7/6) = 0.84648
    score = bleu4(["the cat sat on the mat"], ["the cat sat on the mat today"])
    assert score == pytest.approx(100 * math.exp(1 - 7 / 6))
    assert score == pytest.approx(84.648, abs=1e-3)


def test_bleu_zero_overlap():
    assert bleu4(["alpha beta gamma delta"], ["one two three four"]) == 0.0


def test_bleu_lowercase():
    assert bleu4(["The Cat Sat On The Mat"], ["the cat sat on the mat"]) < 100
    assert bleu4(["The Cat Sat On The Mat"], ["the cat sat on the mat"], lowercase=True) == pytest.approx(100)


# --------------------------------------------------------------------------------------------- METEOR


def test_meteor_exact_match(wordnet):
    # 18 of 18 tokens match in one chunk: Fmean = 1, penalty = 0.5 * (1/18)^3 -> 0.99991
    sentence = (
        "it is a guide to action which ensures that the military always obeys the commands of the party"
    )
    assert meteor([sentence], [sentence]) == pytest.approx(1 - 0.5 / 18**3)
    assert meteor([sentence], [sentence]) > 0.99


def test_meteor_wordnet_synonyms(wordnet):
    # "car" and "auto" share the synset car.n.01 (and Porter stemming leaves both alone)
    hyp, ref = "the man drove his car home", "the man drove his auto home"
    # exact only: 5 of 6 match, P = R = Fmean = 5/6; 2 chunks ("the man drove his", "home")
    #   penalty = 0.5 * (2/5)^3 = 0.032 -> 5/6 * 0.968 = 0.80667
    assert meteor([hyp], [ref], wordnet=NoSynonyms()) == pytest.approx(5 / 6 * (1 - 0.5 * (2 / 5) ** 3))
    # with WordNet: 6 of 6 in one chunk -> 1 - 0.5 * (1/6)^3 = 0.99769
    assert meteor([hyp], [ref]) == pytest.approx(1 - 0.5 / 6**3)


def test_meteor_averages_sentences(wordnet):
    hyps = ["the man drove his car home", "completely different words here"]
    refs = ["the man drove his auto home", "nothing in common at all"]
    assert meteor(hyps, refs) == pytest.approx((1 - 0.5 / 6**3) / 2)


def test_meteor_without_nltk_is_a_clear_error(monkeypatch):
    monkeypatch.setitem(sys.modules, "nltk", None)
    with pytest.raises(MeteorUnavailableError, match=r"pip install"):
        meteor(["a"], ["a"])


def test_meteor_with_incomplete_wordnet_is_a_clear_error(tmp_path):
    # a corpora/wordnet folder without the database files: nltk finds it but cannot read it
    (tmp_path / "corpora" / "wordnet").mkdir(parents=True)
    code = textwrap.dedent(
        f"""
        import nltk
        nltk.data.path[:] = [{str(tmp_path)!r}]
        from unilm_fairseq.scoring import metrics
        metrics.NLTK_DATA_DIRS = ()
        try:
            metrics.meteor(["a b"], ["a b"])
        except metrics.MeteorUnavailableError as err:
            print("ERROR:", err)
        """
    )
    proc = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "ERROR: METEOR needs WordNet" in proc.stdout
    assert "scripts/setup_wordnet.sh" in proc.stdout


# -------------------------------------------------------------------------------------- detokenisers


def test_detokenize_sentencepiece():
    assert detokenize_sentencepiece("\u2581Hel lo \u2581world") == "Hello world"
    assert detokenize_sentencepiece("\u2581a \u2581b c \u2581.") == "a bc ."
    assert detokenize_sentencepiece("") == ""


def test_detokenize_wordpiece():
    assert detokenize_wordpiece("hel ##lo world") == "hello world"
    assert detokenize_wordpiece("un ##bel ##iev ##able  story .") == "unbelievable story ."
    # nothing to attach a leading piece to: it becomes a word of its own, without its "##" (clean text out;
    # rouge-score drops the "#" characters anyway, so scores do not change)
    assert detokenize_wordpiece("##lo world") == "lo world"


# ------------------------------------------------------------------------------- the fairseq scorer

HYPS = ["the cat sat <q> it was happy", "police arrested a man on friday", "nothing matches"]
REFS = ["the cat sat on the mat <q> it was glad", "a man was arrested by police on friday", "at all here"]


def test_registered_scorer_matches_pure_functions():
    scorer = build_scorer(
        OmegaConf.structured(RougeConfig(_name="rouge", rouge_sentence_separator="<q>")), None
    )
    assert isinstance(scorer, RougeScorer)
    for hyp, ref in zip(HYPS, REFS):
        scorer.add_string(ref, hyp)  # fairseq's order: target first
    expected = rouge_scores(HYPS, REFS, sentence_separator="<q>")
    assert scorer.scores() == pytest.approx(expected)
    assert scorer.score() == pytest.approx(100 * expected["rougeL"])
    result = scorer.result_string()
    for name, key in [
        ("ROUGE-1", "rouge1"),
        ("ROUGE-2", "rouge2"),
        ("ROUGE-L", "rougeL"),
        ("ROUGE-Lsum", "rougeLsum"),
    ]:
        assert f"{name} = {100 * expected[key]:.2f}" in result
    # more pairs after a score: the cached result is recomputed
    scorer.add_string("extra words", "extra words")
    assert scorer.scores() == pytest.approx(
        rouge_scores(HYPS + ["extra words"], REFS + ["extra words"], "<q>")
    )


def test_scorer_from_generate_command_line():
    from fairseq import options
    from fairseq.dataclass.utils import convert_namespace_to_omegaconf

    parser = options.get_generation_parser()
    args = options.parse_args_and_arch(
        parser,
        input_args=[
            "data-bin", "--user-dir", "unilm_fairseq", "--scoring", "rouge",
            "--rouge-sentence-separator", "<q>", "--rouge-detok", "wordpiece",
        ],
    )  # fmt: skip
    scorer = build_scorer(convert_namespace_to_omegaconf(args).scoring, None)
    assert isinstance(scorer, RougeScorer)
    scorer.add_string("the cat sat <q> it was hap ##py", "the cat sat <q> it was happy")
    assert scorer.scores() == pytest.approx(dict.fromkeys(metrics.ROUGE_TYPES, 1.0))


# ------------------------------------------------------------------------------------ scripts/score.py


GENERATE_OUTPUT = [
    "2024-01-01 | INFO | fairseq_cli.generate | loading model",
    "S-1\tsource one",
    "T-1\ta man was arrested by police on friday",
    "H-1\t-0.51\tpolice arrested a man on fri ##day",
    "D-1\t-0.51\tpolice arrested a man on friday",
    "P-1\t-0.1 -0.2 -0.3",
    "H-1\t-0.90\tsecond best hypothesis",
    "D-1\t-0.90\tsecond best hypothesis",
    "S-0\tsource zero",
    "T-0\tthe cat sat on the mat <q> it was glad",
    "H-0\t-0.32\tthe cat sat <q> it was happy",
    "D-0\t-0.32\tthe cat sat <q> it was happy",
    "S-2\tsource two",
    "T-2\tat all here",
    "H-2\t-1.20\t",
    "D-2\t-1.20\t",
    "Generate test with beam=5: BLEU4 = 10.00",
]


def test_parse_generate_output():
    parse = load_script("scripts/score.py", "score_script").parse_generate_output
    hyps, refs = parse(GENERATE_OUTPUT)
    assert hyps == ["the cat sat <q> it was happy", "police arrested a man on friday", ""]
    assert refs == [
        "the cat sat on the mat <q> it was glad",
        "a man was arrested by police on friday",
        "at all here",
    ]
    # without D- lines the H- lines are used
    hyps, _ = parse([line for line in GENERATE_OUTPUT if not line.startswith("D-")])
    assert hyps[1] == "police arrested a man on fri ##day"
    with pytest.raises(ValueError, match="no T-<id> target"):
        parse(["H-0\t-0.1\ta b"])
    with pytest.raises(ValueError, match="no H-<id> or D-<id>"):
        parse(["T-0\ta b"])
    # ids with a gap: a log cut short or samples fairseq skipped, not a whole split
    with pytest.raises(ValueError, match=r"1 sample ids below 2 have no output \(first id 1\)"):
        parse([line for line in GENERATE_OUTPUT if not line[2:].startswith("1\t")])
    closing = "2026-11-29 10:00:00 | INFO | fairseq_cli.generate | Translated 3 sentences (30 tokens) in 1.0s"
    assert parse([*GENERATE_OUTPUT, closing]) == parse(GENERATE_OUTPUT)
    with pytest.raises(ValueError, match="3 hypotheses, but fairseq-generate says it translated 4"):
        parse([*GENERATE_OUTPUT, closing.replace("Translated 3", "Translated 4")])
    # a rerun appended to the log of a run cut short: two closing lines, never a mix of the two runs
    with pytest.raises(ValueError, match="more than one fairseq-generate run"):
        cut = [*GENERATE_OUTPUT[:4], closing.replace("Translated 3", "Translated 1")]
        parse([*cut, *GENERATE_OUTPUT, closing])


def test_score_script_on_files(tmp_path, wordnet):
    # sentencepiece hypotheses, plain references
    spm_hyps = ["\u2581the \u2581c at \u2581sat", "\u2581police \u2581arrested \u2581a \u2581man"]
    refs = ["the cat sat on the mat", "a man was arrested by police"]
    out = tmp_path / "scores.json"
    proc = run_score(
        ["--hyp", write(tmp_path / "hyp.txt", spm_hyps), "--ref", write(tmp_path / "ref.txt", refs),
         "--detok", "sentencepiece", "--json", str(out)]
    )  # fmt: skip
    hyps = [detokenize_sentencepiece(h) for h in spm_hyps]
    expected = {name: 100 * value for name, value in rouge_scores(hyps, refs).items()}
    expected.update(bleu4=bleu4(hyps, refs), meteor=100 * meteor(hyps, refs))
    assert json.loads(out.read_text()) == pytest.approx(
        {"num_pairs": 2, "rouge_backend": "rouge-score", **expected}
    )
    assert "ROUGE: rouge-score, Porter stemming" in proc.stdout
    table = proc.stdout
    for name, key in [
        ("ROUGE-1", "rouge1"),
        ("ROUGE-Lsum", "rougeLsum"),
        ("BLEU-4", "bleu4"),
        ("METEOR", "meteor"),
    ]:
        assert f"{name:<12}{expected[key]:>8.2f}" in table


def test_score_script_on_generate_output(tmp_path):
    out = tmp_path / "scores.json"
    run_score(
        ["--generate-output", write(tmp_path / "gen.out", GENERATE_OUTPUT), "--sentence-separator", "<q>",
         "--metrics", "rouge,bleu", "--lowercase", "--json", str(out)]
    )  # fmt: skip
    hyps = ["the cat sat <q> it was happy", "police arrested a man on friday", ""]
    refs = ["the cat sat on the mat <q> it was glad", "a man was arrested by police on friday", "at all here"]
    expected = {name: 100 * value for name, value in rouge_scores(hyps, refs, "<q>").items()}
    expected["bleu4"] = bleu4(hyps, refs, lowercase=True)
    assert json.loads(out.read_text()) == pytest.approx(
        {"num_pairs": 3, "rouge_backend": "rouge-score", **expected}
    )


def test_score_script_on_generate_output_against_whole_references(tmp_path):
    """With --ref the references are the file's lines (id N is line N), not the T- lines that training cut
    to --max-target-positions; --ref-detok joins the file's own pieces; a generated [UNK] is dropped
    before scoring, so it cannot match the reference's unknown word."""
    log = [*GENERATE_OUTPUT, "S-3\tsource three", "T-3\tthe <[UNK]> won", "H-3\t-0.4\tthe [UNK] lost",
           "D-3\t-0.4\tthe [UNK] lost"]  # fmt: skip
    words = ["the cat sat on the mat", "a man was", "at all here and there", "the [UNK] won"]
    whole = [" ".join("\u2581" + w for w in line.split()) for line in words]
    out = tmp_path / "scores.json"
    gen = write(tmp_path / "gen.out", log)
    run_score(["--generate-output", gen, "--ref", write(tmp_path / "test.tgt", whole), "--ref-detok",
               "sentencepiece", "--metrics", "rouge,bleu", "--json", str(out)])  # fmt: skip
    hyps = ["the cat sat <q> it was happy", "police arrested a man on friday", "", "the lost"]
    refs = [detokenize_sentencepiece(r) for r in whole]
    assert refs[2] == "at all here and there"  # longer than its T- line
    expected = {name: 100 * value for name, value in rouge_scores(hyps, refs).items()}
    expected["bleu4"] = bleu4(hyps, refs)
    assert json.loads(out.read_text()) == pytest.approx(
        {"num_pairs": 4, "rouge_backend": "rouge-score", **expected}
    )
    # the T- lines: the generated [UNK] no longer matches the escaped <[UNK]>
    run_score(["--generate-output", gen, "--metrics", "rouge", "--json", str(out)])
    t_refs = ["the cat sat on the mat <q> it was glad", "a man was arrested by police on friday",
              "at all here", "the <[UNK]> won"]  # fmt: skip
    assert json.loads(out.read_text())["rouge1"] == pytest.approx(100 * rouge_scores(hyps, t_refs)["rouge1"])
    assert (
        rouge_scores(["the [UNK] lost"], ["the <[UNK]> won"])["rouge1"]
        > rouge_scores(["the lost"], ["the <[UNK]> won"])["rouge1"]
    )


def test_drop_unknown_words_takes_their_pieces_too():
    hyps, dropped = drop_unknown_words(
        ["the [UNK] ##s cat", "a ##b <unk> c", "as is", "[UNK] [UNK] ##x y ##z"]
    )
    assert hyps == ["the cat", "a ##b c", "as is", "y ##z"] and dropped == 4


def test_score_script_without_wordnet_still_reports(tmp_path):
    hyp, ref = (
        write(tmp_path / "h.txt", ["the cat sat"]),
        write(tmp_path / "r.txt", ["the cat sat on the mat"]),
    )
    code = textwrap.dedent(
        f"""
        import runpy, sys
        import nltk
        nltk.data.path[:] = []
        from unilm_fairseq.scoring import metrics
        metrics.NLTK_DATA_DIRS = ()
        sys.argv = ["score.py", "--hyp", {hyp!r}, "--ref", {ref!r}]
        runpy.run_path({SCORE_PY!r}, run_name="__main__")
        """
    )
    proc = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    skipped = [line for line in proc.stderr.splitlines() if line.startswith("METEOR skipped")]
    assert len(skipped) == 1 and "scripts/setup_wordnet.sh" in skipped[0]
    assert f"{'ROUGE-1':<12}{100 * 2 / 3:>8.2f}" in proc.stdout
    assert "BLEU-4" in proc.stdout and "METEOR" not in proc.stdout


def test_score_script_rejects_mismatched_files(tmp_path):
    proc = run_score(
        ["--hyp", write(tmp_path / "h.txt", ["a", "b"]), "--ref", write(tmp_path / "r.txt", ["a"])],
        check=False,
    )
    assert proc.returncode != 0
    assert "has 2 lines but" in proc.stderr
