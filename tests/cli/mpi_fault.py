#!/usr/bin/env python3
"""MPI errors are reported, not fatal (issue 23, "Done when" 6).

One rank's MPI call fails, injected by a preload (mpi_fault_shim.c: the real
call runs, then MPI_ERR_OTHER comes back, as under MPI_ERRORS_RETURN), in a
per-mesh job and in a partitioned job on --np ranks. Every run must:
exit 1 on every rank (each rank's code is seen through a wrapper, and
mpirun's), end within a time limit (no rank left waiting in a collective),
name the failing call's source file and line (src/....c:123) and MPI's
error text, and leave no output under the output's name and no temporary
files. A first run without a fault counts the calls of each MPI function
(MB_FAULT_COUNT); the faults are placed at a middle and the last but one
call of each function the rank makes (the last Allreduce is the
exit-code agreement in main, which has no later agreement to fall back on).
The preload also counts the calls per call site (the return address in
the program, named with addr2line): the first call made at every site
fails once too, so each place meshbatch calls MPI is covered, not only
the busiest functions; a partitioned job must have sites in the halo
exchange (mb_halo_*: MPI_Isend, MPI_Irecv, MPI_Waitall), in the min/max
helpers (mb_all_min_int, mb_all_max_int) and in both rounds of mb_agree,
else the test fails (it would cover less than it says).
`--sweep` tries every call of every function on every rank instead (slow;
for finding places that hang, not for CTest).

The faulted runs are independent: they run MB_FAULT_JOBS at a time
(default 3), each worker in a folder of its own (its own job file, output,
reference copy and Open MPI session folder), so that the launcher's and
MPI_Init's waits of one run overlap the others'. Each run is checked as
before, and a clean run after the faults in every worker's folder takes
over what its aborted runs left. A launch costs about a second however
small the job (mpirun, MPI_Init, the libraries' start), and the test makes
about 40 per distribution on 2 ranks: run one at a time that was most of
its 350 s on a loaded 2-core machine; nothing waits out a timeout.

Exit code 0 passes, 77 skips (the preload is not built or not in effect).
Environment: as cli_test.py, MB_MPI_FAULT_SHIM (the preload's path) and
MB_MPI_FAULT_PRELOAD_FIRST (the sanitizer runtime, preloaded before it).
"""
import argparse
import concurrent.futures
import os
import re
import shutil
import signal
import subprocess
import sys
import threading
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "util"))
from mbtest import EXE, MPIEXEC, SKIP, SRC, TMP, datasets, fail  # noqa: E402

LIMIT_S = int(os.environ.get("MB_FAULT_LIMIT_S", "120"))  # longer: a hang (a healthy run takes about 2 s)
JOBS = max(1, int(os.environ.get("MB_FAULT_JOBS", "3")))  # faulted runs at a time (workers)
PRINT = threading.Lock()  # one case's lines together
WHERE = re.compile(r"MPI call failed at ((?:src|io|partition|cuda)/[\w./-]+\.(?:c|cu)):(\d+): (MPI_\w+)")


def write_job(path, output, distribute):
    meshes = [os.path.join(SRC, "data", "meshes", n) for n in ("spot.obj", "bob.obj")]
    with open(path, "w") as f:
        f.write("input:\n" + "".join(f"  - {m}\n" for m in meshes) +
                f"output: {output}\nbackend: cpu\ndistribute: {distribute}\n"
                "stages:\n  - op: laplacian\n    iterations: 2\n")
    return path


def wait_lock_holder(lock, limit_s=30):
    """An aborted run's ranks end a moment after mpirun returns: until its
    rank 0 (named in OUTPUT.lock) is gone, the next run would be refused."""
    try:
        pid = int(open(lock).read().split()[1])
    except (OSError, IndexError, ValueError):
        return
    t0 = time.time()
    while os.path.exists(f"/proc/{pid}") and time.time() - t0 < limit_s:
        time.sleep(0.1)


def launch(np, jobfile, env, wait_all=True):
    """meshbatch run on np ranks under the preload; every rank writes its own
    exit code to a file of JOBFILE.exit/. Returns (mpirun's code, {rank: code},
    output text, seconds); code None when it ran past LIMIT_S (killed).
    Open MPI's session folder is one per folder of JOBFILE, under the
    test's (short, for the socket paths): launchers started together under
    one session folder race to make it ("File exists")."""
    wait_lock_holder(os.path.join(os.path.dirname(jobfile), "out.h5.lock"))
    codes = jobfile + ".exit"
    shutil.rmtree(codes, ignore_errors=True)
    os.makedirs(codes)
    wrapper = ('LD_PRELOAD="$MB_MPI_FAULT_SHIM" "$0" "$@"; c=$?; r=${OMPI_COMM_WORLD_RANK:-${PMIX_RANK:-0}}; '
               f'echo $c > {codes}/$r.w && mv {codes}/$r.w {codes}/$r; exit $c')
    cmd = MPIEXEC + [str(np), "sh", "-c", wrapper, EXE, "run", jobfile]
    full = dict(os.environ, **env)
    # OpenMP's wait policy given: no exec of meshbatch by itself before
    # MPI_Init (mb_omp_wait_policy_default, tested in cli_threads), which was
    # a fifth of each launch's CPU time here (ranks run one thread each)
    full.setdefault("OMP_WAIT_POLICY", "passive")
    session = os.path.join(os.environ.get("OMPI_MCA_orte_tmpdir_base", "/tmp"),
                           os.path.basename(os.path.dirname(jobfile)))
    os.makedirs(session, exist_ok=True)
    full["OMPI_MCA_orte_tmpdir_base"] = session
    if wait_all:  # mpirun waits for every rank rather than end the others when one exits 1
        full["OMPI_MCA_orte_abort_on_non_zero_status"] = "0"  # (its own code is then 0)
    t0 = time.time()
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=full,
                         start_new_session=True)
    try:
        out, _ = p.communicate(timeout=LIMIT_S)
        code = p.returncode
    except subprocess.TimeoutExpired:
        os.killpg(p.pid, signal.SIGKILL)
        out, _ = p.communicate()
        code = None
    ranks = {}  # a wrapper killed while writing (mpirun ends the others) leaves no code
    for r in os.listdir(codes):
        text = open(os.path.join(codes, r)).read().strip()
        if r.isdigit() and text.isdigit():
            ranks[int(r)] = int(text)
    shutil.rmtree(codes)
    return code, ranks, out, time.time() - t0


def counts(np, jobfile):
    """({rank: {function: calls}}, {rank: {(function, site): calls}}) of a
    run without a fault, which must pass."""
    code, ranks, out, _ = launch(np, jobfile, {"MB_FAULT_COUNT": "1"})
    if code != 0 or ranks != {r: 0 for r in range(np)}:
        print(out)
        fail(f"the run without a fault exits {code} (ranks {ranks})")
    c, s = {}, {}
    for ln in out.splitlines():
        m = re.match(r"mb_fault: rank (\d+) (MPI_\w+) (\d+) calls", ln.strip())
        if m:
            c.setdefault(int(m.group(1)), {})[m.group(2)] = int(m.group(3))
        m = re.match(r"mb_fault: rank (\d+) (MPI_\w+) at 0x([0-9a-f]+) (\d+) calls", ln.strip())
        if m:
            s.setdefault(int(m.group(1)), {})[(m.group(2), m.group(3))] = int(m.group(4))
    if not c:
        print("SKIP: the preload is not in effect here (no call counted)")
        sys.exit(SKIP)
    if "more call sites than counted" in out:
        fail("the preload's table of call sites is full: make MAX_SITES larger")
    return c, s


def site_names(offsets):
    """{offset: the program's function at it} (addr2line; '??' where unknown)."""
    offsets = sorted(offsets)
    try:
        got = subprocess.run(["addr2line", "-f", "-e", EXE] + offsets, capture_output=True,
                             text=True, check=True).stdout.splitlines()
    except (OSError, subprocess.CalledProcessError) as e:
        print(f"addr2line cannot name the call sites: {e}")
        return {o: "??" for o in offsets}
    return {o: got[2 * i].split(".")[0] if 2 * i < len(got) else "??" for i, o in enumerate(offsets)}


# What a job must call, by function of the program (a prefix), MPI call and
# how many distinct call sites: the places issue 23 names, which must be
# among those faulted (mb_agree: both rounds).
REQUIRED = {
    "per-mesh": [("mb_agree", "MPI_Allreduce", 2)],
    "partitioned": [("mb_agree", "MPI_Allreduce", 2), ("mb_halo_post", "MPI_Isend", 1),
                    ("mb_halo_post", "MPI_Irecv", 1), ("mb_halo_", "MPI_Waitall", 1),
                    ("mb_all_min_int", "MPI_Allreduce", 1), ("mb_all_max_int", "MPI_Allreduce", 1)],
}


def check(np, d, jobfile, output, fn, rank, after, wait_all=True, site=None):
    """One run with call after+1 of fn (at site (offset, name) only, when
    given) failing on rank: a list of what went wrong. wait_all: every
    rank's exit code is checked (mpirun's is not: it is 0 in that mode);
    else mpirun's, as users run it."""
    before = sorted(os.listdir(d))
    env = {"MB_FAULT_MPI": fn, "MB_FAULT_RANK": str(rank), "MB_FAULT_AFTER": str(after)}
    if site:
        env["MB_FAULT_SITE"] = site[0]
    code, ranks, out, secs = launch(np, jobfile, env, wait_all)
    what = f"{fn} call {after + 1}{f' in {site[1]} (0x{site[0]})' if site else ''} on rank {rank} of {np}"
    bad = []
    if f"mb_fault: rank {rank}: {fn} call {after + 1} fails" not in out:
        bad.append("the fault was not injected")
    aborted = ": aborting the job" in out  # an error one rank met alone (mb_error.h)
    if code is None:
        bad.append(f"hangs (killed after {LIMIT_S} s)")
    elif (aborted or not wait_all) and code != 1:
        bad.append(f"mpirun exits {code}, not 1")
    elif wait_all and not aborted and ranks != {r: 1 for r in range(np)}:
        bad.append(f"rank exit codes {ranks}, not 1 on each of {np}")
    m = WHERE.search(out)
    if not m:
        bad.append("no 'MPI call failed at FILE:LINE: CALL' in the output")
    elif "MPI_ERR_OTHER" not in out:
        bad.append("MPI's error text (MPI_ERR_OTHER: ...) is not in the output")
    elif not os.path.isfile(os.path.join(SRC, m.group(1))):
        bad.append(f"the message names {m.group(1)}, which is not a source file")
    stem = os.path.splitext(os.path.basename(output))[0]
    now = sorted(os.listdir(d))
    left = [f for f in now if f not in before]
    if os.path.exists(output):
        # a failure after the output took its name (the summary), or meshes that failed:
        # the whole output, or the meshes that did not fail
        if whole(output, output + ".ref", out):
            left = [f for f in left if not (f == stem + ".h5" or f.endswith(".xdmf"))]
        else:
            bad.append(f"output left under the output's name: {[f for f in now if f.startswith(stem)]}")
    elif any(f.startswith(stem + ".") and f.endswith(".xdmf") for f in now):
        bad.append(f"XDMF files left without the output: {[f for f in now if f.startswith(stem)]}")
    if aborted:  # as a killed run: its lock, temporary and checkpoint, which the next run clears
        left = [f for f in left if f not in (stem + ".h5.lock", stem + ".h5.ckpt") and
                not f.startswith(stem + ".h5.tmp-")]
    if left:
        bad.append(f"files left behind: {left}")
    for f in sorted(set(now) - set(before)):
        if aborted and (f in (stem + ".h5.lock", stem + ".h5.ckpt") or f.startswith(stem + ".h5.tmp-")):
            continue  # left for the next run to clear (checked at the end)
        p = os.path.join(d, f)
        shutil.rmtree(p) if os.path.isdir(p) else os.remove(p)
    where = f"{m.group(1)}:{m.group(2)}" if m else "?"
    how = "aborted (not agreed)" if aborted else "agreed"
    with PRINT:
        print(f"{what}: exit {code}, ranks {ranks}, {how}, {secs:.1f} s, reported at {where}" +
              ("" if not bad else "  <-- " + "; ".join(bad)), flush=True)
        if bad:
            print("    " + "\n    ".join(out.splitlines()[-25:]), flush=True)
    return bad


def whole(out, ref, said):
    """Whether out is a whole collection of some of ref's meshes, bitwise
    (h5py), and every mesh of ref missing from it is reported as failed
    (exit code 1: "some meshes failed, the others are written")."""
    try:
        do, dr = datasets(out), datasets(ref)
    except Exception as e:  # noqa: BLE001 - an unreadable output is not a whole one
        print(f"cannot read {out} or {ref}: {e}")
        return False
    mesh = lambda k: k.split("/")[1] if k.startswith("meshes/") else ""  # noqa: E731
    kept = {mesh(k) for k in do}
    missing = {mesh(k) for k in dr} - kept
    return (all(k in dr and do[k] == dr[k] for k in do) and
            all(k in do for k in dr if mesh(k) in kept) and
            all(f"{m}: skipped:" in said for m in missing))


def picks(n, sweep):
    """Which calls of a function called n times on a rank to fail (0-based):
    a middle one and the last but one (the first is the first call at one
    of the call sites, which fail on their own)."""
    if sweep:
        return range(n)
    return sorted({n // 2, max(n - 2, 0)} - {0})


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--np", type=int, default=2)
    ap.add_argument("--sweep", action="store_true", help="every call of every function on every rank")
    ap.add_argument("--only", default="", help="per-mesh or partitioned (default both)")
    a = ap.parse_args()
    shim = os.environ.get("MB_MPI_FAULT_SHIM", "")
    if not os.path.isfile(shim):
        print(f"SKIP: the preload {shim!r} is not built")
        sys.exit(SKIP)
    first = os.environ.get("MB_MPI_FAULT_PRELOAD_FIRST", "")  # the sanitizer runtime, if any
    if first == "missing":
        print("SKIP: sanitizer build, and its runtime library (to preload first) was not found")
        sys.exit(SKIP)
    os.environ["MB_MPI_FAULT_SHIM"] = f"{first} {shim}".strip()
    problems = []
    for distribute in ("per-mesh", "partitioned"):
        if a.only and a.only != distribute:
            continue
        d = os.path.join(TMP, f"mpi_fault_{a.np}_{distribute}")
        shutil.rmtree(d, ignore_errors=True)
        os.makedirs(d)
        output = os.path.join(d, "out.h5")
        jobfile = write_job(os.path.join(d, "job.yaml"), output, distribute)
        c, sites = counts(a.np, jobfile)
        named = site_names({off for r in sites.values() for _, off in r})
        os.rename(output, output + ".ref")  # the whole output, for a failure after it is written
        for f in os.listdir(d):
            if f.endswith(".xdmf"):
                os.remove(os.path.join(d, f))
        cases = []  # (function, rank, call): every call on every rank, or a few on turns of ranks
        for rank in range(a.np):
            for fn, n in sorted(c.get(rank, {}).items()):
                cases += [(fn, rank, after) for after in picks(n, a.sweep)]
        if not a.sweep:  # each (function, call) once, on ranks in turn
            have = set(cases)
            calls = sorted({(fn, after) for fn, _, after in cases})
            cases = [(fn, r, after) for k, (fn, after) in enumerate(calls)
                     for r in [next(q % a.np for q in range(k, k + a.np) if (fn, q % a.np, after) in have)]]
        if not a.sweep:  # the first call at every call site, once, on ranks in turn
            every = sorted({k for r in sites.values() for k in r})
            for k, (fn, off) in enumerate(every):
                rank = next(q % a.np for q in range(k, k + a.np) if (fn, off) in sites.get(q % a.np, {}))
                cases.append((fn, rank, 0, (off, named[off])))
        for want, fn, nsites in REQUIRED[distribute]:
            have = {off for r in sites.values() for f, off in r if f == fn and named[off].startswith(want)}
            if len(have) < nsites:
                problems.append(f"{distribute}: {len(have)} call sites of {fn} in {want}* counted, "
                                f"not {nsites}: the faults miss a place they must cover")
        # the cases in turn to JOBS workers, each with a folder, job file,
        # output and reference of its own (the checks read the folder)
        nw = min(JOBS, len(cases)) or 1
        workers = []
        for w in range(nw):
            wd = os.path.join(d, f"w{w}")
            os.makedirs(wd)
            shutil.copy(output + ".ref", os.path.join(wd, "out.h5.ref"))
            wout = os.path.join(wd, "out.h5")
            workers.append((wd, write_job(os.path.join(wd, "job.yaml"), wout, distribute), wout))

        def work(w):
            wd, wjob, wout = workers[w]
            found = []
            for fn, rank, after, *site in cases[w::nw]:
                site = site[0] if site else None
                bad = check(a.np, wd, wjob, wout, fn, rank, after, site=site)
                where = f" in {site[1]}" if site else ""
                found += [f"{distribute}: {fn} call {after + 1}{where} on rank {rank}: {b}" for b in bad]
            if w == 0:  # as users run it: mpirun's own exit code
                found += [f"{distribute}, mpirun's code: {b}"
                          for b in check(a.np, wd, wjob, wout, "MPI_Bcast", a.np - 1, 0, wait_all=False)]
            # a run after them takes over what aborted ones left (lock, temporary) and leaves nothing
            code, ranks, out, _ = launch(a.np, wjob, {})
            left = sorted(f for f in os.listdir(wd) if f.startswith("out.h5.") and f != "out.h5.ref")
            if code != 0 or ranks != {r: 0 for r in range(a.np)} or left:
                with PRINT:
                    print(out, flush=True)
                found.append(f"{distribute}: the run after the faults in {wd} exits {code} "
                             f"(ranks {ranks}), leaves {left}")
            return found

        t0 = time.time()
        with concurrent.futures.ThreadPoolExecutor(nw) as pool:
            for found in pool.map(work, range(nw)):
                problems += found
        print(f"{distribute} on {a.np} ranks: {len(cases)} faults injected, {len(named)} call sites "
              f"({', '.join(sorted(set(named.values())))}); {nw} at a time, {time.time() - t0:.0f} s")
    if problems:
        fail(f"{len(problems)} problems:\n  " + "\n  ".join(problems))
    print("PASS")


if __name__ == "__main__":
    main()
