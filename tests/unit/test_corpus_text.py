"""Text extraction of scripts/build_pretraining_corpus.py on real documentation excerpts
(tests/fixtures/corpus/), sentence splitting, duplicate digests and the counted skips."""

import gzip
import os
import threading

import pytest

from unilm_fairseq.prepare import corpus_sources
from unilm_fairseq.prepare.corpus_build import BoundedFeed
from unilm_fairseq.prepare.corpus_sources import local_source, read_document
from unilm_fairseq.prepare.corpus_text import (
    document_hash,
    fortune_paragraphs,
    html_paragraphs,
    info_paragraphs,
    pod_inline,
    pod_paragraphs,
    roff_paragraphs,
    split_sentences,
)

from ..helpers.cli import REPO

FIXTURES = os.path.join(REPO, "tests", "fixtures", "corpus")


def fixture_text(name):
    with open(os.path.join(FIXTURES, name), encoding="utf-8") as f:
        return f.read()


def test_html_keeps_prose_and_drops_code_and_navigation():
    text = " ".join(html_paragraphs(fixture_text("python-builtins.html")))
    assert "This module provides direct access to all ‘built-in’ identifiers of Python" in text
    assert "def open(path)" not in text and "import builtins" not in text  # the <pre> example
    assert "previous chapter" not in text.lower()  # the Sphinx sidebar
    assert "Quick search" not in text and "Navigation" not in text
    assert "var DOCUMENTATION_OPTIONS" not in text  # <script>


def test_html_skips_whole_class_names_only():
    page = (
        '<body class="wy-body-for-nav"><div class="nav">Home | Index</div>'
        "<p>Kept <b>words</b> here.</p><div class='highlight'><pre>x = 1</pre></div><p>After.</p></body>"
    )
    assert html_paragraphs(page) == ["Kept words here.", "After."]


def test_pod_keeps_text_and_drops_verbatim_code():
    paragraphs = pod_paragraphs(fixture_text("perlintro.pod"))
    assert paragraphs[:2] == ["NAME", "perlintro - a brief introduction and overview of Perl"]
    text = " ".join(paragraphs)
    assert "use strict;" in text  # from C<use strict;>, inline code in a sentence
    for code in ("perl progname.pl", "#!/usr/bin/env perl", 'print "Hello'):  # verbatim blocks
        assert code not in text
    assert "C<" not in text and "L<" not in text and "=head" not in text


def test_pod_numeric_escapes():
    # decimal, hex and octal code points (perlpod); one past Unicode's range, a surrogate or a bad number
    # is dropped: chr() raised, and the whole corpus build stopped on one file
    assert pod_inline("E<233>t E<0xE9> E<0351>") == "\u00e9t \u00e9 \u00e9"
    assert pod_inline("a E<9999999> b E<0xD800> c E<0x> d E<089>") == "a  b  c  d "


def test_pod_inline_codes():
    assert pod_inline("see L<the manual|perlrun> and C<< $a <=> $b >>, E<lt>okE<gt>") == (
        "see the manual and $a <=> $b, <ok>"
    )


def test_pod_outside_pod_blocks_is_code():
    module = "package X;\nsub f { 1 }\n\n=head1 NAME\n\nX - does things well.\n\n=cut\n\nsub g { 2 }\n"
    assert pod_paragraphs(module) == ["NAME", "X - does things well."]


def test_roff_keeps_text_and_drops_examples():
    paragraphs = roff_paragraphs(fixture_text("intro.1"))
    assert paragraphs[0] == "NAME"
    assert "intro - introduction to user commands" in paragraphs
    text = " ".join(paragraphs)
    assert "The $ here was the command prompt\u2014it is the shell's way" in text  # \[em]
    assert "knuth login" not in text and "August 2002" not in text  # the .EX ... .EE session
    assert "\\" not in text and ".SH" not in text


def test_info_nodes_without_headers_and_menus():
    info = (
        "This is demo.info, produced by makeinfo.\n\x1f\nFile: demo.info,  Node: Top,  Next: Intro\n\n"
        "The demo manual explains the demo program.\n\n* Menu:\n\n* Intro::  Why.\n\x1f\n"
        "File: demo.info,  Node: Intro,  Prev: Top\n\n1 Intro\n*******\n\nIt runs.  Like this:\n\n"
        "     demo --run\n\n\x1f\nTag Table:\nNode: Top\x7f40\n\x1f\nEnd Tag Table\n"
    )
    expected = ["The demo manual explains the demo program.", "1 Intro", "It runs. Like this:"]
    assert info_paragraphs(info) == expected


def test_fortune_entries():
    assert fortune_paragraphs("A stitch in time\nsaves nine.\n%\nLook before you leap.\n%\n") == [
        "A stitch in time saves nine.",
        "Look before you leap.",
    ]


@pytest.mark.parametrize(
    "paragraph, sentences",
    [
        ("Mr. Knightley came. He sat down!", ["Mr. Knightley came.", "He sat down!"]),
        ("Use it, e.g. This one. Or that.", ["Use it, e.g. This one.", "Or that."]),
        ("J. Austen wrote. \u201cYes,\u201d she said.", ["J. Austen wrote.", "\u201cYes,\u201d she said."]),
        ("Version 3.11 is out. 42 tests passed.", ["Version 3.11 is out.", "42 tests passed."]),
        ("lowercase after a stop. stays together", ["lowercase after a stop. stays together"]),
    ],
)
def test_split_sentences(paragraph, sentences):
    assert split_sentences(paragraph) == sentences


def test_overlong_sentence_is_cut():
    words = [f"w{i}" for i in range(450)]
    pieces = split_sentences(" ".join(words))
    assert [len(p.split()) for p in pieces] == [200, 200, 50]
    assert " ".join(pieces).split() == words


def test_document_hash_ignores_case_and_spacing_only():
    assert document_hash(["Hello  World.", "Two"]) == document_hash(["hello world.", " two "])
    assert document_hash(["Hello World.", "Two"]) != document_hash(["Hello World.", "Three"])
    assert document_hash(["a b"]) != document_hash(["a", "b"])  # sentence breaks count


def test_read_document_counts_skips(tmp_path):
    cases = {
        "empty.txt": b"",
        "blank.html": b"  \n\n ",
        "binary.txt": b"ELF\x00\x01\x02 not text",
        "latin1.txt": "Caf\u00e9 au lait is served here every morning.".encode("latin-1"),
        "nav-only.html": b"<div class='sphinxsidebar'><p>Quick search in the docs here</p></div>",
        "good.txt.gz": gzip.compress(b"The plain text file is read through gzip here.\n"),
        "manual.info": b"\x1f\nFile: manual.info, Node: Top\n\nIts marks \x00\x08[index\x00\x08] are text.\n",
    }
    expected = {
        "empty.txt": "empty",
        "blank.html": "empty",
        "binary.txt": "binary",
        "latin1.txt": "non-UTF-8",
        "nav-only.html": "empty",
        "good.txt.gz": "ok",
        "manual.info": "ok",
    }
    for name, data in cases.items():
        (tmp_path / name).write_bytes(data)
    source = local_source(str(tmp_path))
    items = {os.path.basename(item[1]): item for item in source.items(source)}
    assert sorted(items) == sorted(cases)
    for name, status in expected.items():
        assert read_document(items[name])[0] == status, name
    assert read_document(items["good.txt.gz"])[1] == ["The plain text file is read through gzip here."]
    assert read_document(("local", "gone", "text", str(tmp_path / "gone.txt")))[0] == "unreadable"


def test_local_source_reads_by_extension_and_skips_changelogs(tmp_path):
    for name in ("a.html", "b.pod", "c.1", "d.3.gz", "e.txt", "f.png", "changelog.txt", "copyright"):
        (tmp_path / name).write_text("x")
    source = local_source(str(tmp_path))
    found = {os.path.basename(path): fmt for _, path, fmt, _ in source.items(source)}
    assert found == {"a.html": "html", "b.pod": "pod", "c.1": "roff", "d.3.gz": "roff", "e.txt": "text"}


def test_dictd_entries_are_grouped_and_metadata_left_out(tmp_path, monkeypatch):
    entries = [
        ("00-database-info", "This file was converted by a tool."),
        ("apple", "Apple\n  The round fruit of a tree of the rose family."),
        ("pear", "Pear\n  A sweet fruit that is narrow near the stalk."),
    ]
    digits = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"

    def b64(n):
        out = ""
        while True:
            out = digits[n % 64] + out
            n //= 64
            if not n:
                return out

    data, index, offset = b"", [], 0
    for word, body in entries:
        raw = (body + "\n\n").encode()
        index.append(f"{word}\t{b64(offset)}\t{b64(len(raw))}")
        data += raw
        offset += len(raw)
    (tmp_path / "demo.index").write_text("\n".join(index) + "\n")
    (tmp_path / "demo.dict.dz").write_bytes(gzip.compress(data))
    monkeypatch.setattr(corpus_sources, "DICTD_ENTRIES_PER_DOCUMENT", 1)
    source = corpus_sources._source(
        "demo", "-", "-", [str(tmp_path / "demo.index")], [], items=corpus_sources._dictd_items
    )
    documents = [item[3] for item in source.items(source)]
    assert documents == [
        ["Apple The round fruit of a tree of the rose family."],
        ["Pear A sweet fruit that is narrow near the stalk."],
    ]


def test_bounded_feed_waits_for_results_and_stops():
    feed = BoundedFeed(iter(range(10)), 2)
    items = iter(feed)
    assert [next(items), next(items)] == [0, 1]
    blocked = threading.Thread(target=lambda: next(items))
    blocked.start()
    blocked.join(0.2)
    assert blocked.is_alive()  # a third item waits until a result comes back
    feed.done()
    blocked.join(5)
    assert not blocked.is_alive()
    feed.done()
    assert next(items) == 3
    feed.stop()
    with pytest.raises(StopIteration):
        next(items)


def test_decode_text_drops_a_byte_order_mark():
    """The same document with a byte-order mark is the same text (one hash, so one split), not another."""
    from unilm_fairseq.prepare.corpus_sources import decode_text

    plain = decode_text("First line.\nSecond.\n".encode())
    assert (
        decode_text(b"\xef\xbb\xbf" + "First line.\nSecond.\n".encode())
        == plain
        == ("ok", "First line.\nSecond.\n")
    )
    assert decode_text(b"\xef\xbb\xbf\n  \n") == decode_text(b" \n") == ("empty", None)
    assert decode_text(b"a\0b") == ("binary", None) and decode_text(b"\xff\xfe") == ("non-UTF-8", None)
