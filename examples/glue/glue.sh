#!/usr/bin/env bash
# GLUE fine-tuning of a pre-trained model (sentence or sentence-pair classification/regression from the
# [SOS] vector).
#
#   PRETRAINED=out/minilm/model.pt DICT=out/minilm/dict.txt MODEL_ARGS="$(cat out/minilm/model_args.txt)" \
#   WORDPIECE=out/minilm/dict.txt LOWERCASE=1 bash examples/glue/glue.sh RTE glue_data/RTE work/rte
#
# TASK is one of CoLA SST-2 MRPC QQP STS-B MNLI QNLI RTE WNLI; GLUE_DIR the task's folder of the public
# release (train.tsv, dev.tsv ...). Environment overrides:
#   PRETRAINED   checkpoint to start from (a converted model.pt or a pmlm checkpoint); unset: random init
#   DICT         its dict.txt (required with PRETRAINED: the token ids must match)
#   MODEL_ARGS   its architecture flags (model_args.txt of a converted model; default --arch unilmv2_base)
#   WORDPIECE    BERT vocab.txt to tokenize with; SPM: a sentencepiece model instead; neither: words
#   LOWERCASE    1 lowercases (uncased models), 0 keeps case and accents (cased models); unset: a WordPiece
#                vocabulary decides, other tokenizers keep the case
#   SETTINGS     unilmv2 or unilm_v1: whose paper the hyperparameters follow [unilm_v1 when MODEL_ARGS names
#                a unilm_v1_* architecture, else unilmv2]
#   SEED=1, CPU="" (CPU=--cpu on a CPU)
#
# Settings: one fairseq-hydra-train config per paper holds every value, each with its source:
# examples/glue/config/glue_unilmv2.yaml follows UniLMv2 (Bao et al. 2020) Table 9, whose grid is searched per
# task on the dev sets (the defaults are one point of it, this project's choice), and glue_unilm_v1.yaml
# follows UniLM v1 (Dong et al. 2019) §3.5. docs/recipes.md tables them and `bash glue.sh -h` lists the one
# SETTINGS (or MODEL_ARGS) picks. An environment variable of a setting's name overrides it (LR=1e-5,
# EPOCHS=15). UniLM v1 §3.5's pooler dropout goes by task: POOLER_DROPOUT_MNLI for MNLI,
# POOLER_DROPOUT_COLA_SST2 for CoLA and SST-2, POOLER_DROPOUT for the others; POOLER_DROPOUT set in the
# environment applies to every task.
set -euo pipefail
# shellcheck source=../common/pairs.sh
source "$(dirname "${BASH_SOURCE[0]}")/../common/pairs.sh"
: "${MODEL_ARGS:=--arch unilmv2_base}"
case $MODEL_ARGS in
  *unilm_v1_*) : "${SETTINGS:=unilm_v1}" ;;
  *) : "${SETTINGS:=unilmv2}" ;;
esac
need_choice SETTINGS unilmv2 unilm_v1
RECIPE_CONFIGS=("$PAIRS_REPO/examples/glue/config/glue_$SETTINGS.yaml")
answer_help "$@"  # -h: this header and the settings of that config, before any work
[ $# -ge 3 ] || { sed -n '2,17p' "$0"; exit 1; }
TASK=$1 GLUE_DIR=$2 WORK=$3
shift 3
: "${SEED:=1}" "${CPU:=}"
TASK_POOLER_DROPOUT=${POOLER_DROPOUT:-}  # the environment's, for every task
read_recipe_config "${RECIPE_CONFIGS[@]}"

case $TASK in
  MNLI) CLASSES=3 ;;
  STS-B) CLASSES=1 ;;
  CoLA | SST-2 | MRPC | QQP | QNLI | RTE | WNLI) CLASSES=2 ;;
  *) echo "unknown task $TASK" >&2; exit 1 ;;
esac
case $TASK in  # UniLM v1 §3.5's pooler dropout by task
  MNLI) POOLER_DROPOUT=${TASK_POOLER_DROPOUT:-$POOLER_DROPOUT_MNLI} ;;
  CoLA | SST-2) POOLER_DROPOUT=${TASK_POOLER_DROPOUT:-$POOLER_DROPOUT_COLA_SST2} ;;
esac
if [ ! -d "$GLUE_DIR" ]; then
  echo "GLUE_DIR $GLUE_DIR: no such directory (the $TASK folder of the GLUE release)" >&2
  exit 1
fi
case $TASK in  # the metric reported on the dev set (the GLUE leaderboard's)
  CoLA) METRIC=(--report-mcc) ;;
  MRPC | QQP) METRIC=(--report-acc-and-f1) ;;
  STS-B) METRIC=(--report-pearson-and-spearman --regression-target) ;;
  *) METRIC=() ;;
esac

TOKENIZE=()
[ -n "${WORDPIECE:-}" ] && TOKENIZE+=(--wordpiece-vocab "$WORDPIECE")
[ -n "${SPM:-}" ] && TOKENIZE+=(--spm-model "$SPM")
case ${LOWERCASE:-auto} in
  1) TOKENIZE+=(--lowercase) ;;
  0) TOKENIZE+=(--cased) ;;
  auto) ;;
  *) echo "LOWERCASE must be 1, 0 or auto, not '$LOWERCASE'" >&2; exit 2 ;;
esac
python "$PAIRS_REPO/scripts/prepare_glue.py" --task "$TASK" --input "$GLUE_DIR" --output "$WORK/raw" --splits train,valid \
  "${TOKENIZE[@]}"
for split in train valid; do
  [ -s "$WORK/raw/$split.input0" ] || { echo "no $split examples from $GLUE_DIR" >&2; exit 1; }
done

VALID=(valid)  # MNLI: matched dev (valid, the one checkpoints are chosen on) and mismatched dev (valid1)
VALID_SUBSETS=()
if [ -s "$WORK/raw/valid1.input0" ]; then
  VALID+=(valid1)
  VALID_SUBSETS=(--valid-subset valid,valid1)
fi
validprefs() { local IFS=,; local names=("${VALID[@]/#/$WORK/raw/}"); echo "${names[*]/%/.$1}"; }
rm -rf "$WORK/bin"  # binarized afresh: fairseq-preprocess will not build a dictionary over an old one
SRCDICT=()
[ -n "${DICT:-}" ] && SRCDICT=(--srcdict "$DICT")
for input in input0 input1; do
  [ -f "$WORK/raw/train.$input" ] || continue
  fairseq-preprocess --user-dir "$PAIRS_REPO/unilm_fairseq" --task unilm_sentence_prediction --only-source \
    --trainpref "$WORK/raw/train.$input" --validpref "$(validprefs "$input")" \
    --destdir "$WORK/bin/$input" --workers 4 "${SRCDICT[@]}"
  [ ${#SRCDICT[@]} -gt 0 ] || SRCDICT=(--srcdict "$WORK/bin/input0/dict.txt")  # input1 shares input0's
done
if [ "$TASK" = STS-B ]; then  # regression: fairseq reads the raw scores, label/{split}.label
  mkdir -p "$WORK/bin/label"
  cp "$WORK/raw/train.label" "$WORK/raw/valid.label" "$WORK/bin/label/"
else
  # the classes in sorted order ("0" before "1"), not by frequency: fairseq's F1 takes class 1 as the
  # positive one, which must be GLUE's "1" (MRPC's paraphrase, QQP's duplicate) whichever label is commoner
  for split in train "${VALID[@]}"; do cat "$WORK/raw/$split.label"; done | LC_ALL=C sort -u | sed 's/$/ 1/' \
    > "$WORK/raw/labels.txt"
  fairseq-preprocess --only-source --trainpref "$WORK/raw/train.label" --validpref "$(validprefs label)" \
    --srcdict "$WORK/raw/labels.txt" --destdir "$WORK/bin/label" --workers 4
fi

COUNTS=$(python "$PAIRS_REPO/scripts/recipe_config.py" updates "$WORK/raw/train.input0" "$BATCH" "$EPOCHS" \
  --warmup-ratio "$WARMUP_RATIO")
read -r UPDATES WARMUP <<< "$COUNTS"
RESTORE=()
if [ -n "${PRETRAINED:-}" ]; then
  RESTORE=(--restore-file "$PRETRAINED" --reset-optimizer --reset-dataloader --reset-meters --reset-lr-scheduler)
fi
BEST=(--best-checkpoint-metric accuracy --maximize-best-checkpoint-metric)
[ "$TASK" = STS-B ] && BEST=(--best-checkpoint-metric pearson --maximize-best-checkpoint-metric)
[ "$TASK" = CoLA ] && BEST=(--best-checkpoint-metric mcc --maximize-best-checkpoint-metric)

OPTIM=(--optimizer "$OPTIMIZER")
if [ "$OPTIMIZER" = adam ]; then OPTIM+=(--adam-betas '(0.9, 0.98)' --adam-eps "$ADAM_EPS"); fi

# shellcheck disable=SC2086
fairseq-train "$WORK/bin" --user-dir "$PAIRS_REPO/unilm_fairseq" --task unilm_sentence_prediction \
  $MODEL_ARGS --max-positions "$MAX_POSITIONS" --shorten-method truncate \
  --criterion sentence_prediction --num-classes "$CLASSES" "${METRIC[@]}" \
  --pooler-dropout "$POOLER_DROPOUT" \
  "${OPTIM[@]}" --weight-decay "$WEIGHT_DECAY" --lr "$LR" \
  --lr-scheduler polynomial_decay --end-learning-rate 0 \
  --warmup-updates "$WARMUP" --total-num-update "$UPDATES" --max-update "$UPDATES" --clip-norm "$CLIP_NORM" \
  --batch-size "$BATCH" --required-batch-size-multiple 1 --seed "$SEED" \
  --save-dir "$WORK/checkpoints" --no-epoch-checkpoints "${BEST[@]}" "${VALID_SUBSETS[@]}" \
  --log-format simple --log-interval 50 "${RESTORE[@]}" $CPU "$@"
