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
#   fairseq-preprocess --user-dir "$PAIRS_REPO/unilm_fairseq" --task pmlm --only-source --srcdict vocab.txt \
#       --trainpref train.wp --validpref valid.wp --destdir DATA_BIN --workers 8
# keeps BERT's token ids ([MASK] serves as the pseudo mask). A sentencepiece vocabulary of your own
# (scripts/prepare_corpus.py) works too, but is not the paper's.
#
# Settings: examples/unilmv2_pretrain/config/pretrain_base.yaml (the fairseq-hydra-train config) holds every
# value, each with its paper and section; docs/recipes.md tables them and `bash pretrain_base.sh -h` lists
# them. An environment variable of a setting's name overrides it (GPUS=16, MAX_SENTENCES=16, STEPS=1000);
# TOTAL_BATCH must be a multiple of GPUS * MAX_SENTENCES (--update-freq makes up the rest).
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
read_recipe_config "$PAIRS_REPO/examples/unilmv2_pretrain/config/pretrain_base.yaml"
if (( TOTAL_BATCH % (GPUS * MAX_SENTENCES) )); then
  echo "TOTAL_BATCH=$TOTAL_BATCH is not a multiple of GPUS*MAX_SENTENCES=$(( GPUS * MAX_SENTENCES ))" >&2
  exit 1
fi
UPDATE_FREQ=$(( TOTAL_BATCH / (GPUS * MAX_SENTENCES) ))

fairseq-train "$DATA_BIN" --user-dir "$PAIRS_REPO/unilm_fairseq" \
  --task pmlm --arch unilmv2_base --criterion ae_par --max-rel-pos "$MAX_REL_POS" \
  --tokens-per-sample "$TOKENS_PER_SAMPLE" --sample-break-mode complete_doc \
  --mask-prob "$MASK_PROB" --span-prob "$SPAN_PROB" --min-span-length "$MIN_SPAN" \
  --max-span-length "$MAX_SPAN" --leave-unmasked-prob "$LEAVE_UNMASKED_PROB" \
  --random-token-prob "$RANDOM_TOKEN_PROB" --objectives ae,par \
  --optimizer adam --adam-betas '(0.9, 0.98)' --adam-eps "$ADAM_EPS" --weight-decay "$WEIGHT_DECAY" \
  --clip-norm "$CLIP_NORM" --lr "$LR" --lr-scheduler polynomial_decay --warmup-updates "$WARMUP" \
  --total-num-update "$STEPS" --max-update "$STEPS" \
  --batch-size "$MAX_SENTENCES" --update-freq "$UPDATE_FREQ" --distributed-world-size "$GPUS" \
  --dropout "$DROPOUT" --attention-dropout "$DROPOUT" --fp16 \
  --save-dir "$SAVE_DIR" --save-interval-updates 10000 --keep-interval-updates 5 \
  --log-format simple --log-interval 100 "$@"
