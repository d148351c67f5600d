"""A tiny learnable extractive-QA set in the official SQuAD JSON format, with a WordPiece vocabulary.

Passages are sentences of made-up words built from syllables ("Kalo mire tavo ."), so WordPiece splits
most words into pieces ("ka ##lo"). In an answerable passage one sentence starts with a marker word
("beta zita Kamo ."); the question names it ("What follows beta ?") and the answer is the rest of that
sentence, one to three words, as written (some capitalized). An unanswerable passage (v2.0) has no marker
sentence. A model has to find the marker, the span after it and the sentence end, and tell passages
without a marker apart: a tiny model learns this in a few hundred updates. (Telling several markers apart
by the question's one is much slower to learn for ``unilmv2_tiny``, so passages hold one marker.)
"""

import json
import random
from typing import Dict, List

SYLLABLES = ("ka", "lo", "mi", "re", "ta", "vo", "zi", "nu")
MARKERS = ("alpha", "beta", "gamma", "delta", "sigma")
QUESTION_TEMPLATES = ("What follows {} ?", "Which words come after {} ?", "After {} , what is said ?")
SPECIALS = ("[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]")
QUESTION_WORDS = ("what", "follows", "which", "words", "come", "after", "is", "said")


def vocabulary() -> List[str]:
    """A BERT-style token list: specials, punctuation, question words, markers, syllables, ``##`` pieces."""
    return [*SPECIALS, ".", "?", ",", *QUESTION_WORDS, *MARKERS, *SYLLABLES, *(f"##{s}" for s in SYLLABLES)]


def _word(rng: random.Random) -> str:
    return "".join(rng.choices(SYLLABLES, k=rng.randint(1, 3)))


def _paragraph(rng: random.Random, qid: str, unanswerable: bool) -> Dict:
    """One passage and one question; an answerable passage has one marker sentence, an unanswerable none."""
    marker = rng.choice(MARKERS)
    sentences = [[_word(rng) for _ in range(rng.randint(2, 5))] for _ in range(rng.randint(5, 9))]
    answer = [_word(rng) for _ in range(rng.randint(1, 3))]
    marked = None if unanswerable else rng.randrange(len(sentences))
    if marked is not None:
        sentences[marked] = [marker, *answer]
    context, qa = "", {"id": qid, "question": rng.choice(QUESTION_TEMPLATES).format(marker)}
    for index, sentence in enumerate(sentences):
        words = list(sentence)
        if rng.random() < 0.3:
            words[-1] = words[-1].capitalize()  # answers keep their case in the original text
        if index == marked:
            start = len(context) + len(words[0]) + 1
            qa["answers"] = [{"text": " ".join(words[1:]), "answer_start": start}]
        context += " ".join(words) + " . "
    qa["is_impossible"] = unanswerable
    if unanswerable:
        qa.update(answers=[], plausible_answers=[])
    return {"context": context.rstrip(), "qas": [qa]}


def squad_json(num_paragraphs: int, seed: int, unanswerable_prob: float = 0.0) -> Dict:
    """``{"version", "data"}`` with one article of ``num_paragraphs`` paragraphs, one question each."""
    rng = random.Random(seed)
    paragraphs = [
        _paragraph(rng, f"s{seed}-q{p}", rng.random() < unanswerable_prob) for p in range(num_paragraphs)
    ]
    version = "v2.0" if unanswerable_prob else "1.1"
    return {"version": version, "data": [{"title": "synthetic", "paragraphs": paragraphs}]}


def write_squad_dir(folder, train_paragraphs=1500, valid_paragraphs=100, unanswerable_prob=0.0) -> None:
    """``dict.txt`` (the vocabulary), ``train.json`` and ``valid.json`` in ``folder``."""
    (folder / "dict.txt").write_text("\n".join(vocabulary()) + "\n", encoding="utf-8")
    for split, n, seed in (("train", train_paragraphs, 1), ("valid", valid_paragraphs, 2)):
        data = squad_json(n, seed, unanswerable_prob)
        (folder / f"{split}.json").write_text(json.dumps(data), encoding="utf-8")
