#!/usr/bin/env bash
# XSum extreme summarization: s2s-ft fine-tuning of a pre-trained UniLMv2 model, decoding, scoring.
#
#   PRETRAINED=unilm2-base/model.pt bash examples/s2s_ft/xsum.sh RAW_DIR WORK_DIR [fairseq-train flags]
#
# RAW_DIR: the XSum release, {bbcid}.summary files (in RAW_DIR or RAW_DIR/bbc-summary-data) and
# XSum-TRAINING-DEV-TEST-SPLIT-90-5-5.json (elsewhere: EXTRA_PREP="--split-json FILE"), or
# {train,validation,test}.source/.target line files. Source: RESTBODY; target: FIRST-SENTENCE. Shared
# variables (PRETRAINED, DICT, TOKENIZER, VOCAB, LOWERCASE, GPUS, FP16, STAGES, ADAM_EPS, LENPEN_STYLE ...)
# are documented in pipeline.sh; every setting's value is in config/xsum.yaml.
#
# The settings follow UniLMv2 (Bao et al. 2020) Table 10, its XSum fine-tuning of UniLMv2-base. Where
# Table 10 names no value they come from s2s-ft (Bao et al. 2021) Tables 7-8; where s2s-ft's value differs
# from the one used, it is given as [s2s-ft: ...].
# Settings: examples/s2s_ft/config/xsum.yaml (the fairseq-hydra-train config) holds every value, each
# with its paper and table; docs/recipes.md tables them and `bash xsum.sh -h` lists them. An environment
# variable of a setting's name overrides it (LR=5e-5, EPOCHS=10, STEPS=N for updates instead of epochs).
set -euo pipefail
# shellcheck source=pipeline.sh
source "$(dirname "${BASH_SOURCE[0]}")/pipeline.sh"  # answers -h
s2s_ft_main xsum "$@"
