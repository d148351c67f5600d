"""Importing the plugin leaves the program's logging set-up as it was.

fairseq 0.12 configures the root logger while it is imported: two text-to-speech tasks call
``logging.basicConfig`` with fairseq's format, and a wav2vec 2.0 model calls it with level DEBUG. fairseq's
own commands configure logging before they import fairseq, so for them those calls do nothing. A Python
program that imports fairseq, as the Python API (``UniLMModel.from_pretrained(...).generate(...)``) does,
instead gets a stderr handler at level DEBUG: every library's debug and info records, four of fairseq's
batching records for each ``generate`` call among them, and its own later ``logging.basicConfig`` silently
ignored.

:func:`root_logger_kept` wraps the plugin's imports: whatever level and handlers the root logger had before,
it has after. A program that configured logging first keeps its configuration (``basicConfig`` does nothing
then anyway); one that did not gets Python's default (warnings and errors on stderr), and its own
``basicConfig`` works. A program that imported fairseq before the plugin has fairseq's set-up already, and
keeps it.
"""

import contextlib
import logging
from typing import Iterator


@contextlib.contextmanager
def root_logger_kept() -> Iterator[None]:
    """Undo what the enclosed imports did to the root logger: its level and any handler they added."""
    root = logging.getLogger()
    level, handlers = root.level, list(root.handlers)
    try:
        yield
    finally:
        for handler in [h for h in root.handlers if h not in handlers]:
            root.removeHandler(handler)
        root.setLevel(level)
