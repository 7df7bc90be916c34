#!/usr/bin/env python3
"""The include-layering rule of docs/architecture.md, over the whole tree.

    check-layering.py [ROOT]      (ROOT: a checkout; default: this one)

Every source file (.h .cpp .cu .cuh .def) in a folder of RULES may include
only what its row allows; a file in a folder with no row fails too, so a new
folder has to be given its floor. Rows are matched by the longest folder
prefix. An entry is a folder (allowing everything under it), a file, or
"!folder", which forbids that folder even where a shorter allowed one would
admit it (runtime/train may include runtime/ but not runtime/mpi/).

The floors, bottom up:
    support -> ops -> {ir, plan} -> io -> passes -> frontend -> codegen
            -> compiler -> runtime (executor, backends; job, train, mpi, cuda)
            -> tools
with the tests and benchmarks on top: a test of layer L includes L, the
floors below it, compiler/ (the one way tests build models and plans) and
ir/ (the reference semantics that kernels are checked against); nothing
but tools/ includes tools/, except the flag fuzzer, which includes the
driver's flags (tools/mpc/Flags.h) to parse them without running a command;
the checkpoint fuzzer checks files as --resume does (runtime/train/Resume.h).

Exit status 0 when the tree keeps the rule, 1 with one line per violation
("FILE:LINE: FOLDER/ must not include ..."), 2 on a bad ROOT.
"""
import os
import re
import sys

RUNTIME_CORE = "support ops plan runtime !runtime/job !runtime/train !runtime/mpi !runtime/cuda"
# Hand-built plans in tests take the op table from codegen until the op
# records sit below plan/ (codegen::fillOpTable).
OP_TABLE = "codegen/Lower.h"

RULES = {
    "support": "support",
    "ops": "support ops",
    "ir": "support ops ir",
    "plan": "support ops plan",
    "io": "support ops plan io",
    "passes": "support ops ir passes",
    "frontend": "support ops ir passes frontend",
    "codegen": "support ops ir plan codegen",
    "compiler": "support ops ir plan passes codegen compiler",
    "runtime": RUNTIME_CORE,
    "runtime/cpu": RUNTIME_CORE,
    "runtime/job": "support ops plan io runtime !runtime/train !runtime/mpi !runtime/cuda",
    "runtime/mpi": "support ops plan io runtime !runtime/train !runtime/cuda",
    "runtime/cuda": "support ops plan io runtime !runtime/train !runtime/mpi",
    "runtime/train": "support ops plan io runtime !runtime/mpi !runtime/cuda",
    "tools": "support ops ir plan io passes frontend codegen compiler runtime tools",
    "examples": "support ops plan io",
    "bench": "support ops ir plan io passes codegen compiler runtime bench",
    "test/fuzz": "support ops ir plan io passes frontend compiler runtime/train/Resume.h "
                 "tools/mpc/Flags.h",
    "test/unit": "support test/unit",
    "test/unit/support": "support",
    "test/unit/ops": "support ops test/unit",
    "test/unit/ir": "support ops ir test/unit",
    "test/unit/plan": "support ops ir plan compiler test/unit " + OP_TABLE,
    "test/unit/io": "support ops plan io test/unit",
    "test/unit/passes": "support ops ir passes test/unit",
    "test/unit/frontend": "support ops ir passes frontend test/unit",
    "test/unit/codegen": "support ops ir plan passes codegen compiler test/unit",
    "test/unit/runtime": "support ops ir plan io runtime !runtime/mpi !runtime/cuda compiler "
    "test/unit " + OP_TABLE,
    "test/unit/mpi": "support ops plan io runtime !runtime/cuda test/unit",
    "test/unit/runtime_cuda": "support ops ir plan io runtime !runtime/mpi compiler test/unit",
}

# Folders with no C++ of the project's layers (build trees, scripts, lit and
# Python tests, docs).
SKIP = re.compile(r"^(build[^/]*|\.git|cmake|docs|scripts|shared|test/lit|test/torch|test/mpi"
                  r"|test/runtime|test/data)(/|$)")
SOURCE = (".h", ".cpp", ".cu", ".cuh", ".def")
INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+/[^"]+)"')
CROSSING = set()


def row_for(folder):
    best = None
    for name in RULES:
        inside = folder == name or folder.startswith(name + "/")
        if inside and (best is None or len(name) > len(best)):
            best = name
    return best


def allowed(include, entries):
    allow = deny = -1
    for e in entries:
        if e.startswith("!"):
            if include.startswith(e[1:] + "/"):
                deny = max(deny, len(e) - 1)
        elif include == e or include.startswith(e + "/"):
            allow = max(allow, len(e))
    return allow >= 0 and allow > deny


def violations(root):
    out = []
    for dirpath, dirnames, filenames in os.walk(root):
        rel_dir = os.path.relpath(dirpath, root).replace(os.sep, "/")
        rel_dir = "" if rel_dir == "." else rel_dir
        dirnames[:] = sorted(d for d in dirnames
                             if not SKIP.match((rel_dir + "/" if rel_dir else "") + d))
        for name in sorted(filenames):
            if not name.endswith(SOURCE):
                continue
            path = (rel_dir + "/" if rel_dir else "") + name
            row = row_for(rel_dir)
            if row is None:
                out.append("%s: folder '%s' has no row in scripts/check-layering.py "
                           "(give it its floor)" % (path, rel_dir or "."))
                continue
            entries = RULES[row].split()
            with open(os.path.join(dirpath, name), encoding="utf-8", errors="replace") as f:
                for lineno, line in enumerate(f, 1):
                    m = INCLUDE.match(line)
                    if not m or m.group(1) in CROSSING or allowed(m.group(1), entries):
                        continue
                    out.append('%s:%d: %s/ must not include "%s" (allowed: %s)'
                               % (path, lineno, rel_dir, m.group(1), RULES[row]))
    return out


def main():
    root = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), "..")
    if not os.path.isdir(root):
        print("check-layering: no such folder '%s'" % root, file=sys.stderr)
        return 2
    found = violations(root)
    if found:
        print("layering violations (docs/architecture.md):")
        print("\n".join(found))
        return 1
    print("layering: ok")
    return 0


if __name__ == "__main__":
    sys.exit(main())
