#!/usr/bin/env bash
# How much the main job's scores depend on its seed: the main job (examples/aclsum/demo.sh, every setting
# as there) once per seed, each in WORK_DIR/seedN, then one table of the seeds' ROUGE and validation NLL
# with their mean and standard deviation, beside a bootstrap interval over the test pairs
# (examples/aclsum/seeds_table.py). The seed is fairseq-train's --seed (finetune.sh's SEED): it decides
# the fine-tuning's batch order and dropout; the data, the starting weights and the decoding are the same
# in every run. A seed whose scores.json exists is not run again.
#
#   bash examples/aclsum/seeds.sh [WORK_DIR] [SEED ...]     default: work/aclsum-seeds, seeds 1 2 3 4 5
#
# Settings of demo.sh and finetune.sh (UPDATES, START, ...) apply to every seed.
case "${1:-}" in -h | --help) awk 'NR > 1 && !/^#/ {exit} NR > 1 {sub(/^# ?/, ""); print}' "$0"; exit 0 ;; esac  # usage, before any work
set -euo pipefail
REPO=$(cd "$(dirname "$0")/../.." && pwd)
WORK=${1:-work/aclsum-seeds}
shift $(( $# > 0 ? 1 : 0 ))
SEEDS=("$@")
if [ ${#SEEDS[@]} -eq 0 ]; then SEEDS=(1 2 3 4 5); fi
for seed in "${SEEDS[@]}"; do
  if ! [[ $seed =~ ^[0-9]+$ ]]; then
    echo "error: seed $seed is not a whole number" >&2
    exit 2
  fi
done
mkdir -p "$WORK"
for seed in "${SEEDS[@]}"; do
  out=$WORK/seed$seed
  if [ -f "$out/run/scores.json" ]; then
    echo "== seed $seed: done already ($out)"
    continue
  fi
  mkdir -p "$out"
  start=$(date +%s)
  echo "== seed $seed: the main job in $out (its console in $out/console.log)"
  SEED=$seed bash "$REPO/examples/aclsum/demo.sh" "$out" > "$out/console.log" 2>&1 || {
    echo "error: the main job with seed $seed failed; the end of $out/console.log:" >&2
    tail -n 5 "$out/console.log" >&2
    exit 1
  }
  echo "$(( $(date +%s) - start ))" > "$out/seconds.txt"
  echo "   $(cat "$out/seconds.txt") s"
done
python "$REPO/examples/aclsum/seeds_table.py" "$WORK"
