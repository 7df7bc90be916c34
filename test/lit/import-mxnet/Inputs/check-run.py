# Checks a run of the imported MLP: the softmax output holds rows of
# probabilities (each sums to 1) for 12 steps of 16 rows, and the loss of the
# last 4 steps is below that of the first 4. Standard library only.
import struct
import sys

folder = sys.argv[1]
raw = open(folder + "/probs.npy", "rb").read()
hlen = struct.unpack("<H", raw[8:10])[0]
header = raw[10:10 + hlen].decode()
data = raw[10 + hlen:]
vals = struct.unpack("<%df" % (len(data) // 4), data)
assert "(192, 3)" in header, header
for r in range(192):
    s = sum(vals[3 * r:3 * r + 3])
    assert abs(s - 1) < 1e-5, (r, s)
losses = [float(l.split()[3]) for l in open(folder + "/run.txt") if l.startswith("step ")]
assert len(losses) == 12, losses
assert sum(losses[-4:]) < sum(losses[:4]), losses
print("ok")
