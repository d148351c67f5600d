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

import os
import sys

import torch.distributed as dist
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


def release_process_groups() -> None:
    """Destroys the process groups while the interpreter is still whole.

    fairseq 0.12 keeps its global group in an attribute of ``get_global_group`` and never destroys it, so
    it lived until interpreter exit, whose teardown could abort a worker after training had finished
    ("terminate called without an active exception", exit code -6: 2 of 20 runs of two workers each on
    the loaded 2-core machine, 0 of 100 with the group released here first).
    """
    from fairseq.distributed import utils as distributed_utils

    if not dist.is_initialized():
        return
    if hasattr(distributed_utils.get_global_group, "_global_group"):
        del distributed_utils.get_global_group._global_group
    dist.destroy_process_group()


def main():
    if any(arg in ("-h", "--help") for arg in sys.argv[1:]):
        print(__doc__)
        print("fairseq-train's own options follow.\n")
        cli_main()  # fairseq-train's --help, which exits
    sys.argv = [sys.argv[0], *sys.argv[1:], *distributed_flags(os.environ)]
    cli_main()  # ends with a barrier of all workers
    release_process_groups()


if __name__ == "__main__":
    main()
