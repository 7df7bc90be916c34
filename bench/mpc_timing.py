"""What the Python benchmarks share: the wall time of `mpc run` for a
number of steps (the difference of two runs' times over the difference of
their step counts is the step time, start-up cancelled out), and the GPT
benchmarks' random token data."""
import os
import subprocess
import time


def time_mpc(mpc, plan, x, y, steps, extra=()):
    t = time.perf_counter()
    subprocess.run([mpc, "run", plan, "--input", "x=" + x, "--input", "y=" + y,
                    "--steps", str(steps), "--log-every", str(10 ** 9)] + list(extra),
                   check=True, stdout=subprocess.DEVNULL)
    return time.perf_counter() - t


def write_tokens(np, work, vocab, rows, context):
    """Random token ids in [0, vocab) (seed 0), `rows` sequences of context
    + 1: x the first `context`, y the next-token targets. Saves work/x.npy
    and work/y.npy; returns (x path, y path, xs, ys)."""
    rng = np.random.default_rng(0)
    ids = rng.integers(0, vocab, (rows, context + 1), dtype=np.int32)
    xs, ys = np.ascontiguousarray(ids[:, :-1]), np.ascontiguousarray(ids[:, 1:])
    x, y = os.path.join(work, "x.npy"), os.path.join(work, "y.npy")
    np.save(x, xs)
    np.save(y, ys)
    return x, y, xs, ys
