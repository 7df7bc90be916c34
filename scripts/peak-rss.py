#!/usr/bin/env python3
"""Peak memory of `mpc run` against the least a run could need.

Compiles a W-wide, 4-layer tanh MLP (default W = 2048, batch 1024, SGD with
momentum, on D CPU devices, default 1, the layers split in contiguous runs),
writes two batches of data, trains it for a few steps with `mpc run`, and
prints, each in MiB:
  * minimum: what the run must hold: every device's persistent region
    (parameters, optimizer state, inputs, outputs, loss) and arena
    (gradients and activations, at the planner's peak), from
    `mpc dump --format=json`, plus the dataset files;
  * peak RSS of `mpc run` (getrusage of that one child, across its
    start-up re-execution, see runtime/cpu/BlasCore.h);
  * peak RSS of `mpc --version` (the libraries alone);
and the ratio peak / minimum (issue target: <= 1.3). With D > 1 the
difference includes the messages in flight between devices (the transport's
buffers, runtime/MessagePool.h), which the minimum does not count.

usage: peak-rss.py MPC [WIDTH] [--devices D]
"""
import json
import os
import resource
import struct
import subprocess
import sys
import tempfile

LAYERS, BATCH = 4, 1024


def npy(path, shape):
    dims = ", ".join(str(d) for d in shape) + ("," if len(shape) == 1 else "")
    header = "{'descr': '<f4', 'fortran_order': False, 'shape': (%s), }" % dims
    header += " " * (63 - (10 + len(header)) % 64) + "\n"
    n = 1
    for d in shape:
        n *= d
    with open(path, "wb") as f:
        f.write(b"\x93NUMPY\x01\x00" + struct.pack("<H", len(header)) + header.encode())
        row = struct.pack("<%df" % shape[-1], *[((i * 37) % 101) / 101.0 for i in range(shape[-1])])
        for _ in range(n // shape[-1]):
            f.write(row)


def model(width, devices):
    params, nodes, prev = {}, [], "x"
    for l in range(LAYERS):
        group = {"device": "cpu:%d" % (l * devices // LAYERS)}
        params["w%d" % l] = {"shape": [width, width], "init": {"xavier": {"magnitude": 2.0}},
                             **group}
        nodes.append({"name": "h%d" % l, "op": "matmul", "inputs": [prev, "w%d" % l], **group})
        prev = "h%d" % l
        if l + 1 < LAYERS:
            nodes.append({"name": "a%d" % l, "op": "tanh", "inputs": [prev], **group})
            prev = "a%d" % l
    nodes.append({"name": "loss", "op": "mse_loss", "inputs": [prev, "y"],
                  "device": "cpu:%d" % (devices - 1)})
    return {"mpc": 1, "name": "mlp%dx%d" % (LAYERS, width),
            "inputs": {"x": {"shape": [BATCH, width]}, "y": {"shape": [BATCH, width]}},
            "params": params, "nodes": nodes, "loss": "loss",
            "optimizer": {"sgd": {"lr": 1e-4, "momentum": 0.9}}}


def child_peak(cmd):
    """Peak RSS of `cmd` alone, in bytes. RUSAGE_CHILDREN is the largest
    peak of *any* child so far (mpc compile's included), so the command runs
    under a fresh Python process that reports its own only child's peak."""
    probe = ("import resource, subprocess, sys\n"
             "subprocess.run(sys.argv[1:], check=True, stdout=subprocess.DEVNULL)\n"
             "print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)\n")
    out = subprocess.run([sys.executable, "-c", probe] + cmd, check=True,
                         capture_output=True, text=True).stdout
    return int(out.split()[-1]) * 1024  # KiB -> bytes


def main():
    args = sys.argv[1:]
    devices = 1
    if "--devices" in args:
        i = args.index("--devices")
        devices = int(args[i + 1])
        del args[i:i + 2]
    if not 1 <= devices <= LAYERS:
        sys.exit("peak-rss.py: --devices takes 1 to %d" % LAYERS)
    mpc = args[0]
    width = int(args[1]) if len(args) > 1 else 2048
    mib = 1024.0 * 1024.0
    with tempfile.TemporaryDirectory() as work:
        version_peak = child_peak([mpc, "--version"])
        path = os.path.join(work, "model.json")
        with open(path, "w") as f:
            json.dump(model(width, devices), f)
        plan = os.path.join(work, "plan.bin")
        subprocess.run([mpc, "compile", path, "-o", plan], check=True)
        npy(os.path.join(work, "x.npy"), [2 * BATCH, width])
        npy(os.path.join(work, "y.npy"), [2 * BATCH, width])
        dump = json.loads(subprocess.run([mpc, "dump", plan, "--format=json"], check=True,
                                         capture_output=True, text=True).stdout)
        device = sum(d["persistent_bytes"] + d["arena_bytes"] for d in dump["devices"])
        data = sum(os.path.getsize(os.path.join(work, n)) for n in ("x.npy", "y.npy"))
        minimum = device + data
        run_peak = child_peak([mpc, "run", plan, "--input", "x=" + os.path.join(work, "x.npy"),
                               "--input", "y=" + os.path.join(work, "y.npy"), "--steps", "3"])
    print("%d x %d tanh MLP, batch %d, %d CPU device%s"
          % (LAYERS, width, BATCH, devices, "" if devices == 1 else "s"))
    print("  minimum (device regions %.0f + dataset %.0f): %.0f MiB"
          % (device / mib, data / mib, minimum / mib))
    print("  peak RSS of mpc run: %.0f MiB" % (run_peak / mib))
    print("  peak RSS of mpc --version: %.0f MiB" % (version_peak / mib))
    print("  ratio peak / minimum: %.2f" % (run_peak / minimum))
    return 0


if __name__ == "__main__":
    sys.exit(main())
