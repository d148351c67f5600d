#!/usr/bin/env bash
# SQuAD v2.0 (unanswerable questions answer ""):
#   MODEL=converted/unilmv2-base bash examples/squad/squad_v2.sh SQUAD_DIR WORK_DIR [fairseq-train flags]
VERSION=2.0 exec bash "$(dirname "${BASH_SOURCE[0]}")/finetune.sh" "$@"
