# close.py A B [--tol T] [--zero-gradient REGEX ...]: two checkpoints
# (safetensors) hold the same tensors, each within relative error T
# (default 1e-5): |a - b| / |a| in the L2 norm, tensor by tensor. A tensor matching a --zero-gradient
# pattern has a gradient that is zero in exact arithmetic (attention's key
# bias: softmax does not change when one q.b is added to a whole row), so
# it and its optimizer state hold rounding noise, which Adam scales up: of
# those, both runs must keep every element within T of zero instead.
import json, re, struct, sys
import numpy as np

def tensors(path):
    raw = open(path, "rb").read()
    n = struct.unpack("<Q", raw[:8])[0]
    head = json.loads(raw[8:8 + n])
    out = {}
    for k, v in head.items():
        if k == "__metadata__":
            continue
        a, b = v["data_offsets"]
        out[k] = np.frombuffer(raw[8 + n + a:8 + n + b], dtype="<f4").reshape(v["shape"])
    return out

args = sys.argv[1:]
tol, zero = 1e-5, []
while len(args) > 2:
    flag = args.pop(2)
    if flag == "--tol":
        tol = float(args.pop(2))
    elif flag == "--zero-gradient":
        zero.append(re.compile(args.pop(2)))
    else:
        sys.exit("close.py: unknown argument " + flag)
a, b = tensors(args[0]), tensors(args[1])
assert sorted(a) == sorted(b), (sorted(a), sorted(b))
worst = 0.0
for k in sorted(a):
    assert a[k].shape == b[k].shape, (k, a[k].shape, b[k].shape)
    if any(z.search(k) for z in zero):
        m = max(np.abs(a[k]).max(), np.abs(b[k]).max())
        assert m <= tol, f"{k}: zero-gradient tensor reached {m:.3g} > {tol}"
        continue
    x = a[k].astype(np.float64)
    d = np.linalg.norm(x - b[k]) / max(float(np.linalg.norm(x)), 1e-30)
    worst = max(worst, d)
    assert d <= tol, f"{k}: relative difference {d:.3g} > {tol}"
print(f"close: {len(a)} tensors (worst relative error {worst:.2g})", file=sys.stderr)
print(f"close: {len(a)} tensors")
