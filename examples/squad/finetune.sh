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
# Settings (environment overrides). UniLMv2 (Bao et al. 2020) Table 9 gives one set for SQuAD v1.1 and
# v2.0, used for unilmv2 models; UniLM v1 (Dong et al. 2019) §3.2 fine-tunes "in the same way as
# BERT-large", used when ARCH is unilm_v1_* (or SETTINGS=unilm_v1). Where a paper names no value the
# setting is this project's choice, mostly BERT's SQuAD windowing and decoding.
#   MAX_SEQ_LENGTH=384   tokens per window (UniLM v1 §3.2; UniLMv2 names none)
#   DOC_STRIDE=128       passage tokens between windows (this project's choice: BERT's; the papers name none)
#   MAX_QUERY_LENGTH=64  question tokens kept (this project's choice: BERT's)
#   N_BEST=20            start and end candidates per window (this project's choice: BERT's)
#   MAX_ANSWER_LENGTH=30 longest answer in tokens (this project's choice: BERT's)
#   TOTAL_BATCH=32       windows per update (UniLMv2 Table 9); 24 for unilm_v1 (UniLM v1 §3.2)
#   LR=2e-5              peak learning rate, linear warm-up then linear decay (UniLMv2 Table 9; for unilm_v1
#                        this project's choice, §3.2 names none)
#   EPOCHS=4             passes over the training windows (UniLMv2 Table 9); 3 for unilm_v1 (UniLM v1 §3.2)
#   WARMUP_PERCENT=10    warm-up, percent of the updates (UniLMv2 Table 9: ratio 0.1; for unilm_v1 this
#                        project's choice)
#   WEIGHT_DECAY=0.01    decoupled weight decay (UniLMv2 Table 9; for unilm_v1 this project's choice)
#   ADAM_EPS=1e-6        Adam epsilon (this project's choice: UniLMv2 §4.1's pre-training optimizer, Adam
#                        (0.9, 0.98) eps 1e-6, which is fixed below; the fine-tuning tables name none)
#   CLIP_NORM=1.0        gradient-norm clipping (this project's choice: the papers name none for SQuAD)
#   NULL_THRESHOLD=0.0   v2.0 with ANSWERABILITY_HEAD=0: answer "" when the null score beats the best span by
#                        more than this (this project's choice: BERT's; tune it on dev with the null_odds.json
#                        written)
#   ANSWERABILITY_HEAD=1 v2.0: the paper's answerability classifier on [SOS] (UniLMv2 §4.2: "we use the
#                        output vector of [SOS] to predict whether the instance is unanswerable"), trained
#                        with the span loss (--answerability-head); 0 for BERT's null-span rule. v1.1: 0 (this
#                        project's choice: no unanswerable questions to learn from)
#   ANSWERABILITY_WEIGHT=1.0  weight of the classifier's loss beside the span loss (this project's choice;
#                        UniLMv2 §4.2 names none)
#   ANSWERABILITY_THRESHOLD=0.5  answer "" when the classifier's probability of no answer exceeds this (this
#                        project's choice; tune it on dev with the no_answer_probs.json written)
#   BATCH_PER_GPU        windows per GPU per step [TOTAL_BATCH / GPUS] (this project's choice: memory only;
#                        TOTAL_BATCH must be a multiple of GPUS x BATCH_PER_GPU)
#   GPUS=1, TOKENIZER=wordpiece, CASED=0 (1 for cased vocabularies), ARCH=unilmv2_base
case "${1:-}" in -h | --help) awk 'NR > 1 && !/^#/ {exit} NR > 1 {sub(/^# ?/, ""); print}' "$0"; exit 0 ;; esac  # usage, before any work
set -euo pipefail
if [ $# -lt 2 ]; then
    sed -n '2,9p' "$0"
    exit 1
fi
SQUAD_DIR=$1
WORK=$2
shift 2
: "${VERSION:=1.1}" "${MODEL:=}" "${PRETRAINED:=${MODEL:+$MODEL/model.pt}}" "${DICT:=${MODEL:+$MODEL/dict.txt}}"
: "${TOKENIZER:=wordpiece}" "${CASED:=0}" "${ARCH:=unilmv2_base}" "${GPUS:=1}"
case $ARCH in
  unilm_v1_*) : "${SETTINGS:=unilm_v1}" ;;
  *) : "${SETTINGS:=unilmv2}" ;;
esac
: "${MAX_SEQ_LENGTH:=384}" "${DOC_STRIDE:=128}" "${MAX_QUERY_LENGTH:=64}" "${N_BEST:=20}"
: "${MAX_ANSWER_LENGTH:=30}" "${LR:=2e-5}" "${WARMUP_PERCENT:=10}" "${WEIGHT_DECAY:=0.01}"
: "${ADAM_EPS:=1e-6}" "${CLIP_NORM:=1.0}" "${NULL_THRESHOLD:=0.0}"
case $SETTINGS in
  unilm_v1) : "${TOTAL_BATCH:=24}" "${EPOCHS:=3}" ;;
  *) : "${TOTAL_BATCH:=32}" "${EPOCHS:=4}" ;;
esac
case $VERSION in
  2.0) : "${ANSWERABILITY_HEAD:=1}" ;;
  *) : "${ANSWERABILITY_HEAD:=0}" ;;
esac
: "${ANSWERABILITY_WEIGHT:=1.0}" "${ANSWERABILITY_THRESHOLD:=0.5}"
: "${BATCH_PER_GPU:=$(( TOTAL_BATCH / GPUS ))}"
if (( BATCH_PER_GPU < 1 || TOTAL_BATCH % (GPUS * BATCH_PER_GPU) )); then
    echo "TOTAL_BATCH=$TOTAL_BATCH is not a multiple of GPUS*BATCH_PER_GPU=$(( GPUS * BATCH_PER_GPU ))" >&2
    exit 1
fi
if [ -z "$DICT" ] || [ ! -f "$DICT" ]; then
    echo "set MODEL (a converted model folder) or DICT (its dict.txt)" >&2
    exit 1
fi
for split in train dev; do
    if [ ! -f "$SQUAD_DIR/$split-v$VERSION.json" ]; then
        echo "$SQUAD_DIR/$split-v$VERSION.json: no such file (the official SQuAD v$VERSION release)" >&2
        exit 1
    fi
done
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
# SQuAD v2.0: the paper's answerability classifier on [SOS] (UniLMv2 §4.2) decides "no answer";
# predict_squad.py uses it whenever the checkpoint has it
ANSWERABILITY_FLAGS=()
PREDICT_V2_FLAGS=()
[ "$VERSION" = 2.0 ] && PREDICT_V2_FLAGS=(--version-2-with-negative
                                         --null-score-diff-threshold "$NULL_THRESHOLD")
if [ "$ANSWERABILITY_HEAD" = 1 ]; then
    ANSWERABILITY_FLAGS=(--answerability-head --answerability-weight "$ANSWERABILITY_WEIGHT")
    PREDICT_V2_FLAGS+=(--answerability-threshold "$ANSWERABILITY_THRESHOLD"
                       --no-answer-prob-output "$WORK/no_answer_probs.json")
fi

# the number of updates follows from the number of training windows, counted by the task's own reader
COUNT_SCRIPT=$(dirname "${BASH_SOURCE[0]}")/../../scripts/recipe_config.py
COUNTS=$(python "$COUNT_SCRIPT" squad-updates "$WORK/data" "$TOTAL_BATCH" "$EPOCHS" \
  --warmup-percent "$WARMUP_PERCENT" --qa-tokenizer "$TOKENIZER" ${CASE_FLAG[@]+"${CASE_FLAG[@]}"} \
  --max-seq-length "$MAX_SEQ_LENGTH" --doc-stride "$DOC_STRIDE" --max-query-length "$MAX_QUERY_LENGTH")
read -r WINDOWS UPDATES WARMUP <<< "$COUNTS"
UPDATE_FREQ=$(( TOTAL_BATCH / (GPUS * BATCH_PER_GPU) ))
echo "SQuAD v$VERSION: $WINDOWS training windows -> $UPDATES updates ($WARMUP warm-up)"

fairseq-train "$WORK/data" --user-dir unilm_fairseq "${TASK_FLAGS[@]}" "${PRETRAINED_FLAG[@]}" \
    "${ANSWERABILITY_FLAGS[@]}" --arch "$ARCH" --criterion squad_span \
    --optimizer adam --adam-betas '(0.9, 0.98)' --adam-eps "$ADAM_EPS" --weight-decay "$WEIGHT_DECAY" \
    --clip-norm "$CLIP_NORM" \
    --lr "$LR" --lr-scheduler polynomial_decay --warmup-updates "$WARMUP" --total-num-update "$UPDATES" \
    --max-update "$UPDATES" --batch-size "$BATCH_PER_GPU" --update-freq "$UPDATE_FREQ" \
    --required-batch-size-multiple 1 --save-dir "$WORK/checkpoints" --no-epoch-checkpoints \
    --log-format simple --log-interval 100 "$@"

python scripts/predict_squad.py --checkpoint "$WORK/checkpoints/checkpoint_last.pt" \
    --input "$WORK/data/valid.json" --output "$WORK/predictions.json" --n-best-size "$N_BEST" \
    --max-answer-length "$MAX_ANSWER_LENGTH" --null-odds-output "$WORK/null_odds.json" \
    --metrics-output "$WORK/metrics.json" "${PREDICT_V2_FLAGS[@]}"
