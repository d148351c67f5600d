#!/usr/bin/env bash
# Extractive QA fine-tuning on SQuAD v1.1 or v2.0, prediction and the official EM/F1.
#
#   MODEL=converted/unilmv2-base bash examples/squad/finetune.sh SQUAD_DIR WORK_DIR [fairseq-train flags]
#
# SQUAD_DIR holds the official files: train-v1.1.json and dev-v1.1.json (VERSION=1.1, default) or
# train-v2.0.json and dev-v2.0.json (VERSION=2.0). MODEL is a folder with model.pt and dict.txt written by
# scripts/convert_hf_checkpoint.py (or a unilmv2 checkpoint and its dict.txt: PRETRAINED=..., DICT=...).
# Extra arguments go to fairseq-train (for example --fp16, --update-freq 2).
#
# Settings (override any by setting the variable):
#   MAX_SEQ_LENGTH=384   tokens per window            } BERT's SQuAD settings (google-research/bert
#   DOC_STRIDE=128       passage tokens between windows } run_squad.py defaults and README), which the
#   MAX_QUERY_LENGTH=64  question tokens kept          } UniLM papers' SQuAD experiments follow
#   N_BEST=20, MAX_ANSWER_LENGTH=30                     } (BERT run_squad.py defaults)
#   TOTAL_BATCH=32       windows per update
#   LR=2e-5              peak learning rate, linear warm-up then linear decay
#   EPOCHS=3             passes over the training windows
#   WARMUP_PERCENT=10    warm-up, percent of the updates
#   WEIGHT_DECAY=0.01    AdamW-style decoupled weight decay; Adam betas (0.9, 0.98), eps 1e-6 as in
#                        UniLMv2's optimizer description
#   The batch size, learning rate, epochs and warm-up above are the usual BERT-family SQuAD settings
#   (batch 32, 2e-5, 3 epochs, 10% warm-up), not the UniLMv2 paper's fine-tuning table: compare with
#   Bao et al. (2020), appendix, before reporting numbers.
#   NULL_THRESHOLD=0.0   v2.0: answer "" when the null score beats the best span by more than this
#                        (BERT run_squad.py default; tune it on dev with --null-odds-output)
#   BATCH_PER_GPU=32     windows per GPU per step (not from a source: fit it to your GPUs; the update
#                        is accumulated to TOTAL_BATCH)
#   GPUS=1, TOKENIZER=wordpiece, CASED=0 (1 for cased vocabularies)
set -euo pipefail
if [ $# -lt 2 ]; then
    sed -n '2,31p' "$0"
    exit 1
fi
SQUAD_DIR=$1
WORK=$2
shift 2
: "${VERSION:=1.1}" "${MODEL:=}" "${PRETRAINED:=${MODEL:+$MODEL/model.pt}}" "${DICT:=${MODEL:+$MODEL/dict.txt}}"
: "${MAX_SEQ_LENGTH:=384}" "${DOC_STRIDE:=128}" "${MAX_QUERY_LENGTH:=64}" "${N_BEST:=20}" "${MAX_ANSWER_LENGTH:=30}"
: "${TOTAL_BATCH:=32}" "${BATCH_PER_GPU:=32}" "${GPUS:=1}" "${LR:=2e-5}" "${EPOCHS:=3}" "${WARMUP_PERCENT:=10}"
: "${WEIGHT_DECAY:=0.01}" "${NULL_THRESHOLD:=0.0}" "${TOKENIZER:=wordpiece}" "${CASED:=0}" "${ARCH:=unilmv2_base}"
if [ -z "$DICT" ] || [ ! -f "$DICT" ]; then
    echo "set MODEL (a converted model folder) or DICT (its dict.txt)" >&2
    exit 1
fi
mkdir -p "$WORK/data"
ln -sf "$(realpath "$DICT")" "$WORK/data/dict.txt"
ln -sf "$(realpath "$SQUAD_DIR/train-v$VERSION.json")" "$WORK/data/train.json"
ln -sf "$(realpath "$SQUAD_DIR/dev-v$VERSION.json")" "$WORK/data/valid.json"
CASE_FLAG=()
[ "$CASED" = 1 ] && CASE_FLAG=(--cased)
TASK_FLAGS=(--task squad_qa --qa-tokenizer "$TOKENIZER" "${CASE_FLAG[@]}" --max-seq-length "$MAX_SEQ_LENGTH"
            --doc-stride "$DOC_STRIDE" --max-query-length "$MAX_QUERY_LENGTH")
PRETRAINED_FLAG=()
[ -n "$PRETRAINED" ] && PRETRAINED_FLAG=(--pretrained-checkpoint "$PRETRAINED")

# the number of updates follows from the number of training windows
WINDOWS=$(python - "$WORK/data" "$TOKENIZER" "$CASED" "$MAX_SEQ_LENGTH" "$DOC_STRIDE" "$MAX_QUERY_LENGTH" <<'PY'
import logging, sys
logging.disable(logging.INFO)
from unilm_fairseq.tasks.squad_qa import SquadQAConfig, SquadQATask
data, tokenizer, cased, seq, stride, query = sys.argv[1:]
cfg = SquadQAConfig(data=data, qa_tokenizer=tokenizer, cased=cased == "1", max_seq_length=int(seq),
                    doc_stride=int(stride), max_query_length=int(query))
task = SquadQATask.setup_task(cfg)
print(len(task.load_squad(task.split_file("train"), training=True)))
PY
)
UPDATE_FREQ=$(( (TOTAL_BATCH + GPUS * BATCH_PER_GPU - 1) / (GPUS * BATCH_PER_GPU) ))
UPDATES=$(( (WINDOWS * EPOCHS + TOTAL_BATCH - 1) / TOTAL_BATCH ))
WARMUP=$(( UPDATES * WARMUP_PERCENT / 100 ))
echo "SQuAD v$VERSION: $WINDOWS training windows -> $UPDATES updates ($WARMUP warm-up)"

fairseq-train "$WORK/data" --user-dir unilm_fairseq "${TASK_FLAGS[@]}" "${PRETRAINED_FLAG[@]}" \
    --arch "$ARCH" --criterion squad_span \
    --optimizer adam --adam-betas '(0.9, 0.98)' --adam-eps 1e-6 --weight-decay "$WEIGHT_DECAY" --clip-norm 1.0 \
    --lr "$LR" --lr-scheduler polynomial_decay --warmup-updates "$WARMUP" --total-num-update "$UPDATES" \
    --max-update "$UPDATES" --batch-size "$BATCH_PER_GPU" --update-freq "$UPDATE_FREQ" \
    --required-batch-size-multiple 1 --save-dir "$WORK/checkpoints" --no-epoch-checkpoints \
    --log-format simple --log-interval 100 "$@"

python scripts/predict_squad.py --checkpoint "$WORK/checkpoints/checkpoint_last.pt" \
    --input "$WORK/data/valid.json" --output "$WORK/predictions.json" --n-best-size "$N_BEST" \
    --max-answer-length "$MAX_ANSWER_LENGTH" --null-odds-output "$WORK/null_odds.json" \
    --metrics-output "$WORK/metrics.json" \
    $( [ "$VERSION" = 2.0 ] && echo --version-2-with-negative --null-score-diff-threshold "$NULL_THRESHOLD" )
