#!/usr/bin/env bash
# SQuAD question generation (answer-aware): fine-tuning with UniLM v1's published settings, decoding, scoring.
#
#   PRETRAINED=unilmv2-base/model.pt bash examples/s2s_ft/squad_qg.sh RAW_DIR WORK_DIR [fairseq-train flags]
#
# RAW_DIR: SQuAD v1.1 JSON files for the Du et al. (2017) split, {train,dev,test}.json (the raw files of that
# split are in SQuAD format), or its preprocessed {train,dev,test}.pa.txt/.q.txt line files (used as is).
# The official train-v1.1.json/dev-v1.1.json alone give no test split. Source: "answer [SEP] passage"; target:
# the question. Shared variables (PRETRAINED, DICT, TOKENIZER, VOCAB, LOWERCASE, GPUS, FP16, STAGES ...) are
# documented in pipeline.sh; the sources of every number are in README.md.
#
# Neither the UniLMv2 nor the s2s-ft README gives QG settings we could confirm; these are the microsoft/unilm
# unilm-v1 README's ("Question Generation - SQuAD", UniLM v1 large cased), which fine-tunes with masked LM:
#   MAX_SRC=464          source tokens (s2s-ft's default --max_source_seq_length; with MAX_TGT the 512 of
#                        v1's --max_seq_length 512)
#   MAX_TGT=48           target tokens (--max_pred 48, --max_tgt_length 48; s2s-ft's default too)
#   METHOD=masked        UniLM v1 fine-tuning masks target tokens
#   TARGET_MASK_PROB=0.7 fraction of target tokens masked (--mask_prob 0.7)
#   TOTAL_BATCH=32       examples per update (--train_batch_size 32, accumulated over 2 steps)
#   BATCH_PER_GPU=16     examples per GPU per step (not from the source: set it to fit your GPUs)
#   LR=2e-5              peak learning rate (--learning_rate 0.00002), linear warm-up and decay
#   WARMUP_PERCENT=10    warm-up, percent of the updates (--warmup_proportion 0.1)
#   EPOCHS=10            training epochs (--num_train_epochs 10), counted into updates (or set STEPS)
#   LABEL_SMOOTHING=0.1  (--label_smoothing 0.1)
#   WEIGHT_DECAY=0.01    hard-coded in unilm-v1 run_seq2seq.py (clipping 1.0 too)
#   SAVE_INTERVAL=2000   checkpoint every N updates (not from the source)
#   QG_SEP=[SEP]         token between answer and passage (must be in the model's dictionary)
#   QG_ORDER=answer_passage  answer first, so truncating a long passage never cuts the answer
#                        (UniLM's released files are "passage [SEP] answer": passage_answer)
#   BEAM=1               greedy decoding (--beam_size 1)
#   LENPEN=0             (--length_penalty 0)
#   NO_REPEAT_NGRAM=0    no n-gram blocking (the v1 QG command does not pass --forbid_duplicate_ngrams)
#   MIN_LEN=1            minimum generated tokens (decoder default)
#   MAX_LEN_B=48         maximum generated tokens (--max_tgt_length 48)
#   GEN_BATCH=16         decoding batch size (--batch_size 16)
#   METRICS=bleu,meteor,rouge  BLEU-4, METEOR, ROUGE-L, as reported for QG
set -euo pipefail
FORMAT=squad_qg
: "${MAX_SRC:=464}" "${MAX_TGT:=48}" "${METHOD:=masked}" "${TARGET_MASK_PROB:=0.7}"
: "${TOTAL_BATCH:=32}" "${BATCH_PER_GPU:=16}" "${LR:=2e-5}" "${WARMUP_PERCENT:=10}" "${EPOCHS:=10}"
: "${LABEL_SMOOTHING:=0.1}" "${WEIGHT_DECAY:=0.01}" "${SAVE_INTERVAL:=2000}"
: "${QG_SEP:=[SEP]}" "${QG_ORDER:=answer_passage}"
: "${BEAM:=1}" "${LENPEN:=0}" "${NO_REPEAT_NGRAM:=0}" "${MIN_LEN:=1}" "${MAX_LEN_B:=48}" "${GEN_BATCH:=16}"
: "${METRICS:=bleu,meteor,rouge}"
TASK_PREP=(--qg-separator "$QG_SEP" --qg-order "$QG_ORDER")
# shellcheck source=pipeline.sh
source "$(dirname "${BASH_SOURCE[0]}")/pipeline.sh"
s2s_ft_main "$@"
