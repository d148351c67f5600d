#!/usr/bin/env bash
# Extractive QA fine-tuning on SQuAD v1.1 or v2.0, prediction and the official EM/F1.
#
#   MODEL=converted/unilmv2-base bash examples/squad/finetune.sh SQUAD_DIR WORK_DIR [fairseq-train flags]
#
# SQUAD_DIR holds the official files: train-v1.1.json and dev-v1.1.json (VERSION=1.1, default) or
# train-v2.0.json and dev-v2.0.json (VERSION=2.0). MODEL is a folder with model.pt and dict.txt written by
# scripts/convert_hf_checkpoint.py (or a unilmv2 checkpoint and its dict.txt: PRETRAINED=..., DICT=...);
# the model_args.txt beside the checkpoint gives the architecture flags unless ARCH is set.
# Extra arguments go to fairseq-train (for example --fp16, --update-freq 2).
#
# Settings: one fairseq-hydra-train config per SQuAD version and paper holds every value, each with its
# source. examples/squad/config/squad_v1.yaml and squad_v2.yaml follow UniLMv2 (Bao et al. 2020) Table 9, one
# set for v1.1 and v2.0, for unilmv2 models; squad_v1_unilm_v1.yaml and squad_v2_unilm_v1.yaml follow UniLM
# v1 (Dong et al. 2019) §3.2, which fine-tunes "in the same way as BERT-large", when ARCH is unilm_v1_* (or
# SETTINGS=unilm_v1). docs/recipes.md tables them and `bash finetune.sh -h` lists the ones VERSION and ARCH
# (or SETTINGS) pick. An environment variable of a setting's name overrides it (EPOCHS=2, LR=3e-5).
# BATCH_PER_GPU, windows per GPU per step, is TOTAL_BATCH / GPUS unless set (memory only: TOTAL_BATCH must
# be a multiple of GPUS x BATCH_PER_GPU). On v2.0, ANSWERABILITY_HEAD=1 trains the paper's answerability
# classifier on [SOS] (UniLMv2 §4.2), which answers "" past ANSWERABILITY_THRESHOLD; 0 keeps BERT's
# null-span rule and NULL_THRESHOLD. Also GPUS=1, TOKENIZER=wordpiece, CASED=0 (1 for cased vocabularies),
# ARCH=unilmv2_base.
set -euo pipefail
# shellcheck source=../common/pairs.sh
source "$(dirname "${BASH_SOURCE[0]}")/../common/pairs.sh"
ARCH_GIVEN=${ARCH:-}
: "${VERSION:=1.1}" "${ARCH:=unilmv2_base}"
case $ARCH in
  unilm_v1_*) : "${SETTINGS:=unilm_v1}" ;;
  *) : "${SETTINGS:=unilmv2}" ;;
esac
need_choice VERSION 1.1 2.0
need_choice SETTINGS unilmv2 unilm_v1
# the config of this version and paper: squad_v1.yaml, squad_v2_unilm_v1.yaml ...
SUFFIX=_$SETTINGS
[ "$SETTINGS" = unilmv2 ] && SUFFIX=
RECIPE_CONFIGS=("$PAIRS_REPO/examples/squad/config/squad_v${VERSION%%.*}$SUFFIX.yaml")
answer_help "$@"  # -h: this header and the settings of that config, before any work
if [ $# -lt 2 ]; then
    sed -n '2,10p' "$0"
    exit 1
fi
SQUAD_DIR=$1
WORK=$2
shift 2
: "${MODEL:=}" "${PRETRAINED:=${MODEL:+$MODEL/model.pt}}" "${DICT:=${MODEL:+$MODEL/dict.txt}}"
: "${TOKENIZER:=wordpiece}" "${CASED:=0}" "${GPUS:=1}"
read_recipe_config "${RECIPE_CONFIGS[@]}"
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
# a converted model's architecture flags (model_args.txt beside its model.pt), unless ARCH is given
read -r -a ARCH_FLAGS <<< "$(ARCH=$ARCH_GIVEN model_arch_flags "${PRETRAINED:+$(dirname "$PRETRAINED")}")"
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
COUNTS=$(python "$PAIRS_REPO/scripts/recipe_config.py" squad-updates "$WORK/data" "$TOTAL_BATCH" "$EPOCHS" \
  --warmup-percent "$WARMUP_PERCENT" --qa-tokenizer "$TOKENIZER" ${CASE_FLAG[@]+"${CASE_FLAG[@]}"} \
  --max-seq-length "$MAX_SEQ_LENGTH" --doc-stride "$DOC_STRIDE" --max-query-length "$MAX_QUERY_LENGTH")
read -r WINDOWS UPDATES WARMUP <<< "$COUNTS"
UPDATE_FREQ=$(( TOTAL_BATCH / (GPUS * BATCH_PER_GPU) ))
echo "SQuAD v$VERSION: $WINDOWS training windows -> $UPDATES updates ($WARMUP warm-up)"

fairseq-train "$WORK/data" --user-dir "$PAIRS_REPO/unilm_fairseq" "${TASK_FLAGS[@]}" "${PRETRAINED_FLAG[@]}" \
    "${ANSWERABILITY_FLAGS[@]}" "${ARCH_FLAGS[@]}" --criterion squad_span \
    --optimizer adam --adam-betas '(0.9, 0.98)' --adam-eps "$ADAM_EPS" --weight-decay "$WEIGHT_DECAY" \
    --clip-norm "$CLIP_NORM" \
    --lr "$LR" --lr-scheduler polynomial_decay --warmup-updates "$WARMUP" --total-num-update "$UPDATES" \
    --max-update "$UPDATES" --batch-size "$BATCH_PER_GPU" --update-freq "$UPDATE_FREQ" --distributed-world-size "$GPUS" \
    --required-batch-size-multiple 1 --save-dir "$WORK/checkpoints" --no-epoch-checkpoints \
    --log-format simple --log-interval 100 "$@"

python "$PAIRS_REPO/scripts/predict_squad.py" --checkpoint "$WORK/checkpoints/checkpoint_last.pt" \
    --input "$WORK/data/valid.json" --output "$WORK/predictions.json" --n-best-size "$N_BEST" \
    --max-answer-length "$MAX_ANSWER_LENGTH" --null-odds-output "$WORK/null_odds.json" \
    --metrics-output "$WORK/metrics.json" "${PREDICT_V2_FLAGS[@]}"
