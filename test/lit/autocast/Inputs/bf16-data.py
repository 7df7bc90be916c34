"""bf16-data.py OUT [NAME...]: writes a safetensors file of BF16 tensors
[2, 3] (one named x by default; else one per NAME), each holding 1, 1.5,
-2, 2^-7, 256, -0.5 (exact in bf16), written byte by byte from the
format's specification."""
import json
import struct
import sys

values = [1.0, 1.5, -2.0, 2.0 ** -7, 256.0, -0.5]
# bf16: the top half of the f32 bits (exact for these values).
body = b"".join(struct.pack("<I", struct.unpack("<I", struct.pack("<f", v))[0])[2:] for v in values)
names = sys.argv[2:] or ["x"]
header = json.dumps({n: {"dtype": "BF16", "shape": [2, 3],
                         "data_offsets": [i * len(body), (i + 1) * len(body)]}
                     for i, n in enumerate(names)}).encode()
header += b" " * ((8 - len(header) % 8) % 8)
with open(sys.argv[1], "wb") as f:
    f.write(struct.pack("<Q", len(header)) + header + body * len(names))
