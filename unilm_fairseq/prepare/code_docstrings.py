"""Code -> one-line summary pairs from Python source: each documented function's code, its docstrings
removed, paired with the first sentence of its docstring.

This is the code-summarization task of CodeSearchNet and CodeXGLUE (code-to-text), built from Python
source already on the machine (by default the standard library of the running interpreter), so it needs
no download. Pure functions; ``scripts/prepare_code_docstrings.py`` walks the files and writes the pairs.

Choices of this project, none from the papers:

* the summary is the docstring's first sentence (of its first paragraph), with at least
  ``MIN_SUMMARY_WORDS`` words; docstrings that open with a call signature (``name(args) -> ...``), a
  doctest or markup are skipped, since they do not summarize;
* the source is the function's own text (decorators and nested functions included) with every docstring
  inside it removed, so the target never appears in the source; comments stay, as in CodeSearchNet;
* functions whose code without docstrings has fewer than ``MIN_CODE_WORDS`` whitespace-separated words
  (``pass``, ``...``, one-line delegations) are skipped;
* duplicates (the same code up to case and whitespace) keep their first occurrence;
* whole files go to one split, chosen from a digest of the file's path below its root, so that methods of
  one class never sit on both sides of the train/test line and a rebuild splits the same way.
"""

import ast
import hashlib
import re
from dataclasses import dataclass
from typing import Iterator, List, Optional, Tuple

MIN_SUMMARY_WORDS = 3
MIN_CODE_WORDS = 12
SKIPPED_DIRS = frozenset({"test", "tests", "idle_test", "site-packages", "dist-packages", "__pycache__"})

_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[A-Z`'\"(])")
_SIGNATURE = re.compile(r"^[\w.]+\s*\(.*\)\s*(->|$)")
_MARKUP = re.compile(r"^(>>>|\.\.|:|@|[-=*#]{2,})")


@dataclass(frozen=True)
class Pair:
    ident: str  # "relative/path.py:Qualified.name"
    name: str  # the function's own name
    code: str  # one line: the function's text without docstrings, whitespace collapsed
    summary: str  # the docstring's first sentence


def summary_sentence(docstring: str) -> Optional[str]:
    """The first sentence of the docstring's first paragraph, or None when that does not summarize."""
    paragraph = re.split(r"\n\s*\n", docstring.strip(), maxsplit=1)[0]
    text = " ".join(paragraph.split())
    if not text or _SIGNATURE.match(text) or _MARKUP.match(text) or not text[0].isalpha():
        return None
    sentence = _SENTENCE_END.split(text, maxsplit=1)[0]
    if len(sentence.split()) < MIN_SUMMARY_WORDS:
        return None
    return sentence


def split_of(relative_path: str, valid_percent: int, test_percent: int) -> str:
    """train / valid / test for a file, fixed by a digest of its path."""
    bucket = int(hashlib.sha1(relative_path.encode("utf-8")).hexdigest()[:8], 16) % 100
    if bucket < test_percent:
        return "test"
    if bucket < test_percent + valid_percent:
        return "valid"
    return "train"


def _docstring_lines(node: ast.AST) -> Iterator[Tuple[int, int]]:
    """(first, last) line numbers of every docstring inside node, node's own included."""
    for inner in ast.walk(node):
        if isinstance(inner, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Module)):
            body = inner.body
            if (
                body
                and isinstance(body[0], ast.Expr)
                and isinstance(body[0].value, ast.Constant)
                and isinstance(body[0].value.value, str)
            ):
                yield body[0].lineno, body[0].end_lineno


def _code_without_docstrings(lines: List[str], node: ast.AST) -> str:
    first = min([node.lineno] + [d.lineno for d in getattr(node, "decorator_list", [])])
    dropped = set()
    for start, end in _docstring_lines(node):
        dropped.update(range(start, end + 1))
    kept = [lines[i - 1] for i in range(first, node.end_lineno + 1) if i not in dropped]
    return " ".join(" ".join(kept).split())


def _functions(tree: ast.Module) -> Iterator[Tuple[str, ast.AST]]:
    """(qualified name, node) of every function and method, nested ones included."""
    stack = [("", tree)]
    while stack:
        prefix, parent = stack.pop()
        for child in ast.iter_child_nodes(parent):
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                name = f"{prefix}{child.name}"
                if not isinstance(child, ast.ClassDef):
                    yield name, child
                stack.append((name + ".", child))


def pairs_from_source(source: str, relative_path: str) -> Tuple[List[Pair], int]:
    """The pairs of one file's functions, and how many documented functions were left out.

    Raises SyntaxError (or ValueError for a NUL byte) when the file is not Python this interpreter parses.
    """
    tree = ast.parse(source)
    # the parser's lines: only \n, \r\n and \r end one (str.splitlines also splits at a form feed, \x1c-\x1e,
    # \x85, \u2028 ..., which shifted every later line against the tree's line numbers)
    lines = source.replace("\r\n", "\n").replace("\r", "\n").split("\n")
    pairs, left_out = [], 0
    for qualified, node in _functions(tree):
        docstring = ast.get_docstring(node, clean=True)
        if not docstring:
            continue
        summary = summary_sentence(docstring)
        code = _code_without_docstrings(lines, node)
        if summary is None or len(code.split()) < MIN_CODE_WORDS:
            left_out += 1
            continue
        pairs.append(Pair(f"{relative_path}:{qualified}", node.name, code, summary))
    return pairs, left_out


def code_digest(code: str) -> str:
    return hashlib.sha1(" ".join(code.lower().split()).encode("utf-8")).hexdigest()


def name_words(name: str) -> str:
    """A function's name as words: the name baseline ("_get_line_count" -> "get line count")."""
    spaced = re.sub(r"(?<=[a-z0-9])(?=[A-Z])", " ", name)
    return " ".join(part for part in re.split(r"[_\s]+", spaced) if part).lower()
