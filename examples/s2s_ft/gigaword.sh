#!/usr/bin/env bash
# Gigaword headline generation: fine-tuning with UniLM v1's published settings, decoding, scoring.
#
#   PRETRAINED=unilmv2-base/model.pt bash examples/s2s_ft/gigaword.sh RAW_DIR WORK_DIR [fairseq-train flags]
#
# RAW_DIR: the harvardnlp/sent-summary release as used by UniLM: {train,valid,test}.src.txt/.tgt.txt, or
# train.article.txt/train.title.txt (valid.article.filter.txt ...). Its unknown words are spelled "UNK"; they
# are mapped to the vocabulary's unknown token (UNK_TOKEN). Digits are "#" in that release. Shared variables
# (PRETRAINED, DICT, TOKENIZER, VOCAB, LOWERCASE, GPUS, FP16, STAGES, ADAM_EPS, LENPEN_STYLE ...) are
# documented in pipeline.sh; every setting's value is in config/gigaword.yaml.
#
# Neither UniLMv2 nor s2s-ft fine-tunes on English Gigaword; the settings follow UniLM v1 (Dong et al.
# 2019) §3.1, which fine-tunes UniLM-large with masked target tokens and reuses "most hyper-parameters
# from pre-training" (§2.4: Adam (0.9, 0.999), weight decay 0.01, dropout 0.1, as the config has them).
#
# Settings: examples/s2s_ft/config/gigaword.yaml (the fairseq-hydra-train config) holds every value, each
# with its paper and table; docs/recipes.md tables them and `bash gigaword.sh -h` lists them. An environment
# variable of a setting's name overrides it (LR=5e-5, EPOCHS=10, STEPS=N for updates instead of epochs).
set -euo pipefail
# shellcheck source=pipeline.sh
source "$(dirname "${BASH_SOURCE[0]}")/pipeline.sh"  # answers -h
s2s_ft_prep_flags() {
  TASK_PREP=(--unk-token "$(unk_token_for "$UNK_TOKEN")")
}
s2s_ft_main gigaword "$@"
