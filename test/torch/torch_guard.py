"""The rule for a missing PyTorch, held once for the scripts of test/torch/.

    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    from torch_guard import np, torch

imports numpy and torch. Where either is not importable, the script is
skipped: it prints "skipped: ..." naming the interpreter (sys.executable),
the import error and the fix (install python3-torch), and exits with status
77, which ctest reports as a skip (SKIP_RETURN_CODE 77 in test/CMakeLists.txt).
Under CI (CI=true) the same is a failure, exit status 1: a cross-check that
skips in CI checks nothing, and there scripts/install-deps.sh has installed
torch. skip_or_fail applies the same rule to anything else a script needs
(lenet_crosscheck.py: the Fashion-MNIST dataset).
"""
import os
import sys


def skip_or_fail(missing, fix):
    """Exits 77 ("skipped: MISSING; FIX"), or 1 under CI=true."""
    if os.environ.get("CI") == "true":
        print("error: %s under CI (CI=true), where a missing dependency fails; %s"
              % (missing, fix))
        sys.exit(1)
    print("skipped: %s; %s" % (missing, fix))
    sys.exit(77)


try:
    import numpy as np
    import torch
except ImportError as e:  # pragma: no cover - depends on the machine
    skip_or_fail("torch/numpy not available to %s (%s)" % (sys.executable, e),
                 "install python3-torch")

__all__ = ["np", "torch", "skip_or_fail"]
