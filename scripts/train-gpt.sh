#!/usr/bin/env bash
# Trains a small character-level GPT on Debian's fortunes across four CPU
# devices (examples/gpt/README.md): builds mpc, prepares the data, writes the
# model (4 blocks, one per device), compiles it with 4 micro-batches so the
# devices pipeline, trains, saves a checkpoint, then runs the inference
# variant on the validation text and prints its loss next to the unigram
# entropy (the loss of a model that ignores context).
#
# Settings (environment): STEPS (default 1000, a few minutes on a small
# machine), MICROBATCHES (4), LOG_EVERY (50), MPC_BUILD_DIR (build),
# MPC_GPT_DIR ($build/example-gpt), PYTHON (/usr/bin/python3, Debian's
# interpreter with python3-numpy). Extra arguments go to make_model.py
# (e.g. --blocks 8 --d-model 256).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/build.sh >&2
build=${MPC_BUILD_DIR:-build}
mpc="$build/tools/mpc/mpc"
py=${PYTHON:-/usr/bin/python3}
work=${MPC_GPT_DIR:-$build/example-gpt}
data="$work/data"
mkdir -p "$work"

"$py" examples/gpt/prepare_data.py --out "$data"
"$py" examples/gpt/make_model.py --data "$data" "$@" -o "$work/model.json"
# Same parameters without dropout, loss or optimizer: the loss is an output.
# A larger batch only makes fewer, larger steps; the mean is the same.
"$py" examples/gpt/make_model.py --data "$data" "$@" --eval --batch 64 -o "$work/eval.json"

"$mpc" compile "$work/model.json" --microbatches="${MICROBATCHES:-4}" -o "$work/plan.bin" --stats
"$mpc" run "$work/plan.bin" --input x="$data/train_x.npy" --input y="$data/train_y.npy" \
  --steps "${STEPS:-1000}" --shuffle --log-every "${LOG_EVERY:-50}" --save "$work/gpt.safetensors"

"$mpc" compile "$work/eval.json" -o "$work/eval.bin"
# --init takes the parameters; the checkpoint's Adam state has no place in an
# inference plan and is skipped (mpc says so on stderr).
"$mpc" run "$work/eval.bin" --input x="$data/val_x.npy" --input y="$data/val_y.npy" \
  --init "$work/gpt.safetensors" --output loss="$work/val_loss.npy"
"$py" - "$work/val_loss.npy" "$data/stats.json" <<'EOF'
import json, sys
import numpy as np
losses = np.load(sys.argv[1])
stats = json.load(open(sys.argv[2]))
print("validation loss %.4f nats/char over %d batches; unigram entropy %.4f "
      "(validation cross-entropy of the unigram model %.4f)"
      % (losses.mean(), len(losses), stats["unigram_entropy_nats"],
         stats["unigram_val_cross_entropy_nats"]))
EOF
