#!/usr/bin/env python3
"""Cross-checks an imported MXNet LeNet, trained by mpc, against PyTorch.

Usage: lenet_crosscheck.py MPC_BINARY SOURCE_DIR WORKDIR

The model is the Fashion-MNIST example's symbol file
(examples/fashion-mnist/lenet-symbol.json: conv 5x5 -> batch norm -> relu ->
max pool, twice, then flatten, two dense layers and SoftmaxOutput, in two
ctx_groups). This script:

  1. takes the first STEPS * BATCH images of Debian's dataset-fashion-mnist
     (examples/fashion-mnist/prepare_data.py);
  2. draws seeded random initial values and writes them as an MXNet `.params`
     file, encoded here byte by byte from MXNet's NDArray list format
     (independently of mpc's reader): magic 0x112, reserved, the array count,
     each array as V2 (magic 0xF993FAC9, storage type, int32 rank, int64 dims,
     context, dtype flag, data), then the names with `arg:`/`aux:` prefixes;
  3. `mpc import-mxnet --params ... --params-out init.safetensors`, and
     checks that the safetensors file holds exactly those values under
     MXNet's names (batch-norm running statistics from `aux:`);
  4. compiles with the groups mapped to cpu:0 and cpu:1, for M = 1 and 2
     micro-batches, runs STEPS SGD steps from init.safetensors, and compares
     every parameter and running statistic with PyTorch's, trained the same
     way: conv2d, batch_norm in training mode, max_pool2d, linear,
     cross-entropy averaged over the batch (SoftmaxOutput with
     normalization "batch"), torch.optim.SGD. Under M micro-batches each
     micro-batch has its own batch statistics and updates the running
     statistics in turn (docs/ops.md, batch_norm), and the step's gradient is
     the mean of the micro-batch gradients; the PyTorch side does the same.

The running statistics follow mpc's (MXNet's) convention, docs/ops.md:
running = momentum * running + (1 - momentum) * batch statistic, with the
biased batch variance. Tolerance: float32 with different
summation orders; 2e-5 relative to each tensor's largest magnitude, plus
1e-6.

  5. compiles with --precision=bf16 and compares with PyTorch trained under
     torch.autocast("cpu", dtype=torch.bfloat16): each tensor within 3 times
     autocast's own largest move from float32 (both round to bf16, at
     different points), plus the float32 tolerance; every saved tensor is
     float32 (master weights).

Skipped (exit 77, with the reason) when torch, numpy or the dataset is
missing, a failure under CI=true: the rule of torch_guard.py.
"""
import os
import struct
import subprocess
import sys

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from torch_guard import np, skip_or_fail, torch  # noqa: E402
from crosscheck import read_safetensors  # noqa: E402

STEPS = 3
BATCH = 8
LR = 0.1
MOMENTUM = 0.9  # the symbol's BatchNorm momentum (MXNet's convention)
EPS = 1e-5      # the symbol's BatchNorm eps
MICROBATCHES = (1, 2)
RTOL = 2e-5
BF16_FACTOR = 3.0
DATASET = "/usr/share/datasets/fashion-mnist"


def sh(cmd):
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        print("error: %s exited with %d\n%s%s" % (" ".join(cmd), r.returncode, r.stdout, r.stderr))
        sys.exit(1)
    return r.stdout + r.stderr


def encode_params(arrays):
    """MXNet's NDArray list file (ndarray.cc, NDArray::Save, V2) from
    [(name, float32 array)]."""
    out = [struct.pack("<QQ", 0x112, 0), struct.pack("<Q", len(arrays))]
    for _, a in arrays:
        a = np.ascontiguousarray(a, dtype="<f4")
        out.append(struct.pack("<Ii", 0xF993FAC9, 0))              # magic, dense storage
        out.append(struct.pack("<i", a.ndim) + struct.pack("<%dq" % a.ndim, *a.shape))
        out.append(struct.pack("<ii", 1, 0))                       # context: cpu(0)
        out.append(struct.pack("<i", 0))                           # dtype flag: float32
        out.append(a.tobytes())
    out.append(struct.pack("<Q", len(arrays)))
    for name, _ in arrays:
        raw = name.encode()
        out.append(struct.pack("<Q", len(raw)) + raw)
    return b"".join(out)


def initial_values(rng):
    """name -> array, with MXNet's shapes (FullyConnected weight [out, in])."""
    def normal(*shape, scale):
        return (rng.standard_normal(shape) * scale).astype(np.float32)
    v = {
        "conv1_weight": normal(20, 1, 5, 5, scale=0.2), "conv1_bias": normal(20, scale=0.1),
        "bn1_gamma": (1 + normal(20, scale=0.1)), "bn1_beta": normal(20, scale=0.1),
        "conv2_weight": normal(50, 20, 5, 5, scale=0.05), "conv2_bias": normal(50, scale=0.1),
        "bn2_gamma": (1 + normal(50, scale=0.1)), "bn2_beta": normal(50, scale=0.1),
        "fc1_weight": normal(500, 800, scale=0.035), "fc1_bias": normal(500, scale=0.1),
        "fc2_weight": normal(10, 500, scale=0.045), "fc2_bias": normal(10, scale=0.1),
    }
    aux = {
        "bn1_moving_mean": normal(20, scale=0.1), "bn1_moving_var": (1 + rng.random(20)).astype(np.float32),
        "bn2_moving_mean": normal(50, scale=0.1), "bn2_moving_var": (1 + rng.random(50)).astype(np.float32),
    }
    return v, aux


def torch_train(args, aux, x, y, microbatches, autocast=False):
    """STEPS SGD steps of the LeNet in float32 (or under CPU autocast to
    bf16: convolutions and linear layers in bf16); returns name -> array."""
    F = torch.nn.functional
    p = {k: torch.tensor(a, requires_grad=True) for k, a in args.items()}
    run = {k: torch.tensor(a) for k, a in aux.items()}
    opt = torch.optim.SGD(list(p.values()), lr=LR)

    def bn(h, name):
        mean = h.mean(dim=(0, 2, 3))
        var = h.var(dim=(0, 2, 3), unbiased=False)
        with torch.no_grad():
            # The biased batch variance, as MXNet (PyTorch would fold in
            # the unbiased one).
            run[name + "_moving_mean"].mul_(MOMENTUM).add_((1 - MOMENTUM) * mean)
            run[name + "_moving_var"].mul_(MOMENTUM).add_((1 - MOMENTUM) * var)
        shape = (1, -1, 1, 1)
        return ((h - mean.view(shape)) / torch.sqrt(var.view(shape) + EPS) * p[name + "_gamma"].view(shape)
                + p[name + "_beta"].view(shape))

    def forward(xb):
        h = F.conv2d(xb, p["conv1_weight"], p["conv1_bias"])
        h = F.max_pool2d(F.relu(bn(h, "bn1")), 2, 2)
        h = F.conv2d(h, p["conv2_weight"], p["conv2_bias"])
        h = F.max_pool2d(F.relu(bn(h, "bn2")), 2, 2)
        h = h.flatten(1)
        h = F.relu(F.linear(h, p["fc1_weight"], p["fc1_bias"]))
        return F.linear(h, p["fc2_weight"], p["fc2_bias"])

    for s in range(STEPS):
        xs = torch.tensor(x[s * BATCH:(s + 1) * BATCH])
        ys = torch.tensor(y[s * BATCH:(s + 1) * BATCH]).long()
        opt.zero_grad()
        m = BATCH // microbatches
        for k in range(microbatches):
            with torch.autocast("cpu", dtype=torch.bfloat16, enabled=autocast):
                logits = forward(xs[k * m:(k + 1) * m])
            loss = F.cross_entropy(logits.float(), ys[k * m:(k + 1) * m]) / microbatches
            loss.backward()
        opt.step()
    out = {k: t.detach().numpy() for k, t in p.items()}
    out.update({k: t.numpy() for k, t in run.items()})
    return out


def main():
    mpc, src, work = sys.argv[1:4]
    os.makedirs(work, exist_ok=True)
    if not os.path.isdir(DATASET):
        skip_or_fail("%s missing" % DATASET, "install Debian's dataset-fashion-mnist")

    data = os.path.join(work, "data")
    sh([sys.executable, os.path.join(src, "examples", "fashion-mnist", "prepare_data.py"),
        "--out", data, "--train-limit", str(STEPS * BATCH), "--test-limit", "1"])
    x = np.load(os.path.join(data, "train_x.npy"))
    y = np.load(os.path.join(data, "train_y.npy"))

    args, aux = initial_values(np.random.default_rng(7))
    params = os.path.join(work, "lenet.params")
    with open(params, "wb") as f:
        f.write(encode_params([("arg:" + k, v) for k, v in args.items()] +
                              [("aux:" + k, v) for k, v in aux.items()]))
    symbol = os.path.join(src, "examples", "fashion-mnist", "lenet-symbol.json")
    model = os.path.join(work, "model.json")
    init = os.path.join(work, "init.safetensors")
    sh([mpc, "import-mxnet", symbol, "-o", model, "--input", "data=%d,1,28,28" % BATCH,
        "--params", params, "--params-out", init])
    loaded = read_safetensors(init)
    expected = dict(args, **aux)
    if sorted(loaded) != sorted(expected):
        print("error: %s holds %s, expected %s" % (init, sorted(loaded), sorted(expected)))
        return 1
    for k, v in expected.items():
        if loaded[k].shape != v.shape or not np.array_equal(loaded[k], v):
            print("error: %s: %s differs from the .params file" % (init, k))
            return 1
    print("params: %d arrays round-trip through .params -> safetensors bit for bit" % len(expected))

    failures = 0
    for m in MICROBATCHES:
        plan = os.path.join(work, "plan-m%d.bin" % m)
        out = os.path.join(work, "out-m%d.safetensors" % m)
        sh([mpc, "compile", model, "--map", "dev1=cpu:0,dev2=cpu:1", "--optimizer", "sgd",
            "--lr", str(LR), "--microbatches", str(m), "-o", plan])
        sh([mpc, "run", plan, "--input", "data=" + os.path.join(data, "train_x.npy"),
            "--input", "softmax_label=" + os.path.join(data, "train_y.npy"),
            "--steps", str(STEPS), "--init", init, "--save", out])
        got = read_safetensors(out)
        want = torch_train(args, aux, x, y, m)
        worst = 0.0
        for k, w in want.items():
            if k not in got:
                print("FAIL M=%d: %s missing from %s" % (m, k, out))
                failures += 1
                continue
            err = float(np.abs(got[k] - w).max())
            tol = RTOL * float(np.abs(w).max()) + 1e-6
            worst = max(worst, err / tol)
            if not err <= tol:
                print("FAIL M=%d: %s differs by %.3g (tolerance %.3g)" % (m, k, err, tol))
                failures += 1
        print("M=%d: %d tensors after %d SGD steps match PyTorch (worst %.2f of tolerance)"
              % (m, len(want), STEPS, worst))

    # --precision=bf16 against PyTorch's CPU autocast (docs/precision.md):
    # both round to bf16 at their own points, so each tensor may differ by
    # BF16_FACTOR times as much as autocast itself moves it from float32.
    f32 = torch_train(args, aux, x, y, 1)
    bf16 = torch_train(args, aux, x, y, 1, autocast=True)
    plan = os.path.join(work, "plan-bf16.bin")
    out = os.path.join(work, "out-bf16.safetensors")
    sh([mpc, "compile", model, "--map", "dev1=cpu:0,dev2=cpu:1", "--optimizer", "sgd",
        "--lr", str(LR), "--precision", "bf16", "-o", plan])
    sh([mpc, "run", plan, "--input", "data=" + os.path.join(data, "train_x.npy"),
        "--input", "softmax_label=" + os.path.join(data, "train_y.npy"),
        "--steps", str(STEPS), "--init", init, "--save", out])
    got = read_safetensors(out)
    worst, drift_worst = 0.0, 0.0
    for k, w in bf16.items():
        drift = float(np.abs(w - f32[k]).max())
        err = float(np.abs(got[k] - w).max())
        tol = BF16_FACTOR * drift + RTOL * float(np.abs(w).max()) + 1e-6
        worst, drift_worst = max(worst, err / tol), max(drift_worst, drift)
        if got[k].dtype != np.float32:
            print("FAIL bf16: %s saved as %s, not float32" % (k, got[k].dtype))
            failures += 1
        if not err <= tol:
            print("FAIL bf16: %s differs from autocast by %.3g (tolerance %.3g; autocast moved "
                  "it %.3g from float32)" % (k, err, tol, drift))
            failures += 1
    print("bf16: %d tensors after %d SGD steps match PyTorch's autocast (worst %.2f of "
          "tolerance; autocast's largest move from float32 %.3g)"
          % (len(bf16), STEPS, worst, drift_worst))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
