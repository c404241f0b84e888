#!/usr/bin/env python3
"""Stopping and resuming under the MPI launcher (issue 28, "Done when" 1).

`stop_test.py CASE [--np N]` runs one case:
  batch   SIGTERM to mpirun in the middle of a per-mesh batch started without
          --checkpoint: every rank stops within a second (the stop line says
          how long after the signal rank 0 stopped), the line says what was
          kept and the command that goes on, no lock and no output are left;
          a comment added to the job file keeps the checkpoint valid; --resume
          computes only the rest (from its log) and the output equals an
          uninterrupted run's bit for bit; a changed key is refused, naming it;
          SIGTERM after the last mesh writes the output (exit 0).
  grid    the same for one long grid (`heat`), partitioned over N ranks and on
          one rank: stopped in the middle within a second, nothing kept, the
          command printed computes it again to the uninterrupted run's bits.
          With --backend cuda (label gpu) the same on the GPU for heat and
          wave, whose CUDA loops stop at their own stop points: skips (77)
          without a CUDA device.
  lock    a rerun right after a crash whose rank 0 is an unreaped zombie takes
          the lock over; a live run's lock refuses a second run ("being
          written by another run"); SIGINT stops a run like SIGTERM (exit 3).
The runs are made slow enough to be stopped in the middle by
MESHBATCH_TEST_STEP_DELAY_MS (a sleep at each stop point of the ops, for the
tests only). Exit code 0 passes, 77 skips, other fails.
"""
import argparse
import os
import queue
import re
import shutil
import signal
import subprocess
import sys
import threading
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "util"))
from mbtest import (EXE, MPIEXEC, SKIP, TMP, ckpt_count, count, cuda_devices, fail, run,  # noqa: E402
                    same_datasets)

STOPPED = 3  # meshbatch's exit code for a run stopped before its last mesh


def fresh(name):
    d = os.path.join(TMP, name)
    shutil.rmtree(d, ignore_errors=True)
    os.makedirs(d)
    return d


def write(path, text):
    with open(path, "w") as f:
        f.write(text)
    return path


def smooth_job(path, inputs, output, iterations=30, backend="cpu"):
    return write(path, "input:\n" + "".join(f"  - {i}\n" for i in inputs) +
                 f"output: {output}\nbackend: {backend}\nstages:\n"
                 f"  - op: taubin\n    lambda: 0.5\n    mu: -0.53\n    iterations: {iterations}\n"
                 "  - op: laplacian\n    iterations: 3\n    weights: cotangent\n")


class Run:
    """meshbatch started in the background (under the launcher with np
    ranks, or alone), its stdout read line by line as it comes."""

    def __init__(self, args, np=None, delay_ms=0):
        env = dict(os.environ, MESHBATCH_PROGRESS_S="0.2")
        if delay_ms:
            env["MESHBATCH_TEST_STEP_DELAY_MS"] = str(delay_ms)
        self.cmd = (MPIEXEC + [str(np)] if np and np > 1 else []) + [EXE] + [str(a) for a in args]
        print("$", " ".join(self.cmd), "&")
        self.p = subprocess.Popen(self.cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                  text=True, env=env)
        self.lines, self.out = queue.Queue(), []
        self.err = []
        threading.Thread(target=self._read, daemon=True).start()
        threading.Thread(target=lambda: self.err.extend(self.p.stderr), daemon=True).start()

    def _read(self):
        for ln in self.p.stdout:
            self.out.append(ln)
            self.lines.put(ln)
        self.lines.put(None)

    def wait_for(self, pattern, count=1, timeout=120):
        """Wait until `count` lines of stdout match pattern."""
        seen, end = 0, time.time() + timeout
        while seen < count:
            try:
                ln = self.lines.get(timeout=max(0.1, end - time.time()))
            except queue.Empty:
                ln = None
            if ln is None:
                self.finish()
                fail(f"the run ended or hung before {count} lines matching '{pattern}'")
            seen += bool(re.search(pattern, ln))

    def signal(self, sig, within=10):
        """Send sig, wait for the end; returns (exit code, seconds, stdout, stderr)."""
        t0 = time.time()
        self.p.send_signal(sig)
        return self.finish(within, t0)

    def finish(self, within=600, t0=None):
        t0 = t0 or time.time()
        try:
            self.p.wait(timeout=within)
        except subprocess.TimeoutExpired:
            self.p.kill()
            self.p.wait()
            fail(f"the run did not end within {within} s")
        took = time.time() - t0
        time.sleep(0.2)  # the reader threads drain the pipes
        out, err = "".join(self.out), "".join(self.err)
        print(f"-> {self.p.returncode} after {took:.2f} s\n{out}{err}")
        return self.p.returncode, took, out, err


def stop_line(err, sig="SIGTERM"):
    """The line of a stopped run: how long after the signal, and the command that goes on."""
    m = re.search(rf"stopped by {sig} \(([0-9.]+) s after it came\): (\d+) of (\d+) (?:mesh|meshes) "
                  r"finished(.*)To go on, run: (.*)$", err, re.M)
    if not m:
        fail(f"no line saying the run was stopped by {sig}, what was kept and how to go on")
    if float(m.group(1)) >= 1.0:
        fail(f"rank 0 stopped {m.group(1)} s after {sig}: not within the launcher's second")
    return int(m.group(2)), int(m.group(3)), m.group(4), m.group(5).strip()


def check_clean(out):
    for f in (out, out + ".lock"):
        if os.path.exists(f):
            fail(f"{f} is left by the stopped run")
    stray = [f for f in os.listdir(os.path.dirname(out)) if ".tmp-" in f]
    if stray:
        fail(f"temporary files left by the stopped run: {stray}")


def expected_command(np, jp, extra=""):
    prefix = f"mpirun -np {np} " if np and np > 1 else ""
    return f"{prefix}{EXE} run {jp}{extra}"


def case_batch(a):
    if a.backend == "cuda" and cuda_devices() < 1:
        print("SKIP: no CUDA device (the stop points of the CUDA smoothing loop are tested "
              "on a GPU machine)")
        sys.exit(SKIP)
    d = fresh(f"stop_batch_{a.np}_{a.backend}")
    files = []
    for k in range(3 * a.np + 3):  # three rounds of meshes and more
        files.append(os.path.join(d, f"s{k}.ply"))
        run(["generate", "sphere", "--vertices", 150 + 40 * k, "--seed", k + 1, "-o", files[-1]])
    out = os.path.join(d, "out.h5")
    jp = smooth_job(os.path.join(d, "job.yaml"), files, out, backend=a.backend)
    run(["run", jp], np=a.np)
    ref = os.path.join(d, "ref.h5")
    shutil.move(out, ref)
    n = len(files)
    # 30 iterations at 20 ms each: 0.6 s a mesh; stopped once the first
    # round finished (the second in the middle)
    r = Run(["run", jp], np=a.np, delay_ms=20)
    r.wait_for(r"^\[rank \d+\] s\d+: \d+ vertices", count=max(2, a.np))
    code, took, _, err = r.signal(signal.SIGTERM)
    done, total, what, cmd = stop_line(err)
    ckpt = out + ".ckpt"
    kept = ckpt_count(ckpt) if os.path.isdir(ckpt) else 0
    if total != n or not max(2, a.np) <= done < n or kept != done or f"kept in {ckpt}/" not in what:
        fail(f"{done} of {total} meshes said finished, {kept} kept in {ckpt}, of {n}")
    if cmd != expected_command(a.np, jp, " --resume"):
        fail(f"the command that goes on is '{cmd}', expected '{expected_command(a.np, jp, ' --resume')}'")
    if a.np == 1 and code != STOPPED:
        fail(f"exit code {code} of a stopped run, expected {STOPPED}")
    check_clean(out)
    # a comment and other formatting leave the checkpoint valid
    with open(jp) as f:
        text = f.read()
    write(jp, "# stopped once, resumed\n" + text.replace("iterations: 30", "iterations:   30   # same"))
    p = run(["run", jp, "--resume"], np=a.np)
    taken = sum(1 for ln in p.stdout.splitlines() if ": from the checkpoint" in ln)
    computed = sum(1 for ln in p.stdout.splitlines() if re.match(r"^\[rank \d+\] s\d+: \d+ vertices", ln))
    if taken != kept or computed != n - kept or \
            f"resume: {count(kept, 'mesh', 'meshes')} taken from the checkpoint, {n - kept} computed" not in p.stdout:
        fail(f"--resume took {taken} meshes and computed {computed}, expected {kept} and {n - kept}")
    same_datasets(ref, out)
    if os.path.exists(ckpt) or os.path.exists(out + ".lock"):
        fail("the checkpoint or the lock is left after the output was written")
    # a changed key is refused, naming the stage and the key
    os.remove(out)
    r = Run(["run", jp], np=a.np, delay_ms=20)
    r.wait_for(r"^\[rank \d+\] s\d+: \d+ vertices", count=1)
    r.signal(signal.SIGTERM)
    write(jp, text.replace("weights: cotangent", "weights: uniform"))
    p = run(["run", jp, "--resume"], np=a.np, expect=2)
    if "stage 1 (laplacian): weights was cotangent, is uniform now" not in p.stderr:
        fail("a checkpoint of a changed stage is not refused with the key that changed")
    write(jp, text)
    # SIGTERM after the last mesh finished (one rank sends it to itself):
    # the output is written as usual
    os.environ["MESHBATCH_FAULT"] = f"term:0:{n}"
    try:
        p = run(["run", jp])
    finally:
        os.environ.pop("MESHBATCH_FAULT")
    if "SIGTERM came after the last mesh: the output is written" not in p.stdout:
        fail("a SIGTERM after the last mesh: no line saying the output is written")
    same_datasets(ref, out)


def case_grid(a):
    if a.backend == "cuda" and cuda_devices() < 1:
        print("SKIP: no CUDA device (the stop points inside the CUDA heat and wave loops are "
              "tested on a GPU machine)")
        sys.exit(SKIP)
    d = fresh(f"stop_grid_{a.np}_{a.backend}")
    grid = os.path.join(d, "g.h5")
    run(["generate", "grid", "--shape", "16,16,16", "--field", "u=gaussian", "-o", grid])
    # on the CPU heat with snapshots; on the GPU heat without snapshots and
    # wave, whose CUDA loops run all 300 steps in one call: only their own
    # stop points (every 32 steps on this grid) can stop them in the middle
    stages = {"cpu": ["  - op: heat\n    alpha: 1.0\n    dt: 0.00001\n    steps: 300\n    every: 100\n"],
              "cuda": ["  - op: heat\n    alpha: 1.0\n    dt: 0.00001\n    steps: 300\n",
                       "  - op: wave\n    c: 1.0\n    dt: 0.0001\n    steps: 300\n"]}[a.backend]
    for k, stage in enumerate(stages):
        for np, dist in ((a.np, "partitioned"), (1, "per-mesh")):
            out = os.path.join(d, f"{dist}_{k}.h5")
            jp = write(os.path.join(d, f"{dist}_{k}.yaml"),
                       f"input: {grid}\noutput: {out}\nbackend: {a.backend}\ndistribute: {dist}\n"
                       f"stages:\n{stage}")
            run(["run", jp], np=np)
            ref = os.path.join(d, f"{dist}_{k}_ref.h5")
            shutil.move(out, ref)
            r = Run(["run", jp], np=np, delay_ms=15)
            r.wait_for(r"% of 300 steps done, about \d+ s left")  # the progress line, mid-grid
            code, took, _, err = r.signal(signal.SIGTERM)
            done, total, what, cmd = stop_line(err)
            if (done, total) != (0, 1) or "kept" in what or cmd != expected_command(np, jp):
                fail(f"{dist}: {done} of {total} said finished, '{what}', command '{cmd}'")
            if np == 1 and code != STOPPED:
                fail(f"{dist}: exit code {code}, expected {STOPPED}")
            check_clean(out)
            run(["run", jp], np=np)  # the command printed: the grid computed again
            same_datasets(ref, out)


def zombie(pid):
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] == "Z"
    except OSError:
        return False


def case_lock(a):
    d = fresh("stop_lock")
    files = []
    for k in range(4):
        files.append(os.path.join(d, f"s{k}.ply"))
        run(["generate", "sphere", "--vertices", 200, "--seed", k + 1, "-o", files[-1]])
    out = os.path.join(d, "out.h5")
    jp = smooth_job(os.path.join(d, "job.yaml"), files, out)
    run(["run", jp])
    ref = os.path.join(d, "ref.h5")
    shutil.move(out, ref)
    # a live run's lock refuses a second run; SIGINT then stops the first
    r = Run(["run", jp], delay_ms=20)
    r.wait_for(r"^\[rank 0\] s\d: \d+ vertices")
    p = run(["run", jp], expect=1)
    if "is being written by another run" not in p.stderr:
        fail("a second run on an output being written is not refused")
    code, _, _, err = r.signal(signal.SIGINT)
    stop_line(err, "SIGINT")
    if code != STOPPED:
        fail(f"exit code {code} after SIGINT, expected {STOPPED}")
    check_clean(out)
    # a crash: SIGKILL, its process left unreaped (a zombie holding no lock)
    r = Run(["run", jp, "--resume"], delay_ms=20)
    r.wait_for(r"^\[rank 0\] s\d: \d+ vertices")
    os.kill(r.p.pid, signal.SIGKILL)
    for _ in range(50):
        if zombie(r.p.pid):
            break
        time.sleep(0.02)
    if not zombie(r.p.pid) or not os.path.exists(out + ".lock"):
        fail("the killed run is not a zombie with its lock file left: the case is not made")
    p = run(["run", jp, "--resume"])  # at once, while the holder is a zombie
    if "taking over" not in p.stdout or os.path.exists(out + ".lock"):
        fail("the lock of a crashed run (an unreaped zombie) is not taken over, or is left")
    r.p.wait()
    same_datasets(ref, out)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("case", choices=["batch", "grid", "lock"])
    ap.add_argument("--np", type=int, default=2)
    ap.add_argument("--backend", default="cpu", choices=["cpu", "cuda"],
                    help="batch, grid: the backend (cuda: the host-side stop points of its loops)")
    a = ap.parse_args()
    globals()["case_" + a.case](a)
    print("PASS")


if __name__ == "__main__":
    main()
