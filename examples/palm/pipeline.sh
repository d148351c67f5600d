# shellcheck shell=bash
# Steps shared by the PALM fine-tuning recipes of this folder (cnndm.sh, gigaword.sh, marco.sh), which define
# a palm_prepare function, then call palm_main NAME RAW WORK_DIR [fairseq-train flags] with their config's NAME.
# Not meant to be run on its own.
#
# Steps (STAGES picks them, comma-separated, in this order):
#   prepare     the recipe's palm_prepare: RAW -> WORK_DIR/text/{train,valid,test}.{src,tgt}
#   preprocess  fairseq-preprocess through the plugin's task (--user-dir, --task palm_seq2seq), which reads
#               the pre-trained model's dictionary (the importer's dict.txt too: one token a line)
#               -> WORK_DIR/bin
#   train       fairseq-train --task palm_seq2seq --criterion label_smoothed_cross_entropy -> checkpoints
#   generate    fairseq-generate on the test split -> WORK_DIR/gen.out; the checkpoint folder becomes a
#               model folder (scripts/write_model_folder.py): PALMHubInterface.from_pretrained(FOLDER)
#               loads it with its dictionaries, tokenizer and these decoding settings
#   score       scripts/score.py on gen.out against the whole references text/test.tgt ->
#               WORK_DIR/scores.txt and scores.json; scores.json and commands.sh (below) are copied into the
#               model folder
# Every command is printed before it runs ("+ COMMAND") and added to WORK_DIR/commands.sh, a script of the
# run's commands in order; the prepare stage begins it anew, later stages add to it.
#
# Variables every recipe shares (environment; default in brackets):
#   PRETRAINED  a palm pre-training checkpoint (--task palm_pretrain, --pretrained-checkpoint), or what the
#               checkpoint importer makes of a BERT-family model (scripts/convert_hf_checkpoint.py: model.pt,
#               with dict.txt and model_args.txt beside it), which initialises the encoder and the shared
#               embeddings (--pretrained-encoder; PALM §3.1 starts its encoder from RoBERTa) while the
#               decoder starts fresh; empty trains from scratch (smoke tests only) []
#   DICT        the dict.txt PRETRAINED was trained with [$(dirname PRETRAINED)/dict.txt]
#   TOKENIZER   spm (sentencepiece model), wordpiece (BERT vocab.txt) or none (text already tokenized)
#               [spm; wordpiece when PRETRAINED is the importer's and has no spm.model beside it]
#   VOCAB       spm.model or vocab.txt [$(dirname PRETRAINED)/spm.model or .../vocab.txt; for wordpiece,
#               its dict.txt when there is no vocab.txt: the importer writes the vocabulary there]
#   ARCH        palm_base, palm_large or palm_tiny [a palm PRETRAINED's own architecture and sizes, read
#               from the checkpoint; else palm_base]; from the importer's PRETRAINED, the encoder's sizes are
#               those in its model_args.txt, the decoder takes the encoder's width, heads and FFN and ARCH's
#               depth (--decoder-layers N among the fairseq-train flags changes it)
#   NO_COPY     1: ablate the pointer (--no-copy, the paper's Table 6 ablation) [0; a palm PRETRAINED
#               trained without the pointer fine-tunes without it either way, unless ARCH is set: then
#               NO_COPY=1]
#   ABLATION    autoencoding or autoregression: Table 6's other ablations of PRETRAINED, the encoder or the
#               decoder left at random initialisation (--pretrained-ablation, PALM §3.7) [none]
#   GPUS        GPUs fairseq-train uses [all visible]; --update-freq = TOTAL_BATCH / (GPUS * BATCH_PER_GPU)
#   FP16        1: train and decode with --fp16 (needs CUDA) [1 when CUDA is available, else 0]
#   EVAL_ROUGE  1: validation also decodes the valid set with the recipe's test decoding settings and logs
#               its ROUGE-1/2/L (--eval-rouge); checkpoint_best.pt, which is decoded, is the one with the
#               highest validation ROUGE-L (--best-checkpoint-metric rouge_l); 0: the lowest loss [1]
#   SEED        random seed [1]
#   WORKERS     fairseq-preprocess workers [8]
#   CKPT        checkpoint to decode: best, last (fairseq's checkpoint_best.pt, checkpoint_last.pt in
#               WORK_DIR/checkpoints) or a path [best]
#   QUIET_LOGS  a folder: each step's whole output goes to QUIET_LOGS/STEP.log, and the console shows the
#               commands, fairseq's training and validation lines and a line every 30 s [] (the output on
#               the console)
#   STAGES      steps to run [prepare,preprocess,train,generate,score]
#   PYTHON      python that has unilm_fairseq installed [python]
#
# Settings: each recipe's values live in its fairseq-hydra-train config, examples/palm/config/NAME.yaml, one
# line each with the paper and section it comes from (docs/recipes.md tables them; `bash NAME.sh -h` lists
# them). scripts/recipe_config.py reads them; an environment variable of the same name (MAX_SRC, LR, EPOCHS,
# BEAM, ...) overrides any of them. EPOCHS is counted into updates from the prepared training set; STEPS,
# when set, gives them instead.
PALM_REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
# shellcheck source=examples/common/seq2seq_stages.sh
. "$PALM_REPO/examples/common/seq2seq_stages.sh"
answer_help "$@"  # -h: the recipe's header and its config's settings, before any work

# PALM_TOKENIZE: the tokenizer flags of the preparation scripts (an array: VOCAB may hold spaces)
palm_tokenizer_flags() {
  case $TOKENIZER in
    spm) PALM_TOKENIZE=(--spm-model "$VOCAB") ;;
    wordpiece) PALM_TOKENIZE=(--wordpiece-vocab "$VOCAB" --lowercase) ;;
    none) PALM_TOKENIZE=() ;;
  esac
}

palm_main() {
  local name=$1
  shift
  if [ $# -lt 2 ]; then
    echo "usage: bash $0 RAW WORK_DIR [extra fairseq-train flags]" >&2
    exit 2
  fi
  local raw=$1 work=$2
  shift 2
  : "${STAGES:=prepare,preprocess,train,generate,score}" "${PRETRAINED:=}"
  need_stages prepare preprocess train generate score
  read_recipe_config "$PALM_REPO/examples/palm/config/$name.yaml"
  local model_dir
  model_dir=$(dirname "${PRETRAINED:-.}")
  # what the checkpoint importer makes: a unilmv2 encoder with its architecture flags beside it
  local imported=0
  if [ -n "$PRETRAINED" ] && [ -f "$model_dir/model_args.txt" ] \
    && [[ " $(cat "$model_dir/model_args.txt") " == *" --arch unilmv2"* ]]; then
    imported=1
  fi
  if [ -z "${TOKENIZER:-}" ] && [ "$imported" = 1 ] && [ ! -f "$model_dir/spm.model" ]; then
    TOKENIZER=wordpiece
  fi
  local arch_given=${ARCH:-}
  : "${DICT:=$model_dir/dict.txt}" "${TOKENIZER:=spm}" "${ARCH:=palm_base}" "${NO_COPY:=0}"
  : "${ABLATION:=none}"
  if [ -z "${FP16:-}" ]; then count_cuda_devices; FP16=$(( CUDA_DEVICE_COUNT > 0 )); fi
  : "${SEED:=1}" "${WORKERS:=8}" "${EVAL_ROUGE:=1}"
  need_choice EVAL_ROUGE 0 1
  need_choice TOKENIZER spm wordpiece none
  default_vocab "$model_dir"
  palm_tokenizer_flags
  local text=$work/text bin=$work/bin save=$work/checkpoints gen=$work/gen.out
  # the model folder records how the training text was cased (palm_tokenizer_flags lowercases WordPiece)
  FOLDER_CASING=
  if [ "$TOKENIZER" = wordpiece ]; then FOLDER_CASING=--lowercase; fi
  mkdir -p "$work"
  if stage_on prepare; then record_start "$work/commands.sh"; else record_start -a "$work/commands.sh"; fi

  if stage_on prepare; then
    if [ ! -e "$raw" ]; then
      echo "RAW $raw: no such file or directory (it holds the release files)" >&2
      exit 1
    fi
    need_vocab
    palm_prepare "$raw" "$text"
  fi

  if stage_on preprocess; then preprocess_stage palm_seq2seq "$text" "$bin"; fi

  ARCH_FLAGS=(--arch "$ARCH")
  if [ "$imported" = 1 ]; then  # the encoder's sizes from the importer's flags; the decoder follows them
    local words i
    read -r -a words < "$model_dir/model_args.txt"
    for (( i = 0; i + 1 < ${#words[@]}; i++ )); do
      case ${words[i]} in
        --encoder-layers | --encoder-embed-dim | --encoder-ffn-embed-dim | --encoder-attention-heads \
          | --activation-fn) ARCH_FLAGS+=("${words[i]}" "${words[i + 1]}") ;;
      esac
    done
  fi
  if stage_on train; then
    if [ "$imported" = 0 ] && [ -z "$arch_given" ] && [ -f "$PRETRAINED" ]; then
      local own
      own=$("$PYTHON" -c 'import sys; from unilm_fairseq.checkpoint.palm_init import palm_arch_flags
print(" ".join(palm_arch_flags(sys.argv[1])))' "$PRETRAINED")
      if [ -n "$own" ]; then read -r -a ARCH_FLAGS <<< "$own"; fi
    fi
    local train_flags=(--criterion label_smoothed_cross_entropy --label-smoothing "$LABEL_SMOOTHING"
      --report-accuracy --truncate-source --required-batch-size-multiple 1 --skip-invalid-size-inputs-valid-test)
    if [ "$NO_COPY" = 1 ]; then train_flags+=(--no-copy); fi
    if [ "$imported" = 1 ]; then
      train_flags+=(--pretrained-encoder "$PRETRAINED")
    elif [ -n "$PRETRAINED" ]; then
      train_flags+=(--pretrained-checkpoint "$PRETRAINED")
    fi
    if [ "$ABLATION" != none ]; then train_flags+=(--pretrained-ablation "$ABLATION"); fi
    paper_train_stage "$text" "$bin" "$save" palm_seq2seq "${train_flags[@]}" "$@"
  fi

  if stage_on generate; then
    generate_rouge_flags
    generate_stage "$bin" "$save" palm_seq2seq "$(decoded_checkpoint "$save" best)" "$gen" --truncate-source \
      --required-batch-size-multiple 1 "${GENERATE_ROUGE_FLAGS[@]}"
  fi

  if stage_on score; then score_stage "$work" "$save"; fi
  keep_commands "$work" "$save"
}
