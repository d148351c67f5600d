"""The import rules of docs/architecture.md: each package imports only the packages below it, and the
readers under ``prepare/`` stay out of the run-time path."""

import ast
import os
import sys
from collections import defaultdict

from ..helpers.cli import REPO

PACKAGE = os.path.join(REPO, "unilm_fairseq")
# what a part of the plugin may import from the rest of it (a part: a top-level module or package)
FOUNDATIONS = {"masks", "modules", "encoders"}
ALLOWED = {
    "masks": set(),
    "known_warnings": set(),
    "modules": set(),
    "encoders": set(),
    "seq2seq_layout": {"masks", "data"},
    "data": {"masks", "seq2seq_layout"},
    "qa": {"data", "encoders", "modules"},
    "losses": {"modules", "qa"},
    "scoring": {"encoders"},
    "prepare": {"encoders"},
    "models": {"masks", "modules", "seq2seq_layout", "data", "checkpoint", "hub"},
    "checkpoint": {"masks", "modules", "seq2seq_layout", "data", "models"},
    "hub": {"masks", "modules", "seq2seq_layout", "data", "models", "checkpoint", "encoders"},
    "criterions": {"masks", "modules", "seq2seq_layout", "data", "losses", "qa"},
    "tasks": {
        "masks",
        "modules",
        "seq2seq_layout",
        "data",
        "qa",
        "encoders",
        "models",
        "checkpoint",
        "scoring",
    },
    "hf_import": {"masks", "modules", "seq2seq_layout", "data", "encoders", "models", "checkpoint", "tasks"},
    "hf_export": {
        "masks",
        "modules",
        "seq2seq_layout",
        "data",
        "encoders",
        "models",
        "checkpoint",
        "tasks",
        "hf_import",
        "hub",
    },
}


def part_of(module: str) -> str:
    """``unilm_fairseq.data.seeded`` -> ``data``; the package root is ``__init__``."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else "__init__"


def plugin_imports():
    """``{part: {(imported part, file)}}`` for every import of the plugin by the plugin, function-level ones
    included."""
    found = defaultdict(set)
    for folder, _, files in os.walk(PACKAGE):
        for name in files:
            if not name.endswith(".py"):
                continue
            path = os.path.join(folder, name)
            module = os.path.relpath(path[:-3], REPO).replace(os.sep, ".")
            package = module if name == "__init__.py" else module.rsplit(".", 1)[0]
            package = package.removesuffix(".__init__")
            with open(path, encoding="utf-8") as f:
                tree = ast.parse(f.read())
            for node in ast.walk(tree):
                targets = []
                if isinstance(node, ast.ImportFrom) and node.level:
                    base = package.split(".")[: len(package.split(".")) - (node.level - 1)]
                    if node.module:
                        targets = [".".join(base + [node.module])]
                    else:
                        targets = [".".join(base + [alias.name]) for alias in node.names]
                elif isinstance(node, ast.ImportFrom) and (node.module or "").startswith("unilm_fairseq"):
                    targets = [node.module]
                elif isinstance(node, ast.Import):
                    targets = [a.name for a in node.names if a.name.startswith("unilm_fairseq")]
                for target in targets:
                    if target.startswith("unilm_fairseq.") and part_of(target) != part_of(module):
                        found[part_of(module)].add((part_of(target), os.path.relpath(path, REPO)))
    return found


def test_every_part_of_the_plugin_has_a_rule():
    parts = {name[:-3] if name.endswith(".py") else name for name in os.listdir(PACKAGE)}
    parts -= {"__init__", "__pycache__"}
    assert parts == set(ALLOWED), sorted(parts ^ set(ALLOWED))


def test_each_part_imports_only_what_its_rule_allows():
    broken = sorted(
        (part, target, path)
        for part, imports in plugin_imports().items()
        if part != "__init__"
        for target, path in imports
        if target not in ALLOWED[part]
    )
    assert not broken, broken


def test_the_foundations_import_nothing_of_the_plugin():
    imports = plugin_imports()
    assert all(not imports.get(part) for part in FOUNDATIONS), {p: imports.get(p) for p in FOUNDATIONS}


def test_nothing_at_run_time_imports_the_preparation_readers():
    users = {
        part for part, imports in plugin_imports().items() for target, _ in imports if target == "prepare"
    }
    assert not users, users


def test_the_check_sees_relative_and_function_level_imports(tmp_path, monkeypatch):
    package = tmp_path / "unilm_fairseq"
    (package / "tasks").mkdir(parents=True)
    (package / "tasks" / "x.py").write_text("def f():\n    from ..prepare import aclsum\n")
    (package / "data").mkdir()
    (package / "data" / "y.py").write_text("from unilm_fairseq.models import unilmv2\n")
    monkeypatch.setattr(sys.modules[__name__], "PACKAGE", str(package))
    monkeypatch.setattr(sys.modules[__name__], "REPO", str(tmp_path))
    found = plugin_imports()
    assert ("prepare", os.path.join("unilm_fairseq", "tasks", "x.py")) in found["tasks"]
    assert ("models", os.path.join("unilm_fairseq", "data", "y.py")) in found["data"]
