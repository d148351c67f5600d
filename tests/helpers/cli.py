"""Running this environment's console scripts (``fairseq-train`` ...) and reading their training records."""

import os
import re
import subprocess
import sys

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BIN = os.path.dirname(sys.executable)


def run_cli(args, cwd=REPO, env=None, check=True, timeout=900, input_text=None):
    """Run a console script of this environment (``fairseq-train`` ...) and return the process."""
    exe = args[0] if os.path.isabs(args[0]) else os.path.join(BIN, args[0])
    full_env = dict(os.environ, PYTHONWARNINGS="ignore", OMP_NUM_THREADS="1")
    full_env.update(env or {})
    proc = subprocess.run(
        [exe, *args[1:]],
        cwd=cwd,
        env=full_env,
        capture_output=True,
        text=True,
        timeout=timeout,
        input=input_text,
    )
    if check and proc.returncode != 0:
        raise AssertionError(
            f"{' '.join(args)} exited {proc.returncode}\nSTDOUT:\n{proc.stdout[-4000:]}\n"
            f"STDERR:\n{proc.stderr[-6000:]}"
        )
    return proc


def train_records(stdout):
    return [
        {k: float(v) for k, v in re.findall(r"(\w+)=([-\d.e]+)", line)}
        for line in stdout.splitlines()
        if "| train_inner |" in line
    ]
