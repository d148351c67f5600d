#!/usr/bin/env bash
# Continue pre-training a converted model with UniLMv2's pseudo-masked LM on a binarized corpus, one run per
# objective set (an "arm" of UniLMv2's ablation), and measure each on held-out text: AE and PAR loss (bits
# per predicted token) and masked-token top-1 accuracy, before training, during it (a curve over updates)
# and after it.
#
#   bash examples/unilmv2_pretrain/continue_pretraining.sh CORPUS MODEL_DIR WORK_DIR [extra fairseq-train flags]
#
# CORPUS is fairseq-preprocess --only-source output, one directory or shards joined by colons
# (data-bin/shard0:data-bin/shard1:..., one per epoch; the held-out `valid` split is read from the first);
# scripts/build_pretraining_corpus.py writes it. MODEL_DIR is scripts/convert_hf_checkpoint.py's output
# (model.pt, dict.txt, model_args.txt); the corpus must be binarized with its dict.txt. model.pt may be an
# earlier run's checkpoint_last.pt: the arms start from WORK_DIR/start.pt (scripts/pack_weights.py start),
# its weights without that run's state, so that MINUTES counts this run's training alone.
#
# Settings (environment; default in brackets):
#   ARMS         objective sets to train, in order, space-separated ["ae,par ae"]; each is the pmlm task's
#                --objectives (UniLMv2 Table 6's ablation: AE+PAR, AE only, PAR only)
#   UPDATES      updates of the first arm [1000]; MINUTES also stops it after this many minutes of training []
#                Arms after the first save a checkpoint at the first arm's number of updates (equal
#                updates) and, with EQUAL_TIME=1, go on until they have trained as long as the first arm
#                did (equal wall clock) [EQUAL_TIME=1]
#   LR [2e-4]    peak learning rate, reached after WARMUP updates [100] and then held (fairseq's
#                fixed schedule), so that the equal-updates and equal-time checkpoints of one run share a
#                schedule
#   BATCH [64]   sequences per update; TOKENS [512] tokens per sequence (--tokens-per-sample)
#   VALID_EVERY  held-out validation (the curve) every this many updates [UPDATES/8]
#   VALID_BATCH [64]  SEED [1]  WORKERS (data loader processes) [4]
#   FP16         1: --fp16 (CUDA only) [1 when a GPU is visible]; CPU: 1 stays on the CPU [1 without a GPU]
#
# Objective and masking are UniLMv2's (Bao et al. 2020, §2 and Algorithm 1: 15% of tokens, 40% of masking
# steps spans of 2-6 tokens, 80/10/10 corruption of the AE inputs); the optimizer follows its Table 7 (Adam
# betas (0.9, 0.98), eps 1e-6, weight decay 0.01). Learning rate, batch, length, schedule and the number of
# updates are this project's choices for a short continuation (Table 7's 6e-4 and batch 7,680 are for 0.5M
# steps from scratch).
#
# Output in WORK_DIR: ARM/checkpoints (checkpoint_last.pt, checkpoint_*_UPDATES.pt), ARM/train.log (fairseq's
# whole log), valid-*.log (held-out measures of each checkpoint with both objectives), curve.tsv (each arm's
# in-training validation, by scripts/pretraining_curve.py: update, seconds, ae_loss, par_loss, ae_acc,
# par_acc), summary.tsv (arm, point, updates, training seconds, held-out measures of both objectives) and
# commands.sh (every command run, quoted for the shell). The console shows each fairseq-train command, its
# training and validation lines and, a minute into training, how long the rest takes and when it ends.
set -euo pipefail
case "${1:-}" in -h | --help) sed -n '2,/^[^#]/{/^#/p}' "$0"; exit 0 ;; esac  # the whole header
if [ $# -lt 3 ]; then
  sed -n '2,14p' "$0" >&2
  exit 2
fi
REPO=$(cd "$(dirname "$0")/../.." && pwd)
CORPUS=$1 MODEL=$2 WORK=$3
shift 3
: "${ARMS:=ae,par ae}" "${UPDATES:=1000}" "${EQUAL_TIME:=1}" "${LR:=2e-4}" "${BATCH:=64}" "${TOKENS:=512}"
: "${WARMUP:=100}" "${MINUTES:=}" "${VALID_EVERY:=$(( UPDATES / 8 > 0 ? UPDATES / 8 : 1 ))}"
: "${VALID_BATCH:=64}" "${SEED:=1}" "${WORKERS:=4}"
: "${CPU:=$(python -c 'import torch; print(0 if torch.cuda.is_available() else 1)')}"
: "${FP16:=$(( 1 - CPU ))}"
for name in UPDATES WARMUP BATCH TOKENS VALID_EVERY VALID_BATCH WORKERS; do
  if ! [[ ${!name} =~ ^[0-9]+$ ]] || { [[ $name != WORKERS && $name != WARMUP ]] && [ "${!name}" -eq 0 ]; }; then
    echo "error: $name=${!name} must be a positive whole number" >&2
    exit 2
  fi
done
if [ -n "$MINUTES" ] && { ! [[ $MINUTES =~ ^[0-9]+([.][0-9]+)?$ ]] || ! awk -v m="$MINUTES" 'BEGIN { exit !(m > 0) }'; }; then
  echo "error: MINUTES=$MINUTES must be a positive number" >&2
  exit 2
fi
for arm in $ARMS; do
  case "$arm" in ae,par | ae | par) ;; *) echo "error: ARMS: '$arm' is none of ae,par ae par" >&2; exit 2 ;; esac
done
for f in "$MODEL/model.pt" "$MODEL/dict.txt" "$MODEL/model_args.txt" "${CORPUS%%:*}/valid.idx"; do
  if [ ! -f "$f" ]; then echo "error: $f: no such file" >&2; exit 1; fi
done
USER_DIR=$REPO/unilm_fairseq
DEVICE=()
if [ "$CPU" = 1 ]; then DEVICE=(--cpu); elif [ "$FP16" = 1 ]; then DEVICE=(--fp16); fi
# shellcheck disable=SC2207  # the converted model's architecture flags are one line of words
MODEL_ARGS=($(cat "$MODEL/model_args.txt"))
mkdir -p "$WORK"
# shellcheck source=examples/common/pairs.sh
. "$REPO/examples/common/pairs.sh"
# each command is shown, quoted for the shell, before it runs and kept in WORK/commands.sh (run_shown)
record_start "$WORK/commands.sh"
# a training run's own checkpoint carries its hours of training, which fairseq would count against
# --stop-time-hours: the arms start from its weights alone (WORK/start.pt; a link to model.pt otherwise)
run_shown python "$REPO/scripts/pack_weights.py" start "$MODEL/model.pt" "$WORK/start.pt"
# shellcheck source=examples/common/training_console.sh
. "$REPO/examples/common/training_console.sh"
# the console shows the fairseq-train command, its training and validation lines as they come and, a minute
# in, when the training ends (show_training); ARM/train.log keeps all it says
TRAINING_LINES='^\+ fairseq-train |\| (train_inner|train|valid) \||done training in|Stopping training'

measure() {  # CHECKPOINT LOG: held-out AE and PAR loss and accuracy, both objectives, the same masks each time
  run_shown fairseq-validate "${CORPUS%%:*}" --user-dir "$USER_DIR" --task pmlm --objectives ae,par --path "$1" \
    --tokens-per-sample "$TOKENS" --batch-size "$VALID_BATCH" --required-batch-size-multiple 1 --seed "$SEED" \
    --num-workers "$WORKERS" ${DEVICE[@]+"${DEVICE[@]}"} > "$2" 2>&1 || return 1
  local line
  line=$(grep -E "valid on .* subset" "$2" | tail -1)
  if [ -z "$line" ]; then
    echo "error: no validation line in $2" >&2
    return 1
  fi
  printf '%s\t%s\t%s\t%s\n' "$(field ae_loss "$line")" "$(field par_loss "$line")" "$(field ae_acc "$line")" \
    "$(field par_acc "$line")"
}
record() {  # ARM POINT UPDATES SECONDS CHECKPOINT LOG: a row of summary.tsv with CHECKPOINT's held-out measures
  local measures
  measures=$(measure "$5" "$6") || {  # a failed validation stops the run here, not hours later
    echo "error: fairseq-validate failed on $5; the end of $6:" >&2
    tail -20 "$6" >&2
    exit 1
  }
  printf '%s\t%s\t%s\t%s\t%s\n' "$1" "$2" "$3" "$4" "$measures" | tee -a "$WORK/summary.tsv"
}
field() {  # NAME LINE: the value fairseq logged as "NAME value" in LINE
  grep -oE "(^| )$1 [0-9.]+" <<< "$2" | awk '{print $2}' | tail -1
}
seconds_of() {  # fairseq-train's log: its training time in seconds
  grep -oE "done training in [0-9.]+ seconds" "$1" | awk '{print $4}' | tail -1
}

printf 'arm\tpoint\tupdates\ttrain_seconds\tae_loss\tpar_loss\tae_acc\tpar_acc\n' > "$WORK/summary.tsv"
echo "== held-out measures of the converted model (before continued pre-training)"
record start before 0 0 "$MODEL/model.pt" "$WORK/valid-before.log"

first_seconds="" first_updates=$UPDATES
for arm in $ARMS; do
  name=${arm/,/+}
  out=$WORK/$name
  rm -rf "$out" && mkdir -p "$out"
  stop=(--max-update "$UPDATES")
  if [ -z "$first_seconds" ] && [ -n "$MINUTES" ]; then
    stop+=(--stop-time-hours "$(python -c "print($MINUTES / 60)")")
  elif [ -n "$first_seconds" ] && [ "$EQUAL_TIME" = 1 ]; then
    # go on past the first arm's updates until this arm has trained as long as the first one
    stop=(--max-update $(( first_updates * 20 )) --stop-time-hours "$(python -c "print($first_seconds / 3600)")")
  elif [ -n "$first_seconds" ]; then
    stop=(--max-update "$first_updates")
  fi
  echo "== continue pre-training, objectives $arm: ${stop[*]}, batch $BATCH x $TOKENS tokens, lr $LR"
  show_training "$out/train.log" "$TRAINING_LINES" \
    run_shown fairseq-train "$CORPUS" --user-dir "$USER_DIR" --task pmlm --criterion ae_par --objectives "$arm" \
    "${MODEL_ARGS[@]}" --finetune-from-model "$WORK/start.pt" --tokens-per-sample "$TOKENS" \
    --batch-size "$BATCH" --required-batch-size-multiple 1 \
    --optimizer adam --adam-betas '(0.9, 0.98)' --adam-eps 1e-6 --weight-decay 0.01 --clip-norm 0.0 \
    --lr "$LR" --lr-scheduler fixed --warmup-updates "$WARMUP" "${stop[@]}" \
    --validate-interval-updates "$VALID_EVERY" --validate-interval 1000000 --batch-size-valid "$VALID_BATCH" \
    --save-dir "$out/checkpoints" --save-interval-updates "$first_updates" --keep-interval-updates -1 \
    --save-interval 1000000 --no-epoch-checkpoints --seed "$SEED" --num-workers "$WORKERS" \
    --log-format simple --log-interval 50 ${DEVICE[@]+"${DEVICE[@]}"} "$@" || {
    echo "error: fairseq-train failed for $arm; the end of $out/train.log:" >&2
    tail -20 "$out/train.log" >&2
    exit 1
  }
  cp "$MODEL/dict.txt" "$MODEL/model_args.txt" "$out/checkpoints/"
  seconds=$(seconds_of "$out/train.log")
  last_updates=$(grep -oE "num_updates [0-9]+" "$out/train.log" | tail -1 | awk '{print $2}')
  echo "   $last_updates updates in $seconds s"
  if [ -z "$first_seconds" ]; then
    first_seconds=$seconds first_updates=$last_updates
  else
    # no match is no row: this arm stopped (its time, or MINUTES) before the first arm's updates
    at_updates=$(compgen -G "$out/checkpoints/checkpoint_*_$first_updates.pt" | head -1 || true)
    if [ -n "$at_updates" ]; then
      record "$arm" equal_updates "$first_updates" "" "$at_updates" "$WORK/valid-$name-equal_updates.log"
    else
      echo "   no checkpoint at update $first_updates: no equal_updates row for $arm"
    fi
  fi
  record "$arm" last "$last_updates" "$seconds" "$out/checkpoints/checkpoint_last.pt" "$WORK/valid-$name-last.log"
done
logs=()
for arm in $ARMS; do logs+=("$arm=$WORK/${arm/,/+}/train.log"); done
run_shown python "$REPO/scripts/pretraining_curve.py" --log "${logs[@]}" --start "$WORK/valid-before.log" \
  --tsv "$WORK/curve.tsv"
echo "== held-out measures (bits per predicted token; accuracy in %): $WORK/summary.tsv, curves: $WORK/curve.tsv"
column -t -s $'\t' "$WORK/summary.tsv"
