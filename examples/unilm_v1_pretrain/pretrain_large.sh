#!/usr/bin/env bash
# UniLM v1 (LARGE) pre-training with the paper's settings: UniLM v1 (Dong et al. 2019) §2.3-2.4.
# BERT-large sizes (24 layers / 1024 hidden / 16 heads, GELU; --arch unilm_v1_large), initialised from
# BERT-large; per batch 1/3 bidirectional LM (+ next-sentence prediction), 1/3 seq2seq LM, 1/6
# left-to-right, 1/6 right-to-left.
#
#   bash examples/unilm_v1_pretrain/pretrain_large.sh DATA_BIN SAVE_DIR [extra fairseq-train flags]
#
# DATA_BIN comes from `fairseq-preprocess --only-source` (one sentence per line, empty lines between
# documents) with the initial model's dict.txt (--srcdict); the paper's vocabulary is BERT-large-cased's
# WordPiece, 28,996 tokens (UniLM v1 §2.4). INIT is a BERT-large converted by
#   python scripts/convert_hf_checkpoint.py path/to/bert-large-cased out/bert_large
# (its 2 segment rows become segment ids 0-1; ids 2-5 and the NSP head start fresh); INIT=none trains from
# scratch.
#
# Settings (environment overrides):
#   GPUS=8               GPUs (hardware; the paper used 8 V100s, §2.4)
#   TOTAL_BATCH=330      sequences per update (UniLM v1 §2.4). GPUS x MAX_SENTENCES x the update frequency
#                        gives it exactly when it divides 330 (6 x 55, 10 x 33), else the nearest size above
#   MAX_SENTENCES        sequences per GPU per step [TOTAL_BATCH / GPUS, rounded up: 42 on 8 GPUs] (this
#                        project's choice: memory only)
#   TOKENS_PER_SAMPLE=512  maximum input length (UniLM v1 §2.4)
#   OBJECTIVE_WEIGHTS=2,2,1,1  bidirectional, seq2seq, left-to-right, right-to-left: 1/3, 1/3, 1/6, 1/6
#                        (UniLM v1 §2.4)
#   NSP_RANDOM_PROB=0.5  next-sentence pairs with a random second segment (UniLM v1 §2.3 takes NSP "as in"
#                        BERT, whose negatives are half the pairs)
#   MASK_PROB=0.15       share of tokens masked (UniLM v1 §2.4)
#   SPAN_PROB=0.2        a pick is a bigram or trigram 20% of the time, else one token (UniLM v1 §2.4)
#   MAX_SPAN=3           longest masked n-gram: a trigram (UniLM v1 §2.4)
#   LEAVE_UNMASKED_PROB=0.1  masked inputs kept as they are (UniLM v1 §2.4: 80% [MASK], 10% random, 10% kept)
#   RANDOM_TOKEN_PROB=0.1    masked inputs replaced by a random token (UniLM v1 §2.4)
#   LR=3e-5              peak learning rate (UniLM v1 §2.4)
#   WARMUP=40000         linear warm-up updates, then linear decay (UniLM v1 §2.4)
#   STEPS=770000         updates (UniLM v1 §2.4: "about 770,000")
#   ADAM_EPS=1e-6        Adam epsilon (this project's choice: UniLM v1 names none; BERT's value)
#   WEIGHT_DECAY=0.01    (UniLM v1 §2.4)
#   CLIP_NORM=1.0        gradient-norm clipping (this project's choice: §2.4 names none; UniLM v1 §3.5
#                        clips at 1 when fine-tuning)
#   DROPOUT=0.1          dropout and attention dropout (UniLM v1 §2.4)
# Fixed below: Adam betas (0.9, 0.999) (UniLM v1 §2.4); linear decay (polynomial_decay, power 1; §2.4);
# --fp16 (UniLM v1 §2.4: mixed precision training).
case "${1:-}" in -h | --help) awk 'NR > 1 && !/^#/ {exit} NR > 1 {sub(/^# ?/, ""); print}' "$0"; exit 0 ;; esac  # usage, before any work
set -euo pipefail
DATA_BIN=$1
SAVE_DIR=$2
shift 2
: "${INIT:=out/bert_large/model.pt}" "${GPUS:=8}" "${TOTAL_BATCH:=330}"
: "${MAX_SENTENCES:=$(( (TOTAL_BATCH + GPUS - 1) / GPUS ))}" "${TOKENS_PER_SAMPLE:=512}"
: "${OBJECTIVE_WEIGHTS:=2,2,1,1}" "${NSP_RANDOM_PROB:=0.5}" "${MASK_PROB:=0.15}" "${SPAN_PROB:=0.2}"
: "${MAX_SPAN:=3}" "${LEAVE_UNMASKED_PROB:=0.1}" "${RANDOM_TOKEN_PROB:=0.1}"
: "${LR:=3e-5}" "${WARMUP:=40000}" "${STEPS:=770000}" "${ADAM_EPS:=1e-6}" "${WEIGHT_DECAY:=0.01}"
: "${CLIP_NORM:=1.0}" "${DROPOUT:=0.1}"
UPDATE_FREQ=$(( (TOTAL_BATCH + GPUS * MAX_SENTENCES - 1) / (GPUS * MAX_SENTENCES) ))
echo "batch per update: $(( GPUS * MAX_SENTENCES * UPDATE_FREQ )) sequences (the paper: 330)"
INIT_FLAGS=()
if [ "$INIT" != none ]; then
  INIT_FLAGS=(--pretrained-checkpoint "$INIT")
fi

fairseq-train "$DATA_BIN" --user-dir unilm_fairseq \
  --task unilm --arch unilm_v1_large --criterion unilm "${INIT_FLAGS[@]}" \
  --tokens-per-sample "$TOKENS_PER_SAMPLE" --sample-break-mode complete_doc \
  --objective-weights "$OBJECTIVE_WEIGHTS" --nsp-random-prob "$NSP_RANDOM_PROB" \
  --mask-prob "$MASK_PROB" --span-prob "$SPAN_PROB" --max-span-length "$MAX_SPAN" \
  --leave-unmasked-prob "$LEAVE_UNMASKED_PROB" --random-token-prob "$RANDOM_TOKEN_PROB" \
  --optimizer adam --adam-betas '(0.9, 0.999)' --adam-eps "$ADAM_EPS" --weight-decay "$WEIGHT_DECAY" \
  --clip-norm "$CLIP_NORM" --lr "$LR" --lr-scheduler polynomial_decay --warmup-updates "$WARMUP" \
  --total-num-update "$STEPS" --max-update "$STEPS" \
  --batch-size "$MAX_SENTENCES" --update-freq "$UPDATE_FREQ" \
  --dropout "$DROPOUT" --attention-dropout "$DROPOUT" --fp16 \
  --save-dir "$SAVE_DIR" --save-interval-updates 10000 --keep-interval-updates 5 \
  --log-format simple --log-interval 100 "$@"
