"""The benchmarks' shared helpers, ``benchmarks/bench_common.py`` (a script folder), loaded once."""

import functools
import importlib.util
import os

BENCHMARKS = os.path.join(
    os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))), "benchmarks"
)


@functools.lru_cache(maxsize=None)
def bench_common():
    spec = importlib.util.spec_from_file_location("bench_common", os.path.join(BENCHMARKS, "bench_common.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def dispatched_calls(prof) -> list:
    """``bench_common.dispatched_calls``: the aten ops a profiled run dispatched from Python, in order."""
    return bench_common().dispatched_calls(prof)
