"""The documentation's relative links resolve, and the README stays short.

Every ``[text](target)`` link outside code in README.md, docs/*.md, benchmarks/README.md and
examples/*/README.md that is not a URL must name an existing file or folder, relative to the file that
holds it; a ``#fragment`` must name a heading of the target file, spelled as GitHub spells heading
anchors.
"""

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
README_MAX_LINES = 200

LINK = re.compile(r"(?<!\!)\[[^\]]*\]\(([^)\s]+)\)")
FENCE = re.compile(r"^\s*(```|~~~)")
INLINE_CODE = re.compile(r"`[^`]*`")
HEADING = re.compile(r"^(#{1,6})\s+(.*?)\s*#*\s*$")


def documentation_files():
    files = [ROOT / "README.md", ROOT / "benchmarks" / "README.md"]
    files += sorted((ROOT / "docs").glob("*.md"))
    files += sorted((ROOT / "examples").glob("*/README.md"))
    return files


def prose_lines(text):
    """The lines outside fenced code blocks, with inline code removed."""
    in_fence = False
    for line in text.splitlines():
        if FENCE.match(line):
            in_fence = not in_fence
            continue
        if not in_fence:
            yield INLINE_CODE.sub("", line)


def slug(heading):
    """GitHub's anchor for a heading: lower case, punctuation dropped, spaces to hyphens."""
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", heading).replace("`", "")
    text = re.sub(r"[^\w\- ]", "", text.lower())
    return text.replace(" ", "-")


def anchors(text):
    """Every heading anchor of a markdown text, duplicates numbered as GitHub numbers them."""
    seen, result = {}, set()
    in_fence = False
    for line in text.splitlines():
        if FENCE.match(line):
            in_fence = not in_fence
            continue
        match = None if in_fence else HEADING.match(line)
        if match:
            base = slug(match.group(2))
            count = seen.get(base, 0)
            seen[base] = count + 1
            result.add(base if count == 0 else f"{base}-{count}")
    return result


def broken_links(path, text):
    """``(target, reason)`` for each relative link in ``text`` (read from ``path``) that does not resolve."""
    broken = []
    for line in prose_lines(text):
        for target in LINK.findall(line):
            if re.match(r"^[a-z][a-z0-9+.-]*:", target):  # http:, https:, mailto:
                continue
            file_part, _, fragment = target.partition("#")
            if not file_part:  # a heading of this file
                if fragment not in anchors(text):
                    broken.append((target, "no such heading"))
                continue
            resolved = (path.parent / file_part).resolve()
            if not resolved.exists():
                broken.append((target, "no such file"))
                continue
            if fragment and resolved.suffix == ".md":
                if fragment not in anchors(resolved.read_text(encoding="utf-8")):
                    broken.append((target, "no such heading"))
    return broken


def test_the_documentation_files_exist():
    names = {p.relative_to(ROOT).as_posix() for p in documentation_files()}
    for name in (
        "README.md",
        "benchmarks/README.md",
        "docs/masks.md",
        "docs/pretraining.md",
        "docs/finetuning.md",
        "docs/nlu.md",
        "docs/palm.md",
        "docs/import.md",
        "docs/api.md",
        "docs/testing.md",
        "docs/recipes.md",
        "docs/results.md",
    ):
        assert name in names and (ROOT / name).is_file(), name


@pytest.mark.parametrize("path", documentation_files(), ids=lambda p: p.relative_to(ROOT).as_posix())
def test_relative_links_resolve(path):
    text = path.read_text(encoding="utf-8")
    assert not broken_links(path, text), f"{path.relative_to(ROOT)}: {broken_links(path, text)}"


def test_readme_is_short_and_links_every_guide():
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    assert len(text.splitlines()) < README_MAX_LINES
    linked = {target.partition("#")[0] for line in prose_lines(text) for target in LINK.findall(line)}
    for guide in sorted((ROOT / "docs").glob("*.md")):
        assert f"docs/{guide.name}" in linked, f"README.md does not link docs/{guide.name}"
    assert "benchmarks/README.md" in linked


def test_the_checker_finds_broken_links_and_headings():
    """Negative control: a missing file, a missing heading and a link in code are told apart."""
    docs = ROOT / "docs" / "guide.md"
    text = "\n".join(
        [
            "# Title",
            "## 3. s2s-ft: causal, `masked`",
            "[ok](masks.md) [ok](#title) [ok](#3-s2s-ft-causal-masked) [ok](../scripts/demo.sh)",
            "[gone](nowhere.md) [gone](masks.md#no-such-heading) [gone](#no-such-heading)",
            "[web](https://example.org/x.md) `[code](nowhere.md)`",
            "```",
            "[fenced](nowhere.md)",
            "```",
        ]
    )
    assert broken_links(docs, text) == [
        ("nowhere.md", "no such file"),
        ("masks.md#no-such-heading", "no such heading"),
        ("#no-such-heading", "no such heading"),
    ]
    expected = {"a", "a-1", "palmhubinterface-palm-models"}
    assert anchors("# A\n# A\n## `PALMHubInterface` (PALM models)") == expected


def test_same_file_fragments_are_checked(tmp_path):
    page = tmp_path / "page.md"
    page.write_text("# Page\n[up](#page) [missing](#absent)\n", encoding="utf-8")
    assert broken_links(page, page.read_text(encoding="utf-8")) == [("#absent", "no such heading")]


CITATION = re.compile(r"docs/(\w+)\.md,? sections? (\d+)(?:-(\d+))?(?: and (\d+))?")


def code_files():
    for folder in ("unilm_fairseq", "tests", "scripts", "benchmarks", "examples"):
        yield from sorted((ROOT / folder).rglob("*.py"))
        yield from sorted((ROOT / folder).rglob("*.sh"))


def test_code_cites_documentation_that_exists():
    """``docs/X.md section N`` in code names a file of docs/ with a heading numbered N; nothing cites a
    design file outside the repository."""
    outside = "DESIGN" + ".md"
    cited = 0
    for path in code_files():
        text = path.read_text(encoding="utf-8")
        assert outside not in text or path == Path(__file__).resolve(), f"{path} cites {outside}"
        for name, first, last, extra in CITATION.findall(text):
            doc = ROOT / "docs" / f"{name}.md"
            assert doc.is_file(), f"{path}: cites docs/{name}.md, which does not exist"
            numbers = set(range(int(first), int(last or first) + 1)) | ({int(extra)} if extra else set())
            headings = {int(m) for m in re.findall(r"^## (\d+)\. ", doc.read_text(encoding="utf-8"), re.M)}
            missing = sorted(numbers - headings)
            assert not missing, f"{path}: docs/{name}.md has no section(s) {missing}"
            cited += 1
    assert cited >= 7  # masks.py and the six test files that state which rules they check
