#!/usr/bin/env bash
# UniLMv2-base pre-training with the paper's settings (Bao et al. 2020, section 4.1):
# 12 layers / 768 hidden / 12 heads, 512-token inputs, relative position bias, 15% blockwise masking
# (40% spans of 2-6), AE + PAR losses; Adam (0.9, 0.98, eps 1e-6), peak lr 6e-4 with 24K warm-up steps
# then linear decay, weight decay 0.01, dropout 0.1, batch 7680 sequences, 0.5M updates.
#
#   bash examples/unilmv2_pretrain/pretrain_base.sh DATA_BIN SAVE_DIR [extra fairseq-train flags]
#
# DATA_BIN comes from `fairseq-preprocess --only-source` (one sentence per line, empty lines between
# documents). Set GPUS and MAX_SENTENCES to your hardware: the update frequency keeps 7680 per update.
set -euo pipefail
DATA_BIN=$1
SAVE_DIR=$2
shift 2
GPUS=${GPUS:-8}
MAX_SENTENCES=${MAX_SENTENCES:-32}
TOTAL_BATCH=7680
UPDATE_FREQ=$(( TOTAL_BATCH / (GPUS * MAX_SENTENCES) ))

fairseq-train "$DATA_BIN" --user-dir unilm_fairseq \
  --task pmlm --arch unilmv2_base --criterion ae_par \
  --tokens-per-sample 512 --sample-break-mode complete_doc \
  --mask-prob 0.15 --span-prob 0.4 --min-span-length 2 --max-span-length 6 \
  --objectives ae,par \
  --optimizer adam --adam-betas '(0.9, 0.98)' --adam-eps 1e-6 --weight-decay 0.01 --clip-norm 1.0 \
  --lr 6e-4 --lr-scheduler polynomial_decay --warmup-updates 24000 --total-num-update 500000 \
  --max-update 500000 --batch-size "$MAX_SENTENCES" --update-freq "$UPDATE_FREQ" \
  --dropout 0.1 --attention-dropout 0.1 --fp16 \
  --save-dir "$SAVE_DIR" --save-interval-updates 10000 --keep-interval-updates 5 \
  --log-format simple --log-interval 100 "$@"
