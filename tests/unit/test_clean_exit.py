"""A process that stops reading a fairseq epoch iterator while its prefetching thread is building batches
exits cleanly with the plugin loaded; without it, the same process aborts in teardown (the check can fail)."""

import os
import subprocess
import sys
import threading

import torch
from fairseq.data.iterators import BufferedIterator

from tests.helpers.cli import REPO
from unilm_fairseq.clean_exit import stop_batch_prefetching

# batches made of torch operators (which release the interpreter lock), each taking a while, so the
# prefetching thread is inside one when the main thread exits; PLUGIN=1 imports the plugin first
PROBE = """
import os, torch
if os.environ["PLUGIN"] == "1":
    import unilm_fairseq
from fairseq.data.iterators import BufferedIterator

class SlowBatches:
    def __len__(self):
        return 100
    def __iter__(self):
        for _ in range(100):
            a = torch.randn(400, 400)
            for _ in range(100):
                a = torch.tanh(a @ a)
            yield a

batches = BufferedIterator(10, SlowBatches())
next(batches)
print("read one batch", flush=True)
"""


def run_probe(plugin):
    env = dict(os.environ, PLUGIN=plugin, PYTHONPATH=REPO, OMP_NUM_THREADS="1")
    return subprocess.run([sys.executable, "-c", PROBE], env=env, capture_output=True, text=True, timeout=300)


def test_a_run_that_stops_inside_an_epoch_exits_cleanly_with_the_plugin():
    without = run_probe("0")
    assert without.returncode != 0 and "terminate called" in without.stderr, (
        without.returncode,
        without.stderr,
    )
    with_plugin = run_probe("1")
    assert with_plugin.returncode == 0, with_plugin.stderr[-2000:]
    assert with_plugin.stdout == "read one batch\n" and "terminate" not in with_plugin.stderr


def test_stopping_ends_each_prefetching_thread_after_its_batch():
    made = []

    def batches():
        for i in range(1000):
            made.append(i)
            yield torch.full((2,), i)

    class Batches:
        def __len__(self):
            return 1000

        def __iter__(self):
            return batches()

    iterator = BufferedIterator(3, Batches())
    assert int(next(iterator)[0]) == 0
    assert stop_batch_prefetching(timeout=10) == 1
    assert not any(t.is_alive() for t in threading.enumerate() if t is iterator._consumer)
    assert len(made) < 10  # it stopped, it did not read the epoch to its end
    assert stop_batch_prefetching(timeout=10) == 0  # nothing left to stop
