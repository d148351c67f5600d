"""The tests' console-script runner works where the packages were installed outside the interpreter's
folder (``pip --target``): fairseq's scripts then run as their modules under the same interpreter."""

import sys

import pytest

from ..helpers import cli


def test_scripts_beside_the_interpreter_run_as_they_are(tmp_path, monkeypatch):
    script = tmp_path / "fairseq-preprocess"
    script.write_text("#!/bin/sh\n")
    script.chmod(0o755)
    monkeypatch.setattr(cli, "BIN", str(tmp_path))
    assert cli.command("fairseq-preprocess") == [str(script)]


def test_fairseq_scripts_fall_back_to_their_modules(tmp_path, monkeypatch):
    monkeypatch.setattr(cli, "BIN", str(tmp_path))  # nothing beside the interpreter
    monkeypatch.setenv("PATH", str(tmp_path))  # and nothing on PATH
    assert cli.command("fairseq-preprocess") == [sys.executable, "-m", "fairseq_cli.preprocess"]
    assert cli.command("fairseq-hydra-train") == [sys.executable, "-m", "fairseq_cli.hydra_train"]
    assert cli.command("python") == [sys.executable]
    proc = cli.run_cli(["fairseq-preprocess", "--help"], timeout=300)
    assert "--joined-dictionary" in proc.stdout


def test_other_scripts_are_found_on_path_or_named(tmp_path, monkeypatch):
    tool = tmp_path / "bin" / "some-tool"
    tool.parent.mkdir()
    tool.write_text("#!/bin/sh\n")
    tool.chmod(0o755)
    monkeypatch.setattr(cli, "BIN", str(tmp_path))
    monkeypatch.setenv("PATH", str(tool.parent))
    assert cli.command("some-tool") == [str(tool)]
    with pytest.raises(FileNotFoundError, match="no-such-tool: not beside"):
        cli.command("no-such-tool")
