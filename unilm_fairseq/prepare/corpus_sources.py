"""The English prose sources of ``scripts/build_pretraining_corpus.py``, and reading one document.

Each :class:`Source` names the Debian package that provides it (``scripts/setup_corpus_sources.sh``
installs them), why it is there, and how its files are found; :func:`read_document` turns one
work item into sentences, or into the reason it was skipped. A source yields work items
``(source, name, fmt, payload)``: ``fmt`` is a file format (``html``, ``pod``, ``roff``, ``text``) and
``payload`` a path, or ``fmt`` is ``sentences`` and ``payload`` the document's sentences already.

Never read here: package descriptions from apt's lists or dpkg's status (kept for an independent
evaluation), changelogs and copyright files (not prose), ACLSum's summaries and its val/test papers
(the fine-tuning evaluation).
"""

import fnmatch
import gzip
import json
import lzma
import os
import re
import shutil
import subprocess
from dataclasses import dataclass, field
from typing import Callable, Iterator, List, Optional, Sequence, Tuple

from . import aclsum
from .corpus_text import (
    document_sentences,
    fortune_paragraphs,
    html_paragraphs,
    info_paragraphs,
    pod_paragraphs,
    roff_paragraphs,
    text_paragraphs,
)

WorkItem = Tuple[str, str, str, object]
BINARY_PROBE = 8192  # bytes looked at for a NUL
INFO_INDEX_MARK = b"\x00\x08"  # Texinfo's index markers ("\0\b[index\0\b]") in Info files
ALWAYS_SKIPPED = ("changelog*", "NEWS*", "copyright*", "COPYING*", "LICENSE*", "*.license*")
SKIPPED_PAGES = ("genindex*", "search.html", "py-modindex.html", "*-modindex.html", "bookindex.html")
DICTD_ENTRIES_PER_DOCUMENT = 100  # dictionary entries are short: group consecutive ones
REPO_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
KJV_RANGE = "Gen1:1-Rev22:21"


@dataclass
class Source:
    name: str
    package: str
    why: str
    items: Callable[["Source"], Iterator[WorkItem]]
    roots: Sequence[str] = ()
    patterns: Sequence[Tuple[str, str]] = ()  # (glob on the path below a root, format)
    skip: Sequence[str] = field(default_factory=tuple)  # globs on the path below a root

    def available(self) -> Optional[str]:
        """None when the source can be read, else why not (one line)."""
        missing = [r for r in self.roots if not os.path.exists(r)]
        if missing:
            return f"{missing[0]} not found (install the Debian package {self.package})"
        return None


def _walk_files(source: Source) -> Iterator[WorkItem]:
    for root in source.roots:
        for folder, dirs, files in os.walk(root):
            dirs.sort()
            relative_dir = os.path.relpath(folder, root)
            for name in sorted(files):
                relative = os.path.normpath(os.path.join(relative_dir, name))
                if any(fnmatch.fnmatch(name, g) for g in ALWAYS_SKIPPED) or any(
                    fnmatch.fnmatch(relative, g) or fnmatch.fnmatch(name, g) for g in source.skip
                ):
                    continue
                for pattern, fmt in source.patterns:
                    if fnmatch.fnmatch(relative, pattern):
                        yield source.name, os.path.join(folder, name), fmt, os.path.join(folder, name)
                        break


def _bible_items(source: Source) -> Iterator[WorkItem]:
    """The King James Bible, one document per chapter, through the ``bible`` program."""
    program = shutil.which("bible")
    if program is None:
        raise FileNotFoundError("the 'bible' program is missing (install the Debian package bible-kjv)")
    text = subprocess.run([program, "-l0", KJV_RANGE], capture_output=True, check=True, text=True).stdout
    name, verses = None, []
    for line in text.splitlines():
        if not line.strip():
            continue
        if not line[0].isspace():  # "Genesis 1": a new chapter
            if verses:
                yield source.name, name, "sentences", document_sentences(verses, filter_prose=False)
            name, verses = line.strip(), []
        else:  # "  12 And God said, ..."
            verses.append(line.strip().split(None, 1)[-1])
    if verses:
        yield source.name, name, "sentences", document_sentences(verses, filter_prose=False)


_DICTD_DIGITS = {
    c: i for i, c in enumerate("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/")
}


def _dictd_number(text: str) -> int:
    value = 0
    for char in text:
        value = value * 64 + _DICTD_DIGITS[char]
    return value


def _dictd_items(source: Source) -> Iterator[WorkItem]:
    """Entries of a dictd dictionary (``NAME.index`` + ``NAME.dict.dz``), in file order, grouped."""
    for index_path in source.roots:
        spans = set()
        with open(index_path, encoding="utf-8", errors="replace") as f:
            for line in f:
                fields = line.rstrip("\n").split("\t")
                if len(fields) >= 3 and not fields[0].startswith("00"):  # 00-database-* metadata
                    spans.add((_dictd_number(fields[1]), _dictd_number(fields[2])))
        data_path = index_path[: -len(".index")] + ".dict.dz"
        group: List[str] = []
        with gzip.open(data_path, "rb") as data:  # dictzip is gzip: read forward in offset order
            for offset, length in sorted(spans):
                if offset < data.tell():
                    continue  # overlaps the previous entry
                data.seek(offset)
                entry = data.read(length).decode("utf-8", errors="replace")
                group.extend(p for p in re.split(r"\n\s*\n", entry) if p.strip())
                if len(group) >= DICTD_ENTRIES_PER_DOCUMENT:
                    yield source.name, f"{data_path}@{offset}", "sentences", document_sentences(group)
                    group = []
        if group:
            yield source.name, f"{data_path}@end", "sentences", document_sentences(group)


def _austen_items(source: Source) -> Iterator[WorkItem]:
    """The embedded Austen novels: already one sentence per line, documents between empty lines."""
    with lzma.open(source.roots[0], "rt", encoding="utf-8") as f:
        sentences: List[str] = []
        number = 0
        for line in f:
            if line.strip():
                sentences.append(line.strip())
            elif sentences:
                number += 1
                yield source.name, f"austen#{number}", "sentences", sentences
                sentences = []
        if sentences:
            yield source.name, f"austen#{number + 1}", "sentences", sentences


def _aclsum_items(source: Source) -> Iterator[WorkItem]:
    """ACLSum's train papers: abstract, introduction and conclusion sentences; no summary, and never
    the val or test papers (the fine-tuning evaluation reads those)."""
    path = os.path.join(aclsum.dataset_dir(), f"{aclsum.SPLITS['train']}.jsonl")
    with open(path, encoding="utf-8") as f:
        for number, line in enumerate(f):
            if line.strip():
                yield (
                    source.name,
                    f"aclsum-train#{number}",
                    "sentences",
                    aclsum.paper_sentences(json.loads(line)),
                )


def _aclsum_available(source: Source) -> Optional[str]:
    try:
        aclsum.dataset_dir()
    except aclsum.ACLSumNotInstalled as err:
        return str(err)
    return None


def _source(name, package, why, roots, patterns, skip=(), items=_walk_files) -> Source:
    return Source(name, package, why, items, tuple(roots), tuple(patterns), tuple(skip))


DOC = "/usr/share/doc"
SPHINX_SKIPPED = ("_sources/*", "_static/*", "_modules/*", "_downloads/*", "_images/*", *SKIPPED_PAGES)
# fmt: off
SOURCES = {
    s.name: s
    for s in (
        _source("austen", "(in the repository)", "six public-domain novels, long-form narrative prose",
                [os.path.join(REPO_ROOT, "data", "austen.txt.xz")], [], items=_austen_items),
        _source("aclsum-train", "PyPI aclsum", "scientific prose (NLP papers); train papers only",
                [], [], items=_aclsum_items),
        _source("bible-kjv", "bible-kjv-text, bible-kjv", "public-domain Early Modern English narrative",
                ["/usr/lib/bible.data"], [], items=_bible_items),
        _source("python-doc", "python3.11-doc", "Python's tutorial, library and language reference",
                [f"{DOC}/python3.11/html"], [("*.html", "html")],
                ["_sources/*", "_static/*", *SKIPPED_PAGES, "whatsnew/changelog.html"]),
        _source("perl-doc", "perl-doc (and the installed Perl modules)",
                "Perl's manuals and FAQs, and the documentation of its modules (POD)",
                ["/usr/share/perl", "/usr/share/perl5"], [("*.pod", "pod"), ("*.pm", "pod")]),
        _source("postgresql-doc", "postgresql-doc-15", "the PostgreSQL manual (tutorial, SQL, admin)",
                [f"{DOC}/postgresql-doc-15/html"], [("*.html", "html")], SKIPPED_PAGES),
        _source("git-doc", "git-doc", "Git's manuals, user manual and how-tos",
                [f"{DOC}/git-doc"], [("*.html", "html")], ["RelNotes/*"]),
        _source("debian-reference", "debian-reference-en", "the Debian Reference (system administration)",
                ["/usr/share/debian-reference"], [("*.en.html", "html")]),
        _source("debian-handbook", "debian-handbook", "the Debian Administrator's Handbook (English pages)",
                [f"{DOC}/debian-handbook/html/en-US"], [("*.html", "html")], ["ix01.html"]),
        _source("linux-doc", "linux-doc-6.1", "the Linux kernel's documentation (HTML and plain-text files)",
                [f"{DOC}/linux-doc-6.1"], [("html/*.html", "html"), ("Documentation/*.txt.gz", "text")],
                ["html/translations/*", "html/_sources/*", "html/_static/*", *SKIPPED_PAGES,
                 "Documentation/translations/*", "Documentation/devicetree/*"]),
        _source("manpages", "manpages, manpages-dev (and every installed package's pages)",
                "manual pages in English (man(7)/mdoc(7) roff; Perl's are left to perl-doc, the Google "
                "Cloud SDK's thousands of near-identical gcloud pages left out)",
                ["/usr/share/man"], [("man[1-9]*/*", "roff")], ["*perl*", "*.3pm.gz", "gcloud*"]),
        _source("gimp-help", "gimp-help-en", "the GIMP user manual (DocBook HTML)",
                ["/usr/share/gimp/2.0/help/en"], [("*.html", "html")]),
        _source("django-doc", "python-django-doc", "Django's topic guides, how-tos and release notes",
                [f"{DOC}/python-django-doc/html"], [("*.html", "html")],
                ["_sources/*", "_static/*", "_modules/*", *SKIPPED_PAGES]),
        _source("sqlite-doc", "sqlite3-doc", "SQLite's documentation and C API reference",
                [f"{DOC}/sqlite3"], [("*.html", "html")]),
        _source("gnome-help", "gnome-user-docs", "GNOME's desktop help (Mallard pages, C = English)",
                ["/usr/share/help/C"], [("*.page", "html")]),
        _source("openjdk-doc", "openjdk-17-doc", "the Java SE 17 API specification (javadoc prose)",
                [f"{DOC}/openjdk-17-jre-headless/api"], [("*.html", "html")],
                ["*/class-use/*", "index-files/*", "*-tree.html", "allclasses*", "allpackages*",
                 "*/src-html/*", "legal/*", "*-summary.html", "constant-values.html",
                 "serialized-form.html"]),
        _source("rust-doc", "rust-doc", "Rust's books (the Book, Reference, Nomicon, ...) and std docs",
                [f"{DOC}/rust-doc/html"], [("*.html", "html")],
                ["src/*", "core/*", "alloc/*", "implementors/*", "test/*", "std/arch/*", "*/all.html",
                 "error-index.html", "*/print.html"]),
        _source("pandas-doc", "python-pandas-doc", "pandas' user guide, API reference and release notes",
                [f"{DOC}/python-pandas-doc/html"], [("*.html", "html")], SPHINX_SKIPPED),
        _source("sqlalchemy-doc", "python-sqlalchemy-doc", "SQLAlchemy's tutorials and ORM/Core guides",
                [f"{DOC}/python-sqlalchemy-doc/html"], [("*.html", "html")],
                (*SPHINX_SKIPPED, "changelog/*")),
        _source("sklearn-doc", "python-sklearn-doc", "scikit-learn's user guide (machine learning)",
                [f"{DOC}/python-sklearn-doc/html"], [("*.html", "html")], SPHINX_SKIPPED),
        _source("sympy-doc", "python-sympy-doc", "SymPy's tutorials and module guides (mathematics)",
                [f"{DOC}/python-sympy-doc/html"], [("*.html", "html")], SPHINX_SKIPPED),
        _source("libreoffice-help", "libreoffice-help-en-us", "the LibreOffice help (office applications)",
                ["/usr/share/libreoffice/help/en-US"], [("*.html", "html")]),
        _source("octave-doc", "octave-doc", "the GNU Octave manual (Texinfo HTML; numerical computing)",
                [f"{DOC}/octave"], [("*.html", "html")]),
        _source("scipy-doc", "python-scipy-doc", "SciPy's tutorials and reference (scientific computing)",
                [f"{DOC}/python-scipy-doc/html"], [("*.html", "html")], SPHINX_SKIPPED),
        _source("statsmodels-doc", "python-statsmodels-doc", "statsmodels' guides and reference (statistics)",
                [f"{DOC}/python-statsmodels-doc/html"], [("*.html", "html")], SPHINX_SKIPPED),
        _source("astropy-doc", "python-astropy-doc", "Astropy's guides and reference (astronomy)",
                [f"{DOC}/python-astropy-doc/html"], [("*.html", "html")], SPHINX_SKIPPED),
        _source("apache-doc", "apache2-doc", "the Apache HTTP Server manual (English pages)",
                [f"{DOC}/apache2-doc/manual/en"], [("*.html", "html")]),
        _source("debian-policy", "debian-policy, developers-reference", "Debian's policy manual and "
                "developer's reference",
                [f"{DOC}/debian-policy/policy.html", "/usr/share/developers-reference"],
                [("*.html", "html")], (*SPHINX_SKIPPED, "developers-reference.html")),
        _source("info", "GNU Info manuals of installed packages (coreutils, findutils, grep, gzip, ...)",
                "GNU manuals in Info format (Octave's and LilyPond's left to their HTML)",
                ["/usr/share/info"], [("*.info*", "info")], ["*octave*", "*lilypond*", "dir*"]),
        _source("lilypond-doc", "lilypond-doc-html", "LilyPond's manuals (music engraving; learning, "
                "notation, glossary, essay)", [f"{DOC}/lilypond/html/Documentation"], [("*.html", "html")],
                ["*big-page*", "*.??.html", "*.??_??.html"]),
        _source("r-manuals", "r-doc-html", "the R manuals (introduction, language, data import, admin)",
                ["/usr/share/R/doc/manual"], [("*.html", "html")]),
        _source("vim-help", "vim-runtime", "Vim's help files (editing, scripting, user manual)",
                ["/usr/share/vim/vim90/doc"], [("*.txt", "text"), ("*.txt.gz", "text")]),
        _source("fortunes", "fortunes", "fortune(6)'s quotations, literature and proverbs",
                ["/usr/share/games/fortunes"], [("*", "fortune")], ["*.dat", "*.u8", "*.*"]),
        _source("gcide", "dict-gcide", "GNU's Collaborative International Dictionary of English "
                "(Webster's 1913 and additions): definitions and literary quotations",
                ["/usr/share/dictd/gcide.index"], [], items=_dictd_items),
        _source("foldoc", "dict-foldoc", "the Free On-line Dictionary of Computing",
                ["/usr/share/dictd/foldoc.index"], [], items=_dictd_items),
        _source("jargon", "dict-jargon", "the Jargon File (hacker slang, with essays)",
                ["/usr/share/dictd/jargon.index"], [], items=_dictd_items),
        _source("devil", "dict-devil", "Ambrose Bierce's The Devil's Dictionary (public domain satire)",
                ["/usr/share/dictd/devil.index"], [], items=_dictd_items),
    )
}
# fmt: on
SOURCES["aclsum-train"].available = lambda: _aclsum_available(SOURCES["aclsum-train"])  # type: ignore


LOCAL_PATTERNS = (
    ("*.html", "html"), ("*.htm", "html"), ("*.page", "html"), ("*.pod", "pod"), ("*.pm", "pod"),
    ("*.[1-9]", "roff"), ("*.[1-9].gz", "roff"), ("*.[1-9]?*.gz", "roff"),
    ("*.txt", "text"), ("*.txt.gz", "text"), ("*.rst", "text"), ("*.rst.gz", "text"),
    ("*.info", "info"), ("*.info.gz", "info"), ("*.info-[0-9]*", "info"),
)  # fmt: skip


def local_source(root: str) -> Source:
    """Files of a local folder (``--local-dir``), each read by its extension; other files are ignored."""
    return _source("local", "(a local folder)", f"the files under {root}", [root], LOCAL_PATTERNS)


_EXTRACTORS = {
    "html": html_paragraphs,
    "info": info_paragraphs,
    "fortune": fortune_paragraphs,
    "pod": pod_paragraphs,
    "roff": roff_paragraphs,
    "text": text_paragraphs,
}
SKIP_REASONS = ("empty", "binary", "non-UTF-8", "unreadable")


def decode_text(raw: bytes) -> Tuple[str, Optional[str]]:
    """``("ok", text)`` for a file's bytes, or a skip reason and None: ``empty``, ``binary`` (a NUL in the
    first :data:`BINARY_PROBE` bytes) or ``non-UTF-8``. A byte-order mark at the start is not text: the
    same document with and without one is one document to the de-duplication."""
    if b"\0" in raw[:BINARY_PROBE]:
        return "binary", None
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError:
        return "non-UTF-8", None
    return ("ok", text) if text.strip() else ("empty", None)


def read_document(item: WorkItem) -> Tuple[str, List[str], int]:
    """``(status, sentences, bytes read)`` of one work item; status is ``ok`` or a skip reason."""
    _, _, fmt, payload = item
    if fmt == "sentences":
        sentences = list(payload)  # type: ignore[arg-type]
        return ("ok" if sentences else "empty"), sentences, sum(len(s) + 1 for s in sentences)
    path = str(payload)
    try:
        opener = gzip.open if path.endswith(".gz") else open
        with opener(path, "rb") as f:
            raw = f.read()
    except (OSError, EOFError):
        return "unreadable", [], 0
    if fmt == "info":
        raw = raw.replace(INFO_INDEX_MARK, b"")
    status, text = decode_text(raw)
    if text is None:
        return status, [], len(raw)
    sentences = document_sentences(_EXTRACTORS[fmt](text))
    return ("ok" if sentences else "empty"), sentences, len(raw)
