"""ACLSum (Takeshita et al., NAACL 2024) as aspect-conditioned summarization pairs, and its baselines.

ACLSum ships inside the PyPI package ``aclsum`` (MIT): ``aclsum/dataset/{train,val,test}.jsonl``, one
paper a line, with the sentences of its abstract, introduction and conclusion (PTB-tokenized) and one
expert-written one-sentence summary per aspect (``challenge``, ``approach``, ``outcome``). Each paper
gives one pair per aspect:

* source: ``"<aspect> : "`` then the abstract's sentences, then as many whole introduction sentences as
  fit the token budget (this project's choice of input; the aspect name conditions the summary);
* target: that aspect's summary.

With ``joined=True`` each paper gives one pair instead: the source without an aspect prefix, and the target
the three summaries in the order challenge, approach, outcome (a three-sentence summary of the paper, about
three times as long as one aspect's). A paper missing any aspect's summary is skipped and its missing
summaries are counted. This is this project's second task on the data, for targets longer than one
sentence; ACLSum itself evaluates per aspect.

For domain-adaptive pre-training, :func:`paper_sentences` gives a paper's sentences without its
summaries.

The baselines are extractive and need no model: ``lead`` (the abstract's first sentence), ``positional``
(challenge -> the abstract's first sentence, approach -> its second, outcome -> its last) and ``oracle``
(the source sentence with the best ROUGE against the reference: an upper bound for one-sentence
extraction, not a system). For a joined pair each baseline joins its three aspects' sentences: lead takes
the abstract's first three sentences (lead-3), positional its first, second and last, and oracle each
aspect's best sentence against that aspect's summary.
"""

import functools
import json
import logging
import os
from dataclasses import dataclass, field
from typing import Callable, Dict, Iterable, List, Optional, Sequence, Tuple

from ..encoders.text_lines import read_lines

logger = logging.getLogger(__name__)

ASPECTS = ("challenge", "approach", "outcome")
JOINED = "joined"  # the aspect name of a pair whose target is all three summaries
SPLITS = {"train": "train", "valid": "val", "test": "test"}  # fairseq split -> ACLSum file name
BASELINES = ("lead", "positional", "oracle")
# PTB bracket and quote tokens in the released sentences, written back as the characters they stand for
PTB_TOKENS = {"-LRB-": "(", "-RRB-": ")", "-LSB-": "[", "-RSB-": "]", "-LCB-": "{", "-RCB-": "}"}
PTB_TOKENS.update({"``": '"', "''": '"'})


class ACLSumNotInstalled(ImportError):
    pass


def dataset_dir() -> str:
    """The ``dataset`` folder of the installed ``aclsum`` package (read as files, nothing downloaded)."""
    try:
        import importlib.util

        spec = importlib.util.find_spec("aclsum")
    except ImportError:  # pragma: no cover - find_spec raises only for broken parents
        spec = None
    if spec is None or not spec.submodule_search_locations:
        raise ACLSumNotInstalled("ACLSum is not installed: pip install aclsum")
    path = os.path.join(list(spec.submodule_search_locations)[0], "dataset")
    if not os.path.isdir(path):
        raise ACLSumNotInstalled(f"the aclsum package has no dataset folder at {path}: pip install aclsum")
    return path


def read_papers(path: str) -> List[dict]:
    """One dict per line of an ACLSum ``.jsonl`` file; a line that is not a JSON object is a ``ValueError``
    naming the file and line."""
    papers = []
    for number, line in enumerate(read_lines(path), 1):  # a byte that is not UTF-8: named with its line
        if not line.strip():
            continue
        try:
            paper = json.loads(line)
        except json.JSONDecodeError as err:
            raise ValueError(f"{path}:{number}: not a JSON line ({err})") from None
        if not isinstance(paper, dict):
            raise ValueError(f"{path}:{number}: a JSON {type(paper).__name__}, not a paper's object")
        papers.append(paper)
    return papers


def clean_sentence(sentence: str) -> str:
    """PTB bracket/quote tokens back to characters, whitespace collapsed."""
    return " ".join(PTB_TOKENS.get(word, word) for word in sentence.split())


@dataclass
class PairStats:
    """What building pairs from one split kept, skipped and cut."""

    papers: int = 0
    pairs: int = 0
    skipped_no_abstract: int = 0
    skipped_no_summary: int = 0
    truncated_sources: int = 0
    introduction_sentences: List[int] = field(default_factory=list)
    joined: bool = False  # one pair per paper: a missing summary skips its paper

    def describe(self) -> str:
        used = self.introduction_sentences
        mean_intro = sum(used) / len(used) if used else 0.0
        incomplete = " (their papers skipped: a joined target needs all three)" if self.joined else ""
        return (
            f"{self.papers} papers -> {self.pairs} pairs; skipped {self.skipped_no_abstract} papers with an "
            f"empty abstract and {self.skipped_no_summary} aspects with no summary{incomplete}; "
            f"{self.truncated_sources} sources cut inside the abstract to fit the budget; {mean_intro:.1f} "
            "introduction sentences per source on average"
        )


@dataclass
class Pair:
    paper_id: str
    aspect: str  # one of ASPECTS, or JOINED
    source: str
    target: str
    sentences: List[str]  # the source's sentences after the aspect prefix (abstract first)
    abstract: List[str]
    summaries: Tuple[str, ...] = ()  # a joined pair's summaries, in ASPECTS order (its target joins them)


def build_source(
    aspect: str,
    abstract: Sequence[str],
    introduction: Sequence[str],
    count_tokens: Callable[[str], int],
    max_tokens: int,
) -> (str, List[str], int, bool):
    """The source text of one pair within ``max_tokens`` tokens (as ``count_tokens`` counts them).

    Returns ``(text, sentences, introduction_sentences_used, truncated)``. The aspect prefix (none for
    ``JOINED``) and the abstract come first; introduction sentences are added whole, in order, while they
    fit. An abstract that alone exceeds the budget is cut word by word (``truncated``).
    """
    prefix = "" if aspect == JOINED else f"{aspect} :"
    used = count_tokens(prefix) if prefix else 0
    sentences: List[str] = []
    truncated = False
    for sentence in abstract:
        n = count_tokens(sentence)
        if used + n > max_tokens:
            words = sentence.split()
            while words and used + count_tokens(" ".join(words)) > max_tokens:
                words.pop()
            if words:
                sentences.append(" ".join(words))
            truncated = True
            break
        sentences.append(sentence)
        used += n
    intro_used = 0
    if not truncated:
        for sentence in introduction:
            n = count_tokens(sentence)
            if used + n > max_tokens:
                break
            sentences.append(sentence)
            used += n
            intro_used += 1
    return " ".join(([prefix] if prefix else []) + sentences), sentences, intro_used, truncated


def build_pairs(
    papers: Iterable[dict], count_tokens: Callable[[str], int], max_tokens: int, joined: bool = False
) -> (List[Pair], PairStats):
    """Aspect-conditioned pairs of ``papers`` (ACLSum json dicts), in paper then aspect order; with
    ``joined``, one pair per paper whose target is its three summaries."""
    stats = PairStats(joined=joined)
    pairs: List[Pair] = []
    for paper in papers:
        stats.papers += 1
        sections = paper.get("sentences") or {}
        abstract = [clean_sentence(s) for s in sections.get("abstract") or [] if s.strip()]
        introduction = [clean_sentence(s) for s in sections.get("introduction") or [] if s.strip()]
        if not abstract:
            stats.skipped_no_abstract += 1
            continue
        summaries = paper.get("summary") or {}
        targets = {aspect: " ".join((summaries.get(aspect) or "").split()) for aspect in ASPECTS}
        missing = sum(not target for target in targets.values())
        stats.skipped_no_summary += missing
        if joined:
            if missing:
                continue
            parts = tuple(targets[aspect] for aspect in ASPECTS)
            wanted = [(JOINED, " ".join(parts))]
        else:
            parts = ()
            wanted = [(aspect, target) for aspect, target in targets.items() if target]
        for aspect, target in wanted:
            source, sentences, intro_used, truncated = build_source(
                aspect, abstract, introduction, count_tokens, max_tokens
            )
            if not sentences:  # a source of the prefix alone: nothing to summarize, and no oracle sentence
                raise ValueError(
                    f"a budget of {max_tokens} source tokens keeps no word of paper "
                    f"{paper.get('id', stats.papers)!r}'s abstract after its {aspect!r} prefix: give more"
                )
            stats.truncated_sources += int(truncated)
            stats.introduction_sentences.append(intro_used)
            pairs.append(Pair(paper.get("id", ""), aspect, source, target, sentences, abstract, parts))
            stats.pairs += 1
    return pairs, stats


def paper_sentences(paper: dict) -> List[str]:
    """The abstract, introduction and conclusion sentences of one paper, in that order (cleaned)."""
    sections = paper.get("sentences") or {}
    return [
        clean_sentence(s)
        for section in ("abstract", "introduction", "conclusion")
        for s in sections.get(section) or []
        if s.strip()
    ]


def lead(pair: Pair) -> str:
    """The abstract's first sentence; a joined pair's first three (lead-3)."""
    return " ".join(pair.abstract[: 3 if pair.aspect == JOINED else 1])


def _positional_index(aspect: str, abstract: Sequence[str]) -> int:
    if aspect == "approach" and len(abstract) < 2:
        return 0
    return {"challenge": 0, "approach": 1, "outcome": -1}[aspect]


def positional(pair: Pair) -> str:
    """challenge -> the abstract's first sentence, approach -> its second, outcome -> its last; a joined
    pair gets each of those once, in the abstract's order."""
    aspects = ASPECTS if pair.aspect == JOINED else (pair.aspect,)
    indices = sorted({_positional_index(a, pair.abstract) % len(pair.abstract) for a in aspects})
    return " ".join(pair.abstract[i] for i in indices)


def oracle(pair: Pair, score: Callable[[str, str], float]) -> str:
    """The source sentence that ``score(reference, sentence)`` rates best; for a joined pair, that sentence
    for each aspect's summary, joined in aspect order."""
    references = pair.summaries if pair.aspect == JOINED else (pair.target,)
    return " ".join(max(pair.sentences, key=lambda sentence: score(ref, sentence)) for ref in references)


def baseline_hypotheses(pairs: Sequence[Pair], name: str, score: Optional[Callable] = None) -> List[str]:
    if name == "lead":
        return [lead(p) for p in pairs]
    if name == "positional":
        return [positional(p) for p in pairs]
    if name == "oracle":
        if score is None:
            raise ValueError("the oracle baseline needs a scoring function")
        return [oracle(p, score) for p in pairs]
    raise ValueError(f"unknown baseline {name!r}; expected one of {BASELINES}")


@functools.lru_cache(maxsize=1)
def _scorer():
    from rouge_score import rouge_scorer, tokenizers

    # the tokenizer passed in, as scoring/metrics.py does: the same tokens, no absl line per scorer
    return rouge_scorer.RougeScorer(
        ["rouge1", "rouge2", "rougeL"], use_stemmer=True, tokenizer=tokenizers.DefaultTokenizer(True)
    )


def summed_rouge(reference: str, hypothesis: str) -> float:
    """ROUGE-1 + ROUGE-2 + ROUGE-L F1 of one pair (the oracle's selection score; stemmed, as scored)."""
    scores = _scorer().score(reference, hypothesis)
    return sum(s.fmeasure for s in scores.values())


def split_counts(stats: Dict[str, PairStats]) -> str:
    return "; ".join(f"{split}: {s.describe()}" for split, s in stats.items())
