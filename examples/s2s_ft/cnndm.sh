#!/usr/bin/env bash
# CNN/DailyMail abstractive summarization: s2s-ft fine-tuning of a pre-trained UniLMv2 model, decoding,
# scoring.
#
#   PRETRAINED=unilm2-base/model.pt bash examples/s2s_ft/cnndm.sh RAW_DIR WORK_DIR [fairseq-train flags]
#
# RAW_DIR: the public "stories" release (cnn/stories/*.story, dailymail/stories/*.story) with the url lists
# all_train.txt, all_val.txt, all_test.txt (in RAW_DIR or RAW_DIR/url_lists; elsewhere:
# EXTRA_PREP="--url-lists DIR"), or {train,val,test}.source/.target line files. Shared variables (PRETRAINED,
# DICT, TOKENIZER, VOCAB, LOWERCASE, GPUS, FP16, STAGES, ADAM_EPS, LENPEN_STYLE ...) are documented in
# pipeline.sh; every setting's value is in config/cnndm.yaml.
#
# The settings follow UniLMv2 (Bao et al. 2020) Table 10, its CNN/DailyMail fine-tuning of UniLMv2-base.
# Where Table 10 names no value they come from s2s-ft (Bao et al. 2021) Tables 7-8; where s2s-ft's value
# differs from the one used, it is given as [s2s-ft: ...].
# Settings: examples/s2s_ft/config/cnndm.yaml (the fairseq-hydra-train config) holds every value, each
# with its paper and table; docs/recipes.md tables them and `bash cnndm.sh -h` lists them. An environment
# variable of a setting's name overrides it (LR=5e-5, EPOCHS=10, STEPS=N for updates instead of epochs).
set -euo pipefail
# shellcheck source=pipeline.sh
source "$(dirname "${BASH_SOURCE[0]}")/pipeline.sh"  # answers -h
s2s_ft_prep_flags() {
  TASK_PREP=(--sentence-separator "$SENT_SEP")
  if [ "$SENT_SEP" != none ]; then TASK_SCORE=(--sentence-separator "$SENT_SEP"); fi  # for ROUGE-Lsum
}
s2s_ft_main cnndm "$@"
