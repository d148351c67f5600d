#!/usr/bin/env bash
# PALM-base pre-training, both stages (Bi et al. 2020, sections 2 and 3.1): 12-layer encoder and 12-layer
# decoder, 768 hidden, 12 heads, GELU, dropout 0.1 on all layers and attention weights; windows of up to
# 500 tokens, the first 80% to the encoder and the last 20% to the decoder, built with a stride of one
# sentence; 15% BERT masking of the encoder input; learning rate 1e-5 with 10K warm-up steps then linear
# decay; 64 sequences per GPU on 16 GPUs; 800K steps in all.
#
#   bash examples/palm/pretrain_base.sh DATA_BIN SAVE_DIR [extra fairseq-train flags]
#
# DATA_BIN comes from `fairseq-preprocess --only-source` (one sentence per line, empty lines between
# documents). The paper does not say how the 800K steps divide between the two stages: STAGE1_UPDATES and
# STAGE2_UPDATES (default 400K each) set it. Stage 1 trains the encoder alone while the model also holds a
# decoder, so it runs with --ddp-backend legacy_ddp (fairseq's pytorch_ddp expects every parameter to get
# a gradient). Stage 2 takes the encoder from stage 1 and starts the decoder fresh (--stage1-checkpoint).
set -euo pipefail
DATA_BIN=$1
SAVE_DIR=$2
shift 2
GPUS=${GPUS:-16}
MAX_SENTENCES=${MAX_SENTENCES:-64}
STAGE1_UPDATES=${STAGE1_UPDATES:-400000}
STAGE2_UPDATES=${STAGE2_UPDATES:-400000}
LR=${LR:-1e-5}
WARMUP=${WARMUP:-10000}

COMMON=(--user-dir unilm_fairseq --task palm_pretrain --arch palm_base --criterion palm
  --max-fragment-tokens 500 --context-ratio 0.8 --mask-prob 0.15
  --max-source-positions 512 --max-target-positions 512
  --optimizer adam --adam-betas '(0.9, 0.999)' --adam-eps 1e-8 --weight-decay 0.01 --clip-norm 1.0
  --lr "$LR" --lr-scheduler polynomial_decay --warmup-updates "$WARMUP"
  --batch-size "$MAX_SENTENCES" --dropout 0.1 --attention-dropout 0.1 --fp16
  --save-interval-updates 10000 --keep-interval-updates 5 --no-epoch-checkpoints
  --log-format simple --log-interval 100)

fairseq-train "$DATA_BIN" "${COMMON[@]}" --stage 1 --ddp-backend legacy_ddp \
  --total-num-update "$STAGE1_UPDATES" --max-update "$STAGE1_UPDATES" \
  --save-dir "$SAVE_DIR/stage1" "$@"

fairseq-train "$DATA_BIN" "${COMMON[@]}" --stage 2 --mlm-weight 1.0 \
  --stage1-checkpoint "$SAVE_DIR/stage1/checkpoint_last.pt" \
  --total-num-update "$STAGE2_UPDATES" --max-update "$STAGE2_UPDATES" \
  --save-dir "$SAVE_DIR/stage2" "$@"
