#!/usr/bin/env python3
"""make-params-corpus.py SPLIT_FILE LIT_DIR OUT_DIR: the .params files of lit tests.

Splits every .test file under LIT_DIR that has a `#--- write.py` section with
SPLIT_FILE (LLVM's split-file, as the lit tests do), runs that writer with
the split folder as its argument, as the test does, and copies the .params
files it writes to OUT_DIR: the seed corpus of the .params reader's fuzz
target, valid files and the cut, corrupt and mismatched ones of the
negative tests.
"""
import glob
import os
import shutil
import subprocess
import sys
import tempfile

split_file, lit_dir, out_dir = sys.argv[1:4]
shutil.rmtree(out_dir, ignore_errors=True)
os.makedirs(out_dir)
count = 0
for test in sorted(glob.glob(os.path.join(lit_dir, "**", "*.test"), recursive=True)):
    with open(test, encoding="utf-8") as f:
        if "\n#--- write.py\n" not in f.read():
            continue
    with tempfile.TemporaryDirectory() as tmp:
        subprocess.run([split_file, test, tmp], check=True)
        subprocess.run([sys.executable, os.path.join(tmp, "write.py"), tmp], check=True)
        for params in sorted(glob.glob(os.path.join(tmp, "*.params"))):
            rel = os.path.relpath(test, lit_dir).replace(os.sep, "_")
            shutil.copy(params, os.path.join(out_dir, rel + "_" + os.path.basename(params)))
            count += 1
print("wrote %d .params files" % count)
sys.exit(0 if count else 1)
