#!/usr/bin/env python3
"""An mpc checkpoint (--save) loads in PyTorch.

safetensors' own Python package is not packaged in Debian 12, so the file is
read the way safetensors.torch.load_file reads it, written from the format:
the 8-byte little-endian header length, the JSON header (tensors and the
string-only "__metadata__"), then each tensor as torch.frombuffer over its
data_offsets. Where the safetensors package is importable, load_file itself
is used as well and must agree. Checks: every parameter and optimizer state
tensor is present with its dtype and shape, the metadata values are all
strings and hold the training position, and the parameter values equal what
`mpc run --print-params` printed.

usage: checkpoint_load.py MPC REGRESSION3_DATA SOURCE_DIR WORK_DIR
Skipped (exit 77) where torch or numpy is missing, failing under CI=true:
torch_guard.py.
"""
import json
import os
import shutil
import struct
import subprocess
import sys

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from torch_guard import torch  # noqa: E402


def load_file(path):
    """safetensors.torch.load_file, from the format: (tensors, metadata)."""
    with open(path, "rb") as f:
        data = f.read()
    (n,) = struct.unpack("<Q", data[:8])
    header = json.loads(data[8:8 + n])
    base = 8 + n
    dtypes = {"F32": torch.float32, "I32": torch.int32}
    tensors = {}
    for name, info in header.items():
        if name == "__metadata__":
            continue
        begin, end = info["data_offsets"]
        t = torch.frombuffer(bytearray(data[base + begin:base + end]), dtype=dtypes[info["dtype"]])
        tensors[name] = t.reshape(info["shape"])
    return tensors, header.get("__metadata__", {})


def main():
    mpc, gen, src, work = sys.argv[1:5]
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    subprocess.run([gen, work, "--rows", "1000"], check=True, stdout=subprocess.DEVNULL)
    plan = os.path.join(work, "plan.bin")
    subprocess.run([mpc, "compile", os.path.join(src, "examples/regression3/model.json"), "-o", plan],
                   check=True)
    ckpt = os.path.join(work, "ckpt.safetensors")
    out = subprocess.run([mpc, "run", plan, "--input", "x=" + os.path.join(work, "x.npy"),
                          "--input", "y=" + os.path.join(work, "y.npy"), "--steps", "15",
                          "--save", ckpt, "--print-params"],
                         check=True, capture_output=True, text=True).stdout
    printed = {}
    for line in out.splitlines():
        if " = [" in line:
            name = line.split(" ")[0]
            printed[name] = [float(v) for v in line.split("[", 2)[2].rstrip("]").split(",")]

    tensors, meta = load_file(ckpt)
    try:
        from safetensors.torch import load_file as st_load_file
        theirs = st_load_file(ckpt)
        assert sorted(theirs) == sorted(tensors)
        for k in tensors:
            assert torch.equal(theirs[k], tensors[k]), k
        print("safetensors.torch.load_file agrees")
    except ImportError:
        print("note: the safetensors package is not installed; read with the format-derived loader")

    fail = []
    params = ["w0", "b0", "w1", "b1", "w2", "b2"]
    states = json.loads(meta.get("mpc.states", "[]"))
    if sorted(tensors) != sorted(params + states) or len(states) != 18:
        fail.append("tensors %s, states %s" % (sorted(tensors), states))
    if not all(isinstance(v, str) for v in meta.values()):
        fail.append("metadata values must all be strings: %s" % meta)
    if (meta.get("mpc.step"), meta.get("mpc.epoch"), meta.get("mpc.epoch_step")) != ("15", "1", "5"):
        fail.append("position: %s" % meta)
    for name in params:
        got = tensors[name].flatten().tolist()
        want = printed.get(name, [])
        if len(got) != len(want) or any(abs(a - b) > 1e-5 * max(1.0, abs(b)) for a, b in zip(got, want)):
            fail.append("%s: %s vs printed %s" % (name, got, want))
        if tensors[name].dtype != torch.float32:
            fail.append("%s: dtype %s" % (name, tensors[name].dtype))
    if tensors["w0.adam.step"].item() != 15.0:
        fail.append("w0.adam.step = %s, expected 15" % tensors["w0.adam.step"].item())
    if fail:
        print("FAIL:\n  " + "\n  ".join(fail))
        return 1
    print("checkpoint loads in torch %s: %d tensors, metadata %d strings"
          % (torch.__version__, len(tensors), len(meta)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
