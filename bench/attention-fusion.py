#!/usr/bin/env python3
"""The fused attention op against the unfused chain, on a GPT training step.

Writes the GPT of examples/gpt/make_model.py (defaults: 4 blocks, d 128, 4
heads, context 128, batch 16, attention dropout 0; make_model.py's options
after `--` change them), compiles it twice on --devices devices with
--microbatches, once as mpc compiles by default (attention fused) and once with
--no-fuse-attention (matmul -> scale -> causal_mask -> softmax [-> dropout]
-> matmul), and times `mpc run` for N/5 and N steps of each, in
turn: the difference of the wall times over the difference of the step
counts is the step time, start-up cancelled out. Prints each variant's
median step time over REPS repetitions, the ratio unfused / fused of each
repetition (measured side by side), and each plan's arena peaks from
`mpc compile --stats`.

Measure as users run: with OPENBLAS_CORETYPE unset (these machines pin
Haswell; mpc then picks the CPU's own kernels).

usage: attention-fusion.py MPC [--steps N] [--reps R] [--devices D] [--microbatches M]
                           [-- MAKE_MODEL_ARGS...]
"""
import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile

sys.dont_write_bytecode = True
HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from mpc_timing import time_mpc, write_tokens  # noqa: E402
GPT = os.path.join(HERE, "..", "examples", "gpt")


def compile_plan(mpc, model, plan, extra):
    out = subprocess.run([mpc, "compile", model, "-o", plan, "--stats"] + extra,
                         check=True, capture_output=True, text=True).stderr
    peaks = re.findall(r"arena peak ([0-9.]+ [KMG]iB)", out)
    fused = re.search(r"fuse-attention: fused = (\d+)", out)
    return peaks, int(fused.group(1)) if fused else 0


def main():
    ap = argparse.ArgumentParser(usage=__doc__.rsplit("usage: ", 1)[1])
    ap.add_argument("mpc")
    ap.add_argument("--steps", type=int, default=20)
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--devices", type=int, default=2)
    ap.add_argument("--microbatches", type=int, default=2)
    argv = sys.argv[1:]
    rest = argv[argv.index("--") + 1:] if "--" in argv else []
    args = ap.parse_args(argv[:len(argv) - len(rest) - (1 if "--" in argv else 0)])
    import numpy as np

    work = tempfile.mkdtemp(prefix="mpc-attention-fusion.")
    model = os.path.join(work, "model.json")
    shape = ["--blocks", "4", "--d-model", "128", "--heads", "4", "--context", "128",
             "--batch", "16"]
    subprocess.run([sys.executable, os.path.join(GPT, "make_model.py"), "--vocab", "113",
                    "--devices", str(args.devices), "--dropout", "0", "-o", model] + shape + rest,
                   check=True)  # an option in `rest` comes later and wins
    m = ["--microbatches", str(args.microbatches)]
    plans = {"fused": os.path.join(work, "fused.bin"), "unfused": os.path.join(work, "unfused.bin")}
    peaks = {}
    peaks["fused"], n = compile_plan(args.mpc, model, plans["fused"], m)
    peaks["unfused"], _ = compile_plan(args.mpc, model, plans["unfused"],
                                       m + ["--no-fuse-attention"])
    # The batch and context the model has (`rest` may change them).
    with open(model) as f:
        batch, context = json.load(f)["inputs"]["x"]["shape"]
    n2, n1 = args.steps, max(1, args.steps // 5)
    x, y, _, _ = write_tokens(np, work, 113, n2 * batch, context)
    print("GPT %s, %d devices, %d micro-batches; %d attention chains fused; OPENBLAS_CORETYPE %s"
          % (" ".join(shape + rest), args.devices, args.microbatches, n,
             os.environ.get("OPENBLAS_CORETYPE", "unset")))
    times = {k: [] for k in plans}
    for _ in range(args.reps):
        for k, plan in plans.items():
            t1 = time_mpc(args.mpc, plan, x, y, n1)
            t2 = time_mpc(args.mpc, plan, x, y, n2)
            times[k].append((t2 - t1) / (n2 - n1))
    for k in plans:
        print("%-8s step %.1f ms (median of %d; %s), arena peaks %s"
              % (k, 1e3 * statistics.median(times[k]), args.reps,
                 ", ".join("%.1f" % (1e3 * t) for t in times[k]), ", ".join(peaks[k])))
    ratios = [u / f for u, f in zip(times["unfused"], times["fused"])]
    print("unfused / fused: median %.2f (%s)" % (statistics.median(ratios),
                                                 ", ".join("%.2f" % r for r in ratios)))


if __name__ == "__main__":
    main()
