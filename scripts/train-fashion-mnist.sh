#!/usr/bin/env bash
# Trains a LeNet-style CNN on Fashion-MNIST across two CPU devices
# (examples/fashion-mnist/README.md). The model is an MXNet symbol file with
# two ctx_groups, imported by `mpc import-mxnet`; the groups become mpc device
# groups, mapped to cpu:0 and cpu:1. Steps:
#   1. build mpc, and convert Debian's dataset-fashion-mnist IDX files to NPY;
#   2. import the symbol twice: for training (batch BATCH, with its
#      SoftmaxOutput loss) and for inference (--inference, batch 1000);
#   3. compile with MICROBATCHES micro-batches (the two devices pipeline),
#      and check with `mpc dump --format=json` where the layers landed;
#   4. train EPOCHS epochs, saving a checkpoint (parameters and batch-norm
#      running statistics);
#   5. score the test set with the inference plan and print the accuracy.
#
# Settings (environment): EPOCHS (default 2), BATCH (64), MICROBATCHES (2),
# OPTIMIZER (adam), LR (0.001), TRAIN_LIMIT / TEST_LIMIT (use the first K
# images: small runs), LOG_EVERY (100), MPC_BUILD_DIR (build),
# MPC_FMNIST_DIR ($build/example-fashion-mnist), PYTHON (/usr/bin/python3).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/build.sh >&2
build=${MPC_BUILD_DIR:-build}
mpc="$build/tools/mpc/mpc"
py=${PYTHON:-/usr/bin/python3}
work=${MPC_FMNIST_DIR:-$build/example-fashion-mnist}
data="$work/data"
symbol=examples/fashion-mnist/lenet-symbol.json
batch=${BATCH:-64}
eval_batch=1000
mkdir -p "$work"

limits=()
[ -n "${TRAIN_LIMIT:-}" ] && limits+=(--train-limit "$TRAIN_LIMIT")
if [ -n "${TEST_LIMIT:-}" ]; then
  limits+=(--test-limit "$TEST_LIMIT")
  eval_batch=$((TEST_LIMIT < 1000 ? TEST_LIMIT : 1000))
fi
"$py" examples/fashion-mnist/prepare_data.py --out "$data" "${limits[@]}"

"$mpc" import-mxnet "$symbol" -o "$work/model.json" --input "data=$batch,1,28,28"
"$mpc" import-mxnet "$symbol" -o "$work/eval.json" --input "data=$eval_batch,1,28,28" --inference

map=dev1=cpu:0,dev2=cpu:1
"$mpc" compile "$work/model.json" --map "$map" --microbatches "${MICROBATCHES:-2}" \
  --optimizer "${OPTIMIZER:-adam}" --lr "${LR:-0.001}" -o "$work/plan.bin" --stats
"$mpc" compile "$work/eval.json" --map "$map" -o "$work/eval.bin"

# Where the imported layers landed: each ctx_group on its own device.
"$mpc" dump "$work/plan.bin" --format=json | "$py" -c '
import json, sys
plan = json.load(sys.stdin)
names = [d["name"] for d in plan["devices"]]
where = {p["name"]: names[p["device"]] for p in plan["params"]}
for p in ("conv1_weight", "conv2_weight", "fc1_weight", "fc2_weight"):
    print("%-13s on %s" % (p, where[p]))
assert where["conv1_weight"] == where["conv2_weight"] != where["fc1_weight"] == where["fc2_weight"]
'

"$mpc" run "$work/plan.bin" --input data="$data/train_x.npy" --input softmax_label="$data/train_y.npy" \
  --epochs "${EPOCHS:-2}" --shuffle --log-every "${LOG_EVERY:-100}" --save "$work/lenet.safetensors"

# The inference plan's batch norms use the running statistics the
# checkpoint holds; its output is SoftmaxOutput's probabilities.
"$mpc" run "$work/eval.bin" --input data="$data/test_x.npy" --init "$work/lenet.safetensors" \
  --output softmax="$work/test_probs.npy"
"$py" - "$work/test_probs.npy" "$data/test_y.npy" <<'EOF'
import sys
import numpy as np
probs = np.load(sys.argv[1])
labels = np.load(sys.argv[2])[: len(probs)]
accuracy = float((probs.argmax(axis=1) == labels).mean())
print("test accuracy %.4f (%d of %d images)" % (accuracy, int(round(accuracy * len(labels))), len(labels)))
EOF
