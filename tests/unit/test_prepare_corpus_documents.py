"""scripts/prepare_corpus.py's reading of a one-sentence-per-line corpus into documents."""

import pytest

from ..helpers.cli import load_script

prepare_corpus = load_script("scripts/prepare_corpus.py", "prepare_corpus_script")


def test_documents_break_at_blank_lines_and_keep_only_visible_sentences(tmp_path):
    """A whitespace-only line is a document break; a line of zero-width characters is no sentence (it
    would encode to nothing and break the document in *.spm); a byte-order mark is not text."""
    path = tmp_path / "corpus.txt"
    path.write_text("\ufeffOne a.\nOne b.\n \t\nTwo.\n\u200b\n\n\nThree.\n\ue000\u200b\n", encoding="utf-8")
    assert prepare_corpus.read_documents(str(path)) == [["One a.", "One b."], ["Two."], ["Three."]]


def test_a_corpus_that_is_not_utf8_is_one_error_line(tmp_path):
    path = tmp_path / "corpus.txt"
    path.write_bytes(b"fine\n\xffnot\n")
    with pytest.raises(SystemExit, match=r"corpus.txt: not UTF-8 text"):
        prepare_corpus.read_documents(str(path))
