#!/usr/bin/env bash
# The test command: installs what is missing, configures, builds, and runs
# every test through ctest: the GoogleTest suites and the layering check,
# then the lit suite, whose own summary is printed too. Ends with one line
# counting every test case (GoogleTest cases, lit tests, the layering check).
# Extra arguments go to the CMake configure step.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/build.sh "$@"
build=${MPC_BUILD_DIR:-build}
cd "$build"
status=0
ctest --output-on-failure -j "${MPC_JOBS:-$(nproc)}" -E '^lit$' 2>&1 | tee ctest.log || status=1
grep -q ' 0 tests failed' ctest.log || status=1
if ! ctest -V -R '^lit$' > lit.log 2>&1; then
  cat lit.log
  status=1
fi
echo "lit suite (details in $build/lit.log):"
grep -E '^[0-9]+: +(Passed|Unsupported|Failed|Testing Time)' lit.log | sed 's/^[0-9]*: */  /' || true

# One closing line over both runners. ctest counts GoogleTest skips (no GPU)
# among its passes; they are subtracted and reported as skipped.
total=$(sed -nE 's/.* tests failed out of ([0-9]+).*/\1/p' ctest.log | tail -n 1)
failed=$(sed -nE 's/.*, ([0-9]+) tests failed out of.*/\1/p' ctest.log | tail -n 1)
skipped=$(grep -c '(Skipped)' ctest.log || true)
litPassed=$(sed -nE 's/^[0-9]+: +Passed *: *([0-9]+).*/\1/p' lit.log | tail -n 1)
litFailed=$(sed -nE 's/^[0-9]+: +Failed *: *([0-9]+).*/\1/p' lit.log | tail -n 1)
litUnsupported=$(sed -nE 's/^[0-9]+: +Unsupported *: *([0-9]+).*/\1/p' lit.log | tail -n 1)
passed=$(( ${total:-0} - ${failed:-0} - ${skipped:-0} + ${litPassed:-0} ))
failed=$(( ${failed:-0} + ${litFailed:-0} ))
skipped=$(( ${skipped:-0} + ${litUnsupported:-0} ))
if [ $status != 0 ] && [ $failed = 0 ]; then failed=1; fi
echo "tests: $passed passed, $failed failed, $skipped skipped"
exit $status
