#!/usr/bin/env bash
# SQuAD question generation (answer-aware): s2s-ft fine-tuning of a pre-trained UniLMv2 model, decoding,
# scoring.
#
#   PRETRAINED=unilmv2-base/model.pt bash examples/s2s_ft/squad_qg.sh RAW_DIR WORK_DIR [fairseq-train flags]
#
# RAW_DIR: SQuAD v1.1 JSON files for the Du et al. (2017) split, {train,dev,test}.json (the raw files of that
# split are in SQuAD format), or its preprocessed {train,dev,test}.pa.txt/.q.txt line files (used as is).
# The official train-v1.1.json/dev-v1.1.json alone give no test split. Source: "passage [SEP] answer"
# (QG_ORDER); target: the question. Shared variables (PRETRAINED, DICT, TOKENIZER, VOCAB, LOWERCASE, GPUS,
# FP16, STAGES, ADAM_EPS, LENPEN_STYLE ...) are documented in pipeline.sh; docs/recipes.md lists every value
# beside the papers'.
#
# The settings follow UniLMv2 (Bao et al. 2020) Table 10, its question generation fine-tuning of
# UniLMv2-base. Where Table 10 names no value they come from s2s-ft (Bao et al. 2021) Tables 7-8; where
# s2s-ft's value differs from the one used, it is given as [s2s-ft: ...].
# Settings: examples/s2s_ft/config/squad_qg.yaml (the fairseq-hydra-train config) holds every value, each
# with its paper and table; docs/recipes.md tables them and `bash squad_qg.sh -h` lists them. An environment
# variable of a setting's name overrides it (LR=5e-5, EPOCHS=10, STEPS=N for updates instead of epochs).
set -euo pipefail
# shellcheck source=pipeline.sh
source "$(dirname "${BASH_SOURCE[0]}")/pipeline.sh"  # answers -h
s2s_ft_prep_flags() {
  TASK_PREP=(--qg-separator "$QG_SEP" --qg-order "$QG_ORDER" --qg-window "$QG_WINDOW")
}
s2s_ft_main squad_qg "$@"
