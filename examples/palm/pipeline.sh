# shellcheck shell=bash
# Steps shared by the PALM fine-tuning recipes of this folder (cnndm.sh, gigaword.sh, marco.sh), which set
# their task's settings and a palm_prepare function, then call palm_main RAW WORK_DIR [fairseq-train flags].
# Not meant to be run on its own.
#
# Steps (STAGES picks them, comma-separated, in this order):
#   prepare     the recipe's palm_prepare: RAW -> WORK_DIR/text/{train,valid,test}.{src,tgt}
#   preprocess  fairseq-preprocess with the pre-trained model's dictionary -> WORK_DIR/bin
#   train       fairseq-train --task palm_seq2seq --criterion label_smoothed_cross_entropy -> checkpoints
#   generate    fairseq-generate on the test split -> WORK_DIR/gen.out
#   score       scripts/score.py on gen.out -> WORK_DIR/scores.txt
#
# Variables every recipe shares (environment; default in brackets):
#   PRETRAINED  a palm pre-training checkpoint (--task palm_pretrain); empty trains from scratch (smoke
#               tests only) []
#   DICT        the dict.txt PRETRAINED was trained with [$(dirname PRETRAINED)/dict.txt]
#   TOKENIZER   spm (sentencepiece model), wordpiece (BERT vocab.txt) or none (text already tokenized) [spm]
#   VOCAB       spm.model or vocab.txt [$(dirname PRETRAINED)/spm.model or .../vocab.txt]
#   ARCH        palm_base, palm_large or palm_tiny [palm_base]
#   NO_COPY     1: ablate the pointer (--no-copy, the paper's Table 6 ablation) [0]
#   ABLATION    autoencoding or autoregression: Table 6's other ablations of PRETRAINED, the encoder or the
#               decoder left at random initialisation (--pretrained-ablation, PALM §3.7) [none]
#   GPUS        GPUs fairseq-train uses [all visible]; --update-freq = TOTAL_BATCH / (GPUS * BATCH_PER_GPU)
#   FP16        1: train and decode with --fp16 (needs CUDA) [1]
#   SEED        random seed [1]
#   WORKERS     fairseq-preprocess workers [8]
#   CKPT        checkpoint to decode [WORK_DIR/checkpoints/checkpoint_best.pt]
#   STAGES      steps to run [prepare,preprocess,train,generate,score]
#   PYTHON      python that has unilm_fairseq installed [python]
#
# Hyperparameters every recipe shares (the recipes set the rest; docs/recipes.md lists every value beside
# the paper's):
#   ADAM_EPS=1e-8        Adam epsilon (this project's choice, as pretrain_base.sh: PALM names none)
#   LENPEN_STYLE=gnmt    length penalty form: gnmt divides a hypothesis' score by ((5 + len) / 6) ** LENPEN,
#                        fairseq by len ** LENPEN (this project's choice: PALM names no length penalty; GNMT's
#                        is the one UniLMv2 Appendix D names for the other recipes, and the one the authors'
#                        released PALM code decodes CNN/DailyMail with, alpha 0.95)
# Fixed in the fairseq-train command below: Adam betas (0.9, 0.999) (this project's choice: PALM names none)
# and a linear schedule, linear warm-up then linear decay to 0 (--lr-scheduler polynomial_decay): PALM §3.3
# keeps the pre-training settings for fine-tuning, and §3.1 pre-trains with linear warm-up and decay.
# EPOCHS is counted into updates from the prepared training set; STEPS, when set, gives them instead.
case "${1:-}" in -h | --help) awk 'NR > 1 && !/^#/ {exit} NR > 1 {sub(/^# ?/, ""); print}' "$0"; exit 0 ;; esac  # usage, before any work

PALM_REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
# shellcheck source=examples/common/pairs.sh
. "$PALM_REPO/examples/common/pairs.sh"

palm_stage() {
  [[ ",$STAGES," == *",$1,"* ]]
}

# tokenizer flags of the preparation scripts
palm_tokenizer_flags() {
  case $TOKENIZER in
    spm) echo "--spm-model $VOCAB" ;;
    wordpiece) echo "--wordpiece-vocab $VOCAB --lowercase" ;;
    none) ;;
    *) echo "TOKENIZER must be spm, wordpiece or none, not $TOKENIZER" >&2; return 2 ;;
  esac
}

palm_main() {
  if [ $# -lt 2 ]; then
    echo "usage: bash $0 RAW WORK_DIR [extra fairseq-train flags]" >&2
    exit 2
  fi
  local raw=$1 work=$2
  shift 2
  : "${PYTHON:=python}" "${STAGES:=prepare,preprocess,train,generate,score}" "${PRETRAINED:=}"
  local model_dir
  model_dir=$(dirname "${PRETRAINED:-.}")
  : "${DICT:=$model_dir/dict.txt}" "${TOKENIZER:=spm}" "${ARCH:=palm_base}" "${NO_COPY:=0}"
  : "${ABLATION:=none}"
  : "${FP16:=1}" "${SEED:=1}" "${WORKERS:=8}" "${ADAM_EPS:=1e-8}"
  : "${LENPEN_STYLE:=gnmt}"
  case $TOKENIZER in
    spm) : "${VOCAB:=$model_dir/spm.model}" ;;
    wordpiece) : "${VOCAB:=$model_dir/vocab.txt}" ;;
  esac
  local text=$work/text bin=$work/bin save=$work/checkpoints gen=$work/gen.out
  local user_dir=$PALM_REPO/unilm_fairseq
  mkdir -p "$work"

  if palm_stage prepare; then
    if [ ! -e "$raw" ]; then
      echo "RAW $raw: no such file or directory (it holds the release files)" >&2
      exit 1
    fi
    if [ "$TOKENIZER" != none ] && [ ! -f "$VOCAB" ]; then
      echo "VOCAB=$VOCAB: no such file (set VOCAB, or PRETRAINED with its $(basename "$VOCAB") beside it)" >&2
      exit 1
    fi
    palm_prepare "$raw" "$text"
  fi

  if palm_stage preprocess; then
    require_pair_files "$text" "the prepare stage writes it"
    local dict_flags=(--joined-dictionary)
    if [ -f "$DICT" ]; then
      dict_flags=(--srcdict "$DICT" --tgtdict "$DICT")
    elif [ -n "$PRETRAINED" ]; then
      echo "DICT=$DICT does not exist: fine-tuning needs the pre-trained model's dictionary" >&2
      exit 1
    fi
    fairseq-preprocess --source-lang src --target-lang tgt \
      --trainpref "$text/train" --validpref "$text/valid" --testpref "$text/test" \
      --destdir "$bin" --workers "$WORKERS" "${dict_flags[@]}"
  fi

  local model_flags=()
  if [ "$NO_COPY" = 1 ]; then model_flags+=(--no-copy); fi
  if palm_stage train; then
    local steps=${STEPS:-}
    if [ -z "$steps" ]; then  # the paper gives epochs: count the updates they take
      steps=$(updates_for_epochs "$text/train.src" "$TOTAL_BATCH" "$EPOCHS")
    fi
    : "${GPUS:=$("$PYTHON" -c 'import torch; print(max(torch.cuda.device_count(), 1))')}"
    local per_step=$(( GPUS * BATCH_PER_GPU ))
    if (( TOTAL_BATCH % per_step )); then
      echo "TOTAL_BATCH=$TOTAL_BATCH is not a multiple of GPUS*BATCH_PER_GPU=$per_step" >&2
      exit 1
    fi
    local train_flags=("${model_flags[@]}")
    if [ -n "$PRETRAINED" ]; then train_flags+=(--pretrained-checkpoint "$PRETRAINED"); fi
    if [ "$ABLATION" != none ]; then train_flags+=(--pretrained-ablation "$ABLATION"); fi
    if [ "$FP16" = 1 ]; then train_flags+=(--fp16); fi
    echo "training: $steps updates ($WARMUP warm-up) of $TOTAL_BATCH examples" \
      "= $GPUS GPUs x $BATCH_PER_GPU x update-freq $(( TOTAL_BATCH / per_step ))" >&2
    fairseq-train "$bin" --user-dir "$user_dir" --task palm_seq2seq --arch "$ARCH" \
      --criterion label_smoothed_cross_entropy --label-smoothing "$LABEL_SMOOTHING" --report-accuracy \
      --max-source-positions "$MAX_SRC" --max-target-positions "$MAX_TGT" --truncate-source \
      --optimizer adam --adam-betas '(0.9, 0.999)' --adam-eps "$ADAM_EPS" --weight-decay "$WEIGHT_DECAY" \
      --clip-norm "$CLIP_NORM" --lr "$LR" --lr-scheduler polynomial_decay --warmup-updates "$WARMUP" \
      --total-num-update "$steps" --max-update "$steps" \
      --batch-size "$BATCH_PER_GPU" --update-freq $(( TOTAL_BATCH / per_step )) \
      --required-batch-size-multiple 1 \
      --dropout "$DROPOUT" --attention-dropout "$DROPOUT" --skip-invalid-size-inputs-valid-test \
      --save-dir "$save" --save-interval-updates "$SAVE_INTERVAL" --keep-interval-updates 5 \
      --no-epoch-checkpoints --seed "$SEED" --log-format simple --log-interval 100 \
      ${train_flags[@]+"${train_flags[@]}"} "$@"
  fi

  if palm_stage generate; then
    local gen_flags=()
    if [ "$TOKENIZER" = spm ]; then gen_flags+=(--post-process sentencepiece); fi
    if [ "$FP16" = 1 ]; then gen_flags+=(--fp16); fi
    fairseq-generate "$bin" --user-dir "$user_dir" --task palm_seq2seq \
      --path "${CKPT:-$save/checkpoint_best.pt}" --max-source-positions "$MAX_SRC" \
      --max-target-positions "$MAX_TGT" --truncate-source --gen-subset test --batch-size "$GEN_BATCH" \
      --beam "$BEAM" --lenpen "$LENPEN" --lenpen-style "$LENPEN_STYLE" \
      --no-repeat-ngram-size "$NO_REPEAT_NGRAM" --min-len "$MIN_LEN" \
      --max-len-a 0 --max-len-b "$MAX_LEN_B" --required-batch-size-multiple 1 --scoring rouge \
      ${gen_flags[@]+"${gen_flags[@]}"} > "$gen"
  fi

  if palm_stage score; then
    local score_flags=()
    if [ "$TOKENIZER" = wordpiece ]; then score_flags+=(--detok wordpiece); fi
    "$PYTHON" "$PALM_REPO/scripts/score.py" --generate-output "$gen" --metrics "$METRICS" \
      ${score_flags[@]+"${score_flags[@]}"} | tee "$work/scores.txt"
  fi
}
