#!/usr/bin/env python3
"""The GPT of make_model.py in PyTorch: the reference for tests and benchmarks.

Three things, used by test/torch/gpt_crosscheck.py and bench/compare-gpt.py:
  * gpt_loss(): a plain functional implementation of the model (torch ops,
    parameters in a dict under the JSON's names), written from the
    architecture, not from the JSON, so that it checks make_model.py too;
  * interpret(): runs a model JSON node by node with the op semantics of
    docs/ops.md, accepting only the ops and attributes the GPT uses (so a
    typo in an op or attribute name fails here, before mpc sees it);
  * a trainer (`gpt_torch.py MODEL.json --data DIR --steps N`) that trains
    the functional model on prepare_data.py's files with torch.optim.Adam,
    batches in file order as `mpc run` feeds them, and prints the losses:
    what PyTorch reaches on the same model, for comparison with mpc.
"""
import argparse
import json
import math
import os
import sys
import time

import numpy as np
import torch
import torch.nn.functional as F


def config(model):
    """The hyper-parameters of a make_model.py JSON, read back from it."""
    params = model["params"]
    nodes = {n["name"]: n for n in model["nodes"]}
    blocks = sum(1 for k in params if k.endswith(".ln1.g"))
    drops = [n["attrs"]["p"] for n in model["nodes"] if n["op"] == "dropout"]
    opt = model.get("optimizer", {"adam": {}})
    return {
        "blocks": blocks,
        "vocab": params["wte"]["shape"][0],
        "d": params["wte"]["shape"][1],
        "context": params["wpe"]["shape"][0],
        "batch": model["inputs"]["x"]["shape"][0],
        "heads": nodes["h0.attn.q.split"]["attrs"]["shape"][2],
        "eps": nodes["lnf"].get("attrs", {}).get("eps", 1e-5),
        "dropout": drops[0] if drops else 0.0,
        "lr": opt.get("adam", {}).get("lr", 1e-3),
    }


def gpt_loss(P, x, y, cfg, train=False):
    """Mean next-character cross-entropy of the batch x -> y (both [B, T] ints)."""
    B, T = x.shape
    D, H = cfg["d"], cfg["heads"]
    hd, eps = D // H, cfg["eps"]
    p = cfg["dropout"] if train else 0.0
    drop = (lambda t: F.dropout(t, p, True)) if p > 0 else (lambda t: t)
    future = torch.ones(T, T, dtype=torch.bool, device=x.device).triu(1)  # j > i
    h = drop(F.embedding(x.long(), P["wte"]) + P["wpe"])
    for i in range(cfg["blocks"]):
        b = "h%d." % i
        a = F.layer_norm(h, (D,), P[b + "ln1.g"], P[b + "ln1.b"], eps)
        if b + "attn.qkv.w" in P:
            qkv = a @ P[b + "attn.qkv.w"] + P[b + "attn.qkv.b"]
            parts = qkv.split(D, dim=2)
        else:  # make_model.py --tensor-parallel: q, k and v of their own
            parts = [a @ P[b + "attn.%s.w" % n] + P[b + "attn.%s.b" % n] for n in "qkv"]
        q, k, v = (t.reshape(B, T, H, hd).transpose(1, 2) for t in parts)
        s = (q @ k.transpose(-1, -2)) * (1.0 / math.sqrt(hd))
        s = drop(torch.softmax(s.masked_fill(future, -1e9), dim=-1))
        c = (s @ v).transpose(1, 2).reshape(B, T, D)
        h = h + drop(c @ P[b + "attn.proj.w"] + P[b + "attn.proj.b"])
        m = F.layer_norm(h, (D,), P[b + "ln2.g"], P[b + "ln2.b"], eps)
        m = F.gelu(m @ P[b + "mlp.fc.w"] + P[b + "mlp.fc.b"], approximate="tanh")
        h = h + drop(m @ P[b + "mlp.proj.w"] + P[b + "mlp.proj.b"])
    h = F.layer_norm(h, (D,), P["lnf.g"], P["lnf.b"], eps)
    logits = h @ P["wte"].t()
    return F.cross_entropy(logits.reshape(B * T, -1), y.reshape(-1).long())


# The ops make_model.py may write, with their attributes and defaults (the
# spec the C++ side implements; docs/ops.md).
OPS = {
    "matmul": {"transpose_a": False, "transpose_b": False},
    "layer_norm": {"eps": 1e-5},
    "embedding": {},
    "causal_mask": {"value": -1e9},
    "gelu": {"approximate": "none"},
    "dropout": {"p": 0.5},
    "slice": {"axis": 0, "start": None, "end": None},
    "concat": {"axis": 0},
    "add": {}, "mul": {}, "scale": {"value": 1.0},
    "reshape": {"shape": None}, "transpose": {"perm": []},
    "softmax": {"axis": -1},
    "softmax_cross_entropy": {"ignore_index": -100},
    "sum": {"axes": [], "keepdims": False}, "mean": {"axes": [], "keepdims": False},
}


def _apply(op, xs, a, train):
    if op == "matmul":
        l, r = xs[0], xs[1]
        if a["transpose_a"]:
            l = l.transpose(-1, -2)
        if a["transpose_b"]:
            r = r.transpose(-1, -2)
        return l @ r
    if op == "layer_norm":
        return F.layer_norm(xs[0], xs[0].shape[-1:], xs[1], xs[2], a["eps"])
    if op == "embedding":
        return F.embedding(xs[0].long(), xs[1])
    if op == "causal_mask":
        n, m = xs[0].shape[-2:]
        return xs[0].masked_fill(torch.ones(n, m, dtype=torch.bool).triu(1), a["value"])
    if op == "gelu":
        return F.gelu(xs[0], approximate=a["approximate"])
    if op == "dropout":
        return F.dropout(xs[0], a["p"], True) if train and a["p"] > 0 else xs[0]
    if op == "slice":
        return xs[0].narrow(a["axis"], a["start"], a["end"] - a["start"])
    if op == "concat":
        return torch.cat(xs, dim=a["axis"])
    if op == "add":
        return xs[0] + xs[1]
    if op == "mul":
        return xs[0] * xs[1]
    if op == "scale":
        return xs[0] * a["value"]
    if op == "reshape":
        return xs[0].reshape(a["shape"])
    if op == "transpose":
        return xs[0].permute(a["perm"] or list(reversed(range(xs[0].dim()))))
    if op == "softmax":
        return torch.softmax(xs[0], dim=a["axis"])
    if op == "softmax_cross_entropy":
        assert xs[1].shape == xs[0].shape[:-1], "logits [..., C], labels [...]"
        c = xs[0].shape[-1]  # logits [..., C] against labels [...]
        return F.cross_entropy(xs[0].reshape(-1, c), xs[1].reshape(-1).long(),
                               ignore_index=a["ignore_index"])
    if op in ("sum", "mean"):
        f = torch.sum if op == "sum" else torch.mean
        return f(xs[0], dim=a["axes"] or list(range(xs[0].dim())), keepdim=a["keepdims"])
    raise AssertionError(op)


def interpret(model, values, train=False):
    """Every node of a model JSON, evaluated from `values` (inputs and
    params by name); returns the dict of all values. Raises ValueError for
    an op or attribute outside OPS."""
    values = dict(values)
    nodes = {n["name"]: n for n in model["nodes"]}
    for n in model["nodes"]:
        if n["op"] not in OPS:
            raise ValueError("node %s: op '%s' is not one make_model.py may use" % (n["name"], n["op"]))
        extra = set(n.get("attrs", {})) - set(OPS[n["op"]])
        if extra:
            raise ValueError("node %s (%s): unknown attributes %s" % (n["name"], n["op"], sorted(extra)))

    def get(name):
        if name not in values:
            n = nodes[name]
            a = dict(OPS[n["op"]], **n.get("attrs", {}))
            if None in a.values():
                raise ValueError("node %s (%s): missing required attribute" % (name, n["op"]))
            values[name] = _apply(n["op"], [get(i) for i in n["inputs"]], a, train)
        return values[name]
    for name in nodes:
        get(name)
    return values


def init_params(model, seed=0, dtype=torch.float32):
    """Parameters drawn from the JSON's initialisers (the distributions, not
    mpc's exact numbers)."""
    g = torch.Generator().manual_seed(seed)
    out = {}
    for name, spec in model["params"].items():
        init, shape = spec["init"], spec["shape"]
        if init in ("zeros", "ones"):
            t = (torch.zeros if init == "zeros" else torch.ones)(shape, dtype=dtype)
        elif "normal" in init:
            t = torch.randn(shape, generator=g, dtype=dtype) * init["normal"].get("std", 0.01) \
                + init["normal"].get("mean", 0.0)
        elif "constant" in init:
            t = torch.full(shape, float(init["constant"]), dtype=dtype)
        else:
            raise ValueError("%s: initialiser %s not supported here" % (name, init))
        out[name] = t.requires_grad_()
    return out


def order(model):
    """Parameter names in file order: the optimizer's parameter order."""
    return list(model["params"])


def eval_loss(P, cfg, vx, vy, batch):
    """Mean of the per-batch losses over whole batches, as the --eval plan's
    `--output loss=` file averages to."""
    steps = len(vx) // batch
    with torch.no_grad():
        losses = [gpt_loss(P, torch.from_numpy(vx[s * batch:(s + 1) * batch]),
                           torch.from_numpy(vy[s * batch:(s + 1) * batch]), cfg).item()
                  for s in range(steps)]
    return float(np.mean(losses)) if losses else float("nan")


def main():
    ap = argparse.ArgumentParser(description="Train make_model.py's GPT in PyTorch "
                                 "(Adam, batches in file order, like mpc run)")
    ap.add_argument("model", help="model JSON written by make_model.py (training variant)")
    ap.add_argument("--data", required=True, help="prepare_data.py output folder")
    ap.add_argument("--steps", type=int, default=200)
    ap.add_argument("--log-every", type=int, default=50)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--shuffle", action="store_true",
                    help="shuffle the rows each epoch (numpy, seeded; not mpc's order)")
    ap.add_argument("--threads", type=int, default=1, help="torch.set_num_threads (default 1)")
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    torch.manual_seed(args.seed)
    with open(args.model) as f:
        model = json.load(f)
    cfg = config(model)
    P = init_params(model, args.seed)
    opt = torch.optim.Adam([P[k] for k in order(model)], lr=cfg["lr"])
    load = lambda n: np.load(os.path.join(args.data, n + ".npy"))
    tx, ty, vx, vy = load("train_x"), load("train_y"), load("val_x"), load("val_y")
    B = cfg["batch"]
    per_epoch = len(tx) // B
    rng = np.random.default_rng(args.seed)
    rows = np.arange(len(tx))
    t0 = time.time()
    for s in range(args.steps):
        if args.shuffle and s % per_epoch == 0:
            rows = rng.permutation(len(tx))
        r = rows[(s % per_epoch) * B:(s % per_epoch + 1) * B]
        loss = gpt_loss(P, torch.from_numpy(tx[r]), torch.from_numpy(ty[r]), cfg, True)
        opt.zero_grad()
        loss.backward()
        opt.step()
        if (s + 1) % args.log_every == 0 or s + 1 == args.steps:
            print("step %d loss %g" % (s + 1, loss.item()), flush=True)
    dt = time.time() - t0
    print("%d steps in %.1f s (%.1f ms/step); validation loss %.4f"
          % (args.steps, dt, 1e3 * dt / max(args.steps, 1), eval_loss(P, cfg, vx, vy, B)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
