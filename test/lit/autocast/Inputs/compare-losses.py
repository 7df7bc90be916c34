"""Compares the loss lines of two runs ("step N loss V"): each relative
difference must be at most TOL. Prints the count and the largest."""
import re
import sys

def losses(path):
    return [float(m.group(1)) for m in re.finditer(r"loss ([-0-9.e+]+)", open(path).read())]

a, b, tol = losses(sys.argv[1]), losses(sys.argv[2]), float(sys.argv[3])
if len(a) != len(b) or not a:
    sys.exit(f"{len(a)} losses against {len(b)}")
worst = max(abs(x - y) / max(abs(x), 1e-12) for x, y in zip(a, b))
if worst > tol:
    sys.exit(f"largest relative difference {worst:.3g} exceeds {tol}")
print(f"{len(a)} losses within {tol} (largest {worst:.3g})")
