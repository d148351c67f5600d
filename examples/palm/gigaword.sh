#!/usr/bin/env bash
# Gigaword headline generation: fine-tune a pre-trained PALM, decode, score.
#
#   PRETRAINED=palm-base/stage2/checkpoint_best.pt bash examples/palm/gigaword.sh RAW_DIR WORK_DIR [train flags]
#
# RAW_DIR: the harvardnlp/sent-summary release ({train,valid,test}.src.txt/.tgt.txt or *.article.txt/
# *.title.txt); its "UNK" becomes the vocabulary's unknown token (UNK_TOKEN). Shared variables are
# documented in pipeline.sh.
#
# PALM (Bi et al. 2020) §3.4 fine-tunes on summarization with "the same optimization hyperparameters"
# as on MS MARCO (§3.3), which in turn keeps the pre-training settings (§3.1) it does not restate. Where
# PALM names no value the setting is this project's choice.
#
# Settings: examples/palm/config/gigaword.yaml (the fairseq-hydra-train config) holds every value, each with
# its paper and section; docs/recipes.md tables them and `bash gigaword.sh -h` lists them. An environment
# variable of a setting's name overrides it (LR=5e-5, EPOCHS=5, STEPS=N for updates instead of epochs).
set -euo pipefail
# shellcheck source=pipeline.sh
source "$(dirname "${BASH_SOURCE[0]}")/pipeline.sh"  # answers -h

palm_prepare() {
  run_shown "$PYTHON" "$PALM_REPO/scripts/prepare_seq2seq_data.py" --format gigaword \
    --input "$1" --output "$2" \
    --unk-token "$(unk_token_for "$UNK_TOKEN")" --max-source-tokens $((MAX_SRC - 1)) "${PALM_TOKENIZE[@]}" ${EXTRA_PREP:-}
}

palm_main gigaword "$@"
