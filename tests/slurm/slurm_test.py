"""The SLURM templates (slurm/*.sbatch) under a real SLURM: a one-node
cluster on this machine, started by the test, every template submitted
with sbatch as its header says, with small inputs.

What it does (docs/cluster.md, "How the templates are tested"):
- installs Debian's slurm-wlm and munge where they are missing (apt-get,
  output in TMP/apt.log);
- starts munged (its own key and socket), slurmctld and slurmd from a
  generated slurm.conf (this host, its cores, no GPUs, every state, spool
  and log folder under TMP, ports that are free);
- submits per-mesh.sbatch, partitioned.sbatch and array.sbatch with the
  job files of jobs/ (copied into TMP, the meshes of data/meshes), only
  the size lines overridden (--nodes=1, 2 ranks, no GPUs, 1 CPU per rank);
  checks that every job COMPLETED with exit code 0:0 (scontrol and the
  job completion file agree) and that its outputs open (meshbatch info);
- a walltime stop and resume: per-mesh.sbatch on a batch of meshes is
  sent SIGTERM through SLURM (scancel --signal=TERM signals the job steps,
  as --signal=TERM@300 does before the walltime) once a mesh is
  checkpointed; the job must end FAILED 3:0 with "stopped by SIGTERM" in
  its log, no output and the checkpoint kept; resubmitted with --resume it
  completes, takes the checkpointed meshes, and its output is bitwise the
  one of an uninterrupted job;
- prints one line per job (id, name, state, exit code, elapsed);
- stops every process it started (by PID) in all cases.

Exit code 77 (skipped) where SLURM cannot be had: not root, packages not
installable, daemons that do not start.
"""
import ctypes
import glob
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "util"))
from mbtest import EXE, SKIP, SRC, TMP, ckpt_records, count, fail  # noqa: E402

TERMINAL = {"COMPLETED", "FAILED", "CANCELLED", "TIMEOUT", "NODE_FAIL", "OUT_OF_MEMORY",
            "PREEMPTED", "BOOT_FAIL", "DEADLINE", "REVOKED"}
PACKAGES = ["slurm-wlm", "munge"]
TOOLS = ["sbatch", "squeue", "sinfo", "scontrol", "scancel", "srun", "slurmctld", "slurmd", "munged", "munge",
         "unmunge"]
JOB_WAIT_S = 240          # the longest wait for one submission
START = time.monotonic()
DEADLINE = START + 780    # stop and clean up before CTest's TIMEOUT (900 s)

C = os.path.join(TMP, "cluster")      # the cluster's files
W = os.path.join(TMP, "work")         # where the jobs are submitted from
PIDS = os.path.join(TMP, "pids")      # the daemons started, for the cleanup
SYS_PATH = os.environ.get("PATH", "/usr/bin:/bin") + ":/usr/sbin:/sbin"

daemons = []              # (name, Popen) in start order
submitted = []            # (label, job id) in submission order
env = {}                  # the environment of the SLURM commands and the jobs


def skip(msg):
    print("SKIP:", msg)
    sys.exit(SKIP)


def log(msg):
    print(f"[{time.monotonic() - START:6.1f} s] {msg}", flush=True)


def tail(path, n=30):
    try:
        with open(path, errors="replace") as f:
            lines = f.readlines()[-n:]
    except OSError as e:
        return f"({path}: {e})\n"
    return f"--- {path} (last {len(lines)} lines)\n" + "".join(lines)


def cmd(args, check=True, timeout=60, **kw):
    p = subprocess.run(args, capture_output=True, text=True, timeout=timeout, env=env,
                       stdin=subprocess.DEVNULL, **kw)
    if check and p.returncode != 0:
        fail(f"{' '.join(args)} -> {p.returncode}\n{p.stdout}{p.stderr}")
    return p


# ------------------------------------------------------------- packages

def which(tool):
    return shutil.which(tool, path=SYS_PATH)


def ensure_packages():
    missing = [t for t in TOOLS if not which(t)]
    if not missing:
        return
    apt_log = os.path.join(TMP, "apt.log")
    if not which("apt-get"):
        skip(f"SLURM is not installed ({', '.join(missing)} missing) and there is no apt-get")
    log(f"installing {' '.join(PACKAGES)} ({', '.join(missing)} missing); apt-get output in {apt_log}")
    aenv = dict(os.environ, DEBIAN_FRONTEND="noninteractive", PATH=SYS_PATH)
    with open(apt_log, "w") as out:
        for args in (["apt-get", "update", "-qq"],
                     ["apt-get", "install", "-y", "-qq", "--no-install-recommends",
                      "-o", "DPkg::Lock::Timeout=120"] + PACKAGES):
            try:
                rc = subprocess.run(args, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                    env=aenv, timeout=300).returncode
            except subprocess.TimeoutExpired:
                rc = "timeout"
            if rc != 0:
                skip(f"could not install {' '.join(PACKAGES)}: {' '.join(args[:2])} -> {rc}; see {apt_log}\n"
                     + tail(apt_log, 15))
    still = [t for t in TOOLS if not which(t)]
    if still:
        skip(f"{' '.join(still)} still missing after installing {' '.join(PACKAGES)}; see {apt_log}")


# ------------------------------------------------------------- processes

def cmdline(pid):
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            return f.read().replace(b"\0", b" ").decode(errors="replace")
    except OSError:
        return ""


def kill_leftovers():
    """Daemons of an earlier run of this test that was itself killed (they
    name this test's folder in their command line)."""
    try:
        with open(PIDS) as f:
            rows = [ln.split() for ln in f if ln.strip()]
    except OSError:
        return
    for name, pid in rows:
        if TMP in cmdline(int(pid)):
            log(f"stopping {name} {pid} left by an earlier run")
            try:
                os.kill(int(pid), signal.SIGKILL)
            except OSError:
                pass
    time.sleep(0.5)


def descendants():
    """Every live process below this one (slurmstepd and the job processes
    too: this process is their subreaper); zombies among this process's own
    children that are none of the daemons are reaped on the way."""
    parent, zombie = {}, set()
    for d in os.listdir("/proc"):
        if d.isdigit():
            try:
                with open(f"/proc/{d}/stat") as f:
                    fields = f.read().rsplit(")", 1)[1].split()
                parent[int(d)] = int(fields[1])
                if fields[0] == "Z":
                    zombie.add(int(d))
            except (OSError, IndexError, ValueError):
                pass
    mine = {p.pid for _, p in daemons}
    for z in zombie:
        if parent.get(z) == os.getpid() and z not in mine:
            try:
                os.waitpid(z, os.WNOHANG)
            except ChildProcessError:
                pass
    found, todo = [], [os.getpid()]
    while todo:
        p = todo.pop()
        kids = [c for c, pp in parent.items() if pp == p]
        found += [k for k in kids if k not in zombie]
        todo += kids
    return found


def start(name, args, log_path):
    out = open(log_path, "w")
    p = subprocess.Popen(args, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, env=env)
    out.close()
    daemons.append((name, p))
    with open(PIDS, "a") as f:
        f.write(f"{name} {p.pid}\n")
    log(f"started {name}, pid {p.pid}: {' '.join(args)}")
    return p


def stop_all():
    """Cancel the jobs, stop slurmd and slurmctld, then whatever they left
    (slurmstepd, job processes), then munged: each by its PID."""
    if not daemons:
        return
    alive = {n for n, p in daemons if p.poll() is None}
    if {"slurmctld", "slurmd"} <= alive and submitted:
        cmd(["scancel"] + sorted({j.split("_")[0] for _, j in submitted}), check=False, timeout=20)
        for _ in range(40):
            q = cmd(["squeue", "-h", "-o", "%i"], check=False, timeout=10)
            if q.returncode != 0 or not q.stdout.strip():
                break
            time.sleep(0.5)
    for name, p in reversed(daemons):
        if name == "munged":
            continue
        stop_process(name, p)
    for pid in descendants():
        if pid not in {p.pid for _, p in daemons}:
            log(f"stopping {cmdline(pid).strip() or '?'} (pid {pid}), left behind by slurmd")
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass
    for name, p in daemons:
        if name == "munged":
            stop_process(name, p)
    time.sleep(0.2)
    descendants()   # reaps what was handed to this process as subreaper
    left = [n for n, p in daemons if p.poll() is None]
    if left:
        print("WARNING: still running:", left)
    else:
        log("every daemon stopped: " + ", ".join(f"{n} {p.pid}" for n, p in daemons))


def stop_process(name, p):
    if p.poll() is None:
        p.terminate()
        try:
            p.wait(10)
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait(5)


def on_signal(sig, frame):
    raise SystemExit(f"interrupted by signal {sig}")


# ------------------------------------------------------------- the cluster

def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def node_line(host):
    """NodeName=... with this machine's sockets, cores and threads (slurmd -C)."""
    p = subprocess.run([which("slurmd"), "-C"], capture_output=True, text=True, env=env, timeout=30)
    keys = dict(re.findall(r"(\w+)=(\S+)", p.stdout))
    topo = ["CPUs", "Boards", "SocketsPerBoard", "CoresPerSocket", "ThreadsPerCore"]
    if p.returncode == 0 and all(k in keys for k in topo):
        return int(keys["CPUs"]), " ".join(f"{k}={keys[k]}" for k in topo)
    n = os.cpu_count() or 1
    return n, f"CPUs={n}"


def start_cluster():
    for d in ("etc", "munge", "run", "state", "spool", "log"):
        os.makedirs(os.path.join(C, d), exist_ok=True)
    os.chmod(os.path.join(C, "munge"), 0o700)
    for d in (C, os.path.join(C, "run")):       # munged wants its socket folder open to all
        os.chmod(d, 0o755)
    key = os.path.join(C, "munge", "munge.key")
    with open(os.open(key, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o400), "wb") as f:
        f.write(os.urandom(1024))
    sock = os.path.join(C, "run", "munge.socket")
    start("munged", [which("munged"), "--foreground", "--force", f"--socket={sock}", f"--key-file={key}",
                     f"--pid-file={C}/munge/munged.pid", f"--seed-file={C}/munge/munged.seed",
                     f"--log-file={C}/log/munged.log"], f"{C}/log/munged.out")
    for _ in range(100):
        if os.path.exists(sock) or daemons[-1][1].poll() is not None:
            break
        time.sleep(0.1)
    cred = subprocess.run([which("munge"), "-n", "-S", sock], capture_output=True, timeout=20)
    dec = subprocess.run([which("unmunge"), "-S", sock], input=cred.stdout, capture_output=True, timeout=20)
    if cred.returncode or dec.returncode:
        skip("munged does not start or does not answer:\n" + tail(f"{C}/log/munged.out")
             + cred.stderr.decode() + dec.stderr.decode())

    host = socket.gethostname().split(".")[0]
    cpus, node = node_line(host)
    conf = os.path.join(C, "etc", "slurm.conf")
    with open(conf, "w") as f:
        f.write(f"""# a one-node cluster of the meshbatch slurm test (tests/slurm/slurm_test.py)
ClusterName=meshbatch-test
SlurmctldHost={host}(127.0.0.1)
SlurmctldPort={free_port()}
SlurmdPort={free_port()}
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket={sock}
StateSaveLocation={C}/state
SlurmdSpoolDir={C}/spool
SlurmctldPidFile={C}/run/slurmctld.pid
SlurmdPidFile={C}/run/slurmd.pid
SlurmctldLogFile={C}/log/slurmctld.log
SlurmdLogFile={C}/log/slurmd.log
SlurmctldDebug=info
SlurmdDebug=info
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
MpiDefault=none
SwitchType=switch/none
AccountingStorageType=accounting_storage/none
JobAcctGatherType=jobacct_gather/none
JobCompType=jobcomp/filetxt
JobCompLoc={C}/log/jobcomp.txt
MailProg=/bin/true
MinJobAge=3600
KillWait=10
ReturnToService=2
SchedulerType=sched/backfill
# pending batch jobs scheduled at once when one ends, not up to 3 s later
# (batch_sched_delay's default): the jobs here wait for one another's cores
SchedulerParameters=batch_sched_delay=0
NodeName={host} NodeAddr=127.0.0.1 {node} State=UNKNOWN
PartitionName=test Nodes={host} Default=YES MaxTime=INFINITE State=UP
""")
    env["SLURM_CONF"] = conf
    start("slurmctld", [which("slurmctld"), "-D", "-i", "-f", conf], f"{C}/log/slurmctld.out")
    start("slurmd", [which("slurmd"), "-D", "-f", conf, "-N", host], f"{C}/log/slurmd.out")
    state = ""
    for _ in range(120):
        if any(p.poll() is not None for _, p in daemons):
            break
        p = cmd(["sinfo", "-h", "-n", host, "-o", "%T"], check=False, timeout=10)
        state = p.stdout.strip()
        if p.returncode == 0 and state.startswith("idle"):
            break
        time.sleep(0.5)
    else:
        state += " (timed out)"
    if not state.startswith("idle"):
        dead = [f"{n} exited with {p.returncode}" for n, p in daemons if p.poll() is not None]
        skip(f"SLURM does not start: node state '{state}' {'; '.join(dead)}\n"
             + "".join(tail(f"{C}/log/{n}", 15) for n in ("slurmctld.out", "slurmctld.log", "slurmd.out",
                                                            "slurmd.log")))
    p = cmd(["srun", "--mpi=list"], check=False)
    mpi = p.stdout + p.stderr
    log(f"cluster up: node {host}, {cpus} CPUs; srun --mpi=list: {' '.join(mpi.split())}")
    return host, cpus


# ------------------------------------------------------------- jobs

def sbatch(label, args, cwd=W):
    """Submit as a user would (from cwd, environment exported) and return the job id."""
    p = cmd(["sbatch", "--parsable", "--export=ALL"] + args, cwd=cwd)
    jid = p.stdout.strip().split(";")[0]
    if not jid.isdigit():
        fail(f"sbatch gave no job id: {p.stdout}{p.stderr}")
    submitted.append((label, jid))
    log(f"submitted {label}: job {jid}: sbatch {' '.join(args)}")
    return jid


def records(jid):
    """scontrol's records of a job (one per array task once they run)."""
    p = cmd(["scontrol", "show", "job", "-o", jid], check=False, timeout=20)
    if p.returncode != 0:
        return []
    return [dict(re.findall(r"(\S+?)=(\S*)", ln)) for ln in p.stdout.splitlines() if ln.startswith("JobId=")]


def wait_jobs(jids, limit=JOB_WAIT_S):
    t0 = time.monotonic()
    limit = max(10, min(limit, DEADLINE - t0))
    while True:
        descendants()     # reap
        recs = {j: records(j) for j in jids}
        done = all(r and all(x.get("JobState") in TERMINAL and not re.search(r"[-,%]", x.get("ArrayTaskId", ""))
                             for x in r) for r in recs.values())
        if done:
            return recs
        if time.monotonic() - t0 > limit:
            for j in jids:
                print(cmd(["scontrol", "show", "job", j], check=False).stdout)
            print(tail(f"{C}/log/slurmctld.log"), tail(f"{C}/log/slurmd.log"))
            fail(f"jobs {' '.join(jids)} not finished after {limit} s")
        time.sleep(0.5)


def jobcomp(jobid):
    """The job completion record (jobcomp/filetxt) of a job, as a dict."""
    for _ in range(20):
        try:
            with open(f"{C}/log/jobcomp.txt") as f:
                for ln in f:
                    r = dict(re.findall(r"(\S+?)=(\S*)", ln))
                    if r.get("JobId") == jobid:
                        return r
        except OSError:
            pass
        time.sleep(0.25)
    return {}


RESULTS = []      # the lines printed at the end


def check_job(rec, state="COMPLETED", code="0:0"):
    """The job (or array task) ended in `state` with exit code `code`, in
    scontrol and in the job completion record; its log is printed."""
    jid = rec["JobId"]
    name = rec.get("JobName", "?")
    if rec.get("ArrayTaskId"):
        jid_shown = f"{rec['ArrayJobId']}_{rec['ArrayTaskId']}"
    else:
        jid_shown = jid
    comp = jobcomp(jid)
    RESULTS.append(f"{jid_shown:<12} {name:<24} {rec.get('JobState', '?'):<10} {rec.get('ExitCode', '?'):>8} "
                   f"{rec.get('RunTime', '?'):>10}   jobcomp: {comp.get('JobState', '-')} {comp.get('ExitCode', '-')}")
    out = rec.get("StdOut", "")
    print(f"--- log of job {jid_shown} ({name}): {out}")
    try:
        with open(out, errors="replace") as f:
            text = f.read()
    except OSError as e:
        fail(f"job {jid_shown}: no log {out}: {e}")
    print(text, end="" if text.endswith("\n") else "\n")
    if rec.get("JobState") != state or rec.get("ExitCode") != code:
        fail(f"job {jid_shown} ({name}): {rec.get('JobState')} {rec.get('ExitCode')}, expected {state} {code}")
    if comp.get("JobState") != state or comp.get("ExitCode") != code:
        fail(f"job {jid_shown}: job completion record {comp or '(none)'}, expected {state} {code}")
    return text


def info_ok(path, meshes):
    """meshbatch info reads the output and lists the meshes."""
    if not os.path.isfile(path):
        fail(f"no output {path}")
    p = cmd([EXE, "info", path], check=False)
    print(f"$ meshbatch info {path} -> {p.returncode}\n{p.stdout}{p.stderr}", end="")
    if p.returncode != 0:
        fail(f"meshbatch info {path} -> {p.returncode}")
    for m in meshes:
        if m not in p.stdout:
            fail(f"meshbatch info {path}: no mesh {m}")


def expect_in(text, what, job):
    if what not in text:
        fail(f"{job}: '{what}' not in its log")


# ------------------------------------------------------------- inputs

def prepare_inputs():
    """W/jobs: the job files of jobs/ as they are; W/data/meshes: the meshes
    of data/meshes (a link, only read); the outputs of the jobs (../out/...,
    out/...) thus land under W, the jobs' working folder in TMP."""
    os.makedirs(os.path.join(W, "jobs"))
    os.makedirs(os.path.join(W, "data"))
    os.symlink(os.path.join(SRC, "data", "meshes"), os.path.join(W, "data", "meshes"))
    for j in ("demo", "smooth_taubin", "smooth_laplacian_cotangent", "smooth_partitioned", "polylla"):
        shutil.copy(os.path.join(SRC, "jobs", j + ".yaml"), os.path.join(W, "jobs"))
    tri = os.path.join(W, "data", "triangulations")
    os.makedirs(tri)
    for seed in (1, 2):
        cmd([EXE, "generate", "delaunay", "--points", "3000", "--seed", str(seed), "-o",
             os.path.join(tri, f"delaunay{seed}.node")])
    # the walltime test: 12 meshes of about a second each on one core
    r = os.path.join(W, "resume")
    os.makedirs(r)
    for seed in range(1, 13):
        cmd([EXE, "generate", "sphere", "--vertices", "10000", "--seed", str(seed), "-o",
             os.path.join(r, f"sphere{seed:02d}.obj")])
    with open(os.path.join(r, "batch.yaml"), "w") as f:
        f.write("""# 12 noisy spheres of 10242 vertices, about a second each on one core
input: sphere*.obj
output: out/batch.h5
distribute: per-mesh
backend: auto
stages:
  - op: taubin
    iterations: 1200
""")
    return r


# ------------------------------------------------------------- the test

def main():
    if os.geteuid() != 0:
        skip("the slurm test starts slurmd, which runs jobs only as root here; run it as root")
    for s in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        signal.signal(s, on_signal)
    kill_leftovers()
    shutil.rmtree(TMP, ignore_errors=True)
    os.makedirs(TMP)
    ensure_packages()
    # make this process the subreaper of what slurmd starts (slurmstepd
    # detaches from it), so that the cleanup finds every such process
    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl(36, 1, 0, 0, 0)   # PR_SET_CHILD_SUBREAPER

    env.update({k: v for k, v in os.environ.items()
                if not k.startswith(("SLURM_", "SBATCH_", "SALLOC_", "SRUN_"))})
    env["PATH"] = os.path.dirname(os.path.abspath(EXE)) + ":" + SYS_PATH
    env.update(OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")
    env["TMPDIR"] = os.path.join(TMP, "tmpdir")     # Open MPI's session folders of the jobs
    os.makedirs(env["TMPDIR"])
    try:
        host, cpus = start_cluster()
        run_templates(cpus)
    finally:
        if RESULTS:     # scontrol show job's figures, like sacct's
            print("\nJobID        JobName                  State      ExitCode    Elapsed   (job completion record)")
            print("\n".join(RESULTS))
        stop_all()
    log("all templates passed")


def run_templates(cpus):
    templates = sorted(os.path.basename(p) for p in glob.glob(os.path.join(SRC, "slurm", "*.sbatch")))
    known = {"per-mesh.sbatch", "partitioned.sbatch", "array.sbatch"}
    if set(templates) != known:
        fail(f"templates {templates}: this test submits exactly {sorted(known)}; teach it the new ones")
    for t in ("per-mesh.sbatch", "partitioned.sbatch", "array.sbatch"):
        if not re.search(r"^#SBATCH --signal=TERM@\d+", open(os.path.join(SRC, "slurm", t)).read(), re.M):
            fail(f"slurm/{t} asks for no SIGTERM before the walltime (#SBATCH --signal=TERM@...)")
    ranks = 2 if cpus >= 2 else 1
    size = ["--nodes=1", f"--ntasks-per-node={ranks}", "--gpus-per-node=0", "--cpus-per-task=1"]
    tpl = os.path.join(SRC, "slurm")
    resume_dir = prepare_inputs()

    # per-mesh, partitioned and a job array, queued together
    with open(os.path.join(W, "joblist.txt"), "w") as f:
        f.write("jobs/demo.yaml\njobs/smooth_laplacian_cotangent.yaml\njobs/polylla.yaml\n")
    per_mesh = sbatch("per-mesh", size + [f"{tpl}/per-mesh.sbatch", "jobs/smooth_taubin.yaml"])
    part = sbatch("partitioned", size + [f"{tpl}/partitioned.sbatch", "jobs/smooth_partitioned.yaml"])
    array = sbatch("array", ["--array=0-2", "--gpus=0", "--cpus-per-task=1", f"{tpl}/array.sbatch",
                             "joblist.txt"])
    recs = wait_jobs([per_mesh, part, array])

    text = check_job(recs[per_mesh][0])
    expect_in(text, f"2 meshes on {ranks} rank", "per-mesh")
    expect_in(text, "2 meshes, 2 written, 0 failed", "per-mesh")
    info_ok(os.path.join(W, "out", "smoothed_taubin.h5"), ["bob", "spot"])

    text = check_job(recs[part][0])
    expect_in(text, f"on {ranks} rank", "partitioned")
    expect_in(text, "1 written, 0 failed", "partitioned")
    out = os.path.join(W, "out", "partitioned", "bob.h5")
    info_ok(out, ["bob"])
    # a partitioned run on N ranks writes what one rank writes
    with open(os.path.join(W, "jobs", "smooth_partitioned.yaml")) as f:
        one = f.read().replace("../out/partitioned/bob.h5", "../out/partitioned/bob-1rank.h5")
    with open(os.path.join(W, "jobs", "partitioned_1rank.yaml"), "w") as f:
        f.write(one)
    cmd([EXE, "run", os.path.join(W, "jobs", "partitioned_1rank.yaml"), "-q"], timeout=300)
    p = cmd([EXE, "compare", os.path.join(W, "out", "partitioned", "bob-1rank.h5"), out], check=False)
    print(p.stdout, p.stderr, sep="", end="")
    if p.returncode != 0:
        fail(f"the partitioned job on {ranks} ranks differs from one rank")

    tasks = sorted(recs[array], key=lambda r: int(r.get("ArrayTaskId", "-1")))
    if [r.get("ArrayTaskId") for r in tasks] != ["0", "1", "2"]:
        fail(f"array job {array}: tasks {[r.get('ArrayTaskId') for r in tasks]}, expected 0 1 2")
    for r, (path, meshes) in zip(tasks, [("out/demo/smoothed.h5", ["bob", "spot"]),
                                         ("out/smoothed_cotangent.h5", ["bob", "spot"]),
                                         ("out/polygons.h5", ["delaunay1", "delaunay2"])]):
        text = check_job(r)
        expect_in(text, "0 failed", f"array task {r['ArrayTaskId']}")
        info_ok(os.path.join(W, path), meshes)

    # walltime: an uninterrupted run, a run stopped by SIGTERM, its resume
    batch = "batch.yaml"
    n = 12
    ref = sbatch("uninterrupted", size + [f"{tpl}/per-mesh.sbatch", batch], cwd=resume_dir)
    check_job(wait_jobs([ref])[ref][0])
    out = os.path.join(resume_dir, "out", "batch.h5")
    info_ok(out, ["sphere01", "sphere12"])
    os.rename(out, os.path.join(resume_dir, "out", "reference.h5"))

    stopped = sbatch("SIGTERM", size + [f"{tpl}/per-mesh.sbatch", batch], cwd=resume_dir)
    ckpt = out + ".ckpt"
    t0 = time.monotonic()
    # a finished mesh's record in a rank's log (appended, unsynced within the sync period)
    while not (os.path.isdir(ckpt) and ckpt_records(ckpt)):
        r = records(stopped)
        if r and r[0].get("JobState") in TERMINAL:
            check_job(r[0])
            fail("the job ended before a mesh was checkpointed")
        if time.monotonic() - t0 > JOB_WAIT_S:
            fail(f"no checkpointed mesh after {JOB_WAIT_S} s")
        time.sleep(0.05)
    cmd(["scancel", "--signal=TERM", stopped])
    log(f"scancel --signal=TERM {stopped}: {len(ckpt_records(ckpt))} meshes checkpointed then")
    text = check_job(wait_jobs([stopped])[stopped][0], state="FAILED", code="3:0")
    expect_in(text, "stopped by SIGTERM", "the stopped job")
    expect_in(text, "--resume", "the stopped job")
    if os.path.exists(out):
        fail("the job stopped by SIGTERM left an output")
    kept = len(ckpt_records(ckpt))  # all appended and synced at the stop
    if not 1 <= kept < n:
        fail(f"{kept} meshes checkpointed of {n} by the stopped job")

    resumed = sbatch("resume", size + [f"{tpl}/per-mesh.sbatch", batch, "--resume"], cwd=resume_dir)
    text = check_job(wait_jobs([resumed])[resumed][0])
    expect_in(text, f"resume: {count(kept, 'mesh', 'meshes')} taken from the checkpoint, {n - kept} computed",
              "the resumed job")
    if os.path.exists(ckpt):
        fail("the checkpoint is left after the resumed job")
    p = cmd([EXE, "compare", os.path.join(resume_dir, "out", "reference.h5"), out], check=False)
    print(p.stdout, p.stderr, sep="", end="")
    if p.returncode != 0:
        fail("the resumed output differs from the uninterrupted one")
    log(f"resumed: {kept} meshes from the checkpoint, {n - kept} computed, output bitwise the uninterrupted one")


if __name__ == "__main__":
    main()
