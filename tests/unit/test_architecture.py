"""The import rules of docs/architecture.md: each package imports only the packages below it, and the
readers under ``prepare/`` stay out of the run-time path."""

import ast
import os
import sys
from collections import defaultdict

from ..helpers.cli import REPO

PACKAGE = os.path.join(REPO, "unilm_fairseq")
DOC = os.path.join(REPO, "docs", "architecture.md")
FOUNDATIONS = {"masks", "known_warnings", "clean_exit", "import_logging", "modules", "encoders"}
# the one import up the table's rows, as the doc says: the models use the checkpoint code's upgrade rule
UPWARD = {("models", "checkpoint")}


def part_name(cell: str) -> str:
    """```data/``` or ```masks.py``` -> ``data`` / ``masks``."""
    return cell.strip().strip("`").removesuffix("/").removesuffix(".py")


def documented_table():
    """The import table of docs/architecture.md: ``[(part, {imported parts})]`` in row order."""
    with open(DOC, encoding="utf-8") as f:
        section = f.read().split("## Import rules", 1)[1].split("\n## ", 1)[0]
    rows = []
    for line in section.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) != 2 or not cells[0].startswith("`"):
            continue
        imported = (
            set() if cells[1] == "nothing of the plugin" else {part_name(c) for c in cells[1].split(",")}
        )
        rows += [(part_name(c), imported) for c in cells[0].split(",")]
    return rows


ALLOWED = dict(documented_table())


def part_of(module: str) -> str:
    """``unilm_fairseq.data.seeded`` -> ``data``; the package root is ``__init__``."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else "__init__"


def plugin_imports():
    """``{part: {(imported part, file)}}`` for every import of the plugin by the plugin, function-level ones
    included (:func:`module_graph`, part by part)."""
    graph, paths = module_graph()
    found = defaultdict(set)
    for module, targets in graph.items():
        for target in targets:
            if target != "unilm_fairseq" and part_of(target) != part_of(module):
                found[part_of(module)].add((part_of(target), os.path.relpath(paths[module], REPO)))
    return found


def test_every_part_of_the_plugin_has_a_row():
    parts = {name[:-3] if name.endswith(".py") else name for name in os.listdir(PACKAGE)}
    parts -= {"__init__", "__pycache__"}
    assert parts == set(ALLOWED), sorted(parts ^ set(ALLOWED))
    assert len(documented_table()) == len(ALLOWED)  # one row each


def test_the_table_lists_exactly_the_imports_that_exist():
    found = plugin_imports()
    used = {part: {target for target, _ in found.get(part, ())} for part in ALLOWED}
    unlisted = sorted(
        (part, target, path)
        for part, imports in found.items()
        if part != "__init__"
        for target, path in imports
        if target not in ALLOWED[part]
    )
    assert not unlisted, unlisted
    stale = sorted((part, target) for part, allowed in ALLOWED.items() for target in allowed - used[part])
    assert not stale, stale


def test_every_import_reaches_down_the_table_but_the_documented_one():
    order = {part: row for row, (part, _) in enumerate(documented_table())}
    upward = {
        (part, target)
        for part, imports in plugin_imports().items()
        if part != "__init__"
        for target, _ in imports
        if order[target] > order[part]
    }
    assert upward == UPWARD


def test_the_foundations_import_nothing_of_the_plugin():
    imports = plugin_imports()
    assert all(not imports.get(part) for part in FOUNDATIONS), {p: imports.get(p) for p in FOUNDATIONS}


def test_nothing_at_run_time_imports_the_preparation_readers():
    users = {
        part for part, imports in plugin_imports().items() for target, _ in imports if target == "prepare"
    }
    assert not users, users


def module_graph(package_dir=None):
    """``({module: {plugin modules it imports}}, {module: file})``, module by module (``a.b`` for ``a/b.py``;
    a package's ``__init__`` is the package's name), function-level imports included. Each imported name
    counts as the most specific plugin module it reaches: a submodule, else its package."""
    package_dir = package_dir or PACKAGE
    root = os.path.dirname(package_dir)
    paths = {}
    for folder, _, files in os.walk(package_dir):
        for name in files:
            if name.endswith(".py"):
                path = os.path.join(folder, name)
                module = os.path.relpath(path[:-3], root).replace(os.sep, ".").removesuffix(".__init__")
                paths[module] = path

    def resolve(name: str) -> str:
        """The most specific module of ``paths`` that ``name`` reaches; ``name`` itself when none does."""
        found = name
        while found and found not in paths:
            found = found.rpartition(".")[0]
        return found or name

    graph = defaultdict(set)
    for module, path in paths.items():
        package = module if path.endswith("__init__.py") else module.rsplit(".", 1)[0]
        with open(path, encoding="utf-8") as f:
            tree = ast.parse(f.read())
        for node in ast.walk(tree):
            names = []
            if isinstance(node, ast.ImportFrom):
                if node.level:
                    base = ".".join(package.split(".")[: len(package.split(".")) - (node.level - 1)])
                    base = f"{base}.{node.module}" if node.module else base
                else:
                    base = node.module or ""
                names = [f"{base}.{alias.name}" for alias in node.names]
            elif isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            graph[module].update(
                t for t in map(resolve, names) if t.split(".")[0] == "unilm_fairseq" and t != module
            )
    return graph, paths


def import_circles(graph, modules):
    """Groups of two or more modules that reach each other through imports (strongly connected)."""
    index, low, stack, on_stack, circles, counter = {}, {}, [], set(), [], [0]

    def visit(node):
        index[node] = low[node] = counter[0]
        counter[0] += 1
        stack.append(node)
        on_stack.add(node)
        for nxt in graph.get(node, ()):
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in on_stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            group = set()
            while True:
                member = stack.pop()
                on_stack.discard(member)
                group.add(member)
                if member == node:
                    break
            if len(group) > 1:
                circles.append(sorted(group))

    for module in sorted(modules):
        if module not in index:
            visit(module)
    return circles


def test_no_modules_import_each_other_in_a_circle():
    """Module by module; a package's ``__init__`` that re-exports its submodules counts as the package, and
    the package root (which imports every part to register it) is left out."""
    graph, paths = module_graph()
    graph = {
        m: {t for t in targets if t != "unilm_fairseq"}
        for m, targets in graph.items()
        if m != "unilm_fairseq"
    }
    circles = [c for c in import_circles(graph, set(paths) - {"unilm_fairseq"}) if not _package_reexport(c)]
    assert not circles, circles


def _package_reexport(circle):
    """A package and its own submodules only: ``pkg/__init__`` importing ``pkg.x`` while ``pkg.x``
    imports ``pkg.y`` through the package is how Python packages re-export, not a design circle."""
    packages = [m for m in circle if any(o.startswith(m + ".") for o in circle)]
    return len(packages) == 1 and all(m == packages[0] or m.startswith(packages[0] + ".") for m in circle)


def test_the_circle_check_finds_a_circle(tmp_path):
    package = tmp_path / "unilm_fairseq"
    (package / "scoring").mkdir(parents=True)
    (package / "scoring" / "__init__.py").write_text("")
    (package / "scoring" / "a.py").write_text("def f():\n    from .b import g\n")
    (package / "scoring" / "b.py").write_text("from .a import f\n")
    graph, paths = module_graph(str(package))
    assert import_circles(graph, set(paths)) == [["unilm_fairseq.scoring.a", "unilm_fairseq.scoring.b"]]


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
