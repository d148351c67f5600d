#!/usr/bin/env bash
# SQuAD v1.1: MODEL=converted/unilmv2-base bash examples/squad/squad_v1.sh SQUAD_DIR WORK_DIR [fairseq-train flags]
VERSION=1.1 exec bash "$(dirname "${BASH_SOURCE[0]}")/finetune.sh" "$@"
