#!/usr/bin/env bash
# Check this checkout on a machine with one CUDA GPU, from a fresh clone, in about 10 minutes:
#   1. set-up: ./.venv with a CUDA torch, fairseq and the plugin (scripts/setup_env.sh);
#   2. the tests that need a GPU (those skipped without CUDA);
#   3. fp32 and fp16 fairseq-train updates of pmlm, unilm_seq2seq and palm on tiny generated data: losses
#      finite, and the first update's loss within a stated tolerance of float32's; fairseq 0.12's --bf16
#      is tried once (it means TPU there), and bfloat16 is checked in-process on each task's first batch;
#   4. the PMLM, throughput and decoding benchmarks with --device cuda, and beam-5 decoding of
#      64 sources of 400 tokens (samples/s and peak memory) beside published figures.
# Every step's log goes to $RESULTS (default gpu_check_results/); results.txt holds the summary
# table, which is printed at the end. A failed step is recorded and the next one runs.
#
#   bash scripts/gpu_check.sh                      # a CUDA torch already importable by python3 is reused
#   TORCH_SPEC="torch==2.11.0 --index-url https://download.pytorch.org/whl/cu130" bash scripts/gpu_check.sh
#   SKIP_SETUP=1 bash scripts/gpu_check.sh         # use the active environment as it is
case "${1:-}" in -h | --help) awk 'NR > 1 && !/^#/ {exit} NR > 1 {sub(/^# ?/, ""); print}' "$0"; exit 0 ;; esac  # usage, before any work
set -uo pipefail
cd "$(dirname "$0")/.."
REPO=$PWD
RESULTS=${RESULTS:-$REPO/gpu_check_results}
VENV=${VENV:-.venv}
PYTHON=${PYTHON:-python3}
mkdir -p "$RESULTS"
SUMMARY=$RESULTS/results.txt
WORK=$RESULTS/work
rm -rf "$WORK" && mkdir -p "$WORK"
: > "$SUMMARY"

say() { printf '[gpu_check] %s\n' "$*"; }
record() {  # step, status, seconds, note
  printf '%-34s %-6s %6s  %s\n' "$1" "$2" "$3" "$4" >> "$SUMMARY"
  say "$1: $2 ($3 s) $4"
}
# run_step NAME TIMEOUT_S COMMAND...: runs it with its log in $RESULTS/NAME.log and records PASS/FAIL
run_step() {
  local name=$1 limit=$2 start status
  shift 2
  start=$(date +%s)
  say "running $name: $*"
  if timeout "$limit" "$@" > "$RESULTS/$name.log" 2>&1; then status=PASS; else status=FAIL; fi
  record "$name" "$status" "$(( $(date +%s) - start ))" "log: $name.log"
  [ "$status" = PASS ]
}

# ---------------------------------------------------------------- 1. set-up
start=$(date +%s)
if [ "${SKIP_SETUP:-0}" != 1 ]; then
  if [ ! -x "$VENV/bin/python" ]; then
    if [ -z "${TORCH_SPEC:-}" ] && "$PYTHON" -c "import torch, sys; sys.exit(not torch.cuda.is_available())" \
        2>/dev/null; then
      say "reusing the CUDA torch of $PYTHON (a venv that sees its site-packages)"
      "$PYTHON" -m venv --system-site-packages "$VENV"
    else
      "$PYTHON" -m venv "$VENV"
    fi
  fi
  # shellcheck disable=SC1091
  . "$VENV/bin/activate"
  if [ -n "${TORCH_SPEC:-}" ] && ! python -c "import torch, sys; sys.exit(not torch.cuda.is_available())" \
      2>/dev/null; then
    say "installing torch: $TORCH_SPEC"
    # shellcheck disable=SC2086
    python -m pip install --disable-pip-version-check $TORCH_SPEC > "$RESULTS/torch_install.log" 2>&1
  fi
  # setup_env.sh installs its CPU torch only when no torch is importable
  if ! VENV=$VENV bash scripts/setup_env.sh --test > "$RESULTS/setup.log" 2>&1; then
    record setup FAIL "$(( $(date +%s) - start ))" "log: setup.log"
    cat "$SUMMARY"
    exit 1
  fi
fi
if ! python -c "import torch, sys; sys.exit(not torch.cuda.is_available())" 2>/dev/null; then
  record setup FAIL "$(( $(date +%s) - start ))" \
    "torch $(python -c 'import torch; print(torch.__version__)' 2>/dev/null) sees no CUDA device: pass TORCH_SPEC with a CUDA wheel"
  cat "$SUMMARY"
  exit 1
fi
DEVICE_LINE=$(python -c "import torch; print(torch.cuda.get_device_name(0), '| torch', torch.__version__, \
'| CUDA', torch.version.cuda)")
record setup PASS "$(( $(date +%s) - start ))" "$DEVICE_LINE"
export PYTHONWARNINGS=ignore
export PYTHONPATH="$REPO${PYTHONPATH:+:$PYTHONPATH}"  # this checkout's plugin, installed or not

# ---------------------------------------------------------------- 2. tests that need a GPU
# (skipped without torch.cuda.is_available() or fairseq's CUDA n-gram kernel; selected by name)
run_step cuda_tests 300 python -m pytest -q -rs tests -k \
  "test_generate_on_gpu or test_cached_decoding_equals_recompute_on_cuda or test_cuda_kernel_honours_exemptions"
grep -E "passed|failed|skipped" "$RESULTS/cuda_tests.log" | tail -1 | sed 's/^/[gpu_check]   /'

# ---------------------------------------------------------------- 3. half precision through fairseq-train
python - "$WORK" <<'EOF'
import random, sys
from pathlib import Path

work = Path(sys.argv[1])
rng = random.Random(0)
words = [f"w{i}" for i in range(400)]
with open(work / "mono.txt", "w") as f:  # documents of sentences, empty lines between documents
    for _ in range(40):
        for _ in range(12):
            f.write(" ".join(rng.choices(words, k=rng.randint(6, 20))) + "\n")
        f.write("\n")
for split, n in (("train", 400), ("valid", 20)):
    with open(work / f"{split}.src", "w") as src, open(work / f"{split}.tgt", "w") as tgt:
        for _ in range(n):
            line = rng.choices(words, k=rng.randint(6, 20))
            src.write(" ".join(line) + "\n")
            tgt.write(" ".join(line[: max(2, len(line) // 2)]) + "\n")
EOF
fairseq-preprocess --only-source --trainpref "$WORK/mono.txt" --validpref "$WORK/mono.txt" \
  --destdir "$WORK/mono-bin" --workers 1 > "$RESULTS/preprocess.log" 2>&1
fairseq-preprocess --source-lang src --target-lang tgt --joined-dictionary --trainpref "$WORK/train" \
  --validpref "$WORK/valid" --destdir "$WORK/pair-bin" --workers 1 >> "$RESULTS/preprocess.log" 2>&1

COMMON=(--user-dir unilm_fairseq --optimizer adam --lr 1e-4 --max-update 3 --log-format simple
        --log-interval 1 --num-workers 0 --seed 1 --dropout 0 --attention-dropout 0 --disable-validation
        --no-save --fp16-init-scale 4 --batch-size 16)
PMLM=("$WORK/mono-bin" --task pmlm --arch unilmv2_tiny --criterion ae_par --tokens-per-sample 64)
SEQ2SEQ=("$WORK/pair-bin" --task unilm_seq2seq --arch unilmv2_tiny --criterion unilm_seq2seq
         --max-source-positions 32 --max-target-positions 16 --max-positions 64)
PALM=("$WORK/pair-bin" --task palm_seq2seq --arch palm_tiny --criterion label_smoothed_cross_entropy
      --max-source-positions 32 --max-target-positions 16)
FP16_TOL=0.02  # |first loss fp16 - float32| / float32 at most (base-2 losses; float16 keeps 11 bits)
BF16_TOL=0.03  # the same for bfloat16 (8 bits)

first_loss() {  # the loss of the first update logged in a fairseq-train log, or nothing
  grep -E "\| train_inner \|.*num_updates=1[^0-9]" "$1" 2>/dev/null | head -1 | sed -E 's/.*[| ,]loss=([-0-9.e+a-z]+).*/\1/'
}
compare() {  # name, reference loss, loss, tolerance
  python - "$@" <<'EOF'
import math, sys
name, ref, got, tol = sys.argv[1], sys.argv[2], sys.argv[3], float(sys.argv[4])
try:
    ref, got = float(ref), float(got)
except ValueError:
    print(f"{name}: no first-update loss to compare (fp32 {ref!r}, half {got!r})"); sys.exit(1)
rel = abs(got - ref) / abs(ref)
ok = math.isfinite(got) and rel <= tol
print(f"{name}: first loss {got:.4f} vs float32 {ref:.4f}: relative difference {rel:.4f} "
      f"(tolerance {tol}) {'PASS' if ok else 'FAIL'}")
sys.exit(0 if ok else 1)
EOF
}

for system in pmlm seq2seq palm; do
  case $system in
    pmlm) args=("${PMLM[@]}") ;;
    seq2seq) args=("${SEQ2SEQ[@]}") ;;
    palm) args=("${PALM[@]}") ;;
  esac
  run_step "train_${system}_fp32" 180 fairseq-train "${args[@]}" "${COMMON[@]}"
  ref=$(first_loss "$RESULTS/train_${system}_fp32.log")
  run_step "train_${system}_fp16" 180 fairseq-train "${args[@]}" "${COMMON[@]}" --fp16
  note=$(compare "$system fp16" "$ref" "$(first_loss "$RESULTS/train_${system}_fp16.log")" "$FP16_TOL")
  status=$?
  record "loss_${system}_fp16" "$([ $status = 0 ] && echo PASS || echo FAIL)" 0 "$note"
done

# fairseq 0.12 turns --bf16 into --tpu (options.py) and then asks torch_xla for its device; tried once
start=$(date +%s)
if timeout 180 fairseq-train "${PMLM[@]}" "${COMMON[@]}" --bf16 > "$RESULTS/train_pmlm_bf16.log" 2>&1; then
  note=$(compare "pmlm bf16" "$(first_loss "$RESULTS/train_pmlm_fp32.log")" \
    "$(first_loss "$RESULTS/train_pmlm_bf16.log")" "$BF16_TOL")
  record train_pmlm_bf16 "$([ $? = 0 ] && echo PASS || echo FAIL)" "$(( $(date +%s) - start ))" "$note"
elif grep -qiE "xla|tpu" "$RESULTS/train_pmlm_bf16.log"; then
  record train_pmlm_bf16 NOTE "$(( $(date +%s) - start ))" \
    "fairseq 0.12's --bf16 is TPU-only (options.py sets --tpu; the trainer asks torch_xla for a device): $(grep -m1 -oE "[A-Za-z]*Error: .{0,80}" "$RESULTS/train_pmlm_bf16.log")"
else
  record train_pmlm_bf16 FAIL "$(( $(date +%s) - start ))" "log: train_pmlm_bf16.log"
fi

# bfloat16 without fairseq's TPU path: the first training batch of each task through the model and
# criterion in float32 and in bfloat16 (weights cast), loss and gradients finite, losses compared
run_step bf16_forward 300 python - "$WORK" "$BF16_TOL" <<'EOF'
import math, sys
import torch
from fairseq import options, tasks, utils
from fairseq.dataclass.utils import convert_namespace_to_omegaconf

work, tol = sys.argv[1], float(sys.argv[2])
systems = {
    "pmlm": [f"{work}/mono-bin", "--task", "pmlm", "--arch", "unilmv2_tiny", "--criterion", "ae_par",
             "--tokens-per-sample", "64"],
    "seq2seq": [f"{work}/pair-bin", "--task", "unilm_seq2seq", "--arch", "unilmv2_tiny", "--criterion",
                "unilm_seq2seq", "--max-source-positions", "32", "--max-target-positions", "16",
                "--max-positions", "64"],
    "palm": [f"{work}/pair-bin", "--task", "palm_seq2seq", "--arch", "palm_tiny", "--criterion",
             "label_smoothed_cross_entropy", "--max-source-positions", "32", "--max-target-positions", "16"],
}
failed = False
for name, argv in systems.items():
    ns = options.parse_args_and_arch(
        options.get_training_parser(),
        argv + ["--user-dir", "unilm_fairseq", "--seed", "1", "--dropout", "0", "--attention-dropout", "0",
                "--batch-size", "16", "--optimizer", "adam", "--lr", "1e-4"])
    cfg = convert_namespace_to_omegaconf(ns)
    utils.import_user_module(cfg.common)
    torch.manual_seed(1)
    task = tasks.setup_task(cfg.task)
    task.load_dataset("train")
    model = task.build_model(cfg.model).cuda()
    criterion = task.build_criterion(cfg.criterion).cuda()
    sample = next(iter(task.get_batch_iterator(task.dataset("train"), max_sentences=16, seed=1)
                       .next_epoch_itr(shuffle=False)))
    sample = utils.move_to_cuda(sample)
    losses = {}
    for dtype in (torch.float32, torch.bfloat16):
        model.to(dtype).train()
        model.zero_grad()
        loss, size, _ = criterion(model, sample)
        loss.backward()
        grads = [p.grad for p in model.parameters() if p.grad is not None]
        finite = bool(torch.isfinite(loss).item()) and all(bool(torch.isfinite(g).all()) for g in grads)
        losses[dtype] = loss.item() / float(size)
        print(f"{name} {dtype}: loss per token {losses[dtype]:.4f}, loss and gradients finite: {finite}")
        failed |= not finite
    rel = abs(losses[torch.bfloat16] - losses[torch.float32]) / abs(losses[torch.float32])
    ok = rel <= tol
    print(f"{name}: bfloat16 / float32 first-batch loss relative difference {rel:.4f} (tolerance {tol}) "
          f"{'PASS' if ok else 'FAIL'}")
    failed |= not ok
sys.exit(1 if failed else 0)
EOF
grep -E "relative difference" "$RESULTS/bf16_forward.log" | sed 's/^/[gpu_check]   /'

# ---------------------------------------------------------------- 4. benchmarks on the GPU
run_step bench_pmlm 240 python benchmarks/bench_pmlm.py --arch unilmv2_base --batch-size 8 --repeats 5 --naive-steps-limit 4 --device cuda
run_step bench_throughput 240 python benchmarks/bench_throughput.py --rounds 5 --updates 10 --batch-size 32 --device cuda
run_step decoding_batch64 240 python benchmarks/bench_decoding.py --arch unilmv2_base --src-len 400 --tgt-len 48 --beam 5 --batch-size 64 --repeats 2 --recompute-steps-limit 2 --device cuda
for name in bench_pmlm bench_throughput decoding_batch64; do
  {
    echo
    echo "== $name =="
    sed -n '/^variant\|^system\|^ratio/,/^load avg/p' "$RESULTS/$name.log"
  } >> "$RESULTS/tables.txt"
done
samples=$(awk '/^unilm cached/ {print $(NF-1)}' "$RESULTS/decoding_batch64.log" | head -1)
peak=$(awk '/^unilm cached/ {print $NF}' "$RESULTS/decoding_batch64.log" | head -1)
record decoding_beam5_400tok_b64 NOTE 0 \
  "unilmv2_base cached: ${samples:-?} samples/s, peak ${peak:-?} MiB (random weights, 48 output tokens); published for CNN/DM at batch 64 on a V100: original UniLM decoder 1.7, fastseq 13.8 samples/s (other GPU, data and lengths: for scale only)"

echo
echo "gpu_check on $DEVICE_LINE ($(date -u +%Y-%m-%dT%H:%MZ), commit $(git rev-parse --short HEAD 2>/dev/null))"
printf '%-34s %-6s %6s  %s\n' step status s note
cat "$SUMMARY"
echo
echo "benchmark tables: $RESULTS/tables.txt"
cat "$RESULTS/tables.txt" 2>/dev/null
! grep -q " FAIL " "$SUMMARY"
