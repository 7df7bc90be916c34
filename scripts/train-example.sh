#!/usr/bin/env bash
# The main job: builds mpc, generates the seed example's data, compiles the
# three-device regression model and trains it on the CPU runtime (three
# worker devices), then prints the learned function.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/build.sh >&2
build=${MPC_BUILD_DIR:-build}
mpc="$build/tools/mpc/mpc"
work=${MPC_EXAMPLE_DIR:-$build/example-regression3}
mkdir -p "$work"
"$build/examples/regression3-data" "$work"
"$mpc" compile examples/regression3/model.json -o "$work/plan.bin" --stats
"$mpc" run "$work/plan.bin" --input x="$work/x.npy" --input y="$work/y.npy" \
  --epochs "${EPOCHS:-20}" --shuffle --log-every 500 --save "$work/trained.safetensors" \
  --print-params
"$build/examples/regression3-report" "$work/trained.safetensors"
