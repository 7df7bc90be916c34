#!/usr/bin/env python3
"""Cross-checks mpc's mixed-precision training (--precision=bf16, fp16)
against PyTorch's autocast on the CPU.

Usage: autocast_crosscheck.py MPC_BINARY SOURCE_DIR WORKDIR

The model and data are those of gpt_crosscheck.py: a 2-block GPT over 2
devices (d 32, 2 heads, context 16, batch 4, Adam) on
test/data/fortunes-sample.txt, from seeded initial values. Trained STEPS
steps by:

  * PyTorch in float32: the reference;
  * PyTorch under torch.autocast("cpu", dtype=torch.bfloat16): matmuls in
    bf16, f32 master weights, as mpc's --precision=bf16 (PyTorch's CPU
    autocast has no float16);
  * mpc --precision=fp32, bf16 and fp16, each on 1 micro-batch and on 2
    (pipelined: the same bits as 1 within a precision is the unit tests'
    rule; here the micro-batches must agree with PyTorch as well), all with
    the fused attention op (the default); and bf16 and fp32 with
    --no-fuse-attention (the unfused chain).

The tolerance is derived from the runs themselves. bf16 keeps 8 bits of
mantissa, so any two bf16 trainings that round at different points (mpc
rounds the bias add, the GELU and the attention scores in bf16 where
PyTorch's autocast keeps some in f32 and rounds others) drift apart by
about as much as either drifts from f32. So, parameter by parameter:

  |mpc bf16 - torch autocast|  <=  FACTOR * |torch autocast - torch f32|max + 1e-4

and every loss within FACTOR times autocast's largest relative loss
difference from f32 (plus 1e-3). PyTorch's CPU autocast has no float16
(nor a GradScaler), so mpc fp16 is held to torch f32 with the same bound,
the reference skipping the steps that mpc's loss scaler reports skipped
(the scaled gradients overflowed f16: GradScaler would skip them too): f16 rounds finer than
bf16 (11 bits), but Adam's normalised steps do not shrink the drift in
proportion (measured: fp16 drifts about 0.6x as far as bf16 here, not 1/8).
And fp32 stays what it is: mpc fp32 against torch f32 within 1e-4 (the
gpt_crosscheck.py model; the float32 noise is below 1e-6).

The key bias slice (h*.attn.qkv.b[D:2D]) has an exactly zero gradient, so
Adam turns pure rounding noise into steps of up to lr: it is reported
apart and held to 2 * lr * STEPS, as in gpt_crosscheck.py.

Skipped (exit 77, with the reason) when torch or numpy is not importable,
a failure under CI=true: the rule of torch_guard.py.
"""
import json
import os
import re
import sys

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from torch_guard import np, torch  # noqa: E402
from crosscheck import read_safetensors, write_safetensors  # noqa: E402
import gpt_crosscheck as gc  # noqa: E402

STEPS = 20
FACTOR = 3.0


def torch_train(G, model, init, d, autocast, skip=()):
    cfg = G.config(model)
    P = {k: torch.tensor(v, dtype=torch.float32, requires_grad=True) for k, v in init.items()}
    opt = torch.optim.Adam([P[k] for k in G.order(model)], lr=cfg["lr"])
    B, losses = cfg["batch"], []
    for s in range(STEPS):
        x = torch.from_numpy(d["train_x"][s * B:(s + 1) * B])
        y = torch.from_numpy(d["train_y"][s * B:(s + 1) * B])
        with torch.autocast("cpu", dtype=torch.bfloat16, enabled=autocast):
            loss = G.gpt_loss(P, x, y, cfg)
        opt.zero_grad()
        loss.float().backward()
        if s + 1 not in skip:
            opt.step()
        losses.append(loss.item())
    return {k: v.detach().double().numpy() for k, v in P.items()}, losses


def mpc_train(mpc, work, data, precision, microbatches, extra=()):
    tag = "%s-m%d%s" % (precision, microbatches, "".join(extra))
    plan = os.path.join(work, tag + ".bin")
    out = os.path.join(work, tag + ".safetensors")
    gc.sh([mpc, "compile", os.path.join(work, "model.json"), "--precision", precision,
           "--microbatches", str(microbatches), "-o", plan] + list(extra))
    text = gc.sh([mpc, "run", plan, "--init", os.path.join(work, "init.safetensors"),
                  "--input", "x=" + os.path.join(data, "train_x.npy"),
                  "--input", "y=" + os.path.join(data, "train_y.npy"),
                  "--steps", str(STEPS), "--log-every", "1", "--save", out])
    losses = [float(v) for v in re.findall(r"loss ([-0-9.e+]+)", text)]
    # fp16's loss lines end "scale S skipped K": the steps whose count rose.
    counts = [int(float(v)) for v in re.findall(r"skipped ([0-9.e+]+)", text)]
    skipped = {i + 1 for i, c in enumerate(counts) if c > (counts[i - 1] if i else 0)}
    params = {k: v.astype(np.float64) for k, v in read_safetensors(out).items()
              if not k.startswith("loss_scale")}
    return tag, params, losses, skipped


def check_conversions(mpc, work):
    """mpc's cast op against PyTorch's .to(): the same bits for 200 000
    random f32 values (all exponents, both signs) rounded to bf16 and f16."""
    rng = np.random.default_rng(5)
    bits = rng.integers(0, 2 ** 32, size=200000, dtype=np.uint64).astype(np.uint32)
    x = bits.view(np.float32)
    x = np.where(np.isfinite(x), x, np.float32(1.0)).astype(np.float32)
    n = x.size
    model = {"mpc": 1, "name": "casts", "inputs": {"x": {"shape": [n]}},
             "nodes": [{"name": "b", "op": "cast", "inputs": ["x"], "attrs": {"to": "bf16"}},
                       {"name": "yb", "op": "cast", "inputs": ["b"], "attrs": {"to": "f32"}},
                       {"name": "h", "op": "cast", "inputs": ["x"], "attrs": {"to": "f16"}},
                       {"name": "yh", "op": "cast", "inputs": ["h"], "attrs": {"to": "f32"}}],
             "outputs": ["yb", "yh"]}
    path = os.path.join(work, "casts.json")
    with open(path, "w") as f:
        json.dump(model, f)
    np.save(os.path.join(work, "casts_x.npy"), x.reshape(1, n)[0])
    plan = os.path.join(work, "casts.bin")
    gc.sh([mpc, "compile", path, "-o", plan])
    gc.sh([mpc, "run", plan, "--input", "x=" + os.path.join(work, "casts_x.npy"),
           "--output", "yb=" + os.path.join(work, "casts_yb.npy"),
           "--output", "yh=" + os.path.join(work, "casts_yh.npy")])
    t = torch.from_numpy(x)
    ok = True
    for name, dtype in (("yb", torch.bfloat16), ("yh", torch.float16)):
        got = np.load(os.path.join(work, "casts_%s.npy" % name)).reshape(-1)
        want = t.to(dtype).to(torch.float32).numpy()
        same = np.array_equal(got.view(np.uint32), want.view(np.uint32))
        ok = ok and same
        print("cast to %-8s %d values: %s" % (str(dtype).replace("torch.", ""), n,
                                               "the same bits as PyTorch" if same else "MISMATCH"))
    return ok


def distance(a, b):
    """The largest parameter difference, but for the key bias slice, whose
    gradient is exactly zero, so Adam turns rounding noise into steps of up
    to lr (gpt_crosscheck.py; held to 2 * lr * STEPS separately)."""
    worst = 0.0
    for k in b:
        diff = np.abs(a[k] - b[k])
        mask = gc.key_bias_mask(k, b[k].shape)
        if (~mask).any():
            worst = max(worst, float(diff[~mask].max()))
    return worst


def key_bias_distance(a, b):
    worst = 0.0
    for k in b:
        mask = gc.key_bias_mask(k, b[k].shape)
        if mask.any():
            worst = max(worst, float(np.abs(a[k] - b[k])[mask].max()))
    return worst


def loss_distance(a, b):
    return max(abs(x - y) / max(1.0, abs(y)) for x, y in zip(a, b))


def main():
    if len(sys.argv) != 4:
        print(__doc__.split("\n\n")[1])
        return 2
    mpc, src, work = sys.argv[1:]
    os.makedirs(work, exist_ok=True)
    torch.set_num_threads(1)
    gc.STEPS = STEPS
    ok = check_conversions(mpc, work)
    G, model, _, data, d = gc.make_inputs(src, work)
    init = gc.seeded_init(model)
    write_safetensors(os.path.join(work, "init.safetensors"), init)

    f32, f32_losses = torch_train(G, model, init, d, autocast=False)
    bf16, bf16_losses = torch_train(G, model, init, d, autocast=True)
    drift = distance(bf16, f32)
    loss_drift = loss_distance(bf16_losses, f32_losses)
    print("torch autocast bf16 vs torch f32: params %.2e, losses %.2e (the bf16 drift)"
          % (drift, loss_drift))

    lr = G.config(model)["lr"]

    def check(label, params, losses, ref, ref_losses, tol, loss_tol):
        nonlocal ok
        p, l = distance(params, ref), loss_distance(losses, ref_losses)
        kb = key_bias_distance(params, ref)
        good = len(losses) == STEPS and p <= tol and l <= loss_tol and kb <= 2 * lr * STEPS
        ok = ok and good
        print("%-28s params %.2e (tol %.2e), key bias %.2e, losses %.2e (tol %.2e)  %s"
              % (label, p, tol, kb, l, loss_tol, "ok" if good else "MISMATCH"))

    for m in (1, 2):
        tag, params, losses, _ = mpc_train(mpc, work, data, "bf16", m)
        check("mpc %s vs torch autocast" % tag, params, losses, bf16, bf16_losses,
              FACTOR * drift + 1e-4, FACTOR * loss_drift + 1e-3)
        tag, params, losses, skipped = mpc_train(mpc, work, data, "fp16", m)
        ref, ref_losses = torch_train(G, model, init, d, autocast=False, skip=skipped)
        print("%-28s skipped steps %s (scaled gradients beyond f16)"
              % ("mpc " + tag, sorted(skipped) or "none"))
        check("mpc %s vs torch f32" % tag, params, losses, ref, ref_losses,
              FACTOR * drift + 1e-4, FACTOR * loss_drift + 1e-3)
    # The unfused chain (--no-fuse-attention) in bf16 and fp32.
    tag, params, losses, _ = mpc_train(mpc, work, data, "bf16", 1, ("--no-fuse-attention",))
    check("mpc %s vs torch autocast" % tag, params, losses, bf16, bf16_losses,
          FACTOR * drift + 1e-4, FACTOR * loss_drift + 1e-3)
    tag, params, losses, _ = mpc_train(mpc, work, data, "fp32", 1, ("--no-fuse-attention",))
    check("mpc %s vs torch f32" % tag, params, losses, f32, f32_losses, 1e-4, 2e-5)
    tag, params, losses, _ = mpc_train(mpc, work, data, "fp32", 1)
    check("mpc %s vs torch f32" % tag, params, losses, f32, f32_losses, 1e-4, 2e-5)
    print("autocast crosscheck: %s" % ("ok" if ok else "FAILED"))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
