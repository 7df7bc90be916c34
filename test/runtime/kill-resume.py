#!/usr/bin/env python3
"""SIGKILL at random instants during `mpc run --save-every`, then --resume.

Trains the seed model straight to N steps once (the reference). Then starts
the same run with --save-every 1 (a checkpoint write per step, so kills land
inside writes too), kills it with SIGKILL after a random delay, and resumes
from whatever checkpoint the kill left, again and again, until a run
completes. Requires:
  * after every kill, the checkpoint is absent (no save yet) or a complete
    file that --resume accepts (the next run proves it);
  * the final checkpoint equals the reference byte for byte, and the loss
    lines the last run printed equal the reference's for those steps;
  * no temporary file remains in the folder at the end.
Bounded: at most KILLS kills with delays up to MAX_DELAY seconds.

usage: kill-resume.py MPC REGRESSION3_DATA SOURCE_DIR WORK_DIR [SEED]
"""
import os
import signal
import sys
import time

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), os.pardir, "utils"))
import faults  # noqa: E402  (the steps shared with test/mpi/kill-rank.py)

KILLS = 12
MAX_DELAY = 0.4
STEPS = 2000


def main():
    mpc, gen, src, work, rng = faults.args("kill-resume", sys.argv)
    s = faults.Setup(mpc, gen, src, work, STEPS, seed=11, log_every=1)
    kills, debris_seen = 0, 0
    while True:
        proc = s.start()
        if kills < KILLS:
            time.sleep(rng.uniform(0, MAX_DELAY))
            if proc.poll() is None:
                proc.send_signal(signal.SIGKILL)
                proc.communicate()
                kills += 1
                debris_seen += sum(".tmp." in n for n in os.listdir(s.ckpt_dir))
                continue
        out = faults.finish(proc)
        if out is None:
            return 1
        break

    if not s.final_equal():
        return faults.fail("the resumed checkpoint differs from the uninterrupted run's")
    lines = out.splitlines()
    if not lines or lines != s.ref_lines[len(s.ref_lines) - len(lines):]:
        return faults.fail("the last run's loss lines differ from the uninterrupted run's")
    if s.left():
        return faults.fail("files left in the checkpoint folder: %s" % s.left())
    print("kill-resume: %d kills, named temporaries seen right after a kill: %d, "
          "final run resumed at step %d; checkpoint equal to the uninterrupted run's"
          % (kills, debris_seen, STEPS - len(lines)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
