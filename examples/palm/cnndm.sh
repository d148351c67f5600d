#!/usr/bin/env bash
# CNN/DailyMail abstractive summarization: fine-tune a pre-trained PALM, decode, score.
#
#   PRETRAINED=palm-base/checkpoint_best.pt bash examples/palm/cnndm.sh RAW_DIR WORK_DIR [fairseq-train flags]
#
# RAW_DIR: the public "stories" release with its url lists, or {train,val,test}.source/.target line files
# (see examples/s2s_ft/README.md, "Preparing the data"). Shared variables are documented in pipeline.sh.
#
# Sources of the settings: [A] = the authors' released CNN/DM script (alibaba/AliceMind,
# PALM/finetune_cnndm_task_roberta.sh, PreSumm-based code); [P] = this project's choice where no published
# source gives a value (README.md, "PALM").
#   MAX_SRC=512          source tokens, </s> included ([A] -max_pos 512)
#   MAX_TGT=140          target tokens at training ([A] -max_tgt_len 140)
#   TOTAL_BATCH=32       examples per update ([P]; [A] batches by a token budget of 400 units x 5
#                        accumulation x 2 GPUs in PreSumm's own batching)
#   BATCH_PER_GPU=4      examples per GPU per step ([P]: set it to fit your GPUs)
#   LR=3e-5              peak learning rate ([P]; [A] uses two Noam schedules, peak 2e-5 for the encoder
#                        and 1e-3 for the decoder, which fairseq's single learning rate cannot express)
#   WARMUP=10000         warm-up updates, then inverse square root decay ([A] warm-up 10000, Noam decay)
#   STEPS=100000         updates ([A] -train_steps 100000; its test command decodes step 68000)
#   DROPOUT=0.1          dropout ([P]; [A] uses 0.2 in the decoder)
#   LABEL_SMOOTHING=0.1  ([A]: PreSumm's default 0.1)
#   WEIGHT_DECAY=0.0 CLIP_NORM=0.0  ([P]: PreSumm clips with max_grad_norm 0 by default)
#   SAVE_INTERVAL=4000   checkpoint every N updates ([A] -save_checkpoint_steps 4000)
#   BEAM=5               ([A]: PreSumm's default beam_size 5)
#   LENPEN=0.95          length penalty ([A] -alpha 0.95; PreSumm's penalty is GNMT's ((5+|y|)/6)^alpha,
#                        fairseq divides by |y|^lenpen: similar in effect, not equal)
#   NO_REPEAT_NGRAM=3    trigram blocking ([A]: PreSumm blocks repeated trigrams by default)
#   MIN_LEN=40           minimum generated tokens ([A] -min_length 40)
#   MAX_LEN_B=130        maximum generated tokens ([A] -max_length 130)
#   GEN_BATCH=32         decoding batch size ([P])
#   METRICS=rouge        scripts/score.py metrics
set -euo pipefail
: "${MAX_SRC:=512}" "${MAX_TGT:=140}" "${TOTAL_BATCH:=32}" "${BATCH_PER_GPU:=4}" "${LR:=3e-5}"
: "${WARMUP:=10000}" "${STEPS:=100000}" "${DROPOUT:=0.1}" "${LABEL_SMOOTHING:=0.1}" "${WEIGHT_DECAY:=0.0}"
: "${CLIP_NORM:=0.0}" "${SAVE_INTERVAL:=4000}" "${BEAM:=5}" "${LENPEN:=0.95}" "${NO_REPEAT_NGRAM:=3}"
: "${MIN_LEN:=40}" "${MAX_LEN_B:=130}" "${GEN_BATCH:=32}" "${METRICS:=rouge}"
# shellcheck source=pipeline.sh
source "$(dirname "${BASH_SOURCE[0]}")/pipeline.sh"

palm_prepare() {
  # shellcheck disable=SC2046  # the tokenizer flags are words on purpose
  "$PYTHON" "$PALM_REPO/scripts/prepare_seq2seq_data.py" --format cnndm --input "$1" --output "$2" \
    --sentence-separator none --max-source-tokens $((MAX_SRC - 1)) $(palm_tokenizer_flags) ${EXTRA_PREP:-}
}

palm_main "$@"
