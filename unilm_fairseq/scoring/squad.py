"""SQuAD's exact match and F1, by the rules of the official v2.0 evaluation, for v1.1 and v2.0 alike.

The v1.1 script scores the same but for gold answers that normalize to nothing (an answer "The"): v2.0
leaves them out, v1.1 keeps them (an empty prediction then matches one).

An answer is normalized by lowercasing, deleting ASCII punctuation, deleting the articles "a", "an",
"the" as whole words, and collapsing whitespace. Exact match: normalized strings equal. F1: over the
normalized answers' tokens (a bag: repeated tokens count as often as they occur in both). Each question
scores the best over its gold answers. A question without gold answers (v2.0 unanswerable) has the single
gold answer "", so only an empty prediction matches it. Scores are percentages.
"""

import logging
import re
import string
from collections import Counter
from typing import Dict, Iterable, List, Mapping

logger = logging.getLogger(__name__)

ARTICLES = re.compile(r"\b(a|an|the)\b")
PUNCTUATION = frozenset(string.punctuation)


def normalize_answer(text: str) -> str:
    """Lowercase, drop punctuation, drop articles, single spaces."""
    text = "".join(c for c in text.lower() if c not in PUNCTUATION)
    return " ".join(ARTICLES.sub(" ", text).split())


def exact_match(prediction: str, gold: str) -> float:
    return float(normalize_answer(prediction) == normalize_answer(gold))


def f1(prediction: str, gold: str) -> float:
    """Token F1 of the normalized strings; two empty answers agree (1.0), one empty one scores 0."""
    predicted, wanted = normalize_answer(prediction).split(), normalize_answer(gold).split()
    if not predicted or not wanted:
        return float(predicted == wanted)
    common = sum((Counter(predicted) & Counter(wanted)).values())
    if common == 0:
        return 0.0
    precision, recall = common / len(predicted), common / len(wanted)
    return 2 * precision * recall / (precision + recall)


def gold_answers(answers: Iterable[str]) -> List[str]:
    """The answers that normalize to something; ``[""]`` when none does (an unanswerable question)."""
    kept = [a for a in answers if normalize_answer(a)]
    return kept or [""]


def best_over_golds(metric, prediction: str, golds: Iterable[str]) -> float:
    return max(metric(prediction, gold) for gold in golds)


def squad_gold(dataset: Iterable[Mapping]) -> Dict[str, List[str]]:
    """``{question id: gold answers}`` from the ``data`` list of a SQuAD JSON file."""
    golds = {}
    for article in dataset:
        for paragraph in article["paragraphs"]:
            for qa in paragraph["qas"]:
                golds[str(qa["id"])] = [a["text"] for a in qa.get("answers", [])]
    return golds


def evaluate(golds: Mapping[str, Iterable[str]], predictions: Mapping[str, str]) -> Dict[str, float]:
    """EM and F1 (percent) over every question in ``golds``; a missing prediction scores 0 (logged).

    Returns ``exact``, ``f1``, ``total`` and, for the questions with and without an answer,
    ``HasAns_exact``/``HasAns_f1``/``HasAns_total`` and ``NoAns_*`` (present when there are any).
    """
    scores = {"HasAns": [], "NoAns": []}
    missing = 0
    for qid, answers in golds.items():
        answers = gold_answers(answers)
        group = "HasAns" if answers != [""] else "NoAns"
        if qid not in predictions:
            missing += 1
            scores[group].append((0.0, 0.0))
            continue
        prediction = predictions[qid]
        em = best_over_golds(exact_match, prediction, answers)
        scores[group].append((em, best_over_golds(f1, prediction, answers)))
    if missing:
        logger.warning("%d of %d questions have no prediction: each scores 0", missing, len(golds))
    result = _summary(scores["HasAns"] + scores["NoAns"])
    for group, pairs in scores.items():
        if pairs:
            result.update({f"{group}_{key}": value for key, value in _summary(pairs).items()})
    return result


def _summary(pairs) -> Dict[str, float]:
    total = len(pairs)
    return {
        "exact": 100.0 * sum(em for em, _ in pairs) / max(total, 1),
        "f1": 100.0 * sum(f for _, f in pairs) / max(total, 1),
        "total": total,
    }
