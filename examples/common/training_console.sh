# shellcheck shell=bash
# What a recipe's console says while fairseq-train runs: fine-tuning (examples/common/seq2seq_stages.sh's
# run_train_step) and continued pre-training (examples/unilmv2_pretrain/continue_pretraining.sh) run it
# through show_training. Sourced, not run.

# show_training LOG PATTERN COMMAND...: run COMMAND with all it prints in LOG and on the console the lines
# that match PATTERN (grep -E), as they come, with training_estimate's line; under pipefail, it fails when
# COMMAND does
show_training() {
  local log=$1 pattern=$2
  shift 2
  "$@" 2>&1 | tee "$log" | { grep --line-buffered -E "$pattern" || true; } | training_estimate "$@"
}

# training_estimate FAIRSEQ_TRAIN_ARGS...: copy the training lines of standard input to standard output and,
# once, after the first train_inner line logged ESTIMATE_AFTER_S seconds or more into training, say how long
# the rest of the budget takes at the pace so far: fairseq's wall clock (its validations included) over its
# update count, for the updates left to the last --max-update of the arguments; the last --stop-time-hours
# caps it. Said only when a minute or more is left, so a short run's console is unchanged.
: "${ESTIMATE_AFTER_S:=60}"
training_estimate() {
  local budget="" cap="" said="" line updates wall left cap_s words end
  while [ $# -gt 0 ]; do
    case $1 in
      --max-update) budget=${2:-}; shift ;;
      --max-update=*) budget=${1#*=} ;;
      --stop-time-hours) cap=${2:-}; shift ;;
      --stop-time-hours=*) cap=${1#*=} ;;
    esac
    shift
  done
  while IFS= read -r line; do
    printf '%s\n' "$line"
    if [ -n "$said" ] || ! [[ $budget =~ ^[0-9]+$ ]] \
      || ! [[ $line =~ \|\ train_inner\ \|.*num_updates=([0-9]+).*\ wall=([0-9]+) ]]; then
      continue
    fi
    updates=${BASH_REMATCH[1]} wall=${BASH_REMATCH[2]}
    if (( updates == 0 || wall < ESTIMATE_AFTER_S )); then continue; fi
    said=1
    left=$(( (budget - updates) * wall / updates ))
    words="at this pace the $budget updates end in about $(duration_words "$left")"
    if [[ $cap =~ ^[0-9]*[.]?[0-9]+$ ]]; then
      cap_s=$(awk -v h="$cap" -v w="$wall" 'BEGIN {s = h * 3600 - w; printf "%d", (s > 0 ? s : 0)}')
      if (( cap_s < left )); then
        words="at this pace the $budget updates would take $(duration_words "$left") more; the time limit"
        words="$words (--stop-time-hours $cap) stops training in about $(duration_words "$cap_s")"
        left=$cap_s
      fi
    fi
    if (( left < 60 )); then continue; fi
    end=$(date -d "+$left seconds" +%H:%M 2>/dev/null) && end=" (about $end)" || end=""
    echo "   ... $updates updates in $wall s: $words$end"
  done
}

# duration_words SECONDS: "4 min" or "3 h 18 min"
duration_words() {
  local minutes=$(( ($1 + 30) / 60 ))
  if (( minutes >= 60 )); then echo "$(( minutes / 60 )) h $(( minutes % 60 )) min"; else echo "$minutes min"; fi
}
