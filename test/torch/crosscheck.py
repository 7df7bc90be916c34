#!/usr/bin/env python3
"""Cross-checks mpc's training against PyTorch's torch.optim.

Usage: crosscheck.py MPC_BINARY DATA_GENERATOR SOURCE_DIR WORKDIR

For the seed model (examples/regression3) under several optimizer settings,
this writes an initial checkpoint, trains N steps with `mpc run --init ...
--save ...`, trains the same network in PyTorch from the same values on the
same batches (file order), and compares the parameters. It also reads mpc's
NPY and safetensors files with numpy and a plain safetensors parser written
from the format's specification, so it checks those formats too.

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

STEPS = 60
BATCH = 100


def read_safetensors(path):
    with open(path, "rb") as f:
        data = f.read()
    (n,) = struct.unpack("<Q", data[:8])
    header = json.loads(data[8:8 + n])
    base = 8 + n
    out = {}
    for name, info in header.items():
        if name == "__metadata__":
            continue
        assert info["dtype"] == "F32", info
        begin, end = info["data_offsets"]
        out[name] = np.frombuffer(data[base + begin:base + end], dtype="<f4").reshape(info["shape"]).copy()
    return out


def write_safetensors(path, tensors):
    header, blobs, offset = {}, [], 0
    for name in sorted(tensors):
        arr = np.ascontiguousarray(tensors[name], dtype="<f4")
        raw = arr.tobytes()
        header[name] = {"dtype": "F32", "shape": list(arr.shape), "data_offsets": [offset, offset + len(raw)]}
        blobs.append(raw)
        offset += len(raw)
    text = json.dumps(header).encode()
    text += b" " * ((8 - len(text) % 8) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)) + text + b"".join(blobs))


def torch_train(init, x, y, optimizer, mults=None):
    """mults: param -> (lr_mult, wd_mult), as torch parameter groups with
    lr * lr_mult and weight_decay * wd_mult."""
    params = {k: torch.tensor(v, dtype=torch.float32, requires_grad=True) for k, v in init.items()}
    kind, hyper = next(iter(optimizer.items()))
    order = ["w0", "b0", "w1", "b1", "w2", "b2"]
    plist = [params[k] for k in order]
    if mults:
        wd = hyper.get("weight_decay", 0.01 if kind == "adamw" else 0.0)
        plist = [{"params": [params[k]], "lr": hyper["lr"] * mults.get(k, (1, 1))[0],
                  "weight_decay": wd * mults.get(k, (1, 1))[1]} for k in order]
    if kind == "sgd":
        opt = torch.optim.SGD(plist, lr=hyper["lr"], momentum=hyper.get("momentum", 0.0),
                              dampening=hyper.get("dampening", 0.0),
                              weight_decay=hyper.get("weight_decay", 0.0),
                              nesterov=hyper.get("nesterov", False))
    elif kind == "adam":
        opt = torch.optim.Adam(plist, lr=hyper["lr"], weight_decay=hyper.get("weight_decay", 0.0))
    else:
        opt = torch.optim.AdamW(plist, lr=hyper["lr"], weight_decay=hyper.get("weight_decay", 0.01))
    losses = []
    for s in range(STEPS):
        xb = torch.tensor(x[s * BATCH:(s + 1) * BATCH])
        yb = torch.tensor(y[s * BATCH:(s + 1) * BATCH])
        z0 = xb @ params["w0"] + params["b0"]
        z1 = z0 @ params["w1"] + params["b1"]
        z2 = z1 @ params["w2"] + params["b2"]
        loss = torch.mean((z2 - yb) ** 2)
        opt.zero_grad()
        loss.backward()
        opt.step()
        losses.append(loss.item())
    return {k: v.detach().numpy() for k, v in params.items()}, losses


def main():
    mpc, gen, src, work = sys.argv[1:5]
    os.makedirs(work, exist_ok=True)
    subprocess.run([gen, work, "--rows", str(STEPS * BATCH)], check=True, stdout=subprocess.DEVNULL)
    x = np.load(os.path.join(work, "x.npy"))
    y = np.load(os.path.join(work, "y.npy"))
    assert x.dtype == np.float32 and x.shape == (STEPS * BATCH, 2), (x.dtype, x.shape)
    assert y.dtype == np.float32 and y.shape == (STEPS * BATCH, 1), (y.dtype, y.shape)

    with open(os.path.join(src, "examples", "regression3", "model.json")) as f:
        model = json.load(f)
    rng = np.random.default_rng(7)
    init = {"w0": rng.uniform(-1, 1, (2, 2)), "b0": rng.uniform(-1, 1, (2,)),
            "w1": rng.uniform(-1, 1, (2, 2)), "b1": rng.uniform(-1, 1, (2,)),
            "w2": rng.uniform(-1, 1, (2, 1)), "b2": rng.uniform(-1, 1, (1,))}
    init = {k: v.astype(np.float32) for k, v in init.items()}
    init_path = os.path.join(work, "init.safetensors")
    write_safetensors(init_path, init)

    cases = [
        {"adam": {"lr": 0.01}},
        {"adam": {"lr": 0.01, "weight_decay": 0.05}},
        {"adamw": {"lr": 0.01, "weight_decay": 0.05}},
        {"sgd": {"lr": 0.01}},
        {"sgd": {"lr": 0.01, "momentum": 0.9, "dampening": 0.1, "weight_decay": 0.01}},
        {"sgd": {"lr": 0.01, "momentum": 0.9, "nesterov": True}},
        # Per-parameter lr_mult / wd_mult (model params keys) against torch
        # parameter groups: b0 frozen, w0 slower with more decay, b2 no decay.
        ({"sgd": {"lr": 0.01, "momentum": 0.9, "weight_decay": 0.05}},
         {"w0": (0.5, 2.0), "b0": (0.0, 1.0), "b2": (1.0, 0.0)}),
        ({"adam": {"lr": 0.01, "weight_decay": 0.05}}, {"w1": (2.0, 0.5), "b0": (0.0, 0.0)}),
    ]
    worst = 0.0
    failures = 0
    base_params = json.loads(json.dumps(model["params"]))
    for i, case in enumerate(cases):
        optimizer, mults = case if isinstance(case, tuple) else (case, {})
        model["optimizer"] = optimizer
        model["params"] = json.loads(json.dumps(base_params))
        for k, (lr_mult, wd_mult) in mults.items():
            model["params"][k]["lr_mult"] = lr_mult
            model["params"][k]["wd_mult"] = wd_mult
        model_path = os.path.join(work, "model%d.json" % i)
        with open(model_path, "w") as f:
            json.dump(model, f)
        plan = os.path.join(work, "plan%d.bin" % i)
        out = os.path.join(work, "trained%d.safetensors" % i)
        subprocess.run([mpc, "compile", model_path, "-o", plan], check=True)
        subprocess.run([mpc, "run", plan, "--input", "x=" + os.path.join(work, "x.npy"),
                        "--input", "y=" + os.path.join(work, "y.npy"), "--steps", str(STEPS),
                        "--init", init_path, "--save", out, "--log-every", str(STEPS)],
                       check=True, stdout=subprocess.DEVNULL)
        mine = read_safetensors(out)
        ref, losses = torch_train(init, x, y, optimizer, mults)
        for k, (lr_mult, _) in mults.items():
            if lr_mult == 0 and not np.array_equal(mine[k], init[k]):
                print("%s has lr_mult 0 but changed" % k)
                failures += 1
        diff = max(float(np.max(np.abs(mine[k] - ref[k]) / (1e-3 + np.abs(ref[k])))) for k in ref)
        worst = max(worst, diff)
        ok = diff < 1e-4
        failures += 0 if ok else 1
        print("%-60s loss %.4g -> %.4g  max rel diff vs torch %.2e  %s"
              % (json.dumps(optimizer) + (" mults" if mults else ""), losses[0], losses[-1], diff, "ok" if ok else "MISMATCH"))
    print("torch %s: %d cases, worst relative difference %.2e" % (torch.__version__, len(cases), worst))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
