#!/usr/bin/env bash
# MS MARCO generative QA (passage + question -> answer): fine-tune a pre-trained PALM, decode, score.
#
#   PRETRAINED=palm-base/checkpoint_best.pt bash examples/palm/marco.sh RAW_DIR WORK_DIR [train flags]
#
# RAW_DIR holds the official release files train_v2.1.json(.gz) and dev_v2.1.json(.gz) (or set TRAIN_JSON
# and DEV_JSON). The public eval file has no answers, so the dev set is split: its first VALID_SIZE
# examples validate, the rest are the test set that is decoded and scored (ROUGE-L and BLEU, the official
# MARCO metrics up to their normalisation). ANSWER_TYPE=well_formed trains on the natural-language answers
# (the NLG task), answers on the QA task's. Shared variables are documented in pipeline.sh.
#
# No published setting is cited for PALM's MARCO fine-tuning (README.md, "PALM"): every value
# below is this project's choice.
#   MAX_SRC=512 MAX_TGT=64      source / target tokens
#   TOTAL_BATCH=64 BATCH_PER_GPU=8
#   LR=3e-5 WARMUP=2000 STEPS=30000 DROPOUT=0.1 LABEL_SMOOTHING=0.1 WEIGHT_DECAY=0.0 CLIP_NORM=0.0
#   SAVE_INTERVAL=2000
#   BEAM=5 LENPEN=1.0 NO_REPEAT_NGRAM=3 MIN_LEN=1 MAX_LEN_B=64 GEN_BATCH=32
#   ANSWER_TYPE=well_formed PASSAGES=selected SEPARATOR=[SEP] VALID_SIZE=1000
#   METRICS=rouge,bleu
set -euo pipefail
: "${MAX_SRC:=512}" "${MAX_TGT:=64}" "${TOTAL_BATCH:=64}" "${BATCH_PER_GPU:=8}" "${LR:=3e-5}"
: "${WARMUP:=2000}" "${STEPS:=30000}" "${DROPOUT:=0.1}" "${LABEL_SMOOTHING:=0.1}" "${WEIGHT_DECAY:=0.0}"
: "${CLIP_NORM:=0.0}" "${SAVE_INTERVAL:=2000}" "${BEAM:=5}" "${LENPEN:=1.0}" "${NO_REPEAT_NGRAM:=3}"
: "${MIN_LEN:=1}" "${MAX_LEN_B:=64}" "${GEN_BATCH:=32}" "${ANSWER_TYPE:=well_formed}"
: "${PASSAGES:=selected}" "${SEPARATOR:=[SEP]}" "${VALID_SIZE:=1000}" "${METRICS:=rouge,bleu}"
# shellcheck source=pipeline.sh
source "$(dirname "${BASH_SOURCE[0]}")/pipeline.sh"

palm_marco_file() {  # the release file NAME in RAW_DIR, gzipped or not
  if [ -f "$1/$2.gz" ]; then echo "$1/$2.gz"; else echo "$1/$2"; fi
}

palm_prepare() {
  local raw=$1 text=$2
  local train_json=${TRAIN_JSON:-$(palm_marco_file "$raw" train_v2.1.json)}
  local dev_json=${DEV_JSON:-$(palm_marco_file "$raw" dev_v2.1.json)}
  local flags=(--answer-type "$ANSWER_TYPE" --passages "$PASSAGES" --separator "$SEPARATOR"
               --max-source-tokens $((MAX_SRC - 1)))
  # shellcheck disable=SC2046  # the tokenizer flags are words on purpose
  "$PYTHON" "$PALM_REPO/scripts/prepare_marco_data.py" --input "$train_json" --split train --output "$text" \
    "${flags[@]}" $(palm_tokenizer_flags)
  # shellcheck disable=SC2046
  "$PYTHON" "$PALM_REPO/scripts/prepare_marco_data.py" --input "$dev_json" --split dev --output "$text" \
    "${flags[@]}" $(palm_tokenizer_flags)
  local side
  for side in src tgt id; do
    head -n "$VALID_SIZE" "$text/dev.$side" > "$text/valid.$side"
    tail -n +"$((VALID_SIZE + 1))" "$text/dev.$side" > "$text/test.$side"
  done
}

palm_main "$@"
