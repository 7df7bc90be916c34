#!/usr/bin/env python3
"""Fashion-MNIST as NPY files for `mpc run`, from the IDX files of Debian's
`dataset-fashion-mnist` package (/usr/share/datasets/fashion-mnist).

Writes to --out DIR:

  train_x.npy  float32 [N, 1, 28, 28]  images, NCHW, pixel / 255
  train_y.npy  int32   [N]             class ids 0..9
  test_x.npy, test_y.npy               the same for the test set
  stats.json   counts and the class histogram of each part

--train-limit / --test-limit keep the first K images (small slices for
tests). The IDX format: a big-endian header (two zero bytes, a type byte,
0x08 for unsigned bytes, a rank byte, then one uint32 per dimension) and the
raw values in C order. Files may be gzip-compressed (as Debian ships them).
Every header is checked against its file size, and the image and label
counts against each other; a bad file is an error naming it.
"""
import argparse
import gzip
import json
import os
import struct
import sys

import numpy as np

DEFAULT_DIR = "/usr/share/datasets/fashion-mnist"
PARTS = {
    "train": ("train-images-idx3-ubyte", "train-labels-idx1-ubyte"),
    "test": ("t10k-images-idx3-ubyte", "t10k-labels-idx1-ubyte"),
}
CLASSES = ["T-shirt/top", "Trouser", "Pullover", "Dress", "Coat",
           "Sandal", "Shirt", "Sneaker", "Bag", "Ankle boot"]


class DataError(Exception):
    pass


def find(directory, stem):
    """The path of `stem` or `stem.gz` in `directory`."""
    for name in (stem, stem + ".gz"):
        path = os.path.join(directory, name)
        if os.path.exists(path):
            return path
    raise DataError("%s: neither %s nor %s.gz exists (install Debian's "
                    "dataset-fashion-mnist, or pass --dir)" % (directory, stem, stem))


def read_idx(path, rank):
    """The uint8 array of an IDX file of the given rank."""
    opener = gzip.open if path.endswith(".gz") else open
    try:
        with opener(path, "rb") as f:
            data = f.read()
    except (OSError, EOFError) as e:
        raise DataError("%s: cannot read: %s" % (path, e))
    if len(data) < 4:
        raise DataError("%s: %d bytes, shorter than an IDX header" % (path, len(data)))
    zero, dtype, file_rank = struct.unpack(">HBB", data[:4])
    if zero != 0 or dtype != 0x08:
        raise DataError("%s: not an IDX file of unsigned bytes (header %s)"
                        % (path, data[:4].hex()))
    if file_rank != rank:
        raise DataError("%s: rank %d, expected %d" % (path, file_rank, rank))
    head = 4 + 4 * rank
    if len(data) < head:
        raise DataError("%s: truncated header" % path)
    dims = struct.unpack(">%dI" % rank, data[4:head])
    size = int(np.prod(dims))
    if len(data) != head + size:
        raise DataError("%s: header says %s (%d bytes of data), the file has %d"
                        % (path, "x".join(map(str, dims)), size, len(data) - head))
    return np.frombuffer(data, dtype=np.uint8, offset=head).reshape(dims)


def load_part(directory, part, limit):
    images_path, labels_path = (find(directory, s) for s in PARTS[part])
    images = read_idx(images_path, 3)
    labels = read_idx(labels_path, 1)
    if images.shape[0] != labels.shape[0]:
        raise DataError("%s has %d images but %s has %d labels"
                        % (images_path, images.shape[0], labels_path, labels.shape[0]))
    if labels.size and labels.max() >= len(CLASSES):
        raise DataError("%s: label %d outside 0..9" % (labels_path, labels.max()))
    if limit is not None:
        images, labels = images[:limit], labels[:limit]
    x = (images.astype(np.float32) / np.float32(255.0))[:, None, :, :]
    y = labels.astype(np.int32)
    return np.ascontiguousarray(x), y


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--dir", default=DEFAULT_DIR, help="folder of the IDX files (default %(default)s)")
    ap.add_argument("--out", required=True, help="output folder")
    ap.add_argument("--train-limit", type=int, help="keep the first K training images")
    ap.add_argument("--test-limit", type=int, help="keep the first K test images")
    args = ap.parse_args()
    for flag in ("train_limit", "test_limit"):
        value = getattr(args, flag)
        if value is not None and value <= 0:
            ap.error("--%s must be positive, got %d" % (flag.replace("_", "-"), value))
    try:
        os.makedirs(args.out, exist_ok=True)
        stats = {}
        for part, limit in (("train", args.train_limit), ("test", args.test_limit)):
            x, y = load_part(args.dir, part, limit)
            np.save(os.path.join(args.out, part + "_x.npy"), x)
            np.save(os.path.join(args.out, part + "_y.npy"), y)
            stats[part] = {"images": int(x.shape[0]),
                           "class_counts": np.bincount(y, minlength=10).tolist()}
        stats["classes"] = CLASSES
        with open(os.path.join(args.out, "stats.json"), "w") as f:
            json.dump(stats, f, indent=1)
    except DataError as e:
        print("prepare_data.py: error: %s" % e, file=sys.stderr)
        return 1
    print("fashion-mnist: %d training and %d test images in %s"
          % (stats["train"]["images"], stats["test"]["images"], args.out), file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
