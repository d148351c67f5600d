#!/usr/bin/env bash
# XSum extreme summarization: s2s-ft fine-tuning of a pre-trained UniLMv2 model, decoding, scoring.
#
#   PRETRAINED=unilm2-base/model.pt bash examples/s2s_ft/xsum.sh RAW_DIR WORK_DIR [fairseq-train flags]
#
# RAW_DIR: the XSum release, {bbcid}.summary files (in RAW_DIR or RAW_DIR/bbc-summary-data) and
# XSum-TRAINING-DEV-TEST-SPLIT-90-5-5.json (elsewhere: EXTRA_PREP="--split-json FILE"), or
# {train,validation,test}.source/.target line files. Source: RESTBODY; target: FIRST-SENTENCE. Shared
# variables (PRETRAINED, DICT, TOKENIZER, VOCAB, LOWERCASE, GPUS, FP16, STAGES ...) are documented in
# pipeline.sh; the sources of every number are in README.md.
#
# Task settings (environment overrides), from the microsoft/unilm s2s-ft README, "XSum with
# unilm2-base-uncased", unless noted:
#   MAX_SRC=720          source tokens, [SOS]/[EOS] included (MAX_SRC=720)
#   MAX_TGT=48           target tokens, [EOS] included (MAX_TGT=48)
#   METHOD=pseudo_masked fine-tuning method (s2s-ft's default, --mask_way v2)
#   TARGET_MASK_PROB=0.4 TMP=0.4 ("0.4 or 0.5" for XSum). In s2s-ft's pseudo-masked method it is the rate at
#                        which target input words are replaced: pipeline.sh passes it as
#                        --target-word-drop-prob (pseudo_masked) or --target-mask-prob (masked)
#   TOTAL_BATCH=64       examples per update (4 GPUs x 8 x 2 accumulation)
#   BATCH_PER_GPU=8      examples per GPU per step
#   LR=7e-5              peak learning rate (README: 5e-5 to 1e-4 for base models), linear warm-up and decay
#   WARMUP=1000          warm-up updates
#   STEPS=48000          updates (NUM_STEPS=48000)
#   LABEL_SMOOTHING=0.1  run_seq2seq.py default
#   WEIGHT_DECAY=0.01    run_seq2seq.py default
#   SAVE_INTERVAL=1500   checkpoint every N updates (--save_steps 1500)
#   BEAM=8               beam size (--beam_size 8)
#   LENPEN=0.9           length penalty (--length_penalty 0.9; s2s-ft divides by ((5+len)/6)^0.9, fairseq by
#                        len^0.9: a starting point, tune it on the validation set)
#   NO_REPEAT_NGRAM=3    trigram blocking (--forbid_duplicate_ngrams --forbid_ignore_word ".")
#   MIN_LEN=1            minimum generated tokens (MIN_LEN=1)
#   MAX_LEN_B=48         maximum generated tokens (--max_tgt_length 48)
#   GEN_BATCH=24         decoding batch size (--batch_size 24)
#   METRICS=rouge        scripts/score.py metrics
set -euo pipefail
FORMAT=xsum
: "${MAX_SRC:=720}" "${MAX_TGT:=48}" "${METHOD:=pseudo_masked}" "${TARGET_MASK_PROB:=0.4}"
: "${TOTAL_BATCH:=64}" "${BATCH_PER_GPU:=8}" "${LR:=7e-5}" "${WARMUP:=1000}" "${STEPS:=48000}"
: "${LABEL_SMOOTHING:=0.1}" "${WEIGHT_DECAY:=0.01}" "${SAVE_INTERVAL:=1500}"
: "${BEAM:=8}" "${LENPEN:=0.9}" "${NO_REPEAT_NGRAM:=3}" "${MIN_LEN:=1}" "${MAX_LEN_B:=48}" "${GEN_BATCH:=24}"
: "${METRICS:=rouge}"
TASK_PREP=()
# shellcheck source=pipeline.sh
source "$(dirname "${BASH_SOURCE[0]}")/pipeline.sh"
s2s_ft_main "$@"
