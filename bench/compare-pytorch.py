#!/usr/bin/env python3
"""mpc against PyTorch eager, measured in the same run, one thread each.

Runs mpc-bench's SeedModelStep and MlpTanhStep (Google Benchmark, JSON) and
the same models in PyTorch (torch.set_num_threads(1), eager, torch.optim),
alternating, and prints each step time and the ratio PyTorch / mpc:
  * the seed model: three affine layers (2-2-2-1), batch 100, mse, Adam;
    mpc runs it on its three devices, PyTorch on one thread;
  * MlpTanhStep: 4 dense 1024-wide layers with tanh, batch 1024, mse, SGD,
    one device / one thread; also mpc's vs_sgemm (step / the same 12
    cblas_sgemm calls).
Figures are the median of REPS alternating repetitions.

usage: compare-pytorch.py MPC_BENCH [REPS]
"""
import json
import os
import statistics
import subprocess
import sys
import time


def mpc_times(bench, name, min_time):
    # mpc-bench re-executes itself with the OpenBLAS kernels that fit this
    # CPU (runtime/cpu/BlasCore.h); PyTorch gets the same (main()).
    out = subprocess.run([bench, "--benchmark_filter=^%s" % name, "--benchmark_format=json",
                          "--benchmark_min_time=%g" % min_time],
                         check=True, capture_output=True, text=True).stdout
    run = json.loads(out)["benchmarks"][0]
    return run["us/step"] * 1e-6, run


def torch_seed(torch, steps):
    x = torch.randn(100, 2)
    y = torch.randn(100, 1)
    ps = [torch.randn(2, 2, requires_grad=True), torch.zeros(2, requires_grad=True),
          torch.randn(2, 2, requires_grad=True), torch.zeros(2, requires_grad=True),
          torch.randn(2, 1, requires_grad=True), torch.zeros(1, requires_grad=True)]
    opt = torch.optim.Adam(ps, lr=1e-3)

    def step():
        opt.zero_grad()
        z = x @ ps[0] + ps[1]
        z = z @ ps[2] + ps[3]
        z = z @ ps[4] + ps[5]
        torch.nn.functional.mse_loss(z, y).backward()
        opt.step()
    for _ in range(100):
        step()
    t = time.perf_counter()
    for _ in range(steps):
        step()
    return (time.perf_counter() - t) / steps


def torch_mlp(torch, steps):
    x = torch.rand(1024, 1024) * 2 - 1
    y = torch.rand(1024, 1024) * 2 - 1
    layers = [torch.nn.Linear(1024, 1024) for _ in range(4)]
    params = [p for layer in layers for p in layer.parameters()]
    opt = torch.optim.SGD(params, lr=1e-3)

    def step():
        opt.zero_grad()
        z = x
        for i, layer in enumerate(layers):
            z = layer(z)
            if i < 3:
                z = torch.tanh(z)
        torch.nn.functional.mse_loss(z, y).backward()
        opt.step()
    step()
    t = time.perf_counter()
    cpu = time.process_time()
    for _ in range(steps):
        step()
    wall = time.perf_counter() - t
    if time.process_time() - cpu > 1.3 * wall:
        print("compare-pytorch: warning: PyTorch used more than one core "
              "(%.0f%% CPU)" % (100 * (time.process_time() - cpu) / wall))
    return wall / steps


def main():
    bench = sys.argv[1]
    reps = int(sys.argv[2]) if len(sys.argv) > 2 else 3
    # PyTorch calls the same OpenBLAS: give it the kernels mpc picks, so
    # that both sides run the same sgemm.
    # One thread means one thread: torch.set_num_threads(1) does not reach
    # the thread pool of the pthread OpenBLAS that Debian's PyTorch calls,
    # which otherwise runs every matmul on all cores.
    core = subprocess.run([bench, "--print-blas-core"], capture_output=True,
                          text=True).stdout.strip()
    want = {"OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "1"}
    if core:
        want["OPENBLAS_CORETYPE"] = os.environ.get("OPENBLAS_CORETYPE", core)
    if any(os.environ.get(k) != v for k, v in want.items()):
        os.environ.update(want)
        os.execv(sys.executable, [sys.executable] + sys.argv)
    print("OpenBLAS kernels: %s" % (os.environ.get("OPENBLAS_CORETYPE") or "as loaded"))
    try:
        import torch
    except ImportError:
        print("compare-pytorch: python3-torch is not installed (scripts/install-deps.sh)")
        return 1
    torch.set_num_threads(1)
    rows = {"seed": ([], []), "mlp": ([], [])}
    vs_sgemm = []
    for _ in range(reps):
        rows["seed"][0].append(mpc_times(bench, "SeedModelStep", 1.0)[0])
        rows["seed"][1].append(torch_seed(torch, 2000))
        t, run = mpc_times(bench, "MlpTanhStep", 2.0)
        rows["mlp"][0].append(t)
        vs_sgemm.append(run["vs_sgemm"])
        rows["mlp"][1].append(torch_mlp(torch, 3))
    print("%-34s %12s %12s %10s" % ("model", "mpc", "PyTorch", "PyTorch/mpc"))
    for key, label, unit, scale in (("seed", "seed model (3 devices), batch 100", "us", 1e6),
                                    ("mlp", "4x1024 tanh MLP, batch 1024", "ms", 1e3)):
        m = statistics.median(rows[key][0])
        p = statistics.median(rows[key][1])
        print("%-34s %9.1f %s %9.1f %s %9.2fx" % (label, m * scale, unit, p * scale, unit, p / m))
    print("mpc MLP step / the same sgemm calls (vs_sgemm): %.2f" % statistics.median(vs_sgemm))
    return 0


if __name__ == "__main__":
    sys.exit(main())
