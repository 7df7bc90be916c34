"""check-checkpoint.py A B: checkpoint B holds the tensors of checkpoint A,
every one F32 (safetensors header); prints one line saying so.
check-checkpoint.py --same A B: the two hold the same tensors, byte for
byte (their metadata, which names each plan, may differ).
check-checkpoint.py --untouched A B: every parameter of B (a run whose
updates changed nothing: lr 0) has the same bytes in A, and A's optimizer
step counters are all zero: A's steps were all skipped."""
import json
import struct
import sys


def read(path):
    with open(path, "rb") as f:
        n = struct.unpack("<Q", f.read(8))[0]
        h = json.loads(f.read(n))
        body = f.read()
    h.pop("__metadata__", None)
    return h, {k: body[v["data_offsets"][0]:v["data_offsets"][1]] for k, v in h.items()}


if sys.argv[1] == "--same":
    (ha, ta), (hb, tb) = read(sys.argv[2]), read(sys.argv[3])
    if ha.keys() != hb.keys():
        sys.exit(f"tensors differ: {sorted(ha)} vs {sorted(hb)}")
    bad = [k for k in ta if ta[k] != tb[k] or ha[k]["dtype"] != hb[k]["dtype"]]
    if bad:
        sys.exit(f"tensors differ in bytes: {bad}")
    print(f"same {len(ta)} tensors, byte for byte")
    sys.exit(0)
if sys.argv[1] == "--untouched":
    (ha, ta), (hb, tb) = read(sys.argv[2]), read(sys.argv[3])
    params = [k for k in tb if "." not in k]
    bad = [k for k in params if ta.get(k) != tb[k]]
    if bad:
        sys.exit(f"parameters changed: {bad}")
    steps = [k for k in ta if k.endswith(".step")]
    moved = [k for k in steps if any(ta[k])]
    if moved or not steps:
        sys.exit(f"step counters moved: {moved}" if moved else "no step counters")
    print(f"{len(params)} parameters equal their initial values, {len(steps)} step counters at 0")
    sys.exit(0)
(a, _), (b, _) = read(sys.argv[1]), read(sys.argv[2])
# fp16 adds its loss scaler's state (passes/LossScale.cpp).
mine = [k for k in b if not k.startswith("loss_scale")]
if sorted(a) != sorted(mine):
    sys.exit(f"tensors differ: {sorted(a)} vs {sorted(mine)}")
bad = [k for k in b if b[k]["dtype"] not in ("F32", "I32")]
if bad:
    sys.exit(f"not f32: {bad}")
print("same tensors as fp32, all F32")
