#!/usr/bin/env bash
# GPU check of the CUDA runtime, for a machine with an NVIDIA GPU (sized for
# one H200, under 5 minutes): installs missing Debian build packages (apt-get
# only; nothing else comes from the network), configures with CUDA and the
# benchmarks on, builds the GPU targets, then runs the CUDA unit tests, the
# cuda lit tests, gpu plans over MPI ranks (mpirun), the GPU benchmark and
# the GPT against PyTorch (bench/compare-gpt-gpu.py), and prints a summary.
#   scripts/gpu-check.sh            # build in build-gpu (MPC_BUILD_DIR overrides)
# Exit status 0 when every stage passed with a GPU, 1 when a stage failed,
# 2 when everything passed but the GPU tests skipped (no GPU visible).
set -uo pipefail
cd "$(dirname "$0")/.."
build=${MPC_BUILD_DIR:-build-gpu}
jobs=${MPC_JOBS:-16}
log=$build/gpu-check
start=$(date +%s)
declare -a summary
status=0

stage() { # name, command...
  local name=$1; shift
  local t0=$(date +%s)
  echo "=== $name"
  if "$@" >"$log/$name.log" 2>&1; then
    summary+=("PASS  $name ($(( $(date +%s) - t0 ))s)")
  else
    summary+=("FAIL  $name ($(( $(date +%s) - t0 ))s): see $log/$name.log")
    status=1
    tail -40 "$log/$name.log"
  fi
}

mkdir -p "$log"
stage deps bash scripts/install-deps.sh
echo "=== GPUs"
if command -v nvidia-smi >/dev/null; then
  nvidia-smi -L
  nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader
else
  echo "nvidia-smi not found: the GPU tests will skip"
fi

stage configure cmake -S . -B "$build" -DMPC_ENABLE_CUDA=ON -DMPC_BUILD_BENCH=ON \
  -DCMAKE_BUILD_TYPE=${MPC_BUILD_TYPE:-Release}
stage build cmake --build "$build" -j "$jobs" --target mpc regression3-data unit_runtime_cuda mpc-bench-cuda

stage unit timeout 240 "$build/test/unit/runtime_cuda/unit_runtime_cuda" --gtest_color=no
stage lit timeout 180 python3 /usr/lib/llvm-14/build/utils/lit/lit.py -sv --no-progress-bar \
  --filter 'cuda/' "$build/test/lit"

# A gpu plan over 2 and 3 MPI ranks must train exactly like one process:
# the same loss lines and the same checkpoint bytes. Where the plan's GPU
# devices get GPUs of their own, channels between ranks use NCCL; with all
# of them on GPU 0 (--device-map) NCCL cannot take them (one GPU cannot be
# two ranks of a communicator) and they move through host memory over MPI,
# which the run says in a note.
mpi_gpu() {
  export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
  local t=$log/mpi mpc=$build/tools/mpc/mpc gpus
  gpus=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU')
  rm -rf "$t" && mkdir -p "$t" || return 1
  "$build/examples/regression3-data" "$t" --rows 1000 >/dev/null || return 1
  "$mpc" compile examples/regression3/model.json --map stage0=gpu:0,stage1=gpu:1,stage2=gpu:2 \
    -o "$t/plan3.bin" || return 1
  "$mpc" compile examples/regression3/model.json --map stage0=gpu:0,stage1=gpu:1,stage2=gpu:1 \
    -o "$t/plan2.bin" || return 1
  local data="--input x=$t/x.npy --input y=$t/y.npy --epochs 3 --log-every 5"
  compare() { # name, plan, ranks, expect-note (yes/no), extra flags...
    local name=$1 plan=$2 np=$3 note=$4; shift 4
    echo "--- $name: $np ranks $*"
    "$mpc" run "$plan" $data "$@" --save "$t/$name.one.safetensors" >"$t/$name.one.log" || return 1
    timeout 120 mpirun --oversubscribe -np "$np" "$mpc" run "$plan" $data "$@" \
      --save "$t/$name.np$np.safetensors" >"$t/$name.np$np.log" 2>"$t/$name.np$np.err" ||
      { cat "$t/$name.np$np.err"; return 1; }
    cat "$t/$name.np$np.err"
    diff "$t/$name.one.log" "$t/$name.np$np.log" || return 1
    cmp "$t/$name.one.safetensors" "$t/$name.np$np.safetensors" || return 1
    if [ "$note" = yes ]; then grep -q 'moves through host memory' "$t/$name.np$np.err" || return 1
    else ! grep -q 'moves through host memory' "$t/$name.np$np.err" || return 1; fi
  }
  local one=--device-map=gpu:0=0,gpu:1=0,gpu:2=0
  compare shared "$t/plan3.bin" 2 yes "$one" || return 1
  compare shared "$t/plan3.bin" 3 yes "$one" || return 1
  if [ "$gpus" -ge 2 ]; then compare nccl2 "$t/plan2.bin" 2 no || return 1
  else echo "one GPU: the NCCL path between ranks needs 2 GPUs (not run)"; fi
  if [ "$gpus" -ge 3 ]; then
    compare nccl3 "$t/plan3.bin" 2 no || return 1
    compare nccl3 "$t/plan3.bin" 3 no || return 1
  fi
  echo "mpi: ok ($gpus GPUs)"
}
if ! command -v mpirun >/dev/null; then summary+=("SKIP  mpi: mpirun not found")
elif ! nvidia-smi -L 2>/dev/null | grep -q '^GPU'; then summary+=("SKIP  mpi: no GPU visible")
else stage mpi mpi_gpu; fi

stage bench timeout 180 "$build/bench/cuda/mpc-bench-cuda"
# mpc against PyTorch (eager, torch.compile) on the GPT, side by side; skips
# itself where PyTorch sees no GPU.
stage compare-small timeout 300 python3 bench/compare-gpt-gpu.py "$build/tools/mpc/mpc" --size small
stage compare-large timeout 420 python3 bench/compare-gpt-gpu.py "$build/tools/mpc/mpc" --size large

echo
echo "=== gpu-check summary ($(( $(date +%s) - start ))s)"
for line in "${summary[@]}"; do echo "$line"; done
if [ -f "$log/unit.log" ]; then
  passed=$(grep -c '^\[       OK \]' "$log/unit.log")
  failed=$(grep -cE '^\[  FAILED  \] .* \([0-9]+ ms\)$' "$log/unit.log")
  skipped=$(grep -cE '^\[  SKIPPED \] .* \([0-9]+ ms\)$' "$log/unit.log")
  echo "unit_runtime_cuda: $passed passed, $failed failed, $skipped skipped"
  if grep -q 'no CUDA device visible' "$log/unit.log"; then
    echo "WARNING: GPU tests skipped: no CUDA device visible (exit status 2)"
    [ $status = 0 ] && status=2
  fi
  grep '^\[ overlap \]' "$log/unit.log"
fi
[ -f "$log/lit.log" ] && grep -E '^(  )?(Passed|Failed|Unsupported|Skipped) *:' "$log/lit.log"
[ -f "$log/mpi.log" ] && grep -E '^(---|mpi:|one GPU)' "$log/mpi.log"
[ -f "$log/bench.log" ] && cat "$log/bench.log"
for size in small large; do
  [ -f "$log/compare-$size.log" ] && grep -vE '^(real|user|sys)' "$log/compare-$size.log" | tail -16
done
exit $status
