"""Every script under scripts/, examples/ and benchmarks/ answers -h/--help with its usage and exit 0, before
any set-up, download, installation or deletion: run from an empty folder, it creates nothing there or in
the checkout."""

import glob
import os
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor

import pytest

from ..helpers.cli import REPO

# libraries that recipes source; they are not run (their header says so)
SOURCED_ONLY = {"examples/aclsum/common.sh", "examples/common/pairs.sh", "examples/common/seq2seq_stages.sh"}


def scripts():
    found = []
    for pattern in ("scripts/*.sh", "scripts/*.py", "examples/*/*.sh", "examples/*/*.py", "benchmarks/*.py"):
        found += sorted(os.path.relpath(p, REPO) for p in glob.glob(os.path.join(REPO, pattern)))
    return [s for s in found if s not in SOURCED_ONLY and not s.endswith(("__init__.py", "bench_common.py"))]


def checkout_state():
    """What git sees in the checkout, ignored files included: any file a script makes shows here."""
    lines = subprocess.run(
        ["git", "status", "--porcelain", "--ignored", "--untracked-files=all"],
        cwd=REPO, capture_output=True, text=True, check=True,
    ).stdout.splitlines()  # fmt: skip
    # Python's bytecode caches come and go with any import (other tests write them too)
    return [line for line in lines if "__pycache__" not in line and not line.endswith(".pyc")]


def ask_for_help(script, flag, folder):
    runner = ["bash"] if script.endswith(".sh") else [sys.executable]
    env = dict(
        os.environ, HOME=str(folder), PYTHONPATH=REPO, PYTHONWARNINGS="ignore", PYTHONDONTWRITEBYTECODE="1"
    )
    return subprocess.run(
        [*runner, os.path.join(REPO, script), flag],
        cwd=folder, env=env, capture_output=True, text=True, timeout=120,
    )  # fmt: skip


def test_the_sourced_libraries_say_so():
    for library in SOURCED_ONLY:
        with open(os.path.join(REPO, library), encoding="utf-8") as f:
            assert "Sourced, not run" in f.read(2000), library


@pytest.mark.skipif(not os.path.isdir(os.path.join(REPO, ".git")), reason="needs the git checkout")
def test_every_script_answers_help_without_side_effects(tmp_path):
    before = checkout_state()
    # argparse answers -h and --help alike: Python scripts are asked once, shell scripts both ways
    cases = [(s, "--help") for s in scripts()] + [(s, "-h") for s in scripts() if s.endswith(".sh")]
    folders = {}
    for i, (script, flag) in enumerate(cases):
        folders[(script, flag)] = tmp_path / f"run{i}"
        folders[(script, flag)].mkdir()
    with ThreadPoolExecutor(max_workers=4) as pool:
        procs = dict(zip(cases, pool.map(lambda case: ask_for_help(*case, folders[case]), cases)))
    problems = []
    for (script, flag), proc in procs.items():
        made = os.listdir(folders[(script, flag)])
        if proc.returncode != 0:
            problems.append(f"{script} {flag}: exit {proc.returncode}: {proc.stderr[-300:]}")
        elif len(proc.stdout.strip().splitlines()) < 2:
            problems.append(f"{script} {flag}: no usage on stdout: {proc.stdout!r}")
        elif made:
            problems.append(f"{script} {flag}: created {made}")
    assert not problems, "\n".join(problems)
    assert checkout_state() == before, "a script's --help changed the checkout"
    assert len(scripts()) > 40
