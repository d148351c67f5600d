"""Importing the plugin leaves the program's root logger as it was; importing fairseq 0.12 alone does not
(the reason the plugin guards its imports). Each case runs in a fresh interpreter: imports happen once."""

import json
import logging
import os
import subprocess
import sys

import pytest

from tests.helpers.cli import REPO
from unilm_fairseq.import_logging import FAIRSEQ_FORMAT, root_logger_kept, running_fairseq_command

# prints the root logger's level and handler count after the imports in IMPORT; SETUP runs first
PROBE = """
import json, logging, os
exec(os.environ["SETUP"])
exec(os.environ["IMPORT"])
root = logging.getLogger()
formats = [getattr(h.formatter, "_fmt", None) for h in root.handlers]
print(json.dumps({"level": root.level, "handlers": len(root.handlers), "formats": formats}))
"""

# what fairseq-generate looks like to the plugin: its console script's name (argv[0] is a path)
AS_GENERATE = "import sys; sys.argv[0] = '/venv/bin/fairseq-generate'"


def root_after(imports, setup="", formats=False, **env_vars):
    env = {key: value for key, value in os.environ.items() if key != "LOGLEVEL"}
    env.update(PYTHONPATH=REPO, IMPORT=imports, SETUP=setup, **env_vars)
    proc = subprocess.run([sys.executable, "-c", PROBE], env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    found = json.loads(proc.stdout.strip().splitlines()[-1])
    return found if formats else {key: found[key] for key in ("level", "handlers")}


def test_fairseq_alone_configures_the_root_logger():
    """The premise: if a fairseq release stops doing this, the guard has nothing left to undo."""
    assert root_after("import fairseq") == {"level": logging.DEBUG, "handlers": 1}


def test_the_plugin_leaves_an_unconfigured_program_unconfigured():
    assert root_after("import unilm_fairseq") == {"level": logging.WARNING, "handlers": 0}
    # and the program's own basicConfig, after the import, takes effect
    configured = root_after("import unilm_fairseq; logging.basicConfig(level=logging.INFO)")
    assert configured == {"level": logging.INFO, "handlers": 1}


def test_a_configuration_made_before_the_import_is_kept():
    setup = (
        "logging.getLogger().addHandler(logging.NullHandler()); logging.getLogger().setLevel(logging.ERROR)"
    )
    assert root_after("import unilm_fairseq", setup) == {"level": logging.ERROR, "handlers": 1}


def test_fairseq_imported_first_keeps_its_set_up():
    assert root_after("import fairseq; import unilm_fairseq") == {"level": logging.DEBUG, "handlers": 1}


def test_root_logger_kept_undoes_level_and_added_handlers_only():
    root = logging.getLogger()
    level, before = root.level, list(root.handlers)
    mine = logging.NullHandler()
    try:
        with root_logger_kept():
            root.addHandler(mine)
            root.setLevel(logging.DEBUG)
        assert root.level == level and root.handlers == before and mine not in root.handlers
    finally:
        root.removeHandler(mine)
        root.setLevel(level)


@pytest.mark.parametrize(
    "argv0, main_module, expected",
    [
        ("/venv/bin/fairseq-generate", "", True),
        ("fairseq-interactive", "", True),
        ("/site/fairseq_cli/validate.py", "fairseq_cli.validate", True),  # python -m fairseq_cli.validate
        ("/venv/bin/pytest", "", False),
        ("my_script.py", "", False),
        ("", "", False),
    ],
)
def test_running_fairseq_command(argv0, main_module, expected):
    assert running_fairseq_command(argv0, main_module) is expected


def test_a_fairseq_command_gets_the_logging_it_asked_for():
    """fairseq-generate imports fairseq (which sets DEBUG and logging's plain format), then the plugin through
    --user-dir, then calls basicConfig too late: the plugin gives the handler fairseq's format and INFO."""
    found = root_after("import fairseq; import unilm_fairseq", AS_GENERATE, formats=True)
    assert found == {"level": logging.INFO, "handlers": 1, "formats": [FAIRSEQ_FORMAT]}
    # LOGLEVEL chooses the level, as it does for fairseq's commands
    quiet = root_after("import fairseq; import unilm_fairseq", AS_GENERATE, LOGLEVEL="warning")
    assert quiet == {"level": logging.WARNING, "handlers": 1}


def test_a_fairseq_command_that_configured_logging_first_keeps_it():
    """fairseq-train calls basicConfig before it imports fairseq: its set-up is not touched."""
    setup = AS_GENERATE + "; logging.basicConfig(format='%(message)s', level=logging.DEBUG)"
    found = root_after("import fairseq; import unilm_fairseq", setup, formats=True)
    assert found == {"level": logging.DEBUG, "handlers": 1, "formats": ["%(message)s"]}
