#!/usr/bin/env bash
# XSum extreme summarization: s2s-ft fine-tuning of a pre-trained UniLMv2 model, decoding, scoring.
#
#   PRETRAINED=unilm2-base/model.pt bash examples/s2s_ft/xsum.sh RAW_DIR WORK_DIR [fairseq-train flags]
#
# RAW_DIR: the XSum release, {bbcid}.summary files (in RAW_DIR or RAW_DIR/bbc-summary-data) and
# XSum-TRAINING-DEV-TEST-SPLIT-90-5-5.json (elsewhere: EXTRA_PREP="--split-json FILE"), or
# {train,validation,test}.source/.target line files. Source: RESTBODY; target: FIRST-SENTENCE. Shared
# variables (PRETRAINED, DICT, TOKENIZER, VOCAB, LOWERCASE, GPUS, FP16, STAGES, ADAM_EPS, LENPEN_STYLE ...)
# are documented in pipeline.sh; docs/recipes.md lists every value beside the papers'.
#
# The settings follow UniLMv2 (Bao et al. 2020) Table 10, its XSum fine-tuning of UniLMv2-base. Where
# Table 10 names no value they come from s2s-ft (Bao et al. 2021) Tables 7-8; where s2s-ft's value differs
# from the one used, it is given as [s2s-ft: ...]. Environment overrides:
#   MAX_SRC=720          source tokens, [SOS]/[EOS] included (UniLMv2 Table 10; s2s-ft Table 8 too)
#   MAX_TGT=48           target tokens, [EOS] included (UniLMv2 Table 10; s2s-ft Table 8 too)
#   METHOD=pseudo_masked fine-tuning method (UniLMv2 §3.4; s2s-ft §3.2 uses it for all its results)
#   TARGET_MASK_PROB=0.4 rate at which target input tokens are masked: --target-word-drop-prob
#                        (pseudo_masked) or --target-mask-prob (masked). This project's choice from
#                        s2s-ft Table 7's grid (40%-70%); UniLMv2 names none
#   TOTAL_BATCH=64       examples per update (UniLMv2 Table 10; s2s-ft Table 7 too)
#   BATCH_PER_GPU=8      examples per GPU per step (this project's choice: memory only, --update-freq keeps
#                        TOTAL_BATCH)
#   LR=7e-5              peak learning rate (UniLMv2 Table 10; inside s2s-ft Table 7's 5e-5..1e-4)
#   WARMUP_PERCENT=2     warm-up, percent of the updates (UniLMv2 Table 10: ratio 0.02) [s2s-ft Table 7:
#                        1,000 updates, WARMUP=1000]
#   EPOCHS=14            epochs, counted into updates from the prepared training set (UniLMv2 Table 10)
#                        [s2s-ft Table 7: a grid of 10, 15, 20, 30]; STEPS=N gives the updates instead
#   LABEL_SMOOTHING=0.1  (UniLMv2 Table 10; s2s-ft Table 7 too)
#   WEIGHT_DECAY=0.01    (UniLMv2 Table 10; s2s-ft Table 7 too)
#   SAVE_INTERVAL=1500   checkpoint every N updates (this project's choice: bookkeeping only)
#   BEAM=5               beam size (UniLMv2 Table 10) [s2s-ft Table 8: 8]
#   LENPEN=0.6           length penalty, GNMT form (LENPEN_STYLE) (UniLMv2 Table 10) [s2s-ft Table 8: 0.7]
#   NO_REPEAT_NGRAM=3    trigram blocking (this project's choice: the papers name none for XSum; UniLM v1
#                        §3.1 blocks trigrams in its summarization)
#   NGRAM_EXEMPT=.       trigrams holding "." are never blocked (this project's choice, as in cnndm.sh; set
#                        it empty to block all)
#   MIN_LEN=1            minimum generated tokens (s2s-ft Table 8; UniLMv2 names none)
#   MAX_LEN_B=48         maximum generated tokens (UniLMv2 Table 10's output length; s2s-ft Table 8 too)
#   GEN_BATCH=24         decoding batch size (this project's choice: speed only)
#   METRICS=rouge        ROUGE-1/2/L F1 (UniLMv2 §4.4)
case "${1:-}" in -h | --help) awk 'NR > 1 && !/^#/ {exit} NR > 1 {sub(/^# ?/, ""); print}' "$0"; exit 0 ;; esac  # usage, before any work
set -euo pipefail
FORMAT=xsum
: "${MAX_SRC:=720}" "${MAX_TGT:=48}" "${METHOD:=pseudo_masked}" "${TARGET_MASK_PROB:=0.4}"
: "${TOTAL_BATCH:=64}" "${BATCH_PER_GPU:=8}" "${LR:=7e-5}" "${WARMUP_PERCENT:=2}" "${EPOCHS:=14}"
: "${LABEL_SMOOTHING:=0.1}" "${WEIGHT_DECAY:=0.01}" "${SAVE_INTERVAL:=1500}"
: "${BEAM:=5}" "${LENPEN:=0.6}" "${NO_REPEAT_NGRAM:=3}" "${NGRAM_EXEMPT=.}" "${MIN_LEN:=1}"
: "${MAX_LEN_B:=48}" "${GEN_BATCH:=24}" "${METRICS:=rouge}"
TASK_PREP=()
# shellcheck source=pipeline.sh
source "$(dirname "${BASH_SOURCE[0]}")/pipeline.sh"
s2s_ft_main "$@"
