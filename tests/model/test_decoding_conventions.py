"""The papers' decoding conventions as options: GNMT's length penalty and n-gram blocking with exemptions.

Hand-set scores through fairseq's finalize step, the real generator on the tiny decoding model of
``tests/helpers/seq2seq.py`` and on a tiny ``palm``, hand-built token rows for the blocker (tensor path
and the CUDA-extension path), and the options through the command-line tools and the Python API.
"""

import argparse
import functools
import random
import re

import pytest
import torch
from fairseq.ngram_repeat_block import is_cuda_extension_usable

from unilm_fairseq import UniLMModel
from unilm_fairseq.modules.length_penalty import gnmt_exponent, gnmt_length_penalty
from unilm_fairseq.modules.ngram_block import PrefixNGramRepeatBlock
from unilm_fairseq.tasks.palm_seq2seq import PALMSeq2SeqConfig, PALMSeq2SeqTask
from unilm_fairseq.tasks.unilm_seq2seq import UniLMSeq2SeqConfig, UniLMSeq2SeqTask

from ..helpers.cli import preprocess, run_cli
from ..helpers.models import make_dictionary
from ..helpers.palm import palm_model
from ..helpers.seq2seq import collate, pairs_dataset, sharpened_model

D = make_dictionary()
D.add_symbol(".")  # after <mask>, so the other ids are those of helpers.seq2seq.D
DOT = D.index(".")
EOS, PAD = D.eos(), D.pad()
A, B, C = (D.index(w) for w in ("w0", "w1", "w2"))
SCORE_TOL = 1e-5


@functools.lru_cache(maxsize=None)
def decoding_model(method: str):
    """The sharpened decoding model of helpers.seq2seq over ``D`` (with ".")."""
    return sharpened_model(D, method)


def unilm_task(**options):
    return UniLMSeq2SeqTask(UniLMSeq2SeqConfig(data="x", seed=1, **options), D)


# tiny tensors gain nothing from intra-op threads (see conftest.one_thread)
pytestmark = pytest.mark.usefixtures("one_thread")


# ---------------------------------------------------------------------------------------------------
# GNMT length penalty


def test_gnmt_exponent_turns_fairseq_divisor_into_gnmt():
    for alpha in (0.0, 0.6, 0.9, 1.3, -0.5):
        assert gnmt_length_penalty(1, alpha) == 1.0
        for length in range(1, 200):
            divisor = length ** gnmt_exponent(length, alpha)
            assert divisor == pytest.approx(((5 + length) / 6) ** alpha, rel=1e-12)
    assert gnmt_length_penalty(7, 1.0) == 2.0  # (5 + 7) / 6


def finalize_by_hand(style, alpha):
    """Two hypotheses through fairseq's ``finalize_hypos`` with hand-set cumulative scores.

    Beam 2, one sentence. "A </s>" ends at step 1 (L = 2, log-prob -2), "A B C </s>" at step 3
    (L = 4, log-prob -3). Returns their reported scores in that order.
    """
    generator = unilm_task(lenpen_style=style).build_generator(
        [decoding_model("pseudo_masked")], argparse.Namespace(beam=2, lenpen=alpha)
    )
    max_len = 6
    tokens = torch.full((2, max_len + 2), PAD)
    tokens[:, 0] = EOS
    tokens[0, 1] = A
    tokens[1, 1:4] = torch.tensor([A, B, C])
    scores = torch.zeros(2, max_len + 1)  # cumulative log-probs, as the generator keeps them
    scores[0, :1] = torch.tensor([-1.0])
    scores[1, :3] = torch.tensor([-0.5, -1.0, -2.0])
    finalized, finished = [[]], [False]
    src_lengths = torch.tensor([5])
    for step, row, total in ((1, 0, -2.0), (3, 1, -3.0)):
        generator.finalize_hypos(
            step, torch.tensor([row]), torch.tensor([total]), tokens, scores, finalized, finished, 2,
            None, src_lengths, max_len,
        )  # fmt: skip
    short, long = finalized[0]
    assert short["tokens"].tolist() == [A, EOS] and long["tokens"].tolist() == [A, B, C, EOS]
    assert short["positional_scores"].tolist() == [-1.0, -1.0]
    assert long["positional_scores"].tolist() == [-0.5, -0.5, -1.0, -1.0]
    return float(short["score"]), float(long["score"])


def test_gnmt_penalty_reverses_a_hand_computed_ranking():
    # fairseq, a = 1: -2 / 2 = -1 < -3 / 4 = -0.75, the longer one wins;
    # gnmt, a = 1: -2 / (7 / 6) = -12 / 7 > -3 / (9 / 6) = -2, the shorter one wins
    short, long = finalize_by_hand("fairseq", 1.0)
    assert short == pytest.approx(-1.0, abs=SCORE_TOL) and long == pytest.approx(-0.75, abs=SCORE_TOL)
    short, long = finalize_by_hand("gnmt", 1.0)
    assert short == pytest.approx(-12 / 7, abs=SCORE_TOL) and long == pytest.approx(-2.0, abs=SCORE_TOL)
    # a = 0: neither style normalises
    assert finalize_by_hand("gnmt", 0.0) == pytest.approx((-2.0, -3.0), abs=SCORE_TOL)


def generate(task, model, sample, **options):
    args = argparse.Namespace(**{"beam": 4, "max_len_b": 6, **options})
    with torch.no_grad():
        return task.build_generator([model], args).generate([model], sample)


def penalty(style, length, alpha):
    return gnmt_length_penalty(length, alpha) if style == "gnmt" else length**alpha


def check_reported_scores(hypotheses, style, alpha):
    """Each score is sum(log-probs) / the style's penalty of L (tokens with </s>); n-best sorted by it."""
    for hyps in hypotheses:
        for h in hyps:
            by_hand = float(h["positional_scores"].sum()) / penalty(style, len(h["tokens"]), alpha)
            assert float(h["score"]) == pytest.approx(by_hand, abs=SCORE_TOL)
        reported = [float(h["score"]) for h in hyps]
        assert reported == sorted(reported, reverse=True)


def rankings(hypotheses):
    return [[tuple(h["tokens"].tolist()) for h in hyps] for hyps in hypotheses]


def assert_same_search_other_ranking(fairseq_hyps, gnmt_hyps):
    """The penalty only ranks finished hypotheses: both styles finish the same ones, in another order."""
    for a, b in zip(rankings(fairseq_hyps), rankings(gnmt_hyps)):
        assert sorted(a) == sorted(b)
    assert rankings(fairseq_hyps) != rankings(gnmt_hyps)
    lengths = {len(h["tokens"]) for hyps in gnmt_hyps for h in hyps}
    assert len(lengths) > 1


@pytest.mark.parametrize("method", ["pseudo_masked", "causal"])
def test_generator_reports_gnmt_scores(method):
    alpha = 2.0  # strong enough that the two penalties order the n-best lists differently
    sample = collate(pairs_dataset(method))
    model = decoding_model(method)
    found = {}
    for style in ("fairseq", "gnmt"):
        found[style] = generate(unilm_task(lenpen_style=style), model, sample, lenpen=alpha)
        check_reported_scores(found[style], style, alpha)
    assert_same_search_other_ranking(found["fairseq"], found["gnmt"])


def test_palm_generator_reports_gnmt_scores():
    dictionary = make_dictionary(60)
    model = palm_model(dictionary)
    with torch.no_grad():  # sharper predictions, and an [EOS] bias so hypotheses end at different steps
        for p in model.parameters():
            p.mul_(3.0)
    g = torch.Generator().manual_seed(0)
    src = torch.randint(dictionary.nspecial, len(dictionary) - 1, (3, 7), generator=g)
    src[:, -1] = dictionary.eos()
    sample = {"net_input": {"src_tokens": src, "src_lengths": torch.full((3,), 7)}}
    alpha = 2.0
    found = {}
    for style in ("fairseq", "gnmt"):
        cfg = PALMSeq2SeqConfig(data="x", lenpen_style=style)
        task = PALMSeq2SeqTask(cfg, dictionary, dictionary)
        found[style] = generate(task, model, sample, lenpen=alpha)
        check_reported_scores(found[style], style, alpha)
    assert_same_search_other_ranking(found["fairseq"], found["gnmt"])


def test_api_keyword_overrides_the_task_option():
    model, sample = decoding_model("pseudo_masked"), collate(pairs_dataset("pseudo_masked"))
    task = unilm_task(lenpen_style="fairseq")
    args = argparse.Namespace(beam=4, max_len_b=6, lenpen=2.0)
    with torch.no_grad():
        hyps = task.build_generator([model], args, lenpen_style="gnmt").generate([model], sample)
    check_reported_scores(hyps, "gnmt", 2.0)
    with pytest.raises(ValueError, match="lenpen_style 'gnm'"):
        task.build_generator([model], args, lenpen_style="gnm")
    aligned = argparse.Namespace(beam=4, lenpen=2.0, print_alignment="hard")
    with pytest.raises(ValueError, match="--print-alignment"):  # rather than silently no alignments
        task.build_generator([model], aligned, lenpen_style="gnmt")


# ---------------------------------------------------------------------------------------------------
# n-gram blocking with exempt tokens

# a buffer wider than the prefix (padding after it, as fairseq passes it); column 0 is the start token
ROWS = torch.tensor(
    [
        [EOS, A, B, C, A, B, DOT, A, B, PAD],  # "A B C" and "A B ." seen, context "A B"
        [EOS, A, DOT, B, C, C, B, A, DOT, PAD],  # "A . B" seen, context "A ." contains "."
        [EOS, C, A, B, C, A, C, A, B, PAD],  # no "." anywhere: blocking as without exemptions
    ]
)
STEP = 8  # nine real columns
# banned next tokens per row, without and with "." exempt (worked out by hand from the rows above)
BANNED = {
    1: ([[A, B, C, DOT], [A, B, C, DOT], [A, B, C]], [[A, B, C], [A, B, C], [A, B, C]]),
    2: ([[C, DOT], [B], [C]], [[C], [], [C]]),
    3: ([[C, DOT], [B], [C]], [[C], [], [C]]),
}


def banned_sets(blocker, tokens=ROWS, step=STEP):
    lprobs = blocker(tokens, torch.zeros(len(tokens), len(D)), bsz=len(tokens), beam_size=1, step=step)
    return [sorted(torch.nonzero(row.isinf()).flatten().tolist()) for row in lprobs]


def python_blocker(size, exempt=()):
    blocker = PrefixNGramRepeatBlock(size, exempt)
    blocker.use_extension = False  # the path taken without the CUDA extension (tensor ops, any device)
    return blocker


def kernel_stand_in(tokens, lprobs, bsz, step, beam_size, size):
    """What fairseq's CUDA kernel computes: bans from the first ``step + 1`` columns of the buffer."""
    return PrefixNGramRepeatBlock(size, use_extension=False)._no_repeat_ngram(
        tokens[:, : step + 1], lprobs, bsz, beam_size, step
    )


def extension_blocker(size, exempt, monkeypatch):
    """A blocker on the CUDA-extension path, the kernel replaced by a stand-in on CPU."""
    blocker = PrefixNGramRepeatBlock(size, exempt)
    blocker.use_extension = True
    monkeypatch.setattr(
        blocker,
        "call_cuda_extension",
        lambda tokens, lprobs, bsz, beam_size, step: kernel_stand_in(
            tokens, lprobs, bsz, step, beam_size, size
        ),
    )
    return blocker


@pytest.mark.parametrize("size", [1, 2, 3])
def test_exempt_ngrams_are_never_banned(size):
    without, with_dot = BANNED[size]
    assert banned_sets(python_blocker(size)) == without
    assert banned_sets(python_blocker(size, [DOT])) == with_dot


@pytest.mark.parametrize("size", [2, 3])
def test_extension_path_honours_exemptions(size, monkeypatch):
    without, with_dot = BANNED[size]
    assert banned_sets(extension_blocker(size, [], monkeypatch)) == without
    assert banned_sets(extension_blocker(size, [DOT], monkeypatch)) == with_dot


@pytest.mark.skipif(not is_cuda_extension_usable(), reason="needs fairseq's CUDA n-gram kernel and a GPU")
@pytest.mark.parametrize("size", [2, 3])
def test_cuda_kernel_honours_exemptions(size):
    without, with_dot = BANNED[size]
    for exempt, expected in (([], without), ([DOT], with_dot)):
        blocker = PrefixNGramRepeatBlock(size, exempt)
        assert blocker.use_extension
        lprobs = torch.zeros(len(ROWS), len(D), device="cuda")
        banned = blocker(ROWS.cuda(), lprobs, bsz=len(ROWS), beam_size=1, step=STEP).isinf().cpu()
        assert [sorted(torch.nonzero(row).flatten().tolist()) for row in banned] == expected


def test_unigram_blocking_with_exemptions_never_bans_the_start_token():
    tokens = torch.tensor([[EOS, DOT, A, PAD]])
    assert banned_sets(python_blocker(1, [DOT]), tokens, step=2) == [[A]]
    assert banned_sets(python_blocker(1, [DOT]), tokens[:, :1], step=0) == [[]]


def test_task_maps_symbols_to_the_generators_blocker():
    model = decoding_model("pseudo_masked")
    args = argparse.Namespace(beam=2, no_repeat_ngram_size=3)
    from_cfg = unilm_task(no_repeat_ngram_exempt=". w1").build_generator([model], args)
    assert from_cfg.repeat_ngram_blocker.exempt == (B, DOT)
    plain = unilm_task()
    assert plain.build_generator([model], args).repeat_ngram_blocker.exempt == ()
    assert plain.build_generator([model], args, no_repeat_ngram_exempt=["."]).repeat_ngram_blocker.exempt == (
        DOT,
    )
    with pytest.raises(ValueError, match=r"\['\?!'\] not in the dictionary"):
        plain.build_generator([model], args, no_repeat_ngram_exempt=[".", "?!"])


def test_exempt_trigrams_through_the_generator():
    """A prefix that repeats "A B ." decodes as if unblocked once "." is exempt.

    Without the exemption the forced second "." would be banned: its log-prob -inf, and no hypothesis
    could finish (fairseq never finalizes a -inf hypothesis and fails at the length limit).
    """
    model, sample = decoding_model("pseudo_masked"), collate(pairs_dataset("pseudo_masked"))
    prefix = torch.tensor([[A, B, DOT, A, B, DOT]] * 3)
    found = {}
    for size in (0, 3):
        args = argparse.Namespace(beam=2, no_repeat_ngram_size=size, max_len_b=8, min_len=7)
        generator = unilm_task(no_repeat_ngram_exempt=".").build_generator([model], args)
        with torch.no_grad():
            found[size] = generator.generate([model], sample, prefix_tokens=prefix)
    for blocked, free in zip(found[3], found[0]):
        for h, f in zip(blocked, free):
            assert h["tokens"][:6].tolist() == prefix[0].tolist()
            assert torch.isfinite(h["positional_scores"]).all()
            torch.testing.assert_close(h["positional_scores"][:6], f["positional_scores"][:6])


# ---------------------------------------------------------------------------------------------------
# command-line tools and the Python API

WORDS = [f"w{i}" for i in range(12)] + ["."]
COPY_LEN = 7
# each repeats a trigram with "." in it; copying it exactly needs the exemption
REPEATING = ["w1 w2 . w3 w1 w2 .", "w4 . w5 w6 w4 . w5", "w7 w8 . w9 w7 w8 ."]


@pytest.fixture(scope="module")
def copy_checkpoint(tmp_path_factory):
    """A tiny copy model over words and "." (fixed length: the copy offset is one relative distance)."""
    work = tmp_path_factory.mktemp("conventions")
    rng = random.Random(0)
    for split, n in (("train", 2000), ("valid", 20)):
        lines = [" ".join(rng.choices(WORDS, k=COPY_LEN)) for _ in range(n)]
        for side in ("src", "tgt"):
            (work / f"{split}.{side}").write_text("\n".join(lines) + "\n")
    for side in ("src", "tgt"):
        (work / f"test.{side}").write_text("\n".join(REPEATING) + "\n")
    preprocess(["--source-lang", "src", "--target-lang", "tgt", "--joined-dictionary",
                "--trainpref", str(work / "train"), "--validpref", str(work / "valid"), "--testpref",
                str(work / "test"), "--destdir", str(work / "bin"), "--workers", "1"])  # fmt: skip
    run_cli(["fairseq-train", str(work / "bin"), "--user-dir", "unilm_fairseq", "--task", "unilm_seq2seq",
             "--arch", "unilmv2_tiny", "--criterion", "unilm_seq2seq", "--max-source-positions", "16",
             "--max-target-positions", "16", "--max-positions", "32", "--batch-size", "32",
             "--optimizer", "adam", "--lr", "3e-3", "--lr-scheduler", "inverse_sqrt",
             "--warmup-updates", "30", "--max-update", "300", "--dropout", "0", "--attention-dropout", "0",
             "--cpu", "--num-workers", "0", "--seed", "1", "--save-dir", str(work / "ckpt"),
             "--no-epoch-checkpoints", "--disable-validation"])  # fmt: skip
    return work


def tool_args(work, *options):
    return [str(work / "bin"), "--user-dir", "unilm_fairseq", "--task", "unilm_seq2seq",
            "--path", str(work / "ckpt" / "checkpoint_last.pt"), "--beam", "4", "--lenpen", "1.0",
            "--no-repeat-ngram-size", "3", "--batch-size", "4", "--cpu", *options]  # fmt: skip


def hypotheses(stdout):
    """``H-<id>`` score and text, ``P-<id>`` positional scores (base 2), in id order."""
    found = {}
    for i, score, text in re.findall(r"^H-(\d+)\t(\S+)\t(.*)$", stdout, re.M):
        found[int(i)] = [float(score), text]
    for i, positional in re.findall(r"^P-(\d+)\t(.*)$", stdout, re.M):
        found[int(i)].append([float(x) for x in positional.split()])
    return [found[i] for i in sorted(found)]


def repeated_trigrams(text):
    words = text.split()
    trigrams = [tuple(words[i : i + 3]) for i in range(len(words) - 2)]
    return {t for t in trigrams if trigrams.count(t) > 1}


@pytest.mark.slow
def test_generate_and_interactive_accept_the_options(copy_checkpoint):
    work = copy_checkpoint
    conventions = ["--lenpen-style", "gnmt", "--no-repeat-ngram-exempt", "."]
    out = run_cli(["fairseq-generate", *tool_args(work, *conventions), "--gen-subset", "test"])
    found = hypotheses(out.stdout)
    assert [text for _, text, _ in found] == REPEATING  # copied, repeated "." trigrams and all
    for score, _, positional in found:
        length = len(positional)  # the generated tokens and </s>
        # positional scores are printed to 4 decimals: a relative tolerance that still tells the two apart
        assert score == pytest.approx(sum(positional) / ((5 + length) / 6), rel=0.02)
        assert score != pytest.approx(sum(positional) / length, rel=0.5)  # fairseq's: L / ((5 + L) / 6) apart
    plain = hypotheses(run_cli(["fairseq-generate", *tool_args(work), "--gen-subset", "test"]).stdout)
    for _, text, _ in plain:  # without the exemption no trigram repeats, "." or not
        assert not repeated_trigrams(text)
    inter = run_cli(
        ["fairseq-interactive", *tool_args(work, *conventions), "--buffer-size", "4"],
        input_text="\n".join(REPEATING) + "\n",
    )
    assert [h[:2] for h in hypotheses(inter.stdout)] == [h[:2] for h in found]


@pytest.mark.slow
def test_python_api_takes_the_options(copy_checkpoint):
    work = copy_checkpoint
    model = UniLMModel.from_pretrained(
        str(work / "ckpt"), checkpoint_file="checkpoint_last.pt", data_name_or_path=str(work / "bin")
    ).eval()
    options = dict(beam=4, lenpen=1.0, no_repeat_ngram_size=3)
    hyps = model.generate(
        [model.encode(s) for s in REPEATING], lenpen_style="gnmt", no_repeat_ngram_exempt=["."], **options
    )
    assert [model.decode(h[0]["tokens"]) for h in hyps] == REPEATING
    check_reported_scores(hyps, "gnmt", 1.0)
    assert model.generate(REPEATING, no_repeat_ngram_exempt=".", **options) == REPEATING
    assert all(not repeated_trigrams(text) for text in model.generate(REPEATING, **options))
