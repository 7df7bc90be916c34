#!/usr/bin/env python3
"""Collective bytes per step of a tensor-parallel GPT against Megatron-LM's formula.

Writes the GPT example's model split Megatron's way (make_model.py
--tensor-parallel T), compiles it with `mpc compile --stats` on one group of
T devices per pipeline stage, and sums the collectives the plan holds (the
`collective ... per step, N from each member` lines). Megatron-LM's
tensor-parallel communication per transformer block and step is 4
all-reduces of the activations, B*T*D floats each (2 forward: after the
attention's and the MLP's row layer; 2 backward: at each block input), and
nothing else: 4 * blocks * B*T*D*4 bytes contributed by each member. The
script prints both and their ratio for a few shapes and group sizes; a
ratio of 1 is Megatron's communication exactly.

    python3 bench/tensor-parallel-comm.py build/tools/mpc/mpc
"""
import os
import re
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
MAKE_MODEL = os.path.join(HERE, "..", "examples", "gpt", "make_model.py")
UNITS = {"B": 1, "KiB": 1 << 10, "MiB": 1 << 20, "GiB": 1 << 30}
LINE = re.compile(r"collective (\w+) over \[([^\]]*)\]: (\d+) per step, ([\d.]+) (B|KiB|MiB|GiB) "
                  r"from each member")


def measure(mpc, blocks, d, heads, batch, context, t, stages):
    with tempfile.TemporaryDirectory() as tmp:
        model = os.path.join(tmp, "m.json")
        subprocess.run([sys.executable, MAKE_MODEL, "--vocab", "64", "--blocks", str(blocks),
                        "--d-model", str(d), "--heads", str(heads), "--batch", str(batch),
                        "--context", str(context), "--devices", str(stages), "--dropout", "0",
                        "--tensor-parallel", str(t), "-o", model], check=True)
        groups = ",".join("stage%d=%s" % (s, "+".join("cpu:%d" % (s * t + i) for i in range(t)))
                          for s in range(stages))
        out = subprocess.run([mpc, "compile", model, "-o", os.path.join(tmp, "p.bin"),
                              "--map", groups, "--stats"], check=True, capture_output=True,
                             text=True)
    total, kinds = 0, {}
    for m in LINE.finditer(out.stderr):
        kind, count, size, unit = m.group(1), int(m.group(3)), float(m.group(4)), m.group(5)
        # One line per op and group: its count per step and the bytes each
        # member contributes over the step.
        kinds[kind] = kinds.get(kind, 0) + count
        total += size * UNITS[unit]
    return total / stages, {k: n // stages for k, n in kinds.items()}


def main():
    if len(sys.argv) != 2:
        sys.exit("usage: tensor-parallel-comm.py MPC")
    mpc = sys.argv[1]
    print("%-34s %14s %14s %7s  %s" % ("shape", "plan B/member", "Megatron B", "ratio",
                                       "collectives per stage group"))
    for blocks, d, heads, batch, context, t, stages in [
            (2, 64, 4, 8, 32, 2, 1), (2, 64, 4, 8, 32, 4, 1), (4, 128, 8, 4, 64, 2, 2),
            (4, 128, 8, 4, 64, 4, 2)]:
        got, kinds = measure(mpc, blocks, d, heads, batch, context, t, stages)
        megatron = 4 * blocks * batch * context * d * 4 / stages
        shape = "L=%d D=%d B=%d T=%d t=%d p=%d" % (blocks, d, batch, context, t, stages)
        print("%-34s %14.0f %14.0f %7.3f  %s" % (shape, got, megatron, got / megatron,
                                                 ", ".join("%d %s" % (n, k)
                                                           for k, n in sorted(kinds.items()))))


if __name__ == "__main__":
    main()
