"""safetensors read by hand (8-byte little-endian header length, JSON header,
raw data), for the scripts of test/torch/: what a reader written from the
format sees in mpc's files."""
import json
import struct

import numpy as np


def read_safetensors(path):
    """{name: numpy array} of a safetensors file (F32, I32, I64)."""
    with open(path, "rb") as f:
        data = f.read()
    (n,) = struct.unpack("<Q", data[:8])
    header = json.loads(data[8:8 + n])
    out = {}
    for name, info in header.items():
        if name == "__metadata__":
            continue
        dtype = {"F32": "<f4", "I32": "<i4", "I64": "<i8"}[info["dtype"]]
        begin, end = info["data_offsets"]
        out[name] = np.frombuffer(data[8 + n + begin:8 + n + end], dtype=dtype).reshape(info["shape"]).copy()
    return out
