#!/usr/bin/env bash
# PALM-base pre-training, both stages: PALM (Bi et al. 2020) §2 and §3.1. 12-layer encoder and 12-layer
# decoder, 768 hidden, 12 heads, FFN 3072, GELU (--arch palm_base); windows of up to 500 tokens, the first
# 80% to the encoder and the rest to the decoder, built with a stride of one sentence.
#
#   bash examples/palm/pretrain_base.sh DATA_BIN SAVE_DIR [extra fairseq-train flags]
#
# DATA_BIN comes from `fairseq-preprocess --only-source` (one sentence per line, empty lines between
# documents). "The parameters of PALM's encoder are initialized by the pre-trained RoBERTa" (PALM §3.1):
# set PRETRAINED_ENCODER to a RoBERTa-base converted by scripts/convert_hf_checkpoint.py (its model.pt), and
# binarize DATA_BIN with its dict.txt (text encoded by scripts/tokenize_text.py --bpe gpt2 with its
# vocab.json and merges.txt). Stage 1 then starts from RoBERTa's encoder, MLM head and token table (sizes,
# vocabulary and LayerNorm epsilon are checked or taken from it); without it the encoder starts random. No
# context exceeds MAX_CONTEXT_TOKENS and no continuation MAX_CONTINUATION_TOKENS; the cut
# falls at a sentence boundary near the 80% point only when that keeps both limits (this project's choice,
# see docs/palm.md, "Pairs"). Stage 1 trains the encoder alone while the model also holds a decoder, so it runs with
# --ddp-backend legacy_ddp (fairseq's pytorch_ddp expects every parameter to get a gradient). Stage 2 takes
# the encoder from stage 1 and starts the decoder fresh (--stage1-checkpoint); without the MLM term its
# encoder MLM head gets no gradient, so it runs with legacy_ddp too. Each stage runs its own warm-up and
# linear decay.
#
# Settings (environment overrides):
#   GPUS=16              GPUs (hardware; PALM §3.1 used 16 V100s)
#   TOTAL_BATCH=64       sequences per update: "each minibatch containing 64 sequences" (PALM §3.1); must be
#                        a multiple of GPUS (TOTAL_BATCH=1024 reads it as 64 per GPU instead)
#   MAX_SENTENCES        sequences per GPU per step [TOTAL_BATCH / GPUS: 4 on 16 GPUs] (this project's
#                        choice: memory only)
#   STAGE1_UPDATES=400000  stage 1 updates (this project's choice: PALM §3.1 gives 800K steps in all and does
#                        not say how they divide between the stages)
#   STAGE2_UPDATES=400000  stage 2 updates (this project's choice, as STAGE1_UPDATES)
#   MAX_FRAGMENT_TOKENS=500  most tokens in a window (PALM §2.2, §3.1)
#   MAX_CONTEXT_TOKENS=400  hard limit on the encoder's context: "at most 400 tokens" (PALM §2.2, §3.1)
#   MAX_CONTINUATION_TOKENS=100  hard limit on the decoder's continuation: "at most 100 tokens" (PALM §2.2,
#                        §3.1)
#   CONTEXT_RATIO=0.8    share of a window that goes to the encoder (PALM §2.2)
#   MASK_PROB=0.15       share of context tokens masked for the encoder's MLM (PALM §2.1 masks "following
#                        BERT's practice", 15%)
#   MLM_WEIGHT=0         stage 2 trains the decoder's continuation loss alone: PALM §2.2 trains the encoder's
#                        output in stage 1 and the decoder's in stage 2; a weight > 0 adds the encoder's
#                        MLM loss in stage 2 too (this project's choice, not the paper's)
#   LR=1e-5              peak learning rate (PALM §3.1)
#   WARMUP=10000         linear warm-up updates, then linear decay (PALM §3.1)
#   DROPOUT=0.1          dropout on all layers and attention weights (PALM §3.1)
#   ADAM_EPS=1e-8        Adam epsilon (this project's choice: PALM names none)
#   WEIGHT_DECAY=0.01    (this project's choice: PALM names none)
#   CLIP_NORM=1.0        gradient-norm clipping (this project's choice: PALM names none)
# Fixed below: Adam betas (0.9, 0.999) (this project's choice: PALM names none); linear decay
# (polynomial_decay, power 1; PALM §3.1); --fp16 (this project's choice).
case "${1:-}" in -h | --help) awk 'NR > 1 && !/^#/ {exit} NR > 1 {sub(/^# ?/, ""); print}' "$0"; exit 0 ;; esac  # usage, before any work
set -euo pipefail
DATA_BIN=$1
SAVE_DIR=$2
shift 2
: "${GPUS:=16}" "${TOTAL_BATCH:=64}" "${MAX_SENTENCES:=$(( TOTAL_BATCH / GPUS ))}"
: "${STAGE1_UPDATES:=400000}" "${STAGE2_UPDATES:=400000}" "${MAX_FRAGMENT_TOKENS:=500}"
: "${MAX_CONTEXT_TOKENS:=400}" "${MAX_CONTINUATION_TOKENS:=100}"
: "${CONTEXT_RATIO:=0.8}" "${MASK_PROB:=0.15}" "${MLM_WEIGHT:=0}" "${LR:=1e-5}" "${WARMUP:=10000}"
: "${DROPOUT:=0.1}" "${ADAM_EPS:=1e-8}" "${WEIGHT_DECAY:=0.01}" "${CLIP_NORM:=1.0}"
if (( MAX_SENTENCES < 1 || TOTAL_BATCH % (GPUS * MAX_SENTENCES) )); then
  echo "TOTAL_BATCH=$TOTAL_BATCH is not a multiple of GPUS*MAX_SENTENCES=$(( GPUS * MAX_SENTENCES ))" >&2
  exit 1
fi
UPDATE_FREQ=$(( TOTAL_BATCH / (GPUS * MAX_SENTENCES) ))

COMMON=(--user-dir unilm_fairseq --task palm_pretrain --arch palm_base --criterion palm
  --max-fragment-tokens "$MAX_FRAGMENT_TOKENS" --max-context-tokens "$MAX_CONTEXT_TOKENS"
  --max-continuation-tokens "$MAX_CONTINUATION_TOKENS" --context-ratio "$CONTEXT_RATIO" --mask-prob "$MASK_PROB"
  --max-source-positions 512 --max-target-positions 512
  --optimizer adam --adam-betas '(0.9, 0.999)' --adam-eps "$ADAM_EPS" --weight-decay "$WEIGHT_DECAY"
  --clip-norm "$CLIP_NORM" --lr "$LR" --lr-scheduler polynomial_decay --warmup-updates "$WARMUP"
  --batch-size "$MAX_SENTENCES" --update-freq "$UPDATE_FREQ" --dropout "$DROPOUT"
  --attention-dropout "$DROPOUT" --fp16
  --save-interval-updates 10000 --keep-interval-updates 5 --no-epoch-checkpoints
  --log-format simple --log-interval 100)

INIT_FLAGS=()
if [ -n "${PRETRAINED_ENCODER:-}" ]; then INIT_FLAGS=(--pretrained-encoder "$PRETRAINED_ENCODER"); fi

fairseq-train "$DATA_BIN" "${COMMON[@]}" --stage 1 --ddp-backend legacy_ddp ${INIT_FLAGS[@]+"${INIT_FLAGS[@]}"} \
  --total-num-update "$STAGE1_UPDATES" --max-update "$STAGE1_UPDATES" \
  --save-dir "$SAVE_DIR/stage1" "$@"

fairseq-train "$DATA_BIN" "${COMMON[@]}" --stage 2 --mlm-weight "$MLM_WEIGHT" --ddp-backend legacy_ddp \
  --stage1-checkpoint "$SAVE_DIR/stage1/checkpoint_last.pt" \
  --total-num-update "$STAGE2_UPDATES" --max-update "$STAGE2_UPDATES" \
  --save-dir "$SAVE_DIR/stage2" "$@"
