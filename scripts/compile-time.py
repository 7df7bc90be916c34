#!/usr/bin/env python3
"""Times `mpc compile` on the deep-chain models of bench/ChainModel.h.

For one or more mpc binaries side by side (an older commit's build as the
baseline, then this one), prints the wall time of each size (best of 3 runs,
2 above 4000 layers, or of --runs), each binary's exponent between the two
largest sizes (1.0 is linear), and how many times faster each binary is than
the first. Each binary's runs go round by round over the sizes, so that a
noisy stretch of a shared machine hits every size alike. The binaries run
one after the other, not interleaved: a run right after another binary's
large compile pays for the kernel reassembling the huge pages that one
freed (up to 0.4 s more system time at 16k layers, seen on the development
machine), which best-of-N would not filter out when every run follows one.

The plans are written to --out-dir, by default a temporary directory in
/dev/shm where that exists: `mpc compile` fsyncs its output (support/
FileIO.h), and a shared disk's flush of a 45 MB plan varies by tenths of a
second from run to run. Pass --out-dir on a disk to time that too.

    scripts/compile-time.py [--layers 1000 4000 16000] [--runs N] [--out-dir DIR]
                            [--bench BENCH] MPC [MPC...]

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


def timed(cmd):
    start = time.perf_counter()
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)
    return time.perf_counter() - start


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--layers", type=int, nargs="+", default=[1000, 4000, 16000])
    ap.add_argument("--runs", type=int, default=0,
                    help="runs per binary and size, best taken (default 3, 2 above 4000 layers)")
    ap.add_argument("--out-dir", default=None,
                    help="where the plans are written (default: /dev/shm if it exists)")
    ap.add_argument("--bench", default="build/bench/mpc-compile-bench")
    ap.add_argument("mpc", nargs="+")
    args = ap.parse_args()
    secs = {}
    out_parent = args.out_dir
    if out_parent is None and os.path.isdir("/dev/shm") and os.access("/dev/shm", os.W_OK):
        out_parent = "/dev/shm"
    with tempfile.TemporaryDirectory() as work, tempfile.TemporaryDirectory(dir=out_parent) as out:
        models = {}
        for n in args.layers:
            models[n] = os.path.join(work, f"chain{n}.json")
            with open(models[n], "w") as f:
                subprocess.run([args.bench, "--emit-model", str(n)], check=True, stdout=f)
        def runs(n):
            return args.runs if args.runs > 0 else (3 if n <= 4000 else 2)
        for mpc in args.mpc:
            for r in range(max(runs(n) for n in args.layers)):
                for n in args.layers:
                    if r >= runs(n):
                        continue
                    t = timed([mpc, "compile", models[n], "-o", os.path.join(out, "plan.bin")])
                    secs[mpc, n] = min(secs.get((mpc, n), t), t)
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
