"""Plain text out of documentation markup, and sentences out of plain text.

Used by ``scripts/build_pretraining_corpus.py``. Every extractor returns a list of paragraphs (strings
with single spaces); :func:`document_sentences` turns them into one sentence per entry. All of it is
standard library only and cheap: code blocks, navigation and index entries are dropped where the
markup says so, and a paragraph that does not look like prose (:func:`looks_like_prose`) is dropped.
"""

import hashlib
import re
from html.parser import HTMLParser
from typing import Iterable, List

# --- HTML (Sphinx, DocBook, rustdoc, javadoc, Mallard) ---------------------------------------------

# elements whose whole content is left out: code, scripts, navigation, index terms, page metadata
SKIPPED_ELEMENTS = frozenset(
    "script style pre code-block screen programlisting synopsis nav header footer head title "
    "svg math noscript button select form info indexterm".split()
)
# a <div>/<section>/<span>... with one of these classes (or roles, ids) is navigation or code; whole
# names only: Read the Docs' <body class="wy-body-for-nav"> holds the page
SKIPPED_CLASSES = frozenset(
    "sphinxsidebar related footer header navigation navheader navfooter nav toc toctree-wrapper "
    "highlight literal-block doctest sidebar breadcrumbs rustdoc-breadcrumbs sidebar-elems "
    "summary-table member-signature type-signature top-nav sub-nav search-form legal-copy headerlink "
    "copyright programlisting screen synopsis example-contents code-header item-decl src-link rightside "
    "out-of-band wy-nav-side wy-nav-top rst-footer-buttons bd-sidebar-primary bd-sidebar-secondary "
    "bd-header-article prev-next-area sphx-glr-download global-nav nav_table toplang bottomlang up "
    "menu".split()
)
# elements that end a paragraph
BLOCK_ELEMENTS = frozenset(
    "p div br li dt dd tr td th h1 h2 h3 h4 h5 h6 table ul ol dl section article blockquote "
    "caption figcaption title page item list terms note tip em-block".split()
)
VOID_ELEMENTS = frozenset("area base br col embed hr img input link meta source track wbr".split())


class _TextCollector(HTMLParser):
    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.paragraphs: List[str] = []
        self._words: List[str] = []
        self._open: List[str] = []  # open elements, innermost last
        self._skip_depth = 0  # > 0 while inside a skipped element; its index in _open + 1

    def _flush(self):
        if self._words:
            self.paragraphs.append(" ".join(self._words))
            self._words = []

    def handle_starttag(self, tag, attrs):
        if tag in BLOCK_ELEMENTS:
            self._flush()
        if tag in VOID_ELEMENTS:
            return
        self._open.append(tag)
        if not self._skip_depth:
            marks = " ".join(v or "" for k, v in attrs if k in ("class", "role", "id")).split()
            if tag in SKIPPED_ELEMENTS or not SKIPPED_CLASSES.isdisjoint(marks):
                self._skip_depth = len(self._open)

    def handle_endtag(self, tag):
        if tag in BLOCK_ELEMENTS:
            self._flush()
        if tag not in self._open:
            return  # a stray end tag (unclosed <p> and <li> are common and harmless)
        while self._open:
            closed = self._open.pop()
            if self._skip_depth > len(self._open):
                self._skip_depth = 0
            if closed == tag:
                break

    def handle_data(self, data):
        if not self._skip_depth:
            self._words.extend(data.split())


def html_paragraphs(text: str) -> List[str]:
    """The paragraphs of an HTML (or XML) page, code blocks and navigation left out."""
    collector = _TextCollector()
    collector.feed(text)
    collector.close()
    collector._flush()
    return collector.paragraphs


# --- POD (Perl documentation) ----------------------------------------------------------------------

_POD_SIMPLE = re.compile(r"([A-Z])<([^<>]*)>")
_POD_DOUBLE = re.compile(r"([A-Z])<<+\s+(.*?)\s+>>+", re.S)
_POD_ENTITIES = {"lt": "<", "gt": ">", "verbar": "|", "sol": "/", "quot": '"', "amp": "&"}
_POD_SKIPPED_BLOCKS = ("=begin", "=for")


def _pod_character(number: str) -> str:
    """``E<number>``: a code point in decimal, ``0x`` hex or ``0`` octal (perlpod); "" for anything else, a
    code point past Unicode's or a surrogate included (one bad escape must not stop a corpus build)."""
    try:
        if number[:2].lower() == "0x":
            point = int(number[2:], 16)
        elif number.isdigit():
            point = int(number, 8 if number.startswith("0") else 10)
        else:
            return ""
    except ValueError:
        return ""
    return chr(point) if 0 < point < 0x110000 and not 0xD800 <= point < 0xE000 else ""


def _pod_code(letter: str, body: str) -> str:
    if letter in "XZ":  # index entry, null
        return ""
    if letter == "E":
        return _POD_ENTITIES.get(body, _pod_character(body))
    if letter == "L":  # L<text|target>, L<target>, L<"section">
        return body.split("|", 1)[0].strip('"/')
    return body


def pod_inline(text: str) -> str:
    """POD formatting codes (``B<..>``, ``C<< .. >>``, ``L<text|link>``, ``E<gt>``) to their text."""
    text = _POD_DOUBLE.sub(lambda m: _pod_code(m.group(1), m.group(2)), text)
    for _ in range(4):  # nested codes, innermost first
        text, count = _POD_SIMPLE.subn(lambda m: _pod_code(m.group(1), m.group(2)), text)
        if not count:
            break
    return text


def pod_paragraphs(text: str) -> List[str]:
    """The prose of a POD file (or of the POD inside a Perl module): headings, items and text
    paragraphs; verbatim (indented) paragraphs are code and left out, as is anything outside POD."""
    paragraphs: List[str] = []
    in_pod = skipping = False
    for block in re.split(r"\n[ \t]*\n", text.replace("\r\n", "\n")):
        if not block.strip():
            continue
        if block.startswith("="):
            command, _, rest = block.partition(" ") if " " in block.split("\n", 1)[0] else (block, "", "")
            command = command.split("\n", 1)[0]
            if command == "=cut":
                in_pod = skipping = False
                continue
            in_pod = True
            if command in _POD_SKIPPED_BLOCKS:
                skipping = command == "=begin"
                continue
            if command == "=end":
                skipping = False
                continue
            if command.startswith("=head") or command == "=item":
                rest = rest.strip()
                if rest and rest not in ("*", "o") and not rest.isdigit():
                    paragraphs.append(" ".join(pod_inline(rest).split()))
            continue
        if not in_pod or skipping or block[0] in " \t":
            continue
        paragraphs.append(" ".join(pod_inline(block).split()))
    return [p for p in paragraphs if p]


# --- roff (manual pages) ---------------------------------------------------------------------------

_ROFF_ESCAPES = {
    r"\(em": "\u2014", r"\(en": "\u2013", r"\(aq": "'", r"\(dq": '"', r"\(lq": "\u201c",
    r"\(rq": "\u201d", r"\(oq": "\u2018", r"\(cq": "\u2019", r"\(bu": "\u2022", r"\(co": "\u00a9",
    r"\*(lq": "\u201c", r"\*(rq": "\u201d", r"\*(Tm": "(TM)", r"\(mu": "x", r"\(ti": "~", r"\(ha": "^",
    r"\-": "-", r"\e": "\\", r"\ ": " ", r"\~": " ", r"\0": " ", r"\|": "", r"\^": "", r"\&": "", r"\c": "",
    r"\%": "", r"\:": "",
}  # fmt: skip
_ROFF_ESCAPE = re.compile("|".join(re.escape(k) for k in sorted(_ROFF_ESCAPES, key=len, reverse=True)))
# font changes, sizes, other named characters and strings, anything else after a backslash
_ROFF_REMAINING = re.compile(r"\\(f(\[[^\]]*\]|\(..|.)|s[-+]?\d+|\(..|\[[^\]]*\]|\*(\(..|\[[^\]]*\]|.)|.)")
_ROFF_BREAKS = frozenset("SH SS PP P LP TP IP HP sp br Sh Ss Pp Bl It El Nm Nd".split())
_ROFF_TEXT_MACROS = frozenset("SH SS B I SM SB BR BI IB IR RB RI Nd Sh Ss Dq Qq Em Sy Ar Pa".split())
_ROFF_CODE_START, _ROFF_CODE_END = frozenset(("nf", "EX", "Bd")), frozenset(("fi", "EE", "Ed"))
_ROFF_ALTERNATING = frozenset("BR BI IB IR RB RI".split())


def roff_inline(text: str) -> str:
    """roff escapes in running text to characters; font changes and unknown escapes dropped."""
    text = re.sub(r"\\\[(\w\w)\]", r"\\(\1", text)  # \[em] is groff's spelling of \(em
    text = _ROFF_ESCAPE.sub(lambda m: _ROFF_ESCAPES[m.group(0)], text)
    return _ROFF_REMAINING.sub("", text)


def _macro_words(name: str, args: str) -> str:
    words = re.findall(r'"[^"]*"|\S+', args)
    words = [w.strip('"') for w in words]
    return ("" if name in _ROFF_ALTERNATING else " ").join(words)


def roff_paragraphs(text: str) -> List[str]:
    """The prose of a manual page in man(7) or mdoc(7) roff: section headings and text; no-fill
    (``.nf``/``.EX``/``.Bd``) blocks, comments and other requests are left out."""
    paragraphs: List[str] = []
    words: List[str] = []
    in_code = False

    def flush():
        if words:
            paragraphs.append(" ".join(words))
            words.clear()

    for line in text.splitlines():
        if line.startswith((".", "'")):
            name, _, args = line[1:].strip().partition(" ")
            if name.startswith('\\"') or name == "\\":
                continue
            if name in _ROFF_CODE_START:
                flush()
                in_code = True
            elif name in _ROFF_CODE_END:
                in_code = False
            elif name in _ROFF_BREAKS:
                flush()
            if not in_code and name in _ROFF_TEXT_MACROS and args.strip():
                words.extend(roff_inline(_macro_words(name, args)).split())
                if name in ("SH", "SS", "Sh", "Ss"):
                    flush()
            continue
        if in_code:
            continue
        if not line.strip():
            flush()
            continue
        words.extend(roff_inline(line).split())
    flush()
    return paragraphs


# --- plain text ------------------------------------------------------------------------------------


def text_paragraphs(text: str) -> List[str]:
    """Paragraphs of plain text (reStructuredText, README-style files): blocks between empty lines;
    indented blocks (code, literal blocks) and underline/ornament lines are left out."""
    paragraphs = []
    for block in re.split(r"\n[ \t]*\n", text.replace("\r\n", "\n")):
        lines = [
            ln
            for ln in block.split("\n")
            if ln.strip() and not re.fullmatch(r"\s*([=\-~^*#+_.:])\1{2,}\s*", ln)
        ]
        if not lines or lines[0][:1] in (" ", "\t"):
            continue
        paragraphs.append(" ".join(" ".join(lines).split()))
    return paragraphs


def info_paragraphs(text: str) -> List[str]:
    """The prose of a GNU Info file: each node's text without its header line and menus (and
    without the tag tables); indented examples are left out as in :func:`text_paragraphs`."""
    paragraphs: List[str] = []
    for node in text.split("\x1f"):
        node = node.lstrip("\n")
        if not node.startswith("File:"):
            continue  # the preamble, "Tag Table:", "Indirect:", "End Tag Table"
        body = node.split("\n", 1)[1] if "\n" in node else ""
        body = re.split(r"^\* Menu:", body, maxsplit=1, flags=re.M)[0]
        paragraphs.extend(text_paragraphs(body))
    return paragraphs


def fortune_paragraphs(text: str) -> List[str]:
    """The entries of a fortune(6) file (separated by lines holding ``%``), one paragraph each."""
    return [" ".join(entry.split()) for entry in re.split(r"^%\s*$", text, flags=re.M) if entry.strip()]


# --- sentences -------------------------------------------------------------------------------------

ABBREVIATIONS = frozenset(
    "mr mrs ms dr st jr sr prof vs etc e.g i.e cf fig figs no nos vol eq eqs al approx dept sec ch "
    "ed eds p pp viz resp inc ltd co corp gen col capt lt rev hon esp ca".split()
)
# a sentence ends at . ! or ? (closing quotes/brackets may follow) before a space and a capital,
# a digit, a quote or an opening bracket
_SENTENCE_END = re.compile(r"[.!?][\"'\u2019\u201d)\]]*\s+(?=[\"'\u2018\u201c(\[]?[A-Z0-9])")
MAX_SENTENCE_WORDS = 200  # longer runs (tables, lists flattened to one line) are cut into pieces
MIN_PROSE_WORDS = 4
MIN_LETTER_SHARE = 0.6  # of the non-space characters of a prose paragraph


def split_sentences(paragraph: str) -> List[str]:
    """Rule-based sentence split of one paragraph: ends at ``.!?`` before a capital or digit,
    except after a common abbreviation or a single-letter initial."""
    sentences, start = [], 0
    for match in _SENTENCE_END.finditer(paragraph):
        before = paragraph[start : match.start() + 1].rsplit(None, 1)[-1].lower().rstrip(".")
        if paragraph[match.start()] == "." and (before in ABBREVIATIONS or len(before) == 1):
            continue
        sentences.append(paragraph[start : match.end()].strip())
        start = match.end()
    sentences.append(paragraph[start:].strip())
    out = []
    for sentence in sentences:
        words = sentence.split()
        for i in range(0, len(words), MAX_SENTENCE_WORDS):
            out.append(" ".join(words[i : i + MAX_SENTENCE_WORDS]))
    return [s for s in out if s]


def looks_like_prose(paragraph: str) -> bool:
    """At least a few words, mostly letters: drops headings of one or two words, table cells,
    signatures and leftovers of code."""
    if len(paragraph.split()) < MIN_PROSE_WORDS:
        return False
    chars = paragraph.replace(" ", "")
    return sum(c.isalpha() for c in chars) >= MIN_LETTER_SHARE * len(chars)


def document_sentences(paragraphs: Iterable[str], filter_prose: bool = True) -> List[str]:
    """One sentence per entry over a document's paragraphs (non-prose paragraphs dropped)."""
    sentences: List[str] = []
    for paragraph in paragraphs:
        paragraph = " ".join(paragraph.split())
        if paragraph and (not filter_prose or looks_like_prose(paragraph)):
            sentences.extend(split_sentences(paragraph))
    return sentences


def document_hash(sentences: Iterable[str]) -> bytes:
    """Digest of a document's text with case and whitespace normalized: equal digests, duplicates."""
    digest = hashlib.blake2b(digest_size=16)
    for sentence in sentences:
        digest.update(" ".join(sentence.lower().split()).encode("utf-8") + b"\n")
    return digest.digest()
