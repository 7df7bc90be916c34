#!/usr/bin/env python3
"""mpc against PyTorch eager on a GPT training step (examples/gpt/).

Writes the GPT of examples/gpt/make_model.py (defaults: 4 blocks, d 128,
4 heads, context 64, batch 16, dropout 0.1, Adam), compiles it once with
mpc (--devices groups, --microbatches), and times `mpc run` for N/5 and for
N steps on random token ids; the difference of the two wall times divided
by the difference of the step counts is mpc's step time, with process
start-up, plan loading and data reading cancelled out. PyTorch runs the
same model (examples/gpt/gpt_torch.py's functional implementation, same
dropout, torch.optim.Adam) eagerly in this process. Figures are the median
of REPS alternating repetitions.

Threads: mpc runs one worker thread per device, each calling single-thread
OpenBLAS; PyTorch gets as many threads (--threads, default the device
count) through torch.set_num_threads and OPENBLAS_NUM_THREADS (Debian's
PyTorch calls a pthread OpenBLAS whose pool set_num_threads does not reach;
see compare-pytorch.py). Both load the same OpenBLAS kernels: the
OPENBLAS_CORETYPE mpc would choose for this CPU is set for both.

usage: compare-gpt.py MPC [--steps N] [--reps R] [--devices D] [--microbatches M]
                      [--threads K] [-- MAKE_MODEL_ARGS...]
"""
import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

sys.dont_write_bytecode = True
HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from mpc_timing import time_mpc, write_tokens  # noqa: E402
GPT = os.path.join(HERE, "..", "examples", "gpt")


def fitting_core():
    """The OPENBLAS_CORETYPE mpc's reexecWithFittingBlasCore picks on
    x86-64 (runtime/cpu/BlasCore.cpp), from /proc/cpuinfo's flags."""
    try:
        with open("/proc/cpuinfo") as f:
            flags = next((l.split(":", 1)[1].split() for l in f if l.startswith("flags")), [])
    except OSError:
        return ""
    if all(f in flags for f in ("avx512f", "avx512bw", "avx512vl", "avx512dq", "avx512cd")):
        return "SkylakeX"
    if "avx2" in flags and "fma" in flags:
        return "Haswell"
    return ""


def time_torch(torch, G, model, xs, ys, steps):
    cfg = G.config(model)
    P = G.init_params(model, 0)
    opt = torch.optim.Adam([P[k] for k in G.order(model)], lr=cfg["lr"])
    B = cfg["batch"]

    def step(s):
        x = torch.from_numpy(xs[s * B:(s + 1) * B])
        y = torch.from_numpy(ys[s * B:(s + 1) * B])
        loss = G.gpt_loss(P, x, y, cfg, train=True)
        opt.zero_grad()
        loss.backward()
        opt.step()
    for s in range(3):
        step(s)
    t, cpu = time.perf_counter(), time.process_time()
    for s in range(steps):
        step(s)
    wall = time.perf_counter() - t
    return wall / steps, (time.process_time() - cpu) / wall


def main():
    ap = argparse.ArgumentParser(usage=__doc__.rsplit("usage: ", 1)[1])
    ap.add_argument("mpc")
    ap.add_argument("--steps", type=int, default=50, help="mpc steps of the long run (N)")
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--devices", type=int, default=4)
    ap.add_argument("--microbatches", type=int, default=4)
    ap.add_argument("--threads", type=int, help="PyTorch threads (default: --devices)")
    argv = sys.argv[1:]
    rest = argv[argv.index("--") + 1:] if "--" in argv else []
    args = ap.parse_args(argv[:len(argv) - len(rest) - (1 if "--" in argv else 0)])
    threads = args.threads or args.devices

    want = {"OPENBLAS_NUM_THREADS": str(threads), "OMP_NUM_THREADS": str(threads)}
    core = os.environ.get("OPENBLAS_CORETYPE") or fitting_core()
    if core:
        want["OPENBLAS_CORETYPE"] = core
    if any(os.environ.get(k) != v for k, v in want.items()):
        os.environ.update(want)
        os.execv(sys.executable, [sys.executable] + sys.argv)
    try:
        import numpy as np
        import torch
    except ImportError as e:
        print("compare-gpt: numpy/torch not available (%s); install python3-torch" % e)
        return 1
    sys.path.insert(0, GPT)
    import gpt_torch as G
    torch.set_num_threads(threads)
    torch.manual_seed(0)

    work = tempfile.mkdtemp(prefix="mpc-compare-gpt.")
    model_path, plan = os.path.join(work, "model.json"), os.path.join(work, "plan.bin")
    subprocess.run([sys.executable, os.path.join(GPT, "make_model.py"), "--vocab", "113",
                    "--devices", str(args.devices), "-o", model_path] + rest, check=True)
    with open(model_path) as f:
        model = json.load(f)
    cfg = G.config(model)
    subprocess.run([args.mpc, "compile", model_path, "-o", plan,
                    "--microbatches", str(args.microbatches)], check=True)
    n2, n1 = args.steps, max(1, args.steps // 5)
    x, y, xs, ys = write_tokens(np, work, cfg["vocab"], n2 * cfg["batch"], cfg["context"])

    print("OpenBLAS kernels: %s; %d CPU cores; mpc %d devices, %d micro-batches; "
          "PyTorch %s, %d threads" % (core or "as loaded", os.cpu_count(), args.devices,
                                      args.microbatches, torch.__version__, threads))
    print("model: %d blocks, d %d, %d heads, context %d, batch %d, dropout %g, %d parameters"
          % (cfg["blocks"], cfg["d"], cfg["heads"], cfg["context"], cfg["batch"], cfg["dropout"],
             sum(int(np.prod(p["shape"])) for p in model["params"].values())))
    mine, theirs = [], []
    for _ in range(args.reps):
        t1 = time_mpc(args.mpc, plan, x, y, n1)
        t2 = time_mpc(args.mpc, plan, x, y, n2)
        mine.append((t2 - t1) / (n2 - n1) if n2 > n1 else t2 / n2)
        t, load = time_torch(torch, G, model, xs, ys, max(5, n2 // 5))
        theirs.append(t)
        if load > threads * 1.3:
            print("compare-gpt: warning: PyTorch used %.0f%% CPU with %d threads"
                  % (100 * load, threads))
    shutil.rmtree(work, ignore_errors=True)
    m, p = statistics.median(mine), statistics.median(theirs)
    tokens = cfg["batch"] * cfg["context"]
    print("%-22s %10s %12s" % ("", "ms/step", "tokens/s"))
    print("%-22s %10.1f %12.0f" % ("mpc", 1e3 * m, tokens / m))
    print("%-22s %10.1f %12.0f" % ("PyTorch eager", 1e3 * p, tokens / p))
    print("PyTorch / mpc: %.2fx" % (p / m))
    return 0


if __name__ == "__main__":
    sys.exit(main())
