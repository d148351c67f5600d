#!/usr/bin/env bash
# SQuAD question generation (answer-aware): s2s-ft fine-tuning of a pre-trained UniLMv2 model, decoding,
# scoring.
#
#   PRETRAINED=unilmv2-base/model.pt bash examples/s2s_ft/squad_qg.sh RAW_DIR WORK_DIR [fairseq-train flags]
#
# RAW_DIR: SQuAD v1.1 JSON files for the Du et al. (2017) split, {train,dev,test}.json (the raw files of that
# split are in SQuAD format), or its preprocessed {train,dev,test}.pa.txt/.q.txt line files (used as is).
# The official train-v1.1.json/dev-v1.1.json alone give no test split. Source: "passage [SEP] answer"
# (QG_ORDER); target: the question. Shared variables (PRETRAINED, DICT, TOKENIZER, VOCAB, LOWERCASE, GPUS,
# FP16, STAGES, ADAM_EPS, LENPEN_STYLE ...) are documented in pipeline.sh; docs/recipes.md lists every value
# beside the papers'.
#
# The settings follow UniLMv2 (Bao et al. 2020) Table 10, its question generation fine-tuning of
# UniLMv2-base. Where Table 10 names no value they come from s2s-ft (Bao et al. 2021) Tables 7-8; where
# s2s-ft's value differs from the one used, it is given as [s2s-ft: ...]. Environment overrides:
#   MAX_SRC=464          source tokens, [SOS]/[EOS] included (UniLMv2 Table 10; total length 512)
#                        [s2s-ft Table 8: 384]
#   MAX_TGT=48           target tokens, [EOS] included (UniLMv2 Table 10) [s2s-ft Table 8: 32]
#   METHOD=pseudo_masked fine-tuning method (UniLMv2 §3.4; s2s-ft §3.2 uses it for all its results)
#   TARGET_MASK_PROB=0.7 rate at which target input tokens are masked: --target-word-drop-prob
#                        (pseudo_masked) or --target-mask-prob (masked). This project's choice from
#                        s2s-ft Table 7's grid (40%-70%), also UniLM v1 §3.3's QG masking probability
#   TOTAL_BATCH=48       examples per update (UniLMv2 Table 10) [s2s-ft Table 7: 64]
#   BATCH_PER_GPU=12     examples per GPU per step (this project's choice: memory only; 48 is a multiple of
#                        12 on 1, 2 or 4 GPUs, and --update-freq keeps TOTAL_BATCH)
#   LR=2e-5              peak learning rate (UniLMv2 Table 10) [s2s-ft Table 7: 5e-5..1e-4 for base models]
#   WARMUP_PERCENT=10    warm-up, percent of the updates (UniLMv2 Table 10: ratio 0.1) [s2s-ft Table 7:
#                        1,000 updates, WARMUP=1000]
#   EPOCHS=16            epochs, counted into updates from the prepared training set (UniLMv2 Table 10)
#                        [s2s-ft Table 7: a grid of 10, 15, 20, 30]; STEPS=N gives the updates instead
#   LABEL_SMOOTHING=0.1  (UniLMv2 Table 10; s2s-ft Table 7 too)
#   WEIGHT_DECAY=0.01    (UniLMv2 Table 10; s2s-ft Table 7 too)
#   SAVE_INTERVAL=2000   checkpoint every N updates (this project's choice: bookkeeping only)
#   QG_SEP=[SEP]         token between passage and answer (this project's choice: BERT's separator, which
#                        the model's dictionary has)
#   QG_ORDER=passage_answer  the passage, then the answer (UniLM v1 §3.3; UniLMv2 §4.5 too)
#   QG_WINDOW=answer     a source longer than MAX_SRC keeps the answer whole and a passage chunk that holds
#                        it (UniLM v1 §3.3); where the chunk sits is this project's choice: whole sentences
#                        around the answer, grown on the shorter side (unilm_fairseq/prepare/qg_windows.py).
#                        head: cut the end of the source instead, the answer included with passage_answer
#   BEAM=8               beam size (UniLMv2 Table 10; s2s-ft Table 8 too)
#   LENPEN=1.3           length penalty, GNMT form (LENPEN_STYLE) (UniLMv2 Table 10; s2s-ft Table 8 too)
#   NO_REPEAT_NGRAM=0    no n-gram blocking (this project's choice: the papers name none for QG)
#   NGRAM_EXEMPT=""      nothing to exempt when nothing is blocked (this project's choice)
#   MIN_LEN=5            minimum generated tokens (s2s-ft Table 8; UniLMv2 names none)
#   MAX_LEN_B=48         maximum generated tokens (UniLMv2 Table 10's output length) [s2s-ft Table 8: 32]
#   GEN_BATCH=16         decoding batch size (this project's choice: speed only)
#   METRICS=bleu,meteor,rouge  BLEU-4, METEOR, ROUGE-L (UniLMv2 §4.5)
case "${1:-}" in -h | --help) awk 'NR > 1 && !/^#/ {exit} NR > 1 {sub(/^# ?/, ""); print}' "$0"; exit 0 ;; esac  # usage, before any work
set -euo pipefail
FORMAT=squad_qg
: "${MAX_SRC:=464}" "${MAX_TGT:=48}" "${METHOD:=pseudo_masked}" "${TARGET_MASK_PROB:=0.7}"
: "${TOTAL_BATCH:=48}" "${BATCH_PER_GPU:=12}" "${LR:=2e-5}" "${WARMUP_PERCENT:=10}" "${EPOCHS:=16}"
: "${LABEL_SMOOTHING:=0.1}" "${WEIGHT_DECAY:=0.01}" "${SAVE_INTERVAL:=2000}"
: "${QG_SEP:=[SEP]}" "${QG_ORDER:=passage_answer}" "${QG_WINDOW:=answer}"
: "${BEAM:=8}" "${LENPEN:=1.3}" "${NO_REPEAT_NGRAM:=0}" "${NGRAM_EXEMPT=}" "${MIN_LEN:=5}"
: "${MAX_LEN_B:=48}" "${GEN_BATCH:=16}" "${METRICS:=bleu,meteor,rouge}"
TASK_PREP=(--qg-separator "$QG_SEP" --qg-order "$QG_ORDER" --qg-window "$QG_WINDOW")
# shellcheck source=pipeline.sh
source "$(dirname "${BASH_SOURCE[0]}")/pipeline.sh"
s2s_ft_main "$@"
