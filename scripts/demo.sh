#!/usr/bin/env bash
# The main job: set up, then pre-train a tiny UniLMv2 (AE + PAR) on the embedded Austen corpus on CPU.
# Output goes to ${WORK:-work/demo}.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup_env.sh
# shellcheck disable=SC1091
. .venv/bin/activate
bash examples/unilmv2_pretrain/demo.sh "${WORK:-work/demo}"
