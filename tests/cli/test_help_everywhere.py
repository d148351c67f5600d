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
import multiprocessing.connection
import os
import runpy
import subprocess
import sys
import time
import warnings
from concurrent.futures import ThreadPoolExecutor

import pytest

from ..helpers.cli import REPO

TIMEOUT_S = 120  # seconds for one --help

# libraries that recipes source; they are not run (their header says so)
SOURCED_ONLY = {
    "examples/aclsum/common.sh",
    "examples/common/pairs.sh",
    "examples/common/seq2seq_stages.sh",
    "examples/common/training_console.sh",
}


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


def help_from_bash(script, flag, folder):
    env = dict(
        os.environ, HOME=str(folder), PYTHONPATH=REPO, PYTHONWARNINGS="ignore", PYTHONDONTWRITEBYTECODE="1"
    )
    proc = subprocess.run(
        ["bash", os.path.join(REPO, script), flag], cwd=folder, env=env, capture_output=True, text=True,
        timeout=TIMEOUT_S,
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
    except SystemExit as stop:  # as the interpreter ends: None is 0, an int its code, else printed and 1
        code = 0 if stop.code is None else stop.code
        if not isinstance(code, int):
            print(code, file=sys.stderr)
            code = 1
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)


def help_from_forks(cases, folders, forks, width=4):
    """``--help`` of each Python script in ``cases``, ``width`` forks at a time: {case: (exit code, stdout,
    stderr)}; a fork that outlives TIMEOUT_S is killed (code -9).

    Every start, wait and join happens in this one thread. multiprocessing's Process objects are not safe to
    drive from several threads: ``start()`` polls every running child, and a poll in one thread can take
    the exit status that a ``join()`` in another is about to read, which then reports 255.
    """
    pending, running, answers = list(cases), {}, {}

    def outputs(case):
        return [folders[case].parent / f"{folders[case].name}.{end}" for end in ("out", "err")]

    def finish(sentinel):
        case, child, _ = running.pop(sentinel)
        child.join(5)
        out, err = outputs(case)
        answers[case] = (child.exitcode, out.read_text(), err.read_text())

    while pending or running:
        while pending and len(running) < width:
            case = pending.pop(0)
            script, flag = case
            args = (os.path.join(REPO, script), flag, folders[case], *outputs(case))
            child = forks.Process(target=run_script_as_main, args=args)
            child.start()
            running[child.sentinel] = (case, child, time.monotonic())
        for sentinel in multiprocessing.connection.wait(list(running), timeout=1):
            finish(sentinel)
        for sentinel, (_, child, started) in list(running.items()):
            if time.monotonic() - started > TIMEOUT_S:
                child.kill()
                finish(sentinel)
    return answers


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
    shell = [case for case in cases if not case[0].endswith(".py")]
    # the shell scripts run from a thread pool (subprocess is thread-safe); the forks from this thread only
    with ThreadPoolExecutor(max_workers=2) as pool:
        from_bash = pool.map(lambda case: help_from_bash(*case, folders[case]), shell)
        answers = help_from_forks([case for case in cases if case[0].endswith(".py")], folders, forks)
        answers.update(zip(shell, from_bash))
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
