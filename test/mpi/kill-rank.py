#!/usr/bin/env python3
"""SIGKILL one rank of an `mpirun -np R mpc run --save-every 1` job, resume.

Trains the seed model (3 devices) straight to N steps in one process (the
reference). Then starts the same run as an MPI job of 2 or 3 ranks with a
checkpoint write per step, waits a random time, and kills one rank (chosen
at random, rank 0 the writer included) with SIGKILL. Requires:
  * mpirun ends the whole job within LIMIT seconds of the kill, with a
    non-zero exit status (MPI's fail-stop model; a hang is a failure);
  * the checkpoint left is absent (no save yet) or complete: the next job
    resumes from it (with a random number of ranks);
  * the final checkpoint equals the one-process reference byte for byte;
  * no temporary file remains at the end.

usage: kill-rank.py MPC REGRESSION3_DATA SOURCE_DIR WORK_DIR [SEED]
"""
import os
import shutil
import signal
import subprocess
import sys
import time

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), os.pardir, "utils"))
import faults  # noqa: E402  (the steps shared with test/runtime/kill-resume.py)

KILLS = 6
MAX_DELAY = 1.5
LIMIT = 30.0
STEPS = 1500


def ranks_of(mpirun_pid):
    """{rank: pid} of the processes mpirun started (read from their environment)."""
    found = {}
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            with open("/proc/%s/stat" % pid) as f:
                ppid = int(f.read().rsplit(")", 1)[1].split()[1])
            if ppid != mpirun_pid:
                continue
            with open("/proc/%s/environ" % pid, "rb") as f:
                env = dict(kv.split(b"=", 1) for kv in f.read().split(b"\0") if b"=" in kv)
        except (OSError, ValueError, IndexError):
            continue
        if b"OMPI_COMM_WORLD_RANK" in env:
            found[int(env[b"OMPI_COMM_WORLD_RANK"])] = int(pid)
    return found


def main():
    mpc, gen, src, work, rng = faults.args("kill-rank", sys.argv)
    mpirun = shutil.which("mpirun")
    if not mpirun:
        return faults.fail("mpirun not found (scripts/install-deps.sh installs openmpi-bin)")
    env = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")
    s = faults.Setup(mpc, gen, src, work, STEPS, seed=4, log_every=100)
    kills = 0
    while True:
        ranks = rng.choice([2, 3])
        proc = s.start([mpirun, "--oversubscribe", "-np", str(ranks)], env=env)
        if kills < KILLS:
            time.sleep(rng.uniform(0.3, MAX_DELAY))
            victim = rng.randrange(ranks)
            pid = ranks_of(proc.pid).get(victim)
            if pid is not None and proc.poll() is None:
                try:
                    os.kill(pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
                killed_at = time.time()
                try:
                    proc.communicate(timeout=LIMIT)
                except subprocess.TimeoutExpired:
                    proc.kill()
                    proc.communicate()
                    return faults.fail("the job did not end within %.0f s of SIGKILL to rank %d"
                                       % (LIMIT, victim))
                took = time.time() - killed_at
                if proc.returncode == 0:
                    return faults.fail("the job exited 0 after rank %d was killed" % victim)
                kills += 1
                print("kill %d: rank %d of %d killed; the job ended in %.2f s (exit %d)"
                      % (kills, victim, ranks, took, proc.returncode))
                continue
        if faults.finish(proc, timeout=300) is None:
            return 1
        break

    if not s.final_equal():
        return faults.fail("the final checkpoint differs from the one-process run's")
    if s.left():
        return faults.fail("files left beside the checkpoint: %s" % s.left())
    print("kill-rank: %d kills, final checkpoint equals the one-process run's" % kills)
    return 0


if __name__ == "__main__":
    sys.exit(main())
