#!/usr/bin/env python3
"""mpc import-mxnet against MXNet's formats and formulas, from outside mpc.

1. .params round trip: a Python writer (struct + numpy, from the NDArray list
   format of MXNet's ndarray.cc: V2, V1 and legacy arrays, one float64) writes
   the weights of an MLP symbol; `mpc import-mxnet --params ... --params-out`
   converts them; the safetensors file, parsed by hand (8-byte header length,
   JSON header, raw data), holds the same values under the model's names.
2. Loss heads: for SoftmaxOutput (normalization null, batch, valid with
   use_ignore; grad_scale) and LinearRegressionOutput (grad_scale), the
   imported model trained for one SGD step of lr 1 from known weights moves
   the weights by exactly MXNet's gradient, which PyTorch computes here from
   MXNet's documented rule (grad_scale / valid_cnt * (softmax - onehot);
   grad_scale / num_output * (pred - label)) with autograd.

usage: mxnet_import.py MPC SOURCE_DIR WORK_DIR
Skipped (exit 77) where torch or numpy is missing, failing under CI=true: torch_guard.py.
"""
import json
import os
import shutil
import struct
import subprocess
import sys

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from torch_guard import np, torch  # noqa: E402

MPC, SRC, WORK = sys.argv[1:4]
V1, V2 = 0xF993FAC8, 0xF993FAC9


def nd_array(a, form="v2"):
    """One dense NDArray on cpu(0) as NDArray::Save writes it."""
    flag = {np.dtype("float32"): 0, np.dtype("float64"): 1}[a.dtype]
    out = b""
    if form == "legacy":
        out += struct.pack("<I", a.ndim) + struct.pack("<%dI" % a.ndim, *a.shape)
    else:
        out += struct.pack("<I", V2 if form == "v2" else V1)
        if form == "v2":
            out += struct.pack("<i", 0)  # dense storage
        out += struct.pack("<i", a.ndim) + struct.pack("<%dq" % a.ndim, *a.shape)
    out += struct.pack("<ii", 1, 0)  # cpu(0)
    out += struct.pack("<i", flag) + a.astype(a.dtype.newbyteorder("<")).tobytes()
    return out


def write_params(path, named):
    """mx.nd.save: list magic, reserved, arrays, names."""
    out = struct.pack("<QQQ", 0x112, 0, len(named))
    for name, a, form in named:
        out += nd_array(a, form)
    out += struct.pack("<Q", len(named))
    for name, _, _ in named:
        out += struct.pack("<Q", len(name)) + name.encode()
    open(path, "wb").write(out)


def read_safetensors(path):
    data = open(path, "rb").read()
    (n,) = struct.unpack("<Q", data[:8])
    header = json.loads(data[8:8 + n])
    body = data[8 + n:]
    out = {}
    for name, info in header.items():
        if name == "__metadata__":
            continue
        assert info["dtype"] == "F32", info
        b, e = info["data_offsets"]
        out[name] = np.frombuffer(body[b:e], dtype="<f4").reshape(info["shape"])
    return out


def npy(path, a):
    np.save(path, a)


def mpc(*args):
    r = subprocess.run([MPC] + list(args), capture_output=True, text=True)
    if r.returncode != 0:
        print("FAIL: mpc %s\n%s%s" % (" ".join(args), r.stdout, r.stderr))
        sys.exit(1)
    return r.stdout


def symbol(head_op, head_attrs, hidden):
    """data -> FullyConnected(no_bias) -> head, MXNet 1.x JSON."""
    return {"nodes": [
        {"op": "null", "name": "data", "inputs": []},
        {"op": "null", "name": "fc_weight", "inputs": []},
        {"op": "FullyConnected", "name": "fc",
         "attrs": {"num_hidden": str(hidden), "no_bias": "True"}, "inputs": [[0, 0, 0], [1, 0, 0]]},
        {"op": "null", "name": "out_label", "inputs": []},
        {"op": head_op, "name": "out", "attrs": head_attrs, "inputs": [[2, 0, 0], [3, 0, 0]]}],
        "heads": [[4, 0, 0]], "attrs": {"mxnet_version": ["int", 10500]}}


def check_params_round_trip():
    rng = np.random.default_rng(1)
    named = [("arg:fc1_weight", rng.standard_normal((8, 4)).astype(np.float32), "v2"),
             ("arg:fc1_bias", rng.standard_normal(8).astype(np.float32), "legacy"),
             ("arg:fc2_weight", rng.standard_normal((3, 8)), "v1"),  # float64
             ("arg:fc2_bias", rng.standard_normal(3).astype(np.float32), "v2")]
    params = os.path.join(WORK, "mlp.params")
    write_params(params, named)
    out = os.path.join(WORK, "init.safetensors")
    mpc("import-mxnet", os.path.join(SRC, "test/lit/import-mxnet/Inputs/mlp-1.x-symbol.json"),
        "-o", os.path.join(WORK, "mlp.json"), "--input", "data=16,4", "--params", params,
        "--params-out", out)
    got = read_safetensors(out)
    assert sorted(got) == sorted(n[4:] for n, _, _ in named), sorted(got)
    for name, a, _ in named:
        np.testing.assert_array_equal(got[name[4:]], a.astype(np.float32))
    # The converted file starts a run: mpc run --init accepts it.
    plan = os.path.join(WORK, "mlp.bin")
    mpc("compile", os.path.join(WORK, "mlp.json"), "-o", plan)
    npy(os.path.join(WORK, "x.npy"), rng.standard_normal((16, 4)).astype(np.float32))
    npy(os.path.join(WORK, "y.npy"), rng.integers(0, 3, 16).astype(np.int32))
    mpc("run", plan, "--input", "data=" + os.path.join(WORK, "x.npy"), "--input",
        "softmax_label=" + os.path.join(WORK, "y.npy"), "--init", out, "--steps", "1")
    print("params round trip: ok")


def check_head(tag, head_op, attrs, hidden, labels_fn):
    rng = np.random.default_rng(sum(tag.encode()))
    n, k = 6, 4
    x = rng.standard_normal((n, k)).astype(np.float32)
    w0 = rng.standard_normal((hidden, k)).astype(np.float32)
    labels, label_arg = labels_fn(rng, n, hidden)
    d = os.path.join(WORK, tag)
    os.makedirs(d, exist_ok=True)
    json.dump(symbol(head_op, attrs, hidden), open(os.path.join(d, "s.json"), "w"))
    write_params(os.path.join(d, "w.params"), [("arg:fc_weight", w0, "v2")])
    mpc("import-mxnet", os.path.join(d, "s.json"), "-o", os.path.join(d, "m.json"),
        "--input", "data=%d,%d" % (n, k), "--input", label_arg, "--lr", "1",
        "--params", os.path.join(d, "w.params"), "--params-out", os.path.join(d, "w0.safetensors"))
    mpc("compile", os.path.join(d, "m.json"), "-o", os.path.join(d, "m.bin"))
    npy(os.path.join(d, "x.npy"), x)
    npy(os.path.join(d, "y.npy"), labels)
    mpc("run", os.path.join(d, "m.bin"), "--input", "data=" + os.path.join(d, "x.npy"),
        "--input", "out_label=" + os.path.join(d, "y.npy"), "--steps", "1",
        "--init", os.path.join(d, "w0.safetensors"), "--save", os.path.join(d, "w1.safetensors"))
    w1 = read_safetensors(os.path.join(d, "w1.safetensors"))["fc_weight"]

    # MXNet's gradient, from its rule, with PyTorch autograd.
    xt = torch.tensor(x, dtype=torch.float64)
    wt = torch.tensor(w0, dtype=torch.float64, requires_grad=True)
    pred = xt @ wt.T
    gs = float(attrs.get("grad_scale", "1"))
    if head_op == "SoftmaxOutput":
        lt = torch.tensor(labels, dtype=torch.long)
        use_ignore = attrs.get("use_ignore") == "True"
        ignore = int(float(attrs.get("ignore_label", "-1")))
        norm = attrs.get("normalization", "null")
        valid = {"null": 1, "batch": n,
                 "valid": max(1, int((lt != ignore).sum()) if use_ignore else n)}[norm]
        # sum_rows CE has the gradient softmax - onehot per row (0 on ignored rows)
        ce = torch.nn.functional.cross_entropy(pred, lt, reduction="sum",
                                               ignore_index=ignore if use_ignore else -100)
        (gs / valid * ce).backward()
    else:
        m = hidden  # label elements per row
        lt = torch.tensor(labels, dtype=torch.float64)
        (gs / m * 0.5 * ((pred - lt) ** 2).sum()).backward()
    want = w0.astype(np.float64) - wt.grad.numpy()
    err = np.abs(w1 - want).max()
    assert err < 2e-5 * max(1.0, np.abs(want).max()), (tag, err, w1, want)
    print("%s: ok (max error %.2g)" % (tag, err))


def class_labels(ignore_rows=()):
    def fn(rng, n, c):
        y = rng.integers(1, c, n).astype(np.int32)
        for r in ignore_rows:
            y[r] = 0
        return y, "out_label=%d:i32" % n
    return fn


def regression_labels(rng, n, m):
    return rng.standard_normal((n, m)).astype(np.float32), "out_label=%d,%d" % (n, m)


def main():
    shutil.rmtree(WORK, ignore_errors=True)
    os.makedirs(WORK)
    check_params_round_trip()
    check_head("softmax-null", "SoftmaxOutput", {}, 5, class_labels())
    check_head("softmax-null-scaled", "SoftmaxOutput", {"grad_scale": "0.5"}, 5, class_labels())
    check_head("softmax-batch", "SoftmaxOutput", {"normalization": "batch", "grad_scale": "3"}, 5,
               class_labels())
    check_head("softmax-valid-ignore", "SoftmaxOutput",
               {"normalization": "valid", "use_ignore": "True", "ignore_label": "0"}, 5,
               class_labels(ignore_rows=(1, 4)))
    check_head("regression", "LinearRegressionOutput", {"grad_scale": "0.7"}, 2, regression_labels)
    print("ok")


if __name__ == "__main__":
    main()
