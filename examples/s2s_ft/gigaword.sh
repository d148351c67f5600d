#!/usr/bin/env bash
# Gigaword headline generation: fine-tuning with UniLM v1's published settings, decoding, scoring.
#
#   PRETRAINED=unilmv2-base/model.pt bash examples/s2s_ft/gigaword.sh RAW_DIR WORK_DIR [fairseq-train flags]
#
# RAW_DIR: the harvardnlp/sent-summary release as used by UniLM: {train,valid,test}.src.txt/.tgt.txt, or
# train.article.txt/train.title.txt (valid.article.filter.txt ...). Its unknown words are spelled "UNK"; they
# are mapped to the vocabulary's unknown token (UNK_TOKEN). Digits are "#" in that release. Shared variables
# (PRETRAINED, DICT, TOKENIZER, VOCAB, LOWERCASE, GPUS, FP16, STAGES, ADAM_EPS, LENPEN_STYLE ...) are
# documented in pipeline.sh; docs/recipes.md lists every value beside the papers'.
#
# Neither UniLMv2 nor s2s-ft fine-tunes on English Gigaword; the settings follow UniLM v1 (Dong et al.
# 2019) §3.1, which fine-tunes UniLM-large with masked target tokens and reuses "most hyper-parameters
# from pre-training" (§2.4: Adam (0.9, 0.999), weight decay 0.01, dropout 0.1, as pipeline.sh has them).
# Environment overrides:
#   MAX_SRC=194          source positions: the first 192 article tokens (UniLM v1 §3.1) plus [SOS] and [EOS]
#   MAX_TGT=62           target positions, [EOS] included: the rest of the maximum length of 256 (UniLM v1
#                        §3.1: 256 - 194)
#   METHOD=masked        fine-tuning masks target tokens (UniLM v1 §2.5)
#   TARGET_MASK_PROB=0.7 fraction of target tokens masked (UniLM v1 §3.1)
#   TOTAL_BATCH=64       examples per update (UniLM v1 §3.1)
#   BATCH_PER_GPU=32     examples per GPU per step (this project's choice: memory only, --update-freq keeps
#                        TOTAL_BATCH)
#   LR=3e-5              peak learning rate (UniLM v1 §3.1 reuses pre-training's, §2.4: 3e-5)
#   WARMUP_PERCENT=10    warm-up, percent of the updates (this project's choice: §3.1 names none; UniLM v1
#                        §3.5 uses a ratio of 0.1 for GLUE)
#   EPOCHS=30            epochs, counted into updates from the prepared training set (UniLM v1 §3.1);
#                        STEPS=N gives the updates instead
#   LABEL_SMOOTHING=0.1  (UniLM v1 §3.1)
#   WEIGHT_DECAY=0.01    (UniLM v1 §3.1 reuses pre-training's, §2.4: 0.01)
#   SAVE_INTERVAL=5000   checkpoint every N updates (this project's choice: bookkeeping only)
#   UNK_TOKEN=[UNK]      what the released "UNK" becomes; <unk> when TOKENIZER is not wordpiece (this
#                        project's choice: the vocabulary's own unknown token)
#   BEAM=5               beam size (UniLM v1 §3.1)
#   LENPEN=0.6           length penalty, GNMT form (this project's choice: UniLM v1 names none; 0.6 is
#                        UniLMv2 Table 10's value for XSum's short summaries)
#   NO_REPEAT_NGRAM=3    trigram blocking (UniLM v1 §3.1 removes duplicated trigrams)
#   NGRAM_EXEMPT=.       trigrams holding "." are never blocked (this project's choice, as in cnndm.sh; set
#                        it empty to block all)
#   MIN_LEN=1            minimum generated tokens (this project's choice: UniLM v1 names none; s2s-ft
#                        Table 8 uses 1 for its French Gigaword)
#   MAX_LEN_B=32         maximum generated tokens (this project's choice: UniLM v1 §3.1 tunes it on the
#                        development set without giving the value)
#   GEN_BATCH=64         decoding batch size (this project's choice: speed only)
#   METRICS=rouge        ROUGE-1/2/L F1 (UniLM v1 §3.1)
case "${1:-}" in -h | --help) awk 'NR > 1 && !/^#/ {exit} NR > 1 {sub(/^# ?/, ""); print}' "$0"; exit 0 ;; esac  # usage, before any work
set -euo pipefail
FORMAT=gigaword
: "${MAX_SRC:=194}" "${MAX_TGT:=62}" "${METHOD:=masked}" "${TARGET_MASK_PROB:=0.7}"
: "${TOTAL_BATCH:=64}" "${BATCH_PER_GPU:=32}" "${LR:=3e-5}" "${WARMUP_PERCENT:=10}" "${EPOCHS:=30}"
: "${LABEL_SMOOTHING:=0.1}" "${WEIGHT_DECAY:=0.01}" "${SAVE_INTERVAL:=5000}"
: "${BEAM:=5}" "${LENPEN:=0.6}" "${NO_REPEAT_NGRAM:=3}" "${NGRAM_EXEMPT=.}" "${MIN_LEN:=1}"
: "${MAX_LEN_B:=32}" "${GEN_BATCH:=64}" "${METRICS:=rouge}"
case ${TOKENIZER:-wordpiece} in
  wordpiece) : "${UNK_TOKEN:=[UNK]}" ;;
  *) : "${UNK_TOKEN:=<unk>}" ;;
esac
TASK_PREP=(--unk-token "$UNK_TOKEN")
# shellcheck source=pipeline.sh
source "$(dirname "${BASH_SOURCE[0]}")/pipeline.sh"
s2s_ft_main "$@"
