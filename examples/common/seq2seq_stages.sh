# shellcheck shell=bash
# The stages the sequence-to-sequence pipelines share (examples/s2s_ft/pipeline.sh, examples/palm/pipeline.sh):
# prepare checks, preprocess, the update count and batch split, validation on ROUGE, the model folder and
# scoring. Each works on the pipeline's variables (STAGES, TOKENIZER, VOCAB, DICT, PRETRAINED, GPUS, ...)
# and its own settings, read from the recipe's config. Sourced, not run.

SEQ2SEQ_REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
# shellcheck source=examples/common/pairs.sh
. "$SEQ2SEQ_REPO/examples/common/pairs.sh"

# stage_on NAME: NAME is one of the comma-separated STAGES
stage_on() {
  [[ ",$STAGES," == *",$1,"* ]]
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
  require_pair_files "$text" "the prepare stage writes it"
  local dict_flags=(--joined-dictionary)
  if [ -f "$DICT" ]; then
    dict_flags=(--srcdict "$DICT" --tgtdict "$DICT")
  elif [ -n "$PRETRAINED" ]; then
    echo "DICT=$DICT does not exist: fine-tuning needs the pre-trained model's dictionary" >&2
    exit 1
  fi
  run_shown fairseq-preprocess --user-dir "$SEQ2SEQ_REPO/unilm_fairseq" --task "$task" --source-lang src \
    --target-lang tgt --trainpref "$text/train" --validpref "$text/valid" --testpref "$text/test" \
    --destdir "$bin" --workers "$WORKERS" "${dict_flags[@]}"
}

# training_updates TEXT: STEPS, or the updates EPOCHS passes over TEXT/train.src take in TOTAL_BATCH
# examples (the papers give epochs; fairseq's schedules count updates)
training_updates() {
  if [ -n "${STEPS:-}" ]; then echo "$STEPS"; else updates_for_epochs "$1/train.src" "$TOTAL_BATCH" "$EPOCHS"; fi
}

# split_batch: GPUS (all visible unless set) and UPDATE_FREQ, so that GPUS x BATCH_PER_GPU x UPDATE_FREQ is
# TOTAL_BATCH; stop when it does not divide
split_batch() {
  : "${GPUS:=$("$PYTHON" -c 'import torch; print(max(torch.cuda.device_count(), 1))')}"
  local per_step=$(( GPUS * BATCH_PER_GPU ))
  if (( TOTAL_BATCH % per_step )); then
    echo "TOTAL_BATCH=$TOTAL_BATCH is not a multiple of GPUS*BATCH_PER_GPU=$per_step" >&2
    exit 1
  fi
  UPDATE_FREQ=$(( TOTAL_BATCH / per_step ))
}

# eval_rouge_flags: EVAL_ROUGE_FLAGS, fairseq-train's flags for validation that decodes as the test set is
# decoded (the recipe's BEAM, LENPEN, ...) and keeps the checkpoint with the best ROUGE-L; none with
# EVAL_ROUGE=0
eval_rouge_flags() {
  EVAL_ROUGE_FLAGS=()
  if [ "$EVAL_ROUGE" = 1 ]; then
    EVAL_ROUGE_FLAGS+=(--eval-rouge --eval-rouge-detok "$(detok_name)" --lenpen-style "$LENPEN_STYLE")
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

# write_model_folder SAVE DECODED BIN: the checkpoint folder becomes a model folder that the hub loads with
# one argument, with its dictionaries, tokenizer and the test set's decoding settings (only when DECODED is
# a real checkpoint in SAVE, decoded from real files)
write_model_folder() {
  local save=$1 decoded=$2 bin=$3 bpe_flags=(--bpe none)
  if [ "$TOKENIZER" = wordpiece ]; then bpe_flags=(--bpe wordpiece --bpe-file "$VOCAB"); fi
  if [ "$TOKENIZER" = spm ]; then bpe_flags=(--bpe sentencepiece --bpe-file "$VOCAB"); fi
  if [ "$(dirname "$decoded")" = "$save" ] && [ -f "$decoded" ] && [ -f "$bin/dict.src.txt" ]; then
    run_shown "$PYTHON" "$SEQ2SEQ_REPO/scripts/write_model_folder.py" "$save" --dicts "$bin" \
      --checkpoint "$(basename "$decoded")" "${bpe_flags[@]}" --beam "$BEAM" --lenpen "$LENPEN" \
      --lenpen-style "$LENPEN_STYLE" --min-len "$MIN_LEN" --max-len-b "$MAX_LEN_B" \
      --no-repeat-ngram-size "$NO_REPEAT_NGRAM" ${NGRAM_EXEMPT:+--no-repeat-ngram-exempt "$NGRAM_EXEMPT"}
  fi
}

# score_stage WORK SAVE [FLAG...]: scripts/score.py on WORK/gen.out (WordPiece joined back into words) ->
# WORK/scores.txt and scores.json, which the model folder SAVE keeps
score_stage() {
  local work=$1 save=$2 score_flags=()
  shift 2
  # fairseq-generate has no --post-process for BERT's "##" pieces; sentencepiece was undone there
  if [ "$TOKENIZER" = wordpiece ]; then score_flags+=(--detok wordpiece); fi
  run_shown_tee "$work/scores.txt" "$PYTHON" "$SEQ2SEQ_REPO/scripts/score.py" --generate-output "$work/gen.out" \
    --metrics "$METRICS" --json "$work/scores.json" ${score_flags[@]+"${score_flags[@]}"} "$@"
  if [ -f "$save/generation.json" ]; then cp "$work/scores.json" "$save/scores.json"; fi
}

# keep_commands WORK SAVE: the model folder keeps the commands that made it
keep_commands() {
  if [ -f "$2/generation.json" ]; then cp "$1/commands.sh" "$2/commands.sh"; fi
}
