#!/usr/bin/env bash
# CNN/DailyMail abstractive summarization: s2s-ft fine-tuning of a pre-trained UniLMv2 model, decoding,
# scoring.
#
#   PRETRAINED=unilm2-base/model.pt bash examples/s2s_ft/cnndm.sh RAW_DIR WORK_DIR [fairseq-train flags]
#
# RAW_DIR: the public "stories" release (cnn/stories/*.story, dailymail/stories/*.story) with the url lists
# all_train.txt, all_val.txt, all_test.txt (in RAW_DIR or RAW_DIR/url_lists; elsewhere:
# EXTRA_PREP="--url-lists DIR"), or {train,val,test}.source/.target line files. Shared variables (PRETRAINED,
# DICT, TOKENIZER, VOCAB, LOWERCASE, GPUS, FP16, STAGES ...) are documented in pipeline.sh; the sources of
# every number are in README.md.
#
# Task settings (environment overrides), from the microsoft/unilm s2s-ft README, "CNN / Daily Mail with
# unilm1.2-base-uncased" (the README gives no unilm2 CNN/DM command), unless noted:
#   MAX_SRC=608          source tokens, [SOS]/[EOS] included (--max_source_seq_length 608)
#   MAX_TGT=160          target tokens, [EOS] included (--max_target_seq_length 160)
#   METHOD=pseudo_masked fine-tuning method (s2s-ft's default, --mask_way v2)
#   TARGET_MASK_PROB=0.7 --target-mask-prob (masked) or --target-word-drop-prob (pseudo_masked); 0.7-0.8
#   TOTAL_BATCH=64       examples per update (4 GPUs x 8 x 2 accumulation)
#   BATCH_PER_GPU=8      examples per GPU per step (--per_gpu_train_batch_size 8)
#   LR=7e-5              peak learning rate, linear warm-up then linear decay to 0
#   WARMUP=1000          warm-up updates
#   STEPS=45000          updates
#   LABEL_SMOOTHING=0.1  run_seq2seq.py default
#   WEIGHT_DECAY=0.01    run_seq2seq.py default (Adam eps 1e-8 and clipping 1.0 are fixed in pipeline.sh)
#   SAVE_INTERVAL=1500   checkpoint every N updates (--save_steps 1500)
#   SENT_SEP=none        token between highlights in the target ("<q>" keeps sentence boundaries for
#                        ROUGE-Lsum, but it must be in the model's dictionary, else it becomes <unk>)
#   BEAM=5               beam size (--beam_size 5)
#   LENPEN=0             length penalty (--length_penalty 0: none, which fairseq's --lenpen 0 matches)
#   NO_REPEAT_NGRAM=3    trigram blocking (--forbid_duplicate_ngrams; s2s-ft exempts ".", fairseq cannot)
#   MIN_LEN=48           minimum generated tokens (--min_len 48)
#   MAX_LEN_B=160        maximum generated tokens (--max_tgt_length 160)
#   GEN_BATCH=32         decoding batch size (--batch_size 32)
#   METRICS=rouge        scripts/score.py metrics
set -euo pipefail
FORMAT=cnndm
: "${MAX_SRC:=608}" "${MAX_TGT:=160}" "${METHOD:=pseudo_masked}" "${TARGET_MASK_PROB:=0.7}"
: "${TOTAL_BATCH:=64}" "${BATCH_PER_GPU:=8}" "${LR:=7e-5}" "${WARMUP:=1000}" "${STEPS:=45000}"
: "${LABEL_SMOOTHING:=0.1}" "${WEIGHT_DECAY:=0.01}" "${SAVE_INTERVAL:=1500}" "${SENT_SEP:=none}"
: "${BEAM:=5}" "${LENPEN:=0}" "${NO_REPEAT_NGRAM:=3}" "${MIN_LEN:=48}" "${MAX_LEN_B:=160}" "${GEN_BATCH:=32}"
: "${METRICS:=rouge}"
TASK_PREP=(--sentence-separator "$SENT_SEP")
TASK_SCORE=()
if [ "$SENT_SEP" != none ]; then TASK_SCORE=(--sentence-separator "$SENT_SEP"); fi  # for ROUGE-Lsum
# shellcheck source=pipeline.sh
source "$(dirname "${BASH_SOURCE[0]}")/pipeline.sh"
s2s_ft_main "$@"
