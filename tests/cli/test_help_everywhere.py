"""Every script under scripts/, examples/ and benchmarks/ answers -h/--help with its usage and exit 0, before
any set-up, download, installation or deletion: run from an empty folder, it creates nothing there or in
the checkout.

Shell scripts run as processes of their own. Python scripts run as ``__main__`` in processes forked from one
fresh interpreter that has already imported the plugin (with torch and fairseq): each script's own code
still runs from its start, in its own folder and process, and each skips the 4-5 s of imports it would
otherwise repeat.
"""

import glob
import multiprocessing
import os
import runpy
import subprocess
import sys
import warnings
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


def ask_for_help(script, flag, folder, forks):
    if script.endswith(".py"):
        return help_from_a_fork(script, flag, folder, forks)
    env = dict(
        os.environ, HOME=str(folder), PYTHONPATH=REPO, PYTHONWARNINGS="ignore", PYTHONDONTWRITEBYTECODE="1"
    )
    proc = subprocess.run(
        ["bash", os.path.join(REPO, script), flag], cwd=folder, env=env, capture_output=True, text=True,
        timeout=120,
    )  # fmt: skip
    return proc.returncode, proc.stdout, proc.stderr


def run_script_as_main(path, flag, folder, out, err):
    """In the forked process: ``python PATH FLAG`` from ``folder``, with its output in ``out`` and ``err``."""
    os.chdir(folder)
    os.environ["HOME"] = str(folder)
    sys.dont_write_bytecode = True
    warnings.simplefilter("ignore")
    for fd, name in ((1, out), (2, err)):
        os.dup2(os.open(name, os.O_WRONLY | os.O_CREAT | os.O_TRUNC), fd)
    sys.argv = [path, flag]
    sys.path.insert(0, os.path.dirname(path))  # as python does for a script (benchmarks import bench_common)
    code = 0
    try:
        runpy.run_path(path, run_name="__main__")
    except (
        SystemExit
    ) as stop:  # as the interpreter ends: None is 0, an int its code, anything else printed, 1
        code = 0 if stop.code is None else stop.code
        if not isinstance(code, int):
            print(code, file=sys.stderr)
            code = 1
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)


def help_from_a_fork(script, flag, folder, forks):
    out, err = folder.parent / f"{folder.name}.out", folder.parent / f"{folder.name}.err"
    child = forks.Process(
        target=run_script_as_main, args=(os.path.join(REPO, script), flag, folder, out, err)
    )
    child.start()
    child.join(120)
    if child.exitcode is None:
        child.kill()
    return child.exitcode, out.read_text(), err.read_text()


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
        folders[(script, flag)] = tmp_path / "folders" / f"run{i}"
        folders[(script, flag)].mkdir(parents=True)
    forks = multiprocessing.get_context("forkserver")
    forks.set_forkserver_preload(["unilm_fairseq"])
    with ThreadPoolExecutor(max_workers=4) as pool:
        answers = dict(zip(cases, pool.map(lambda case: ask_for_help(*case, folders[case], forks), cases)))
    problems = []
    for (script, flag), (code, stdout, stderr) in answers.items():
        made = os.listdir(folders[(script, flag)])
        if code != 0:
            problems.append(f"{script} {flag}: exit {code}: {stderr[-300:]}")
        elif len(stdout.strip().splitlines()) < 2:
            problems.append(f"{script} {flag}: no usage on stdout: {stdout!r}")
        elif made:
            problems.append(f"{script} {flag}: created {made}")
    assert not problems, "\n".join(problems)
    assert checkout_state() == before, "a script's --help changed the checkout"
    assert len(scripts()) > 40
