"""MS MARCO (Bajaj et al. 2016) as generative QA pairs: selected passage(s) + question -> answer.

Reads the official release files, nothing else (no download):

* v2.1 (``train_v2.1.json``, ``dev_v2.1.json``, ``eval_v2.1_public.json``, optionally ``.gz``): ONE JSON
  object whose fields are columns keyed by row number: ``{"query": {"0": ...}, "passages": {"0": [{
  "is_selected": 0/1, "passage_text": ..., "url": ...}]}, "answers": {"0": [...]}, "wellFormedAnswers":
  {"0": "[]" or [...]}, "query_id": {...}, "query_type": {...}}``; the eval file has no answers;
* v1.1 (``train_v1.1.json`` ...): one JSON object per line with the same fields per example.

Unanswerable questions (answer ``No Answer Present.``) and examples without the chosen kind of answer or
without a selected passage are skipped and counted in ``stats``.
"""

import gzip
import json
from collections import Counter
from typing import Dict, Iterator, List, Optional, Tuple

from .seq2seq_release_formats import Pair, normalize

NO_ANSWER = "No Answer Present."
ANSWER_FIELDS = {"answers": "answers", "well_formed": "wellFormedAnswers"}
PASSAGE_CHOICES = ("selected", "all")


def _open(path: str):
    return gzip.open(path, "rt", encoding="utf-8") if path.endswith(".gz") else open(path, encoding="utf-8")


def read_examples(path: str) -> Iterator[Dict]:
    """Every example of a v2.1 (columnar) or v1.1 (JSON lines) file as one dict, in row order."""
    with _open(path) as f:
        text = f.read()
    try:
        data = json.loads(text)
    except json.JSONDecodeError:
        data = None
    if isinstance(data, dict) and isinstance(data.get("query"), dict):
        rows = sorted(data["query"], key=int)
        for row in rows:
            yield {name: column.get(row) for name, column in data.items() if isinstance(column, dict)}
        return
    for number, line in enumerate(text.split("\n"), 1):
        if not line.strip():
            continue
        try:
            example = json.loads(line)
        except json.JSONDecodeError as err:
            raise ValueError(
                f"{path}:{number}: neither MS MARCO v2.1 JSON nor v1.1 JSON lines ({err})"
            ) from None
        if not isinstance(example, dict) or "query" not in example:
            raise ValueError(f"{path}:{number}: an MS MARCO example needs a 'query' field")
        yield example


def answers_of(example: Dict, answer_type: str) -> Optional[List[str]]:
    """The example's answers of ``answer_type`` (None when the file has no such field), without blanks."""
    value = example.get(ANSWER_FIELDS[answer_type])
    if value is None:
        return None
    if isinstance(value, str):  # v2.1 writes "[]" for "no well-formed answer"
        value = [] if value.strip() in ("", "[]") else [value]
    return [normalize(a) for a in value if normalize(a) and normalize(a) != NO_ANSWER]


def read_marco(
    path: str, answer_type: str = "well_formed", passages: str = "selected", stats: Optional[Counter] = None
) -> Iterator[Tuple[str, Pair]]:
    """``(query_id, Pair((passages, question), (answer,)))`` per usable example.

    A file without answers (the eval release) gives every example, with an empty answer.

    Args:
        answer_type: ``well_formed`` (the NLG task's answers) or ``answers`` (the QA task's); the first is
            used.
        passages: ``selected`` (those marked ``is_selected``, joined in order) or ``all``.
    """
    if answer_type not in ANSWER_FIELDS or passages not in PASSAGE_CHOICES:
        raise ValueError(
            f"answer_type must be one of {list(ANSWER_FIELDS)} and passages one of {PASSAGE_CHOICES}"
        )
    stats = Counter() if stats is None else stats
    for example in read_examples(path):
        question = normalize(example.get("query") or "")
        chosen = [p for p in example.get("passages") or [] if passages == "all" or p.get("is_selected")]
        context = normalize(" ".join(p.get("passage_text", "") for p in chosen))
        answers = answers_of(example, answer_type)
        if answers is None and example.get("answers") is not None:
            raise ValueError(
                f"{path} has no {ANSWER_FIELDS[answer_type]} (MS MARCO v1.1?): use answer type 'answers'"
            )
        if answers is None:  # the eval release: sources only
            stats["without_answers"] += 1
            answers = [""]
        if not answers:
            stats["no_answer"] += 1
            continue
        if not context or not question:
            stats["no_passage"] += 1
            continue
        yield str(example.get("query_id", "")), Pair((context, question), (answers[0],))
