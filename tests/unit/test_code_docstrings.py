"""Code -> docstring-summary pairs: the rules of unilm_fairseq.prepare.code_docstrings and the script on a
small tree of real-looking files, bad ones included."""

import os

import pytest

from unilm_fairseq.prepare import code_docstrings as cd

from ..helpers.cli import REPO, run_cli

MODULE = '''"""Module docstring, never a pair."""
import os


@staticmethod
def read_config(path, default=None):
    """Read the configuration file at path.

    Returns a dict. More text that is not part of the summary.
    """
    # the comment stays
    if not os.path.exists(path):
        return default
    with open(path) as handle:
        return dict(line.split("=", 1) for line in handle)


class Store:
    """A class docstring, never a pair."""

    def put(self, key, value):
        """Store the value under key. Replaces an old one."""
        def check(item):
            """A nested docstring that must not leak into the parent's source."""
            return item is not None and item != "" and item != 0
        if check(value):
            self.items[key] = value
        return self

    def stub(self):
        """Do nothing at all here."""
        pass

    def signature_only(self, a, b):
        """signature_only(a, b) -> int"""
        total = a + b + self.offset + self.other_offset + 1
        return total
'''


def test_summary_is_the_first_sentence_of_the_first_paragraph():
    assert cd.summary_sentence("Read the file. Then close it.\n\nMore.") == "Read the file."
    assert cd.summary_sentence("Return the\n   number of lines.") == "Return the number of lines."
    assert (
        cd.summary_sentence("Version 2.1 of the parser is used here.")
        == "Version 2.1 of the parser is used here."
    )


@pytest.mark.parametrize(
    "docstring",
    [
        "f(x, y) -> int",
        ">>> f(1)\n1",
        ":param x: a value",
        "Too short.",
        "",
        "--- a rule of dashes ---",
        "1. item",
    ],
)
def test_docstrings_that_do_not_summarize_are_refused(docstring):
    assert cd.summary_sentence(docstring) is None


def test_pairs_drop_every_docstring_and_keep_decorators_comments_and_nested_code():
    pairs, left_out = cd.pairs_from_source(MODULE, "pkg/config.py")
    by_name = {p.ident: p for p in pairs}
    # read_config, Store.put and the nested check; stub (pass) and the signature docstring are left out
    assert sorted(by_name) == [
        "pkg/config.py:Store.put",
        "pkg/config.py:Store.put.check",
        "pkg/config.py:read_config",
    ]
    assert left_out == 2
    read = by_name["pkg/config.py:read_config"]
    assert read.summary == "Read the configuration file at path."
    assert read.code.startswith("@staticmethod def read_config(path, default=None): # the comment stays")
    put = by_name["pkg/config.py:Store.put"]
    assert put.summary == "Store the value under key."
    assert "def check(item): return item is not None" in put.code
    for pair in pairs:
        assert '"""' not in pair.code and "docstring" not in pair.code
        assert pair.summary not in pair.code
        assert "\n" not in pair.code


def test_characters_that_split_lines_for_python_strings_but_not_for_the_parser():
    """A form feed (old sources use it between sections) or U+2028 in a comment is no line end to the parser:
    the docstring stays out of the code and the function's last line stays in it."""
    for odd in ("\x0c", "\u2028", "\x1c", "\x85"):
        source = (
            f"# section{odd}\n"
            "def add(a, b):\n"
            '    """Add two numbers together and return them."""\n'
            "    total = a + b\n"
            "    total = total + 0\n"
            "    return total\n"
        )
        (pair,), _ = cd.pairs_from_source(source, "m.py")
        assert pair.code == "def add(a, b): total = a + b total = total + 0 return total", repr(odd)


def test_split_is_fixed_by_path_and_follows_the_shares():
    paths = [f"pkg/module_{i}.py" for i in range(2000)]
    splits = [cd.split_of(p, 5, 10) for p in paths]
    assert splits == [cd.split_of(p, 5, 10) for p in paths]
    share = {s: splits.count(s) / len(paths) for s in ("train", "valid", "test")}
    assert 0.07 < share["test"] < 0.13 and 0.03 < share["valid"] < 0.07
    assert set(cd.split_of(p, 0, 0) for p in paths) == {"train"}


def test_name_baseline_words():
    assert cd.name_words("_get_line_count") == "get line count"
    assert cd.name_words("readHTTPHeader") == "read httpheader"
    assert cd.name_words("__init__") == "init"


def test_script_writes_aligned_splits_and_counts_bad_files(tmp_path):
    root = tmp_path / "src"
    for i in range(40):  # enough files for every split to get some
        package = root / f"pkg{i}"
        package.mkdir(parents=True)
        (package / "config.py").write_text(MODULE.replace("read_config", f"read_config_{i}"))
    # a copy of pkg0's file: three duplicates
    (root / "pkg0" / "copy.py").write_text(MODULE.replace("read_config", "read_config_0"))
    (root / "pkg0" / "empty.py").write_text("  \n")
    (root / "pkg0" / "latin1.py").write_bytes('"""caf\xe9"""\n'.encode("latin-1"))
    (root / "pkg0" / "broken.py").write_text("def f(:\n")
    (root / "pkg0" / "nul.py").write_bytes(b"x = 1\0\n")
    (root / "tests").mkdir()
    (root / "tests" / "test_x.py").write_text(MODULE.replace("read_config", "from_a_test"))
    out = tmp_path / "data"
    proc = run_cli(
        ["python", os.path.join(REPO, "scripts", "prepare_code_docstrings.py"), "--output", str(out),
         "--root", str(root), "--valid-percent", "20", "--test-percent", "20", "--max-test", "5"]
    )  # fmt: skip
    log = proc.stderr + proc.stdout
    for expected in ("files skipped: empty: 1", "files skipped: not UTF-8: 1", "files skipped: binary: 1",
                     "files skipped: not parseable Python: 1", "functions left out: duplicate code: 81",
                     "files read: 41"):  # fmt: skip
        assert expected in log, log
    counts = {}
    for split in ("train", "valid", "test"):
        lines = {s: (out / f"{split}.{s}").read_text().splitlines() for s in ("src", "tgt", "id")}
        assert len(set(map(len, lines.values()))) == 1
        counts[split] = len(lines["src"])
        assert all("from_a_test" not in src for src in lines["src"])
    assert counts["test"] == 5
    # Store.put and its nested check are the same code in every file: kept once, read_config 40 times, so
    # 42 pairs (the tests/ folder is never read); --max-test then keeps 5 of the test pairs
    assert counts["train"] + counts["valid"] + counts["test"] <= 42
    names = (out / "test.name.hyp").read_text().splitlines()
    assert len(names) == 5 and all(names)


def test_script_refuses_a_missing_root(tmp_path):
    proc = run_cli(
        ["python", os.path.join(REPO, "scripts", "prepare_code_docstrings.py"),
         "--output", str(tmp_path / "o"), "--root", str(tmp_path / "nowhere")],
        check=False,
    )  # fmt: skip
    assert proc.returncode == 1
    assert "no such folder" in proc.stderr


def test_max_test_counts_pairs_not_names_and_a_broken_link_is_skipped(tmp_path):
    """A property's getter and setter share one ident: --max-test N kept every pair whose ident was among
    the first N, so more than N pairs. A dangling .py link is a counted skip, not a traceback."""
    root = tmp_path / "src"
    root.mkdir()
    for i in range(30):
        (root / f"mod{i}.py").write_text(
            f"class Thing{i}:\n"
            "    @property\n"
            "    def value(self):\n"
            '        """Return the stored value of the thing."""\n'
            f"        result = self._value + {i}\n"
            "        return result\n"
            "\n"
            "    @value.setter\n"
            "    def value(self, new):\n"
            '        """Store a new value in the thing."""\n'
            f"        self._value = new - {i}\n"
            "        self.changed = True\n"
        )
    (root / "gone.py").symlink_to(root / "nowhere.py")
    out = tmp_path / "data"
    proc = run_cli(
        ["python", os.path.join(REPO, "scripts", "prepare_code_docstrings.py"), "--output", str(out),
         "--root", str(root), "--valid-percent", "20", "--test-percent", "40", "--max-test", "3"]
    )  # fmt: skip
    assert "files skipped: unreadable: 1" in proc.stderr + proc.stdout
    assert len((out / "test.src").read_text().splitlines()) == 3
