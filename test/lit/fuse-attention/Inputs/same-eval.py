"""same-eval.py E1 E2 L1.npy L2.npy: two `mpc opt --eval` runs printed the
same loss (to 1e-9), and their logits agree (float64 reference values,
written as float32: within one float32 rounding, 1e-6 relative)."""
import re
import sys

import numpy as np


def loss(path):
    m = re.search(r"loss\S*\s*=?\s*([-0-9.e+]+)", open(path).read())
    return float(m.group(1)) if m else None


a, b = loss(sys.argv[1]), loss(sys.argv[2])
if a is None or b is None or abs(a - b) > 1e-9 * max(1.0, abs(a)):
    sys.exit(f"losses differ: {a} vs {b}")
la, lb = np.load(sys.argv[3]).astype(np.float64), np.load(sys.argv[4]).astype(np.float64)
if la.shape != lb.shape:
    sys.exit(f"logits shapes differ: {la.shape} vs {lb.shape}")
worst = float(np.abs(la - lb).max() / max(1.0, np.abs(la).max()))
# float32 output of equal float64 values differs by at most a rounding.
if worst > 1e-6:
    sys.exit(f"logits differ by {worst}")
print("same loss, logits within float32 rounding")
