#!/usr/bin/env bash
# Pre-train a tiny UniLMv2 (pseudo-masked LM, AE + PAR losses) on the embedded Austen corpus, on CPU.
#   bash examples/unilmv2_pretrain/demo.sh [WORKDIR]
# Steps: sentencepiece vocabulary -> fairseq-preprocess --only-source -> fairseq-train -> fairseq-validate.
case "${1:-}" in -h | --help) awk 'NR > 1 && !/^#/ {exit} NR > 1 {sub(/^# ?/, ""); print}' "$0"; exit 0 ;; esac  # usage, before any work
set -euo pipefail
REPO=$(cd "$(dirname "$0")/../.." && pwd)
WORK=${1:-work/demo}
WORK=$(mkdir -p "$WORK" && cd "$WORK" && pwd)  # a relative WORKDIR is the caller's, not the repository's
DOCS=${DOCS:-60}            # chapters of the embedded corpus to use (269 in all)
UPDATES=${UPDATES:-300}
mkdir -p "$WORK"
cd "$REPO"

echo "== 1/4 sentencepiece vocabulary on the first $DOCS chapters of data/austen.txt.xz"
python scripts/prepare_corpus.py --out "$WORK/text" --max-docs "$DOCS" --valid-docs 2 --vocab-size 4000 --pairs-window 3

echo "== 2/4 fairseq-preprocess --only-source"
rm -rf "$WORK/bin"
fairseq-preprocess --only-source --trainpref "$WORK/text/train.spm" --validpref "$WORK/text/valid.spm" \
  --destdir "$WORK/bin" --workers 2

echo "== 3/4 fairseq-train --task pmlm --arch unilmv2_tiny --criterion ae_par ($UPDATES updates on CPU)"
rm -rf "$WORK/checkpoints"
fairseq-train "$WORK/bin" --user-dir unilm_fairseq \
  --task pmlm --arch unilmv2_tiny --criterion ae_par \
  --tokens-per-sample 128 --batch-size 32 \
  --optimizer adam --adam-betas '(0.9, 0.98)' --weight-decay 0.01 --clip-norm 1.0 \
  --lr 1e-3 --lr-scheduler polynomial_decay --warmup-updates 30 --total-num-update "$UPDATES" \
  --max-update "$UPDATES" --validate-interval-updates 100 --save-interval-updates 100 \
  --keep-interval-updates 1 --no-epoch-checkpoints \
  --log-format simple --log-interval 25 --cpu --num-workers 0 --seed 1 \
  --save-dir "$WORK/checkpoints" 2>&1 | tee "$WORK/train.log"

echo "== 4/4 fairseq-validate on the held-out chapters"
fairseq-validate "$WORK/bin" --user-dir unilm_fairseq --task pmlm --path "$WORK/checkpoints/checkpoint_last.pt" \
  --tokens-per-sample 128 --batch-size 32 --cpu --num-workers 0 2>&1 | grep -E "valid on|Error"

echo "== AE and PAR training losses (base 2, per predicted token)"
python scripts/loss_table.py "$WORK/train.log" --require-falling
