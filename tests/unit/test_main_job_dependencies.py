"""Everything the main job imports is installed by its own set-up (``pip install .``, no extras).

The main job (``bash scripts/demo.sh``) runs the plugin and the scripts its recipes call in a venv set up
without the test extras. A module imported on that path but provided only by an extra (or by nothing the
package declares) passes the suite, whose venv has the extras, and fails on a user's clean machine. This
test reads every import statement of that code (nested ones too) and checks that each third-party module
comes from a distribution that ``install_requires`` names, directly or through the requirements of one it
names. Imports that are optional by design (guarded, with a clear message naming the extra) are listed in
``OPTIONAL`` with the extra of setup.py that provides them.
"""

import ast
import importlib.metadata as metadata
import os
import re
import sys

import pytest
from packaging.requirements import Requirement

from tests.helpers.cli import REPO

# where the main job starts: the README's first command; the shell scripts it runs or sources are followed
MAIN_JOB_ENTRY = "scripts/demo.sh"
# a repository file that a shell script names: "$REPO/examples/s2s_ft/finetune.sh", scripts/score.py, ...
REPO_FILE = re.compile(r"(?<![\w.-])((?:scripts|examples)/[\w/.-]+?\.(?:sh|py))\b")
# module -> (extra of setup.py that provides it, why the main job never needs it)
OPTIONAL = {
    "nltk": ("meteor", "METEOR only (scoring/metrics.py imports it inside the function)"),
    "pyarrow": (
        "test",
        "Parquet rows in prepare_seq2seq_data (the readers import it when a .parquet is given)",
    ),
    "transformers": (
        "test",
        "hf_export/standalone_generate.py only: nothing imports it; the export copies it into the exported "
        "folder as generate.py, which runs where transformers is",
    ),
}


def setup_keywords():
    """``install_requires`` and ``extras_require`` as written in setup.py (not as installed)."""
    tree = ast.parse(open(os.path.join(REPO, "setup.py"), encoding="utf-8").read())
    call = next(
        node
        for node in ast.walk(tree)
        if isinstance(node, ast.Call) and getattr(node.func, "id", None) == "setup"
    )
    keywords = {
        k.arg: ast.literal_eval(k.value)
        for k in call.keywords
        if k.arg in ("install_requires", "extras_require")
    }
    return keywords["install_requires"], keywords.get("extras_require", {})


def shell_code(shell):
    """The text of a shell script without its comments (a file a comment names is not run)."""
    text = open(os.path.join(REPO, shell), encoding="utf-8").read()
    return re.sub(r"(^|\s)#.*$", r"\1", text, flags=re.M)


def main_job_shell_scripts():
    """The shell scripts of the main job: its entry and every shell script these run or source, in turn."""
    found, queue = [], [MAIN_JOB_ENTRY]
    while queue:
        shell = queue.pop(0)
        if shell in found:
            continue
        found.append(shell)
        text = shell_code(shell)
        queue += [
            name
            for name in REPO_FILE.findall(text)
            if name.endswith(".sh") and os.path.isfile(os.path.join(REPO, name))
        ]
    return found


def main_job_files():
    """The plugin's modules and the python files (scripts/, examples/) the main job's shell scripts run,
    with the repository modules those import by their bare name (a script importing its neighbour)."""
    files = []
    for root, _, names in os.walk(os.path.join(REPO, "unilm_fairseq")):
        files += [os.path.join(root, name) for name in names if name.endswith(".py")]
    queue = []
    for shell in main_job_shell_scripts():
        text = shell_code(shell)
        queue += sorted({name for name in REPO_FILE.findall(text) if name.endswith(".py")})
    while queue:
        path = os.path.join(REPO, queue.pop(0))
        if path in files or not os.path.isfile(path):
            continue
        files.append(path)
        folder = os.path.relpath(os.path.dirname(path), REPO)
        for module in imported_modules(path):
            if os.path.isfile(os.path.join(REPO, folder, f"{module}.py")):
                queue.append(os.path.join(folder, f"{module}.py"))
    return files


def imported_modules(path):
    """Top-level names of every absolute import in ``path``, nested imports included."""
    names = set()
    for node in ast.walk(ast.parse(open(path, encoding="utf-8").read(), path)):
        if isinstance(node, ast.Import):
            names.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names.add(node.module.split(".")[0])
    return names


def normalized(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def declared_closure(requirements):
    """The distributions ``requirements`` bring in: theirs and, recursively, their own requirements
    (markers evaluated here, extras of the requirements honoured, no extra of this package)."""
    seen, queue = set(), [Requirement(r) for r in requirements]
    while queue:
        requirement = queue.pop()
        if requirement.marker is not None and not requirement.marker.evaluate({"extra": ""}):
            continue
        key = normalized(requirement.name)
        if key in seen:
            continue
        seen.add(key)
        try:
            requires = metadata.requires(requirement.name) or []
        except metadata.PackageNotFoundError:
            continue
        for text in requires:
            child = Requirement(text)
            extras = requirement.extras or {""}
            if child.marker is None or any(child.marker.evaluate({"extra": extra}) for extra in extras):
                queue.append(child)
    return seen


def third_party(path, modules):
    """``modules`` less the standard library, this repository's packages and the neighbours of ``path``."""
    own = {"unilm_fairseq", "tests"}
    folder = os.path.dirname(path)
    return {
        m
        for m in modules
        if m not in sys.stdlib_module_names
        and m not in own
        and not os.path.isfile(os.path.join(folder, f"{m}.py"))
    }


def undeclared_imports(install_requires):
    """module -> the main job's files importing it, for each third-party module that ``install_requires``
    does not bring in (the modules of ``OPTIONAL`` excepted)."""
    allowed = declared_closure(install_requires)
    providers = metadata.packages_distributions()
    missing = {}
    for path in main_job_files():
        for module in sorted(third_party(path, imported_modules(path)) - set(OPTIONAL)):
            distributions = {normalized(d) for d in providers.get(module, [])}
            if not distributions & allowed:
                missing.setdefault(module, []).append(os.path.relpath(path, REPO))
    return missing


def test_every_main_job_import_is_installed_by_install_requires():
    install_requires, _ = setup_keywords()
    missing = undeclared_imports(install_requires)
    assert not missing, (
        "imported on the main job's path but not installed by install_requires (add the distribution to "
        f"setup.py, or guard the import and list it in OPTIONAL): {missing}"
    )


def test_the_main_job_files_are_found():
    shells = main_job_shell_scripts()
    for shell in ("scripts/setup_env.sh", "examples/aclsum/demo.sh", "examples/aclsum/common.sh",
                  "examples/s2s_ft/finetune.sh", "examples/common/pairs.sh"):  # fmt: skip
        assert shell in shells, f"{shell} is not followed from {MAIN_JOB_ENTRY}"
    files = {os.path.relpath(path, REPO) for path in main_job_files()}
    for script in ("prepare_aclsum.py", "convert_hf_checkpoint.py", "pack_weights.py", "check_pairs.py",
                   "tokenize_text.py", "rouge_table.py"):  # fmt: skip
        assert f"scripts/{script}" in files
    assert "unilm_fairseq/hf_import/weights.py" in files


@pytest.mark.parametrize("module", sorted(OPTIONAL))
def test_each_optional_import_names_an_extra_that_provides_it(module):
    assert any(module in imported_modules(path) for path in main_job_files()), f"{module}: no longer imported"
    _, extras = setup_keywords()
    extra, _ = OPTIONAL[module]
    assert extra in extras, f"{module}: setup.py has no extra {extra!r}"
    providers = {normalized(d) for d in metadata.packages_distributions().get(module, [])}
    assert providers & declared_closure(extras[extra]), f"{module} is not installed by the extra {extra!r}"


def test_the_check_fails_without_a_declared_dependency():
    """The rule itself: with safetensors taken out of install_requires, the check reports the importer's
    import of it (the main job's MiniLM ships only model.safetensors)."""
    install_requires, _ = setup_keywords()
    without = [r for r in install_requires if normalized(Requirement(r).name) != "safetensors"]
    assert without != install_requires, "safetensors is not in install_requires"
    missing = undeclared_imports(without)
    assert set(missing) == {"safetensors"}, missing
    assert "unilm_fairseq/hf_import/weights.py" in missing["safetensors"]
