#!/usr/bin/env bash
# The main job: set up, pre-train a tiny UniLMv2 (AE + PAR) on the embedded Austen corpus, fine-tune it with
# pseudo-masked s2s-ft on demo pairs from the same text, generate with beam search and print ROUGE. CPU only.
# Output goes to ${WORK:-work/demo}.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup_env.sh
# shellcheck disable=SC1091
. .venv/bin/activate
WORK=${WORK:-work/demo}
bash examples/unilmv2_pretrain/demo.sh "$WORK"
bash examples/s2s_ft/demo_austen.sh "$WORK"
