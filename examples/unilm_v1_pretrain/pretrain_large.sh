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
# Settings: examples/unilm_v1_pretrain/config/pretrain_large.yaml (the fairseq-hydra-train config) holds
# every value, each with its paper and section; docs/recipes.md tables them and `bash pretrain_large.sh -h`
# lists them. An environment variable of a setting's name overrides it (GPUS=16, STEPS=1000). MAX_SENTENCES,
# the sequences per GPU per step, is TOTAL_BATCH / GPUS rounded up unless set; GPUS x MAX_SENTENCES x the
# update frequency gives TOTAL_BATCH exactly when it divides it (330 = 6 x 55, 10 x 33), else the nearest
# size above.
set -euo pipefail
# shellcheck source=../common/pairs.sh
source "$(dirname "${BASH_SOURCE[0]}")/../common/pairs.sh"
answer_help "$@"  # -h: this header and the config's settings, before any work
if [ $# -lt 2 ]; then
  echo "usage: bash $0 DATA_BIN SAVE_DIR [fairseq-train flags] (-h: the settings)" >&2
  exit 1
fi
DATA_BIN=$1
SAVE_DIR=$2
shift 2
read_recipe_config "$PAIRS_REPO/examples/unilm_v1_pretrain/config/pretrain_large.yaml"
: "${INIT:=out/bert_large/model.pt}" "${MAX_SENTENCES:=$(( (TOTAL_BATCH + GPUS - 1) / GPUS ))}"
UPDATE_FREQ=$(( (TOTAL_BATCH + GPUS * MAX_SENTENCES - 1) / (GPUS * MAX_SENTENCES) ))
echo "batch per update: $(( GPUS * MAX_SENTENCES * UPDATE_FREQ )) sequences (TOTAL_BATCH=$TOTAL_BATCH)"
INIT_FLAGS=()
if [ "$INIT" != none ]; then
  INIT_FLAGS=(--pretrained-checkpoint "$INIT")
fi

fairseq-train "$DATA_BIN" --user-dir "$PAIRS_REPO/unilm_fairseq" \
  --task unilm --arch unilm_v1_large --criterion unilm "${INIT_FLAGS[@]}" \
  --tokens-per-sample "$TOKENS_PER_SAMPLE" --sample-break-mode complete_doc \
  --objective-weights "$OBJECTIVE_WEIGHTS" --nsp-random-prob "$NSP_RANDOM_PROB" \
  --mask-prob "$MASK_PROB" --span-prob "$SPAN_PROB" --max-span-length "$MAX_SPAN" \
  --leave-unmasked-prob "$LEAVE_UNMASKED_PROB" --random-token-prob "$RANDOM_TOKEN_PROB" \
  --optimizer adam --adam-betas '(0.9, 0.999)' --adam-eps "$ADAM_EPS" --weight-decay "$WEIGHT_DECAY" \
  --clip-norm "$CLIP_NORM" --lr "$LR" --lr-scheduler polynomial_decay --warmup-updates "$WARMUP" \
  --total-num-update "$STEPS" --max-update "$STEPS" \
  --batch-size "$MAX_SENTENCES" --update-freq "$UPDATE_FREQ" --distributed-world-size "$GPUS" \
  --dropout "$DROPOUT" --attention-dropout "$DROPOUT" --fp16 \
  --save-dir "$SAVE_DIR" --save-interval-updates 10000 --keep-interval-updates 5 \
  --log-format simple --log-interval 100 "$@"
