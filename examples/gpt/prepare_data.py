#!/usr/bin/env python3
"""Character-level training data for the GPT example, from fortune files.

Reads fortune-format text (documents separated by lines holding only `%`),
by default every fortune file of /usr/share/games/fortunes (Debian's
`fortunes` and `fortunes-min` packages), and writes to --out DIR:

  train_x.npy, train_y.npy  int32 [N, T] windows of character ids; y is x
  val_x.npy,   val_y.npy    shifted by one character (the next-char targets)
  vocab.json                {"vocab_size": V, "chars": [...]}: id i is chars[i]
  stats.json                sizes and the unigram entropy (below)

Choices, fixed so that every run on the same text gives the same files:
  * files: plain files only, in name order; `*.dat` (strfile indexes),
    symlinks (the `*.u8` aliases) and files whose bytes repeat an earlier
    file are skipped. Text is UTF-8 (bad bytes replaced).
  * documents: the text between `%` lines, outer blank lines stripped;
    empty documents and exact repeats of an earlier document are dropped
    (some fortunes appear in several files; keeping them would leak
    validation text into training).
  * split: document k (0-based, after dropping) goes to validation when
    k % VAL_EVERY == VAL_EVERY - 1 (every 10th by default), otherwise to
    training; interleaving keeps every file represented in both parts.
  * each part is one stream: its documents in order, each followed by a
    `%` line, as in the files, so the model sees document boundaries.
  * vocabulary: the sorted set of characters of the training stream.
    Validation characters outside it are dropped (their count is printed
    and saved); no id is reserved for them, so a model is never asked to
    predict a class it was never trained on.
  * windows: start at 0, STRIDE apart (default T: non-overlapping inputs);
    x = stream[s : s+T], y = stream[s+1 : s+T+1]; a tail shorter than
    T+1 characters is dropped.

The unigram entropy H = -sum_c p(c) ln p(c) of the training stream, in nats,
is the cross-entropy a model that ignores context reaches on the training
text; a GPT that learns anything goes below it. stats.json also holds the
cross-entropy of that same unigram distribution on the validation stream,
the matching baseline for the validation loss.
"""
import argparse
import collections
import hashlib
import json
import math
import os
import sys

import numpy as np

DEFAULT_DIR = "/usr/share/games/fortunes"


def fail(msg):
    print("prepare_data.py: error: " + msg, file=sys.stderr)
    sys.exit(1)


def default_files(folder):
    """The fortune files of a folder: plain files, no indexes, no symlinks."""
    if not os.path.isdir(folder):
        fail("%s: no such folder; install Debian's fortunes package "
             "(apt-get install fortunes) or pass --text FILE..." % folder)
    files = []
    for name in sorted(os.listdir(folder)):
        path = os.path.join(folder, name)
        if name.endswith(".dat") or os.path.islink(path) or not os.path.isfile(path):
            continue
        files.append(path)
    if not files:
        fail("%s: no fortune files in this folder" % folder)
    return files


def read_documents(paths):
    """(documents, files used); duplicate files and documents dropped."""
    seen_files, seen_docs, docs, used = set(), set(), [], []
    for path in paths:
        try:
            with open(path, "rb") as f:
                raw = f.read()
        except OSError as e:
            fail("%s: %s" % (path, e.strerror or e))
        if not raw.strip():
            fail("%s: empty input file" % path)
        digest = hashlib.sha256(raw).digest()
        if digest in seen_files:
            continue
        seen_files.add(digest)
        used.append(path)
        text = raw.decode("utf-8", errors="replace").replace("\r\n", "\n")
        doc, found = [], 0  # found: non-empty documents, repeats included
        for line in text.split("\n") + ["%"]:
            if line.rstrip() != "%":
                doc.append(line)
                continue
            body = "\n".join(doc).strip("\n")
            doc = []
            if not body.strip():
                continue
            found += 1
            if body not in seen_docs:
                seen_docs.add(body)
                docs.append(body)
        if found == 0:
            fail("%s: no documents (text between %% lines) in this file" % path)
    return docs, used


def stream(docs):
    return "".join(d + "\n%\n" for d in docs)


def windows(ids, context, stride):
    """x, y int32 [N, T]: y[i] is x[i] shifted by one position."""
    n = 0 if len(ids) < context + 1 else (len(ids) - context - 1) // stride + 1
    if n == 0:
        return np.zeros((0, context), np.int32), np.zeros((0, context), np.int32)
    starts = np.arange(n) * stride
    idx = starts[:, None] + np.arange(context)[None, :]
    arr = np.asarray(ids, dtype=np.int32)
    return arr[idx], arr[idx + 1]


def main():
    ap = argparse.ArgumentParser(
        description="Build character-level GPT training data (int32 NPY windows) "
                    "from fortune-format text.",
        epilog="Documents are split on lines holding only %; every K-th "
               "document goes to validation; the vocabulary comes from the training "
               "part and unknown validation characters are dropped. See the module "
               "docstring for every choice.")
    ap.add_argument("--text", nargs="+", metavar="FILE",
                    help="fortune-format text files (default: every fortune file in %s)"
                    % DEFAULT_DIR)
    ap.add_argument("--out", required=True, metavar="DIR", help="output folder (created)")
    ap.add_argument("--context", type=int, default=64, metavar="T",
                    help="window length T in characters (default 64)")
    ap.add_argument("--stride", type=int, metavar="S",
                    help="distance between window starts (default T: non-overlapping)")
    ap.add_argument("--val-every", type=int, default=10, metavar="K",
                    help="every K-th document goes to validation (default 10)")
    args = ap.parse_args()
    if args.context < 1:
        fail("--context must be at least 1, got %d" % args.context)
    stride = args.stride if args.stride is not None else args.context
    if stride < 1:
        fail("--stride must be at least 1, got %d" % stride)
    if args.val_every < 2:
        fail("--val-every must be at least 2, got %d" % args.val_every)

    paths = args.text if args.text else default_files(DEFAULT_DIR)
    docs, used = read_documents(paths)
    if not docs:
        fail("%s: no documents found" % ", ".join(paths))
    k = args.val_every
    train_docs = [d for i, d in enumerate(docs) if i % k != k - 1]
    val_docs = [d for i, d in enumerate(docs) if i % k == k - 1]
    train_text, val_text = stream(train_docs), stream(val_docs)

    chars = sorted(set(train_text))
    index = {c: i for i, c in enumerate(chars)}
    train_ids = [index[c] for c in train_text]
    val_ids = [index[c] for c in val_text if c in index]
    dropped = len(val_text) - len(val_ids)

    counts = collections.Counter(train_ids)
    total = len(train_ids)
    entropy = -sum(n / total * math.log(n / total) for n in counts.values())
    val_xent = (-sum(math.log(counts[i] / total) for i in val_ids) / len(val_ids)
                if val_ids else float("nan"))

    tx, ty = windows(train_ids, args.context, stride)
    vx, vy = windows(val_ids, args.context, stride)
    if len(tx) == 0:
        fail("%s: training text of %d characters is shorter than one window of %d"
             % (", ".join(paths), len(train_ids), args.context + 1))

    if len(vx) == 0:
        print("prepare_data.py: warning: the validation text (%d characters) holds no "
              "window of %d; val_x.npy is empty" % (len(val_ids), args.context + 1),
              file=sys.stderr)

    os.makedirs(args.out, exist_ok=True)
    for name, arr in (("train_x", tx), ("train_y", ty), ("val_x", vx), ("val_y", vy)):
        np.save(os.path.join(args.out, name + ".npy"), arr)
    with open(os.path.join(args.out, "vocab.json"), "w") as f:
        json.dump({"vocab_size": len(chars), "chars": chars}, f, ensure_ascii=False)
        f.write("\n")
    stats = {
        "files": len(used), "documents": len(docs),
        "train_documents": len(train_docs), "val_documents": len(val_docs),
        "train_chars": len(train_ids), "val_chars": len(val_ids),
        "val_chars_dropped": dropped, "vocab_size": len(chars),
        "context": args.context, "stride": stride, "val_every": k,
        "train_windows": int(len(tx)), "val_windows": int(len(vx)),
        "unigram_entropy_nats": entropy, "unigram_val_cross_entropy_nats": val_xent,
    }
    with open(os.path.join(args.out, "stats.json"), "w") as f:
        json.dump(stats, f, indent=1)
        f.write("\n")
    print("files %d, documents %d (train %d, validation %d)"
          % (len(used), len(docs), len(train_docs), len(val_docs)))
    print("characters: train %d, validation %d (%d unknown dropped); vocabulary %d"
          % (len(train_ids), len(val_ids), dropped, len(chars)))
    print("windows of %d (stride %d): train %d, validation %d"
          % (args.context, stride, len(tx), len(vx)))
    print("unigram entropy of the training text: %.4f nats (validation cross-entropy %.4f)"
          % (entropy, val_xent))
    return 0


if __name__ == "__main__":
    sys.exit(main())
