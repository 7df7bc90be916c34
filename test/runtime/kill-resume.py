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
import random
import shutil
import signal
import subprocess
import sys
import time

KILLS = 12
MAX_DELAY = 0.4
STEPS = 2000


def main():
    mpc, gen, src, work = sys.argv[1:5]
    seed = int(sys.argv[5]) if len(sys.argv) > 5 else int(time.time())
    rng = random.Random(seed)
    print("kill-resume: seed %d" % seed)
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    subprocess.run([gen, work, "--rows", "1000"], check=True, stdout=subprocess.DEVNULL)
    plan = os.path.join(work, "plan.bin")
    subprocess.run([mpc, "compile", os.path.join(src, "examples/regression3/model.json"),
                    "-o", plan], check=True)
    base = [mpc, "run", plan, "--input", "x=" + os.path.join(work, "x.npy"),
            "--input", "y=" + os.path.join(work, "y.npy"), "--steps", str(STEPS),
            "--shuffle", "--seed", "11", "--log-every", "1"]

    ref = os.path.join(work, "ref.safetensors")
    ref_lines = subprocess.run(base + ["--save", ref], check=True, capture_output=True,
                               text=True).stdout.splitlines()

    ckpt_dir = os.path.join(work, "ckpt")
    os.makedirs(ckpt_dir)
    ckpt = os.path.join(ckpt_dir, "run.safetensors")
    kills, debris_seen = 0, 0
    while True:
        cmd = base + ["--save", ckpt, "--save-every", "1"]
        if os.path.exists(ckpt):
            cmd += ["--resume", ckpt]
        proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        if kills < KILLS:
            time.sleep(rng.uniform(0, MAX_DELAY))
            if proc.poll() is None:
                proc.send_signal(signal.SIGKILL)
                proc.communicate()
                kills += 1
                debris_seen += sum(".tmp." in n for n in os.listdir(ckpt_dir))
                continue
        out, err = proc.communicate()
        if proc.returncode != 0:
            print("run failed (exit %d): %s" % (proc.returncode, err))
            return 1
        break

    with open(ref, "rb") as a, open(ckpt, "rb") as b:
        if a.read() != b.read():
            print("FAIL: the resumed checkpoint differs from the uninterrupted run's")
            return 1
    lines = out.splitlines()
    if not lines or lines != ref_lines[len(ref_lines) - len(lines):]:
        print("FAIL: the last run's loss lines differ from the uninterrupted run's")
        return 1
    left = sorted(os.listdir(ckpt_dir))
    if left != ["run.safetensors"]:
        print("FAIL: files left in the checkpoint folder: %s" % left)
        return 1
    print("kill-resume: %d kills, named temporaries seen right after a kill: %d, "
          "final run resumed at step %d; checkpoint equal to the uninterrupted run's"
          % (kills, debris_seen, STEPS - len(lines)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
