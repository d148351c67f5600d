"""Recipes run with every external tool stubbed: each stub logs its command line, so a test sees every
command a recipe runs without running fairseq (tests/unit/test_recipe_commands.py's golden files, and
tests/unit/test_recipes.py's reading of a recipe's fairseq-train command)."""

import json
import os
import subprocess
import sys
from typing import Callable, Dict, NamedTuple, Optional, Tuple, Union

from .cli import REPO
from .squad import squad_json, vocabulary

# files the scenarios make: {path under TMP: content}; an int N is N lines of "a b c" (1,000 training lines
# make the epochs-into-updates count round up); a function writes the file at the path it is given
Files = Dict[str, Union[str, int, Callable[[str], None]]]


def glue_raw(*inputs: str) -> Files:
    """What scripts/prepare_glue.py writes: WORK/raw/{train,valid}.INPUT, 40 examples."""
    return {f"work/raw/{split}.{name}": 40 for split in ("train", "valid") for name in inputs}


class Scenario(NamedTuple):
    recipe: str
    name: str = ""  # suffix of the golden file when a recipe runs in more than one configuration
    args: Tuple[str, ...] = ()  # "{TMP}" is the scenario's temporary folder
    env: Dict[str, str] = {}  # "{TMP}" too
    files: Files = {}
    cwd: str = "tmp"  # "tmp" or "repo"


# ------------------------------------------------------------------------------------------------- stubs

LOG_LINE = r"""line=$(printf '%s' "$TOOL"; for arg in "$@"; do printf ' %q' "$arg"; done)
printf '%s\n' "$line" >> "$RECIPE_COMMANDS_LOG"
"""
# what the recipes look for in fairseq's output (grep under pipefail, the validation line in the order the
# ae_par criterion logs it, the training time)
OUTPUT = r"""printf 'S-0\tstub\nT-0\tstub\nH-0\t-0.1\tstub\nD-0\t-0.1\tstub\n'
echo "stub | valid on 'valid' subset | ae_loss 1.1 | ae_acc 1.2 | par_loss 1.3 | par_acc 1.4 | num_updates 10"
echo "stub | done training in 1.0 seconds | train_inner | initialised | Translated 1 sentences | Error"
"""
# fairseq-train makes its --save-dir with checkpoint_last.pt and checkpoint_best.pt (which later stages decode
# or start from) and, with --save-interval-updates N, checkpoint_1_N.pt
SAVE_DIR = r"""prev="" save="" every=""
for arg in "$@"; do
  case $prev in --save-dir) save=$arg ;; --save-interval-updates) every=$arg ;; esac
  prev=$arg
done
if [ -n "$save" ]; then
  mkdir -p "$save" && touch "$save/checkpoint_last.pt" "$save/checkpoint_best.pt"
  if [ -n "$every" ]; then touch "$save/checkpoint_1_$every.pt"; fi
fi
"""
FAIRSEQ_TOOLS = (
    "fairseq-train",
    "fairseq-generate",
    "fairseq-preprocess",
    "fairseq-validate",
    "fairseq-hydra-train",
)


def write_stub(path: str, body: str) -> None:
    with open(path, "w", encoding="utf-8") as f:
        f.write("#!/usr/bin/env bash\n" + body)
    os.chmod(path, 0o755)


def make_stubs(folder: str) -> None:
    os.makedirs(folder)
    for tool in FAIRSEQ_TOOLS:
        save = SAVE_DIR if tool == "fairseq-train" else ""
        write_stub(os.path.join(folder, tool), f"TOOL={tool}\n{LOG_LINE}{save}{OUTPUT}")
    # python: a script file (NAME.py) is logged; anything else runs with the real interpreter, as does
    # scripts/recipe_config.py, which only reads a recipe's config (what it gives shows in the commands)
    python = f'case "${{1:-}}" in\n  *scripts/recipe_config.py) ;;\n  *.py)\n    TOOL=python\n{LOG_LINE}'
    python += '    echo "stub pairs"\n    exit 0 ;;\nesac\n'
    python += f'exec {sys.executable} "$@"\n'
    for name in ("python", "python3"):
        write_stub(os.path.join(folder, name), python)
    # ACLSum's recipes check that the aclsum package is installed: an empty stand-in
    os.makedirs(os.path.join(folder, "site", "aclsum"))
    open(os.path.join(folder, "site", "aclsum", "__init__.py"), "w").close()


def make_files(tmp: str, files: Files) -> None:
    for rel, content in files.items():
        path = os.path.join(tmp, rel)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        if rel.startswith("squad/"):  # a SQuAD release: the JSON files and a dictionary
            version = rel.split("/v")[1]
            with open(os.path.join(tmp, "squad", "dict.txt"), "w", encoding="utf-8") as f:
                f.write("\n".join(vocabulary()) + "\n")
            for split, seed in (("train", 1), ("dev", 2)):
                data = squad_json(10, seed, unanswerable_prob=0.3 if version == "2.0" else 0.0)
                with open(os.path.join(tmp, "squad", f"{split}-v{version}.json"), "w", encoding="utf-8") as f:
                    json.dump(data, f)
            continue
        if callable(content):
            content(path)
            continue
        with open(path, "w", encoding="utf-8") as f:
            f.write("a b c\n" * content if isinstance(content, int) else content)


def run_scenario(scenario: Scenario, tmp: str) -> str:
    """The stubs' log of a recipe's run: one line per command, <TMP> and <REPO> for the folders."""
    return run_scenario_with_console(scenario, tmp)[0]


def run_scenario_with_console(scenario: Scenario, tmp: str) -> Tuple[str, str]:
    """run_scenario's command log, and what the recipe printed on its standard output."""
    proc = run_scenario_process(scenario, tmp)
    assert proc.returncode == 0, f"{scenario.recipe} failed:\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}"
    with open(os.path.join(tmp, "commands.log"), encoding="utf-8") as f:
        text = f.read()
    text = text.replace(tmp, "<TMP>").replace(REPO, "<REPO>")
    assert text, f"{scenario.recipe}: no command ran"
    return text, proc.stdout


def run_scenario_process(
    scenario: Scenario, tmp: str, stub_bodies: Optional[Dict[str, str]] = None
) -> subprocess.CompletedProcess:
    """The recipe's run with the stand-in tools (``stub_bodies``: a tool's script replaced, to make it fail),
    its commands logged in ``tmp/commands.log``; whatever its exit status."""
    stubs = os.path.join(tmp, "stubs")
    make_stubs(stubs)
    for tool, body in (stub_bodies or {}).items():
        write_stub(os.path.join(stubs, tool), body)
    make_files(tmp, scenario.files)
    log = os.path.join(tmp, "commands.log")
    open(log, "w").close()
    fill = lambda value: value.replace("{TMP}", tmp)  # noqa: E731
    kept = ("HOME", "LANG", "LC_ALL", "TMPDIR")
    environ = {key: os.environ[key] for key in kept if key in os.environ}
    environ.update(
        PATH=f"{stubs}{os.pathsep}{os.environ['PATH']}",
        PYTHON=os.path.join(stubs, "python"),
        PYTHONPATH=f"{REPO}{os.pathsep}{os.path.join(stubs, 'site')}",
        RECIPE_COMMANDS_LOG=log,
        **{key: fill(value) for key, value in scenario.env.items()},
    )
    return subprocess.run(
        ["bash", os.path.join(REPO, scenario.recipe), *map(fill, scenario.args)],
        cwd=REPO if scenario.cwd == "repo" else tmp,
        env=environ,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=120,
    )
