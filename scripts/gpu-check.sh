#!/usr/bin/env bash
# GPU check of the CUDA runtime, for a machine with an NVIDIA GPU (sized for
# one H200, under 5 minutes): installs missing Debian build packages (apt-get
# only; nothing else comes from the network), configures with CUDA and the
# benchmarks on, builds the GPU targets, then runs the CUDA unit tests, the
# cuda lit tests and the GPU benchmark, and prints a summary.
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
stage bench timeout 180 "$build/bench/cuda/mpc-bench-cuda"

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
[ -f "$log/bench.log" ] && cat "$log/bench.log"
exit $status
