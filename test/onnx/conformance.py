#!/usr/bin/env python3
"""The ONNX backend node tests (Debian's libonnx-testdata) through mpc.

Every node test directory (model.onnx, test_data_set_0/input_*.pb and
output_*.pb) goes through mpc as a PyTorch export would: its first input is
fed at run time, and every other input (a node test's weights, shapes, axes,
indices) becomes an initializer holding its test data, so mpc sees it as a
parameter or a constant. The model is imported with `mpc import-onnx
--inference --params-out`, compiled, run for one step on the first input (an
NPY file; int64 as int32) with `--init`, and its outputs are compared with
the expected ones at the backend tests' tolerances (rtol 1e-3, atol 1e-7, as
onnx.backend.test's runner). A test is:
  * skipped (unsupported op) when its model has an op that `mpc import-onnx
    --list-ops` does not list;
  * skipped (folded at import only) when the test feeds run-time values to
    an op mpc folds only when its inputs are known (Shape, Range, Sqrt...),
    or asks for an output that is known at import;
  * passed, or failed.
Every failure must be listed, with its reason, in known-failures.txt next to
this script, and every test listed there must fail: a fix that makes a
listed test pass fails the run until the entry is removed. The last line is
the figure docs/import-onnx.md and the README state:

    N of M supported node tests pass, K skipped (unsupported op), F skipped (folded at import only)

usage: conformance.py MPC TESTDATA_NODE_DIR WORK_DIR [--only NAME ...] [--jobs J] [--verbose]
                      [--update-known]
--update-known rewrites known-failures.txt to the failures of this run,
keeping the reasons of tests already listed and giving new ones the error
text, to be edited into a reason.
Skipped (exit 77) without numpy, onnx (python3-onnx) or the test data, failing
under CI=true (test/torch/torch_guard.py's rule).
"""
import argparse
import concurrent.futures
import os
import re
import shutil
import subprocess
import sys

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "torch"))
from torch_guard import skip_or_fail  # noqa: E402

try:
    import numpy as np
    import onnx
    from onnx import numpy_helper
except ImportError as e:  # pragma: no cover
    skip_or_fail("%s cannot import %s" % (sys.executable, e.name),
                 "install python3-numpy and python3-onnx (scripts/install-deps.sh)")

RTOL, ATOL = 1e-3, 1e-7
UNSUPPORTED = re.compile(r"op (\w+) \(opset \d+\) is not supported")
FOLDED = re.compile(r"is folded at import only|is a constant known at import")


def load_tensor(path):
    t = onnx.TensorProto()
    with open(path, "rb") as f:
        t.ParseFromString(f.read())
    return numpy_helper.to_array(t)


def run(cmd, cwd):
    p = subprocess.run(cmd, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                       timeout=120)
    return p.returncode, p.stdout.strip()


def supported_ops(mpc):
    """The ops `mpc import-onnx --list-ops` lists."""
    text = subprocess.run([mpc, "import-onnx", "--list-ops"], stdout=subprocess.PIPE, text=True,
                          check=True).stdout
    return {line.split("|")[1].strip() for line in text.splitlines()[2:] if line.startswith("|")}


def one_test(mpc, ops, directory, work):
    """('pass'|'fail'|'unsupported'|'folded', reason)."""
    name = os.path.basename(directory)
    out = os.path.join(work, name)
    shutil.rmtree(out, ignore_errors=True)
    os.makedirs(out)
    model = onnx.load(os.path.join(directory, "model.onnx"))
    missing = sorted({n.op_type for n in model.graph.node} - ops)
    if missing:
        return "unsupported", ", ".join(missing)
    inits = {t.name for t in model.graph.initializer}
    inputs = [i for i in model.graph.input if i.name not in inits]
    sets = sorted(d for d in os.listdir(directory) if d.startswith("test_data_set_"))
    if not sets:
        return "fail", "no test data set"
    data = os.path.join(directory, sets[0])
    arrays = {}
    for k, i in enumerate(inputs):
        path = os.path.join(data, "input_%d.pb" % k)
        if not os.path.exists(path):
            continue  # an omitted optional input
        a = load_tensor(path)
        if k == 0:
            arrays[i.name] = a
            continue
        # The others become initializers holding their test data.
        model.graph.initializer.append(numpy_helper.from_array(a, i.name))
        model.graph.input.remove(i)
    onnx.save(model, os.path.join(out, "model.onnx"))
    # Inputs: their shapes from the data (symbolic dimensions fixed).
    flags = []
    for name_, a in arrays.items():
        if a.dtype == np.float32:
            spec = ""
        elif a.dtype in (np.int64, np.int32):
            spec = ":i32"
        else:
            return "fail", "input %s is %s; mpc takes float32 and int64/int32 inputs" % (name_, a.dtype)
        if a.ndim == 0:
            return "fail", "input %s is a scalar; mpc inputs have a batch axis" % name_
        flags += ["--input", "%s=%s%s" % (name_, ",".join(str(d) for d in a.shape), spec)]
    rc, text = run([mpc, "import-onnx", "model.onnx", "-o", "m.json",
                    "--inference", "--params-out", "init.safetensors"] + flags, out)
    if rc != 0:
        m = UNSUPPORTED.search(text)
        if m:
            return "unsupported", m.group(1)
        if FOLDED.search(text):
            return "folded", text.splitlines()[-1]
        return "fail", "import: " + text.splitlines()[-1]
    rc, text = run([mpc, "compile", "m.json", "-o", "m.bin"], out)
    if rc != 0:
        return "fail", "compile: " + text.splitlines()[-1]
    cmd = [mpc, "run", "m.bin", "--steps", "1", "--init", "init.safetensors"]
    for name_, a in arrays.items():
        path = os.path.join(out, "in_%d.npy" % len(cmd))
        if a.dtype == np.int64:
            if a.size and (a.min() < -2**31 or a.max() >= 2**31):
                return "fail", "input %s holds values beyond int32" % name_
            a = a.astype(np.int32)
        np.save(path, a)
        cmd += ["--input", "%s=%s" % (name_, path)]
    outputs = [o.name for o in model.graph.output]
    for k, o in enumerate(outputs):
        cmd += ["--output", "%s=out_%d.npy" % (re.sub(r"[\s\"'%@,(){}]", "_", o), k)]
    rc, text = run(cmd, out)
    if rc != 0:
        return "fail", "run: " + text.splitlines()[-1]
    for k, o in enumerate(outputs):
        want = load_tensor(os.path.join(data, "output_%d.pb" % k))
        got = np.load(os.path.join(out, "out_%d.npy" % k))
        if want.dtype == np.int64:
            want = want.astype(np.int32)
        if got.size == want.size:
            got = got.reshape(want.shape)
        if got.shape != want.shape:
            return "fail", "output %s: shape %s, expected %s" % (o, got.shape, want.shape)
        if not np.allclose(got, want, rtol=RTOL, atol=ATOL, equal_nan=True):
            err = np.max(np.abs(got.astype(np.float64) - want.astype(np.float64)))
            return "fail", "output %s differs: max abs error %.3g" % (o, err)
    shutil.rmtree(out, ignore_errors=True)
    return "pass", ""


def read_known(path):
    known = {}
    for line in open(path):
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        name, _, reason = line.partition(" ")
        known[name] = reason.strip()
    return known


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("mpc")
    ap.add_argument("testdata")
    ap.add_argument("work")
    ap.add_argument("--only", nargs="*")
    ap.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    ap.add_argument("--verbose", action="store_true")
    ap.add_argument("--update-known", action="store_true")
    a = ap.parse_args()
    if not os.path.isdir(a.testdata):
        skip_or_fail("no ONNX node tests at %s" % a.testdata, "install libonnx-testdata")
    mpc = os.path.abspath(a.mpc)
    os.makedirs(a.work, exist_ok=True)
    dirs = sorted(os.path.join(a.testdata, d) for d in os.listdir(a.testdata)
                  if os.path.exists(os.path.join(a.testdata, d, "model.onnx")))
    if a.only:
        dirs = [d for d in dirs if os.path.basename(d) in a.only]
    results = {}
    ops = supported_ops(mpc)
    with concurrent.futures.ThreadPoolExecutor(max_workers=a.jobs) as pool:
        futures = {pool.submit(one_test, mpc, ops, d, a.work): os.path.basename(d) for d in dirs}
        for f in concurrent.futures.as_completed(futures):
            try:
                results[futures[f]] = f.result()
            except Exception as e:  # a broken test file, a timeout
                results[futures[f]] = ("fail", "%s: %s" % (type(e).__name__, e))
    known_file = os.path.join(os.path.dirname(os.path.abspath(__file__)), "known-failures.txt")
    known = read_known(known_file)
    if a.update_known and not a.only:
        header = [l.rstrip("\n") for l in open(known_file) if l.startswith("#") or not l.strip()]
        rows = sorted((known.get(n, r), n) for n, (st, r) in results.items() if st == "fail")
        with open(known_file, "w") as f:
            f.write("\n".join([h for h in header if h] + [""] + ["%s %s" % (n, r) for r, n in rows]) + "\n")
        known = read_known(known_file)
    counts = {"pass": 0, "fail": 0, "unsupported": 0, "folded": 0}
    problems = []
    for name in sorted(results):
        status, reason = results[name]
        counts[status] += 1
        if a.verbose or (status == "fail" and name not in known):
            print("%-60s %s %s" % (name, status, reason))
        if status == "fail" and name not in known:
            problems.append("%s fails and is not in known-failures.txt: %s" % (name, reason))
        if status != "fail" and name in known and not a.only:
            problems.append("%s is listed in known-failures.txt but %s" %
                            (name, "passes" if status == "pass" else "is skipped (%s)" % status))
    for p in problems:
        print("error: " + p)
    supported = counts["pass"] + counts["fail"]
    print("%d of %d supported node tests pass, %d skipped (unsupported op), %d skipped (folded at "
          "import only)" % (counts["pass"], supported, counts["unsupported"], counts["folded"]))
    sys.exit(1 if problems else 0)


if __name__ == "__main__":
    main()
