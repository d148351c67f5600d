"""fairseq commands end without an abort: the batch prefetching thread is stopped before interpreter teardown.

fairseq 0.12 reads batches ahead on a daemon thread (``fairseq.data.iterators.BackgroundConsumer``, up to
``--data-buffer-size`` batches). When a run stops inside an epoch (``--max-update``, ``--max-valid-steps``,
``--stop-time-hours``), that thread is still building batches while the main thread exits. Building a batch
runs torch operators, which release the interpreter lock and take it back in a C++ destructor. Python 3.11
ends a thread that asks for the lock once teardown has begun with ``pthread_exit``, and unwinding a C++
destructor that way aborts the process: "terminate called without an active exception", exit code 134,
after the run's work and checkpoints were done. Shell recipes under ``set -e`` then fail a finished run.

:func:`stop_batch_prefetching` runs at exit, before teardown: it lets each live prefetching thread finish
the batch it is building, stop there, and end, taking the queued batches out of its way. Registered when
the plugin loads (``atexit`` runs handlers last-registered first, so this one runs before torch's and
fairseq's own).
"""

import atexit
import logging
import queue
import threading
import time

logger = logging.getLogger(__name__)

STOP_TIMEOUT_S = 30.0  # the longest wait for one thread to finish its batch: then exit goes on as before


def _prefetching_threads():
    from fairseq.data.iterators import BackgroundConsumer

    # the two attributes it reads and writes are fairseq 0.12's; another version's thread is left alone
    return [
        t
        for t in threading.enumerate()
        if isinstance(t, BackgroundConsumer)
        and t.is_alive()
        and hasattr(t, "_max_len")
        and hasattr(t, "_queue")
    ]


def stop_batch_prefetching(timeout: float = STOP_TIMEOUT_S) -> int:
    """Stops fairseq's batch prefetching threads after the batch each is building.

    Returns:
        how many threads were stopped (a thread that outlasts ``timeout`` is left running and logged).
    """
    stopped = 0
    for thread in _prefetching_threads():
        thread._max_len = 0  # its loop ends after its next queue.put ("count >= max_len")
        deadline = time.monotonic() + timeout
        while thread.is_alive() and time.monotonic() < deadline:
            try:  # room in its queue, for the batch in hand and then the end marker
                while True:
                    thread._queue.get_nowait()
            except queue.Empty:
                pass
            thread.join(0.05)
        if thread.is_alive():
            logger.warning("a batch prefetching thread did not stop within %.0f s", timeout)
        else:
            stopped += 1
    return stopped


def stop_batch_prefetching_at_exit() -> None:
    atexit.register(stop_batch_prefetching)
