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

# the shell scripts of the main job: the scripts/*.py they run are on its path
MAIN_JOB_SHELL = ("scripts/demo.sh", "examples/aclsum/demo.sh", "examples/s2s_ft/finetune.sh")
# module -> (extra of setup.py that provides it, why the main job never needs it)
OPTIONAL = {
    "nltk": ("meteor", "METEOR only (scoring/metrics.py imports it inside the function)"),
    "pyarrow": (
        "test",
        "Parquet rows in prepare_seq2seq_data (the readers import it when a .parquet is given)",
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


def main_job_files():
    """The plugin's modules and the scripts/*.py files the main job's shell scripts run."""
    files = []
    for root, _, names in os.walk(os.path.join(REPO, "unilm_fairseq")):
        files += [os.path.join(root, name) for name in names if name.endswith(".py")]
    for shell in MAIN_JOB_SHELL:
        text = open(os.path.join(REPO, shell), encoding="utf-8").read()
        for script in sorted(set(re.findall(r"scripts/(\w+\.py)", text))):
            files.append(os.path.join(REPO, "scripts", script))
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


def third_party(modules, local):
    own = {"unilm_fairseq", "tests"} | local
    return {m for m in modules if m not in sys.stdlib_module_names and m not in own}


def test_every_main_job_import_is_installed_by_install_requires():
    install_requires, extras = setup_keywords()
    allowed = declared_closure(install_requires)
    providers = metadata.packages_distributions()
    local_scripts = {name[:-3] for name in os.listdir(os.path.join(REPO, "scripts")) if name.endswith(".py")}
    missing = {}
    for path in main_job_files():
        for module in third_party(imported_modules(path), local_scripts):
            if module in OPTIONAL:
                continue
            distributions = {normalized(d) for d in providers.get(module, [])}
            if not distributions & allowed:
                where = os.path.relpath(path, REPO)
                missing.setdefault(module, []).append(where)
    assert not missing, (
        "imported on the main job's path but not installed by install_requires (add the distribution to "
        f"setup.py, or guard the import and list it in OPTIONAL): {missing}"
    )


def test_the_main_job_files_are_found():
    files = {os.path.relpath(path, REPO) for path in main_job_files()}
    for script in ("prepare_aclsum.py", "convert_hf_checkpoint.py", "tokenize_text.py", "rouge_table.py"):
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
    """The rule itself: with safetensors taken out of install_requires, the converter's import is reported."""
    install_requires, _ = setup_keywords()
    without = [r for r in install_requires if normalized(Requirement(r).name) != "safetensors"]
    assert without != install_requires, "safetensors is not in install_requires"
    allowed = declared_closure(without)
    providers = metadata.packages_distributions()
    assert not {normalized(d) for d in providers["safetensors"]} & allowed
