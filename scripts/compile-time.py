#!/usr/bin/env python3
"""Times `mpc compile` on the deep-chain models of bench/ChainModel.h.

For one or more mpc binaries side by side (an older commit's build as the
baseline, then this one), prints the wall time of each size (best of 3 runs,
2 above 4000 layers), each binary's exponent between the two largest sizes
(1.0 is linear), and how many times faster each binary is than the first.

    scripts/compile-time.py [--layers 1000 4000 16000] [--bench BENCH] MPC [MPC...]

BENCH (default build/bench/mpc-compile-bench) writes the models
(`--emit-model N`).
"""
import argparse
import math
import os
import subprocess
import sys
import tempfile
import time


def best_of(runs, cmd):
    best = None
    for _ in range(runs):
        start = time.perf_counter()
        subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)
        t = time.perf_counter() - start
        best = t if best is None else min(best, t)
    return best


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--layers", type=int, nargs="+", default=[1000, 4000, 16000])
    ap.add_argument("--bench", default="build/bench/mpc-compile-bench")
    ap.add_argument("mpc", nargs="+")
    args = ap.parse_args()
    secs = {}
    with tempfile.TemporaryDirectory() as work:
        models = {}
        for n in args.layers:
            models[n] = os.path.join(work, f"chain{n}.json")
            with open(models[n], "w") as f:
                subprocess.run([args.bench, "--emit-model", str(n)], check=True, stdout=f)
        for mpc in args.mpc:
            for n in args.layers:
                runs = 3 if n <= 4000 else 2
                secs[mpc, n] = best_of(runs, [mpc, "compile", models[n], "-o",
                                              os.path.join(work, "plan.bin")])
    width = max(len(m) for m in args.mpc) + 2
    print("mpc binary".ljust(width) + "".join(f"{n:>10} L" for n in args.layers) + "  exponent")
    for mpc in args.mpc:
        row = mpc.ljust(width) + "".join(f"{secs[mpc, n]:>11.3f}s" for n in args.layers)
        if len(args.layers) >= 2:
            a, b = args.layers[-2], args.layers[-1]
            row += f"  {math.log(secs[mpc, b] / secs[mpc, a]) / math.log(b / a):8.3f}"
        print(row)
    base = args.mpc[0]
    for mpc in args.mpc[1:]:
        print(f"{mpc} against {base}: " +
              ", ".join(f"{n} layers {secs[base, n] / secs[mpc, n]:.1f}x faster"
                        for n in args.layers))
    return 0


if __name__ == "__main__":
    sys.exit(main())
