#!/usr/bin/env bash
# Coverage-guided fuzzing of mpc's readers of untrusted input with libFuzzer,
# under AddressSanitizer and UndefinedBehaviorSanitizer (docs/testing.md,
# "Fuzzing").
#
#   bash scripts/fuzz.sh [--ci | --seconds N] [--jobs J] [TARGET...]
#
#   --ci          the short run CI makes: each target from its seed corpus
#                 with a fixed seed (-seed=1) for a fixed number of runs.
#   --seconds N   a campaign: each target for N seconds (default 600).
#   --jobs J      targets fuzzed at once (default 1; each is one process).
#   TARGET...     a subset, e.g. fuzz-plan-reader (default: every target).
#
# Builds the targets in ${MPC_FUZZ_BUILD_DIR:-build-fuzz} with clang. The seed
# corpora are the ones ctest makes in ${MPC_BUILD_DIR:-build} (its fixtures
# are run here first, so that build must exist). New inputs go to
# build-fuzz/corpus/<target>, never into the seeds; a finding is written to
# build-fuzz/findings/ and makes the script exit 1. Each target's executions,
# CPU seconds and coverage are printed at the end, one line each.
set -euo pipefail
cd "$(dirname "$0")/.."

mode=campaign seconds=600 jobs=1 targets=()
while (($#)); do
  case "$1" in
    --ci) mode=ci ;;
    --seconds) seconds=$2; shift ;;
    --jobs) jobs=$2; shift ;;
    -h|--help) sed -n '2,20p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    fuzz-*) targets+=("$1") ;;
    *) echo "fuzz.sh: unknown argument '$1' (see --help)" >&2; exit 1 ;;
  esac
  shift
done
if ! [[ "$seconds" =~ ^[1-9][0-9]*$ && "$jobs" =~ ^[1-9][0-9]*$ ]]; then
  echo "fuzz.sh: --seconds and --jobs take a positive whole number" >&2
  exit 1
fi

bash scripts/install-deps.sh
build=${MPC_BUILD_DIR:-build}
fuzz=${MPC_FUZZ_BUILD_DIR:-build-fuzz}
src=$PWD
# Each target and its seed corpora (folders or files), beside the build that
# ctest made them in (test/fuzz/CMakeLists.txt).
declare -A seeds=(
  [fuzz-json-reader]="$build/test/fuzz/json-corpus examples"
  [fuzz-plan-reader]="$build/test/fuzz/plan-corpus"
  [fuzz-npy-reader]="$build/test/fuzz/io-corpus/npy"
  [fuzz-safetensors-reader]="$build/test/fuzz/io-corpus/st"
  [fuzz-checkpoint-reader]="$build/test/fuzz/io-corpus/st"
  [fuzz-mxnet-symbol-reader]="$build/test/fuzz/mxnet-corpus/symbol test/lit/import-mxnet/Inputs"
  [fuzz-mxnet-params-reader]="$build/test/fuzz/mxnet-corpus/params"
  [fuzz-flag-parser]="$fuzz/seeds/flag-lines"
  [fuzz-onnx-import]="test/fuzz/onnx-corpus /usr/share/libonnx-testdata/data/node"
)
all=(fuzz-json-reader fuzz-plan-reader fuzz-npy-reader fuzz-safetensors-reader
     fuzz-checkpoint-reader fuzz-mxnet-symbol-reader fuzz-mxnet-params-reader fuzz-flag-parser
     fuzz-onnx-import)
((${#targets[@]})) || targets=("${all[@]}")
for t in "${targets[@]}"; do
  [[ -n "${seeds[$t]:-}" ]] || { echo "fuzz.sh: no target '$t' (targets: ${all[*]})" >&2; exit 1; }
done

if [ ! -f "$build/CMakeCache.txt" ]; then
  echo "fuzz.sh: no build in '$build' to make the seed corpora: run scripts/build.sh first" >&2
  exit 1
fi
(cd "$build" && ctest -R 'fuzz-.*corpus' >/dev/null) ||
  { echo "fuzz.sh: making the seed corpora failed (ctest -R 'fuzz-.*corpus' in $build)" >&2; exit 1; }

# -O1 with line tables: what fuzzing builds use (fast to build, stacks readable).
# The flag corpus is one file of command lines (the replay test reads it
# whole); libFuzzer mutates small inputs best, so it gets a line a seed.
mkdir -p "$fuzz/seeds/flag-lines"
grep -v '^#' test/fuzz/flag-corpus/*.txt |
  awk -v d="$fuzz/seeds/flag-lines" 'NF { print > (d "/line-" NR) }'

CC=clang CXX=clang++ cmake -S . -B "$fuzz" -DCMAKE_BUILD_TYPE= \
  -DCMAKE_CXX_FLAGS="-O1 -gline-tables-only" \
  -DMPC_BUILD_FUZZERS=ON -DMPC_SANITIZE=address,undefined -DMPC_ENABLE_CUDA=OFF >/dev/null
cmake --build "$fuzz" -j "${MPC_JOBS:-$(nproc)}" --target "${targets[@]}" >/dev/null

# UBSan's checks recover by default; a finding must stop the run.
export UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1
export ASAN_OPTIONS=detect_leaks=1
mkdir -p "$fuzz/findings" "$fuzz/logs"

# One target: libFuzzer over a fresh output corpus plus the seeds, then a
# summary line from its log and the CPU time the process used.
run_one() {
  local t=$1 out="$fuzz/corpus/$1" log="$fuzz/logs/$1.log"
  mkdir -p "$out"
  local limits=(-max_total_time="$seconds")
  [ $mode = ci ] && limits=(-seed=1 -runs=4000 -max_total_time=60)
  # A command line is short; longer inputs only slow the flag parser down.
  [ "$t" = fuzz-flag-parser ] && limits+=(-max_len=512)
  local status=0
  local TIMEFORMAT='%U %S'
  # shellcheck disable=SC2086
  { time "$fuzz/test/fuzz/$t" "$out" ${seeds[$t]} "${limits[@]}" -rss_limit_mb=2048 \
      -timeout=10 -artifact_prefix="$fuzz/findings/$t-" -print_final_stats=1 \
      >"$log" 2>&1 || status=$?; } 2>"$fuzz/logs/$t.time"
  local cpu execs cov
  cpu=$(awk '{printf "%.0f", $1 + $2}' "$fuzz/logs/$t.time")
  execs=$(sed -nE 's/^stat::number_of_executed_units: *([0-9]+)/\1/p' "$log" | tail -n 1)
  cov=$(grep -oE 'cov: [0-9]+ ft: [0-9]+' "$log" | tail -n 1)
  if [ $status = 0 ]; then
    echo "$t: ${execs:-?} executions in ${cpu}s CPU, $cov, no findings"
  else
    echo "$t: FINDING after ${execs:-?} executions (exit $status); see $log and $fuzz/findings/"
  fi
  return $status
}

for t in "${targets[@]}"; do
  run_one "$t" > "$fuzz/logs/$t.summary" &
  while (($(jobs -rp | wc -l) >= jobs)); do wait -n || true; done
done
wait
status=0
for t in "${targets[@]}"; do
  cat "$fuzz/logs/$t.summary"
  grep -q 'no findings$' "$fuzz/logs/$t.summary" || status=1
done
exit $status
