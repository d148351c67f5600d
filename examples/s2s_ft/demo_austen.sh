#!/usr/bin/env bash
# Fine-tune the demo UniLMv2 checkpoint with pseudo-masked s2s-ft, generate with beam search, score ROUGE.
#   bash examples/s2s_ft/demo_austen.sh [WORKDIR]
# Needs examples/unilmv2_pretrain/demo.sh to have run on the same WORKDIR (its vocabulary, dictionary and
# checkpoint). The demo pairs are lead-sentence extraction built from real text: each source is three
# consecutive sentences of a held-in chapter, its target the first of them (scripts/prepare_corpus.py).
case "${1:-}" in -h | --help) awk 'NR > 1 && !/^#/ {exit} NR > 1 {sub(/^# ?/, ""); print}' "$0"; exit 0 ;; esac  # usage, before any work
set -euo pipefail
REPO=$(cd "$(dirname "$0")/../.." && pwd)
WORK=${1:-work/demo}
WORK=$(mkdir -p "$WORK" && cd "$WORK" && pwd)  # a relative WORKDIR is the caller's, not the repository's
UPDATES=${S2S_UPDATES:-500}
cd "$REPO"

echo "== 1/3 fairseq-preprocess the pairs with the pre-training dictionary"
rm -rf "$WORK/s2s-bin"
fairseq-preprocess --source-lang src --target-lang tgt \
  --srcdict "$WORK/bin/dict.txt" --tgtdict "$WORK/bin/dict.txt" \
  --trainpref "$WORK/text/train" --validpref "$WORK/text/valid" --testpref "$WORK/text/test" \
  --destdir "$WORK/s2s-bin" --workers 2

echo "== 2/3 fairseq-train --task unilm_seq2seq --finetune-method pseudo_masked ($UPDATES updates on CPU)"
rm -rf "$WORK/s2s-checkpoints"
fairseq-train "$WORK/s2s-bin" --user-dir unilm_fairseq \
  --task unilm_seq2seq --finetune-method pseudo_masked --arch unilmv2_tiny \
  --criterion unilm_seq2seq --label-smoothing 0.1 \
  --pretrained-checkpoint "$WORK/checkpoints/checkpoint_last.pt" \
  --max-source-positions 128 --max-target-positions 64 --batch-size 32 \
  --optimizer adam --adam-betas '(0.9, 0.999)' --weight-decay 0.01 --clip-norm 1.0 \
  --lr 1e-3 --lr-scheduler polynomial_decay --warmup-updates 50 --total-num-update "$UPDATES" \
  --max-update "$UPDATES" --no-epoch-checkpoints --save-interval-updates "$UPDATES" \
  --validate-interval-updates 250 --log-format simple --log-interval 50 --cpu --num-workers 0 --seed 1 \
  --save-dir "$WORK/s2s-checkpoints" 2>&1 | tee "$WORK/s2s-train.log" | grep -E "train_inner|valid on|initialised|Error"

echo "== 3/3 fairseq-generate: beam 5, length penalty 0.9, trigram blocking"
fairseq-generate "$WORK/s2s-bin" --user-dir unilm_fairseq --task unilm_seq2seq \
  --path "$WORK/s2s-checkpoints/checkpoint_last.pt" --gen-subset test \
  --max-source-positions 128 --max-target-positions 64 \
  --beam 5 --lenpen 0.9 --no-repeat-ngram-size 3 --min-len 3 --max-len-b 60 \
  --batch-size 32 --required-batch-size-multiple 1 --post-process sentencepiece \
  --scoring rouge --cpu > "$WORK/generate.out" 2> "$WORK/generate.log"
grep -E "^(S|T|D)-0\s" "$WORK/generate.out" | cut -c1-160
tail -1 "$WORK/generate.out"
python scripts/score.py --generate-output "$WORK/generate.out" --metrics rouge,bleu
