#!/usr/bin/env python
"""Run ``fairseq-train`` under ``torchrun`` on CPU (gloo), one process per worker.

fairseq 0.12 detects torchrun by dividing by ``torch.cuda.device_count()``,
which is zero on CPU, and its default ``pytorch_ddp`` backend passes GPU
device ids. This launcher reads torchrun's environment and hands fairseq the
explicit flags instead::

    torchrun --standalone --nproc_per_node 2 scripts/train_distributed_cpu.py \\
        DATA --user-dir unilm_fairseq --task pmlm --arch unilmv2_tiny --criterion ae_par ...

Every other argument goes to ``fairseq-train`` unchanged.
"""

import atexit
import os
import sys

from fairseq_cli.train import cli_main  # first: importing it sets up fairseq's log format


def distributed_flags(environ) -> list:
    missing = [k for k in ("RANK", "WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT") if k not in environ]
    if missing:
        raise SystemExit(
            f"missing {', '.join(missing)}: start this script with torchrun, e.g. "
            "torchrun --standalone --nproc_per_node 2 scripts/train_distributed_cpu.py DATA ..."
        )
    return [
        "--cpu",
        "--distributed-world-size", environ["WORLD_SIZE"],
        "--distributed-rank", environ["RANK"],
        "--distributed-init-method", "env://",
        "--distributed-no-spawn",
        "--distributed-backend", "gloo",
        "--device-id", "0",
        "--ddp-backend", "legacy_ddp",
    ]  # fmt: skip


def exit_skipping_teardown() -> None:
    """Ends a finished worker (exit 0) once ``atexit`` handlers ran and output is flushed, before teardown.

    fairseq ends training with a gloo barrier. Gloo finishes that barrier on its own worker thread, which
    also drops the barrier's hold on earlier all-reduces, and so the Python objects of their gradient
    tensors, under the interpreter lock. When the main thread has begun interpreter teardown by then,
    Python 3.11 ends a thread that asks for the lock with ``pthread_exit``, and unwinding a C++ destructor
    that way aborts the process ("terminate called without an active exception", exit code -6) after
    training finished and its checkpoints were written; torchrun then fails the run. A core dump of one
    such abort showed exactly this stack (``ProcessGroupGloo::runLoop`` > ``~AsyncBarrierWork`` >
    ``gil_scoped_acquire`` > ``pthread_exit`` > ``std::terminate``). The handlers that fairseq and logging
    register (closing TensorBoard writers, flushing log files) still run here; only teardown is skipped.
    """
    atexit._run_exitfuncs()
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0)


def main():
    if any(arg in ("-h", "--help") for arg in sys.argv[1:]):
        print(__doc__)
        print("fairseq-train's own options follow.\n")
        cli_main()  # fairseq-train's --help, which exits
    sys.argv = [sys.argv[0], *sys.argv[1:], *distributed_flags(os.environ)]
    cli_main()  # ends with a barrier of all workers
    exit_skipping_teardown()


if __name__ == "__main__":
    main()
