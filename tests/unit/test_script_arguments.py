"""Scripts refuse arguments that cannot work with one usage line, before any work, instead of a traceback."""

import os
import subprocess
import sys

import pytest

from ..helpers.cli import REPO


@pytest.mark.parametrize(
    "script, args, message",
    [
        ("recipe_config.py", ["updates", "{file}", "0", "3"], "BATCH (0) and EPOCHS (3) must be at least 1"),
        ("recipe_config.py", ["updates", "{file}", "8", "-1"], "BATCH (8) and EPOCHS (-1) must be"),
        ("prepare_aclsum.py", ["--output", "{tmp}/o", "--wordpiece-vocab", "{tmp}/none.txt"],
         "--wordpiece-vocab {tmp}/none.txt: no such file"),
        ("build_pretraining_corpus.py", ["--output", "{file}", "--wordpiece-vocab", "{file}"],
         "--output {file} is a file, not a folder"),
    ],
)  # fmt: skip
def test_unusable_arguments_are_one_line(tmp_path, script, args, message):
    names = {"tmp": str(tmp_path), "file": str(tmp_path / "a.txt")}
    (tmp_path / "a.txt").write_text("one line\n")
    env = dict(os.environ, PYTHONPATH=REPO)
    command = [sys.executable, os.path.join(REPO, "scripts", script), *(a.format(**names) for a in args)]
    proc = subprocess.run(command, capture_output=True, text=True, env=env, cwd=tmp_path)
    assert proc.returncode == 2 and message.format(**names) in proc.stderr and "Traceback" not in proc.stderr
