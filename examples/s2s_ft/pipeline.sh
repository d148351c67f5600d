# shellcheck shell=bash
# Steps shared by the s2s-ft recipes of this folder (cnndm.sh, xsum.sh, gigaword.sh, squad_qg.sh), which call
# s2s_ft_main NAME RAW_DIR WORK_DIR [extra fairseq-train flags] with their config's NAME.
# Not meant to be run on its own.
#
# Steps (STAGES picks them, comma-separated, in this order):
#   prepare     scripts/prepare_seq2seq_data.py: RAW_DIR -> WORK_DIR/text/{train,valid,test}.{src,tgt}
#   preprocess  fairseq-preprocess with the pre-trained model's dictionary -> WORK_DIR/bin
#   train       fairseq-train --task unilm_seq2seq -> WORK_DIR/checkpoints
#   generate    fairseq-generate on the test split -> WORK_DIR/gen.out; the checkpoint folder becomes a
#               model folder (scripts/write_model_folder.py: UniLMModel.from_pretrained(WORK_DIR/checkpoints))
#   score       scripts/score.py on gen.out (WordPiece joined with --detok wordpiece) against the whole
#               references text/test.tgt -> WORK_DIR/scores.txt and scores.json; scores.json and commands.sh
#               (below) are copied into the model folder
# Every command is printed before it runs ("+ COMMAND") and added to WORK_DIR/commands.sh, a script of the
# run's commands in order; the prepare stage begins it anew, later stages add to it.
#
# Variables every recipe shares (environment; default in brackets):
#   PRETRAINED     fairseq checkpoint of the pre-trained model, e.g. from the checkpoint importer
#                  (required for a real run; empty trains from scratch, for smoke tests only) []
#   DICT           the fairseq dict.txt that goes with PRETRAINED [$(dirname PRETRAINED)/dict.txt]
#   TOKENIZER      wordpiece (BERT/UniLM vocab.txt), spm (sentencepiece model) or none [wordpiece]
#   VOCAB          vocab.txt or spm.model [$(dirname PRETRAINED)/vocab.txt or .../spm.model; for wordpiece,
#                  its dict.txt when there is no vocab.txt: scripts/convert_hf_checkpoint.py writes the
#                  vocabulary one token a line there]
#   LOWERCASE      1 lowercases (uncased models: unilm2-base/large-uncased, unilm1.2, MiniLM), 0 keeps case
#                  and accents (cased models), auto lets a WordPiece vocabulary decide [1]
#   ARCH           model architecture of PRETRAINED [the flags in model_args.txt beside PRETRAINED, which the
#                  checkpoint importer writes; unilmv2_base without it]
#   GPUS           GPUs fairseq-train uses [all visible]; with BATCH_PER_GPU and the recipe's TOTAL_BATCH
#                  it sets --update-freq = TOTAL_BATCH / (GPUS * BATCH_PER_GPU), which must divide evenly
#   FP16           1: train and decode with --fp16 (needs CUDA) [1 when CUDA is available, else 0]
#   EVAL_ROUGE     1: validation also decodes the valid set with the recipe's test decoding settings and
#                  logs its ROUGE-1/2/L (--eval-rouge); checkpoint_best.pt is the one with the highest
#                  validation ROUGE-L (--best-checkpoint-metric rouge_l); CKPT still decodes the last one
#                  unless it is set; 0: validation loss only [1]
#   SEED           random seed [1]
#   WORKERS        fairseq-preprocess workers [8]
#   CKPT           checkpoint to decode: last, best (fairseq's checkpoint_last.pt, checkpoint_best.pt in
#                  WORK_DIR/checkpoints) or a path [last: the end of the schedule]
#   QUIET_LOGS     a folder: each step's whole output goes to QUIET_LOGS/STEP.log, and the console shows the
#                  commands, fairseq's training and validation lines and a line every 30 s [] (the output
#                  on the console)
#   SCORING        fairseq-generate --scoring [rouge]
#   EXTRA_PREP     extra flags for prepare_seq2seq_data.py, word-split (e.g. "--url-lists /data/url_lists") []
#   STAGES         steps to run [prepare,preprocess,train,generate,score]
#   PYTHON         python that has unilm_fairseq installed [python]
#
# Settings: each recipe's values live in its fairseq-hydra-train config, examples/s2s_ft/config/NAME.yaml,
# one line each with the paper and section it comes from (docs/recipes.md tables them; `bash NAME.sh -h`
# lists them). scripts/recipe_config.py reads them; an environment variable of the same name (MAX_SRC, LR,
# EPOCHS, BEAM, ...) overrides any of them. STEPS (updates) and WARMUP (warm-up updates), when set, replace
# the updates counted from EPOCHS and WARMUP_PERCENT. A recipe sets its task's data-preparation flags in
# s2s_ft_prep_flags (TASK_PREP) and, if any, its scoring flags (TASK_SCORE).
#
# Sources are truncated to MAX_SRC - 2 tokens when prepared (room for [SOS] and [EOS]); targets are left
# whole so that the test references stay complete: the unilm_seq2seq task truncates training targets to
# --max-target-positions itself.
S2S_FT_REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
# shellcheck source=examples/common/seq2seq_stages.sh
. "$S2S_FT_REPO/examples/common/seq2seq_stages.sh"
answer_help "$@"  # -h: the recipe's header and its config's settings, before any work

s2s_ft_main() {
  local name=$1
  shift
  if [ $# -lt 2 ]; then
    echo "usage: bash $0 RAW_DIR WORK_DIR [extra fairseq-train flags]" >&2
    exit 2
  fi
  local raw=$1 work=$2
  shift 2
  : "${STAGES:=prepare,preprocess,train,generate,score}" "${PRETRAINED:=}"
  need_stages prepare preprocess train generate score
  read_recipe_config "$S2S_FT_REPO/examples/s2s_ft/config/$name.yaml"
  local model_dir
  model_dir=$(dirname "${PRETRAINED:-.}")
  : "${DICT:=$model_dir/dict.txt}" "${TOKENIZER:=wordpiece}" "${LOWERCASE:=1}"
  if [ -z "${FP16:-}" ]; then count_cuda_devices; FP16=$(( CUDA_DEVICE_COUNT > 0 )); fi
  : "${SEED:=1}" "${WORKERS:=8}" "${SCORING:=rouge}" "${EXTRA_PREP:=}" "${EVAL_ROUGE:=1}"
  need_choice EVAL_ROUGE 0 1
  need_choice TOKENIZER wordpiece spm none
  read -r -a ARCH_FLAGS <<< "$(model_arch_flags "${PRETRAINED:+$model_dir}")"
  default_vocab "$model_dir"
  local FORMAT=$name TASK_PREP=() TASK_SCORE=()
  s2s_ft_prep_flags
  local text=$work/text bin=$work/bin save=$work/checkpoints gen=$work/gen.out
  # the model folder records how the training text was cased, for the hub's input (auto: the vocabulary's)
  case $LOWERCASE in 1) FOLDER_CASING=--lowercase ;; 0) FOLDER_CASING=--cased ;; *) FOLDER_CASING= ;; esac
  mkdir -p "$work"
  if stage_on prepare; then record_start "$work/commands.sh"; else record_start -a "$work/commands.sh"; fi

  if stage_on prepare; then
    if [ ! -d "$raw" ]; then
      echo "RAW_DIR $raw: no such directory (it holds the $FORMAT release files)" >&2
      exit 1
    fi
    need_vocab
    local prep=(--format "$FORMAT" --input "$raw" --output "$text" --max-source-tokens $((MAX_SRC - 2)))
    case $TOKENIZER in
      wordpiece) prep+=(--wordpiece-vocab "$VOCAB") ;;
      spm) prep+=(--spm-model "$VOCAB") ;;
    esac
    case $LOWERCASE in
      1) prep+=(--lowercase) ;;
      0) prep+=(--cased) ;;
      auto) ;;
      *) echo "LOWERCASE must be 1, 0 or auto, not '$LOWERCASE'" >&2; exit 2 ;;
    esac
    # shellcheck disable=SC2086  # EXTRA_PREP is split into words on purpose
    run_step prepare "$PYTHON" "$S2S_FT_REPO/scripts/prepare_seq2seq_data.py" "${prep[@]}" \
      ${TASK_PREP[@]+"${TASK_PREP[@]}"} $EXTRA_PREP
  fi

  if stage_on preprocess; then preprocess_stage unilm_seq2seq "$text" "$bin"; fi

  if stage_on train; then
    local train_flags=(--criterion unilm_seq2seq --label-smoothing "$LABEL_SMOOTHING" --finetune-method "$METHOD")
    # s2s-ft's mask probability: predicted targets (masked) or replaced real target inputs (pseudo-masked)
    if [ "$METHOD" = masked ]; then train_flags+=(--target-mask-prob "$TARGET_MASK_PROB"); fi
    if [ "$METHOD" = pseudo_masked ]; then train_flags+=(--target-word-drop-prob "$TARGET_MASK_PROB"); fi
    if [ -n "$PRETRAINED" ]; then train_flags+=(--pretrained-checkpoint "$PRETRAINED"); fi
    paper_train_stage "$text" "$bin" "$save" unilm_seq2seq "${train_flags[@]}" "$@"
  fi

  if stage_on generate; then
    local scoring=(--scoring "$SCORING")
    if [ "$SCORING" = rouge ]; then generate_rouge_flags; scoring=("${GENERATE_ROUGE_FLAGS[@]}"); fi
    generate_stage "$bin" "$save" unilm_seq2seq "$(decoded_checkpoint "$save" last)" "$gen" \
      --required-batch-size-multiple 1 "${scoring[@]}"
  fi

  if stage_on score; then score_stage "$work" "$save" ${TASK_SCORE[@]+"${TASK_SCORE[@]}"}; fi
  keep_commands "$work" "$save"
}

# a recipe's data-preparation flags for its task (TASK_PREP) and scoring flags (TASK_SCORE); none by default
s2s_ft_prep_flags() { :; }
