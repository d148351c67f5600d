#!/usr/bin/env bash
# UniLM v1 (LARGE) pre-training with the paper's settings (Dong et al. 2019, section 2.3):
# BERT-large sizes (24 layers / 1024 hidden / 16 heads, GELU), initialised from BERT-large, 512-token inputs;
# per batch 1/3 bidirectional LM (+ next-sentence prediction), 1/3 seq2seq LM, 1/6 left-to-right, 1/6
# right-to-left; 15% of tokens masked (80% [MASK], 10% random, 10% unchanged), 80% of the picks one token and
# 20% a bigram or trigram; Adam (0.9, 0.999; eps 1e-6 as in BERT), lr 3e-5 with 40K linear warm-up steps then linear decay,
# weight decay 0.01, dropout 0.1, batch 330 sequences, about 770K updates, mixed precision.
#
#   bash examples/unilm_v1_pretrain/pretrain_large.sh DATA_BIN SAVE_DIR [extra fairseq-train flags]
#
# DATA_BIN comes from `fairseq-preprocess --only-source` (one sentence per line, empty lines between
# documents) with the initial model's dict.txt (--srcdict). INIT is a BERT-large converted by
#   python scripts/convert_hf_checkpoint.py path/to/bert-large-cased out/bert_large
# (its 2 segment rows become segment ids 0-1; ids 2-5 and the NSP head start fresh); INIT=none trains from
# scratch. Set GPUS and MAX_SENTENCES to your hardware: the update frequency brings the batch to 330 (or the
# nearest size above it that GPUS x MAX_SENTENCES x UPDATE_FREQ can make; 6 x 55 or 10 x 33 give 330 exactly).
set -euo pipefail
DATA_BIN=$1
SAVE_DIR=$2
shift 2
INIT=${INIT:-out/bert_large/model.pt}
GPUS=${GPUS:-8}
MAX_SENTENCES=${MAX_SENTENCES:-$(( (330 + GPUS - 1) / GPUS ))}
UPDATE_FREQ=$(( (330 + GPUS * MAX_SENTENCES - 1) / (GPUS * MAX_SENTENCES) ))
echo "batch per update: $(( GPUS * MAX_SENTENCES * UPDATE_FREQ )) sequences (the paper: 330)"
INIT_FLAGS=()
if [ "$INIT" != none ]; then
  INIT_FLAGS=(--pretrained-checkpoint "$INIT")
fi

fairseq-train "$DATA_BIN" --user-dir unilm_fairseq \
  --task unilm --arch unilm_v1_large --criterion unilm "${INIT_FLAGS[@]}" \
  --tokens-per-sample 512 --sample-break-mode complete_doc \
  --objective-weights 2,2,1,1 --nsp-random-prob 0.5 \
  --mask-prob 0.15 --span-prob 0.2 --max-span-length 3 --leave-unmasked-prob 0.1 --random-token-prob 0.1 \
  --optimizer adam --adam-betas '(0.9, 0.999)' --adam-eps 1e-6 --weight-decay 0.01 --clip-norm 1.0 \
  --lr 3e-5 --lr-scheduler polynomial_decay --warmup-updates 40000 --total-num-update 770000 \
  --max-update 770000 --batch-size "$MAX_SENTENCES" --update-freq "$UPDATE_FREQ" \
  --dropout 0.1 --attention-dropout 0.1 --fp16 \
  --save-dir "$SAVE_DIR" --save-interval-updates 10000 --keep-interval-updates 5 \
  --log-format simple --log-interval 100 "$@"
