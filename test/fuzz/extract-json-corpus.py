#!/usr/bin/env python3
"""extract-json-corpus.py LIT_DIR OUT_DIR: the models embedded in lit tests.

Writes every `#--- NAME.json` section of every .test file under LIT_DIR to
OUT_DIR (one file each), the seed corpus of the JSON reader's fuzz target:
valid models, and the invalid ones of the reader's negative tests.
"""
import os
import sys

lit_dir, out_dir = sys.argv[1], sys.argv[2]
os.makedirs(out_dir, exist_ok=True)
count = 0
for root, _, files in os.walk(lit_dir):
    for name in sorted(files):
        if not name.endswith(".test"):
            continue
        current, lines = None, []
        def flush():
            global count
            if current and current.endswith(".json"):
                rel = os.path.relpath(os.path.join(root, name), lit_dir).replace(os.sep, "_")
                with open(os.path.join(out_dir, rel + "_" + current), "w") as f:
                    f.write("".join(lines))
                count += 1
        with open(os.path.join(root, name), encoding="utf-8") as f:
            for line in f:
                if line.startswith("#--- "):
                    flush()
                    current, lines = line[5:].strip(), []
                elif current:
                    lines.append(line)
        flush()
print("extracted %d models" % count)
sys.exit(0 if count else 1)
