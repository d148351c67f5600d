"""The environment the set-up creates works beside ``transformers``: every installed dependency imports.

Each check runs in a fresh interpreter, so nothing another test imported, patched or hid can help it pass.
"""

import importlib.metadata as metadata
import json
import subprocess
import sys

import pytest
from packaging.requirements import Requirement

ROOT_DISTRIBUTION = "unilm_fairseq"
EXTRAS = ("test",)  # the suite runs in an environment set up with --test


def fresh_python(code: str, timeout: int = 300) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=timeout)


def applies(requirement: Requirement, extras) -> bool:
    """Whether ``requirement``'s environment marker holds here, for the given extras."""
    marker = requirement.marker
    return marker is None or any(marker.evaluate({"extra": extra}) for extra in (extras or ("",)))


def installed_dependencies():
    """The installed distributions ``unilm_fairseq[test]`` depends on, transitively (missing ones skipped:
    a requirement pip left out, such as a torchaudio removed by the set-up, is not installed)."""
    seen, queue = {}, [(ROOT_DISTRIBUTION, EXTRAS)]
    while queue:
        name, extras = queue.pop()
        key = name.lower().replace("_", "-")
        if key in seen:
            continue
        try:
            dist = metadata.distribution(name)
        except metadata.PackageNotFoundError:
            continue
        seen[key] = dist
        for requirement in map(Requirement, dist.requires or []):
            if applies(requirement, extras):
                queue.append((requirement.name, ()))
    return seen


def top_level_modules(dist) -> list:
    """The importable top-level modules a distribution installs (from its file list). A top-level ``tests``
    package some distributions ship is left out: the name would find this repository's own tests instead."""
    files = [path.parts for path in dist.files or []]
    packages = {parts[0] for parts in files if len(parts) == 2 and parts[1] == "__init__.py"}
    names = set(packages)
    for parts in files:
        if len(parts) == 1 and parts[0].endswith(".py"):
            names.add(parts[0][:-3])
        elif len(parts) == 1 and parts[0].endswith(".so"):
            names.add(parts[0].split(".", 1)[0])
    return sorted(n for n in names if n.isidentifier() and not n.startswith("_") and n != "tests")


def test_transformers_bert_model_imports_without_hiding_anything():
    """The import the parity tests rely on, with nothing removed from ``sys.modules`` beforehand."""
    result = fresh_python(
        "import transformers\n"
        "from transformers import BertForMaskedLM, BertModel\n"
        "model = BertModel(transformers.BertConfig(hidden_size=8, num_hidden_layers=1,"
        " num_attention_heads=2, intermediate_size=16, vocab_size=20))\n"
        "print(type(model).__name__)\n"
    )
    assert result.returncode == 0, result.stderr[-3000:]
    assert result.stdout.strip().splitlines()[-1] == "BertModel"


def test_every_installed_dependency_imports():
    """No package the set-up leaves behind fails to import (a torchaudio built for another torch did)."""
    dists = installed_dependencies()
    assert {"fairseq-fixed", "torch", "transformers"} <= set(dists) or {"fairseq", "torch"} <= set(dists)
    modules = sorted({m for dist in dists.values() for m in top_level_modules(dist)})
    assert "fairseq" in modules and "torch" in modules
    code = (
        "import importlib, json, sys, traceback, warnings\n"
        "warnings.simplefilter('ignore')\n"
        "import torch  # extensions built against torch (fairseq's) find its libraries once it is loaded\n"
        "failed = {}\n"
        f"for name in {modules!r}:\n"
        "    try:\n"
        "        importlib.import_module(name)\n"
        "    except Exception as err:\n"
        "        failed[name] = repr(err)[:300]\n"
        "print(json.dumps(failed))\n"
    )
    result = fresh_python(code)
    assert result.returncode == 0, result.stderr[-3000:]
    failed = json.loads(result.stdout.strip().splitlines()[-1])
    assert failed == {}, f"installed but cannot import: {failed}"


@pytest.mark.parametrize("module", ["torchaudio"])
def test_no_installed_module_that_cannot_load(module):
    """A module that is installed must load; one the set-up removed is simply absent."""
    result = fresh_python(
        "import importlib.util, sys\n"
        f"spec = importlib.util.find_spec({module!r})\n"
        "if spec is None:\n"
        "    print('absent'); sys.exit(0)\n"
        f"import {module}\n"
        "print('loads')\n"
    )
    assert result.returncode == 0, result.stderr[-3000:]
    assert result.stdout.strip() in ("absent", "loads")
