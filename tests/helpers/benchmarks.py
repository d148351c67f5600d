"""The benchmarks' shared helpers, ``benchmarks/bench_common.py`` (a script folder), loaded once."""

import functools
import os
import sys

from . import cli

BENCHMARKS = os.path.join(cli.REPO, "benchmarks")


def load_script(name: str):
    """``benchmarks/NAME.py`` as a module named NAME."""
    return cli.load_script(os.path.join("benchmarks", f"{name}.py"))


@functools.lru_cache(maxsize=None)
def bench_common():
    return load_script("bench_common")


def dispatched_calls(prof) -> list:
    """``bench_common.dispatched_calls``: the aten ops a profiled run dispatched from Python, in order."""
    return bench_common().dispatched_calls(prof)


@functools.lru_cache(maxsize=None)
def bench_decoding():
    """``benchmarks/bench_decoding.py``, which imports ``bench_common`` as its sibling."""
    sys.modules.setdefault("bench_common", bench_common())
    return load_script("bench_decoding")
