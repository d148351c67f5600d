"""Generation metrics as pure functions, and detokenisers for subword output.

Scales follow the libraries: :func:`rouge_scores` (rouge-score, or the perl ROUGE-1.5.5 with
``backend="perl"``) and :func:`meteor` return values in [0, 1],
:func:`bleu4` in [0, 100] (sacrebleu). Each takes parallel lists of hypotheses and references,
one string per example.

METEOR needs nltk (``pip install 'unilm_fairseq[meteor]'``) and the WordNet 3.0 database. nltk looks
for WordNet in ``$NLTK_DATA`` and its default folders, which include ``<sys.prefix>/nltk_data``: the
virtualenv's own ``nltk_data``. ``scripts/setup_wordnet.sh`` assembles ``.venv/nltk_data/corpora/wordnet``
offline from Debian's ``wordnet-base`` and ``wordnet-sense-index`` packages. :func:`load_wordnet` also
looks in this checkout's ``.venv/nltk_data``, so an interpreter outside the venv finds it too.
"""

import os
import re
import sys
from typing import Dict, List, NamedTuple, Optional, Sequence, Tuple

from ..encoders.wordpiece_tokenizer import detokenize_wordpiece
from .pairs import check_pairs

# rouge-score's names; F1 of each is reported
ROUGE_TYPES = ("rouge1", "rouge2", "rougeL", "rougeLsum")
# "rouge-score": Google's Python package (the default); "perl": Lin's ROUGE-1.5.5 script (perl_rouge.py)
ROUGE_BACKENDS = ("rouge-score", "perl")
SENTENCEPIECE_SPACE = "\u2581"  # "▁": marks a piece that starts a new word
WORDNET_SETUP_HINT = (
    "run `bash scripts/setup_wordnet.sh` (installs Debian's wordnet-base and wordnet-sense-index "
    "and builds .venv/nltk_data offline), or with network `python -m nltk.downloader wordnet`"
)
# extra nltk data folders load_wordnet adds when they exist: the interpreter's own and this checkout's .venv
NLTK_DATA_DIRS = (
    os.path.join(sys.prefix, "nltk_data"),
    os.path.join(
        os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))), ".venv", "nltk_data"
    ),
)


class MeteorUnavailableError(RuntimeError):
    """nltk or its WordNet data is missing; the message says how to install them."""


def detokenize_sentencepiece(text: str) -> str:
    """Join sentencepiece pieces: ``"▁Hel lo ▁world"`` -> ``"Hello world"``."""
    return "".join(text.split()).replace(SENTENCEPIECE_SPACE, " ").strip()


DETOKENIZERS = {
    "none": lambda text: text,
    "sentencepiece": detokenize_sentencepiece,
    "wordpiece": detokenize_wordpiece,
}


def detokenize(text: str, kind: str) -> str:
    """Apply the detokeniser named ``kind`` (a key of :data:`DETOKENIZERS`)."""
    return DETOKENIZERS[str(kind)](text)


def split_sentences(text: str, separator: Optional[str]) -> str:
    """Put each ``separator``-delimited sentence of ``text`` on its own line (ROUGE-Lsum's format).

    ``"A b. <q> C d."`` with separator ``"<q>"`` -> ``"A b.\\nC d."``. With no separator the text is
    returned unchanged: a one-line text is then one sentence.
    """
    if not separator:
        return text
    return "\n".join(s.strip() for s in text.split(separator) if s.strip())


def rouge_score_scorer(rouge_types, use_stemmer: bool = True):
    """rouge-score's scorer with its default tokenizer passed in: the same tokens, without the "Using
    default tokenizer." line it logs (through absl) every time it has to pick the tokenizer itself."""
    from rouge_score import rouge_scorer, tokenizers

    return rouge_scorer.RougeScorer(
        list(rouge_types), use_stemmer=use_stemmer, tokenizer=tokenizers.DefaultTokenizer(use_stemmer)
    )


def rouge_scores(
    hyps: Sequence[str],
    refs: Sequence[str],
    sentence_separator: Optional[str] = None,
    use_stemmer: bool = True,
    backend: str = "rouge-score",
) -> Dict[str, float]:
    """Mean per-example ROUGE-1/2/L/Lsum F1 in [0, 1], keyed by :data:`ROUGE_TYPES`.

    rouge-score lowercases, keeps only ``[a-z0-9]`` tokens and, with ``use_stemmer``, Porter-stems
    tokens longer than 3 characters. ROUGE-L is the LCS of the whole texts; ROUGE-Lsum is the
    summary-level LCS over sentences, which are the lines of a text: ``sentence_separator`` (e.g.
    ``"<q>"``) turns one-line texts into lines first, and is dropped from every metric's tokens.
    The mean (not rouge-score's bootstrap midpoint) keeps the result deterministic.

    ``backend="perl"`` scores the same sentences with the official ROUGE-1.5.5 script instead
    (:func:`unilm_fairseq.scoring.perl_rouge.perl_rouge`; ``use_stemmer`` is its ``-m``).
    """
    if backend not in ROUGE_BACKENDS:
        raise ValueError(f"unknown ROUGE backend {backend!r}: choose from {', '.join(ROUGE_BACKENDS)}")
    if backend == "perl":  # each backend checks the pairs first (perl_rouge, rouge_pair_scores)
        from .perl_rouge import perl_rouge

        scores = perl_rouge(hyps, refs, sentence_separator, stemming=use_stemmer)
        return {rouge_type: scores[rouge_type].fmeasure for rouge_type in ROUGE_TYPES}
    per_pair = rouge_pair_scores(hyps, refs, sentence_separator, use_stemmer)
    return {rouge_type: sum(values) / len(values) for rouge_type, values in per_pair.items()}


def rouge_pair_scores(
    hyps: Sequence[str],
    refs: Sequence[str],
    sentence_separator: Optional[str] = None,
    use_stemmer: bool = True,
) -> Dict[str, List[float]]:
    """rouge-score's ROUGE-1/2/L/Lsum F1 of each pair, in [0, 1], keyed by :data:`ROUGE_TYPES`: what
    :func:`rouge_scores` averages, and what a bootstrap over the pairs resamples
    (:mod:`unilm_fairseq.scoring.bootstrap`)."""
    check_pairs(hyps, refs)
    scorer = rouge_score_scorer(ROUGE_TYPES, use_stemmer)
    per_pair: Dict[str, List[float]] = {rouge_type: [] for rouge_type in ROUGE_TYPES}
    for hyp, ref in zip(hyps, refs):
        scores = scorer.score(
            split_sentences(ref, sentence_separator), split_sentences(hyp, sentence_separator)
        )
        for rouge_type in ROUGE_TYPES:
            per_pair[rouge_type].append(scores[rouge_type].fmeasure)
    return per_pair


def bleu4(hyps: Sequence[str], refs: Sequence[str], tokenize: str = "13a", lowercase: bool = False) -> float:
    """Corpus BLEU-4 in [0, 100] with one reference per hypothesis (sacrebleu, its default smoothing)."""
    import sacrebleu

    check_pairs(hyps, refs)
    return sacrebleu.corpus_bleu(list(hyps), [list(refs)], tokenize=tokenize, lowercase=lowercase).score


def load_wordnet():
    """nltk's WordNet reader, loaded; :class:`MeteorUnavailableError` if nltk or WordNet is missing."""
    try:
        import nltk
        from nltk.corpus import wordnet
    except ImportError as err:
        raise MeteorUnavailableError(
            "METEOR needs nltk: pip install 'unilm_fairseq[meteor]' (or pip install nltk)"
        ) from err
    for folder in NLTK_DATA_DIRS:
        if os.path.isdir(folder) and folder not in nltk.data.path:
            nltk.data.path.append(folder)
    try:
        wordnet.get_version()  # the first attribute access reads the database
    except LookupError as err:
        raise MeteorUnavailableError(
            f"METEOR needs WordNet, which nltk cannot find: {WORDNET_SETUP_HINT}"
        ) from err
    except (OSError, ValueError, AssertionError) as err:
        raise MeteorUnavailableError(
            f"METEOR needs WordNet, whose nltk data is incomplete ({type(err).__name__}: {err}): "
            f"{WORDNET_SETUP_HINT}"
        ) from err
    return wordnet


def meteor(hyps: Sequence[str], refs: Sequence[str], wordnet=None) -> float:
    """Mean per-sentence METEOR in [0, 1] (nltk: exact, Porter-stem and WordNet-synonym matches).

    Texts are split into tokens with sacrebleu's 13a tokenizer (punctuation apart), and nltk
    lowercases them. ``wordnet`` defaults to :func:`load_wordnet`; any object with nltk's
    ``synsets(word)`` works, e.g. one with no synonyms to score exact and stem matches only.
    """
    check_pairs(hyps, refs)
    if wordnet is None:
        wordnet = load_wordnet()
    from nltk.translate.meteor_score import single_meteor_score
    from sacrebleu.tokenizers.tokenizer_13a import Tokenizer13a

    tokenize = Tokenizer13a()
    total = 0.0
    for hyp, ref in zip(hyps, refs):
        total += single_meteor_score(tokenize(ref).split(), tokenize(hyp).split(), wordnet=wordnet)
    return total / len(hyps)


GENERATE_LINE = re.compile(r"^([HDT])-(\d+)\t(.*)$")
TRANSLATED_LINE = re.compile(r"\| Translated ([\d,]+) sentences")  # fairseq-generate's closing log line


class GenerateOutput(NamedTuple):
    """What a ``fairseq-generate`` log holds, by sample id."""

    hypotheses: Dict[int, str]  # the best per id: the D-<id> (detokenized) lines, else the H-<id> lines
    targets: Dict[int, str]  # the T-<id> lines
    translated: Optional[int]  # the closing "Translated N sentences" line's N, None without one


def read_generate_output(lines: List[str]) -> GenerateOutput:
    """The hypotheses and targets of ``fairseq-generate`` output lines, by id.

    ``H-<id>\\t<score>\\t<text>`` and ``D-<id>\\t<score>\\t<text>`` hold hypotheses (n-best: the first per
    id is the best), ``T-<id>\\t<text>`` the target. Each caller checks the ids against what it scores; a
    log with two runs' closing lines (output appended to an earlier run's) is an error.
    """
    translated = None
    found: Dict[str, Dict[int, str]] = {"H": {}, "D": {}, "T": {}}
    for line in lines:
        match = GENERATE_LINE.match(line)
        if match is None:
            closing = TRANSLATED_LINE.search(line)
            if closing and translated is not None:  # a second run appended: its ids repeat the first's
                raise ValueError(
                    "the log holds the output of more than one fairseq-generate run (two 'Translated N "
                    "sentences' lines): write each run to its own file"
                )
            if closing:
                translated = int(closing.group(1).replace(",", ""))
            continue
        kind, sample_id, rest = match.group(1), int(match.group(2)), match.group(3)
        text = rest if kind == "T" else rest.partition("\t")[2]  # drop the score
        found[kind].setdefault(sample_id, text)
    return GenerateOutput(found["D"] or found["H"], found["T"], translated)


def parse_generate_output(lines: List[str]) -> Tuple[List[str], List[str]]:
    """(hypotheses, targets) in id order from ``fairseq-generate`` output lines (``read_generate_output``).

    The ids must be those of a whole split, 0 to N-1, and agree with the closing "Translated N sentences"
    line where the output has one: a log cut short, or a split whose samples fairseq skipped
    (``--skip-invalid-size-inputs-valid-test``), would otherwise be scored as a different test set without
    a word.
    """
    hyps, targets, translated = read_generate_output(lines)
    if not hyps:
        raise ValueError("no H-<id> or D-<id> lines: is this fairseq-generate output?")
    missing = sorted(set(hyps) - set(targets))
    if missing:
        raise ValueError(f"{len(missing)} hypotheses have no T-<id> target line (first id {missing[0]})")
    unanswered = sorted(set(targets) - set(hyps))
    if unanswered:  # a cut-short log: scoring the rest would quietly report a different test set
        raise ValueError(
            f"{len(unanswered)} of {len(targets)} targets have no hypothesis (first id {unanswered[0]}): "
            "was generation cut short?"
        )
    ids = sorted(hyps)
    if translated is not None and translated != len(ids):
        raise ValueError(
            f"{len(ids)} hypotheses, but fairseq-generate says it translated {translated} sentences"
        )
    absent = sorted(set(range(ids[-1] + 1)) - set(ids))
    if absent:
        raise ValueError(
            f"{len(absent)} sample ids below {ids[-1]} have no output (first id {absent[0]}): generation "
            "was cut short or skipped samples (--skip-invalid-size-inputs-valid-test), and scoring the rest "
            "would score another test set"
        )
    return [hyps[i] for i in ids], [targets[i] for i in ids]


def hypotheses_in_line_order(lines: List[str], count: int) -> List[str]:
    """The best hypothesis of each id ``0..count-1`` of a ``fairseq-generate`` log, to score against a
    reference file of ``count`` lines (the test pairs' ids are their line numbers)."""
    hyps = read_generate_output(lines).hypotheses
    missing = [i for i in range(count) if i not in hyps]
    if missing:
        raise ValueError(
            f"{len(missing)} of {count} test pairs have no hypothesis (first id {missing[0]}): "
            "generation dropped or skipped them"
        )
    extra = sorted(set(hyps) - set(range(count)))
    if extra:
        raise ValueError(f"hypothesis id {extra[0]} is beyond the {count} references")
    return [hyps[i] for i in range(count)]


# how a dictionary's unknown word is written: BERT's and fairseq's, and as fairseq-generate escapes them
UNKNOWN_WORDS = frozenset({"[UNK]", "<unk>", "<[UNK]>", "<<unk>>"})


def drop_unknown_words(hypotheses: List[str]) -> Tuple[List[str], int]:
    """The hypotheses without their unknown-word tokens (and the ``##`` pieces that continue one), before
    any joining of subwords, and how many unknown words were dropped. A generated ``[UNK]`` is no word:
    scorers that strip brackets would match it with an unknown word of the reference."""
    dropped, kept = 0, []
    for hypothesis in hypotheses:
        words, known, in_unknown = hypothesis.split(), [], False
        for word in words:
            if word in UNKNOWN_WORDS:
                dropped, in_unknown = dropped + 1, True
            elif not (in_unknown and word.startswith("##")):
                known.append(word)
                in_unknown = False
        kept.append(" ".join(known) if len(known) < len(words) else hypothesis)
    return kept, dropped
