#!/usr/bin/env bash
# Gigaword headline generation: fine-tuning with UniLM v1's published settings, decoding, scoring.
#
#   PRETRAINED=unilmv2-base/model.pt bash examples/s2s_ft/gigaword.sh RAW_DIR WORK_DIR [fairseq-train flags]
#
# RAW_DIR: the harvardnlp/sent-summary release as used by UniLM: {train,valid,test}.src.txt/.tgt.txt, or
# train.article.txt/train.title.txt (valid.article.filter.txt ...). Its unknown words are spelled "UNK"; they
# are mapped to the vocabulary's unknown token (UNK_TOKEN). Digits are "#" in that release. Shared variables
# (PRETRAINED, DICT, TOKENIZER, VOCAB, LOWERCASE, GPUS, FP16, STAGES ...) are documented in pipeline.sh; the
# sources of every number are in README.md.
#
# Neither the UniLMv2 nor the s2s-ft README gives Gigaword settings; these are the microsoft/unilm unilm-v1
# README's ("Abstractive Summarization - Gigaword", UniLM v1 large cased), which fine-tunes with masked LM:
#   MAX_SRC=128          source tokens (derived: --max_seq_length 192 minus the 64 target tokens)
#   MAX_TGT=64           target tokens (--max_len_b 64)
#   METHOD=masked        UniLM v1 fine-tuning masks target tokens (--mask_prob 0.7 --max_pred 48)
#   TARGET_MASK_PROB=0.7 fraction of target tokens masked (--mask_prob 0.7)
#   TOTAL_BATCH=128      examples per update (--train_batch_size 128)
#   BATCH_PER_GPU=32     examples per GPU per step (not from the source: set it to fit your GPUs)
#   LR=3e-5              peak learning rate (--learning_rate 0.00003), linear warm-up and decay
#   WARMUP_PERCENT=10    warm-up, percent of the updates (--warmup_proportion 0.1)
#   EPOCHS=30            training epochs (--num_train_epochs 30; "we can stop ... after 10 epochs");
#                        the updates are counted from the prepared training set (or set STEPS)
#   LABEL_SMOOTHING=0.1  (--label_smoothing 0.1)
#   WEIGHT_DECAY=0.01    hard-coded in unilm-v1 run_seq2seq.py (clipping 1.0 too)
#   SAVE_INTERVAL=5000   checkpoint every N updates (not from the source)
#   UNK_TOKEN            "UNK" becomes this [[UNK] for wordpiece, <unk> otherwise]
#   BEAM=5               beam size (--beam_size 5)
#   LENPEN=0.6           length penalty (gen_seq_from_trace.py --alpha 0.6, GNMT-style; fairseq's differs)
#   NO_REPEAT_NGRAM=3    trigram blocking (--forbid_duplicate_ngrams --forbid_ignore_word ".")
#   MIN_LEN=1            minimum generated tokens (decoder default)
#   MAX_LEN_B=32         maximum generated tokens (--max_tgt_length 32)
#   GEN_BATCH=64         decoding batch size (--batch_size 64)
#   METRICS=rouge        scripts/score.py metrics
set -euo pipefail
FORMAT=gigaword
: "${MAX_SRC:=128}" "${MAX_TGT:=64}" "${METHOD:=masked}" "${TARGET_MASK_PROB:=0.7}"
: "${TOTAL_BATCH:=128}" "${BATCH_PER_GPU:=32}" "${LR:=3e-5}" "${WARMUP_PERCENT:=10}" "${EPOCHS:=30}"
: "${LABEL_SMOOTHING:=0.1}" "${WEIGHT_DECAY:=0.01}" "${SAVE_INTERVAL:=5000}"
: "${BEAM:=5}" "${LENPEN:=0.6}" "${NO_REPEAT_NGRAM:=3}" "${MIN_LEN:=1}" "${MAX_LEN_B:=32}" "${GEN_BATCH:=64}"
: "${METRICS:=rouge}"
if [ "${TOKENIZER:-wordpiece}" = wordpiece ]; then : "${UNK_TOKEN:=[UNK]}"; else : "${UNK_TOKEN:=<unk>}"; fi
TASK_PREP=(--unk-token "$UNK_TOKEN")
# shellcheck source=pipeline.sh
source "$(dirname "${BASH_SOURCE[0]}")/pipeline.sh"
s2s_ft_main "$@"
