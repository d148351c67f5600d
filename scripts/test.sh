#!/usr/bin/env bash
# Set up (with test tools), lint, and run the whole test suite. Extra arguments go to pytest.
#
#   bash scripts/test.sh [pytest arguments]     e.g. bash scripts/test.sh tests/unit -x
#
# Set-up: scripts/setup_env.sh --test (./.venv with torch, fairseq-fixed and the test extras) and
# scripts/setup_wordnet.sh; then ruff check, ruff format --check and pytest -q, with the test files spread
# over PYTEST_WORKERS processes (pytest-xdist; default auto, one per CPU; each file runs whole in one, so
# its module fixtures are built once; in the order collected, so the long command-line files under tests/cli
# start first and the many short files fill the end). Serially: PYTEST_WORKERS=0, or pass -n 0.
case "${1:-}" in -h | --help) awk 'NR > 1 && !/^#/ {exit} NR > 1 {sub(/^# ?/, ""); print}' "$0"; exit 0 ;; esac  # usage, before any work
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup_env.sh --test
bash scripts/setup_wordnet.sh
# shellcheck disable=SC1091
. "${VENV:-.venv}/bin/activate"  # the venv the set-up made (VENV, as for setup_env.sh)
ruff check .
ruff format --check .
python -m pytest -q -n "${PYTEST_WORKERS:-auto}" --dist loadfile --no-loadscope-reorder "$@"
