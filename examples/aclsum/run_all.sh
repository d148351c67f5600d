#!/usr/bin/env bash
# The rows of docs/results.md: ACLSum test ROUGE for each s2s-ft method (causal, masked, pseudo_masked)
# from the pre-trained MiniLM and from random initialisation, plus pseudo-masked fine-tuning after
# continued PMLM pre-training, all with the same fine-tuning flags (examples/s2s_ft/finetune.sh defaults
# unless overridden in the environment), and the extractive baselines. Each row's wall-clock time is
# recorded. Rows already finished (their scores.json exists) are not run again.
#
#   bash examples/aclsum/run_all.sh [WORK_DIR] [ROW ...]
#
# ROW is METHOD-INIT (e.g. masked-random), METHOD-INIT-uN (the same with N updates, validating every N/4:
# the budget curve) or pmlm; default: the seven rows and the curve points u100, u400 and u1200 of
# pseudo_masked-pretrained. PARALLEL=2 runs two rows at a time with one thread each (same total work on 2
# cores; the times then describe that setting).
# Afterwards: python examples/aclsum/results_table.py WORK_DIR > docs/results-table.md
case "${1:-}" in -h | --help) awk 'NR > 1 && !/^#/ {exit} NR > 1 {sub(/^# ?/, ""); print}' "$0"; exit 0 ;; esac  # usage, before any work
set -euo pipefail
REPO=$(cd "$(dirname "$0")/../.." && pwd)
WORK=${1:-work/aclsum-results}
shift $(( $# > 0 ? 1 : 0 ))
ROWS=("$@")
if [ ${#ROWS[@]} -eq 0 ]; then
  ROWS=(pseudo_masked-pretrained masked-pretrained causal-pretrained pseudo_masked-random masked-random
        causal-random pmlm pseudo_masked-pretrained-u100 pseudo_masked-pretrained-u400
        pseudo_masked-pretrained-u1200)
fi
: "${PARALLEL:=1}"
mkdir -p "$WORK"
# shellcheck source=examples/aclsum/common.sh
. "$REPO/examples/aclsum/common.sh"
: "${MAX_SRC:=$(main_job_setting MAX_SRC)}"
export MAX_SRC
aclsum_require_inputs
if [ ! -f "$WORK/data/test.tgt" ]; then
  python "$REPO/scripts/prepare_aclsum.py" --output "$WORK/data" --wordpiece-vocab "$MODEL_DIR/vocab.txt" \
    --max-source-tokens $((MAX_SRC - 2))
fi

run_row() {
  local row=$1 out=$WORK/$1 start
  if [ -f "$out/scores.json" ] || [ -f "$out/run/scores.json" ]; then
    echo "== $row: done already"
    return
  fi
  mkdir -p "$out"
  start=$(date +%s)
  if [ "$row" = pmlm ]; then
    bash "$REPO/examples/aclsum/continue_pmlm.sh" "$out" > "$out/log.txt" 2>&1 || {
      echo "== $row failed: $out/log.txt" >&2
      return 1
    }
  else
    (
      spec=$row
      if [[ $row =~ ^(.*)-u([0-9]+)$ ]]; then
        spec=${BASH_REMATCH[1]}
        # validation 4 times in the run, at least every update
        export UPDATES=${BASH_REMATCH[2]} VALID_EVERY=$(( BASH_REMATCH[2] / 4 > 0 ? BASH_REMATCH[2] / 4 : 1 ))
      fi
      METHOD=${spec%-*} INIT=${spec#*-} bash "$REPO/examples/s2s_ft/finetune.sh" "$WORK/data" "$out" \
        > "$out/log.txt" 2>&1
    ) || {
      echo "== $row failed: $out/log.txt" >&2
      return 1
    }
  fi
  echo "$(( $(date +%s) - start ))" > "$out/seconds.txt"
  echo "== $row: $(cat "$out/seconds.txt") s"
}

# a failed row is named (its log) and left out of the table; the others still run; the exit status is 1
failed=0
if [ "$PARALLEL" -gt 1 ]; then
  export OMP_NUM_THREADS=1
  pids=()
  for row in "${ROWS[@]}"; do
    while [ "$(jobs -rp | wc -l)" -ge "$PARALLEL" ]; do sleep 5; done
    run_row "$row" &
    pids+=($!)
  done
  for pid in "${pids[@]}"; do wait "$pid" || failed=$(( failed + 1 )); done
else
  for row in "${ROWS[@]}"; do run_row "$row" || failed=$(( failed + 1 )); done
fi
python "$REPO/examples/aclsum/results_table.py" "$WORK"
if [ "$failed" -gt 0 ]; then
  echo "error: $failed of ${#ROWS[@]} rows failed (each named above with its log)" >&2
  exit 1
fi
