#!/usr/bin/env bash
# PALM's two pre-training stages with a tiny model on the embedded Austen corpus, on CPU.
#   bash examples/palm/pretrain_demo.sh [WORKDIR]
# Steps: sentencepiece vocabulary -> fairseq-preprocess --only-source -> stage 1 (encoder masked LM on the
# first 80% of each window) -> stage 2 (the decoder generates the last 20%, pointer-generator; PALM §2.2's
# stage-2 loss alone) started from stage 1's encoder -> fairseq-validate.
case "${1:-}" in -h | --help) awk 'NR > 1 && !/^#/ {exit} NR > 1 {sub(/^# ?/, ""); print}' "$0"; exit 0 ;; esac  # usage, before any work
set -euo pipefail
REPO=$(cd "$(dirname "$0")/../.." && pwd)
WORK=${1:-work/palm_demo}
WORK=$(mkdir -p "$WORK" && cd "$WORK" && pwd)  # a relative WORKDIR is the caller's, not the repository's
DOCS=${DOCS:-30}                      # chapters of the embedded corpus to use (269 in all)
STAGE1_UPDATES=${STAGE1_UPDATES:-300}
STAGE2_UPDATES=${STAGE2_UPDATES:-300}
FRAGMENT=${FRAGMENT:-128}             # tokens per window (the paper uses 500)
# hard limits scaled down with the window, in the paper's 400:100 proportion (PALM §2.2: 400 and 100 of 500)
MAX_CONTEXT=${MAX_CONTEXT:-$(( FRAGMENT * 4 / 5 ))}
MAX_CONTINUATION=${MAX_CONTINUATION:-$(( FRAGMENT - MAX_CONTEXT ))}
mkdir -p "$WORK"
cd "$REPO"

echo "== 1/5 sentencepiece vocabulary on the first $DOCS chapters of data/austen.txt.xz"
python scripts/prepare_corpus.py --out "$WORK/text" --max-docs "$DOCS" --valid-docs 2 --vocab-size 4000

echo "== 2/5 fairseq-preprocess --only-source (one sentence per line, empty line between chapters)"
rm -rf "$WORK/bin"
fairseq-preprocess --only-source --trainpref "$WORK/text/train.spm" --validpref "$WORK/text/valid.spm" \
  --destdir "$WORK/bin" --workers 2

COMMON=(--user-dir unilm_fairseq --task palm_pretrain --arch palm_tiny --criterion palm
  --max-fragment-tokens "$FRAGMENT" --max-context-tokens "$MAX_CONTEXT"
  --max-continuation-tokens "$MAX_CONTINUATION" --context-ratio 0.8 --batch-size 16
  --optimizer adam --adam-betas '(0.9, 0.98)' --weight-decay 0.01 --clip-norm 1.0
  --lr 1e-3 --lr-scheduler polynomial_decay --warmup-updates 30
  --no-epoch-checkpoints --log-format simple --log-interval 25 --cpu --num-workers 0 --seed 1)

echo "== 3/5 stage 1: encoder masked LM on the contexts ($STAGE1_UPDATES updates)"
rm -rf "$WORK/stage1"
fairseq-train "$WORK/bin" "${COMMON[@]}" --stage 1 \
  --total-num-update "$STAGE1_UPDATES" --max-update "$STAGE1_UPDATES" \
  --save-dir "$WORK/stage1" 2>&1 | tee "$WORK/stage1.log"

echo "== 4/5 stage 2: continuation (pointer-generator), encoder from stage 1 ($STAGE2_UPDATES updates)"
rm -rf "$WORK/stage2"
fairseq-train "$WORK/bin" "${COMMON[@]}" --stage 2 --label-smoothing 0.1 \
  --stage1-checkpoint "$WORK/stage1/checkpoint_last.pt" \
  --total-num-update "$STAGE2_UPDATES" --max-update "$STAGE2_UPDATES" \
  --save-dir "$WORK/stage2" 2>&1 | tee "$WORK/stage2.log"

echo "== 5/5 fairseq-validate the stage-2 model on the held-out chapters"
fairseq-validate "$WORK/bin" --user-dir unilm_fairseq --task palm_pretrain --stage 2 \
  --path "$WORK/stage2/checkpoint_last.pt" --max-fragment-tokens "$FRAGMENT" \
  --max-context-tokens "$MAX_CONTEXT" --max-continuation-tokens "$MAX_CONTINUATION" --batch-size 16 \
  --required-batch-size-multiple 1 --cpu --num-workers 0 2>&1 | grep -E "valid on|Error"

echo "== losses (base 2, per predicted token)"
echo "-- stage 1"
python scripts/loss_table.py "$WORK/stage1.log" --require-falling
echo "-- stage 2"
python scripts/loss_table.py "$WORK/stage2.log" --require-falling
