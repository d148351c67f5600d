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
# PALM (Bi et al. 2020) §3.3 fine-tunes on MS MARCO for 10 epochs with batch 64, learning rate 1e-5 and
# 512 input tokens, keeps the pre-training settings (§3.1) it does not restate, and decodes with beam 5.
# Its encoder input is the passage with the question at the end, as prepare_marco_data.py writes it. Where
# PALM names no value the setting is this project's choice. Environment overrides:
#   MAX_SRC=512          source tokens, </s> included (PALM §3.3)
#   MAX_TGT=64           target tokens at training (this project's choice: PALM names none)
#   TOTAL_BATCH=64       examples per update (PALM §3.3; §3.4 keeps §3.3's optimization settings)
#   BATCH_PER_GPU=8      examples per GPU per step (this project's choice: memory only, --update-freq keeps
#                        TOTAL_BATCH)
#   LR=1e-5              peak learning rate (PALM §3.3; §3.4 keeps it)
#   WARMUP=10000         linear warm-up updates, then linear decay (PALM §3.1's pre-training schedule, which
#                        §3.3 keeps for fine-tuning)
#   EPOCHS=10            epochs, counted into updates from the prepared training set (PALM §3.3; §3.4 keeps
#                        it); STEPS=N gives the updates instead
#   DROPOUT=0.1          dropout and attention dropout (PALM §3.1, kept by §3.3)
#   LABEL_SMOOTHING=0.1  (this project's choice: PALM names none)
#   WEIGHT_DECAY=0.01    (this project's choice, as pretrain_base.sh: PALM names none)
#   CLIP_NORM=1.0        gradient-norm clipping (this project's choice, as pretrain_base.sh: PALM names none)
#   SAVE_INTERVAL=2000   checkpoint every N updates (this project's choice: bookkeeping only)
#   BEAM=5               beam size (PALM §3.3)
#   LENPEN=1.0           length penalty, GNMT form (LENPEN_STYLE) (this project's choice: PALM names none)
#   NO_REPEAT_NGRAM=3    trigram blocking (this project's choice: PALM names none)
#   MIN_LEN=1            minimum generated tokens (this project's choice: PALM names none)
#   MAX_LEN_B=64         maximum generated tokens (this project's choice: PALM names none)
#   GEN_BATCH=32         decoding batch size (this project's choice: speed only)
#   ANSWER_TYPE=well_formed  train on the natural-language answers: the Q&A + Natural Language Generation
#                        task (PALM §3.3)
#   PASSAGES=selected    passages the source holds (this project's choice: the ones the annotators marked)
#   SEPARATOR=[SEP]      token between passages and question (this project's choice)
#   VALID_SIZE=1000      dev examples kept for validation; the rest are the test set (this project's choice:
#                        PALM §3.3 reports the official leaderboard, whose answers are not public)
#   METRICS=rouge,bleu   ROUGE-L (PALM §3.3); BLEU too (this project's choice: MARCO's other metric)
case "${1:-}" in -h | --help) awk 'NR > 1 && !/^#/ {exit} NR > 1 {sub(/^# ?/, ""); print}' "$0"; exit 0 ;; esac  # usage, before any work
set -euo pipefail
: "${MAX_SRC:=512}" "${MAX_TGT:=64}"
: "${TOTAL_BATCH:=64}" "${BATCH_PER_GPU:=8}" "${LR:=1e-5}" "${WARMUP:=10000}" "${EPOCHS:=10}"
: "${DROPOUT:=0.1}" "${LABEL_SMOOTHING:=0.1}" "${WEIGHT_DECAY:=0.01}" "${CLIP_NORM:=1.0}"
: "${SAVE_INTERVAL:=2000}" "${BEAM:=5}" "${LENPEN:=1.0}" "${NO_REPEAT_NGRAM:=3}" "${MIN_LEN:=1}"
: "${MAX_LEN_B:=64}" "${GEN_BATCH:=32}" "${ANSWER_TYPE:=well_formed}"
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
  run_shown "$PYTHON" "$PALM_REPO/scripts/prepare_marco_data.py" --input "$train_json" \
    --split train --output "$text" "${flags[@]}" $(palm_tokenizer_flags)
  # shellcheck disable=SC2046
  run_shown "$PYTHON" "$PALM_REPO/scripts/prepare_marco_data.py" --input "$dev_json" \
    --split dev --output "$text" "${flags[@]}" $(palm_tokenizer_flags)
  local side
  for side in src tgt id; do
    run_shown_to "$text/valid.$side" head -n "$VALID_SIZE" "$text/dev.$side"
    run_shown_to "$text/test.$side" tail -n +"$((VALID_SIZE + 1))" "$text/dev.$side"
  done
}

palm_main "$@"
