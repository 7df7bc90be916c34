#!/usr/bin/env python3
"""The layering check fails on each kind of violation it exists to catch.

    plant_violations.py ROOT

Copies the C++ sources of the checkout at ROOT (no build trees) into a
temporary folder, checks that scripts/check-layering.py passes there, then
plants one violation at a time, each in a fresh copy of the one file it
touches, and expects the check to exit 1 with a line naming that file and
the include. The kinds are those docs/architecture.md names: codegen/
including the runtime, the plan format including the runtime, compiler/
including the executor, upward includes in bench/ and test/, and a few
more of the floors. Exit status 0 when every plant is caught.
"""
import os
import shutil
import subprocess
import sys
import tempfile

# (file to plant in, include to add, what it stands for)
PLANTS = [
    ("codegen/Lower.cpp", "runtime/Executor.h", "codegen/ including the runtime"),
    ("codegen/Lower.cpp", "runtime/cpu/CpuKernel.h", "codegen/ including a backend"),
    ("plan/PlanReader.cpp", "runtime/Executor.h", "the plan format including the runtime"),
    ("plan/PlanReader.cpp", "ir/Graph.h", "the plan format including the IR"),
    ("compiler/Compile.cpp", "runtime/Executor.h", "compiler/ including the executor"),
    ("compiler/Compile.cpp", "runtime/train/Trainer.h", "compiler/ including the trainer"),
    ("bench/StepBench.cpp", "tools/mpc/Commands.h", "bench/ including the driver"),
    ("test/unit/ir/GraphTest.cpp", "passes/Pass.h", "a test of ir/ including passes/"),
    ("test/unit/ir/GraphTest.cpp", "runtime/Executor.h", "a test of ir/ including the runtime"),
    ("test/unit/io/IoTest.cpp", "codegen/Lower.h", "a test of io/ including codegen/"),
    ("test/unit/support/FileIOTest.cpp", "ir/Graph.h", "a test of support/ including ir/"),
    ("test/unit/runtime/ExecutorTest.cpp", "tools/mpc/Commands.h", "a test including the driver"),
    ("ir/Graph.cpp", "passes/Pass.h", "ir/ including passes/"),
    ("io/Npy.cpp", "runtime/Executor.h", "io/ including the runtime"),
    ("runtime/Executor.cpp", "ir/Graph.h", "the runtime including the IR"),
    ("runtime/Executor.cpp", "runtime/train/Trainer.h", "the executor including the trainer"),
    ("runtime/train/Trainer.cpp", "runtime/mpi/MpiJob.h", "the trainer including MPI"),
    ("runtime/job/Gather.cpp", "runtime/cuda/CudaBackend.h", "the job layer including CUDA"),
    ("support/FileIO.cpp", "ir/Type.h", "support/ including ir/"),
    ("support/FileIO.cpp", "ops/DType.h", "support/ including the op contract"),
    ("ops/Attribute.cpp", "ir/Graph.h", "the op contract including the IR"),
    ("ops/Attribute.cpp", "plan/Plan.h", "the op contract including the plan format"),
]
SOURCE = (".h", ".cpp", ".cu", ".cuh", ".def", ".py")
SKIP_TOP = {".git", "shared"}


def copy_sources(root, dest):
    for dirpath, dirnames, filenames in os.walk(root):
        rel = os.path.relpath(dirpath, root)
        top = rel.split(os.sep)[0]
        if top.startswith("build") or top in SKIP_TOP:
            dirnames[:] = []
            continue
        for name in filenames:
            if name.endswith(SOURCE):
                os.makedirs(os.path.join(dest, rel), exist_ok=True)
                shutil.copy2(os.path.join(dirpath, name), os.path.join(dest, rel, name))


def check(tree):
    script = os.path.join(tree, "scripts", "check-layering.py")
    return subprocess.run([sys.executable, script, tree], capture_output=True, text=True)


def main():
    if len(sys.argv) != 2:
        print(__doc__)
        return 2
    root = sys.argv[1]
    failures = 0
    with tempfile.TemporaryDirectory() as tree:
        copy_sources(root, tree)
        clean = check(tree)
        if clean.returncode != 0:
            print("FAIL: the unmodified copy does not pass:\n" + clean.stdout + clean.stderr)
            return 1
        for path, include, what in PLANTS:
            target = os.path.join(tree, path)
            if not os.path.exists(target):
                print("FAIL: %s: no such file to plant in (update PLANTS)" % path)
                failures += 1
                continue
            with open(target) as f:
                original = f.read()
            with open(target, "w") as f:
                f.write('#include "%s"\n' % include + original)
            r = check(tree)
            with open(target, "w") as f:
                f.write(original)
            caught = r.returncode == 1 and ('%s:1:' % path) in r.stdout and include in r.stdout
            print("%s: %s (%s includes %s)" % ("ok" if caught else "FAIL", what, path, include))
            if not caught:
                print("  exit %d, output:\n%s%s" % (r.returncode, r.stdout, r.stderr))
                failures += 1
        # A folder with no floor fails too.
        os.makedirs(os.path.join(tree, "newlayer"))
        with open(os.path.join(tree, "newlayer", "Thing.cpp"), "w") as f:
            f.write('#include "support/Error.h"\n')
        r = check(tree)
        caught = (r.returncode == 1
                  and "newlayer/Thing.cpp: folder 'newlayer' has no row" in r.stdout)
        print("%s: a source folder with no floor" % ("ok" if caught else "FAIL"))
        failures += 0 if caught else 1
    print("%d of %d plants caught" % (len(PLANTS) + 1 - failures, len(PLANTS) + 1))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
