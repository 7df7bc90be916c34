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
import random
import shutil
import signal
import subprocess
import sys
import time

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
    mpc, gen, src, work = sys.argv[1:5]
    seed = int(sys.argv[5]) if len(sys.argv) > 5 else int(time.time())
    rng = random.Random(seed)
    print("kill-rank: seed %d" % seed)
    mpirun = shutil.which("mpirun")
    if not mpirun:
        print("FAIL: mpirun not found (scripts/install-deps.sh installs openmpi-bin)")
        return 1
    env = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    subprocess.run([gen, work, "--rows", "1000"], check=True, stdout=subprocess.DEVNULL)
    plan = os.path.join(work, "plan.bin")
    subprocess.run([mpc, "compile", os.path.join(src, "examples/regression3/model.json"),
                    "-o", plan], check=True)
    run = [mpc, "run", plan, "--input", "x=" + os.path.join(work, "x.npy"),
           "--input", "y=" + os.path.join(work, "y.npy"), "--steps", str(STEPS),
           "--shuffle", "--seed", "4", "--log-every", "100"]
    ref = os.path.join(work, "ref.safetensors")
    subprocess.run(run + ["--save", ref], check=True, capture_output=True)

    ckpt_dir = os.path.join(work, "ckpt")
    os.makedirs(ckpt_dir)
    ckpt = os.path.join(ckpt_dir, "run.safetensors")
    kills = 0
    while True:
        ranks = rng.choice([2, 3])
        cmd = [mpirun, "--oversubscribe", "-np", str(ranks)] + run + \
            ["--save", ckpt, "--save-every", "1"]
        if os.path.exists(ckpt):
            cmd += ["--resume", ckpt]
        proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env,
                                text=True)
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
                    print("FAIL: the job did not end within %.0f s of SIGKILL to rank %d"
                          % (LIMIT, victim))
                    return 1
                took = time.time() - killed_at
                if proc.returncode == 0:
                    print("FAIL: the job exited 0 after rank %d was killed" % victim)
                    return 1
                kills += 1
                print("kill %d: rank %d of %d killed; the job ended in %.2f s (exit %d)"
                      % (kills, victim, ranks, took, proc.returncode))
                continue
        try:
            out, err = proc.communicate(timeout=300)
        except subprocess.TimeoutExpired:
            proc.kill()
            print("FAIL: a job without kills did not finish")
            return 1
        if proc.returncode != 0:
            print("run failed (exit %d): %s" % (proc.returncode, err))
            return 1
        break

    with open(ref, "rb") as a, open(ckpt, "rb") as b:
        if a.read() != b.read():
            print("FAIL: the final checkpoint differs from the one-process run's")
            return 1
    left = [n for n in os.listdir(ckpt_dir) if n != "run.safetensors"]
    if left:
        print("FAIL: files left beside the checkpoint: %s" % left)
        return 1
    print("kill-rank: %d kills, final checkpoint equals the one-process run's" % kills)
    return 0


if __name__ == "__main__":
    sys.exit(main())
