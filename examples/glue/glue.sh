#!/usr/bin/env bash
# GLUE fine-tuning of a pre-trained unilmv2 model (sentence or sentence-pair classification/regression
# from the [SOS] vector), with the settings of the UniLM paper (Dong et al. 2019, section 3.5):
#   Adamax, learning rate 5e-5, batch size 32, at most 5 epochs, linear decay after a warm-up over the
#   first 10% of the updates, gradient norm clipped at 1, inputs truncated to 512 tokens; dropout of the
#   task's last linear projection 0.1, except 0.3 for MNLI and 0.05 for CoLA and SST-2.
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
#   LOWERCASE    1 for uncased models
#   LR=5e-5 BATCH=32 EPOCHS=5 WARMUP_RATIO=0.1 MAX_POSITIONS=512 SEED=1 CPU=""  (CPU=--cpu on a CPU)
set -euo pipefail
[ $# -ge 3 ] || { sed -n '2,20p' "$0"; exit 1; }
TASK=$1 GLUE_DIR=$2 WORK=$3
shift 3
cd "$(dirname "$0")/../.."
LR=${LR:-5e-5} BATCH=${BATCH:-32} EPOCHS=${EPOCHS:-5} WARMUP_RATIO=${WARMUP_RATIO:-0.1}
MAX_POSITIONS=${MAX_POSITIONS:-512} SEED=${SEED:-1} CPU=${CPU:-}
MODEL_ARGS=${MODEL_ARGS:---arch unilmv2_base}

case $TASK in
  MNLI) CLASSES=3 POOLER_DROPOUT=0.3 ;;
  CoLA | SST-2) CLASSES=2 POOLER_DROPOUT=0.05 ;;
  STS-B) CLASSES=1 POOLER_DROPOUT=0.1 ;;
  MRPC | QQP | QNLI | RTE | WNLI) CLASSES=2 POOLER_DROPOUT=0.1 ;;
  *) echo "unknown task $TASK" >&2; exit 1 ;;
esac
case $TASK in  # the metric reported on the dev set (the GLUE leaderboard's)
  CoLA) METRIC=(--report-mcc) ;;
  MRPC | QQP) METRIC=(--report-acc-and-f1) ;;
  STS-B) METRIC=(--report-pearson-and-spearman --regression-target) ;;
  *) METRIC=() ;;
esac

TOKENIZE=()
[ -n "${WORDPIECE:-}" ] && TOKENIZE+=(--wordpiece-vocab "$WORDPIECE")
[ -n "${SPM:-}" ] && TOKENIZE+=(--spm-model "$SPM")
[ "${LOWERCASE:-0}" = 1 ] && TOKENIZE+=(--lowercase)
python scripts/prepare_glue.py --task "$TASK" --input "$GLUE_DIR" --output "$WORK/raw" --splits train,valid \
  "${TOKENIZE[@]}"
for split in train valid; do
  [ -s "$WORK/raw/$split.input0" ] || { echo "no $split examples from $GLUE_DIR" >&2; exit 1; }
done

SRCDICT=()
[ -n "${DICT:-}" ] && SRCDICT=(--srcdict "$DICT")
for input in input0 input1; do
  [ -f "$WORK/raw/train.$input" ] || continue
  fairseq-preprocess --user-dir unilm_fairseq --task unilm_sentence_prediction --only-source \
    --trainpref "$WORK/raw/train.$input" --validpref "$WORK/raw/valid.$input" \
    --destdir "$WORK/bin/$input" --workers 4 "${SRCDICT[@]}"
  [ ${#SRCDICT[@]} -gt 0 ] || SRCDICT=(--srcdict "$WORK/bin/input0/dict.txt")  # input1 shares input0's
done
if [ "$TASK" = STS-B ]; then  # regression: fairseq reads the raw scores, label/{split}.label
  mkdir -p "$WORK/bin/label"
  cp "$WORK/raw/train.label" "$WORK/raw/valid.label" "$WORK/bin/label/"
else
  fairseq-preprocess --only-source --trainpref "$WORK/raw/train.label" --validpref "$WORK/raw/valid.label" \
    --destdir "$WORK/bin/label" --workers 4
fi

EXAMPLES=$(wc -l < "$WORK/raw/train.input0")
UPDATES=$(( (EXAMPLES + BATCH - 1) / BATCH * EPOCHS ))
WARMUP=$(python -c "print(int($UPDATES * $WARMUP_RATIO))")
RESTORE=()
if [ -n "${PRETRAINED:-}" ]; then
  RESTORE=(--restore-file "$PRETRAINED" --reset-optimizer --reset-dataloader --reset-meters --reset-lr-scheduler)
fi
BEST=(--best-checkpoint-metric accuracy --maximize-best-checkpoint-metric)
[ "$TASK" = STS-B ] && BEST=(--best-checkpoint-metric pearson --maximize-best-checkpoint-metric)
[ "$TASK" = CoLA ] && BEST=(--best-checkpoint-metric mcc --maximize-best-checkpoint-metric)

# shellcheck disable=SC2086
fairseq-train "$WORK/bin" --user-dir unilm_fairseq --task unilm_sentence_prediction \
  $MODEL_ARGS --max-positions "$MAX_POSITIONS" --shorten-method truncate \
  --criterion sentence_prediction --num-classes "$CLASSES" "${METRIC[@]}" \
  --pooler-dropout "$POOLER_DROPOUT" \
  --optimizer adamax --lr "$LR" --lr-scheduler polynomial_decay --end-learning-rate 0 \
  --warmup-updates "$WARMUP" --total-num-update "$UPDATES" --max-update "$UPDATES" --clip-norm 1.0 \
  --batch-size "$BATCH" --required-batch-size-multiple 1 --seed "$SEED" \
  --save-dir "$WORK/checkpoints" --no-epoch-checkpoints "${BEST[@]}" \
  --log-format simple --log-interval 50 "${RESTORE[@]}" $CPU "$@"
