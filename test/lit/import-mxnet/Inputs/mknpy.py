# Writes x.npy (f32[64,4]) and y.npy (i32[64], classes 0..2) into argv[1]
# with the standard library only: y counts the positive entries of x[:, :2].
import random
import struct
import sys


def npy(path, descr, shape, fmt, values):
    dims = ", ".join(str(d) for d in shape) + ("," if len(shape) == 1 else "")
    header = "{'descr': '%s', 'fortran_order': False, 'shape': (%s), }" % (descr, dims)
    header += " " * (63 - (10 + len(header)) % 64) + "\n"
    with open(path, "wb") as f:
        f.write(b"\x93NUMPY\x01\x00" + struct.pack("<H", len(header)) + header.encode())
        f.write(struct.pack("<%d%s" % (len(values), fmt), *values))


rng = random.Random(0)
rows = 64
x = [rng.uniform(-1, 1) for _ in range(rows * 4)]
y = [int(x[4 * r] > 0) + int(x[4 * r + 1] > 0) for r in range(rows)]
npy(sys.argv[1] + "/x.npy", "<f4", (rows, 4), "f", x)
npy(sys.argv[1] + "/y.npy", "<i4", (rows,), "i", y)
