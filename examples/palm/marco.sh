#!/usr/bin/env bash
# MS MARCO generative QA (passage + question -> answer): fine-tune a pre-trained PALM, decode, score.
#
#   PRETRAINED=palm-base/stage2/checkpoint_best.pt bash examples/palm/marco.sh RAW_DIR WORK_DIR [train flags]
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
# PALM names no value the setting is this project's choice.
#
# Settings: examples/palm/config/marco.yaml (the fairseq-hydra-train config) holds every value, each with
# its paper and section; docs/recipes.md tables them and `bash marco.sh -h` lists them. An environment
# variable of a setting's name overrides it (LR=5e-5, EPOCHS=5, STEPS=N for updates instead of epochs).
set -euo pipefail
# shellcheck source=pipeline.sh
source "$(dirname "${BASH_SOURCE[0]}")/pipeline.sh"  # answers -h

palm_marco_file() {  # the release file NAME in RAW_DIR, gzipped or not
  if [ -f "$1/$2.gz" ]; then echo "$1/$2.gz"; else echo "$1/$2"; fi
}

palm_prepare() {
  local raw=$1 text=$2
  local train_json=${TRAIN_JSON:-$(palm_marco_file "$raw" train_v2.1.json)}
  local dev_json=${DEV_JSON:-$(palm_marco_file "$raw" dev_v2.1.json)}
  local flags=(--answer-type "$ANSWER_TYPE" --passages "$PASSAGES" --separator "$SEPARATOR"
               --max-source-tokens $((MAX_SRC - 1)))
  run_shown "$PYTHON" "$PALM_REPO/scripts/prepare_marco_data.py" --input "$train_json" \
    --split train --output "$text" "${flags[@]}" "${PALM_TOKENIZE[@]}"
  run_shown "$PYTHON" "$PALM_REPO/scripts/prepare_marco_data.py" --input "$dev_json" \
    --split dev --output "$text" "${flags[@]}" "${PALM_TOKENIZE[@]}"
  local side
  for side in src tgt id; do
    run_shown_to "$text/valid.$side" head -n "$VALID_SIZE" "$text/dev.$side"
    run_shown_to "$text/test.$side" tail -n +"$((VALID_SIZE + 1))" "$text/dev.$side"
  done
}

palm_main marco "$@"
