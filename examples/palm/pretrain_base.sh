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
# Settings: examples/palm/config/pretrain_stage1.yaml and pretrain_stage2.yaml (the two stages'
# fairseq-hydra-train configs) hold every value, each with its paper and section; the settings both stages
# use are written alike in each, STAGE1_UPDATES sits in stage 1's and STAGE2_UPDATES and MLM_WEIGHT in stage
# 2's. docs/recipes.md tables them and `bash pretrain_base.sh -h` lists them. An environment variable of a
# setting's name overrides it, in both stages (GPUS=8, LR=2e-5, STAGE1_UPDATES=1000). TOTAL_BATCH is read
# as the batch per update (TOTAL_BATCH=1024 reads PALM §3.1 as 64 per GPU instead); MAX_SENTENCES, the
# sequences per GPU per step, is TOTAL_BATCH / GPUS unless set, and TOTAL_BATCH must be a multiple of
# GPUS * MAX_SENTENCES (--update-freq makes up the rest).
set -euo pipefail
# shellcheck source=../common/pairs.sh
source "$(dirname "${BASH_SOURCE[0]}")/../common/pairs.sh"
RECIPE_CONFIGS=("$(dirname "$0")/config/pretrain_stage1.yaml" "$(dirname "$0")/config/pretrain_stage2.yaml")
answer_help "$@"  # -h: this header and both configs' settings, before any work
if [ $# -lt 2 ]; then
  echo "usage: bash $0 DATA_BIN SAVE_DIR [fairseq-train flags] (-h: the settings)" >&2
  exit 1
fi
DATA_BIN=$1
SAVE_DIR=$2
shift 2
read_recipe_config "${RECIPE_CONFIGS[@]}"
: "${MAX_SENTENCES:=$(( TOTAL_BATCH / GPUS ))}"
if (( MAX_SENTENCES < 1 || TOTAL_BATCH % (GPUS * MAX_SENTENCES) )); then
  echo "TOTAL_BATCH=$TOTAL_BATCH is not a multiple of GPUS*MAX_SENTENCES=$(( GPUS * MAX_SENTENCES ))" >&2
  exit 1
fi
UPDATE_FREQ=$(( TOTAL_BATCH / (GPUS * MAX_SENTENCES) ))

COMMON=(--user-dir "$PAIRS_REPO/unilm_fairseq" --task palm_pretrain --arch palm_base --criterion palm
  --max-fragment-tokens "$MAX_FRAGMENT_TOKENS" --max-context-tokens "$MAX_CONTEXT_TOKENS"
  --max-continuation-tokens "$MAX_CONTINUATION_TOKENS" --context-ratio "$CONTEXT_RATIO" --mask-prob "$MASK_PROB"
  --max-source-positions 512 --max-target-positions 512
  --optimizer adam --adam-betas '(0.9, 0.999)' --adam-eps "$ADAM_EPS" --weight-decay "$WEIGHT_DECAY"
  --clip-norm "$CLIP_NORM" --lr "$LR" --lr-scheduler polynomial_decay --warmup-updates "$WARMUP"
  --batch-size "$MAX_SENTENCES" --update-freq "$UPDATE_FREQ" --distributed-world-size "$GPUS"
  --dropout "$DROPOUT"
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
