"""Importing the plugin leaves the program's root logger as it was; importing fairseq 0.12 alone does not
(the reason the plugin guards its imports). Each case runs in a fresh interpreter: imports happen once."""

import json
import logging
import os
import subprocess
import sys

from tests.helpers.cli import REPO
from unilm_fairseq.import_logging import root_logger_kept

# prints the root logger's level and handler count after the imports in IMPORT; SETUP runs first
PROBE = """
import json, logging, os
exec(os.environ["SETUP"])
exec(os.environ["IMPORT"])
root = logging.getLogger()
print(json.dumps({"level": root.level, "handlers": len(root.handlers)}))
"""


def root_after(imports, setup=""):
    env = dict(os.environ, PYTHONPATH=REPO, IMPORT=imports, SETUP=setup)
    proc = subprocess.run([sys.executable, "-c", PROBE], env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout.strip().splitlines()[-1])


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
