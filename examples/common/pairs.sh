# shellcheck shell=bash
# Checks, counts and the printed command record the fine-tuning scripts share. Sourced, not run.
# require_pair_files DIR WHY: stop, naming the first missing file, unless DIR holds {train,valid,test}.{src,tgt}.
require_pair_files() {
  local dir=$1 why=$2 split side
  for split in train valid test; do
    for side in src tgt; do
      if [ ! -f "$dir/$split.$side" ]; then
        echo "$dir/$split.$side: no such file ($why)" >&2
        exit 1
      fi
    done
  done
}

PAIRS_REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)

# updates_for_epochs TRAIN_SRC BATCH EPOCHS: the updates EPOCHS passes over TRAIN_SRC's lines take (the papers
# give epochs; fairseq's schedules count updates), counted by scripts/recipe_config.py
updates_for_epochs() {
  "${PYTHON:-python}" "$PAIRS_REPO/scripts/recipe_config.py" updates "$@"
}

# read_recipe_config CONFIG...: every setting the configs hold becomes a shell variable of its name, unless
# the environment already gives one (scripts/recipe_config.py env; several configs must agree on a shared name)
read_recipe_config() {
  local defaults
  defaults=$("${PYTHON:-python}" "$PAIRS_REPO/scripts/recipe_config.py" env "$@")
  eval "$defaults"
}

# unk_token_for UNK_TOKEN: the vocabulary's unknown token for "auto" ([UNK] for TOKENIZER=wordpiece, <unk>
# otherwise); any other value as it is
unk_token_for() {
  if [ "$1" != auto ]; then echo "$1"; elif [ "$TOKENIZER" = wordpiece ]; then echo "[UNK]"; else echo "<unk>"; fi
}

# answer_help "$@": on -h/--help, print the running recipe's header and the settings of its config
# (config/NAME.yaml beside NAME.sh, or the configs a recipe of several commands names in RECIPE_CONFIGS, an
# array), then exit
answer_help() {
  case "${1:-}" in -h | --help) ;; *) return 0 ;; esac
  awk 'NR > 1 && !/^#/ {exit} NR > 1 {sub(/^# ?/, ""); print}' "$0"
  local configs=("$(dirname "$0")/config/$(basename "$0" .sh).yaml")
  if [ -n "${RECIPE_CONFIGS+set}" ]; then configs=("${RECIPE_CONFIGS[@]}"); fi
  if [ -f "${configs[0]}" ]; then
    echo
    echo "Settings (${configs[*]}; each overridden by the environment variable of its name):"
    "${PYTHON:-python}" "$PAIRS_REPO/scripts/recipe_config.py" help "${configs[@]}"
  fi
  exit 0
}

# Setting checks the recipes run before their first stage. Each stops with one line naming the setting,
# its value and what it must be (exit 2).
# need_whole NAME MIN: $NAME is a whole number >= MIN
need_whole() {
  local name=$1 min=$2 value=${!1}
  if ! [[ $value =~ ^[0-9]+$ ]] || (( 10#$value < min )); then
    echo "error: $name=$value must be a whole number >= $min" >&2
    exit 2
  fi
  printf -v "$name" '%d' "$(( 10#$value ))"  # 0250 is 250, not bash's octal 168
}
# need_number NAME [zero]: $NAME is a number > 0 (>= 0 with "zero"), such as 3e-4 or 0.5
need_number() {
  local name=$1 value=${!1} floor=${2:-}
  if ! [[ $value =~ ^([0-9]+[.]?[0-9]*|[.][0-9]+)([eE][-+]?[0-9]+)?$ ]] \
    || ! awk -v v="$value" -v zero="$floor" 'BEGIN { exit !(v + 0 > 0 || (zero != "" && v + 0 == 0)) }'; then
    if [ -n "$floor" ]; then floor=">= 0"; else floor="> 0"; fi
    echo "error: $name=$value must be a number $floor" >&2
    exit 2
  fi
}
# need_fraction NAME: $NAME is a number at least 0 and below 1, such as 0.1
need_fraction() {
  local name=$1 value=${!1}
  if ! [[ $value =~ ^([0-9]+[.]?[0-9]*|[.][0-9]+)([eE][-+]?[0-9]+)?$ ]] \
    || ! awk -v v="$value" 'BEGIN { exit !(v + 0 < 1) }'; then
    echo "error: $name=$value must be a number at least 0 and below 1" >&2
    exit 2
  fi
}

# model_arch_flags [MODEL_DIR]: fairseq's architecture flags for a model: --arch ARCH when ARCH is set, else the
# flags in MODEL_DIR/model_args.txt (which the checkpoint importer writes), else --arch unilmv2_base
model_arch_flags() {
  if [ -z "${ARCH:-}" ] && [ -n "${1:-}" ] && [ -f "$1/model_args.txt" ]; then
    cat "$1/model_args.txt"
  else
    echo "--arch ${ARCH:-unilmv2_base}"
  fi
}

# need_choice NAME CHOICE...: $NAME is one of the choices
need_choice() {
  local name=$1 value=${!1} choice
  shift
  for choice in "$@"; do [ "$value" = "$choice" ] && return 0; done
  echo "error: $name=$value must be one of: $*" >&2
  exit 2
}
# need_plain_path NAME: $NAME holds no comma or colon (fairseq splits its path arguments on both)
need_plain_path() {
  local name=$1 value=${!1}
  if [[ $value == *,* || $value == *:* ]]; then
    echo "error: $name=$value: fairseq splits paths on ',' and ':' (--trainpref, data shards); use a folder" \
      "whose path has neither" >&2
    exit 2
  fi
}

# The command record. Each command a recipe runs is printed before it runs ("+ COMMAND", on stderr, quoted
# for the shell) and, when COMMAND_RECORD names a file, added to it as one line: that file is a script that
# repeats the run (record_start begins it with "#!/usr/bin/env bash").
# shell_words WORD...: the words as one line of shell, each quoted only where it needs it
shell_words() {
  local word words=()
  for word in "$@"; do
    if [[ $word =~ ^[A-Za-z0-9_./=:,+%@-]+$ ]]; then
      words+=("$word")
    else
      words+=("'${word//\'/\'\\\'\'}'")
    fi
  done
  printf '%s\n' "${words[*]}"
}
# record_start FILE: a new record in FILE (replacing one there), kept in COMMAND_RECORD; record_start -a
# FILE goes on with the record in FILE, or begins one there
record_start() {
  local append=0
  if [ "$1" = -a ]; then append=1; shift; fi
  COMMAND_RECORD=$1
  if [ "$append" = 0 ] || [ ! -s "$COMMAND_RECORD" ]; then
    printf '#!/usr/bin/env bash\n' > "$COMMAND_RECORD"
  fi
}
# show_command LINE: print "+ LINE" on stderr and add LINE to the record
show_command() {
  printf '+ %s\n' "$1" >&2
  if [ -n "${COMMAND_RECORD:-}" ]; then printf '%s\n' "$1" >> "$COMMAND_RECORD"; fi
}
# run_shown COMMAND...: show, then run COMMAND
run_shown() {
  show_command "$(shell_words "$@")"
  "$@"
}
# run_shown_to FILE COMMAND...: show "COMMAND > FILE", then run COMMAND with its standard output in FILE
run_shown_to() {
  local out=$1
  shift
  show_command "$(shell_words "$@") > $(shell_words "$out")"
  "$@" > "$out"
}
# run_shown_tee FILE COMMAND...: show "COMMAND | tee FILE", then run it so
run_shown_tee() {
  local out=$1
  shift
  show_command "$(shell_words "$@") | tee $(shell_words "$out")"
  "$@" | tee "$out"
}
