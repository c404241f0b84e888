#!/usr/bin/env python3
"""End-to-end tests of the meshbatch command (run by CTest, see CMakeLists.txt).

Each test case is a function below; `cli_test.py CASE [options]` runs one.
Exit code 0 passes, 77 skips (missing optional data or Python module), other fails.
Environment (set by tests/CMakeLists.txt): MESHBATCH_EXE, MESHBATCH_SOURCE_DIR,
MESHBATCH_DATA_DIR, MESHBATCH_TEST_TMP, MESHBATCH_MPIEXEC.

Over 1,000 lines by choice: a catalogue of independent cases, one function
each, sharing the helpers at the top; splitting it by topic would spread
those helpers over several files for no gain in reading one case.
"""
import argparse
import os
import re
import shutil
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "util"))
from mbtest import (DATA, EXE, MPIEXEC, SKIP, SRC, compare, cuda_devices, datasets, fresh,  # noqa: E402,F401
                    ckpt_count, ckpt_records, count, fail, need_module, new_dataset_group, run,
                    same_datasets)


def write(path, text):
    with open(path, "w") as f:
        f.write(text)
    return path


def job(path, inputs, output, stages=None, **keys):
    stages = stages or [dict(op="taubin", **{"lambda": 0.5}, mu=-0.53, iterations=10)]
    lines = ["input:"] + [f"  - {i}" for i in inputs] + [f"output: {output}"]
    lines += [f"{k}: {v}" for k, v in keys.items()] + ["stages:"]
    for s in stages:
        items = list(s.items())
        lines.append(f"  - {items[0][0]}: {items[0][1]}")
        lines += [f"    {k}: {v}" for k, v in items[1:]]
    return write(path, "\n".join(lines) + "\n")


def mesh_names(path):
    h5py = need_module("h5py")
    with h5py.File(path, "r") as f:
        return sorted(f["meshes"].keys())


def small_meshes(d):
    """Five small meshes of different sizes: the two demo meshes, generated spheres."""
    files = [os.path.join(SRC, "data", "meshes", n) for n in ("spot.obj", "bob.obj")]
    for n, nv in (("sphere_a", 100), ("sphere_b", 700), ("sphere_c", 3000)):
        out = os.path.join(d, n + ".ply")
        run(["generate", "sphere", "--vertices", nv, "--seed", nv, "-o", out])
        files.append(out)
    return files


# ------------------------------------------------------------------ cases

def case_help(a):
    for cmd in ([], ["run"], ["import"], ["export"], ["info"], ["generate"], ["bench", "smooth"], ["partition"], ["compare"]):
        p = run(cmd + ["--help"])
        if "usage:" not in p.stdout:
            fail(f"meshbatch {' '.join(cmd)} --help prints no usage")
    p = run(["generate", "--help"])
    for g in ("generate delaunay --points N", "generate grid2d --vertices N", "clustered"):
        if g not in p.stdout:
            fail(f"meshbatch generate --help does not mention '{g}'")
    if "%%" in p.stdout or "10% uniform" not in p.stdout:
        fail("meshbatch generate --help prints a doubled '%%' (a format string printed as text)")
    if "delaunay_N" not in p.stdout or "--name NAME" not in p.stdout:
        fail("meshbatch generate --help does not say how generated meshes are named")
    p = run(["--help"])
    for g in ("grid", "npy", "vtk"):
        if g not in p.stdout:
            fail(f"meshbatch --help does not mention '{g}'")
    run(["frobnicate"], expect=2)
    run(["run"], expect=2)


def case_demo(a):
    meshio = need_module("meshio")
    d = fresh("demo")
    text = open(os.path.join(SRC, "jobs", "demo.yaml")).read()
    text = text.replace("../data/meshes", os.path.join(SRC, "data", "meshes"))
    text = text.replace("../out/demo/smoothed.h5", os.path.join(d, "smoothed.h5"))
    path = write(os.path.join(d, "demo.yaml"), text)
    run(["run", path], np=2)
    xdmf = os.path.join(d, "smoothed.xdmf")
    if not os.path.exists(xdmf):
        fail("no XDMF beside the output")
    check_meshio(meshio, xdmf, {"spot": 2930, "bob": 5344})


def check_meshio(meshio, xdmf, expected):
    """meshio reads the per-mesh XDMF files written beside the collection's
    XDMF (meshio reads one grid per file; ParaView opens the collection)."""
    stem = os.path.splitext(xdmf)[0]
    for name, nv in expected.items():
        m = meshio.read(f"{stem}.{name}.xdmf")
        if len(m.points) != nv:
            fail(f"meshio: {name} has {len(m.points)} points, expected {nv}")
        print(f"meshio.read({stem}.{name}.xdmf): {len(m.points)} points, {sum(len(c.data) for c in m.cells)} cells")


def case_import_export(a):
    d = fresh("import_export")
    files = small_meshes(d)
    coll = os.path.join(d, "c.h5")
    run(["import"] + files + ["-o", coll], np=2)
    names = mesh_names(coll)
    if names != sorted(["spot", "bob", "sphere_a", "sphere_b", "sphere_c"]):
        fail(f"imported names {names}")
    p = run(["info", coll])
    for s in ("spot: 2930 vertices, 5856 faces", "bbox"):
        if s not in p.stdout:
            fail(f"info lacks '{s}'")
    run(["export", coll, "-o", os.path.join(d, "objs"), "--format", "obj"])
    run(["export", coll, "--mesh", "bob", "-o", os.path.join(d, "bob.off")])
    run(["export", coll, "-o", os.path.join(d, "x.ply")], expect=2)  # several meshes, one file
    # an explicit --format that differs from the file's extension is refused, nothing written
    p = run(["export", coll, "--mesh", "bob", "-o", os.path.join(d, "bob.vtk"), "--format", "npy"], expect=2)
    if "--format npy" not in p.stderr or os.path.exists(os.path.join(d, "bob.vtk")):
        fail("export -o bob.vtk --format npy was not refused before writing")
    run(["export", coll, "--mesh", "bob", "-o", os.path.join(d, "bob2.off"), "--format", "off"])
    # a re-import of the exports gives the same vertices bitwise
    coll2 = os.path.join(d, "c2.h5")
    run(["import", os.path.join(d, "objs", "*.obj"), "-o", coll2])
    a1, a2 = datasets(coll), datasets(coll2)
    for n in names:
        k = f"meshes/{n}/vertices"
        if a1[k] != a2[k]:
            fail(f"{k} changed through OBJ export and import")
    print("export/import round trip exact")


def case_job_errors(a):
    d = fresh("job_errors")
    good = os.path.join(SRC, "data", "meshes", "spot.obj")
    bad = write(os.path.join(d, "bad.yaml"), f"input: {good}\noutput: {d}/o.h5\nouput: x\nstages:\n  - op: laplacian\n    iterations: 1\n")
    p = run(["run", bad], expect=2)
    if "bad.yaml" not in p.stderr or "ouput" not in p.stderr:
        fail("job-file error does not name the file and key")
    rng = write(os.path.join(d, "range.yaml"), f"input: {good}\noutput: {d}/o.h5\nstages:\n  - op: taubin\n    iterations: -3\n")
    p = run(["run", rng], expect=2)
    if "range.yaml:5" not in p.stderr or "iterations" not in p.stderr:
        fail("range error does not name file:line and key")
    run(["run", os.path.join(d, "missing.yaml")], expect=2)
    if os.path.exists(os.path.join(d, "o.h5")):
        fail("an invalid job wrote output")
    # the output is an input: refused before any work, the input untouched
    coll = os.path.join(d, "in.h5")
    run(["import", good, "-o", coll])
    before = open(coll, "rb").read()
    same = write(os.path.join(d, "same.yaml"), f"input: {coll}\noutput: {d}/./in.h5\nbackend: cpu\n"
                 "stages:\n  - {op: laplacian, iterations: 1}\n")
    p = run(["run", same], expect=2)
    if "is the input" not in p.stderr or open(coll, "rb").read() != before:
        fail("an output equal to the input is not refused before work, or the input changed")
    # another run writing the same output (this live process holds its lock,
    # the kernel's fcntl lock a run holds) is refused; the lock of a process
    # that is gone is taken over
    import fcntl
    import socket
    busy = os.path.join(d, "busy.h5")
    write(busy + ".lock", f"{socket.gethostname()} {os.getpid()}\n")
    job_busy = write(os.path.join(d, "busy.yaml"), f"input: {coll}\noutput: {busy}\nbackend: cpu\n"
                     "stages:\n  - {op: laplacian, iterations: 1}\n")
    with open(busy + ".lock", "r+") as held:
        fcntl.lockf(held, fcntl.LOCK_EX | fcntl.LOCK_NB)
        p = run(["run", job_busy], expect=1)
    if "is being written by another run" not in p.stderr or os.path.exists(busy):
        fail("a second run on the same output is not refused")
    gone = os.fork()
    if gone == 0:
        os._exit(0)
    os.waitpid(gone, 0)
    write(busy + ".lock", f"{socket.gethostname()} {gone}\n")
    p = run(["run", job_busy])
    if "taking over" not in p.stdout or os.path.exists(busy + ".lock") or not os.path.exists(busy):
        fail("the stale lock of a run that is gone is not taken over, or the lock is left")
    # an output path through a regular file (ENOTDIR, even for root)
    job_nd = write(os.path.join(d, "nd.yaml"), f"input: {coll}\noutput: {same}/o.h5\nbackend: cpu\n"
                   "stages:\n  - {op: laplacian, iterations: 1}\n")
    p = run(["run", job_nd], expect=1)
    if "o.h5" not in p.stderr or "Not a directory" not in p.stderr:
        fail("an output below a regular file is not reported with the reason")
    # an output folder that takes no file: refused before any work
    ro = os.path.join(d, "readonly")
    os.makedirs(ro, exist_ok=True)
    os.chmod(ro, 0o555)
    try:
        if os.access(ro, os.W_OK):
            print("the read-only folder is writable here (root): that check is skipped")
        else:
            job_ro = write(os.path.join(d, "ro.yaml"), f"input: {coll}\noutput: {ro}/o.h5\n"
                           "backend: cpu\nstages:\n  - {op: laplacian, iterations: 1}\n")
            p = run(["run", job_ro], expect=1)
            if "cannot write the output" not in p.stderr or "nothing was computed" not in p.stderr:
                fail("an unwritable output folder is not reported before work")
    finally:
        os.chmod(ro, 0o755)


def case_bad_inputs(a):
    d = fresh("bad_inputs")
    good = [os.path.join(SRC, "data", "meshes", "spot.obj"), os.path.join(SRC, "data", "meshes", "bob.obj")]
    bad = {
        "badindex.obj": ("v 0 0 0\nv 1 0 0\nv 0 1 0\nf 1 2 9\n", "badindex.obj:4"),
        "nan.obj": ("v 0 0 0\nv nan 0 0\nv 0 1 0\nf 1 2 3\n", "nan.obj:2"),
        "empty.off": ("OFF\n0 0 0\n", "empty"),
        "trunc.ply": ("ply\nformat binary_little_endian 1.0\nelement vertex 3\nproperty float x\n"
                      "property float y\nproperty float z\nelement face 1\nproperty list uchar int vertex_indices\n"
                      "end_header\n\0\0\0\0", "trunc.ply"),
        "notreally.h5": ("this is not HDF5\n", "notreally.h5"),
    }
    paths = [write(os.path.join(d, n), t) for n, (t, _) in bad.items()]
    missing = os.path.join(d, "missing.obj")
    before = {p: open(p, "rb").read() for p in paths}
    out = os.path.join(d, "out.h5")
    # a named input that does not exist: a job error before any work, every rank exits 2
    jp = job(os.path.join(d, "job.yaml"), good + paths + [missing], out)
    p = run(["run", jp], np=3, expect=2)
    if f"'{missing}' does not exist" not in p.stderr or os.path.exists(out):
        fail("a missing input is not a job error before any work")
    # inputs that exist but cannot be read: each fails alone, the others are written
    jp = job(os.path.join(d, "job.yaml"), good + paths, out)
    p = run(["run", jp], np=3, expect=1)
    for n, (_, needle) in bad.items():
        if needle not in p.stderr:
            fail(f"no message naming {needle}")
    if mesh_names(out) != ["bob", "spot"]:
        fail(f"output holds {mesh_names(out)}, expected the two good meshes")
    for q in paths:
        if open(q, "rb").read() != before[q]:
            fail(f"input {q} was modified")
    leftovers = [f for f in os.listdir(d) if ".tmp" in f]
    if leftovers:
        fail(f"temporary files left: {leftovers}")


def case_threads(a):
    """OpenMP threads per rank: without OMP_NUM_THREADS, the node's cores
    (the union of the ranks' affinity masks) divided by the ranks, at least
    1, said under -v; the user's OMP_NUM_THREADS kept; a warning where the
    ranks' threads exceed the cores. The wait policy: passive unless the
    user set OMP_WAIT_POLICY, checked in the OpenMP runtime itself
    (OMP_DISPLAY_ENV=verbose: libgomp's GOMP_SPINCOUNT is 0 for passive)."""
    import re
    import subprocess
    d = fresh("threads")
    coll = os.path.join(d, "s.h5")
    run(["generate", "sphere", "--vertices", "100", "-o", coll])
    base = {k: v for k, v in os.environ.items() if not k.startswith("OMP_") and k != "MESHBATCH_OMP_WAIT_DEFAULT"}
    cores = len(os.sched_getaffinity(0))

    def go(np, extra, args):
        cmd = (MPIEXEC + [str(np)] if np else []) + [EXE] + args
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=600, env=dict(base, **extra))
        print("$", " ".join(f"{k}={v}" for k, v in extra.items()), " ".join(cmd), f"-> {p.returncode}")
        print(p.stdout, p.stderr, sep="")
        if p.returncode != 0:
            fail(f"exit code {p.returncode}")
        return p

    job = write(os.path.join(d, "job.yaml"), f"input: {coll}\noutput: {d}/o.h5\nstages:\n  - op: laplacian\n    iterations: 1\n")
    # np None: a singleton (no launcher), unbound: every core of this process
    for np in (None, 1, 2, 3):
        p = go(np, {}, ["run", job, "-v"])
        m = re.search(r"threads: (\d+) OpenMP threads? per rank \(the node's (\d+) cores? / (\d+) ranks?\), "
                      r"wait policy passive \(meshbatch's default\)", p.stdout)
        if not m:
            fail(f"{np} ranks, -v: no line with the threads per rank and the passive wait policy")
        t, node_cores, ranks = map(int, m.groups())
        # mpirun may bind each rank to a core: then the node's cores are those the ranks are bound to
        if ranks != (np or 1) or not 1 <= node_cores <= cores or not 1 <= t <= max(1, node_cores // ranks):
            fail(f"{np} ranks: {t} threads per rank for {node_cores} cores / {ranks} ranks")
        if np is None and (node_cores != cores or t != cores):
            fail(f"one rank alone, unbound, on {cores} cores: {t} threads for {node_cores} cores")
        if "warning" in p.stderr:
            fail(f"{np} ranks with the default threads: a warning ({p.stderr.strip()})")
        print(f"{np or 'singleton, 1'} rank(s): {t} threads each, {node_cores} cores for the node's ranks")
    p = go(2, {"OMP_NUM_THREADS": "3"}, ["run", job, "-v"])
    if "threads: 3 OpenMP threads per rank (OMP_NUM_THREADS=3)" not in p.stdout:
        fail("OMP_NUM_THREADS=3 is not kept")
    many = 4 * cores + 1
    p = go(2, {"OMP_NUM_THREADS": str(many)}, ["run", job])
    if not re.search(rf"warning: 2 ranks x OpenMP threads = {2 * many} threads on a node of \d+ cores?: oversubscribed",
                     p.stderr):
        fail(f"2 ranks x {many} threads on {cores} cores: no warning")
    p = go(2, {"OMP_NUM_THREADS": str(many)}, ["run", job, "-q"])
    if "warning" in p.stderr:
        fail("-q: the oversubscription warning is still printed")
    # the runtime's own view of the wait policy: the last block it prints is the re-executed program's
    p = go(None, {"OMP_DISPLAY_ENV": "verbose"}, ["info", coll])
    spin = re.findall(r"GOMP_SPINCOUNT = '(\d+)'", p.stderr)
    if not spin:
        print("SKIP: this OpenMP runtime does not display GOMP_SPINCOUNT (not GNU libgomp)")
        sys.exit(SKIP)
    if spin[-1] != "0":
        fail(f"OMP_WAIT_POLICY unset: the runtime spins ({spin[-1]}), not passive")
    p = go(None, {"OMP_DISPLAY_ENV": "verbose", "OMP_WAIT_POLICY": "active"}, ["info", coll])
    spin = re.findall(r"GOMP_SPINCOUNT = '(\d+)'", p.stderr)
    if len(spin) != 1 or spin[0] == "0":
        fail(f"OMP_WAIT_POLICY=active: not kept (spin counts {spin}), or the program ran twice")
    print("wait policy: passive by default (spin count 0), the user's active kept")


def case_grid_fields(a):
    """The stencil ops' `fields` key: heat with `every` steps and snapshots
    only the named fields (the others unchanged, bitwise); a name the grid
    lacks fails with the job file and line and the grid's fields; a mapping
    is a job-file error (exit 2). And heat beyond the stability limit names
    the job file and line."""
    h5py = need_module("h5py")
    d = fresh("grid_fields")
    g = os.path.join(d, "g.h5")
    run(["generate", "grid", "--shape", "8,8,8", "--field", "u=sines", "--field", "v=gaussian", "-o", g, "-q"])

    def job(name, fields, dt="0.0001"):
        return write(os.path.join(d, name), f"input: {g}\noutput: {d}/{name}.h5\nstages:\n  - op: heat\n"
                     f"    alpha: 1\n    dt: {dt}\n    steps: 4\n    every: 2\n{fields}")
    run(["run", job("some.yaml", "    fields: [u]\n"), "-q"])
    run(["run", job("all.yaml", ""), "-q"])
    with h5py.File(g, "r") as f0, h5py.File(os.path.join(d, "some.yaml.h5"), "r") as f1, \
            h5py.File(os.path.join(d, "all.yaml.h5"), "r") as f2:
        k1 = sorted(f1["meshes/grid_8x8x8/fields"].keys())
        k2 = sorted(f2["meshes/grid_8x8x8/fields"].keys())
        if k1 != ["u", "u@t=0", "u@t=0.0002", "u@t=0.0004", "v"]:
            fail(f"fields: [u] kept {k1}")
        if len(k2) != 8:
            fail(f"no fields key: {k2}, expected both fields with 3 snapshots each")
        if (f1["meshes/grid_8x8x8/fields/v"][()] != f0["meshes/grid_8x8x8/fields/v"][()]).any():
            fail("fields: [u] changed v")
        if (f1["meshes/grid_8x8x8/fields/u"][()] != f2["meshes/grid_8x8x8/fields/u"][()]).any():
            fail("fields: [u] stepped u differently from the run on all fields")
    print("fields: [u]: u stepped and snapshotted, v unchanged; default: every field")
    part = write(os.path.join(d, "part.yaml"), open(os.path.join(d, "some.yaml")).read()
                 .replace("some.yaml.h5", "part.h5").replace("stages:", "distribute: partitioned\nstages:"))
    run(["run", part, "-q"], np=2)
    run(["compare", os.path.join(d, "part.h5"), os.path.join(d, "some.yaml.h5")])
    print("partitioned on 2 ranks: the same fields, bitwise")
    bad = job("bad.yaml", "    fields: [u, w]\n")
    p = run(["run", bad], expect=1)
    if "bad.yaml:4: stages[0].fields: 'w' is not a field" not in p.stderr or "u, v" not in p.stderr:
        fail("an unknown field name is not reported with the job file, line and the grid's fields")
    p = run(["run", job("map.yaml", "    fields: {u: 1}\n")], expect=2)
    if "map.yaml:9" not in p.stderr or "a list of names" not in p.stderr:
        fail("fields given as a mapping is not a job-file error with file:line")
    p = run(["run", job("unstable.yaml", "", dt="1")], expect=2)  # a job error (grid_stability)
    if "unstable.yaml:4: stages[0].dt: heat: time step 1 exceeds the stability limit" not in p.stderr:
        fail("heat beyond the stability limit does not name the job file and line")


def case_compare(a):
    """meshbatch compare as a regression check: a copy agrees (exit 0,
    bitwise); a per-vertex field of a mesh changed, a vertex or a grid
    made NaN on one side only, or a field missing on one side is a
    difference (exit 1, DIFFERENT), also within a tolerance; NaN at the
    same place on both sides agrees; a NaN vertex is refused by the reader
    (exit 1, named)."""
    h5py = need_module("h5py")
    d = fresh("compare")
    src = os.path.join(d, "in.h5")
    run(["import", os.path.join(SRC, "data", "meshes", "spot.obj"), "-o", src, "-q"])
    base = os.path.join(d, "base.h5")
    run(["run", write(os.path.join(d, "u.yaml"), f"input: {src}\noutput: {base}\nstages:\n"
                      "  - op: umbrella\n"), "-q"])
    grid = os.path.join(d, "grid.h5")
    run(["generate", "grid", "--shape", "6,6,6", "--field", "u=sines", "-o", grid, "-q"])

    def copy(path, name, edit):
        out = os.path.join(d, name)
        shutil.copyfile(path, out)
        with h5py.File(out, "r+") as f:
            edit(f)
        return out

    def differs(a_, b_, rtol="0"):
        p = run(["compare", a_, b_, "--rtol", rtol], expect=1)
        if "DIFFERENT" not in p.stdout and "missing" not in p.stdout:
            fail(f"{b_}: exit 1 without naming the difference")

    p = run(["compare", base, copy(base, "same.h5", lambda f: None)])
    if "field umbrella" not in p.stdout or "bitwise identical" not in p.stdout:
        fail("the per-vertex field is not compared (no line for it)")

    def field(f, k, v):
        ds = f["meshes/spot/fields/umbrella"]
        x = ds[()]
        x.flat[k] = v
        ds[...] = x
    differs(base, copy(base, "field.h5", lambda f: field(f, 7, 12345.0)), "1e-3")
    differs(base, copy(base, "field_nan.h5", lambda f: field(f, 7, float("nan"))), "1e300")

    def vertex(f, v):
        ds = f["meshes/spot/vertices"]
        x = ds[()]
        x[3, 1] = v
        ds[...] = x
    fnan = os.path.join(d, "field_nan.h5")
    run(["compare", fnan, copy(fnan, "field_nan2.h5", lambda f: None), "--rtol", "1e-12"])
    p = run(["compare", base, copy(base, "xyz_nan.h5", lambda f: vertex(f, float("nan")))], expect=1)
    if "non-finite coordinate" not in p.stderr:
        fail("a NaN vertex is not reported as a non-finite coordinate")
    differs(base, copy(base, "nofield.h5", lambda f: f["meshes/spot/fields"].pop("umbrella")))

    def point(f, v):
        ds = f["meshes/grid_6x6x6/fields/u"]
        x = ds[()]
        x.flat[10] = v
        ds[...] = x
    differs(grid, copy(grid, "grid_nan.h5", lambda f: point(f, float("nan"))), "1e300")
    run(["compare", grid, copy(grid, "grid_same.h5", lambda f: None)])
    print("compare: per-vertex fields compared; a NaN on one side is a difference")


def case_stale_xdmf(a):
    """A collection published again over an earlier one with other datasets
    (import, and a job's output written by the ranks) leaves no
    per-dataset XDMF file of a dataset it no longer holds; files of that
    name form that do not name the collection (the user's, another
    collection's) stay."""
    d = fresh("stale_xdmf")
    objs = [os.path.join(SRC, "data", "meshes", n) for n in ("spot.obj", "bob.obj")]
    imp = os.path.join(d, "imp.h5")
    run(["import"] + objs + ["-o", imp, "-q"])
    other = os.path.join(d, "imp.x.h5")  # its files are imp.x.*.xdmf
    run(["import", objs[1], "-o", other, "-q"])
    mine = write(os.path.join(d, "imp.notes.xdmf"), "<Xdmf>not a meshbatch file</Xdmf>\n")
    run(["import", objs[0], "-o", imp, "-q"])
    left = sorted(f for f in os.listdir(d) if f.endswith(".xdmf"))
    want = ["imp.notes.xdmf", "imp.spot.xdmf", "imp.x.bob.xdmf", "imp.x.xdmf", "imp.xdmf"]
    if left != want:
        fail(f"after import again: XDMF files {left}, expected {want}")
    if open(mine).read() != "<Xdmf>not a meshbatch file</Xdmf>\n":
        fail("the user's file was changed")
    out = os.path.join(d, "out.h5")
    both = write(os.path.join(d, "both.yaml"), f"input: [{objs[0]}, {objs[1]}]\noutput: {out}\n"
                 "stages:\n  - op: umbrella\n")
    run(["run", both, "-q"], np=2)
    if not os.path.exists(os.path.join(d, "out.bob.xdmf")):
        fail("the job wrote no out.bob.xdmf")
    one = write(os.path.join(d, "one.yaml"), f"input: {objs[0]}\noutput: {out}\n"
                "stages:\n  - op: umbrella\n")
    run(["run", one, "-q"], np=2)
    if os.path.exists(os.path.join(d, "out.bob.xdmf")) or not os.path.exists(os.path.join(d, "out.spot.xdmf")):
        fail("the job's output published again kept out.bob.xdmf or lost out.spot.xdmf")
    print("stale per-dataset XDMF files removed; others kept")


def case_grid_stability(a):
    """heat and wave beyond the stability limit: on a collection's grids,
    whose spacing is declared, a job error before any work (exit 2, the job
    file and the stage's line, the grid named, no output and no folder made),
    on 1 and 2 ranks, per mesh and partitioned; the limit is checked on every
    grid of the batch (a stable grid beside an unstable one does not run).
    On a .npy grid, whose spacing (1) is known only once read, that grid
    fails with the same message (exit 1) and the others are written."""
    np_ = need_module("numpy")
    d = fresh("grid_stability")
    fine = os.path.join(d, "fine.h5")  # spacing 1/32: heat limit 1.0e-4, wave 5.5e-3
    coarse = os.path.join(d, "coarse.h5")  # spacing 1: heat limit 0.1025, wave 0.453
    run(["generate", "grid", "--shape", "8,8,8", "--spacing", "0.03125", "--field", "u=sines",
         "--name", "fine", "-o", fine, "-q"])
    run(["generate", "grid", "--shape", "8,8,8", "--spacing", "1", "--field", "u=sines",
         "--name", "coarse", "-o", coarse, "-q"])

    def job_file(name, inputs, stage, distribute="per-mesh"):
        out = os.path.join(d, "out_" + name, "o.h5")
        return write(os.path.join(d, name + ".yaml"),
                     "input:\n" + "".join(f"  - {i}\n" for i in inputs) +
                     f"output: {out}\nbackend: cpu\ndistribute: {distribute}\nstages:\n"
                     f"  - {{op: derivative, axis: z}}\n  - {stage}\n"), os.path.dirname(out)

    cases = [("heat", "{op: heat, alpha: 1, dt: 0.01, steps: 2}", "heat: time step 0.01 exceeds "
              "the stability limit"),
             ("wave", "{op: wave, c: 1, dt: 0.1, steps: 2}", "wave: time step 0.1 exceeds the CFL "
              "limit")]
    for op, stage, what in cases:
        for nranks, distribute in ((1, "per-mesh"), (2, "per-mesh"), (2, "partitioned")):
            name = f"{op}_{nranks}_{distribute}"
            jp, outdir = job_file(name, [coarse, fine], stage, distribute)
            p = run(["run", jp], np=nranks if nranks > 1 else None, expect=2)
            if f"{name}.yaml:9: stages[1].dt: {what}" not in p.stderr or "grid 'fine'" not in p.stderr:
                fail(f"{name}: not a job error naming the file, the stage's line and the grid:\n{p.stderr}")
            if "grid 'coarse'" in p.stderr or " ok" in p.stdout or os.path.exists(outdir):
                fail(f"{name}: something ran or was made before the refusal:\n{p.stdout}")
        print(f"{op}: refused before any work on 1 and 2 ranks (exit 2, file:line, grid named)")
        jp, outdir = job_file(op + "_stable", [coarse], stage)
        run(["run", jp, "-q"], expect=0)  # stable on the coarse grid alone
    # a .npy grid (spacing 1: heat limit 0.1025) beside a collection grid of
    # spacing 4 (limit 1.64): dt 0.5 passes the check before work, and the
    # .npy grid fails when read, with the same message; the other is written
    wide = os.path.join(d, "wide.h5")
    run(["generate", "grid", "--shape", "8,8,8", "--spacing", "4", "--field", "u=sines",
         "--name", "wide", "-o", wide, "-q"])
    npy = os.path.join(d, "g.npy")
    np_.save(npy, np_.ones((8, 8, 8)))
    jp, outdir = job_file("npy", [npy, wide], "{op: heat, alpha: 1, dt: 0.5, steps: 2}")
    p = run(["run", jp], expect=1)
    if "npy.yaml:9: stages[1].dt: heat: time step 0.5 exceeds the stability limit" not in p.stderr \
            or "grid 'g'" not in p.stderr:
        fail(f"the .npy grid's instability is not reported with file:line and the grid:\n{p.stderr}")
    h5py = need_module("h5py")
    with h5py.File(os.path.join(outdir, "o.h5"), "r") as f:
        if sorted(f["meshes"]) != ["wide"]:
            fail(f"written {sorted(f['meshes'])}, expected the stable grid 'wide' only")
    print(".npy grid: refused when read (exit 1, file:line, grid named), the stable grid written")


def case_grid_verbose(a):
    """`-v` on a partitioned grid prints, as for surfaces, the split and one
    line per rank: owned and ghost points, neighbours, halo bytes per step
    (1-4 ranks). The figures add up: owned points sum to the grid's; ghosts
    are 4 planes of every face across a cut axis (summed over the ranks:
    2 x 4 x points / n_axis x blocks_axis per cut axis); bytes = 16 per ghost
    (sent and received, float64). Without -v none of these lines; the
    grid's lines show points and '-' for faces, no '0.000 ms/pass'; under
    -q, --timings still prints its table."""
    import re
    d = fresh("grid_verbose")
    g = os.path.join(d, "g.h5")
    shape = (12, 10, 9)
    total = shape[0] * shape[1] * shape[2]
    run(["generate", "grid", "--shape", ",".join(map(str, shape)), "--field", "u=sines", "-o", g, "-q"])
    for nranks in (1, 2, 3, 4):
        jp = write(os.path.join(d, f"job{nranks}.yaml"),
                   f"input: {g}\noutput: {d}/out{nranks}.h5\nbackend: cpu\ndistribute: partitioned\n"
                   "stages:\n  - {op: heat, alpha: 1, dt: 0.0001, steps: 2}\n")
        p = run(["run", jp, "-v"], np=nranks if nranks > 1 else None)
        m = re.search(r"^\[partition\] grid_12x10x9: (\d+) blocks? \((\d+) x (\d+) x (\d+) along z, y, x\), "
                      r"4 ghost planes per face, halo over mpi$", p.stdout, re.M)
        if not m or int(m.group(1)) != nranks:
            fail(f"{nranks} ranks: no line with the grid's blocks under -v:\n{p.stdout}")
        dims = [int(m.group(k)) for k in (2, 3, 4)]
        if dims[0] * dims[1] * dims[2] != nranks:
            fail(f"{nranks} ranks: blocks {dims} do not multiply to the rank count")
        rows = re.findall(r"^\[partition\]   rank (\d+): (\d+) owned, (\d+) ghosts, (\d+) neighbours, "
                          r"halo (\d+) B/step \(a float64 field\)$", p.stdout, re.M)
        if sorted(int(r[0]) for r in rows) != list(range(nranks)):
            fail(f"{nranks} ranks: per-rank halo lines for ranks {[r[0] for r in rows]}")
        owned = sum(int(r[1]) for r in rows)
        ghosts = sum(int(r[2]) for r in rows)
        want = sum(2 * 4 * (total // shape[k]) * dims[k] for k in range(3) if dims[k] > 1)
        if owned != total or ghosts != want:
            fail(f"{nranks} ranks: {owned} owned (grid {total}), {ghosts} ghosts (expected {want})")
        for r in rows:
            nb, gh, by = int(r[3]), int(r[2]), int(r[4])
            if by != 16 * gh or (nranks == 1) != (nb == 0) or nb > 6:
                fail(f"{nranks} ranks, rank {r[0]}: {gh} ghosts, {nb} neighbours, {by} B/step")
        q = run(["run", jp], np=nranks if nranks > 1 else None)
        if "[partition]" in q.stdout:
            fail(f"{nranks} ranks: halo figures printed without -v")
        # a grid's lines count points, not faces, and print no empty figures
        if " 0 faces" in q.stdout or "0.000 ms/pass" in q.stdout:
            fail(f"{nranks} ranks: '0 faces' or '0.000 ms/pass' in the output:\n{q.stdout}")
        if not re.search(r"^grid_12x10x9\s+0\s+1080\s+-\s", q.stdout, re.M):
            fail(f"{nranks} ranks: the summary row of the grid shows no '-' for faces:\n{q.stdout}")
        # -q --timings: the timings table and nothing of the run's progress
        os.remove(os.path.join(d, f"out{nranks}.h5"))
        t = run(["run", jp, "-q", "--timings"], np=nranks if nranks > 1 else None)
        if "timings," not in t.stdout or not re.search(r"^\s+wall\s+[0-9.]+ s", t.stdout, re.M):
            fail(f"{nranks} ranks: -q --timings printed no timings table:\n{t.stdout}")
        if "grid_12x10x9" in t.stdout or re.search(r"\[\d+ ranks?\]", t.stdout):
            fail(f"{nranks} ranks: -q printed the run's lines:\n{t.stdout}")
        print(f"{nranks} ranks: blocks {dims}, {ghosts} ghosts in all, the figures add up")


def case_ply_properties(a):
    """import keeps the extra scalar properties of a PLY's vertex and face
    elements (quality, red green blue, a face's area) as fields, ascii and
    binary; lists and other elements are named in a warning; export to PLY
    writes the fields back (colours as uchar) and a re-import gives the same
    values bitwise."""
    import struct
    h5py = need_module("h5py")
    d = fresh("ply_properties")
    xyz = [(0, 0, 0), (1, 0, 0), (0, 1, 0), (1, 1, 0.25)]
    quality = [0.5, 1.25, -3.0, 0.1]
    rgb = [(255, 0, 0), (0, 255, 0), (0, 0, 255), (10, 20, 30)]
    faces = [(0, 1, 2), (1, 3, 2)]
    area = [0.5, 0.25]
    head = ("element vertex 4\nproperty double x\nproperty double y\nproperty double z\n"
            "property double quality\nproperty uchar red\nproperty uchar green\nproperty uchar blue\n"
            "element face 2\nproperty list uchar int vertex_indices\nproperty double area\n"
            "property list uchar float texcoord\nelement edge 1\nproperty int vertex1\n"
            "property int vertex2\nend_header\n")
    asc = "ply\nformat ascii 1.0\n" + head
    for p, q, c in zip(xyz, quality, rgb):
        asc += " ".join(repr(float(v)) for v in p) + f" {q!r} {c[0]} {c[1]} {c[2]}\n"
    for f, ar in zip(faces, area):
        asc += f"3 {f[0]} {f[1]} {f[2]} {ar!r} 2 0.5 0.5\n"
    asc += "0 1\n"
    write(os.path.join(d, "asc.ply"), asc)
    binary = ("ply\nformat binary_little_endian 1.0\n" + head).encode()
    for p, q, c in zip(xyz, quality, rgb):
        binary += struct.pack("<4d3B", *p, q, *c)
    for f, ar in zip(faces, area):
        binary += struct.pack("<B3id", 3, *f, ar) + struct.pack("<B2f", 2, 0.5, 0.5)
    binary += struct.pack("<2i", 0, 1)
    with open(os.path.join(d, "bin.ply"), "wb") as out:
        out.write(binary)
    coll = os.path.join(d, "c.h5")
    p = run(["import", os.path.join(d, "asc.ply"), os.path.join(d, "bin.ply"), "-o", coll])
    if "list property 'texcoord' of the face element is not kept" not in p.stderr or \
            "element 'edge' (1) is not kept" not in p.stderr:
        fail("the properties read past are not named in a warning")

    def check(path, name):
        with h5py.File(path, "r") as f:
            g = f[f"meshes/{name}"]
            got = {k: list(g["fields"][k][()].ravel()) for k in g["fields"]}
            want = {"quality": quality, "red": [c[0] for c in rgb], "green": [c[1] for c in rgb],
                    "blue": [c[2] for c in rgb]}
            if got != want:
                fail(f"{path} {name}: vertex fields {got}, expected {want}")
            fa = list(g["face_fields"]["area"][()].ravel())
            if fa != area:
                fail(f"{path} {name}: face field area {fa}, expected {area}")
    check(coll, "asc")
    check(coll, "bin")
    print("import: quality, red, green, blue per vertex and area per face kept (ascii and binary)")
    out = os.path.join(d, "out.ply")
    run(["export", coll, "--mesh", "bin", "-o", out])
    text = open(out, "rb").read()
    hdr = text[:text.index(b"end_header")].decode()
    for line in ("property double quality", "property uchar red", "property uchar blue",
                 "property double area"):
        if line not in hdr:
            fail(f"the exported PLY header lacks '{line}':\n{hdr}")
    coll2 = os.path.join(d, "c2.h5")
    run(["import", out, "-o", coll2])
    check(coll2, "out")
    print("export to PLY writes the fields back; a re-import gives them bitwise")


def case_generate(a):
    d = fresh("generate")
    s = os.path.join(d, "s.obj")
    run(["generate", "sphere", "--vertices", "600", "-o", s])
    p = run(["generate", "subdivide", s, "--levels", "2", "-o", os.path.join(d, "s2.h5")])
    if "10242 vertices, 20480 faces" not in p.stdout:  # 642 -> 2562 -> 10242
        fail("subdivision counts")
    # planar generators: grid2d counts (n = ceil(sqrt(10)) = 4: 16 vertices,
    # 2 * 3^2 triangles), Triangle files, Delaunay determinism per seed
    p = run(["generate", "grid2d", "--vertices", "10", "-o", os.path.join(d, "g.node")])
    if "grid2d_16: 16 vertices, 18 faces" not in p.stdout:
        fail("grid2d counts")
    for ext in ("node", "ele", "neigh"):
        if not os.path.exists(os.path.join(d, "g." + ext)):
            fail(f"grid2d wrote no g.{ext}")
    p = run(["generate", "grid2d", "--vertices", "1000", "-o", os.path.join(d, "g.h5")])
    if "grid2d_1024: 1024 vertices, 1922 faces" not in p.stdout:
        fail("grid2d counts (1000 -> 32 x 32)")
    offs = []
    for k in range(2):
        out = os.path.join(d, f"d{k}.off")
        p = run(["generate", "delaunay", "--points", "500", "--seed", "5",
                 "--distribution", "clustered", "-o", out])
        if "delaunay_500: 500 vertices" not in p.stdout:
            fail("delaunay counts")
        offs.append(open(out, "rb").read())
    if offs[0] != offs[1]:
        fail("delaunay is not deterministic for a seed")
    run(["generate", "delaunay", "--points", "500", "-o", os.path.join(d, "d.h5")])
    p = run(["generate", "delaunay", "--points", "500", "-o", os.path.join(d, "d.ele")])
    p = run(["import", os.path.join(d, "d.node"), "-o", os.path.join(d, "imp.h5")])
    run(["generate", "delaunay", "--points", "2", "-o", os.path.join(d, "x.node")], expect=2)
    run(["generate", "delaunay", "--points", "50", "--distribution", "gaussian",
         "-o", os.path.join(d, "x.node")], expect=2)
    run(["generate", "grid2d", "-o", os.path.join(d, "x.node")], expect=2)


def case_ranks(a):
    d = fresh(f"ranks_{a.np}_{a.schedule}")
    files = small_meshes(d)
    files.append(grid_obj(os.path.join(d, "grid.obj"), 20))
    rules = ALL_RULES
    outs = {}
    for np in sorted({1, a.np, 8}):
        out = os.path.join(d, f"np{np}.h5")
        jp = job(os.path.join(d, f"np{np}.yaml"), files, out, stages=rules, backend="cpu",
                 schedule=a.schedule)
        p = run(["run", jp, "--timings"], np=np)
        if "max/mean" not in p.stdout:
            fail("no busy-time summary")
        for row in ("setup (backend, inputs)", "read", "compute (setup + stages)",
                    "write (per mesh)", "checkpoint (per mesh)", "write (end)", "wall",
                    "peak host memory"):
            if not any(ln.strip().startswith(row) and (" s " in ln + " " or "MB" in ln)
                       for ln in p.stdout.splitlines()):
                fail(f"--timings on {np} ranks: no '{row}' row")
        outs[np] = out
    for np in outs:
        same_datasets(outs[1], outs[np])


def case_shared_meshes(a):
    folder = os.path.join(DATA, "meshes") if DATA else ""
    if not os.path.isdir(folder):
        print("SKIP: ../shared/data/meshes is absent")
        sys.exit(SKIP)
    d = fresh("shared_meshes")
    outs = {}
    for np in (1, 3, 8):
        out = os.path.join(d, f"np{np}.h5")
        jp = job(os.path.join(d, f"np{np}.yaml"), [os.path.join(folder, "*.obj")], out, backend="cpu",
                 precision="float64")
        run(["run", jp], np=np)
        outs[np] = out
    if len(mesh_names(outs[1])) != 5:
        fail("expected five meshes")
    same_datasets(outs[1], outs[3])
    same_datasets(outs[1], outs[8])


def provenance_attrs(path):
    """{dataset name: {attribute: value as str}} of a collection."""
    h5py = need_module("h5py")
    with h5py.File(path, "r") as f:
        return {n: {k: v.decode() if isinstance(v, bytes) else v for k, v in g.attrs.items()}
                for n, g in f["meshes"].items()}


def check_provenance(path, precision, stages):
    """Every dataset of path records `precision` and exactly the stage keys
    stage_0 .. stage_(stages-1), in the words of docs/format.md."""
    for name, at in provenance_attrs(path).items():
        if at.get("precision") != precision:
            fail(f"{path}: {name} records precision {at.get('precision')!r}, computed in {precision}")
        keys = sorted(k for k in at if k.startswith("stage"))
        if keys != [f"stage_{k}" for k in range(stages)]:
            fail(f"{path}: {name} has stage keys {keys}, expected stage_0 .. stage_{stages - 1}")


def case_provenance(a):
    """The provenance attribute `precision` says what the ops computed in:
    a float32 grid's stencils float32 (the job's `precision` key is not
    theirs), a float64 grid's float64, smoothing on the CPU float64 even
    where the job asks for float32 (the key is the GPU's); per mesh on one
    rank and partitioned on N. A second run continues stage_N."""
    d = fresh(f"provenance_{a.np}")
    g32, g64 = os.path.join(d, "g32.h5"), os.path.join(d, "g64.h5")
    run(["generate", "grid", "--shape", "12,10,9", "--field", "u=sines", "--field", "v=noise",
         "--dtype", "float32", "-o", g32])
    run(["generate", "grid", "--shape", "12,10,9", "--field", "u=gaussian", "-o", g64])
    lap = [dict(op="grid_laplacian")]
    heat = [dict(op="heat", alpha=1, dt=1e-4, steps=3)]
    for grid, want in ((g32, "float32"), (g64, "float64")):
        stem = os.path.splitext(grid)[0]
        for dist, np in (("per-mesh", 1), ("partitioned", a.np)):
            out = f"{stem}_{dist}.h5"
            run(["run", job(f"{stem}_{dist}.yaml", [grid], out, stages=lap + heat, backend="cpu",
                            distribute=dist, precision="float64")], np=np)
            check_provenance(out, want, 2)
    surf = grid_obj(os.path.join(d, "grid.obj"), 12)
    for dist, np in (("per-mesh", 1), ("partitioned", a.np)):
        out = os.path.join(d, f"smooth_{dist}.h5")
        run(["run", job(os.path.join(d, f"smooth_{dist}.yaml"), [surf], out, backend="cpu",
                        distribute=dist, precision="float32")], np=np)
        check_provenance(out, "float64", 1)
        again = os.path.join(d, f"again_{dist}.h5")  # an output smoothed once more: stage_1
        run(["run", job(os.path.join(d, f"again_{dist}.yaml"), [out], again, backend="cpu",
                        distribute=dist)], np=np)
        check_provenance(again, "float64", 2)


def grid_obj(path, n, components=1, seed=1):
    """A noisy open triangulated n x n grid (several copies side by side): has a boundary."""
    import random
    rnd = random.Random(seed)
    v, f = [], []
    for c in range(components):
        base = len(v)
        for j in range(n):
            for i in range(n):
                v.append((i + 3 * n * c + rnd.uniform(-.2, .2), j + rnd.uniform(-.2, .2), rnd.uniform(-.3, .3)))
        for j in range(n - 1):
            for i in range(n - 1):
                a = base + j * n + i
                f += [(a, a + 1, a + n + 1), (a, a + n + 1, a + n)]
    with open(path, "w") as out:
        out.writelines(f"v {x!r} {y!r} {z!r}\n" for x, y, z in v)
        out.writelines(f"f {a + 1} {b + 1} {c + 1}\n" for a, b, c in f)
    return path


def shared_meshes(*names):
    """Paths of meshes in ../shared/data/meshes; skips the test where it is absent."""
    folder = os.path.join(DATA, "meshes") if DATA else ""
    if not os.path.isdir(folder):
        print("SKIP: ../shared/data/meshes is absent")
        sys.exit(SKIP)
    return [os.path.join(folder, n) for n in names]


ALL_RULES = [dict(op="taubin", **{"lambda": 0.5}, mu=-0.53, iterations=4, weights=w, boundary=b)
             for w in ("uniform", "cotangent", "inverse_distance") for b in ("free", "fixed", "boundary_curve")]


def case_partitioned(a):
    """distribute: partitioned on N ranks == per-mesh on one rank, bitwise."""
    d = fresh(f"partitioned_{a.np}")
    files = [grid_obj(os.path.join(d, "grid.obj"), 30), grid_obj(os.path.join(d, "two.obj"), 12, components=2),
             write(os.path.join(d, "tiny.obj"), "v 0 0 0\nv 1 0 0\nv 0 1 0.5\nf 1 2 3\n"),
             os.path.join(SRC, "data", "meshes", "spot.obj")]
    if a.shared:
        files = shared_meshes("armadillo.obj", "igea.obj")
    ref = os.path.join(d, "ref.h5")
    run(["run", job(os.path.join(d, "ref.yaml"), files, ref, stages=ALL_RULES, backend="cpu")], np=1)
    out = os.path.join(d, "part.h5")
    p = run(["run", job(os.path.join(d, "part.yaml"), files, out, stages=ALL_RULES, backend="cpu",
                        distribute="partitioned"), "--verbose"], np=a.np)
    if "[partition]" not in p.stdout or "imbalance" not in p.stdout:
        fail("no partition quality report")
    same_datasets(ref, out)


def quad_obj(path, n, seed=2):
    """A noisy open n x n grid of quadrilaterals with one pentagon (a polygon mesh)."""
    import random
    rnd = random.Random(seed)
    v = [(i + rnd.uniform(-.2, .2), j + rnd.uniform(-.2, .2), rnd.uniform(-.3, .3))
         for j in range(n) for i in range(n)]
    f = [(j * n + i, j * n + i + 1, (j + 1) * n + i + 1, (j + 1) * n + i)
         for j in range(n - 1) for i in range(n - 1)]
    v.append((n + 0.5, 0.5, 0.0))  # a pentagon on the last column's first quad
    a, b, c, d = f[n - 2]
    f[n - 2] = (a, b, len(v) - 1, c, d)
    with open(path, "w") as out:
        out.writelines(f"v {x!r} {y!r} {z!r}\n" for x, y, z in v)
        out.writelines("f " + " ".join(str(i + 1) for i in face) + "\n" for face in f)
    return path


def planar_obj(path, n, seed=3):
    """A noisy planar (z = 0) triangulated n x n grid: a triangulation2d once imported."""
    import random
    rnd = random.Random(seed)
    v = [(i + rnd.uniform(-.2, .2), j + rnd.uniform(-.2, .2)) for j in range(n) for i in range(n)]
    f = []
    for j in range(n - 1):
        for i in range(n - 1):
            a = j * n + i
            f += [(a, a + 1, a + n + 1), (a, a + n + 1, a + n)]
    with open(path, "w") as out:
        out.writelines(f"v {x!r} {y!r} 0.0\n" for x, y in v)
        out.writelines(f"f {a + 1} {b + 1} {c + 1}\n" for a, b, c in f)
    return path


def writer_report(p, np):
    """The -v lines of the writer rank's exchange: {rank: line}; each rank has one."""
    lines = {}
    for ln in p.stdout.splitlines():
        if ln.startswith("[rank ") and "] busy " in ln and " wait " in ln:
            lines[int(ln.split()[1].rstrip("]"))] = ln
    if sorted(lines) != list(range(np)):
        fail(f"-v on {np} ranks: busy/write/wait lines for ranks {sorted(lines)}")
    return lines


def case_writer(a):
    """Per-mesh batches on several ranks write each mesh as it finishes: rank 0
    (the writer rank) makes every mesh's groups and datasets, the others write
    their meshes' values at the offsets it hands out, or send meshes of other
    layouts (polygons) whole. Outputs bitwise equal to one rank's: a batch in
    which one mesh fails (the rest written, exit 1), and batches of fewer
    meshes than ranks, triangulation2d (values packed by their holder) and
    polygons2d (sent whole); per-rank busy/write/wait lines under -v; no
    temporary file left."""
    d = fresh(f"writer_{a.np}")
    files = small_meshes(d) + [grid_obj(os.path.join(d, "grid.obj"), 15),
                               quad_obj(os.path.join(d, "quads.obj"), 9),
                               write(os.path.join(d, "nan.obj"), "v 0 0 0\nv nan 0 0\nv 0 1 0\nf 1 2 3\n")]
    good = sorted(["spot", "bob", "sphere_a", "sphere_b", "sphere_c", "grid", "quads"])
    outs = {}
    for np in (1, a.np):
        out = os.path.join(d, f"np{np}.h5")
        jp = job(os.path.join(d, f"np{np}.yaml"), files, out, stages=ALL_RULES[:3], backend="cpu")
        p = run(["run", jp, "-v", "--timings"], np=np, expect=1)
        if "nan.obj" not in p.stderr or "1 failed" not in p.stdout:
            fail(f"{np} ranks: the failed mesh is not reported")
        if mesh_names(out) != good:
            fail(f"{np} ranks: output holds {mesh_names(out)}, expected {good}")
        if not any(ln.strip().startswith("wait (writer rank, end)") for ln in p.stdout.splitlines()):
            fail("--timings: no 'wait (writer rank, end)' row")
        lines = writer_report(p, np)
        if np > 1:
            # the meshes other ranks finished all went through rank 0
            rows = [ln.split() for ln in p.stdout.splitlines()]
            elsewhere = sum(1 for r in rows if len(r) == 7 and r[0] in good and r[6] == "ok" and r[1] != "0")
            w = lines[0].split("(its meshes, and ")[1].split()
            if int(w[0]) + int(w[3]) != elsewhere or elsewhere == 0:
                fail(f"rank 0 served {w[0]} described and {w[3]} whole meshes; {elsewhere} "
                     "finished on the other ranks")
        outs[np] = out
    same_datasets(outs[1], outs[a.np])
    # the writer rank's share (MESHBATCH_WRITER_SHARE), on 12 meshes of one
    # size: rank 0 computes fewer of them the more its metadata work counts
    # (one with a share of 100); the output is the one-rank output
    same = [grid_obj(os.path.join(d, f"eq{k}.obj"), 8) for k in range(12)]
    on0 = {}
    for share, np in (("0", 1), ("0", a.np), ("100", a.np)):
        out = os.path.join(d, f"share{share}_{np}.h5")
        jp = job(os.path.join(d, f"share{share}_{np}.yaml"), same, out, stages=ALL_RULES[:3],
                 backend="cpu")
        env = dict(os.environ)
        os.environ["MESHBATCH_WRITER_SHARE"] = share
        try:
            p = run(["run", jp, "--no-checkpoint"], np=np)
        finally:
            os.environ.clear()
            os.environ.update(env)
        rows = [ln.split() for ln in p.stdout.splitlines()]
        if np > 1:
            on0[share] = sum(1 for r in rows if len(r) == 7 and r[1] == "0" and r[6] == "ok")
            same_datasets(os.path.join(d, "share0_1.h5"), out)
    print(f"rank 0 took {on0['0']} of 12 meshes without the writer share, {on0['100']} with 100")
    if not 1 == on0["100"] < on0["0"]:
        fail(f"MESHBATCH_WRITER_SHARE: rank 0 took {on0['100']} meshes with a share of 100, "
             f"{on0['0']} without")
    # fewer meshes than ranks (two meshes on np + 2 ranks), no stages (an import)
    planar = [planar_obj(os.path.join(d, "p1.obj"), 12), planar_obj(os.path.join(d, "p2.obj"), 7, seed=4)]
    for kind in ("triangulation2d", "polygons2d"):
        ref = None
        for np in (1, a.np + 2):
            out = os.path.join(d, f"{kind}_{np}.h5")
            run(["import"] + planar + ["-o", out, "--kind", kind, "--verbose"], np=np)
            if mesh_names(out) != ["p1", "p2"]:
                fail(f"import of {kind} on {np} ranks holds {mesh_names(out)}")
            ref = ref or out
        same_datasets(ref, out)
    stray = [f for f in os.listdir(d) if ".tmp-" in f]
    if stray:
        fail(f"temporary files left: {stray}")


def case_parmetis(a):
    """partitioner: parmetis on N ranks, each rank reading only its slab of
    the collection, == partitioner: metis == one rank, bitwise."""
    d = fresh(f"parmetis_{a.np}")
    files = [grid_obj(os.path.join(d, "grid.obj"), 30), grid_obj(os.path.join(d, "two.obj"), 12, components=2),
             write(os.path.join(d, "tiny.obj"), "v 0 0 0\nv 1 0 0\nv 0 1 0.5\nf 1 2 3\n"),
             os.path.join(SRC, "data", "meshes", "spot.obj")]
    stages = ALL_RULES
    if a.shared:
        files = shared_meshes("armadillo.obj", "igea.obj")
    coll = os.path.join(d, "in.h5")
    run(["import"] + files + ["-o", coll], np=2)
    ref = os.path.join(d, "ref.h5")
    run(["run", job(os.path.join(d, "ref.yaml"), [coll], ref, stages=stages, backend="cpu")], np=1)
    metis = os.path.join(d, "metis.h5")
    run(["run", job(os.path.join(d, "metis.yaml"), [coll], metis, stages=stages, backend="cpu",
                    distribute="partitioned", partitioner="metis")], np=a.np)
    out = os.path.join(d, "parmetis.h5")
    p = run(["run", job(os.path.join(d, "parmetis.yaml"), [coll], out, stages=stages, backend="cpu",
                        distribute="partitioned", partitioner="parmetis"), "--verbose"], np=a.np)
    if not re.search(r"\d+ parts? \(parmetis\)", p.stdout):
        fail("no ParMETIS partition quality report")
    slabs = re.findall(r"\[rank (\d+)\] (\S+): read vertex rows \[(\d+), (\d+)\) of (\d+)", p.stdout)
    for name in {s[1] for s in slabs}:  # the ranks' slabs tile the vertices, nobody reads more
        rows = sorted((int(s[2]), int(s[3])) for s in slabs if s[1] == name)
        total = int(next(s[4] for s in slabs if s[1] == name))
        if len(rows) != a.np or rows[0][0] != 0 or rows[-1][1] != total or \
                any(rows[i][1] != rows[i + 1][0] for i in range(len(rows) - 1)):
            fail(f"{name}: the ranks' slabs {rows} do not tile [0, {total})")
        if max(e - b for b, e in rows) > total // a.np + 1:
            fail(f"{name}: a rank read more than its share of {total} vertices")
    if not slabs:
        fail("no slab reads reported")
    same_datasets(ref, metis)
    same_datasets(metis, out)
    # A polygon mesh (uniform and inverse-distance rules; cotangent needs triangles).
    poly = os.path.join(d, "poly.h5")
    run(["import", quad_obj(os.path.join(d, "quads.obj"), 20), "-o", poly])
    prules = [s for s in ALL_RULES if s["weights"] != "cotangent"]
    pref = os.path.join(d, "poly_ref.h5")
    run(["run", job(os.path.join(d, "pref.yaml"), [poly], pref, stages=prules, backend="cpu")], np=1)
    pout = os.path.join(d, "poly_par.h5")
    run(["run", job(os.path.join(d, "ppar.yaml"), [poly], pout, stages=prules, backend="cpu",
                    distribute="partitioned", partitioner="parmetis")], np=a.np)
    same_datasets(pref, pout)
    # Mesh files cannot be read by slabs: the mesh fails with a clear message.
    bad = run(["run", job(os.path.join(d, "bad.yaml"), files[:1], os.path.join(d, "bad.h5"), backend="cpu",
                          distribute="partitioned", partitioner="parmetis")], np=a.np, expect=1)
    if "meshbatch import" not in bad.stderr:
        fail("a mesh file with partitioner: parmetis is not explained")


def case_partition_file(a):
    """meshbatch partition writes a reusable partition with its quality."""
    d = fresh("partition_file")
    mesh = grid_obj(os.path.join(d, "grid.obj"), 40)
    if a.shared:
        mesh = shared_meshes("igea.obj")[0]
    part = os.path.join(d, "part4.h5")
    p = run(["partition", mesh, "--parts", "4", "-o", part])
    q = run(["info", part])
    import re
    m = re.search(r"owned imbalance ([0-9.]+)", q.stdout)
    if not m or "0 empty parts" not in q.stdout or "edge cut" not in q.stdout:
        fail("info does not show the partition quality")
    if float(m.group(1)) > 1.05:
        fail(f"imbalance {m.group(1)} > 1.05")
    ref = os.path.join(d, "ref.h5")
    run(["run", job(os.path.join(d, "ref.yaml"), [mesh], ref, backend="cpu")], np=1)
    out = os.path.join(d, "out.h5")
    run(["run", job(os.path.join(d, "p.yaml"), [mesh], out, backend="cpu", distribute="partitioned",
                    partition=part)], np=4)
    same_datasets(ref, out)
    bad = run(["run", job(os.path.join(d, "b.yaml"), [mesh], os.path.join(d, "b.h5"), backend="cpu",
                          distribute="partitioned", partition=part)], np=3, expect=1)
    if "4 parts" not in bad.stderr:
        fail("a partition for 4 ranks used on 3 is not reported")


def case_gpu(a):
    """CUDA backend, per-mesh and partitioned over N ranks sharing the GPUs,
    against the CPU reference: float64 within 1e-12 relative; float32
    partitioned equal to float32 on one rank bit for bit."""
    if cuda_devices() == 0:
        print("SKIP: no CUDA device")
        sys.exit(SKIP)
    if a.halo in ("nccl", "ipc") and cuda_devices() < a.np:
        print(f"SKIP: the {a.halo} halo needs one GPU per rank ({a.np} ranks, {cuda_devices()} GPUs)")
        sys.exit(SKIP)
    d = fresh(f"gpu_{a.np}_{a.halo}")
    files = [grid_obj(os.path.join(d, "grid.obj"), 40), grid_obj(os.path.join(d, "two.obj"), 12, components=2),
             os.path.join(SRC, "data", "meshes", "spot.obj"), os.path.join(SRC, "data", "meshes", "bob.obj")]
    def go(name, np, **keys):
        if keys.get("distribute") == "partitioned":
            keys["halo"] = a.halo
        out = os.path.join(d, name + ".h5")
        run(["run", job(os.path.join(d, name + ".yaml"), files, out, stages=ALL_RULES, **keys)], np=np)
        return out
    ref = go("cpu", 1, backend="cpu")
    compare(ref, go("cuda_per_mesh", a.np, backend="cuda"), 1e-12)
    part = go("cuda_partitioned", a.np, backend="cuda", distribute="partitioned")
    compare(ref, part, 1e-12)
    if a.halo in ("nccl", "ipc"):  # the halo went GPU to GPU, and says so in the log
        p = run(["run", job(os.path.join(d, "log.yaml"), files, os.path.join(d, "log.h5"), backend="cuda",
                            distribute="partitioned", halo=a.halo)], np=a.np)
        if f"halo over {a.halo}" not in p.stdout:
            fail(f"the partition report does not show the {a.halo} transport")
    if a.parmetis:  # each rank reads its slab of a collection, GPU passes
        coll = os.path.join(d, "in.h5")
        run(["import"] + files + ["-o", coll])
        files = [coll]
        compare(ref, go("cuda_parmetis", a.np, backend="cuda", distribute="partitioned",
                        partitioner="parmetis"), 1e-12)
    f32 = go("cuda32", 1, backend="cuda", precision="float32")
    compare(f32, go("cuda32_partitioned", a.np, backend="cuda", precision="float32",
                    distribute="partitioned"), 0)


def device_shim(d, files):
    """A simulated device (tests/cli/device_shim.c, LD_PRELOAD; CUDA builds
    with the shared runtime): the device is initialised on its own thread and
    joined before the first mesh's stages (whose first allocation then fails
    on the real runtime): the backend line names it, --timings has the
    wait's and the initialisation's rows, and the main thread's rows add up
    to the wall (the wait counted once)."""
    shim = os.environ.get("MB_DEVICE_SHIM", "")
    if not shim or not os.path.exists(shim) or "CUDA backend: compiled" not in run(["--version"]).stdout:
        print("no device shim or a build without CUDA: the simulated device is not checked")
        return
    out = os.path.join(d, "shim.h5")
    jp = job(os.path.join(d, "shim.yaml"), files, out, backend="cuda")
    old = dict(os.environ)
    asan = ":".join(x for x in [old.get("ASAN_OPTIONS", ""), "verify_asan_link_order=0"] if x)
    os.environ.update(LD_PRELOAD=shim, ASAN_OPTIONS=asan)  # a sanitizer build: the shim first
    try:
        p = run(["run", jp, "--timings"], expect=None)
    finally:
        os.environ.clear()
        os.environ.update(old)
    if "meshbatch test shim" not in p.stdout:
        fail("the simulated device was not initialised (the shim did not stand in for the runtime?)")
    rows = {}
    for ln in p.stdout.splitlines():
        m = re.match(r"^(\s+)(\S.*?)\s+([0-9.]+) s\s+[0-9.]+ s$", ln)
        if m:
            rows[m.group(2)] = (len(m.group(1)), float(m.group(3)))
    for row in ("wait (device initialisation)", "device initialisation (own thread)"):
        if row not in rows:
            fail(f"--timings: no '{row}' row")
    if rows["device initialisation (own thread)"][1] < 0.2:
        fail("the initialisation's row does not hold the shim's 200 ms context")
    main = sum(v for k, (ind, v) in rows.items() if ind == 2 and k != "wall")
    if "main thread waiting for it" in rows:  # the pipeline: the main thread waits, another computes
        main += rows["main thread waiting for it"][1] - rows["compute (setup + stages)"][1]
    if abs(main - rows["wall"][1]) > 0.001 * len(rows):  # each row rounded to 1 ms
        fail(f"the main thread's rows add up to {main:.3f} s, the wall is {rows['wall'][1]:.3f} s")


def case_device_init(a):
    """backend: cuda with the device initialised on its own thread beside the
    read (mb_backend_choose_begin): where no device can be used, the run
    fails on 1 and N ranks, per mesh and partitioned, with the backend's
    message and leaves no output, lock or temporary file; with a device,
    --timings shows the initialisation's row and the output is the same bits
    as with MESHBATCH_DEVICE_INIT=sync (the device chosen in the setup)."""
    d = fresh(f"device_init_{a.np}")
    files = small_meshes(d)[:3]
    if cuda_devices() == 0:
        for np, dist in ((1, "per-mesh"), (a.np, "per-mesh"), (a.np, "partitioned")):
            out = os.path.join(d, f"none_{np}_{dist}.h5")
            jp = job(os.path.join(d, f"none_{np}_{dist}.yaml"), files, out, backend="cuda",
                     distribute=dist)
            p = run(["run", jp, "--timings"], np=np if np > 1 else None, expect=1)
            if "no CUDA device can be used" not in p.stderr:
                fail(f"{np} rank(s), {dist}: the missing device is not reported")
            stem = os.path.basename(out)[:-3]  # the output, its XDMF, lock and temporaries
            left = [f for f in os.listdir(d) if f.startswith(stem) and not f.endswith(".yaml")]
            if left:
                fail(f"{np} rank(s), {dist}: a failed run left {left}")
        device_shim(d, files)
        return
    outs = {}
    for mode in ("thread", "sync"):
        out = os.path.join(d, f"{mode}.h5")
        jp = job(os.path.join(d, f"{mode}.yaml"), files, out, backend="cuda")
        if mode == "sync":
            os.environ["MESHBATCH_DEVICE_INIT"] = "sync"
        try:
            p = run(["run", jp, "--timings"], np=a.np if a.np > 1 else None)
        finally:
            os.environ.pop("MESHBATCH_DEVICE_INIT", None)
        row = "device initialisation (own thread)" in p.stdout
        if row != (mode == "thread"):
            fail(f"{mode}: the initialisation's --timings row is {'there' if row else 'absent'}")
        outs[mode] = out
    compare(outs["thread"], outs["sync"], 0)


def wait_lock_holder_gone(out):
    """Ranks that outlive a killed one are stopped by the launcher, some
    after it returns: wait (up to 10 s) until rank 0, which holds
    out.lock, is gone."""
    for _ in range(100):
        try:
            pid = int(open(out + ".lock").read().split()[1])
            os.kill(pid, 0)
        except (OSError, IndexError, ValueError):
            break
        time.sleep(0.1)
    time.sleep(0.5)


def case_resume(a):
    """A batch of 11 meshes on a.np ranks, interrupted and resumed: rank 0
    killed with SIGKILL after its first mesh (MESHBATCH_FAULT), then every
    rank sent SIGTERM after its first; each rerun with --resume takes the
    checkpointed meshes (per mesh: the records of every rank's log, whose
    tail a kill leaves in the page cache, unsynced), computes the rest,
    and writes the output of an uninterrupted run on one rank bit for bit
    (per mesh; a partitioned run is compared with itself uninterrupted);
    the stopped run leaves no output; a checkpoint of another job is
    refused."""
    d = fresh(f"resume_{a.np}_{a.schedule}_{a.distribute}")
    files = small_meshes(d) + [grid_obj(os.path.join(d, f"g{k}.obj"), 10 + k) for k in range(6)]
    out = os.path.join(d, "out.h5")
    keys = {"distribute": "partitioned", "partitioner": "blocks"} \
        if a.distribute == "partitioned" else {"schedule": a.schedule}
    jp = job(os.path.join(d, "job.yaml"), files, out, stages=ALL_RULES, backend="cpu", **keys)
    # the reference: one rank for per-mesh runs (a run on N ranks gives the same answer)
    run(["run", jp], np=a.np if a.distribute == "partitioned" else 1)
    ref = os.path.join(d, "ref.h5")
    shutil.move(out, ref)
    n = len(files)
    env = dict(os.environ)
    try:
        # rank 0 is killed after its first mesh: with the dynamic schedule a
        # rank may take few meshes, but rank 0 takes the queue's first
        for fault, code in (("kill:0:1", None), ("term:-1:1", 3)):
            os.environ["MESHBATCH_FAULT"] = fault
            p = run(["run", jp, "--checkpoint"], np=a.np, expect=code)
            os.environ.pop("MESHBATCH_FAULT")
            if os.path.exists(out):
                fail(f"{fault}: the interrupted run left an output")
            if fault.startswith("term") and "stopped by SIGTERM" not in p.stderr:
                fail("SIGTERM: no message saying the run stopped and how to go on")
            wait_lock_holder_gone(out)
            kept = ckpt_count(out + ".ckpt")
            # the faulty rank's one; one per rank (per mesh) or one in all (partitioned)
            least = 1 if fault.startswith("kill") or a.distribute == "partitioned" else a.np
            if not least <= kept <= n or (fault.startswith("term") and kept == n):
                fail(f"{fault}: {kept} meshes checkpointed of {n}")
            p = run(["run", jp, "--resume"], np=a.np)
            taken = sum(1 for ln in p.stdout.splitlines() if ln.startswith("[rank") and ": from the checkpoint" in ln)
            if taken != kept or f"resume: {count(kept, 'mesh', 'meshes')} taken from the checkpoint, {n - kept} computed" \
                    not in p.stdout:
                fail(f"{fault}: {taken} meshes taken from the checkpoint, expected {kept}")
            if os.path.exists(out + ".ckpt"):
                fail("the checkpoint is left after the output was written")
            stray = [f for f in os.listdir(d) if ".tmp-" in f]
            if stray:
                fail(f"{fault}: temporary files left after the resumed run: {stray}")
            same_datasets(ref, out)
            os.remove(out)
    finally:
        os.environ.clear()
        os.environ.update(env)
    # a checkpoint made by another job is not taken
    os.environ["MESHBATCH_FAULT"] = "term:-1:1"
    try:
        run(["run", jp, "--checkpoint"], np=a.np, expect=None)  # mpirun's code, or 3
    finally:
        os.environ.pop("MESHBATCH_FAULT")
    with open(jp) as f:
        text = f.read()
    write(jp, text.replace("iterations: 4", "iterations: 5", 1))  # a comment would not do
    p = run(["run", jp, "--resume"], np=a.np, expect=2)  # a usage error: another job's
    if "was made by another job" not in p.stderr or "iterations was 4, is 5 now" not in p.stderr:
        fail("a checkpoint of another job is resumed, or the key that changed is not named")


def case_resume_crash(a):
    """The checkpoint's sync period (MESHBATCH_CKPT_SYNC_SECONDS, 600 s
    here: no sync during the run) and damaged logs, on a.np ranks. Each
    rank killed with SIGKILL after its third mesh (the first that gets
    there ends the run) leaves its finished meshes as records of its log
    (in the page cache): a --resume on the same machine, with one rank
    more, takes them all. The
    damage a crash of the machine may leave, made by hand in the logs of a
    second such kill: the last record of the longest log cut short (a torn
    tail) and a byte flipped in the arrays of its first record: --resume
    drops the torn tail (saying how many bytes), warns that the damaged
    record's mesh is computed again, and takes the others. A kill -9 from
    outside (rank 0's process, while a longer batch runs, maybe in the
    middle of an append), then --resume. Every resumed output equals an
    uninterrupted run on one rank bit for bit."""
    import signal
    import subprocess
    d = fresh(f"resume_crash_{a.np}")
    files = small_meshes(d) + [grid_obj(os.path.join(d, f"g{k}.obj"), 10 + k) for k in range(6)]
    out = os.path.join(d, "out.h5")
    jp = job(os.path.join(d, "job.yaml"), files, out, stages=ALL_RULES, backend="cpu")
    run(["run", jp], np=1)
    ref = os.path.join(d, "ref.h5")
    shutil.move(out, ref)
    n = len(files)
    env = dict(os.environ)
    ck = out + ".ckpt"

    def killed(fault):
        os.environ["MESHBATCH_FAULT"] = fault
        try:
            run(["run", jp, "--checkpoint"], np=a.np, expect=None)
        finally:
            os.environ.pop("MESHBATCH_FAULT")
        wait_lock_holder_gone(out)
        if os.path.exists(out):
            fail(f"{fault}: the killed run left an output")
        return ckpt_records(ck)

    def resumed(expect_taken, np=a.np):
        p = run(["run", jp, "--resume"], np=np)
        if f"resume: {count(expect_taken, 'mesh', 'meshes')} taken from the checkpoint, {n - expect_taken} computed" \
                not in p.stdout:
            fail(f"resume: expected {expect_taken} meshes taken; log:\n{p.stdout}")
        same_datasets(ref, out)
        os.remove(out)
        if os.path.exists(ck):
            fail("the checkpoint is left after the output was written")
        return p

    try:
        os.environ["MESHBATCH_CKPT_SYNC_SECONDS"] = "600"
        recs = killed("kill:-1:3")
        if not 3 <= len(recs) < n:
            fail(f"kill in the sync period: {len(recs)} records, expected 3..{n - 1}")
        resumed(len(recs), np=a.np + 1)  # the page cache kept them; another number of ranks
        recs = killed("kill:-1:3")
        logs = sorted({r[0] for r in recs}, key=lambda q: -sum(1 for r in recs if r[0] == q))
        mine = [r for r in recs if r[0] == logs[0]]
        if len(mine) < 3:
            fail(f"the longest log holds {len(mine)} records, expected at least 3")
        path, off, hlen, plen, _ = mine[-1]
        with open(path, "r+b") as f:  # the last record torn: cut in its arrays
            f.truncate(off + hlen + plen // 2)
        path, off, hlen, plen, _ = mine[0]
        with open(path, "r+b") as f:  # a flipped byte in the first record's arrays
            f.seek(off + hlen + plen // 3)
            b = f.read(1)
            f.seek(off + hlen + plen // 3)
            f.write(bytes([b[0] ^ 0x10]))
        if len(ckpt_records(ck)) != len(recs) - 2:
            fail("the damage made by hand is not seen by the test's own reader")
        p = resumed(len(recs) - 2)
        if "bytes of torn or damaged records skipped" not in p.stdout:
            fail("resume: no line saying the torn tail was skipped")
        if "not taken from the checkpoint, computed again" not in p.stderr:
            fail("resume: no warning about the damaged record")
        # kill -9 from outside while a longer batch runs (its own reference)
        write(jp, open(jp).read().replace("iterations: 4", "iterations: 200"))
        run(["run", jp], np=1)
        shutil.move(out, ref)
        cmd = MPIEXEC + [str(a.np), EXE, "run", jp, "--checkpoint"]
        proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        t0 = time.time()
        pid = None
        while proc.poll() is None and time.time() - t0 < 300:
            if os.path.isdir(ck) and ckpt_records(ck) and os.path.exists(out + ".lock"):
                try:
                    pid = int(open(out + ".lock").read().split()[1])
                    os.kill(pid, signal.SIGKILL)
                    break
                except (OSError, IndexError, ValueError):
                    pid = None
            time.sleep(0.01)
        proc.wait(timeout=300)
        if pid is None:
            fail("kill -9: the batch ended before a mesh was checkpointed and killed")
        wait_lock_holder_gone(out)
        if os.path.exists(out):
            fail("kill -9: the killed run left an output")
        kept = len(ckpt_records(ck))
        print(f"kill -9 from outside: {kept} records whole of {n} meshes")
        resumed(kept)
    finally:
        os.environ.clear()
        os.environ.update(env)


def case_early_checks(a):
    """Output problems found before any computing (on rank 0, agreed by all
    ranks; one case on 2 ranks, the others on one; the job here would
    smooth for a minute; exit 2 for an output path that is wrong in itself,
    1 for a file system that refuses it): an output that is a
    folder (`.` or a trailing slash), below a regular file, in a folder
    that takes no file (a read-only tmpfs where the test may mount one:
    root writes anywhere else), and a mesh name too long for its XDMF file
    name. Each run prints no mesh line (nothing computed), names the
    reason, and leaves the input and the earlier output byte-identical. A
    job in which every mesh fails keeps the earlier output as it was."""
    import subprocess
    import time
    d = fresh("early_checks")
    spot = os.path.join(SRC, "data", "meshes", "spot.obj")
    coll = os.path.join(d, "in.h5")
    run(["import", spot, "-o", coll])
    earlier = os.path.join(d, "earlier.h5")
    run(["run", job(os.path.join(d, "first.yaml"), [coll], earlier, backend="cpu",
                    stages=[dict(op="laplacian", iterations=1)])])
    kept = {p: open(p, "rb").read() for p in (coll, earlier, earlier[:-3] + ".xdmf")}

    def refused(name, output, words, inputs=(coll,), np=None, code=2):
        jp = job(os.path.join(d, name + ".yaml"), list(inputs), output, backend="cpu",
                 stages=[dict(op="taubin", **{"lambda": 0.5}, mu=-0.53, iterations=200000)])
        t0 = time.monotonic()
        p = run(["run", jp], np=np, expect=code)
        took = time.monotonic() - t0
        print(f"{name}: refused after {took:.2f} s")
        for w in words:
            if w not in p.stderr:
                fail(f"{name}: the message does not say '{w}'")
        if "spot" in p.stdout and "vertices" in p.stdout:
            fail(f"{name}: a mesh was computed before the refusal")
        if took > 20:  # the job itself smooths for over a minute
            fail(f"{name}: the refusal came after {took:.1f} s, so after computing")
        for path, data in kept.items():
            if open(path, "rb").read() != data:
                fail(f"{name}: {path} changed")

    refused("dot", ".", ["is a folder"], np=2)  # agreed by both ranks
    refused("dot_1", ".", ["is a folder"])
    refused("slash", d + "/", ["is a folder"])
    refused("below_file", os.path.join(coll, "o.h5"), ["Not a directory"], code=1)
    long_mesh = os.path.join(d, "m" * 240 + ".obj")
    shutil.copy(spot, long_mesh)
    refused("long_name", earlier, ["XDMF file", "rename the mesh"], inputs=(coll, long_mesh))
    ro = os.path.join(d, "ro")
    os.makedirs(ro)
    if subprocess.run(["mount", "-t", "tmpfs", "-o", "ro,size=1m", "tmpfs", ro],
                      capture_output=True).returncode == 0:
        try:
            refused("read_only", os.path.join(ro, "o.h5"), ["cannot write the output",
                                                            "Read-only file system",
                                                            "nothing was computed"], code=1)
        finally:
            subprocess.run(["umount", ro], capture_output=True)
    else:
        print("read_only: cannot mount a read-only tmpfs here: that check is skipped")

    bad = write(os.path.join(d, "broken.obj"), "v 0 0 0\nv 1 0 0\nf 1 2 9\n")
    jp = job(os.path.join(d, "all_fail.yaml"), [bad], earlier, backend="cpu",
             stages=[dict(op="laplacian", iterations=1)])
    p = run(["run", jp], np=2, expect=1)
    if "none written" not in p.stdout or "left as it was" not in p.stdout:
        fail("an all-failing job does not say that the earlier output is kept")
    for path, data in kept.items():
        if open(path, "rb").read() != data:
            fail(f"all-failing job: {path} changed")
    print("early checks: every refusal before computing, inputs and earlier output unchanged")


def case_publish(a):
    """Publishing is all or nothing: a run whose per-mesh XDMF name is taken
    by a folder fails before anything is replaced (exit 1, the reason
    named); the earlier output (HDF5 and every XDMF file) and the inputs
    stay byte-identical, and no temporary file is left. A second run then
    replaces the earlier output whole."""
    d = fresh("publish")
    spot = os.path.join(SRC, "data", "meshes", "spot.obj")
    bob = os.path.join(SRC, "data", "meshes", "bob.obj")
    out = os.path.join(d, "out.h5")
    run(["run", job(os.path.join(d, "first.yaml"), [spot], out, backend="cpu",
                    stages=[dict(op="laplacian", iterations=1)])])
    files = sorted(os.listdir(d))
    kept = {f: open(os.path.join(d, f), "rb").read() for f in files if f.startswith("out")}
    inputs = {p: open(p, "rb").read() for p in (spot, bob)}
    os.makedirs(os.path.join(d, "out.bob.xdmf"))  # in the way of bob's XDMF file
    jp = job(os.path.join(d, "second.yaml"), [spot, bob], out, backend="cpu",
             stages=[dict(op="laplacian", iterations=3)])
    p = run(["run", jp], np=2, expect=1)
    if "out.bob.xdmf is in the way" not in p.stderr:
        fail("a folder at an XDMF name is not reported")
    for f, data in kept.items():
        if open(os.path.join(d, f), "rb").read() != data:
            fail(f"the earlier output file {f} changed")
    for path, data in inputs.items():
        if open(path, "rb").read() != data:
            fail(f"the input {path} changed")
    left = sorted(set(os.listdir(d)) - set(files) - {"out.bob.xdmf", "second.yaml"})
    if left:
        fail(f"files left behind: {left}")
    os.rmdir(os.path.join(d, "out.bob.xdmf"))
    run(["run", jp], np=2)
    if mesh_names(out) != ["bob", "spot"] or not os.path.isfile(os.path.join(d, "out.bob.xdmf")):
        fail("the second run did not replace the earlier output")
    print("publish: refused whole with the earlier output intact, then replaced whole")


def case_sync(a):
    """--checkpoint and --sync, seen through the preload (publish_shim.c),
    on a.np ranks: within the checkpoint's sync period (600 s here) a run
    that ends well syncs no checkpoint file; with the period 0
    (MESHBATCH_CKPT_SYNC_SECONDS=0) or --sync every rank's log is synced
    (fdatasync) and the checkpoint folder after its first sync (the log's
    name); with --sync the output and its XDMF files too, and the output's
    folder; without --sync the output is not synced."""
    shim = os.environ.get("MB_PUBLISH_SHIM", "")
    if not os.path.isfile(shim):
        print(f"SKIP: the preload {shim!r} is not built")
        sys.exit(SKIP)
    d = fresh(f"sync_{a.np}")
    files = small_meshes(d)
    out = os.path.join(d, "out.h5")
    jp = job(os.path.join(d, "job.yaml"), files, out, backend="cpu",
             stages=[dict(op="laplacian", iterations=1)])
    old = dict(os.environ)
    asan = ":".join(x for x in [old.get("ASAN_OPTIONS", ""), "verify_asan_link_order=0"] if x)
    os.environ.update(LD_PRELOAD=shim, ASAN_OPTIONS=asan)
    try:
        os.environ["MESHBATCH_CKPT_SYNC_SECONDS"] = "600"
        lazy = run(["run", jp, "--checkpoint"], np=a.np)
        os.environ["MESHBATCH_CKPT_SYNC_SECONDS"] = "0"
        plain = run(["run", jp, "--checkpoint"], np=a.np)
        os.environ.pop("MESHBATCH_CKPT_SYNC_SECONDS")
        synced = run(["run", jp, "--checkpoint", "--sync"], np=a.np)
    finally:
        os.environ.clear()
        os.environ.update(old)
    if "shim:" not in plain.stderr:
        print("SKIP: the preload is not in effect here (no rename seen)")
        sys.exit(SKIP)

    def events(p):
        """(what, path) of every fsync and fdatasync (both "fsync") and of
        the target of every rename."""
        ev = []
        for ln in p.stderr.splitlines():
            w = ln.split()
            if ln.startswith("shim: fsync") or ln.startswith("shim: fdatasync"):
                ev.append(("fsync", os.path.realpath(w[2])))
            elif ln.startswith("shim: rename") and len(w) > 3:
                ev.append(("rename", os.path.realpath(w[3])))
        return ev

    ck = os.path.realpath(out + ".ckpt")
    ev = events(lazy)
    touched = [(w, q) for w, q in ev if (os.path.dirname(q) == ck or q == ck) and w == "fsync"]
    if touched:
        fail(f"within the sync period: checkpoint files synced: {touched[:5]}")
    if any(w == "fsync" and q.startswith(os.path.realpath(out) + ".tmp-") for w, q in ev):
        fail("within the sync period, without --sync: the output was synced")
    print("within the sync period: no checkpoint file synced")
    for name, p in (("without --sync", plain), ("with --sync", synced)):
        ev = events(p)
        logs = sorted({q for w, q in ev if w == "fsync" and os.path.dirname(q) == ck and
                       q.endswith(".log")})
        want = [os.path.join(ck, f"run-1.rank-{r}.log") for r in range(a.np)]
        if logs != want:
            fail(f"{name}: checkpoint logs synced {logs}, expected {want}")
        for log in logs:
            k = ev.index(("fsync", log))
            if ("fsync", ck) not in ev[k:]:
                fail(f"{name}: the checkpoint folder not synced after the first sync of {log}")
        final = os.path.realpath(out)
        k = ev.index(("rename", final)) if ("rename", final) in ev else -1
        out_synced = any(w == "fsync" and q.startswith(final + ".tmp-") for w, q in ev)
        if name == "with --sync":
            if k < 0 or not any(w == "fsync" and q.startswith(final + ".tmp-") for w, q in ev[:k]):
                fail("--sync: the output put in place without a sync before")
            if not any(w == "fsync" and q.endswith(".xdmf.tmp-" + q.rsplit("-", 1)[-1])
                       for w, q in ev[:k]):
                fail("--sync: no XDMF file synced")
            if ("fsync", os.path.realpath(d)) not in ev[k:]:
                fail("--sync: the output's folder not synced after the renames")
        elif out_synced:
            fail("without --sync: the output was synced")
        print(f"{name}: {sum(1 for w, _ in ev if w == 'fsync')} syncs, "
              f"{len(logs)} checkpoint logs synced")
    same_datasets(out, out)


def case_publish_undo(a):
    """Replacing an earlier output, through a preload (publish_shim.c) that
    fails the exchange or rename onto one file, or makes the exchange
    unsupported (ENOSYS: the hard link and rename path). A replacing run
    exchanges every file (the .h5 included) and leaves no temporary; when
    the last XDMF file cannot be put into place after the .h5, the
    collection XDMF and one mesh's were exchanged and a new mesh's renamed
    into place, the run fails (exit 1) naming both paths and the reason,
    every earlier file is back byte-identical, the new mesh's file is gone
    and nothing is left over; the same without the exchange (earlier files
    kept by hard links, no .bak left); and without the exchange a run
    replaces the output whole."""
    shim = os.environ.get("MB_PUBLISH_SHIM", "")
    if not os.path.isfile(shim):
        print(f"SKIP: the preload {shim!r} is not built")
        sys.exit(SKIP)
    d = fresh("publish_undo")
    spot = os.path.join(SRC, "data", "meshes", "spot.obj")
    bob = os.path.join(SRC, "data", "meshes", "bob.obj")
    sphere = os.path.join(d, "sphere_a.ply")
    run(["generate", "sphere", "--vertices", 300, "--seed", 3, "-o", sphere])
    out = os.path.join(d, "out.h5")
    laplacian = lambda n: [dict(op="laplacian", iterations=n)]  # noqa: E731
    j1 = job(os.path.join(d, "first.yaml"), [spot, bob], out, backend="cpu", stages=laplacian(1))
    j2 = job(os.path.join(d, "second.yaml"), [spot, sphere, bob], out, backend="cpu",
             stages=laplacian(3))
    run(["run", j1])

    def shim_run(args, expect, **env):
        old = dict(os.environ)
        # under ASan the preload comes before its runtime in the library list
        asan = ":".join(x for x in [old.get("ASAN_OPTIONS", ""), "verify_asan_link_order=0"] if x)
        os.environ.update(LD_PRELOAD=shim, ASAN_OPTIONS=asan, **env)
        try:
            return run(args, expect=expect)
        finally:
            os.environ.clear()
            os.environ.update(old)

    def snapshot():
        return {f: open(os.path.join(d, f), "rb").read() for f in os.listdir(d) if f.startswith("out")}

    before = snapshot()
    p = shim_run(["run", j1], 0)
    if "shim:" not in p.stderr:
        print("SKIP: the preload is not in effect here (no rename seen)")
        sys.exit(SKIP)
    if any(".tmp-" in f or f.endswith(".bak") for f in os.listdir(d)) or \
            sorted(snapshot()) != sorted(before):
        fail(f"a replacing run left other files: {sorted(os.listdir(d))}")
    if snapshot()["out.h5"] == before["out.h5"]:
        fail("the replacing run did not replace out.h5")
    h5_line = [ln for ln in p.stderr.splitlines() if ln.startswith("shim: renameat2") and
               ln.split()[3] == out]
    exchanges = bool(h5_line) and h5_line[0].split()[7] == "0"
    if not exchanges:
        print(f"this file system cannot exchange ({h5_line}): the exchange cases are skipped")

    def refused(what, words, **env):
        kept = snapshot()
        files = sorted(os.listdir(d))
        p = shim_run(["run", j2], 1, MB_SHIM_FAIL_AT="out.bob.xdmf", **env)
        for w in words + ["Input/output error", "the earlier output was put back"]:
            if w not in p.stderr:
                fail(f"{what}: the message does not say '{w}'")
        moved = [ln.split()[3] for ln in p.stderr.splitlines()  # the checkpoint's aside
                 if ln.startswith("shim: rename") and ln.split()[-1] == "0" and
                 ".ckpt/" not in ln.split()[3]][:4]
        if [os.path.basename(m) for m in moved] != ["out.h5", "out.xdmf", "out.spot.xdmf",
                                                    "out.sphere_a.xdmf"]:
            fail(f"{what}: not every earlier file was moved before the failure: {moved}")
        for f, data in kept.items():
            if open(os.path.join(d, f), "rb").read() != data:
                fail(f"{what}: the earlier {f} was not put back")
        if sorted(os.listdir(d)) != files:
            fail(f"{what}: files left or missing: {sorted(set(os.listdir(d)) ^ set(files))}")
        print(f"{what}: refused, every earlier file put back, nothing left over")

    final = os.path.join(d, "out.bob.xdmf")
    if exchanges:
        refused("exchange", ["cannot exchange", f"{final}.tmp-", f"and {final}:"])
    refused("no exchange", [f"cannot rename {final}.tmp-", f" to {final}:"], MB_SHIM_NO_EXCHANGE="1")
    kept = snapshot()
    p = shim_run(["run", j2], 0, MB_SHIM_NO_EXCHANGE="1")
    if mesh_names(out) != ["bob", "sphere_a", "spot"] or kept["out.h5"] == snapshot()["out.h5"]:
        fail("without the exchange the run did not replace the earlier output")
    left = [f for f in os.listdir(d) if ".tmp-" in f or f.endswith(".bak")]
    if left:
        fail(f"files left behind without the exchange: {left}")
    print("publish undo: exchanged" if exchanges else "publish undo:",
          "or renamed, put back whole when a later step fails")


def case_hostile(a):
    """The cases of hostile input and precious files: `import -o` onto its
    own input and `partition -o` onto the collection are refused (exit 2)
    with the input byte-identical; `export` into the folder the meshes came
    from refuses to replace them (exit 2) unless --force; a collection
    whose face offsets point past its index array, and a binary PLY that
    declares 4e9 instances of an element without properties, give a clear
    error (exit 1) at once; a job of 10 000 stages loads and runs, and jobs
    of 10 001 and 1 000 000 stages are refused (exit 2) after a load that
    is linear in the file's size."""
    import time
    d = fresh("hostile")
    spot = shutil.copy(os.path.join(SRC, "data", "meshes", "spot.obj"), d)
    coll = os.path.join(d, "spot.h5")
    run(["import", spot, "-o", coll])
    keep = {p: open(p, "rb").read() for p in (spot, coll)}

    def unchanged(what):
        for path, data in keep.items():
            if open(path, "rb").read() != data:
                fail(f"{what}: {path} changed")

    p = run(["import", coll, "-o", os.path.join(d, ".", "spot.h5")], expect=2)
    if "is the input" not in p.stderr:
        fail("import onto its own input: no reason given")
    unchanged("import onto its input")
    p = run(["partition", coll, "--parts", 2, "-o", coll], expect=2)
    if "is the input" not in p.stderr:
        fail("partition onto the collection: no reason given")
    unchanged("partition onto the collection")
    p = run(["export", coll, "-o", d, "--format", "obj"], expect=2)
    if "exists" not in p.stderr or "--force" not in p.stderr:
        fail("export over an existing file: no reason given")
    unchanged("export into the input folder")
    out = os.path.join(d, "copy")
    os.makedirs(out)
    shutil.copy(spot, out)
    run(["export", coll, "-o", out, "--format", "obj", "--force"])
    h5py = need_module("h5py")
    np = need_module("numpy")
    bad = os.path.join(d, "bad_offsets.h5")
    with h5py.File(bad, "w") as f:
        g = new_dataset_group(f, "p")
        g["vertices"] = np.zeros((4, 3))
        g["face_offsets"] = np.array([0, 3, 1000], dtype="i8")
        g["face_indices"] = np.array([0, 1, 2, 1, 2, 3], dtype="i8")
    for cmd in (["info", bad], ["export", bad, "-o", os.path.join(d, "p.obj")]):
        p = run(cmd, expect=1)
        if "face_offsets" not in p.stderr or "last offset is 1000" not in p.stderr:
            fail(f"{cmd[0]} of offsets past the index array: no clear error")
    ply = os.path.join(SRC, "tests", "fuzz", "regressions", "ply", "huge-element-without-properties")
    shutil.copy(ply, os.path.join(d, "huge.ply"))
    t0 = time.monotonic()
    run(["import", os.path.join(d, "huge.ply"), "-o", os.path.join(d, "huge.h5")], expect=0)
    print(f"the PLY with 4e9 property-less instances imported in {time.monotonic() - t0:.2f} s")
    for n, code in ((10000, 0), (10001, 2), (1000000, 2)):
        jp = os.path.join(d, f"stages_{n}.yaml")
        with open(jp, "w") as f:
            f.write(f"input: {spot}\noutput: {d}/many.h5\nbackend: cpu\nstages:\n")
            f.write("  - {op: laplacian, iterations: 1}\n" * n)
        t0 = time.monotonic()
        p = run(["run", jp, "-q"], expect=code)
        print(f"{n} stages: exit {p.returncode} after {time.monotonic() - t0:.1f} s")
    if "more than 10000 stages" not in p.stderr:
        fail("a job of too many stages: no clear error")
    print("hostile input: every case refused or read with a clear error, inputs unchanged")


def case_full_disk(a):
    """An output on a full file system (a 1 MB tmpfs, mounted where the test
    may: else skipped with a message): refused with the sizes before the
    file is started, nothing left there, the input untouched."""
    import subprocess
    d = fresh("full_disk")
    mnt = os.path.join(d, "full")
    os.makedirs(mnt, exist_ok=True)
    if subprocess.run(["mount", "-t", "tmpfs", "-o", "size=1m", "tmpfs", mnt],
                      capture_output=True).returncode != 0:
        print("SKIP: cannot mount a small tmpfs here (needs root and mount rights)")
        sys.exit(SKIP)
    try:
        src = os.path.join(d, "big.ply")  # about 4 MB of output: more than the 1 MB there is
        run(["generate", "sphere", "--vertices", 40000, "--seed", 5, "-o", src])
        coll = os.path.join(d, "in.h5")
        run(["import", src, "-o", coll])
        before = open(coll, "rb").read()
        jp = job(os.path.join(d, "full.yaml"), [coll], os.path.join(mnt, "o.h5"), backend="cpu",
                 stages=[dict(op="laplacian", iterations=1)])
        p = run(["run", jp], expect=1)
        if "no room for the output" not in p.stderr or "MB are free" not in p.stderr:
            fail("a full disk is not reported with the sizes")
        left = [f for f in os.listdir(mnt)]
        if left:
            fail(f"files left on the full disk: {left}")
        if open(coll, "rb").read() != before:
            fail("the input changed")
    finally:
        subprocess.run(["umount", mnt], capture_output=True)


def check_xdmf_refs(xdmf, h5py):
    """Every HDF DataItem of an XDMF file names a dataset of the .h5 beside it
    with the DataItem's dimensions; returns the names of its Uniform grids."""
    import xml.etree.ElementTree as ET
    root = ET.parse(xdmf).getroot()
    items = [e for e in root.iter("DataItem") if e.get("Format") == "HDF"]
    if not items:
        fail(f"{xdmf}: no HDF data items")
    for e in items:
        fname, dset = e.text.strip().split(":", 1)
        with h5py.File(os.path.join(os.path.dirname(xdmf), fname), "r") as f:
            if dset not in f:
                fail(f"{xdmf}: {fname}:{dset} does not exist")
            dims = tuple(int(x) for x in e.get("Dimensions").split())
            if f[dset].shape != dims:
                fail(f"{xdmf}: {dset} has shape {f[dset].shape}, the XDMF says {dims}")
    return [g.get("Name") for g in root.iter("Grid") if g.get("GridType", "Uniform") == "Uniform"]


def case_demo_hints(a):
    """scripts/demo.sh on this build, then every command it prints for the
    user to copy: the run's `output: ... (in ParaView: paraview X.xdmf)`, the
    ParaView, meshio and OBJ-export lines of its summary, the `export PATH=`
    line (run in a fresh shell, then `meshbatch --version`), and a `reconfigure
    with -D...` of the backend line. Each is run from the repository root as
    printed and its result checked; ParaView's GUI command is not run: its
    file is checked against the HDF5 file and, where pvpython is on PATH,
    opened with ParaView's XDMF readers (tests/collection/test_xdmf_paraview.py).
    The demo must print fewer than 40 lines."""
    import re
    import subprocess
    h5py = need_module("h5py")
    need_module("meshio")
    env = dict(os.environ, MB_BUILD_DIR=os.path.dirname(EXE))
    env.pop("CI", None)  # CI=true would refresh the apt lists
    demo = subprocess.run(["bash", os.path.join(SRC, "scripts", "demo.sh")], cwd=SRC, env=env,
                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=3000)
    print(f"$ MB_BUILD_DIR={env['MB_BUILD_DIR']} bash scripts/demo.sh -> {demo.returncode}")
    print(demo.stdout)
    if demo.returncode != 0:
        fail(f"the demo exited with {demo.returncode}")
    lines = demo.stdout.splitlines()
    if len(lines) >= 40:
        fail(f"the demo printed {len(lines)} lines (fewer than 40 expected)")
    print(f"the demo printed {len(lines)} lines")

    def shell(cmd):
        p = subprocess.run(["bash", "-c", cmd], cwd=SRC, env=env, capture_output=True, text=True,
                           timeout=600)
        print(f"$ {cmd} -> {p.returncode}")
        print(p.stdout, p.stderr, sep="")
        if p.returncode != 0:
            fail(f"the printed command exits with {p.returncode}: {cmd}")
        return p

    pv_opened = {}  # (real path, identity of the XDMF and HDF5 files) -> the path read first

    def paraview(path, where):
        path = os.path.join(SRC, path)
        if not path.endswith(".xdmf") or not os.path.isfile(path):
            fail(f"{where}: paraview is given {path}, which is no XDMF file")
        h5 = path[:-len(".xdmf")] + ".h5"
        with h5py.File(h5, "r") as f:
            names = sorted(f["meshes"].keys())
        grids = check_xdmf_refs(path, h5py)
        if sorted(grids) != names:
            fail(f"{where}: {path} shows {grids}, the collection holds {names}")
        pv = shutil.which(os.environ.get("MESHBATCH_PVPYTHON", "pvpython"))
        # the run's output line and the demo's ParaView line name the same
        # files (jobs/../out/demo and out/demo): ParaView reads them once
        st = [os.stat(f) for f in (path, h5)]
        key = (os.path.realpath(path), tuple((x.st_ino, x.st_size, x.st_mtime_ns) for x in st))
        if pv and key in pv_opened:
            print(f"{where}: paraview {path}: the same files as {pv_opened[key]}, opened with "
                  f"ParaView's XDMF readers above")
        elif pv:
            p = subprocess.run([sys.executable, os.path.join(SRC, "tests", "collection", "test_xdmf_paraview.py"),
                                "--existing", h5], env=env, capture_output=True, text=True, timeout=1800)
            print(p.stdout, p.stderr, sep="")
            if p.returncode != 0:
                fail(f"{where}: ParaView's readers fail on {path}")
            pv_opened[key] = path
            print(f"{where}: paraview {path}: opened with ParaView's XDMF readers (pvpython)")
        else:
            print(f"{where}: `paraview {path}` not run (a GUI; no pvpython here to try ParaView's "
                  f"readers); the XDMF's {len(grids)} grids and data items match {h5}")

    ran = set()
    for ln in lines:
        m = re.match(r"^output: (\S+) \(in ParaView: paraview (\S+)\)$", ln)
        if m:
            if not os.path.isfile(os.path.join(SRC, m.group(1))):
                fail(f"the run's output {m.group(1)} does not exist")
            paraview(m.group(2), "run's output line")
            ran.add("output")
        m = re.match(r"^  (ParaView|meshio|OBJ files):\s+(.*)$", ln)
        if m:
            label, cmd = m.group(1), re.split(r"\s{3,}\(", m.group(2))[0].strip()
            if label == "ParaView":
                if not cmd.startswith("paraview "):
                    fail(f"ParaView line is not a paraview command: {cmd}")
                paraview(cmd.split(None, 1)[1], "demo's ParaView line")
            elif label == "meshio":
                mm = re.search(r'meshio\.read\("([^"]+)"\)', cmd)
                if not mm:
                    fail(f"meshio line reads no file: {cmd}")
                p = shell(cmd)
                stem, name = re.match(r"(.*)\.([^./]+)\.xdmf$", mm.group(1)).groups()
                with h5py.File(os.path.join(SRC, stem + ".h5"), "r") as f:
                    nv = f[f"meshes/{name}/vertices"].shape[0]
                if not re.search(rf"Number of points: {nv}\b", p.stdout):
                    fail(f"meshio did not read the {nv} points of {name}")
            else:
                out = re.search(r"-o (\S+)", cmd).group(1)
                shutil.rmtree(os.path.join(SRC, out), ignore_errors=True)
                shell(cmd)
                with h5py.File(os.path.join(SRC, re.search(r"(\S+\.h5)", cmd).group(1)), "r") as f:
                    for name in f["meshes"]:
                        obj = os.path.join(SRC, out, name + ".obj")
                        nv = f[f"meshes/{name}/vertices"].shape[0]
                        if not os.path.isfile(obj):
                            fail(f"the export wrote no {obj}")
                        got = sum(1 for t in open(obj) if t.startswith("v "))
                        if got != nv:
                            fail(f"{obj}: {got} vertices, the collection has {nv}")
                print(f"{out}: one OBJ per mesh with its vertices")
            ran.add(label)
        m = re.match(r"^  PATH:\s+(export PATH=.*)$", ln)
        if m:  # in a fresh shell: no PATH of this session, no build folder on it
            fresh_env = {"HOME": os.environ.get("HOME", "/root"), "PATH": "/usr/bin:/bin"}
            for k in ("OMPI_ALLOW_RUN_AS_ROOT", "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM"):
                if k in os.environ:
                    fresh_env[k] = os.environ[k]
            cmd = f"{m.group(1)}; cd /; command -v meshbatch; meshbatch --version"
            p = subprocess.run(["bash", "--norc", "--noprofile", "-c", cmd], env=fresh_env,
                               capture_output=True, text=True, timeout=120)
            print(f"$ env -i PATH=/usr/bin:/bin bash -c '{cmd}' -> {p.returncode}")
            print(p.stdout, p.stderr, sep="")
            found = p.stdout.splitlines()[0] if p.stdout else ""
            if p.returncode != 0 or os.path.realpath(found) != os.path.realpath(EXE):
                fail(f"the printed PATH line does not put this build's meshbatch on the PATH: {m.group(1)}")
            if "meshbatch " not in p.stdout:
                fail("meshbatch --version printed no version after the PATH line")
            ran.add("PATH")
        m = re.search(r"reconfigure with (-D\w+=\w+)", ln)
        if m and "reconfigure" not in ran:
            build = fresh("reconfigure")
            cmake = os.environ.get("MB_CMAKE", "cmake")
            p = subprocess.run([cmake, "-S", SRC, "-B", build, m.group(1), "-DMESHBATCH_TESTS=OFF"],
                               capture_output=True, text=True, timeout=600)
            print(f"$ cmake -S {SRC} -B {build} {m.group(1)} -DMESHBATCH_TESTS=OFF -> {p.returncode}")
            said = [t for t in p.stdout.splitlines() + p.stderr.splitlines() if "CUDA" in t]
            print("\n".join(said))
            if p.returncode == 0 and "meshbatch CUDA backend: ON" not in p.stdout:
                fail(f"configured with {m.group(1)}, but the CUDA backend is not on")
            if p.returncode != 0 and "no CUDA compiler (nvcc) was found" not in p.stdout + p.stderr:
                fail(f"configure with {m.group(1)} failed without saying that nvcc is missing")
            print(f"{m.group(1)}: " + ("the CUDA backend configures" if p.returncode == 0 else
                                       "refused here for want of nvcc, as the hint says (install the CUDA toolkit)"))
            ran.add("reconfigure")
    for want in ("output", "ParaView", "meshio", "OBJ files", "PATH"):
        if want not in ran:
            fail(f"the demo printed no {want} hint")
    print("hints run:", ", ".join(sorted(ran)))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("case")
    ap.add_argument("--np", type=int, default=2)
    ap.add_argument("--schedule", default="static")
    ap.add_argument("--distribute", default="per-mesh", choices=["per-mesh", "partitioned"])
    ap.add_argument("--shared", action="store_true")
    ap.add_argument("--parmetis", action="store_true", help="also run partitioner: parmetis")
    ap.add_argument("--halo", default="auto", choices=["auto", "mpi", "nccl", "ipc"])
    a = ap.parse_args()
    globals()["case_" + a.case](a)
    print("PASS")


if __name__ == "__main__":
    main()
