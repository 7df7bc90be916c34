"""Scaffold of the fault tests: test/runtime/kill-resume.py, test/mpi/kill-rank.py.

Both take MPC REGRESSION3_DATA SOURCE_DIR WORK_DIR [SEED], train the seed
model (examples/regression3) straight through once for a reference
checkpoint, then start the same run with a checkpoint write per step, kill
it (or one of its ranks) with SIGKILL at random instants and resume from
what each kill left, until a run completes; the final checkpoint must equal
the reference byte for byte, with nothing left beside it. This module holds
those shared steps; each script holds its own way of killing.

A script imports it with
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                    os.pardir, "utils"))
    import faults
"""
import os
import random
import shutil
import subprocess
import time

MODEL = "examples/regression3/model.json"
ROWS = 1000
CHECKPOINT = "run.safetensors"


def args(name, argv):
    """(mpc, gen, src, work, rng) from argv; SEED defaults to the time, printed."""
    mpc, gen, src, work = argv[1:5]
    seed = int(argv[5]) if len(argv) > 5 else int(time.time())
    print("%s: seed %d" % (name, seed))
    return mpc, gen, src, work, random.Random(seed)


class Setup:
    """A fresh WORK: the data, the compiled plan, the reference run, ckpt/.

    run: the `mpc run` command line (STEPS steps, shuffled with SEED,
    a loss line every LOG_EVERY steps); ref: the reference checkpoint;
    ref_lines: the reference run's stdout lines; ckpt: the checkpoint the
    killed runs write, alone in its folder ckpt_dir.
    """

    def __init__(self, mpc, gen, src, work, steps, seed, log_every):
        shutil.rmtree(work, ignore_errors=True)
        os.makedirs(work)
        subprocess.run([gen, work, "--rows", str(ROWS)], check=True, stdout=subprocess.DEVNULL)
        plan = os.path.join(work, "plan.bin")
        subprocess.run([mpc, "compile", os.path.join(src, MODEL), "-o", plan], check=True)
        self.run = [mpc, "run", plan, "--input", "x=" + os.path.join(work, "x.npy"),
                    "--input", "y=" + os.path.join(work, "y.npy"), "--steps", str(steps),
                    "--shuffle", "--seed", str(seed), "--log-every", str(log_every)]
        self.ref = os.path.join(work, "ref.safetensors")
        self.ref_lines = subprocess.run(self.run + ["--save", self.ref], check=True,
                                        capture_output=True, text=True).stdout.splitlines()
        self.ckpt_dir = os.path.join(work, "ckpt")
        os.makedirs(self.ckpt_dir)
        self.ckpt = os.path.join(self.ckpt_dir, CHECKPOINT)

    def start(self, prefix=(), env=None):
        """Starts PREFIX + run saving ckpt every step, resuming from it where one exists."""
        cmd = list(prefix) + self.run + ["--save", self.ckpt, "--save-every", "1"]
        if os.path.exists(self.ckpt):
            cmd += ["--resume", self.ckpt]
        return subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env,
                                text=True)

    def final_equal(self):
        """Whether the final checkpoint equals the reference byte for byte."""
        with open(self.ref, "rb") as a, open(self.ckpt, "rb") as b:
            return a.read() == b.read()

    def left(self):
        """The files beside the checkpoint (temporaries a write left), sorted."""
        return sorted(n for n in os.listdir(self.ckpt_dir) if n != CHECKPOINT)


def finish(proc, timeout=None):
    """Waits for a run that is not killed: its stdout, or None (said why) where it failed."""
    try:
        out, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        print("FAIL: a job without kills did not finish")
        return None
    if proc.returncode != 0:
        print("run failed (exit %d): %s" % (proc.returncode, err))
        return None
    return out


def fail(msg):
    """Prints FAIL: MSG; returns the exit status 1."""
    print("FAIL: " + msg)
    return 1
