#!/usr/bin/env bash
# The main job: set up, then fine-tune a real pre-trained MiniLM into a summarizer of ACL papers (ACLSum's
# expert aspect summaries) with pseudo-masked s2s-ft on the CPU, generate the test set with beam search,
# and print ROUGE beside the lead, positional and oracle baselines, with five summaries beside their
# references. Output goes to ${WORK:-work/aclsum} (the default in the repository, a relative WORK in the
# caller's folder); settings: examples/aclsum/demo.sh and
# examples/s2s_ft/finetune.sh (e.g. UPDATES=..., MINUTES=...).
set -euo pipefail
case "${1:-}" in -h | --help) sed -n '2,7p' "$0"; exit 0 ;; esac  # usage, before any work
case ${WORK:-} in "" | /*) ;; *) WORK=$PWD/$WORK ;; esac  # a relative WORK is the caller's
cd "$(dirname "$0")/.."
bash scripts/setup_env.sh --demo
# shellcheck disable=SC1091
. "${VENV:-.venv}/bin/activate"
bash examples/aclsum/demo.sh "${WORK:-work/aclsum}"
