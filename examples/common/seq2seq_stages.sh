# shellcheck shell=bash
# The stages the sequence-to-sequence recipes share (examples/s2s_ft/pipeline.sh, examples/palm/pipeline.sh and
# the main job, examples/s2s_ft/finetune.sh): the console every step runs through, prepare checks,
# preprocess, the update count and batch split, validation on ROUGE, the decoding length floor, the checkpoint
# to decode, the model folder and scoring. Each works on the recipe's variables (STAGES, TOKENIZER, VOCAB,
# DICT, PRETRAINED, GPUS, ...) and its own settings, read from the recipe's config. Sourced, not run.

SEQ2SEQ_REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
# shellcheck source=examples/common/pairs.sh
. "$SEQ2SEQ_REPO/examples/common/pairs.sh"
# shellcheck source=examples/common/training_console.sh
. "$SEQ2SEQ_REPO/examples/common/training_console.sh"
: "${PYTHON:=python}"  # the python that has unilm_fairseq installed

# The console. Every command is shown before it runs ("+ COMMAND", and added to the command record). Its
# output goes to the console, unless QUIET_LOGS names a folder (the main job sets WORK_DIR/logs): then a
# step's whole output goes to QUIET_LOGS/STEP.log, and the console gets the log's last line every 30 s while
# the step runs, its summary lines (step_summary) after it, and the end of the log if it fails; training
# shows fairseq's progress and validation lines as they come.

# run_step STEP COMMAND...: run COMMAND as the step STEP
run_step() {
  local step=$1
  shift
  if [ -z "${QUIET_LOGS:-}" ]; then run_shown "$@"; else run_logged "$QUIET_LOGS/$step.log" "" "$@"; fi
}

# run_step_to OUT STEP COMMAND...: run_step with COMMAND's standard output in OUT
run_step_to() {
  local out=$1 step=$2
  shift 2
  if [ -z "${QUIET_LOGS:-}" ]; then run_shown_to "$out" "$@"; else run_logged "$QUIET_LOGS/$step.log" "$out" "$@"; fi
}

# run_train_step COMMAND...: run fairseq-train (quiet: its whole output in QUIET_LOGS/train.log, its training,
# validation and closing lines and the pairs each split kept on the console as they come, and one line, a
# minute in, with the time the rest of the training takes: training_estimate)
run_train_step() {
  if [ -z "${QUIET_LOGS:-}" ]; then run_shown "$@"; return; fi
  # fairseq's training and validation lines, and the sequence-to-sequence tasks' count of the pairs each split
  # kept, skipped and cut ("train: 800 pairs; skipped 0 ...; truncated 176 sources ..."): data that never
  # reaches the model is said on the console, not only in the log
  local log=$QUIET_LOGS/train.log
  local lines='\| (train_inner|train|valid) \||\| (train|valid): [0-9]+ pairs; skipped|done training in|Stopping training'
  mkdir -p "$QUIET_LOGS"
  show_command "$(shell_words "$@")"
  if ! show_training "$log" "$lines" "$@"; then
    echo "error: $1 failed; the end of $log:" >&2
    tail -n 20 "$log" >&2
    exit 1
  fi
}

# a logging prefix, as fairseq's and the scripts' formats write it: "2026-11-28 20:34:53,942 | INFO | name | " or
# "INFO:name:" (fairseq's commands that import fairseq before they configure logging)
LOG_PREFIX='^([0-9-]+ [0-9:,]+ \| )?[A-Z]+( \||:)[^|:]*(\||:) ?'
: "${HEARTBEAT_S:=30}"  # seconds between the console's lines from a quiet step's log

# run_logged LOG OUT COMMAND...: show COMMAND (with "> OUT" when OUT is given), run it with its output in LOG
# (its standard output in OUT when given), printing LOG's last line, without its logging prefix, every
# HEARTBEAT_S seconds; on failure, the end of LOG
run_logged() {
  local log=$1 out=$2 start=$SECONDS heartbeat status=0
  shift 2
  mkdir -p "$(dirname "$log")"
  if [ -n "$out" ]; then show_command "$(shell_words "$@") > $(shell_words "$out")"; else show_command "$(shell_words "$@")"; fi
  (
    trap 'kill "$nap" 2>/dev/null; exit 0' TERM  # its sleep goes too: nothing keeps the console's pipe open
    while :; do
      sleep "$HEARTBEAT_S" &
      nap=$!
      wait "$nap"
      kill -0 $$ 2>/dev/null || exit 0  # the script is gone (Ctrl-C skips the kill below): so is its heartbeat
      echo "   ... $(( SECONDS - start )) s: $(tail -n 1 "$log" 2>/dev/null | sed -E "s/$LOG_PREFIX//; s/^: +//" | cut -c1-140)"
    done
  ) &
  heartbeat=$!
  if [ -n "$out" ]; then "$@" > "$out" 2> "$log" || status=$?; else "$@" > "$log" 2>&1 || status=$?; fi
  kill "$heartbeat" 2>/dev/null || true
  wait "$heartbeat" 2>/dev/null || true
  if [ "$status" != 0 ]; then
    echo "error: $1 failed (exit $status); the end of $log:" >&2
    tail -n 20 "$log" >&2
    exit "$status"
  fi
}

# step_summary STEP PATTERN: with QUIET_LOGS, the lines of the step's log that sum it up, without their
# logging prefix (without QUIET_LOGS the console showed them already)
step_summary() {
  if [ -z "${QUIET_LOGS:-}" ]; then return; fi
  grep -E "$2" "$QUIET_LOGS/$1.log" | sed -E "s/$LOG_PREFIX/   /" || true
}

# stage_on NAME: NAME is one of the STAGES (separated by commas, spaces or both)
stage_on() {
  [[ ",${STAGES// /,}," == *",$1,"* ]]
}

# need_stages NAME...: every one of the STAGES is one of the NAMEs (a misspelt one would skip its step)
need_stages() {
  local name known
  known=$(IFS=,; echo "$*")
  for name in ${STAGES//,/ }; do
    if [[ ",$known," != *",$name,"* ]]; then
      echo "error: STAGES: '$name' is none of $known" >&2
      exit 2
    fi
  done
}

# default_vocab MODEL_DIR: VOCAB, unless set, is the tokenizer's file beside the pre-trained model (for
# WordPiece, its dict.txt when there is no vocab.txt: the checkpoint importer writes the vocabulary there)
default_vocab() {
  local model_dir=$1
  case $TOKENIZER in
    wordpiece)
      if [ -z "${VOCAB:-}" ] && [ ! -f "$model_dir/vocab.txt" ] && [ -f "$model_dir/dict.txt" ]; then
        VOCAB=$model_dir/dict.txt
      fi
      : "${VOCAB:=$model_dir/vocab.txt}" ;;
    spm) : "${VOCAB:=$model_dir/spm.model}" ;;
  esac
}

# need_vocab: stop unless the tokenizer's VOCAB exists
need_vocab() {
  if [ "$TOKENIZER" != none ] && [ ! -f "$VOCAB" ]; then
    echo "VOCAB=$VOCAB: no such file (set VOCAB, or PRETRAINED with its $(basename "$VOCAB") beside it)" >&2
    exit 1
  fi
}

# preprocess_stage TASK TEXT BIN: fairseq-preprocess TEXT/{train,valid,test}.{src,tgt} into BIN with the
# pre-trained model's dictionary, through the plugin's TASK (which reads the importer's dict.txt, one
# token a line with no counts)
preprocess_stage() {
  local task=$1 text=$2 bin=$3
  require_pair_files "$text" "the stage that prepares or tokenizes the text writes it"
  local dict_flags=(--joined-dictionary)
  if [ -f "$DICT" ]; then
    dict_flags=(--srcdict "$DICT" --tgtdict "$DICT")
  elif [ -n "$PRETRAINED" ]; then
    echo "DICT=$DICT does not exist: fine-tuning needs the pre-trained model's dictionary" >&2
    exit 1
  fi
  run_step binarize fairseq-preprocess --user-dir "$SEQ2SEQ_REPO/unilm_fairseq" --task "$task" --source-lang src \
    --target-lang tgt --trainpref "$text/train" --validpref "$text/valid" --testpref "$text/test" \
    --destdir "$bin" --workers "$WORKERS" "${dict_flags[@]}"
  step_summary binarize "sents, [0-9]+ tokens"
}

# training_updates TEXT: STEPS, or the updates EPOCHS passes over TEXT/train.src take in TOTAL_BATCH
# examples (the papers give epochs; fairseq's schedules count updates)
training_updates() {
  if [ -n "${STEPS:-}" ]; then echo "$STEPS"; else updates_for_epochs "$1/train.src" "$TOTAL_BATCH" "$EPOCHS"; fi
}

# count_cuda_devices: CUDA_DEVICE_COUNT, the CUDA devices torch sees, asked of torch once per run (importing it
# takes seconds; FP16, CPU and GPUS default from it). CUDA_VISIBLE_DEVICES set to "" or -1 hides every
# device, so then the count is 0 without asking.
count_cuda_devices() {
  if [ -n "${CUDA_DEVICE_COUNT:-}" ]; then return; fi
  case ${CUDA_VISIBLE_DEVICES-unset} in
    "" | -1) CUDA_DEVICE_COUNT=0 ;;
    *) CUDA_DEVICE_COUNT=$("$PYTHON" -c 'import torch; print(torch.cuda.device_count())') ;;
  esac
}

# split_batch: GPUS (all visible unless set) and UPDATE_FREQ, so that GPUS x BATCH_PER_GPU x UPDATE_FREQ is
# TOTAL_BATCH; stop when it does not divide
split_batch() {
  if [ -z "${GPUS:-}" ]; then
    count_cuda_devices
    GPUS=$(( CUDA_DEVICE_COUNT > 1 ? CUDA_DEVICE_COUNT : 1 ))
  fi
  local per_step=$(( GPUS * BATCH_PER_GPU ))
  if (( TOTAL_BATCH % per_step )); then
    echo "TOTAL_BATCH=$TOTAL_BATCH is not a multiple of GPUS*BATCH_PER_GPU=$per_step" >&2
    exit 1
  fi
  UPDATE_FREQ=$(( TOTAL_BATCH / per_step ))
}

# train_stage BIN SAVE TASK UPDATES WARMUP [FLAG...]: fairseq-train on BIN for TASK, into SAVE, as every
# sequence-to-sequence recipe trains: the model of ARCH_FLAGS (an array), the recipe's positions, Adam
# with its epsilon, weight decay and clipping, the learning rate's linear warm-up over WARMUP updates and
# its linear decay to 0 at UPDATES (s2s-ft Table 7's schedule), no epoch checkpoints, the recipe's seed,
# --fp16 with FP16=1; then the FLAGs: the task's criterion and options, the recipe's batching, checkpoints
# and validation, and the flags the user gave the recipe (last, so that they win)
train_stage() {
  local bin=$1 save=$2 task=$3 updates=$4 warmup=$5 precision=()
  shift 5
  if [ "${FP16:-0}" = 1 ]; then precision=(--fp16); fi
  run_train_step fairseq-train "$bin" --user-dir "$SEQ2SEQ_REPO/unilm_fairseq" --task "$task" "${ARCH_FLAGS[@]}" \
    --max-source-positions "$MAX_SRC" --max-target-positions "$MAX_TGT" \
    --optimizer adam --adam-betas '(0.9, 0.999)' --adam-eps "$ADAM_EPS" --weight-decay "$WEIGHT_DECAY" \
    --clip-norm "$CLIP_NORM" --lr "$LR" --lr-scheduler polynomial_decay --warmup-updates "$warmup" \
    --total-num-update "$updates" --max-update "$updates" \
    --save-dir "$save" --no-epoch-checkpoints --seed "$SEED" --log-format simple \
    ${precision[@]+"${precision[@]}"} "$@"
}

# paper_train_stage TEXT BIN SAVE TASK [FLAG...]: train_stage as the paper recipes train (s2s-ft's and
# PALM's): STEPS updates, or those EPOCHS passes over TEXT's training pairs take; WARMUP warm-up updates, or
# WARMUP_PERCENT of them; TOTAL_BATCH examples per update, split over the GPUs (split_batch); DROPOUT; a
# checkpoint every SAVE_INTERVAL updates, the last 5 kept; validation on ROUGE (eval_rouge_flags). The
# FLAGs are the task's, then the flags the user gave the recipe (last, so that they win)
paper_train_stage() {
  local text=$1 bin=$2 save=$3 task=$4 updates warmup
  shift 4
  updates=$(training_updates "$text")
  warmup=${WARMUP:-$(( updates * WARMUP_PERCENT / 100 ))}
  split_batch
  eval_rouge_flags
  echo "training: $updates updates ($warmup warm-up) of $TOTAL_BATCH examples" \
    "= $GPUS GPUs x $BATCH_PER_GPU x update-freq $UPDATE_FREQ" >&2
  train_stage "$bin" "$save" "$task" "$updates" "$warmup" \
    --batch-size "$BATCH_PER_GPU" --update-freq "$UPDATE_FREQ" --distributed-world-size "$GPUS" \
    --dropout "$DROPOUT" \
    --attention-dropout "$DROPOUT" --save-interval-updates "$SAVE_INTERVAL" --keep-interval-updates 5 \
    --log-interval 100 ${EVAL_ROUGE_FLAGS[@]+"${EVAL_ROUGE_FLAGS[@]}"} "$@"
}

# generate_stage BIN SAVE TASK DECODED OUT [FLAG...]: fairseq-generate on BIN's test split with the
# checkpoint DECODED, its output in OUT, as every sequence-to-sequence recipe decodes: the recipe's
# positions, test batch, beam, length penalty (LENPEN_STYLE when the recipe has one), n-gram blocking
# (NGRAM_EXEMPT's exemptions when set), fewest and most tokens (a fixed length: --max-len-a 0),
# sentencepiece undone with TOKENIZER=spm, --fp16 with FP16=1, then the FLAGs; then the model folder
generate_stage() {
  local bin=$1 save=$2 task=$3 decoded=$4 out=$5 flags=()
  shift 5
  if [ "$TOKENIZER" = spm ]; then flags+=(--post-process sentencepiece); fi
  if [ "${FP16:-0}" = 1 ]; then flags+=(--fp16); fi
  if [ -n "${NGRAM_EXEMPT:-}" ]; then flags+=(--no-repeat-ngram-exempt "$NGRAM_EXEMPT"); fi
  run_step_to "$out" generate fairseq-generate "$bin" --user-dir "$SEQ2SEQ_REPO/unilm_fairseq" --task "$task" \
    --path "$decoded" --max-source-positions "$MAX_SRC" --max-target-positions "$MAX_TGT" \
    --gen-subset test --batch-size "$GEN_BATCH" \
    --beam "$BEAM" --lenpen "$LENPEN" ${LENPEN_STYLE:+--lenpen-style "$LENPEN_STYLE"} \
    --no-repeat-ngram-size "$NO_REPEAT_NGRAM" --min-len "$MIN_LEN" --max-len-a 0 --max-len-b "$MAX_LEN_B" \
    ${flags[@]+"${flags[@]}"} "$@"
  step_summary generate "Translated [0-9]+ sentences"
  write_model_folder "$save" "$decoded" "$bin"
}

# generate_rouge_flags: GENERATE_ROUGE_FLAGS, fairseq-generate's flags for its own --scoring rouge line:
# WordPiece joined back into words, as the score stage does (--post-process undoes sentencepiece already)
generate_rouge_flags() {
  GENERATE_ROUGE_FLAGS=(--scoring rouge)
  if [ "$TOKENIZER" = wordpiece ]; then GENERATE_ROUGE_FLAGS+=(--rouge-detok wordpiece); fi
}

# eval_rouge_flags: EVAL_ROUGE_FLAGS, fairseq-train's flags for validation that decodes as the test set is
# decoded (the recipe's BEAM, LENPEN, ...) and keeps the checkpoint with the best ROUGE-L; none with
# EVAL_ROUGE=0. LENPEN_STYLE, when the recipe has one, is passed; otherwise the task's default holds.
eval_rouge_flags() {
  EVAL_ROUGE_FLAGS=()
  if [ "$EVAL_ROUGE" = 1 ]; then
    EVAL_ROUGE_FLAGS+=(--eval-rouge --eval-rouge-detok "$(detok_name)" ${LENPEN_STYLE:+--lenpen-style "$LENPEN_STYLE"})
    if [ -n "${NGRAM_EXEMPT:-}" ]; then EVAL_ROUGE_FLAGS+=(--no-repeat-ngram-exempt "$NGRAM_EXEMPT"); fi
    EVAL_ROUGE_FLAGS+=(--eval-rouge-args "$(decoding_json)" --best-checkpoint-metric rouge_l
      --maximize-best-checkpoint-metric)
  fi
}

# detok_name: how validation turns TOKENIZER's pieces back into text (--eval-rouge-detok)
detok_name() {
  case $TOKENIZER in
    spm) echo sentencepiece ;;
    wordpiece) echo wordpiece ;;
    *) echo none ;;
  esac
}

# decoding_json: the test set's decoding settings as --eval-rouge-args
decoding_json() {
  printf '{"beam": %s, "lenpen": %s, "min_len": %s, "max_len_a": 0, "max_len_b": %s, ' \
    "$BEAM" "$LENPEN" "$MIN_LEN" "$MAX_LEN_B"
  printf '"no_repeat_ngram_size": %s}\n' "$NO_REPEAT_NGRAM"
}

# length_percentile FILE PERCENT: the PERCENT-th percentile (a whole number) of the lengths of FILE's lines
# in whitespace-separated tokens: the sorted lengths' entry at rank floor(lines x PERCENT / 100) + 1 (the
# longest at 100)
length_percentile() {
  awk '{print NF}' "$1" | sort -n \
    | awk -v p="$2" '{n[NR] = $1} END {r = int(NR * p / 100) + 1; if (r > NR) r = NR; print n[r]}'
}

# derive_min_len TRAIN_TGT: unless MIN_LEN is set, the fewest tokens generated is the 5th percentile of the
# lengths of the tokenized training targets in TRAIN_TGT, at most MAX_LEN_B (this project's rule for a recipe
# whose config leaves MIN_LEN empty, as the main job's does: MIN_LEN=)
derive_min_len() {
  if [ -n "$MIN_LEN" ]; then return; fi
  if [ ! -s "$1" ]; then
    echo "error: MIN_LEN is derived from $1 (the tokenize stage writes it): set MIN_LEN" >&2
    exit 2
  fi
  MIN_LEN=$(length_percentile "$1" 5)
  if (( MIN_LEN > MAX_LEN_B )); then MIN_LEN=$MAX_LEN_B; fi
  echo "== MIN_LEN=$MIN_LEN: the 5th percentile of the training targets' lengths in tokens (set MIN_LEN to choose)"
}

# decoded_checkpoint SAVE DEFAULT: the checkpoint CKPT names (DEFAULT when unset): best or last, fairseq's
# checkpoint_best.pt or checkpoint_last.pt in SAVE, or a path
decoded_checkpoint() {
  local ckpt=${CKPT:-$2}
  case $ckpt in
    best | last) echo "$1/checkpoint_$ckpt.pt" ;;
    *) echo "$ckpt" ;;
  esac
}

# write_model_folder SAVE DECODED BIN: the checkpoint folder becomes a model folder that the hub loads with
# one argument, with its dictionaries, tokenizer and the test set's decoding settings (only when DECODED is
# a real checkpoint in SAVE, decoded from real files); FOLDER_CASING (--lowercase or --cased), when the
# recipe sets it, records how the training text was cased
write_model_folder() {
  local save=$1 decoded=$2 bin=$3 bpe_flags=(--bpe none)
  if [ "$TOKENIZER" = wordpiece ]; then bpe_flags=(--bpe wordpiece --bpe-file "$VOCAB"); fi
  if [ "$TOKENIZER" = spm ]; then bpe_flags=(--bpe sentencepiece --bpe-file "$VOCAB"); fi
  if [ "$(dirname "$decoded")" = "$save" ] && [ -f "$decoded" ] && [ -f "$bin/dict.src.txt" ]; then
    run_shown "$PYTHON" "$SEQ2SEQ_REPO/scripts/write_model_folder.py" "$save" --dicts "$bin" \
      --checkpoint "$(basename "$decoded")" "${bpe_flags[@]}" --beam "$BEAM" --lenpen "$LENPEN" \
      ${LENPEN_STYLE:+--lenpen-style "$LENPEN_STYLE"} --min-len "$MIN_LEN" --max-len-b "$MAX_LEN_B" \
      --no-repeat-ngram-size "$NO_REPEAT_NGRAM" ${NGRAM_EXEMPT:+--no-repeat-ngram-exempt "$NGRAM_EXEMPT"} \
      ${FOLDER_CASING:+"$FOLDER_CASING"}
  fi
}

# tune_stage SAVE DECODED BIN SRC TGT TABLE [FLAG...]: choose the decoding settings on the validation pairs
# SRC/TGT (raw text) with scripts/tune_decoding.py FLAG... on the model folder of DECODED (written first, with
# the settings so far); its table goes to TABLE and the console, the search to SAVE/decoding_search.json, and
# the best setting becomes BEAM, LENPEN, MIN_LEN, MAX_LEN_B and NO_REPEAT_NGRAM for generate_stage
tune_stage() {
  local save=$1 decoded=$2 bin=$3 src=$4 tgt=$5 table=$6 best name value
  shift 6
  if [ "$(dirname "$decoded")" != "$save" ]; then
    echo "error: tuning decodes through the model folder $save, but the decoded checkpoint is $decoded" >&2
    exit 2
  fi
  write_model_folder "$save" "$decoded" "$bin"
  best=$(dirname "$table")/tuned-settings.txt
  run_step_to "$table" tune "$PYTHON" "$SEQ2SEQ_REPO/scripts/tune_decoding.py" "$save" --source "$src" \
    --reference "$tgt" --write --shell-out "$best" "$@"
  sed 's/^/   /' "$table"
  while IFS='=' read -r name value; do
    case $name in
      BEAM) BEAM=$value ;;
      LENPEN) LENPEN=$value ;;
      MIN_LEN) MIN_LEN=$value ;;
      MAX_LEN_B) MAX_LEN_B=$value ;;
      NO_REPEAT_NGRAM_SIZE) NO_REPEAT_NGRAM=$value ;;
    esac
  done < "$best"
}

# score_stage WORK SAVE [FLAG...]: scripts/score.py on WORK/gen.out (WordPiece joined back into words)
# against the whole references WORK/text/test.tgt -> WORK/scores.txt and scores.json, which the model folder
# SAVE keeps. gen.out's T- lines are the targets as training saw them, cut to MAX_TGT pieces: they are the
# references only when there is no text/test.tgt.
score_stage() {
  local work=$1 save=$2 score_flags=()
  shift 2
  # fairseq-generate has no --post-process for BERT's "##" pieces; sentencepiece was undone there
  if [ "$TOKENIZER" = wordpiece ]; then score_flags+=(--detok wordpiece); fi
  if [ -f "$work/text/test.tgt" ]; then
    score_flags+=(--ref "$work/text/test.tgt")
    case $TOKENIZER in
      wordpiece) score_flags+=(--detok-ref) ;;
      spm) score_flags+=(--ref-detok sentencepiece) ;;
    esac
  else
    echo "$work/text/test.tgt: no such file: scoring against gen.out's T- lines (cut to $MAX_TGT pieces)" >&2
  fi
  run_shown_tee "$work/scores.txt" "$PYTHON" "$SEQ2SEQ_REPO/scripts/score.py" --generate-output "$work/gen.out" \
    --metrics "$METRICS" --json "$work/scores.json" ${score_flags[@]+"${score_flags[@]}"} "$@"
  if [ -f "$save/generation.json" ]; then cp "$work/scores.json" "$save/scores.json"; fi
}

# keep_commands WORK SAVE: the model folder keeps the commands that made it
keep_commands() {
  if [ -f "$2/generation.json" ]; then cp "$1/commands.sh" "$2/commands.sh"; fi
}
