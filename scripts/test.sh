#!/usr/bin/env bash
# The test command: installs what is missing, configures, builds, and runs
# every test (GoogleTest suites through ctest, the lit suite, the layering
# check). Extra arguments go to the CMake configure step.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/build.sh "$@"
build=${MPC_BUILD_DIR:-build}
cd "$build"
ctest --output-on-failure -j "${MPC_JOBS:-$(nproc)}"
