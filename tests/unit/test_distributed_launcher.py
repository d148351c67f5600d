"""scripts/train_distributed_cpu.py: the flags it hands fairseq and how its workers end."""

import os
import subprocess
import sys

import pytest

from tests.helpers.cli import REPO

SCRIPTS = os.path.join(REPO, "scripts")
sys.path.insert(0, SCRIPTS)
import train_distributed_cpu  # noqa: E402

# A worker with a thread that keeps asking for the interpreter lock from inside torch's C++ code, as gloo's
# worker thread does when it finishes fairseq's last barrier after the main thread has returned. It also
# registers an exit handler and leaves output in the stdout buffer: both must survive the launcher's exit.
WORKER = f"""
import atexit, sys, threading, torch

sys.path.insert(0, {SCRIPTS!r})
import train_distributed_cpu


def busy():
    x = torch.randn(128, 128)
    while True:
        x = torch.tanh(x @ x)


atexit.register(print, "exit handler ran")
threading.Thread(target=busy, daemon=True).start()
print("trained", end="; ")  # no newline, no flush: still in the buffer at exit
if sys.argv[1] == "launcher":
    train_distributed_cpu.exit_skipping_teardown()
"""


def run_worker(how_it_ends):
    return subprocess.run([sys.executable, "-c", WORKER, how_it_ends], capture_output=True, text=True,
                          timeout=120)  # fmt: skip


def test_launcher_exit_keeps_handlers_and_output_and_skips_the_abort():
    for _ in range(2):
        out = run_worker("launcher")
        assert out.returncode == 0, out.stderr[-2000:]
        assert out.stdout == "trained; exit handler ran\n"
        assert "terminate called" not in out.stderr


@pytest.mark.skipif(sys.version_info >= (3, 14), reason="Python 3.14 no longer ends such threads at exit")
def test_same_worker_left_to_interpreter_teardown_aborts():
    """The hazard is real here: without the launcher's exit, the same worker aborts (exit code -6)."""
    outcomes = [run_worker("teardown") for _ in range(2)]
    assert any(o.returncode == -6 and "terminate called without an active exception" in o.stderr
               for o in outcomes)  # fmt: skip


def test_distributed_flags_name_what_is_missing():
    with pytest.raises(SystemExit, match="missing RANK, MASTER_PORT"):
        train_distributed_cpu.distributed_flags({"WORLD_SIZE": "2", "MASTER_ADDR": "localhost"})
    flags = train_distributed_cpu.distributed_flags(
        {"RANK": "1", "WORLD_SIZE": "2", "MASTER_ADDR": "localhost", "MASTER_PORT": "29500"}
    )
    assert flags[flags.index("--distributed-rank") + 1] == "1"
    assert flags[flags.index("--distributed-world-size") + 1] == "2"
    assert "--cpu" in flags and flags[flags.index("--distributed-backend") + 1] == "gloo"
