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

fairseq's ``generate``, ``interactive``, ``validate``, ``preprocess`` and ``eval_lm`` commands are such
programs: they import fairseq first and call ``logging.basicConfig`` after, which then does nothing. So they
print ``DEBUG:hydra...`` records and lose fairseq's ``date | LEVEL | name | message`` lines. In those commands
(they import the plugin through ``--user-dir``), :func:`fairseq_command_logging_restored` gives the handler
that fairseq's import left the format and level (``LOGLEVEL``, default INFO) the command asked for, as
``fairseq-train`` has them; the records stay on the stream they were on (stderr).
"""

import contextlib
import logging
import os
import sys
from typing import Iterator, Optional

# what every fairseq_cli command passes to logging.basicConfig
FAIRSEQ_FORMAT = "%(asctime)s | %(levelname)s | %(name)s | %(message)s"
FAIRSEQ_DATE_FORMAT = "%Y-%m-%d %H:%M:%S"


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


def running_fairseq_command(argv0: Optional[str] = None, main_module: Optional[str] = None) -> bool:
    """Whether this process is one of fairseq's commands: its console script (``fairseq-generate``) or its
    module (``python -m fairseq_cli.generate``). The arguments default to this process's."""
    if argv0 is None:
        argv0 = sys.argv[0] if sys.argv else ""
    if main_module is None:
        spec = getattr(sys.modules.get("__main__"), "__spec__", None)
        main_module = spec.name if spec is not None else ""
    return os.path.basename(argv0).startswith("fairseq-") or main_module.startswith("fairseq_cli.")


def left_by_fairseq_import(root: logging.Logger) -> Optional[logging.Handler]:
    """The handler of ``logging.basicConfig(level=logging.DEBUG)`` that importing fairseq leaves when nothing
    configured logging before: the root's only handler, a stream handler with logging's default format, at
    level DEBUG. None for any other set-up."""
    if root.level != logging.DEBUG or len(root.handlers) != 1:
        return None
    handler = root.handlers[0]
    plain = type(handler) is logging.StreamHandler and handler.formatter is not None
    return handler if plain and handler.formatter._fmt == logging.BASIC_FORMAT else None


def fairseq_command_logging_restored() -> bool:
    """In a fairseq command whose own ``basicConfig`` came too late, give the root logger the format and
    level that call asked for. Returns whether it changed anything."""
    root = logging.getLogger()
    handler = left_by_fairseq_import(root)
    if handler is None or not running_fairseq_command():
        return False
    handler.setFormatter(logging.Formatter(FAIRSEQ_FORMAT, datefmt=FAIRSEQ_DATE_FORMAT))
    root.setLevel(os.environ.get("LOGLEVEL", "INFO").upper())
    return True
