"""The test suite's own structure: no module imports a test module or takes functions from ``conftest``;
shared functions live in ``tests/helpers`` and ``conftest.py`` holds only fixtures and hooks."""

import ast
import glob
import os

from ..helpers.cli import REPO

TESTS = os.path.join(REPO, "tests")


def forbidden_imports(source: str):
    """``(line, module)`` of every import of a ``test_*`` module or from a ``conftest`` module."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            modules = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            # ``from . import test_x`` names the module in the imported names
            modules = [base] if base else [alias.name for alias in node.names]
        else:
            continue
        for module in modules:
            parts = module.split(".")
            if any(p.startswith("test_") or p == "conftest" for p in parts):
                found.append((node.lineno, "." * getattr(node, "level", 0) + module))
    return found


def test_the_check_finds_each_kind_of_forbidden_import():
    source = (
        "from .test_a import x\n"
        "from ..conftest import make_dictionary\n"
        "import tests.test_b\n"
        "from . import test_c\n"
        "from .helpers.models import tiny_model\n"
        "import pytest\n"
    )
    expected = [(1, ".test_a"), (2, "..conftest"), (3, "tests.test_b"), (4, ".test_c")]
    assert forbidden_imports(source) == expected


def test_no_module_imports_a_test_module_or_conftest():
    paths = sorted(glob.glob(os.path.join(TESTS, "**", "*.py"), recursive=True))
    assert any(os.path.basename(p) == "test_suite_imports.py" for p in paths)
    offending = {}
    for path in paths:
        with open(path, encoding="utf-8") as f:
            found = forbidden_imports(f.read())
        if found:
            offending[os.path.relpath(path, REPO)] = found
    assert not offending, offending


def test_conftest_defines_only_fixtures_and_hooks():
    with open(os.path.join(TESTS, "conftest.py"), encoding="utf-8") as f:
        tree = ast.parse(f.read())
    others = []
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            fixture = any("fixture" in ast.unparse(d) for d in node.decorator_list)
            if not (fixture or node.name.startswith("pytest_")):
                others.append(node.name)
        elif isinstance(node, (ast.ClassDef, ast.Assign, ast.AnnAssign)):
            others.append(ast.unparse(node).splitlines()[0])
    assert not others, others
