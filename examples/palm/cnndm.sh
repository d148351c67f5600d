#!/usr/bin/env bash
# CNN/DailyMail abstractive summarization: fine-tune a pre-trained PALM, decode, score.
#
#   PRETRAINED=palm-base/checkpoint_best.pt bash examples/palm/cnndm.sh RAW_DIR WORK_DIR [fairseq-train flags]
#
# RAW_DIR: the public "stories" release with its url lists, or {train,val,test}.source/.target line files
# (see examples/s2s_ft/README.md, "Preparing the data"). Shared variables are documented in pipeline.sh.
#
# PALM (Bi et al. 2020) §3.4 fine-tunes on summarization with "the same optimization hyperparameters"
# as on MS MARCO (§3.3), which in turn keeps the pre-training settings (§3.1) it does not restate. Where
# PALM names no value the setting is this project's choice. Environment overrides:
#   MAX_SRC=512          source tokens, </s> included (PALM §3.3's maximum input length; §3.4 keeps it)
#   MAX_TGT=140          target tokens at training (this project's choice: PALM names none)
#   TOTAL_BATCH=64       examples per update (PALM §3.3; §3.4 keeps §3.3's optimization settings)
#   BATCH_PER_GPU=4      examples per GPU per step (this project's choice: memory only, --update-freq keeps
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
#   SAVE_INTERVAL=4000   checkpoint every N updates (this project's choice: bookkeeping only)
#   BEAM=5               beam size (PALM §3.3 for MARCO; §3.4 names none for summarization)
#   LENPEN=0.95          length penalty, GNMT form (LENPEN_STYLE) (this project's choice: PALM names none;
#                        the authors' released CNN/DailyMail script decodes with 0.95 in this form)
#   NO_REPEAT_NGRAM=3    trigram blocking (this project's choice: PALM names none; UniLM v1 §3.1 blocks
#                        trigrams on CNN/DailyMail)
#   MIN_LEN=40           minimum generated tokens (this project's choice: PALM names none)
#   MAX_LEN_B=130        maximum generated tokens (this project's choice: PALM names none)
#   GEN_BATCH=32         decoding batch size (this project's choice: speed only)
#   METRICS=rouge        ROUGE-1/2/L F1 (PALM §3.4)
case "${1:-}" in -h | --help) awk 'NR > 1 && !/^#/ {exit} NR > 1 {sub(/^# ?/, ""); print}' "$0"; exit 0 ;; esac  # usage, before any work
set -euo pipefail
: "${MAX_SRC:=512}" "${MAX_TGT:=140}"
: "${TOTAL_BATCH:=64}" "${BATCH_PER_GPU:=4}" "${LR:=1e-5}" "${WARMUP:=10000}" "${EPOCHS:=10}"
: "${DROPOUT:=0.1}" "${LABEL_SMOOTHING:=0.1}" "${WEIGHT_DECAY:=0.01}" "${CLIP_NORM:=1.0}"
: "${SAVE_INTERVAL:=4000}" "${BEAM:=5}" "${LENPEN:=0.95}" "${NO_REPEAT_NGRAM:=3}" "${MIN_LEN:=40}"
: "${MAX_LEN_B:=130}" "${GEN_BATCH:=32}" "${METRICS:=rouge}"
# shellcheck source=pipeline.sh
source "$(dirname "${BASH_SOURCE[0]}")/pipeline.sh"

palm_prepare() {
  # shellcheck disable=SC2046  # the tokenizer flags are words on purpose
  run_shown "$PYTHON" "$PALM_REPO/scripts/prepare_seq2seq_data.py" --format cnndm --input "$1" --output "$2" \
    --sentence-separator none --max-source-tokens $((MAX_SRC - 1)) $(palm_tokenizer_flags) ${EXTRA_PREP:-}
}

palm_main "$@"
