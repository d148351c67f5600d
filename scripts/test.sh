#!/usr/bin/env bash
# Set up (with test tools), lint, and run the whole test suite. Extra arguments go to pytest.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup_env.sh --test
bash scripts/setup_wordnet.sh
# shellcheck disable=SC1091
. .venv/bin/activate
ruff check .
ruff format --check .
python -m pytest -q "$@"
