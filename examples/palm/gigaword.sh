#!/usr/bin/env bash
# Gigaword headline generation: fine-tune a pre-trained PALM, decode, score.
#
#   PRETRAINED=palm-base/checkpoint_best.pt bash examples/palm/gigaword.sh RAW_DIR WORK_DIR [train flags]
#
# RAW_DIR: the harvardnlp/sent-summary release ({train,valid,test}.src.txt/.tgt.txt or *.article.txt/
# *.title.txt); its "UNK" becomes the vocabulary's unknown token (UNK_TOKEN). Shared variables are
# documented in pipeline.sh.
#
# No published setting is cited for PALM on Gigaword (README.md, "PALM"): every value below is
# this project's choice, in line with the CNN/DM recipe and common Gigaword practice.
#   MAX_SRC=128 MAX_TGT=48      source / target tokens
#   TOTAL_BATCH=128 BATCH_PER_GPU=32
#   LR=3e-5 WARMUP=4000 STEPS=50000 DROPOUT=0.1 LABEL_SMOOTHING=0.1 WEIGHT_DECAY=0.0 CLIP_NORM=0.0
#   SAVE_INTERVAL=5000
#   BEAM=5 LENPEN=1.0 NO_REPEAT_NGRAM=3 MIN_LEN=1 MAX_LEN_B=32 GEN_BATCH=64
#   UNK_TOKEN=<unk>             what the released "UNK" becomes ([UNK] for BERT vocabularies)
#   METRICS=rouge
set -euo pipefail
: "${MAX_SRC:=128}" "${MAX_TGT:=48}" "${TOTAL_BATCH:=128}" "${BATCH_PER_GPU:=32}" "${LR:=3e-5}"
: "${WARMUP:=4000}" "${STEPS:=50000}" "${DROPOUT:=0.1}" "${LABEL_SMOOTHING:=0.1}" "${WEIGHT_DECAY:=0.0}"
: "${CLIP_NORM:=0.0}" "${SAVE_INTERVAL:=5000}" "${BEAM:=5}" "${LENPEN:=1.0}" "${NO_REPEAT_NGRAM:=3}"
: "${MIN_LEN:=1}" "${MAX_LEN_B:=32}" "${GEN_BATCH:=64}" "${UNK_TOKEN:=<unk>}" "${METRICS:=rouge}"
# shellcheck source=pipeline.sh
source "$(dirname "${BASH_SOURCE[0]}")/pipeline.sh"

palm_prepare() {
  # shellcheck disable=SC2046  # the tokenizer flags are words on purpose
  "$PYTHON" "$PALM_REPO/scripts/prepare_seq2seq_data.py" --format gigaword --input "$1" --output "$2" \
    --unk-token "$UNK_TOKEN" --max-source-tokens $((MAX_SRC - 1)) $(palm_tokenizer_flags) ${EXTRA_PREP:-}
}

palm_main "$@"
