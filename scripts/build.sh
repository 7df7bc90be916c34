#!/usr/bin/env bash
# Configures and builds mpc in ${MPC_BUILD_DIR:-build}. Extra arguments go to
# the CMake configure step (e.g. -DMPC_WERROR=ON).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh
build=${MPC_BUILD_DIR:-build}
jobs=${MPC_JOBS:-$(nproc)}
cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=${MPC_BUILD_TYPE:-RelWithDebInfo} "$@" >/dev/null
cmake --build "$build" -j "$jobs"
