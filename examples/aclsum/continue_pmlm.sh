#!/usr/bin/env bash
# Domain-adaptive pre-training: continue pre-training the converted MiniLM with UniLMv2's pseudo-masked
# LM (--task pmlm --criterion ae_par) on the sentences of ACLSum's train papers, report held-out AE and
# PAR losses (on the val papers) before and after, then fine-tune from that checkpoint exactly as the main
# job does and print the same ROUGE table.
#
#   bash examples/aclsum/continue_pmlm.sh [WORK_DIR] [extra fairseq-train flags for the pmlm stage]
#
# Settings (environment; default in brackets): START, the weights pre-training continues from: released
# (the MiniLM as converted) or continued (the main job's start: the MiniLM after this project's continued
# PMLM pre-training on English prose, data/minilm-continued-ae.pt.xz, unpacked onto it) [released],
# PMLM_UPDATES [150], PMLM_LR [2e-4], PMLM_BATCH [16], PMLM_TOKENS (tokens per pre-training example) [256],
# PMLM_OBJECTIVES (ae,par | ae | par) [ae,par], MAX_SRC [finetune.sh's], CPU (1: stay on the CPU even if
# CUDA is available) [1 when no GPU is visible]; the fine-tuning settings are
# examples/s2s_ft/finetune.sh's (UPDATES, LR, BATCH, ...). The pre-training text never holds a summary or
# a test paper. Objective and masking follow UniLMv2 (Bao et al. 2020, Algorithm 1 and §4.1: 15% masked,
# 40% of masking steps 2-6-token spans, 80/10/10 corruption; AE + PAR); the optimizer follows its Table 7
# (Adam betas (0.9, 0.98), eps 1e-6, weight decay 0.01, no gradient clipping, linear warm-up and decay).
# The learning rate, batch, length and number of updates of this short continuation are this project's
# choices for a CPU budget (Table 7's 6e-4 and batch 7,680 are for 0.5M steps from scratch).
# The console is the main job's: each command, a line every 30 s from a running step, fairseq-train's
# training lines and, a minute in, when training ends. WORK_DIR/logs/STEP.log keeps each pre-training step's
# whole output and WORK_DIR/commands.sh its commands; WORK_DIR/run/logs and WORK_DIR/run/commands.sh those
# of the fine-tuning.
case "${1:-}" in -h | --help) awk 'NR > 1 && !/^#/ {exit} NR > 1 {sub(/^# ?/, ""); print}' "$0"; exit 0 ;; esac  # usage, before any work
set -euo pipefail
REPO=$(cd "$(dirname "$0")/../.." && pwd)
WORK=${1:-work/aclsum-pmlm}
shift $(( $# > 0 ? 1 : 0 ))
# shellcheck source=examples/aclsum/common.sh
. "$REPO/examples/aclsum/common.sh"
: "${PMLM_UPDATES:=150}" "${PMLM_LR:=2e-4}" "${PMLM_BATCH:=16}" "${PMLM_TOKENS:=256}" "${START:=released}"
: "${PMLM_OBJECTIVES:=ae,par}"
need_choice START released continued
need_choice PMLM_OBJECTIVES ae,par ae par
need_whole PMLM_UPDATES 1  # checked before any work: fairseq's own assertion came after five steps
need_whole PMLM_BATCH 1
need_whole PMLM_TOKENS 1
need_number PMLM_LR
: "${CPU:=$(python -c 'import torch; print(0 if torch.cuda.is_available() else 1)')}"
export CPU
DEVICE=()
if [ "$CPU" = 1 ]; then DEVICE=(--cpu); fi
: "${MAX_SRC:=$(main_job_setting MAX_SRC)}"
export MAX_SRC
aclsum_require_inputs
USER_DIR=$REPO/unilm_fairseq
MODEL=$WORK/model
PM=$WORK/pmlm
mkdir -p "$WORK"
# shellcheck source=examples/common/seq2seq_stages.sh
. "$REPO/examples/common/seq2seq_stages.sh"
# the main job's console: each command is shown, quoted for the shell, and kept in WORK/commands.sh; each
# step's whole output goes to WORK/logs/STEP.log, with a line from it every 30 s, fairseq-train's training
# lines as they come and, a minute in, when training ends; the fine-tuning keeps its own in WORK/run
record_start "$WORK/commands.sh"
QUIET_LOGS=$WORK/logs

echo "== pairs and pre-training text"
run_step prepare python "$REPO/scripts/prepare_aclsum.py" --output "$WORK/data" \
  --wordpiece-vocab "$MODEL_DIR/vocab.txt" --max-source-tokens $((MAX_SRC - 2)) --pretraining-text
step_summary prepare "(train|valid|test): [0-9]+ papers -> |pretrain\.(train|valid)\.txt: "
run_step convert python "$REPO/scripts/convert_hf_checkpoint.py" "$MODEL_DIR" "$MODEL" --overwrite
if [ "$START" = continued ]; then  # the converted model brings the config and dictionary, these its weights
  run_step unpack python "$REPO/scripts/pack_weights.py" unpack "$REPO/data/minilm-continued-ae.pt.xz" \
    "$MODEL/model.pt" "$MODEL/model.pt"
fi
mkdir -p "$PM/text"
run_step tokenize python "$REPO/scripts/tokenize_text.py" --bpe wordpiece --wordpiece-vocab "$MODEL/dict.txt" \
  --inputs "$WORK/data/pretrain.train.txt" "$WORK/data/pretrain.valid.txt" \
  --outputs "$PM/text/train.txt" "$PM/text/valid.txt" --workers 2
step_summary tokenize " -> .*: [0-9]+ lines"
rm -rf "$PM/bin"
run_step binarize fairseq-preprocess --user-dir "$USER_DIR" --task pmlm --only-source --srcdict "$MODEL/dict.txt" \
  --trainpref "$PM/text/train.txt" --validpref "$PM/text/valid.txt" --destdir "$PM/bin" --workers 2

validate() {  # WHEN CHECKPOINT: held-out AE and PAR loss (bits per predicted token) in PM/valid-WHEN.txt
  run_step "validate-$1" fairseq-validate "$PM/bin" --user-dir "$USER_DIR" --task pmlm --objectives ae,par \
    --path "$2" --tokens-per-sample "$PMLM_TOKENS" --batch-size 16 --required-batch-size-multiple 1 --seed 1 \
    --num-workers 0 ${DEVICE[@]+"${DEVICE[@]}"}
  grep "valid on" "$QUIET_LOGS/validate-$1.log" > "$PM/valid-$1.txt"
  step_summary "validate-$1" "valid on"
}
if [ "$START" = released ]; then
  echo "== held-out AE / PAR loss of the released MiniLM (its MLM head is untrained)"
else
  echo "== held-out AE / PAR loss of the continued MiniLM"
fi
validate before "$MODEL/model.pt"

echo "== continue pre-training from the $START MiniLM: --task pmlm --criterion ae_par --objectives" \
  "$PMLM_OBJECTIVES, $PMLM_UPDATES updates of $PMLM_BATCH"
# shellcheck disable=SC2207  # the converted model's architecture flags are one line of words
model_args=($(cat "$MODEL/model_args.txt"))
rm -rf "$PM/checkpoints"
run_train_step fairseq-train "$PM/bin" --user-dir "$USER_DIR" --task pmlm --criterion ae_par \
  --objectives "$PMLM_OBJECTIVES" "${model_args[@]}" \
  --finetune-from-model "$MODEL/model.pt" --tokens-per-sample "$PMLM_TOKENS" \
  --batch-size "$PMLM_BATCH" --required-batch-size-multiple 1 \
  --optimizer adam --adam-betas '(0.9, 0.98)' --adam-eps 1e-6 --weight-decay 0.01 --clip-norm 0.0 \
  --lr "$PMLM_LR" --lr-scheduler polynomial_decay --warmup-updates $((PMLM_UPDATES / 10)) \
  --total-num-update "$PMLM_UPDATES" --max-update "$PMLM_UPDATES" --disable-validation \
  --save-dir "$PM/checkpoints" --no-epoch-checkpoints --seed 1 --num-workers 0 ${DEVICE[@]+"${DEVICE[@]}"} \
  --log-format simple --log-interval 5 "$@"
cp "$MODEL/dict.txt" "$MODEL/model_args.txt" "$PM/checkpoints/"

echo "== held-out AE / PAR loss after continued pre-training"
validate after "$PM/checkpoints/checkpoint_last.pt"

echo "== fine-tune from the checkpoint this pre-training made"
# FRESH=1: the pre-training above ran anew, so a fine-tuning checkpoint of an earlier run started elsewhere
START="" FRESH=1 PRETRAINED=$PM/checkpoints/checkpoint_last.pt bash "$REPO/examples/s2s_ft/finetune.sh" \
  "$WORK/data" "$WORK/run"
echo "== held-out pre-training losses (bits per predicted token) and masked-token accuracy (%)"
for when in before after; do
  printf '%-7s' "$when"
  for measure in ae_loss par_loss ae_acc par_acc; do
    printf ' %s %s' "$measure" "$(grep -oE "\| $measure [0-9.]+" "$PM/valid-$when.txt" | tail -1 | cut -d' ' -f3)"
  done
  echo
done
echo "== full logs of the pre-training steps: $QUIET_LOGS/ ($(cd "$QUIET_LOGS" && ls -- *.log | tr '\n' ' '))"
