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

from fairseq_cli.train import cli_main


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


def main():
    if any(arg in ("-h", "--help") for arg in sys.argv[1:]):
        print(__doc__)
        print("fairseq-train's own options follow.\n")
        cli_main()  # fairseq-train's --help, which exits
    sys.argv = [sys.argv[0], *sys.argv[1:], *distributed_flags(os.environ)]
    cli_main()


if __name__ == "__main__":
    main()
