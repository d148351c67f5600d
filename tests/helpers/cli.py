"""Running this environment's console scripts (``fairseq-train`` ...), binarizing small corpora for them, and
reading their training records."""

import importlib.util
import logging
import os
import re
import shutil
import subprocess
import sys

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BIN = os.path.dirname(sys.executable)
# fairseq's console scripts and the modules behind them (its setup.py entry points)
FAIRSEQ_SCRIPTS = ("preprocess", "train", "hydra_train", "generate", "interactive", "validate", "eval_lm",
                   "score")  # fmt: skip
FAIRSEQ_MODULES = {f"fairseq-{name.replace('_', '-')}": f"fairseq_cli.{name}" for name in FAIRSEQ_SCRIPTS}


def command(name):
    """The command line that runs the console script ``name`` with the tests' interpreter.

    A script beside ``sys.executable`` (a virtual environment, activated or not) runs as it is; where the
    packages were installed elsewhere (``pip --target``, a user site), fairseq's scripts run as their
    modules under this interpreter, and any other script is found on ``PATH`` as a shell would find it.
    """
    if os.path.isabs(name):
        return [name]
    if name in ("python", "python3"):
        return [sys.executable]
    beside = os.path.join(BIN, name)
    if os.path.isfile(beside) and os.access(beside, os.X_OK):
        return [beside]
    if name in FAIRSEQ_MODULES:
        return [sys.executable, "-m", FAIRSEQ_MODULES[name]]
    found = shutil.which(name)
    if found is None:
        raise FileNotFoundError(f"{name}: not beside {sys.executable} and not on PATH")
    return [found]


def run_cli(args, cwd=REPO, env=None, check=True, timeout=900, input_text=None):
    """Run a console script of this environment (``fairseq-train`` ...) and return the process."""
    exe = command(args[0])
    # this checkout's plugin first: scripts/ and console scripts would otherwise import an installed copy
    path = os.pathsep.join(p for p in (REPO, os.environ.get("PYTHONPATH")) if p)
    full_env = dict(os.environ, PYTHONWARNINGS="ignore", OMP_NUM_THREADS="1", PYTHONPATH=path)
    full_env.update(env or {})
    proc = subprocess.run(
        [*exe, *args[1:]],
        cwd=cwd,
        env=full_env,
        capture_output=True,
        text=True,
        timeout=timeout,
        input=input_text,
    )
    if check and proc.returncode != 0:
        raise AssertionError(
            f"{' '.join(args)} exited {proc.returncode}\nSTDOUT:\n{proc.stdout[-4000:]}\n"
            f"STDERR:\n{proc.stderr[-6000:]}"
        )
    return proc


def load_script(path, name=None):
    """The Python script at ``path`` (relative to the repository root) as a module named ``name`` (its file
    name without ``.py`` by default), imported without running its ``__main__`` block."""
    name = name or os.path.splitext(os.path.basename(path))[0]
    spec = importlib.util.spec_from_file_location(name, os.path.join(REPO, path))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def preprocess(args):
    """``fairseq-preprocess ARGS`` in this process: the console script's parser and ``main``, for tests that
    need binarized data but whose subject is not the binarizer.

    A new process spends about 5 s importing torch and fairseq before it binarizes a few lines; the suite
    binarizes some forty corpora. The recipes, the main job and the end-to-end journeys still run the console
    script itself. A relative ``--user-dir`` is taken from the repository root, where :func:`run_cli` runs.
    ``main`` adds a log file handler to its logger on every call (and importing its module may configure the
    root logger); both are put back as they were, so nothing leaks into later tests.
    """
    root = logging.getLogger()
    root_handlers, root_level = list(root.handlers), root.level
    from fairseq import options
    from fairseq_cli import preprocess as cli

    parsed = options.get_preprocessing_parser().parse_args(args)
    if parsed.user_dir:
        parsed.user_dir = os.path.join(REPO, parsed.user_dir)
    kept = list(cli.logger.handlers)
    try:
        cli.main(parsed)
    finally:
        for handler in cli.logger.handlers[len(kept) :]:
            handler.close()
        cli.logger.handlers[:] = kept
        root.handlers[:] = root_handlers
        root.setLevel(root_level)


def train_records(stdout):
    return [
        {k: float(v) for k, v in re.findall(r"(\w+)=([-\d.e]+)", line)}
        for line in stdout.splitlines()
        if "| train_inner |" in line
        or "[train_inner]" in line  # fairseq-train's and fairseq-hydra-train's logs
    ]


def binarize(work, lines):
    """``lines`` (one sentence per line, empty lines between documents) binarized into ``work/bin``."""
    raw = work / "train.txt"
    raw.write_text("\n".join(lines) + "\n")
    preprocess(["--only-source", "--trainpref", str(raw), "--destdir", str(work / "bin"),
                "--workers", "1"])  # fmt: skip
    return work / "bin"


def binarize_austen(work):
    """Six documents of the embedded corpus, sentencepiece-encoded (a 1000-piece vocabulary) into
    ``work/text`` and binarized with one held-out document into ``work/bin``; returns ``work``."""
    run_cli(["python", os.path.join(REPO, "scripts", "prepare_corpus.py"), "--out", str(work / "text"),
             "--max-docs", "6", "--valid-docs", "1", "--vocab-size", "1000"])  # fmt: skip
    preprocess(["--only-source", "--trainpref", str(work / "text" / "train.spm"),
                "--validpref", str(work / "text" / "valid.spm"), "--destdir", str(work / "bin"),
                "--workers", "1"])  # fmt: skip
    return work


def binarize_pairs(work, pairs, valid=None):
    """``(source, target)`` line pairs binarized into ``work/bin`` with one joined dictionary (``valid``: the
    validation pairs, by default the training ones)."""
    for split, rows in (("train", pairs), ("valid", valid or pairs)):
        for side, index in (("src", 0), ("tgt", 1)):
            (work / f"{split}.{side}").write_text("".join(row[index] + "\n" for row in rows))
    preprocess(["--source-lang", "src", "--target-lang", "tgt", "--joined-dictionary",
                "--trainpref", str(work / "train"), "--validpref", str(work / "valid"),
                "--destdir", str(work / "bin"), "--workers", "1"])  # fmt: skip
    return work / "bin"
