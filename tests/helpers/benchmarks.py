"""The benchmarks' shared helpers, ``benchmarks/bench_common.py`` (a script folder), loaded once."""

import functools
import importlib.util
import os
import sys

BENCHMARKS = os.path.join(
    os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))), "benchmarks"
)


def load_script(name: str):
    """``benchmarks/NAME.py`` as a module named NAME."""
    spec = importlib.util.spec_from_file_location(name, os.path.join(BENCHMARKS, f"{name}.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


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
