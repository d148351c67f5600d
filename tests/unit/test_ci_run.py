"""``.ci/run``: the main job's smoke run, in its own fresh venv without the test extras, before the suite,
and a failure of either stops CI with a non-zero exit."""

import os
import re
import subprocess

from tests.helpers.cli import REPO


def ci_lines():
    text = open(os.path.join(REPO, ".ci", "run"), encoding="utf-8").read()
    return [line.strip() for line in text.splitlines() if line.strip() and not line.lstrip().startswith("#")]


def smoke_run_index(lines):
    """The index of the line that runs the main job's smoke run (``bash scripts/demo.sh``)."""
    return next(i for i, line in enumerate(lines) if re.search(r"\bbash scripts/demo\.sh\b", line))


def removed_before_the_smoke_run(lines, path):
    return re.search(rf"\brm -rf\b.*\s{re.escape(path)}(\s|$)", "\n".join(lines[: smoke_run_index(lines)]))


def test_ci_stops_on_the_first_failure():
    lines = ci_lines()
    assert "set -euo pipefail" in lines[:3], "a failing step must fail .ci/run (set -euo pipefail, first)"


def test_the_smoke_run_comes_first_in_a_venv_of_its_own():
    lines = ci_lines()
    demo = smoke_run_index(lines)
    suite = next(i for i, line in enumerate(lines) if re.search(r"\bbash scripts/test\.sh\b", line))
    assert demo < suite, "the main job's smoke run must come before the suite"
    venv = re.search(r"\bVENV=(\S+)", lines[demo])
    assert venv and venv.group(1) not in (".venv", "./.venv"), "the smoke run needs a venv of its own"
    assert removed_before_the_smoke_run(lines, venv.group(1)), (
        f"{venv.group(1)} must be removed first (a fresh venv, set up as scripts/demo.sh does)"
    )
    for setting in ("UPDATES", "TEST_PAIRS"):
        assert re.search(rf"\b{setting}=[1-9]", lines[demo]), f"the smoke budget needs {setting}"


def test_the_smoke_venv_is_ignored_by_git_and_ruff():
    venv = re.search(r"\bVENV=(\S+)", next(line for line in ci_lines() if "scripts/demo.sh" in line)).group(1)
    ignored = subprocess.run(
        ["git", "check-ignore", "-q", f"{venv}/bin/python"], cwd=REPO, capture_output=True
    ).returncode
    assert ignored == 0, f"{venv} is not in .gitignore"
    pyproject = open(os.path.join(REPO, "pyproject.toml"), encoding="utf-8").read()
    exclude = re.search(r"extend-exclude\s*=\s*\[([^\]]*)\]", pyproject)
    assert exclude and f'"{venv}"' in exclude.group(1), f"{venv} is not in ruff's extend-exclude"


def test_the_suite_reads_the_smoke_runs_console():
    """The console test reads the run CI just made: its console kept in a file removed first, named to the
    suite, and no warning filter set outside for it."""
    lines = ci_lines()
    text = "\n".join(lines)
    kept = re.search(r"bash scripts/demo\.sh 2>&1 \\\n\| tee (\S+)$", text, re.M)
    assert kept, "the smoke run's console (stdout and stderr) must be kept with tee"
    console = kept.group(1)
    assert removed_before_the_smoke_run(lines, console), console
    assert re.search(r"(^|\s)PYTHONWARNINGS=\s", lines[smoke_run_index(lines)]), (
        "empty PYTHONWARNINGS for the smoke run"
    )
    assert re.search(rf"\bMAIN_JOB_SMOKE_CONSOLE={re.escape(console)} bash scripts/test\.sh\b", text)
