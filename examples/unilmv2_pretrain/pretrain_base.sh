#!/usr/bin/env bash
# UniLMv2-base pre-training with the paper's settings: UniLMv2 (Bao et al. 2020) §4.1 and Table 7.
# 12 layers / 768 hidden / 12 heads / FFN 3072 (--arch unilmv2_base), relative position bias, AE + PAR losses
# (Eq. 7) with blockwise masking (Algorithm 1).
#
#   bash examples/unilmv2_pretrain/pretrain_base.sh DATA_BIN SAVE_DIR [extra fairseq-train flags]
#
# DATA_BIN comes from `fairseq-preprocess --only-source` (one sentence per line, empty lines between
# documents). The paper's vocabulary is the uncased WordPiece of BERT-base, 30,522 tokens (UniLMv2 §4.1):
# with BERT-base-uncased's vocab.txt,
#   python scripts/tokenize_text.py --bpe wordpiece --wordpiece-vocab vocab.txt \
#       --inputs corpus.train corpus.valid --outputs train.wp valid.wp
#   fairseq-preprocess --user-dir unilm_fairseq --task pmlm --only-source --srcdict vocab.txt \
#       --trainpref train.wp --validpref valid.wp --destdir DATA_BIN --workers 8
# keeps BERT's token ids ([MASK] serves as the pseudo mask). A sentencepiece vocabulary of your own
# (scripts/prepare_corpus.py) works too, but is not the paper's.
#
# Settings (environment overrides):
#   GPUS=8               GPUs (hardware; the paper used 64 V100s, §4.1)
#   MAX_SENTENCES=32     sequences per GPU per step (this project's choice: memory only, --update-freq keeps
#                        TOTAL_BATCH)
#   TOTAL_BATCH=7680     sequences per update (UniLMv2 §4.1, Table 7); must be a multiple of
#                        GPUS * MAX_SENTENCES
#   TOKENS_PER_SAMPLE=512  maximum input length (UniLMv2 §4.1)
#   MASK_PROB=0.15       share of tokens masked (UniLMv2 §4.1, Algorithm 1)
#   SPAN_PROB=0.4        a masking step is a span 40% of the time (UniLMv2 §3.1.2, Algorithm 1)
#   MIN_SPAN=2           shortest span (UniLMv2 Algorithm 1: rand_int(2, 6))
#   MAX_SPAN=6           longest span (UniLMv2 Algorithm 1, §4.1: up to 6-grams)
#   LEAVE_UNMASKED_PROB=0.1  masked inputs kept as they are (UniLMv2 §4.1: 80% [MASK], 10% random, 10% kept)
#   RANDOM_TOKEN_PROB=0.1    masked inputs replaced by a random token (UniLMv2 §4.1)
#   MAX_REL_POS=128      maximum relative position of the relative position bias (UniLMv2 Table 7)
#   LR=6e-4              peak learning rate (UniLMv2 §4.1, Table 7)
#   WARMUP=24000         linear warm-up updates, then linear decay (UniLMv2 §4.1; Table 7's ratio 0.048 of
#                        0.5M)
#   STEPS=500000         updates (UniLMv2 §4.1, Table 7: 0.5M)
#   ADAM_EPS=1e-6        Adam epsilon (UniLMv2 §4.1, Table 7)
#   WEIGHT_DECAY=0.01    (UniLMv2 §4.1, Table 7)
#   CLIP_NORM=0.0        gradient clipping, 0 = none (UniLMv2 Table 7)
#   DROPOUT=0.1          dropout and attention dropout (UniLMv2 §4.1, Table 7)
# Fixed below: Adam betas (0.9, 0.98) (UniLMv2 §4.1, Table 7); linear schedule (polynomial_decay, power 1;
# UniLMv2 Table 7); --fp16 (this project's choice: the paper does not say).
case "${1:-}" in -h | --help) awk 'NR > 1 && !/^#/ {exit} NR > 1 {sub(/^# ?/, ""); print}' "$0"; exit 0 ;; esac  # usage, before any work
set -euo pipefail
DATA_BIN=$1
SAVE_DIR=$2
shift 2
: "${GPUS:=8}" "${MAX_SENTENCES:=32}" "${TOTAL_BATCH:=7680}" "${TOKENS_PER_SAMPLE:=512}"
: "${MASK_PROB:=0.15}" "${SPAN_PROB:=0.4}" "${MIN_SPAN:=2}" "${MAX_SPAN:=6}"
: "${LEAVE_UNMASKED_PROB:=0.1}" "${RANDOM_TOKEN_PROB:=0.1}" "${MAX_REL_POS:=128}"
: "${LR:=6e-4}" "${WARMUP:=24000}" "${STEPS:=500000}" "${ADAM_EPS:=1e-6}" "${WEIGHT_DECAY:=0.01}"
: "${CLIP_NORM:=0.0}" "${DROPOUT:=0.1}"
if (( TOTAL_BATCH % (GPUS * MAX_SENTENCES) )); then
  echo "TOTAL_BATCH=$TOTAL_BATCH is not a multiple of GPUS*MAX_SENTENCES=$(( GPUS * MAX_SENTENCES ))" >&2
  exit 1
fi
UPDATE_FREQ=$(( TOTAL_BATCH / (GPUS * MAX_SENTENCES) ))

fairseq-train "$DATA_BIN" --user-dir unilm_fairseq \
  --task pmlm --arch unilmv2_base --criterion ae_par --max-rel-pos "$MAX_REL_POS" \
  --tokens-per-sample "$TOKENS_PER_SAMPLE" --sample-break-mode complete_doc \
  --mask-prob "$MASK_PROB" --span-prob "$SPAN_PROB" --min-span-length "$MIN_SPAN" \
  --max-span-length "$MAX_SPAN" --leave-unmasked-prob "$LEAVE_UNMASKED_PROB" \
  --random-token-prob "$RANDOM_TOKEN_PROB" --objectives ae,par \
  --optimizer adam --adam-betas '(0.9, 0.98)' --adam-eps "$ADAM_EPS" --weight-decay "$WEIGHT_DECAY" \
  --clip-norm "$CLIP_NORM" --lr "$LR" --lr-scheduler polynomial_decay --warmup-updates "$WARMUP" \
  --total-num-update "$STEPS" --max-update "$STEPS" \
  --batch-size "$MAX_SENTENCES" --update-freq "$UPDATE_FREQ" \
  --dropout "$DROPOUT" --attention-dropout "$DROPOUT" --fp16 \
  --save-dir "$SAVE_DIR" --save-interval-updates 10000 --keep-interval-updates 5 \
  --log-format simple --log-interval 100 "$@"
