"""A tiny learnable extractive-QA set in the official SQuAD JSON format, with a WordPiece vocabulary.

Passages are sentences of made-up words built from syllables ("Kalo mire tavo ."), so WordPiece splits
every word into pieces ("ka ##lo"). Two or three sentences start with a marker word ("beta zita kamo .");
the question names one marker ("What follows beta ?") and the answer is the rest of that sentence, one to
three words. Unanswerable questions (v2.0) name a marker the passage lacks. A model has to match the
marker across the two segments and find the sentence end: learnable by a tiny model in a few hundred
updates, impossible without reading the question.
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


def _paragraph(rng: random.Random, qid_prefix: str, unanswerable: int) -> Dict:
    markers = rng.sample(MARKERS, rng.randint(2, 3))
    sentences = [[_word(rng) for _ in range(rng.randint(2, 5))] for _ in range(rng.randint(5, 9))]
    marked = rng.sample(range(len(sentences)), len(markers))
    answers = {}
    for marker, index in zip(markers, marked):
        answers[marker] = [_word(rng) for _ in range(rng.randint(1, 3))]
        sentences[index] = [marker, *answers[marker]]
    context, starts = "", {}
    for sentence in sentences:
        words = list(sentence)
        if rng.random() < 0.3:
            words[-1] = words[-1].capitalize()  # answers keep their case in the original text
        if sentence[0] in answers:
            answer_text = " ".join(words[1:])
            starts[sentence[0]] = len(context) + len(words[0]) + 1
            answers[sentence[0]] = answer_text
        context += " ".join(words) + " . "
    context = context.rstrip()
    qas = []
    for i, marker in enumerate(markers):
        question = rng.choice(QUESTION_TEMPLATES).format(marker)
        qas.append(
            {
                "id": f"{qid_prefix}-{i}",
                "question": question,
                "answers": [{"text": answers[marker], "answer_start": starts[marker]}],
                "is_impossible": False,
            }
        )
    absent = [m for m in MARKERS if m not in markers]
    for j in range(unanswerable):
        marker = rng.choice(absent)
        qas.append(
            {
                "id": f"{qid_prefix}-n{j}",
                "question": rng.choice(QUESTION_TEMPLATES).format(marker),
                "answers": [],
                "plausible_answers": [{"text": answers[markers[0]], "answer_start": starts[markers[0]]}],
                "is_impossible": True,
            }
        )
    return {"context": context, "qas": qas}


def squad_json(num_paragraphs: int, seed: int, unanswerable_prob: float = 0.0) -> Dict:
    """``{"version", "data"}`` with one article of ``num_paragraphs`` paragraphs."""
    rng = random.Random(seed)
    paragraphs = [
        _paragraph(rng, f"s{seed}-p{p}", int(rng.random() < unanswerable_prob)) for p in range(num_paragraphs)
    ]
    version = "v2.0" if unanswerable_prob else "1.1"
    return {"version": version, "data": [{"title": "synthetic", "paragraphs": paragraphs}]}


def write_squad_dir(folder, train_paragraphs=300, valid_paragraphs=40, unanswerable_prob=0.0) -> None:
    """``dict.txt`` (the vocabulary), ``train.json`` and ``valid.json`` in ``folder``."""
    (folder / "dict.txt").write_text("\n".join(vocabulary()) + "\n", encoding="utf-8")
    for split, n, seed in (("train", train_paragraphs, 1), ("valid", valid_paragraphs, 2)):
        data = squad_json(n, seed, unanswerable_prob)
        (folder / f"{split}.json").write_text(json.dumps(data), encoding="utf-8")
