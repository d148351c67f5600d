#!/usr/bin/env bash
# Check this checkout on a machine with one CUDA GPU, from a fresh clone (an estimated 8 minutes on one
# H100 after set-up; DEADLINE_S bounds the whole run):
#   1. set-up: ./.venv with a CUDA torch, fairseq and the plugin (scripts/setup_env.sh);
#   2. the tests that need a GPU (those skipped without CUDA, CUDA graph decoding's among them), the
#      n-gram blocker's, half-precision decoding's and --amp-bf16's tests on the GPU;
#   3. float32, --fp16 and --amp-bf16 fairseq-train updates of pmlm, unilm_seq2seq and palm on tiny
#      generated data: losses finite, the first update's loss within a stated tolerance of float32's;
#      fairseq 0.12's --bf16 (its TPU mode) must stop with the plugin's error naming --amp-bf16;
#   4. benchmarks with --device cuda: training words/s and memory against RoBERTa at base size (12 layers,
#      768 wide, 512 tokens, batch 32) in float32 and with --fp16 (model FLOP utilization, the PMLM / AE
#      update ratio, and a profile: kernels, copies and host syncs per update), batch building against
#      the GPU step, n-gram blocking per step, and beam-5 decoding of 400-token sources at batch 64 and
#      128 in float32, float16 and bfloat16 beside fairseq's transformer, with eager steps and with steps
#      replayed from a CUDA graph (samples/s, ms per token, recompute / cached; float16 at batch 64 also
#      profiled: kernels, copies and syncs per step).
# Every step's log goes to $RESULTS (default gpu_check_results/); results.txt holds the summary
# table, which is printed at the end. A failed step is recorded, the end of its log printed, and the next
# one runs. ARCHIVE=FILE.tar.gz also packs $RESULTS into that one file at the end (on a machine that
# returns few files); the generated training data and binaries go to a temporary folder, removed. Parts
# 2-4 run in the order PARTS names them, by default "bench train tests" (4, 3, 2: the figures first). DEADLINE_S
# (default 540, 0: none) bounds the whole run, set-up included: a step gets at most the time left, and a
# step due with under 10 s left is recorded as SKIP, so the summary prints inside a machine's 10-minute
# limit per command.
#
#   bash scripts/gpu_check.sh                      # a CUDA torch already importable by python3 is reused
#   TORCH_SPEC="torch==2.11.0 --index-url https://download.pytorch.org/whl/cu130" bash scripts/gpu_check.sh
#   SKIP_SETUP=1 bash scripts/gpu_check.sh         # use the active environment as it is
#   PARTS="bench" DEADLINE_S=0 bash scripts/gpu_check.sh    # the benchmarks alone, no time limit
case "${1:-}" in -h | --help) awk 'NR > 1 && !/^#/ {exit} NR > 1 {sub(/^# ?/, ""); print}' "$0"; exit 0 ;; esac  # usage, before any work
set -uo pipefail
STARTED=$(date +%s)
DEADLINE_S=${DEADLINE_S:-540}
PARTS=${PARTS:-bench train tests}
# a relative RESULTS or ARCHIVE is the caller's, not the repository's
case ${RESULTS:-} in "" | /*) ;; *) RESULTS=$PWD/$RESULTS ;; esac
case ${ARCHIVE:-} in "" | /*) ;; *) ARCHIVE=$PWD/$ARCHIVE ;; esac
cd "$(dirname "$0")/.."
REPO=$PWD
RESULTS=${RESULTS:-$REPO/gpu_check_results}
VENV=${VENV:-.venv}
PYTHON=${PYTHON:-python3}
mkdir -p "$RESULTS"
SUMMARY=$RESULTS/results.txt
rm -f "$RESULTS"/*.log "$RESULTS/tables.txt"  # nothing left from an earlier run
: > "$SUMMARY"
WORK=$(mktemp -d "${TMPDIR:-/tmp}/gpu_check_work.XXXXXX")
finish() {  # at any exit: the work folder goes, the results are packed when ARCHIVE asks for it
  rm -rf "$WORK"
  if [ -n "${ARCHIVE:-}" ]; then tar -czf "$ARCHIVE" -C "$(dirname "$RESULTS")" "$(basename "$RESULTS")"; fi
}
trap finish EXIT
trap 'exit 143' TERM INT  # killed by an outer timeout: still pack what is there

say() { printf '[gpu_check] %s\n' "$*"; }
show_failure() {  # NAME: the end of $RESULTS/NAME.log on the console, which comes back when no file does
  tail -n 25 "$RESULTS/$1.log" | sed "s/^/[gpu_check]   $1: /"
}
record() {  # step, status, seconds, note
  printf '%-34s %-6s %6s  %s\n' "$1" "$2" "$3" "$4" >> "$SUMMARY"
  say "$1: $2 ($3 s) $4"
}
# step_due NAME LIMIT_S: sets STEP_LIMIT to LIMIT_S, or to the seconds left before DEADLINE_S when fewer;
# with under 10 s left (no step does anything useful in less: python and torch take longer to start) it
# records NAME as SKIP and fails instead
step_due() {
  STEP_LIMIT=$2
  [ "$DEADLINE_S" -le 0 ] && return 0
  local left=$(( STARTED + DEADLINE_S - $(date +%s) ))
  if [ "$left" -lt 10 ]; then
    record "$1" SKIP 0 "under 10 s left of DEADLINE_S=$DEADLINE_S when it was due"
    return 1
  fi
  if [ "$left" -lt "$STEP_LIMIT" ]; then STEP_LIMIT=$left; fi
}
# run_step NAME TIMEOUT_S COMMAND...: runs it with its log in $RESULTS/NAME.log and records PASS/FAIL
# (SKIP when DEADLINE_S has passed)
run_step() {
  local name=$1 start status
  step_due "$name" "$2" || return 1
  shift 2
  start=$(date +%s)
  say "running $name: $*"
  if timeout "$STEP_LIMIT" "$@" > "$RESULTS/$name.log" 2>&1; then status=PASS; else status=FAIL; fi
  record "$name" "$status" "$(( $(date +%s) - start ))" "log: $name.log"
  [ "$status" = FAIL ] && show_failure "$name"
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

# ---------------------------------------------------------------- what part 3 runs on
make_train_data() {  # tiny random documents ($WORK/mono.txt) and source/target pairs ($WORK/{train,valid}.*)
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
}
COMMON=(--user-dir unilm_fairseq --optimizer adam --lr 1e-4 --max-update 3 --log-format simple
        --log-interval 1 --num-workers 0 --seed 1 --dropout 0 --attention-dropout 0 --disable-validation
        --no-save --fp16-init-scale 4 --batch-size 16)
PMLM=("$WORK/mono-bin" --task pmlm --arch unilmv2_tiny --criterion ae_par --tokens-per-sample 64)
SEQ2SEQ=("$WORK/pair-bin" --task unilm_seq2seq --arch unilmv2_tiny --criterion unilm_seq2seq
         --max-source-positions 32 --max-target-positions 16 --max-positions 64)
PALM=("$WORK/pair-bin" --task palm_seq2seq --arch palm_tiny --criterion label_smoothed_cross_entropy
      --max-source-positions 32 --max-target-positions 16)
FP16_TOL=0.02  # |first loss fp16 - float32| / float32 at most (base-2 losses; float16 keeps 11 bits)
BF16_TOL=0.03  # the same for --amp-bf16 (bfloat16 keeps 8 bits; issue 25 asks for 3%)

train_args() {  # SYSTEM PRECISION: fairseq-train's arguments for one run of part 3, one per line
  case $1 in
    pmlm) printf '%s\n' "${PMLM[@]}" ;;
    seq2seq) printf '%s\n' "${SEQ2SEQ[@]}" ;;
    palm) printf '%s\n' "${PALM[@]}" ;;
  esac
  printf '%s\n' "${COMMON[@]}"
  precision_flag "$2"
}
precision_flag() {  # PRECISION: fairseq-train's flag for it (none for fp32)
  case $1 in
    fp16) echo --fp16 ;;
    amp_bf16) echo --amp-bf16 ;;
  esac
}
train_run() {  # SYSTEM PRECISION: that run, its log in $RESULTS/train_SYSTEM_PRECISION.log
  local args
  mapfile -t args < <(train_args "$1" "$2")
  timeout "$STEP_LIMIT" fairseq-train "${args[@]}" > "$RESULTS/train_$1_$2.log" 2>&1
}
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

# ---------------------------------------------------------------- 2. tests that need a GPU
part_tests() {  # the tests that need a GPU
  if ! python -c "import pytest" 2>/dev/null; then  # a bare GPU machine may lack it: say so, once
    record tests FAIL 0 "pytest is not importable: install its wheel (and iniconfig, pluggy) first"
    return
  fi
  # (skipped without torch.cuda.is_available() or fairseq's CUDA n-gram kernel; selected by name)
  # (the files that hold them: collecting the whole suite would import every test module first)
  run_step cuda_tests 300 python -m pytest -q -rs tests/model/test_static_decoding.py \
    tests/model/test_seq2seq_decoding.py tests/model/test_decoding_conventions.py tests/cli/test_hub_interface.py -k \
    "test_generate_on_gpu or test_cached_decoding_equals_recompute_on_cuda or test_cuda_kernel_honours_exemptions or test_cuda_graph_steps_decode_as_eager_steps"
  grep -E "passed|failed|skipped" "$RESULTS/cuda_tests.log" 2>/dev/null | tail -1 | sed 's/^/[gpu_check]   /'
  # the vectorized n-gram blocker (its tensors on the GPU when the tests put them there), half-precision
  # decoding, and --amp-bf16 through fairseq-train on cuda
  run_step gpu_precision_tests 300 python -m pytest -q -rs tests/unit/test_ngram_block_vectorized.py \
    tests/model/test_half_precision.py tests/cli/test_cli_bf16.py
  grep -E "passed|failed|skipped" "$RESULTS/gpu_precision_tests.log" 2>/dev/null | tail -1 | sed 's/^/[gpu_check]   /'
}

# ---------------------------------------------------------------- 4. benchmarks on the GPU
part_bench() {  # the benchmarks at issue 25's sizes; their tables are collected at the end
  local dtype batch profile
  # decoding first: samples/s per dtype and batch beside fairseq's transformer, eager steps and steps
  # replayed from a CUDA graph (--decoding-step cuda_graph) side by side
  for dtype in float32 float16 bfloat16; do
    for batch in 64 128; do
      profile=()  # one decoding run is profiled: float16, the dtype GPU users decode in, at batch 64
      [ "$dtype/$batch" = float16/64 ] && profile=(--profile)
      run_step "decoding_${dtype}_b${batch}" 240 python benchmarks/bench_decoding.py --arch unilmv2_base --src-len 400 --tgt-len 48 --beam 5 --batch-size "$batch" --dtype "$dtype" --repeats 2 --recompute-steps-limit 1 --decoding-step cuda_graph --device cuda "${profile[@]}"
      tables+=("decoding_${dtype}_b${batch}")
    done
  done
  # the bias table's gradient, before the longer steps: it decides the GPU's code path
  run_step bench_bias_grad 120 python benchmarks/bench_bias_grad.py --device cuda --dtype float16
  # training: --fp16 with FLOP utilization, the PMLM / AE ratio and the profile; then float32 against RoBERTa
  run_step bench_throughput_fp16 300 python benchmarks/bench_throughput.py --layers 12 --dim 768 --ffn 3072 --heads 12 --tokens 512 --batch-size 32 --rounds 2 --updates 5 --data-rounds 1 --systems ae,pmlm --fp16 --profile --device cuda
  run_step bench_throughput 300 python benchmarks/bench_throughput.py --layers 12 --dim 768 --ffn 3072 --heads 12 --tokens 512 --batch-size 32 --rounds 3 --updates 5 --data-rounds 2 --device cuda
  run_step bench_batch_build 180 python benchmarks/bench_throughput.py --data-only --layers 12 --dim 768 --ffn 3072 --heads 12 --tokens 512 --batch-size 32 --data-rounds 5 --device cuda
  run_step bench_ngram_float32 120 python benchmarks/bench_ngram_block.py --device cuda
  run_step bench_ngram_float16 120 python benchmarks/bench_ngram_block.py --device cuda --dtype float16
  tables+=(bench_bias_grad bench_throughput_fp16 bench_throughput bench_batch_build bench_ngram_float32
           bench_ngram_float16)
}

# ---------------------------------------------------------------- 3. half precision through fairseq-train
part_train() {  # half precision through fairseq-train
  make_train_data
  fairseq-preprocess --only-source --trainpref "$WORK/mono.txt" --validpref "$WORK/mono.txt" \
    --destdir "$WORK/mono-bin" --workers 1 > "$RESULTS/preprocess.log" 2>&1
  fairseq-preprocess --source-lang src --target-lang tgt --joined-dictionary --trainpref "$WORK/train" \
    --validpref "$WORK/valid" --destdir "$WORK/pair-bin" --workers 1 >> "$RESULTS/preprocess.log" 2>&1
  # the nine runs go side by side (tiny models: the GPU has room, and each run's time is mostly start-up);
  # each gets its own log and PASS/FAIL, then the half-precision losses are compared with float32's
  step_due train_runs 240 || return 0
  local start pids=() entry status
  start=$(date +%s)
  for system in pmlm seq2seq palm; do
    for precision in fp32 fp16 amp_bf16; do
      say "running train_${system}_${precision}: fairseq-train $(train_args "$system" "$precision" | tr '\n' ' ')"
      train_run "$system" "$precision" &
      pids+=("$!:train_${system}_${precision}")
    done
  done
  for entry in "${pids[@]}"; do
    if wait "${entry%%:*}"; then status=PASS; else status=FAIL; fi
    record "${entry#*:}" "$status" "$(( $(date +%s) - start ))" "log: ${entry#*:}.log"
    [ "$status" = FAIL ] && show_failure "${entry#*:}"
  done
  for system in pmlm seq2seq palm; do
    ref=$(first_loss "$RESULTS/train_${system}_fp32.log")
    for precision in fp16 amp_bf16; do
      tolerance=$FP16_TOL
      [ "$precision" = amp_bf16 ] && tolerance=$BF16_TOL
      note=$(compare "$system $(precision_flag "$precision")" "$ref" "$(first_loss "$RESULTS/train_${system}_${precision}.log")" "$tolerance")
      status=$?
      record "loss_${system}_${precision}" "$([ $status = 0 ] && echo PASS || echo FAIL)" 0 "$note"
    done
  done

  # fairseq 0.12's --bf16 means TPU (options.py sets --tpu): the plugin's tasks stop it with an error that
  # names --amp-bf16, before fairseq's trainer asks torch_xla for a device
  step_due bf16_names_amp_bf16 180 || return 0
  start=$(date +%s)
  if timeout "$STEP_LIMIT" fairseq-train "${PMLM[@]}" "${COMMON[@]}" --bf16 > "$RESULTS/train_pmlm_bf16.log" 2>&1; then
    record bf16_names_amp_bf16 FAIL "$(( $(date +%s) - start ))" "--bf16 trained: expected the plugin's error"
  elif grep -q -- "use --amp-bf16" "$RESULTS/train_pmlm_bf16.log" && ! grep -q "xla_device" "$RESULTS/train_pmlm_bf16.log"; then
    record bf16_names_amp_bf16 PASS "$(( $(date +%s) - start ))" "--bf16 stops with the error naming --amp-bf16"
  else
    record bf16_names_amp_bf16 FAIL "$(( $(date +%s) - start ))" "log: train_pmlm_bf16.log"
  fi
}

# ---------------------------------------------------------------- the parts, in the order PARTS names them
tables=()
for name in $PARTS; do
  case $name in
    tests | bench | train) "part_$name" ;;
    *) record "part_$name" FAIL 0 "PARTS names no such part (tests, bench, train)" ;;
  esac
done

# each log's tables (a block from its header to the next empty line; the per-op profiles stay in the logs),
# and a line per decoding run: both systems' samples/s, the per-token ratio, recompute / cached
: > "$RESULTS/tables.txt"
for name in ${tables[@]+"${tables[@]}"}; do
  log=$RESULTS/$name.log
  [ -f "$log" ] || continue
  {
    echo
    echo "== $name =="
    awk '/^(variant|system|ratio|step|loading|one update|per step|ms per step|shape   :|method)/ {on = 1} on && !/^USDT/ {print} /^$/ {on = 0}' "$log"
  } >> "$RESULTS/tables.txt"
  if [[ $name == decoding_* ]]; then record "$name" NOTE 0 "$(sed -n 's/^summary : //p' "$log" | head -1)"; fi
done
record decoding_target NOTE 0 \
  "issue 25: unilmv2_base in float16 at batch 64 at least 200 samples/s (3x the float32 figure of 66.9), eager or cuda_graph"

echo
echo "gpu_check on $DEVICE_LINE ($(date -u +%Y-%m-%dT%H:%MZ), commit $(git rev-parse --short HEAD 2>/dev/null))"
printf '%-34s %-6s %6s  %s\n' step status s note
cat "$SUMMARY"
echo
echo "benchmark tables: $RESULTS/tables.txt"
cat "$RESULTS/tables.txt" 2>/dev/null
! grep -q " FAIL " "$SUMMARY"
