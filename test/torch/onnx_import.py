#!/usr/bin/env python3
"""mpc import-onnx against PyTorch: models exported by torch.onnx.export.

For each model below, built in PyTorch with a fixed seed and exported in eval
mode (torch.onnx.export, dynamic batch axis, do_constant_folding=False):

  1. training: `mpc import-onnx --loss softmax_cross_entropy --lr 0.1
     --params-out init.safetensors`, compiled and trained STEPS steps of SGD on
     one batch (`mpc run --init ... --save ... --log-every 1`); a deep copy of
     the module trained in PyTorch (train mode, dropout 0) with
     torch.optim.SGD(lr=0.1) and F.cross_entropy on the same batch must give
     the same loss at every step and the same final parameters, compared by
     name (the initializers are the state_dict names). BatchNorm's running
     variance is not compared: mpc folds in the biased batch variance, PyTorch
     the unbiased one (batchnorm_crosscheck.py checks that difference); the
     script prints the ratio it sees. The running mean is compared.
  2. inference: `mpc import-onnx --inference`, `mpc run --output OUT=...`
     against model.eval()(x);
  3. for the MLP and attn17-seq, the training of 1. over two devices,
     pipelined 1F1B: the MLP placed by the cost model (--placement=auto),
     attn17-seq cut by hand (import --group, compile --map); the losses and
     parameters must match PyTorch as the one-device run does.

Models:
  mlp            Linear-ReLU-Linear-GELU(exact)-Linear, opset 14 (Gemm; the
                 Div-Erf-Add-Mul-Mul GELU fused back)
  mlp-gelu-tanh  the same with F.gelu(approximate="tanh"), and mlp-gelu-new
                 with GPT-2's gelu_new written out: the tanh chains fused
                 back into one gelu (approximate "tanh")
  cnn            Conv-BatchNorm-ReLU-MaxPool-Conv(groups 2)-LeakyReLU-AvgPool-
                 AdaptiveAvgPool(1)-Flatten-Linear, opset 13 (torch writes
                 AvgPool2d's count_include_pad as a Pad before AveragePool,
                 which the import merges into the pool)
  cnn-fused-bn   inference of the CNN as exported by default (TrainingMode.EVAL:
                 BatchNorm folded into the Conv), AvgPool2d without that Pad
  cnn-nopad      the CNN with AvgPool2d(count_include_pad=False): no Pad
  attn14/attn17  Embedding (int64 ids, given as :i32) - LayerNorm - causal
                 single-head self-attention (masked_fill -inf) - residual -
                 LayerNorm - Linear, logits reshaped to [B*T, V] (labels
                 [B*T], fed as [B, T]); opset 14 (LayerNorm decomposed), 17
                 (LayerNormalization); the -inf fill imported as the lowest float
  attn14-finite  attn14 with the mask filled with -1e9
  attn14/17-seq  fill -1e9, logits [B, T, V] and labels [B, T]
  attn14/17-pool fill -1e9, logits averaged over T: [B, V], labels [B]
Every attention model has two LayerNorms, so torch.onnx writes ln2.weight and
ln2.bias as Identity of ln1's equal initializers; the check wants them as
parameters of their own (as in the module), and nn.Linear on [B, T, D] as
MatMul(x, Transpose(q.weight)) with q.weight trained.

usage: onnx_import.py MPC WORK_DIR
Skipped (exit 77) where torch or numpy is missing, failing under CI=true: torch_guard.py.
"""
import copy
import math
import os
import re
import shutil
import subprocess
import sys
import time
import warnings

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from torch_guard import np, torch  # noqa: E402
from st_read import read_safetensors  # noqa: E402

import torch.nn as nn  # noqa: E402
import torch.nn.functional as F  # noqa: E402

MPC, WORK = sys.argv[1:3]
STEPS = 5
LR = 0.1
LOSS_RTOL = 1e-4
PARAM_TOL = 1e-5   # abs + rel
INFER_TOL = 1e-5   # abs + rel


class CheckFailed(Exception):
    pass


def mpc(*args):
    args = [str(a) for a in args]
    for attempt in range(3):  # the binary may be relinked under us
        try:
            r = subprocess.run([MPC] + args, capture_output=True, text=True, timeout=120)
        except OSError as e:  # e.g. EACCES/ETXTBSY while the binary is relinked
            if attempt == 2:
                raise CheckFailed("mpc %s: %s" % (" ".join(args), e))
            time.sleep(5)
            continue
        break
    if r.returncode != 0:
        raise CheckFailed("mpc %s exited %d:\n%s%s"
                          % (" ".join(args), r.returncode, r.stdout, r.stderr))
    return r.stdout + r.stderr


def onnx_ops(path):
    try:
        import onnx
    except ImportError:
        return "(python3-onnx not installed)"
    return " ".join(n.op_type for n in onnx.load(path).graph.node)


def rel_diff(a, b):
    a = np.asarray(a, dtype=np.float64)
    b = np.asarray(b, dtype=np.float64)
    return float(np.max(np.abs(a - b) / (1.0 + np.abs(b)))) if a.size else 0.0


# ---------------------------------------------------------------- models

def gelu_new(x):
    """GPT-2's gelu, as Hugging Face writes it (x * 0.5 first, x^3 as Pow)."""
    return 0.5 * x * (1.0 + torch.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * torch.pow(x, 3.0))))


class MLP(nn.Module):
    def __init__(self, gelu="none"):
        super().__init__()
        self.fc1 = nn.Linear(6, 16)
        self.fc2 = nn.Linear(16, 12)
        self.fc3 = nn.Linear(12, 5)
        self.gelu = gelu

    def forward(self, x):
        h = self.fc2(F.relu(self.fc1(x)))
        h = gelu_new(h) if self.gelu == "new" else F.gelu(h, approximate=self.gelu)
        return self.fc3(h)


class CNN(nn.Module):
    def __init__(self, count_include_pad=True):
        super().__init__()
        self.conv1 = nn.Conv2d(3, 8, 3, padding=1)
        self.bn = nn.BatchNorm2d(8)
        self.pool1 = nn.MaxPool2d(2)
        self.conv2 = nn.Conv2d(8, 8, 3, padding=1, groups=2)
        self.pool2 = nn.AvgPool2d(2, count_include_pad=count_include_pad)
        self.gap = nn.AdaptiveAvgPool2d(1)
        self.fc = nn.Linear(8, 4)

    def forward(self, x):
        x = self.pool1(F.relu(self.bn(self.conv1(x))))
        x = self.pool2(F.leaky_relu(self.conv2(x), 0.1))
        return self.fc(torch.flatten(self.gap(x), 1))


class Attn(nn.Module):
    V, D, T = 16, 8, 4

    def __init__(self, fill=float("-inf"), out="flat"):
        """out: "flat" logits [B*T, V], "seq" [B, T, V], "pool" the mean
        over T, [B, V]."""
        super().__init__()
        self.fill, self.out = fill, out
        self.emb = nn.Embedding(self.V, self.D)
        self.ln1 = nn.LayerNorm(self.D)
        self.q = nn.Linear(self.D, self.D)
        self.k = nn.Linear(self.D, self.D)
        self.v = nn.Linear(self.D, self.D)
        self.ln2 = nn.LayerNorm(self.D)
        self.head = nn.Linear(self.D, self.V)
        self.drop = nn.Dropout(0.0)

    def forward(self, ids):
        h = self.emb(ids)
        a = self.ln1(h)
        q, k, v = self.q(a), self.k(a), self.v(a)
        s = q @ k.transpose(-1, -2) / math.sqrt(self.D)
        mask = torch.tril(torch.ones(self.T, self.T))
        s = s.masked_fill(mask == 0, self.fill)
        h = h + self.drop(torch.softmax(s, dim=-1)) @ v
        out = self.head(self.ln2(h))
        if self.out == "flat":
            return out.reshape(-1, self.V)
        return out.mean(dim=1) if self.out == "pool" else out


# ---------------------------------------------------------------- checks

def export(model, example, path, in_name, opset, fuse_bn):
    """fuse_bn: torch.onnx's default TrainingMode.EVAL, whose eval peephole
    folds a BatchNorm into the Conv before it (new initializers
    onnx::Conv_N); TrainingMode.PRESERVE on an eval-mode model keeps it as an
    inference BatchNormalization with the running statistics."""
    model.eval()
    mode = torch.onnx.TrainingMode.EVAL if fuse_bn else torch.onnx.TrainingMode.PRESERVE
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.onnx.export(model, (example,), path, training=mode, input_names=[in_name],
                          output_names=["logits"],
                          dynamic_axes={in_name: {0: "batch"}, "logits": {0: "batch"}},
                          opset_version=opset, do_constant_folding=False)


def check_training(tag, d, onnx_path, model, x, xnpy, labels, in_name, in_spec,
                   import_extra=(), compile_extra=()):
    m_json, plan = os.path.join(d, "train.json"), os.path.join(d, "train.bin")
    init, out = os.path.join(d, "init.safetensors"), os.path.join(d, "out.safetensors")
    ynpy = os.path.join(d, "label.npy")
    # A dataset's rows are the batch: labels of [B*T, V] logits are given as
    # [B, T] (the import's label input keeps the batch, reshaped in the model).
    rows = labels if labels.shape[0] == x.shape[0] else labels.reshape(x.shape[0], -1)
    np.save(ynpy, rows.astype(np.int32))
    mpc("import-onnx", onnx_path, "-o", m_json, "--input", in_spec,
        "--loss", "softmax_cross_entropy", "--lr", LR, "--params-out", init, *import_extra)
    mpc("compile", m_json, "-o", plan, *compile_extra)
    log = mpc("run", plan, "--input", "%s=%s" % (in_name, xnpy), "--input", "label=" + ynpy,
              "--steps", STEPS, "--log-every", 1, "--init", init, "--save", out)
    mine_losses = [float(v) for v in re.findall(r"step \d+ loss (\S+)", log)]

    ref = copy.deepcopy(model)
    ref.train()
    opt = torch.optim.SGD(ref.parameters(), lr=LR)
    xt, yt = torch.from_numpy(x), torch.from_numpy(labels.astype(np.int64)).reshape(-1)
    # mpc's batch_norm folds the biased batch variance into running_var where
    # torch folds the unbiased one: follow mpc's recursion next to torch's,
    # reading torch's unbiased batch variance off its running_var update.
    bns = {k: m for k, m in ref.named_modules() if isinstance(m, nn.BatchNorm2d)}
    biased_rv = {k: m.running_var.double().clone() for k, m in bns.items()}
    ref_losses = []
    for _ in range(STEPS):
        before = {k: m.running_var.double().clone() for k, m in bns.items()}
        logits = ref(xt)
        for k, m in bns.items():
            mom, n = m.momentum, x.size // x.shape[1]
            unbiased = (m.running_var.double() - (1 - mom) * before[k]) / mom
            biased_rv[k] = (1 - mom) * biased_rv[k] + mom * unbiased * (n - 1) / n
        loss = F.cross_entropy(logits.reshape(-1, logits.shape[-1]), yt)
        opt.zero_grad()
        loss.backward()
        opt.step()
        ref_losses.append(loss.item())

    problems = []
    if len(mine_losses) != STEPS:
        problems.append("mpc printed %d losses, want %d:\n%s" % (len(mine_losses), STEPS, log))
        loss_diff = float("nan")
    else:
        loss_diff = max(abs(a - b) / max(abs(b), 1e-6) for a, b in zip(mine_losses, ref_losses))
        if not loss_diff < LOSS_RTOL:
            problems.append("losses differ (max rel %.2e):\n  mpc   %s\n  torch %s"
                            % (loss_diff, " ".join("%.6g" % v for v in mine_losses),
                               " ".join("%.6g" % v for v in ref_losses)))

    mine = read_safetensors(out)
    want = {k: v.detach().numpy() for k, v in ref.state_dict().items()
            if v.dtype.is_floating_point}
    param_diff, note = 0.0, ""
    for name, w in want.items():
        if name not in mine:
            problems.append("%s missing from mpc's checkpoint (has %s)" % (name, sorted(mine)))
            continue
        got = mine[name]
        if got.shape != w.shape:
            problems.append("%s: shape %s, torch %s" % (name, got.shape, w.shape))
            continue
        if name.endswith("running_var"):
            # Not compared with torch's; with the biased-variance recursion.
            exp = biased_rv[name[:-len(".running_var")]].numpy()
            rd = rel_diff(got, exp)
            note += "; %s: mpc/torch %.4f..%.4f, matches the biased-variance recursion " \
                "(max rel diff %.2e)" % (name, float(np.min(got / w)), float(np.max(got / w)), rd)
            if rd > PARAM_TOL:
                problems.append("%s differs from the biased-variance recursion: max rel %.3g "
                                "(torch's unbiased: %.3g)" % (name, rd, rel_diff(got, w)))
            continue
        diff = float(np.max(np.abs(got - w) - PARAM_TOL * np.abs(w)))
        rd = rel_diff(got, w)
        param_diff = max(param_diff, rd)
        if diff > PARAM_TOL:
            problems.append("%s differs: max |mpc - torch| %.3g (max rel %.3g)"
                            % (name, float(np.max(np.abs(got - w))), rd))
    if problems:
        raise CheckFailed("\n".join(problems))
    return "losses and params match PyTorch (max rel diff loss %.2e, params %.2e)%s" % (
        loss_diff, param_diff, note)


def check_inference(tag, d, onnx_path, model, x, xnpy, in_name, in_spec):
    m_json, plan = os.path.join(d, "inf.json"), os.path.join(d, "inf.bin")
    init, out = os.path.join(d, "inf-init.safetensors"), os.path.join(d, "logits.npy")
    mpc("import-onnx", onnx_path, "-o", m_json, "--input", in_spec, "--inference",
        "--params-out", init)
    mpc("compile", m_json, "-o", plan)
    mpc("run", plan, "--input", "%s=%s" % (in_name, xnpy), "--steps", 1, "--init", init,
        "--output", "logits=" + out)
    got = np.load(out)
    model.eval()
    with torch.no_grad():
        want = model(torch.from_numpy(x)).numpy()
    if got.shape != want.shape:
        raise CheckFailed("output shape %s, torch %s" % (got.shape, want.shape))
    err = float(np.max(np.abs(got - want) - INFER_TOL * np.abs(want)))
    if err > INFER_TOL:
        raise CheckFailed("logits differ: max |mpc - torch| %.3g (max rel %.3g)"
                          % (float(np.max(np.abs(got - want))), rel_diff(got, want)))
    return "logits match model.eval() (max rel diff %.2e)" % rel_diff(got, want)


def run_model(tag, make, opset, x, labels, in_name, fuse_bn=False, train=True, parallel=()):
    d = os.path.join(WORK, tag)
    os.makedirs(d, exist_ok=True)
    torch.manual_seed(0)
    model = make()
    if isinstance(model, CNN):  # non-trivial running statistics and affine parameters
        with torch.no_grad():
            model.bn.running_mean.uniform_(-0.5, 0.5)
            model.bn.running_var.uniform_(0.5, 2.0)
            model.bn.weight.uniform_(0.5, 1.5)
            model.bn.bias.uniform_(-0.5, 0.5)
    onnx_path = os.path.join(d, "m.onnx")
    export(model, torch.from_numpy(x), onnx_path, in_name, opset, fuse_bn)
    is_int = x.dtype == np.int64
    in_spec = "%s=%s%s" % (in_name, ",".join(str(s) for s in x.shape), ":i32" if is_int else "")
    xnpy = os.path.join(d, "x.npy")
    np.save(xnpy, x.astype(np.int32) if is_int else x)
    checks = [("inference", lambda: check_inference(tag, d, onnx_path, model, x, xnpy,
                                                     in_name, in_spec))]
    if train:
        checks.append(("training %d steps" % STEPS,
                       lambda: check_training(tag, d, onnx_path, model, x, xnpy, labels,
                                              in_name, in_spec)))
        # The same training over several devices: the numbers must not move.
        for what, import_extra, compile_extra in parallel:
            sub = os.path.join(d, what.split(",")[0].replace(" ", "-"))
            os.makedirs(sub, exist_ok=True)
            checks.append(("training %d steps, %s" % (STEPS, what),
                           lambda sub=sub, i=import_extra, c=compile_extra: check_training(
                               tag, sub, onnx_path, model, x, xnpy, labels, in_name, in_spec,
                               i, c)))
    failures = 0
    for what, fn in checks:
        try:
            print("%s: %s: %s" % (tag, what, fn()), flush=True)
        except CheckFailed as e:
            failures += 1
            print("%s: %s: FAIL: %s" % (tag, what, str(e).rstrip()), flush=True)
    if failures:
        print("%s: onnx ops (opset %d): %s" % (tag, opset, onnx_ops(onnx_path)), flush=True)
    return failures, len(checks)


def main():
    shutil.rmtree(WORK, ignore_errors=True)
    os.makedirs(WORK)
    rng = np.random.default_rng(3)
    B = 6
    img = rng.standard_normal((B, 3, 8, 8)).astype(np.float32)
    img_labels = rng.integers(0, 4, B)
    ids = rng.integers(0, Attn.V, (B, Attn.T)).astype(np.int64)
    tok_labels = rng.integers(0, Attn.V, B * Attn.T)
    # (tag, module factory, opset, input, labels, input name, run_model options)
    cases = [
        ("mlp", MLP, 14, rng.standard_normal((B, 6)).astype(np.float32),
         rng.integers(0, 5, B), "x",
         {"parallel": [("auto-placed on 2 devices, 3 micro-batches, 1F1B", (),
                        ("--placement=auto", "--devices=cpu:0,cpu:1", "--microbatches", "3"))]}),
        # GELU's tanh approximation, as F.gelu writes it and as GPT-2's
        # gelu_new does: both fused back into one gelu ("tanh").
        ("mlp-gelu-tanh", lambda: MLP("tanh"), 14, rng.standard_normal((B, 6)).astype(np.float32),
         rng.integers(0, 5, B), "x", {}),
        ("mlp-gelu-new", lambda: MLP("new"), 14, rng.standard_normal((B, 6)).astype(np.float32),
         rng.integers(0, 5, B), "x", {}),
        ("cnn", CNN, 13, img, img_labels, "x", {}),
        # The same CNN as torch.onnx.export writes it by default: the BatchNorm
        # folded into conv1 (initializers onnx::Conv_N), so inference only; no
        # Pad (count_include_pad=False), as cnn-nopad.
        ("cnn-fused-bn", lambda: CNN(count_include_pad=False), 13, img, img_labels, "x",
         {"fuse_bn": True, "train": False}),
        # AvgPool2d(count_include_pad=False): no Pad before the AveragePool.
        ("cnn-nopad", lambda: CNN(count_include_pad=False), 13, img, img_labels, "x", {}),
        ("attn14", Attn, 14, ids, tok_labels, "ids", {}),
        ("attn17", Attn, 17, ids, tok_labels, "ids", {}),
        # The mask filled with -1e9 (finite) instead of -inf.
        ("attn14-finite", lambda: Attn(fill=-1e9), 14, ids, tok_labels, "ids", {}),
        # Finite fill, and logits left [B, T, V] (labels [B, T]): no reshape
        # across the batch axis.
        ("attn14-seq", lambda: Attn(fill=-1e9, out="seq"), 14, ids,
         tok_labels.reshape(B, Attn.T), "ids", {}),
        ("attn17-seq", lambda: Attn(fill=-1e9, out="seq"), 17, ids,
         tok_labels.reshape(B, Attn.T), "ids",
         # Micro-batches split the batch axis, which [B*T, V] logits mix:
         # the pipelined run takes the [B, T, V] form.
         {"parallel": [("split by --group on 2 devices, 2 micro-batches, 1F1B",
                        ("--group", "^/(emb|ln1|q|k|v)/=stage0", "--group", ".=stage1"),
                        ("--map", "stage0=cpu:0,stage1=cpu:1", "--microbatches", "2"))]}),
        # Finite fill, logits averaged over T to [B, V] (labels [B]): trains
        # the attention block through a (batch, classes) output.
        ("attn14-pool", lambda: Attn(fill=-1e9, out="pool"), 14, ids, tok_labels[:B], "ids", {}),
        ("attn17-pool", lambda: Attn(fill=-1e9, out="pool"), 17, ids, tok_labels[:B], "ids", {}),
    ]
    failures = total = 0
    for tag, make, opset, x, labels, in_name, opts in cases:
        f, n = run_model(tag, make, opset, x, labels, in_name, **opts)
        failures += f
        total += n
    if failures:
        print("FAILED: %d of %d checks on %d ONNX models (torch %s)"
              % (failures, total, len(cases), torch.__version__))
        return 1
    print("ok: %d checks on %d ONNX models against torch %s"
          % (total, len(cases), torch.__version__))
    return 0


if __name__ == "__main__":
    sys.exit(main())
