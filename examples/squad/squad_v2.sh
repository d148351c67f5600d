#!/usr/bin/env bash
# SQuAD v2.0 (unanswerable questions answer ""):
#   MODEL=converted/unilmv2-base bash examples/squad/squad_v2.sh SQUAD_DIR WORK_DIR [fairseq-train flags]
# "No answer" comes from the paper's answerability classifier (UniLMv2 §4.2: "For SQuAD v2.0, we use the
# output vector of [SOS] to predict whether the instance is unanswerable or not"): finetune.sh trains it with
# --answerability-head beside the span head and predict_squad.py answers "" when its probability of no
# answer exceeds ANSWERABILITY_THRESHOLD (0.5). ANSWERABILITY_HEAD=0 uses BERT's null-span rule instead.
VERSION=2.0 exec bash "$(dirname "${BASH_SOURCE[0]}")/finetune.sh" "$@"
