"""Readers for the public release formats of CNN/DailyMail, XSum, Gigaword and SQuAD question generation.

Each ``read_*`` function yields :class:`Pair` s for one split (``train``, ``valid`` or ``test``) and reads
files only. :func:`format_pairs` turns pairs into the one-example-per-line text that
``fairseq-preprocess --source-lang src --target-lang tgt`` binarizes: optionally tokenized (sentencepiece
pieces, or BERT WordPiece with :class:`WordPieceTokenizer`) and truncated to a token budget. Every line is
one example: whitespace inside a text (newlines included) becomes one space.

Counts go into a ``collections.Counter`` passed as ``stats``: ``missing`` (ids listed in a split file whose
document is absent), ``skipped_empty`` (an empty source or target), ``truncated_source`` /
``truncated_target``, ``written``, and ``highlight_without_sentence`` (CNN/DM ``@highlight`` markers with
no sentence after them). A file that does not follow its format raises ``ValueError`` naming it.
"""

import hashlib
import json
import os
import re
from collections import Counter
from typing import Callable, Dict, Iterable, Iterator, List, NamedTuple, Optional, Sequence, Tuple

from ..encoders.wordpiece_tokenizer import WordPieceTokenizer

SPLITS = ("train", "valid", "test")
# names the public releases use for our three splits
SPLIT_ALIASES = {"train": ("train",), "valid": ("valid", "validation", "val", "dev"), "test": ("test",)}
CNNDM_URL_LISTS = {"train": "all_train.txt", "valid": "all_val.txt", "test": "all_test.txt"}
CNNDM_HIGHLIGHT = "@highlight"
XSUM_SPLIT_JSON = "XSum-TRAINING-DEV-TEST-SPLIT-90-5-5.json"
XSUM_SPLIT_KEYS = {"train": "train", "valid": "validation", "test": "test"}
XSUM_SECTION = re.compile(r"\[SN\]([A-Z-]+)\[SN\]")
XSUM_EXTENSIONS = (".summary", ".data")
GIGAWORD_UNK = ("UNK", "<unk>")  # how the released Gigaword files spell an unknown word


class Pair(NamedTuple):
    """One example: source segments (QG: answer and passage) and target sentences (CNN/DM highlights).
    QG from SQuAD JSON also gives ``answer_start``, the answer's character offset in the passage segment
    (whitespace normalized), when the file's offset holds the answer."""

    source: Tuple[str, ...]
    target: Tuple[str, ...]
    answer_start: Optional[int] = None


def normalize(text: str) -> str:
    """One line of text: every run of whitespace (newlines included) becomes one space."""
    return " ".join(text.split())


def normalized_offset(text: str, offset: int) -> int:
    """Where ``text[offset]`` lands in ``normalize(text)`` (on a space: the next word's start)."""
    while offset < len(text) and text[offset].isspace():
        offset += 1
    before = normalize(text[:offset])
    return len(before) + bool(before and text[offset - 1].isspace())


def url_hash(url: str) -> str:
    """Name (without ``.story``) of a CNN/DailyMail story: the SHA-1 hex digest of its URL."""
    return hashlib.sha1(url.encode("utf-8")).hexdigest()


def find_split_files(directory: str, split: str, patterns: Sequence[Tuple[str, ...]]) -> Optional[List[str]]:
    """The first group of ``patterns`` (``{}``: a name of ``split``) with all files in ``directory``."""
    for names in patterns:
        for alias in SPLIT_ALIASES[split]:
            paths = [os.path.join(directory, name.format(alias)) for name in names]
            if all(os.path.isfile(p) for p in paths):
                return paths
    return None


def _read_text(path: str, newline: Optional[str] = None) -> str:
    """A UTF-8 file's text; ``utf-8-sig`` drops a byte-order mark at its start, which is not text.
    ``newline`` as for ``open``: by default every ``\\r\\n`` and lone ``\\r`` becomes ``\\n``."""
    try:
        with open(path, encoding="utf-8-sig", newline=newline) as f:
            return f.read()
    except UnicodeDecodeError as err:
        raise ValueError(f"{path}: not UTF-8 text ({err})") from err


def _read_lines(path: str) -> List[str]:
    """Lines split at ``\\n`` only (a ``\\r`` before it dropped): ``str.splitlines``, and Python's
    universal newlines, would also split at a lone ``\\r``, U+2028, U+0085 ..., which can occur inside
    news text, and misalign parallel files. ``normalize`` makes any of them a space."""
    lines = [line[:-1] if line.endswith("\r") else line for line in _read_text(path, newline="").split("\n")]
    return lines[:-1] if lines and not lines[-1] else lines


def read_line_pairs(
    source_path: str, target_path: str, sentence_separator: Optional[str] = None
) -> Iterator[Pair]:
    """Parallel line files, one example a line; ``sentence_separator`` splits a target into sentences."""
    sources, targets = _read_lines(source_path), _read_lines(target_path)
    if len(sources) != len(targets):
        raise ValueError(
            f"{source_path} has {len(sources)} lines but {target_path} has {len(targets)}: not parallel"
        )
    for source, target in zip(sources, targets):
        sentences = target.split(sentence_separator) if sentence_separator else [target]
        yield Pair((normalize(source),), tuple(normalize(s) for s in sentences))


def parse_story(path: str, stats: Optional[Counter] = None) -> Tuple[str, List[str]]:
    """Article and highlights of a ``.story`` file: paragraphs, then ``@highlight`` lines each followed
    by one highlight sentence. Like the reference script (abisee/cnn-dailymail), every line after the
    first ``@highlight`` is a highlight, and an ``@highlight`` with no sentence after it (two in a row, or
    one at the end) adds nothing; such markers are counted in ``stats["highlight_without_sentence"]``."""
    stats = Counter() if stats is None else stats
    paragraphs, highlights, waiting = [], [], False
    for line in _read_lines(path):
        line = line.strip()
        if not line:
            continue
        if line == CNNDM_HIGHLIGHT:
            stats["highlight_without_sentence"] += waiting
            waiting = True
        elif waiting or highlights:
            highlights.append(normalize(line))
            waiting = False
        else:
            paragraphs.append(line)
    stats["highlight_without_sentence"] += waiting
    return normalize(" ".join(paragraphs)), highlights


def read_cnndm(
    input_dir: str,
    split: str,
    url_dir: Optional[str] = None,
    sentence_separator: Optional[str] = None,
    stats: Optional[Counter] = None,
) -> Iterator[Pair]:
    """CNN/DailyMail: ``{split}.source``/``{split}.target`` line files if present, else the stories
    release: ``.story`` files anywhere under ``input_dir`` and the url list of the split
    (``all_train.txt``, ``all_val.txt``, ``all_test.txt`` in ``url_dir`` or its ``url_lists/``)."""
    stats = Counter() if stats is None else stats
    lines = find_split_files(input_dir, split, [("{}.source", "{}.target")])
    if lines:
        yield from read_line_pairs(*lines, sentence_separator=sentence_separator)
        return
    url_dir = url_dir or input_dir
    url_lists = [os.path.join(d, CNNDM_URL_LISTS[split]) for d in (url_dir, f"{url_dir}/url_lists")]
    url_list = next((p for p in url_lists if os.path.isfile(p)), None)
    if url_list is None:
        raise FileNotFoundError(f"no {split}.source/.target in {input_dir} and no {' or '.join(url_lists)}")
    stories = {
        name: os.path.join(root, name)
        for root, _, names in os.walk(input_dir)
        for name in names
        if name.endswith(".story")
    }
    for url in _read_text(url_list).split():
        path = stories.get(url_hash(url) + ".story")
        if path is None:
            stats["missing"] += 1
            continue
        article, highlights = parse_story(path, stats)
        yield Pair((article,), tuple(highlights))


def parse_xsum(path: str) -> Dict[str, str]:
    """Sections of an XSum ``.summary``/``.data`` file: ``[SN]NAME[SN]`` markers, each followed by text."""
    parts = XSUM_SECTION.split(_read_text(path))
    if parts[0].strip() or len(parts) < 3:
        raise ValueError(f"{path}: not an XSum file (it must start with a [SN]NAME[SN] section marker)")
    sections = {name: normalize(body) for name, body in zip(parts[1::2], parts[2::2])}
    for name in ("FIRST-SENTENCE", "RESTBODY"):
        if name not in sections:
            raise ValueError(f"{path}: no [SN]{name}[SN] section")
    return sections


def read_xsum(
    input_dir: str, split: str, split_json: Optional[str] = None, stats: Optional[Counter] = None
) -> Iterator[Pair]:
    """XSum: ``{split}.source``/``{split}.target`` line files if present, else ``{bbcid}.summary`` (or
    ``.data``) files in ``input_dir`` or its ``bbc-summary-data/``, listed by the split JSON. Source is the
    RESTBODY, target the FIRST-SENTENCE."""
    stats = Counter() if stats is None else stats
    lines = find_split_files(input_dir, split, [("{}.source", "{}.target")])
    if lines:
        yield from read_line_pairs(*lines)
        return
    split_json = split_json or os.path.join(input_dir, XSUM_SPLIT_JSON)
    try:
        ids = json.loads(_read_text(split_json))[XSUM_SPLIT_KEYS[split]]
    except (json.JSONDecodeError, KeyError, TypeError) as err:
        key = XSUM_SPLIT_KEYS[split]
        raise ValueError(f"{split_json}: not an XSum split file with a {key!r} list of ids") from err
    directories = (input_dir, os.path.join(input_dir, "bbc-summary-data"))
    for bbcid in ids:
        candidates = (os.path.join(d, f"{bbcid}{ext}") for d in directories for ext in XSUM_EXTENSIONS)
        path = next((p for p in candidates if os.path.isfile(p)), None)
        if path is None:
            stats["missing"] += 1
            continue
        sections = parse_xsum(path)
        yield Pair((sections["RESTBODY"],), (sections["FIRST-SENTENCE"],))


def read_gigaword(input_dir: str, split: str, unk_token: Optional[str] = None) -> Iterator[Pair]:
    """Gigaword headline generation: ``{split}.src.txt``/``{split}.tgt.txt`` or the
    ``{split}.article.txt``/``{split}.title.txt`` naming; ``unk_token`` replaces the released ``UNK``."""
    names = [("{}.src.txt", "{}.tgt.txt"), ("{}.article.txt", "{}.title.txt")]
    names.append(("{}.article.filter.txt", "{}.title.filter.txt"))  # harvardnlp's filtered valid set
    paths = find_split_files(input_dir, split, names)
    if paths is None:
        raise FileNotFoundError(f"no Gigaword {split} files ({split}.src.txt/.tgt.txt ...) in {input_dir}")
    for pair in read_line_pairs(*paths):
        if unk_token:
            sides = (pair.source, pair.target)
            pair = Pair(*(tuple(replace_words(t, GIGAWORD_UNK, unk_token) for t in side) for side in sides))
        yield pair


def replace_words(text: str, words: Sequence[str], replacement: str) -> str:
    return " ".join(replacement if w in words else w for w in text.split())


def squad_pair(
    context: str,
    question: str,
    answer: str,
    answer_start: Optional[int],
    answer_first: bool = True,
    stats: Optional[Counter] = None,
) -> Pair:
    """One answer-aware question-generation pair: source (answer, passage) (or (passage, answer)), target
    the question. ``answer_start``, the answer's character offset in ``context`` as written, carries over
    (whitespace normalized) when the answer is there; ``answer_offset_mismatch`` counts answers that are
    not (None: no offset given, nothing counted)."""
    stats = Counter() if stats is None else stats
    offset = None
    if answer_start is not None:
        start = int(answer_start)
        if context[start : start + len(answer)] != answer:
            stats["answer_offset_mismatch"] += 1
        else:
            offset = normalized_offset(context, start)
    segments = (normalize(answer), normalize(context))
    return Pair(segments if answer_first else segments[::-1], (normalize(question),), offset)


def read_squad(path: str, answer_first: bool = True, stats: Optional[Counter] = None) -> Iterator[Pair]:
    """Answer-aware question generation from a SQuAD v1.1 JSON file: one pair per question
    (:func:`squad_pair`) with the first listed answer."""
    stats = Counter() if stats is None else stats
    try:
        data = json.loads(_read_text(path))["data"]
        for article in data:
            for paragraph in article["paragraphs"]:
                context = paragraph["context"]
                for qa in paragraph["qas"]:
                    answer = qa["answers"][0] if qa["answers"] else {"text": "", "answer_start": 0}
                    yield squad_pair(
                        context, qa["question"], answer["text"], answer["answer_start"], answer_first, stats
                    )
    except (json.JSONDecodeError, KeyError, TypeError, ValueError) as err:
        raise ValueError(f"{path}: not a SQuAD v1.1 file ({type(err).__name__}: {err})") from err


def read_squad_qg(
    input_dir: str, split: str, answer_first: bool = True, stats: Optional[Counter] = None
) -> Iterator[Pair]:
    """SQuAD QG: preprocessed ``{split}.pa.txt``/``{split}.q.txt`` line files (Du et al. 2017 split as
    released with UniLM; the source line is used as is) if present, else ``{split}.json`` or the official
    ``train-v1.1.json``/``dev-v1.1.json``."""
    lines = find_split_files(input_dir, split, [("{}.pa.txt", "{}.q.txt"), ("{}.pa.tok.txt", "{}.q.tok.txt")])
    if lines:
        yield from read_line_pairs(*lines)
        return
    found = find_split_files(input_dir, split, [("{}.json",), ("{}-v1.1.json",)])
    if found is None:
        raise FileNotFoundError(f"no SQuAD {split} file ({split}.pa.txt/.q.txt, {split}.json) in {input_dir}")
    yield from read_squad(found[0], answer_first=answer_first, stats=stats)


# ---------------------------------------------------------------------------------------------- tokenizers

Tokenize = Callable[[str], List[str]]


def make_tokenizer(
    spm_model: Optional[str] = None,
    wordpiece_vocab: Optional[str] = None,
    lowercase: Optional[bool] = None,
    specials: Iterable[str] = (),
) -> Tokenize:
    """Whitespace tokens (no model), sentencepiece pieces, or WordPiece. ``specials`` (``[UNK]``, ``[SEP]``
    ...) found in a text stay single tokens, never lowercased or split.

    ``lowercase=None``: WordPiece follows its vocabulary's casing (:func:`.resolve_lowercase`); the other
    two keep the case."""
    if spm_model and wordpiece_vocab:
        raise ValueError("give a sentencepiece model or a WordPiece vocabulary, not both")
    if spm_model:
        import sentencepiece as spm

        processor = spm.SentencePieceProcessor(model_file=spm_model)

        def base(text):
            return processor.encode(text.lower() if lowercase else text, out_type=str)

    elif wordpiece_vocab:
        base = WordPieceTokenizer.from_file(wordpiece_vocab, lowercase=lowercase)
    else:

        def base(text):
            return (text.lower() if lowercase else text).split()

    specials = sorted({s for s in specials if s}, key=len, reverse=True)
    if not specials:
        return base
    pattern = re.compile("(" + "|".join(map(re.escape, specials)) + ")")

    def tokenize(text: str) -> List[str]:
        chunks = pattern.split(text)  # odd positions hold the specials
        return [t for i, chunk in enumerate(chunks) for t in ([chunk] if i % 2 else base(chunk))]

    return tokenize


# ---------------------------------------------------------------------------------------------- output


def join_segments(segments: Sequence[str], tokenize: Tokenize, separator: str = "") -> List[str]:
    """Tokenize each segment alone and put the ``separator`` token (if any) between them."""
    tokens: List[str] = []
    for i, segment in enumerate(segments):
        if i and separator:
            tokens.append(separator)
        tokens.extend(tokenize(segment))
    return tokens


def truncate(tokens: List[str], limit: int, separator: str = "") -> Tuple[List[str], bool]:
    """The first ``limit`` tokens (0: no limit) and whether any were cut; a separator left dangling at
    the end is cut too."""
    if not limit or len(tokens) <= limit:
        return tokens, False
    tokens = tokens[:limit]
    while separator and tokens and tokens[-1] == separator:
        tokens.pop()
    return tokens, True


def format_pairs(
    pairs: Iterable[Pair],
    tokenize: Tokenize = str.split,
    source_separator: str = "",
    target_separator: str = "",
    max_source_tokens: int = 0,
    max_target_tokens: int = 0,
    stats: Optional[Counter] = None,
    fit_source: Optional[Callable[[Pair, int], Tuple[List[str], bool]]] = None,
) -> Iterator[Tuple[str, str]]:
    """``(source line, target line)`` for each pair: tokens joined by spaces. A pair with an empty source
    segment or no non-empty target sentence is skipped (``skipped_empty``). ``fit_source(pair, limit)``,
    when given, makes the source tokens and says whether it cut any (QG: :class:`.qg_windows.AnswerWindow`);
    by default the segments are joined and the end is truncated."""
    stats = Counter() if stats is None else stats
    for pair in pairs:
        sentences = [s for s in pair.target if s]
        if not sentences or not all(pair.source):
            stats["skipped_empty"] += 1
            continue
        if fit_source is None:
            source = join_segments(pair.source, tokenize, source_separator)
            source, cut_source = truncate(source, max_source_tokens, source_separator)
        else:
            source, cut_source = fit_source(pair, max_source_tokens)
        target = join_segments(sentences, tokenize, target_separator)
        target, cut_target = truncate(target, max_target_tokens, target_separator)
        if not source or not [t for t in target if t != target_separator]:  # text the tokenizer drops whole
            stats["skipped_empty"] += 1
            continue
        stats["truncated_source"] += cut_source
        stats["truncated_target"] += cut_target
        stats["written"] += 1
        yield " ".join(source), " ".join(target)
