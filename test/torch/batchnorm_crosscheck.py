#!/usr/bin/env python3
"""Cross-checks mpc's batch_norm and softmax_cross_entropy reduction="sum"
against PyTorch.

Usage: batchnorm_crosscheck.py MPC_BINARY WORKDIR

For x of shape [N, C] and [N, C, H, W], a model x = xin + p (p a zero param,
so that p's gradient is dx), bn = batch_norm(x, g, b), loss = mse_loss(bn, y)
is trained by `mpc run --init ... --save ...` with SGD, and the same in
PyTorch with torch.nn.functional.batch_norm in training mode:

  1. one step with lr 1: the forward output (--output bn), and dx, dgamma,
     dbeta read off the parameters' change (p1 = -dx, g1 = g0 - dgamma, ...);
  2. three steps with lr 0.1: the parameters, and the running statistics
     after three updates. mpc follows MXNet: momentum 0.9 means PyTorch's
     momentum 0.1 (the conversion is 1 - momentum), and the variance folded
     in is the biased batch variance where PyTorch folds in the unbiased one.
     The running mean equals PyTorch's running_mean; the running variance
     equals the same recursion on torch.var(unbiased=False), and differs from
     PyTorch's running_var by exactly the n / (n - 1) of the variances folded
     in (checked too, so the difference is the documented one and no other);
  3. an inference plan of the same model (no loss) initialised from the
     trained checkpoint: its output against batch_norm(training=False) with
     those running statistics.

Then softmax_cross_entropy with reduction "sum" (and an ignored row) against
torch.nn.functional.cross_entropy(reduction="sum"): one SGD step's weights.

Skipped (exit 77, with the reason) when torch or numpy is not importable,
a failure under CI=true: the rule of torch_guard.py.
"""
import json
import os
import struct
import subprocess
import sys

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from torch_guard import np, torch  # noqa: E402
from st_read import read_safetensors  # noqa: E402

import torch.nn.functional as F  # noqa: E402

EPS = 1e-5
MOMENTUM = 0.9  # MXNet's convention; PyTorch's is 1 - MOMENTUM
TOL = 1e-4


def write_safetensors(path, tensors):
    header, blobs, offset = {}, [], 0
    for name in sorted(tensors):
        raw = np.ascontiguousarray(tensors[name], dtype="<f4").tobytes()
        header[name] = {"dtype": "F32", "shape": list(tensors[name].shape),
                        "data_offsets": [offset, offset + len(raw)]}
        blobs.append(raw)
        offset += len(raw)
    text = json.dumps(header).encode()
    text += b" " * ((8 - len(text) % 8) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)) + text + b"".join(blobs))


class Checker:
    def __init__(self, mpc, work):
        self.mpc, self.work, self.failures = mpc, work, 0

    def path(self, name):
        return os.path.join(self.work, name)

    def mpc_run(self, model, args):
        model_path = self.path(model["name"] + ".json")
        with open(model_path, "w") as f:
            json.dump(model, f)
        plan = self.path(model["name"] + ".bin")
        subprocess.run([self.mpc, "compile", model_path, "-o", plan], check=True)
        subprocess.run([self.mpc, "run", plan] + args, check=True, stdout=subprocess.DEVNULL)

    def compare(self, what, mine, want, tol=TOL):
        mine, want = np.asarray(mine, dtype=np.float64), np.asarray(want, dtype=np.float64)
        diff = float(np.max(np.abs(mine - want) / (1e-3 + np.abs(want)))) if want.size else 0.0
        ok = mine.shape == want.shape and diff < tol
        self.failures += 0 if ok else 1
        print("%-60s max rel diff %.2e  %s" % (what, diff, "ok" if ok else "MISMATCH"))


def bn_model(name, shape, loss, lr=None):
    c = shape[1]
    model = {
        "mpc": 1, "name": name,
        "inputs": {"xin": {"shape": shape}},
        "params": {"p": {"shape": shape, "init": "zeros"},
                   "g": {"shape": [c], "init": "ones"},
                   "b": {"shape": [c], "init": "zeros"}},
        "nodes": [{"name": "x", "op": "add", "inputs": ["xin", "p"]},
                  {"name": "bn", "op": "batch_norm", "inputs": ["x", "g", "b"],
                   "attrs": {"eps": EPS, "momentum": MOMENTUM,
                             "running_mean": "bn_moving_mean", "running_var": "bn_moving_var"}}],
        "outputs": ["bn"],
    }
    if loss:
        model["inputs"]["y"] = {"shape": shape}
        model["nodes"].append({"name": "loss", "op": "mse_loss", "inputs": ["bn", "y"]})
        model["loss"] = "loss"
        model["optimizer"] = {"sgd": {"lr": lr}}
    return model


def torch_train(init, xs, ys, lr):
    """SGD on p, g, b through F.batch_norm in training mode; returns the
    params, PyTorch's running buffers, the biased-variance running variance
    and the first step's output."""
    p = torch.tensor(init["p"], requires_grad=True)
    g = torch.tensor(init["g"], requires_grad=True)
    b = torch.tensor(init["b"], requires_grad=True)
    c = init["g"].shape[0]
    rm, rv = torch.zeros(c), torch.ones(c)
    rv_biased = torch.ones(c, dtype=torch.float64)
    opt = torch.optim.SGD([p, g, b], lr=lr)
    first = None
    axes = [0] + list(range(2, xs[0].ndim))
    for xin, y in zip(xs, ys):
        x = torch.tensor(xin) + p
        var = x.detach().double().var(dim=axes, unbiased=False)
        rv_biased = MOMENTUM * rv_biased + (1 - MOMENTUM) * var
        out = F.batch_norm(x, rm, rv, g, b, training=True, momentum=1 - MOMENTUM, eps=EPS)
        if first is None:
            first = out.detach().numpy()
        loss = torch.mean((out - torch.tensor(y)) ** 2)
        opt.zero_grad()
        loss.backward()
        opt.step()
    params = {"p": p.detach().numpy(), "g": g.detach().numpy(), "b": b.detach().numpy()}
    return params, rm.numpy(), rv.numpy(), rv_biased.numpy(), first


def check_batch_norm(ck, shape, rng):
    n = shape[0]
    tag = "x%s" % list(shape)
    c = shape[1]
    init = {"p": np.zeros(shape, np.float32),
            "g": rng.uniform(0.5, 1.5, (c,)).astype(np.float32),
            "b": rng.uniform(-0.5, 0.5, (c,)).astype(np.float32)}
    init_path = ck.path("init%s.safetensors" % len(shape))
    # The running statistics' initial values, given so that --init is silent.
    write_safetensors(init_path, dict(init, bn_moving_mean=np.zeros(c, np.float32),
                                      bn_moving_var=np.ones(c, np.float32)))
    steps = 3
    # Channels with different means and spreads, so the statistics matter.
    scale = rng.uniform(0.5, 3.0, [1, c] + [1] * (len(shape) - 2))
    shift = rng.uniform(-2.0, 2.0, [1, c] + [1] * (len(shape) - 2))
    xs = [(rng.normal(size=shape) * scale + shift).astype(np.float32) for _ in range(steps)]
    ys = [rng.normal(size=shape).astype(np.float32) for _ in range(steps)]
    xin, y = ck.path("xin%d.npy" % len(shape)), ck.path("y%d.npy" % len(shape))
    np.save(xin, np.concatenate(xs))
    np.save(y, np.concatenate(ys))

    # 1. One step with lr 1: forward output and gradients.
    out1 = ck.path("one%d.safetensors" % len(shape))
    bn1 = ck.path("bn%d.npy" % len(shape))
    ck.mpc_run(bn_model("bn_one%d" % len(shape), shape, True, 1.0),
               ["--input", "xin=" + xin, "--input", "y=" + y, "--steps", "1", "--init", init_path,
                "--save", out1, "--output", "bn=" + bn1])
    mine = read_safetensors(out1)
    ref, _, _, _, first = torch_train(init, xs[:1], ys[:1], 1.0)
    ck.compare(tag + " forward (training, batch statistics)", np.load(bn1), first)
    ck.compare(tag + " dx (through p)", -mine["p"], -ref["p"])
    ck.compare(tag + " dgamma", init["g"] - mine["g"], init["g"] - ref["g"])
    ck.compare(tag + " dbeta", init["b"] - mine["b"], init["b"] - ref["b"])

    # 2. Three steps with lr 0.1: parameters and running statistics.
    out3 = ck.path("three%d.safetensors" % len(shape))
    ck.mpc_run(bn_model("bn_three%d" % len(shape), shape, True, 0.1),
               ["--input", "xin=" + xin, "--input", "y=" + y, "--steps", str(steps),
                "--init", init_path, "--save", out3])
    mine = read_safetensors(out3)
    ref, rm, rv, rv_biased, _ = torch_train(init, xs, ys, 0.1)
    for k in ("p", "g", "b"):
        ck.compare("%s %s after %d steps" % (tag, k, steps), mine[k], ref[k])
    ck.compare(tag + " running mean vs torch (momentum 1 - 0.9)", mine["bn_moving_mean"], rm)
    ck.compare(tag + " running var vs the biased-variance recursion", mine["bn_moving_var"], rv_biased)
    # PyTorch's running_var folds in var * m / (m - 1), m elements per channel.
    m = n * int(np.prod(shape[2:]))
    rv_from_torch = MOMENTUM ** steps + (rv - MOMENTUM ** steps) * (m - 1) / m
    ck.compare(tag + " running var vs torch's, unbiased -> biased", mine["bn_moving_var"], rv_from_torch)

    # 3. Inference from the trained checkpoint: running statistics.
    xt = (rng.normal(size=shape) * scale + shift).astype(np.float32)
    xt_path, bnt = ck.path("xt%d.npy" % len(shape)), ck.path("bnt%d.npy" % len(shape))
    np.save(xt_path, xt)
    ck.mpc_run(bn_model("bn_infer%d" % len(shape), shape, False),
               ["--input", "xin=" + xt_path, "--init", out3, "--output", "bn=" + bnt])
    want = F.batch_norm(torch.tensor(xt) + torch.tensor(mine["p"]),
                        torch.tensor(mine["bn_moving_mean"]), torch.tensor(mine["bn_moving_var"]),
                        torch.tensor(mine["g"]), torch.tensor(mine["b"]), training=False, eps=EPS)
    ck.compare(tag + " inference output (loaded running statistics)", np.load(bnt), want.numpy())


def check_cross_entropy_sum(ck, rng):
    n, d, k = 6, 4, 5
    x = rng.normal(size=(n, d)).astype(np.float32)
    labels = rng.integers(0, k, size=(n,)).astype(np.int32)
    labels[2] = -100  # ignored: left out of the sum
    w0 = rng.normal(size=(d, k)).astype(np.float32)
    write_safetensors(ck.path("ce_init.safetensors"), {"w": w0})
    np.save(ck.path("ce_x.npy"), x)
    np.save(ck.path("ce_labels.npy"), labels)
    lr = 0.1
    model = {"mpc": 1, "name": "ce_sum",
             "inputs": {"x": {"shape": [n, d]}, "labels": {"shape": [n], "dtype": "i32"}},
             "params": {"w": {"shape": [d, k], "init": "zeros"}},
             "nodes": [{"name": "logits", "op": "matmul", "inputs": ["x", "w"]},
                       {"name": "loss", "op": "softmax_cross_entropy", "inputs": ["logits", "labels"],
                        "attrs": {"reduction": "sum"}}],
             "loss": "loss", "optimizer": {"sgd": {"lr": lr}}}
    out = ck.path("ce_out.safetensors")
    ck.mpc_run(model, ["--input", "x=" + ck.path("ce_x.npy"), "--input", "labels=" + ck.path("ce_labels.npy"),
                       "--steps", "1", "--init", ck.path("ce_init.safetensors"), "--save", out])
    w = torch.tensor(w0, requires_grad=True)
    loss = F.cross_entropy(torch.tensor(x) @ w, torch.tensor(labels).long(), reduction="sum",
                           ignore_index=-100)
    loss.backward()
    with torch.no_grad():
        want = w - lr * w.grad
    ck.compare("softmax_cross_entropy reduction=sum: w after one SGD step", read_safetensors(out)["w"],
               want.numpy())


def main():
    mpc, work = sys.argv[1:3]
    os.makedirs(work, exist_ok=True)
    rng = np.random.default_rng(11)
    ck = Checker(mpc, work)
    check_batch_norm(ck, [8, 3], rng)
    check_batch_norm(ck, [4, 3, 5, 5], rng)
    check_cross_entropy_sum(ck, rng)
    print("torch %s: %d mismatches" % (torch.__version__, ck.failures))
    return 1 if ck.failures else 0


if __name__ == "__main__":
    sys.exit(main())
