"""unilm_fairseq: the UniLM family (UniLM v1, UniLMv2, s2s-ft) and PALM as a fairseq plugin.

Load with ``--user-dir unilm_fairseq``. fairseq imports ``tasks/`` and
``models/`` of a user dir itself; the criteria and the ``--bpe wordpiece``
encoder are imported here so they are registered too. Importing the package
also allow-lists the classes fairseq checkpoints pickle, so the safe
``weights_only`` loader stays on, and silences the few warnings fairseq 0.12
raises through Hydra and torch on every command (``known_warnings.py`` lists
each one and why), and stops fairseq's batch prefetching thread at exit, so a
run that ends inside an epoch does not abort in teardown (``clean_exit.py``),
and keeps the program's logging set-up as it was, or, in fairseq's own commands, as they
asked for it (``import_logging.py``).
:class:`UniLMHubInterface` (also named ``UniLMModel``) and :class:`PALMHubInterface`
are the Python APIs (``UniLMModel.from_pretrained(...).generate(...)``).
"""

from .import_logging import fairseq_command_logging_restored, root_logger_kept

with root_logger_kept():  # fairseq 0.12 configures the root logger when imported (import_logging.py)
    from .checkpoint.safe_loading import allow_fairseq_checkpoints
    from .clean_exit import stop_batch_prefetching_at_exit
    from .known_warnings import quiet_known_warnings

    allow_fairseq_checkpoints()
    quiet_known_warnings()
    stop_batch_prefetching_at_exit()

    from . import criterions, encoders, models, scoring, tasks  # noqa: F401  (registration)
    from .hub import PALMHubInterface, UniLMHubInterface, UniLMModel  # the Python APIs

fairseq_command_logging_restored()  # fairseq-generate & co. configure logging after importing fairseq

__all__ = ["PALMHubInterface", "UniLMHubInterface", "UniLMModel"]

__version__ = "0.1.0"
