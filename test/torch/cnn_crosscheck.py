#!/usr/bin/env python3
"""Cross-checks mpc's CNN ops against torch.nn.functional.

Usage: cnn_crosscheck.py MPC_BINARY WORKDIR

For each small model below (conv2d with groups, dilation, stride, padding,
with and without bias; max_pool2d and avg_pool2d with and without
ceil_mode, count_include_pad both ways; global_avg_pool2d; flatten; a dense
layer and mse_loss) this writes the mpc model JSON, seeded random initial
values (init.safetensors) and data, then runs one training step with
`mpc run --steps 1 --init init.safetensors --save out.safetensors --output
y=y.npy` under SGD with lr = LR, and compares with PyTorch in float64 on the
same float32 values:

  * the forward output y (the plan output, computed before the update);
  * every parameter's gradient, read off the update as (init - out) / LR.
    LR is a power of two, so the division is exact, and large, so the
    float32 rounding of the updated value costs the gradient about one ulp
    of its own size, not of the parameter's.

Both are held to TOL relative to the largest magnitude of the tensor (the
float32 kernels sum in another order than float64 PyTorch). Skipped (exit
77, with the reason) when torch or numpy is not importable, a failure under
CI=true: the rule of torch_guard.py.
"""
import json
import os
import subprocess
import sys

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from torch_guard import np, torch  # noqa: E402
from crosscheck import read_safetensors, write_safetensors  # noqa: E402

import torch.nn.functional as F  # noqa: E402

LR = 1024.0
TOL = 1e-5

# Each model is a chain of layers applied to x [N,C,H,W]; ("dense", K) is a
# matmul with a [features, K] weight, and every model ends in mse_loss
# against a random target of the chain's result shape.
MODELS = {
    "groups_dilation_ceil": {
        "x": [2, 4, 9, 8],
        "layers": [
            ("conv2d", {"out": 6, "kernel": [3, 3], "stride": [2, 1], "padding": [1, 2],
                        "dilation": [1, 2], "groups": 2, "bias": True}),
            ("relu", {}),
            ("max_pool2d", {"kernel": [3, 2], "stride": [2, 1], "padding": [1, 1],
                            "ceil_mode": True}),
            ("conv2d", {"out": 4, "kernel": [2, 2], "dilation": [2, 1], "bias": False}),
            ("avg_pool2d", {"kernel": [2, 2], "stride": [1, 2], "padding": [1, 1],
                            "ceil_mode": True, "count_include_pad": False}),
            ("flatten", {}),
            ("dense", 3),
        ],
    },
    "stride_pad_global": {
        "x": [3, 3, 8, 8],
        "layers": [
            ("conv2d", {"out": 5, "kernel": [3, 3], "stride": [2, 2], "padding": [1, 1],
                        "bias": True}),
            ("avg_pool2d", {"kernel": [3, 3], "stride": [1, 1], "padding": [1, 1],
                            "count_include_pad": True}),
            ("conv2d", {"out": 6, "kernel": [1, 1], "bias": True}),
            ("global_avg_pool2d", {}),
            ("flatten", {}),
            ("dense", 2),
        ],
    },
    "depthwise_odd": {
        "x": [2, 3, 7, 5],
        "layers": [
            ("conv2d", {"out": 3, "kernel": [3, 2], "padding": [1, 0], "groups": 3,
                        "bias": False}),
            ("max_pool2d", {"kernel": [2, 2], "padding": [1, 1]}),
            ("avg_pool2d", {"kernel": [2, 2], "stride": [1, 1], "ceil_mode": True,
                            "count_include_pad": True}),
            ("conv2d", {"out": 4, "kernel": [2, 2], "stride": [1, 2], "dilation": [2, 1],
                        "bias": True}),
            ("flatten", {}),
            ("dense", 4),
        ],
    },
}


def torch_layer(kind, a, h, params, name):
    """Applies one layer in PyTorch (float64)."""
    if kind == "conv2d":
        return F.conv2d(h, params[name + ".w"], params.get(name + ".b"),
                        stride=tuple(a.get("stride", [1, 1])),
                        padding=tuple(a.get("padding", [0, 0])),
                        dilation=tuple(a.get("dilation", [1, 1])), groups=a.get("groups", 1))
    if kind == "relu":
        return torch.relu(h)
    if kind == "max_pool2d":
        return F.max_pool2d(h, tuple(a["kernel"]), tuple(a.get("stride", a["kernel"])),
                            tuple(a.get("padding", [0, 0])), ceil_mode=a.get("ceil_mode", False))
    if kind == "avg_pool2d":
        return F.avg_pool2d(h, tuple(a["kernel"]), tuple(a.get("stride", a["kernel"])),
                            tuple(a.get("padding", [0, 0])), ceil_mode=a.get("ceil_mode", False),
                            count_include_pad=a.get("count_include_pad", True))
    if kind == "global_avg_pool2d":
        return F.adaptive_avg_pool2d(h, 1)
    if kind == "flatten":
        return torch.flatten(h, 1)
    if kind == "dense":
        return h @ params[name + ".w"]
    raise ValueError(kind)


def build(spec, rng):
    """Initial values (float32) and the mpc JSON of a model."""
    x = rng.uniform(-1, 1, spec["x"]).astype(np.float32)
    init, nodes, cur = {}, [], "x"
    h = torch.tensor(x, dtype=torch.float64)
    for i, (kind, a) in enumerate(spec["layers"]):
        name = "l%d" % i
        node = {"name": name, "op": kind, "inputs": [cur], "device": "a"}
        if kind == "conv2d":
            cin = h.shape[1] // a.get("groups", 1)
            fan_in = cin * a["kernel"][0] * a["kernel"][1]
            w = rng.uniform(-1, 1, [a["out"], cin] + a["kernel"]) / np.sqrt(fan_in)
            init[name + ".w"] = w.astype(np.float32)
            node["inputs"].append(name + ".w")
            if a["bias"]:
                init[name + ".b"] = rng.uniform(-0.5, 0.5, [a["out"]]).astype(np.float32)
                node["inputs"].append(name + ".b")
            node["attrs"] = {k: v for k, v in a.items() if k not in ("out", "kernel", "bias")}
        elif kind == "dense":
            init[name + ".w"] = (rng.uniform(-1, 1, [h.shape[1], a]) / np.sqrt(h.shape[1])).astype(
                np.float32)
            node["op"] = "matmul"
            node["inputs"].append(name + ".w")
        elif a:
            node["attrs"] = dict(a)
        params = {k: torch.tensor(v, dtype=torch.float64) for k, v in init.items()}
        h = torch_layer(kind, a, h, params, name)
        nodes.append(node)
        cur = name
    target = rng.uniform(-1, 1, list(h.shape)).astype(np.float32)
    nodes.append({"name": "loss", "op": "mse_loss", "inputs": [cur, "target"], "device": "a"})
    model = {
        "mpc": 1, "name": "cnn",
        "inputs": {"x": {"shape": list(x.shape)}, "target": {"shape": list(target.shape)}},
        "params": {k: {"shape": list(v.shape), "init": "zeros", "device": "a"}
                   for k, v in init.items()},
        "nodes": nodes, "loss": "loss", "outputs": [cur],
        "optimizer": {"sgd": {"lr": LR}},
    }
    return model, init, x, target, cur


def torch_reference(spec, init, x, target):
    """The output and every parameter's gradient, in float64."""
    params = {k: torch.tensor(v, dtype=torch.float64, requires_grad=True) for k, v in init.items()}
    h = torch.tensor(x, dtype=torch.float64)
    for i, (kind, a) in enumerate(spec["layers"]):
        h = torch_layer(kind, a, h, params, "l%d" % i)
    loss = F.mse_loss(h, torch.tensor(target, dtype=torch.float64))
    loss.backward()
    return h.detach().numpy(), {k: p.grad.numpy() for k, p in params.items()}


def rel_diff(got, want):
    return float(np.max(np.abs(got - want)) / max(1e-30, float(np.max(np.abs(want)))))


def main():
    mpc, work = sys.argv[1:3]
    os.makedirs(work, exist_ok=True)
    rng = np.random.default_rng(11)
    failures, worst = 0, 0.0
    for label, spec in MODELS.items():
        model, init, x, target, out_name = build(spec, rng)
        d = os.path.join(work, label)
        os.makedirs(d, exist_ok=True)
        paths = {k: os.path.join(d, k) for k in
                 ("model.json", "plan.bin", "init.safetensors", "out.safetensors", "x.npy",
                  "target.npy", "y.npy")}
        with open(paths["model.json"], "w") as f:
            json.dump(model, f, indent=1)
        write_safetensors(paths["init.safetensors"], init)
        np.save(paths["x.npy"], x)
        np.save(paths["target.npy"], target)
        subprocess.run([mpc, "compile", paths["model.json"], "-o", paths["plan.bin"]], check=True)
        subprocess.run([mpc, "run", paths["plan.bin"], "--input", "x=" + paths["x.npy"],
                        "--input", "target=" + paths["target.npy"], "--steps", "1",
                        "--init", paths["init.safetensors"], "--save", paths["out.safetensors"],
                        "--save-params-only", "--output", out_name + "=" + paths["y.npy"],
                        "--log-every", "1"], check=True, stdout=subprocess.DEVNULL)
        y_ref, grads_ref = torch_reference(spec, init, x, target)
        trained = read_safetensors(paths["out.safetensors"])
        checks = [("output", np.load(paths["y.npy"]).reshape(y_ref.shape), y_ref)]
        for k in sorted(init):
            grad = (init[k].astype(np.float64) - trained[k].astype(np.float64)) / LR
            checks.append(("d " + k, grad, grads_ref[k]))
        for what, got, want in checks:
            diff = rel_diff(got, want)
            worst = max(worst, diff)
            ok = diff <= TOL
            failures += 0 if ok else 1
            print("%-22s %-10s %-20s max diff / max |torch| %.2e  %s"
                  % (label, what, "x".join(map(str, want.shape)), diff, "ok" if ok else "MISMATCH"))
    print("torch %s: %d models, worst relative difference %.2e" % (torch.__version__, len(MODELS),
                                                                    worst))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
