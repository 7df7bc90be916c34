"""What the Python benchmarks share: the wall time of `mpc run` for a
number of steps (the difference of two runs' times over the difference of
their step counts is the step time, start-up cancelled out)."""
import subprocess
import time


def time_mpc(mpc, plan, x, y, steps, extra=()):
    t = time.perf_counter()
    subprocess.run([mpc, "run", plan, "--input", "x=" + x, "--input", "y=" + y,
                    "--steps", str(steps), "--log-every", str(10 ** 9)] + list(extra),
                   check=True, stdout=subprocess.DEVNULL)
    return time.perf_counter() - t
