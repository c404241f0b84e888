#!/usr/bin/env python3
"""grid3d datasets in collections (docs/format.md, "grid3d").

    grid_collection.py             generate, info, compare, the HDF5 layout (h5py),
                                   NumPy .npy import and export, VTK export read
                                   back by meshio
    grid_collection.py --paraview  ParaView's XDMFReader and Xdmf3ReaderS on the
                                   collection and single-dataset XDMF files, its
                                   legacy VTK reader on the exported .vtk
                                   (exit 77 without pvpython)

`meshbatch generate grid` writes a non-cubic grid with an origin and unequal
spacings, float32 and float64 fields of every kind; the test checks the
datasets (shape, dtype, chunking, attributes) and values against the
analytic formulas, `meshbatch info` and `meshbatch compare`, a mesh op on a
grid refused with the dataset named, and with --paraview the image data
ParaView builds (dimensions, spacing, origin, point arrays). Exit code 0
passes, 77 skips, other fails.
"""
import math
import os
import shutil
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "util"))
from mbtest import SKIP, TMP, fail, run  # noqa: E402

SHAPE = (6, 9, 11)                  # z, y, x
ORIGIN = (0.5, -1.0, 2.0)
SPACING = (0.25, 0.125, 0.5)


def make(d):
    out = {}
    for dtype in ("float64", "float32"):
        path = os.path.join(d, f"grid_{dtype}.h5")
        run(["generate", "grid", "--shape", ",".join(map(str, SHAPE)),
             "--origin", ",".join(map(str, ORIGIN)), "--spacing", ",".join(map(str, SPACING)),
             "--field", "u=sines", "--field", "g=gaussian", "--field", "n=noise",
             "--dtype", dtype, "--name", f"g_{dtype}", "-o", path])
        out[dtype] = path
    return out


def expected(kind, k, j, i):
    idx = (k, j, i)
    L = [SHAPE[a] * SPACING[a] for a in range(3)]
    x = [ORIGIN[a] + idx[a] * SPACING[a] for a in range(3)]
    if kind == "sines":
        return math.prod(math.sin(2 * math.pi * (x[a] - ORIGIN[a]) / L[a]) for a in range(3))
    s = min(L) / 10
    c = [ORIGIN[a] + 0.5 * (SHAPE[a] - 1) * SPACING[a] for a in range(3)]
    return math.exp(-sum((x[a] - c[a]) ** 2 for a in range(3)) / (2 * s * s))


def check_layout(paths):
    import h5py
    import numpy as np
    for dtype, path in paths.items():
        with h5py.File(path, "r") as f:
            g = f[f"meshes/g_{dtype}"]
            kind = g.attrs["kind"]
            kind = kind.decode() if isinstance(kind, bytes) else kind
            if kind != "grid3d":
                fail(f"{path}: kind {kind}")
            if list(g.attrs["shape"]) != list(SHAPE) or list(g.attrs["origin"]) != list(ORIGIN) \
                    or list(g.attrs["spacing"]) != list(SPACING):
                fail(f"{path}: shape/origin/spacing {g.attrs['shape']} {g.attrs['origin']} {g.attrs['spacing']}")
            for name, kind in (("u", "sines"), ("g", "gaussian")):
                ds = g[f"fields/{name}"]
                if ds.shape != SHAPE or ds.dtype != np.dtype(dtype) or ds.chunks is None:
                    fail(f"{path}: fields/{name} is {ds.shape} {ds.dtype} chunks {ds.chunks}")
                a = ds[...]
                err = max(abs(float(a[k, j, i]) - expected(kind, k, j, i))
                          for k in range(SHAPE[0]) for j in range(SHAPE[1]) for i in range(SHAPE[2]))
                tol = 1e-14 if dtype == "float64" else 1e-7
                if err > tol:
                    fail(f"{path}: fields/{name} differs from the formula by {err}")
            n = g["fields/n"][...]
            if not (n.min() >= -1 and n.max() < 1 and n.std() > 0.4):
                fail(f"{path}: noise out of [-1, 1) or not spread: {n.min()} {n.max()} {n.std()}")
    print("HDF5 layout: shape, origin, spacing, chunked fields of each dtype, values of the formulas")


def check_cli(d, paths):
    p = run(["info", paths["float32"]])
    want = "g_float32: grid3d 6 x 9 x 11 (z, y, x; 594 points), origin (0.5, -1, 2), spacing (0.25, 0.125, 0.5)"
    if want not in p.stdout or "field u (float32, 1 component)" not in p.stdout:
        fail("meshbatch info does not describe the grid")
    p = run(["compare", paths["float64"], paths["float64"]])
    if p.stdout.count("bitwise identical") != 3:
        fail("compare of a grid with itself is not bitwise identical in its 3 fields")
    run(["compare", paths["float64"], paths["float32"]], expect=1)
    job = os.path.join(d, "mesh_op.yaml")
    with open(job, "w") as f:
        f.write(f"input: {paths['float64']}\noutput: {d}/out.h5\nbackend: cpu\n"
                "stages:\n  - {op: taubin, iterations: 1}\n")
    p = run(["run", job], expect=1)
    if "reads surface datasets" not in p.stdout + p.stderr or "grid3d" not in p.stdout + p.stderr:
        fail("a mesh op on a grid is not refused with the kinds named")
    print("info, compare and a mesh op on a grid: as documented")


def check_npy(d, paths):
    """NumPy arrays in and out: import of float32, big-endian float64 in
    Fortran order and int16 arrays (1 to 3 dimensions) as grids; export of
    every field as .npy; a file that is not .npy reported with its name."""
    import numpy as np
    src = os.path.join(d, "npy")
    os.makedirs(src, exist_ok=True)
    arrays = {"a": np.arange(60, dtype=np.float32).reshape(3, 4, 5),
              "f": np.asfortranarray(np.linspace(-1, 1, 60, dtype=">f8").reshape(3, 4, 5)),
              "i": np.arange(-6, 6, dtype=np.int16).reshape(3, 4)}
    for k, v in arrays.items():
        np.save(os.path.join(src, k + ".npy"), v)
    with open(os.path.join(src, "bad.npy"), "wb") as f:
        f.write(b"not numpy")
    coll = os.path.join(d, "npy.h5")
    p = run(["import", *[os.path.join(src, k + ".npy") for k in (*arrays, "bad")], "-o", coll],
            expect=1)
    if "bad.npy: not a NumPy .npy file" not in p.stdout + p.stderr:
        fail("a file that is not .npy is not reported with its name")
    out = os.path.join(d, "npy_out")
    run(["export", coll, "-o", out, "--format", "npy"])
    for k, v in arrays.items():
        back = np.load(os.path.join(out, f"{k}.u.npy"))
        want = np.asarray(v, dtype=np.float32 if v.dtype == np.float32 else np.float64)
        want = want.reshape((1,) * (3 - want.ndim) + want.shape)
        if back.dtype != want.dtype or back.shape != want.shape or not (back == want).all():
            fail(f"{k}.npy: came back as {back.dtype} {back.shape}, expected {want.dtype} {want.shape}")
    run(["export", paths["float64"], "-o", os.path.join(d, "one.npy"), "--format", "npy"],
        expect=2)
    print("npy: float32, big-endian Fortran-order float64 and int16 arrays imported as grids and "
          "exported back equal; a bad file named")


def check_bad_inputs(d, paths):
    """A grid with a NaN and an unstable heat step are refused with the
    dataset named and the reason; the good grid of the batch is written."""
    import numpy as np
    import h5py
    a = np.zeros((4, 5, 6))
    a[1, 2, 3] = np.nan
    bad = os.path.join(d, "nangrid.npy")
    np.save(bad, a)
    job = os.path.join(d, "bad_grid.yaml")
    with open(job, "w") as f:
        f.write(f"input:\n  - {bad}\n  - {paths['float64']}\noutput: {d}/bad_out.h5\n"
                "backend: cpu\nstages:\n  - {op: grid_laplacian}\n")
    p = run(["run", job], expect=1)
    if "nangrid (" not in p.stdout + p.stderr or "non-finite value (nan) at point (1, 2, 3)" not in p.stdout + p.stderr:
        fail("a NaN in a grid is not reported with the dataset and the point")
    with h5py.File(os.path.join(d, "bad_out.h5"), "r") as f:
        if sorted(f["meshes"]) != ["g_float64"]:
            fail(f"written {sorted(f['meshes'])}, expected the good grid only")
    job = os.path.join(d, "unstable.yaml")
    with open(job, "w") as f:
        f.write(f"input: {paths['float32']}\noutput: {d}/unstable.h5\nbackend: cpu\n"
                "stages:\n  - {op: heat, alpha: 1, dt: 1, steps: 1}\n")
    p = run(["run", job], expect=2)  # a job error: the collection declares the spacing
    if "exceeds the stability limit" not in p.stdout + p.stderr:
        fail("an unstable heat step is not refused with its limit")
    # a field of the wrong shape, a grid without fields, a surface mesh: each
    # refused with its file and dataset named, the good grid written
    import shutil as sh
    wrong = os.path.join(d, "wrong_shape.h5")
    sh.copy(paths["float64"], wrong)
    with h5py.File(wrong, "r+") as f:
        del f["meshes/g_float64/fields/u"]
        f["meshes/g_float64/fields/u"] = np.zeros((SHAPE[0], SHAPE[1], SHAPE[2] - 1))
    empty = os.path.join(d, "no_field.h5")
    sh.copy(paths["float32"], empty)
    with h5py.File(empty, "r+") as f:
        for n in list(f["meshes/g_float32/fields"]):
            del f[f"meshes/g_float32/fields/{n}"]
    surface = os.path.join(d, "tri.obj")
    with open(surface, "w") as f:
        f.write("v 0 0 0\nv 1 0 0\nv 0 1 0\nf 1 2 3\n")
    good = os.path.join(d, "good.npy")
    np.save(good, np.ones((4, 5, 6)))
    job = os.path.join(d, "bad_kinds.yaml")
    with open(job, "w") as f:
        f.write(f"input:\n  - {wrong}\n  - {empty}\n  - {surface}\n  - {good}\n"
                f"output: {d}/bad_kinds.h5\nbackend: cpu\nstages:\n  - {{op: grid_laplacian}}\n")
    p = run(["run", job], expect=1)
    text = p.stdout + p.stderr
    for want in (f"wrong_shape ({wrong}): {wrong}: /meshes/g_float64/fields/u is not a float32 or "
                 f"float64 dataset of shape [{SHAPE[0]}, {SHAPE[1]}, {SHAPE[2]}]",
                 f"g_float32 ({empty}): grid 'g_float32' has no field for grid_laplacian",
                 "reads grid3d datasets, and " + surface + " is a surface dataset"):
        if want not in text:
            fail(f"bad grid inputs: expected the message '{want}' in\n{text[-3000:]}")
    with h5py.File(os.path.join(d, "bad_kinds.h5"), "r") as f:
        if sorted(f["meshes"]) != ["good"]:
            fail(f"written {sorted(f['meshes'])}, expected the good grid only")
    print("bad grid inputs: a NaN, an unstable dt, a field of the wrong shape, a grid without "
          "fields and a surface mesh refused with the file, dataset and reason; the rest of the "
          "batch written")


# The pvpython probes: PV_SCRIPT's or PV_SERIES's probe(path, reader), then
# PV_DRIVER: `pvpython SCRIPT PATH READER` prints one probe's lines;
# `pvpython SCRIPT --list LIST.json` runs the probes of LIST ([[PATH, READER],
# ...]) in one process (pvpython's start, 2-4 s, was most of each probe's
# time), each between "PROBE [PATH, READER]" and "PROBE-END" lines, its
# reader deleted before the next.
PV_DRIVER = r"""
import json
import traceback
from paraview.simple import Delete, GetSources
if sys.argv[1] == "--list":
    with open(sys.argv[2]) as f:
        todo = json.load(f)
    for path, reader in todo:
        print("PROBE", json.dumps([path, reader]), flush=True)
        try:
            probe(path, reader)
            print("PROBE-END", flush=True)
        except Exception:
            traceback.print_exc()
        for s in list(GetSources().values()):
            Delete(s)
else:
    probe(sys.argv[1], sys.argv[2])
"""

PV_SCRIPT = r"""
import sys
from paraview.simple import LegacyVTKReader, XDMFReader, Xdmf3ReaderS
from paraview import servermanager as sm
def probe(path, reader):
    if reader == "XDMFReader":
        r = XDMFReader(FileNames=[path])
    elif reader == "LegacyVTKReader":
        r = LegacyVTKReader(FileNames=[path])
    else:
        r = Xdmf3ReaderS(FileName=[path])
    r.UpdatePipeline()
    d = sm.Fetch(r)
    while d.IsA("vtkMultiBlockDataSet") or d.IsA("vtkMultiPieceDataSet"):
        d = d.GetBlock(0) if d.IsA("vtkMultiBlockDataSet") else d.GetPiece(0)
    pd = d.GetPointData()
    print("DIMS", *d.GetDimensions())
    print("SPACING", *d.GetSpacing())
    print("ORIGIN", *d.GetOrigin())
    for n in ("u", "g", "n"):
        a = pd.GetArray(n)
        print("ARRAY", n, a.GetNumberOfTuples(), repr(a.GetValue(0)), repr(a.GetValue(a.GetNumberOfTuples() - 1)),
              repr(a.GetValue(123)))
""" + PV_DRIVER


def pv_probes(pv, script, probes, timeout=300):
    """{(path, reader): CompletedProcess} of each probe: all in one pvpython
    process (script --list), then each that gave no whole result there (the
    process aborted, as an Xdmf3 reader does on a bad file; an exception;
    the time limit: one probe's and 10 s a probe) alone, as every probe ran
    before, that run's result being the one checked. MESHBATCH_PV_SEPARATE=1:
    each alone from the start."""
    import json
    got = {}
    if os.environ.get("MESHBATCH_PV_SEPARATE", "") != "1":
        listfile = script + ".list.json"
        limit = timeout + 10 * len(probes)  # each takes well under 1 s there
        with open(listfile, "w") as f:
            json.dump([list(pr) for pr in probes], f)
        try:
            p = subprocess.run([pv, script, "--list", listfile], capture_output=True, text=True,
                               timeout=limit)
            out, how = p.stdout, f"exit {p.returncode}\n{p.stderr[-1500:]}"
        except subprocess.TimeoutExpired as e:
            out = e.stdout.decode(errors="replace") if isinstance(e.stdout, bytes) else (e.stdout or "")
            how = f"timed out after {limit} s"
        cur, lines = None, []
        for ln in out.splitlines():
            if ln.startswith("PROBE ["):
                cur, lines = tuple(json.loads(ln[len("PROBE "):])), []
            elif ln == "PROBE-END" and cur:
                got[cur] = subprocess.CompletedProcess([pv, script, *cur], 0, "\n".join(lines) + "\n", "")
                cur = None
            elif cur:
                lines.append(ln)
        if len(got) < len(probes):
            print(f"the shared pvpython process left {len(probes) - len(got)} of {len(probes)} probes "
                  f"without a result, each run alone next ({how})")
    for path, reader in probes:
        if (path, reader) not in got:
            got[(path, reader)] = subprocess.run([pv, script, path, reader], capture_output=True,
                                                 text=True, timeout=timeout)
    return got


def check_paraview(d, paths):
    import h5py
    pv = os.environ.get("MESHBATCH_PVPYTHON", "pvpython")
    script = os.path.join(d, "pv_grid.py")
    with open(script, "w") as f:
        f.write(PV_SCRIPT)
    refs, probes = {}, []
    for dtype, path in paths.items():
        stem = path[:-3]
        with h5py.File(path, "r") as f:
            refs[dtype] = {n: f[f"meshes/g_{dtype}/fields/{n}"][...].ravel() for n in ("u", "g", "n")}
        vtk = stem + ".vtk"
        run(["export", path, "-o", vtk])
        probes += [(os.path.abspath(f), r) for f, r in ((stem + ".xdmf", "XDMFReader"),
                                                       (stem + ".xdmf", "Xdmf3ReaderS"),
                                                       (f"{stem}.g_{dtype}.xdmf", "XDMFReader"),
                                                       (f"{stem}.g_{dtype}.xdmf", "Xdmf3ReaderS"),
                                                       (vtk, "LegacyVTKReader"))]
    got = pv_probes(pv, script, probes)
    for dtype, path in paths.items():
        stem = path[:-3]
        ref = refs[dtype]
        vtk = stem + ".vtk"
        for xdmf, readers in ((stem + ".xdmf", ("XDMFReader", "Xdmf3ReaderS")),
                              (f"{stem}.g_{dtype}.xdmf", ("XDMFReader", "Xdmf3ReaderS")),
                              (vtk, ("LegacyVTKReader",))):
            for reader in readers:
                p = got[(os.path.abspath(xdmf), reader)]
                lines = {ln.split()[0]: ln.split()[1:] for ln in p.stdout.splitlines()
                         if ln.split() and ln.split()[0] in ("DIMS", "SPACING", "ORIGIN")}
                arrays = [ln.split()[1:] for ln in p.stdout.splitlines() if ln.startswith("ARRAY")]
                if p.returncode != 0 or not lines:
                    fail(f"{reader} on {xdmf}: exit {p.returncode}\n{p.stderr[-2000:]}")
                if [int(v) for v in lines["DIMS"]] != list(SHAPE[::-1]) or \
                        [float(v) for v in lines["SPACING"]] != list(SPACING[::-1]) or \
                        [float(v) for v in lines["ORIGIN"]] != list(ORIGIN[::-1]):
                    fail(f"{reader} on {xdmf}: image data {lines}, expected dims {SHAPE[::-1]}, "
                         f"spacing {SPACING[::-1]}, origin {ORIGIN[::-1]} (x, y, z)")
                for name, n, first, last, mid in arrays:
                    r = ref[name]
                    if int(n) != r.size or float(first) != float(r[0]) or float(last) != float(r[-1]) \
                            or float(mid) != float(r[123]):
                        fail(f"{reader} on {xdmf}: array {name} {n} {first} {last} {mid}, expected "
                             f"{r.size} {r[0]} {r[-1]} {r[123]}")
                if len(arrays) != 3:
                    fail(f"{reader} on {xdmf}: {len(arrays)} point arrays, expected 3")
    print("ParaView (XDMFReader, Xdmf3ReaderS; LegacyVTKReader): image data of the grid's shape, "
          "spacing and origin with the fields' values, collection and single-dataset XDMF files "
          "and the exported .vtk")


def heat_series(d, paths):
    """A heat run with `every: 2` over 5 steps on the float64 grid: the
    collection and its per-dataset .xdmf (a Temporal collection)."""
    job = os.path.join(d, "series.yaml")
    out = os.path.join(d, "series.h5")
    with open(job, "w") as f:
        f.write(f"input: {paths['float64']}\noutput: {out}\nbackend: cpu\n"
                "stages:\n  - {op: heat, alpha: 0.1, dt: 1e-4, steps: 5, every: 2}\n")
    run(["run", job])
    return out, os.path.join(d, "series.g_float64.xdmf")


SERIES_TIMES = ["0", "0.0002", "0.0004", "0.0005"]  # steps 0, 2, 4 and the last, 5


def check_series(d, paths):
    """The heat op's time series: fields NAME@t=TIME at steps 0, 2, 4 and 5
    of every field, the last equal to the field itself, and the dataset's
    .xdmf a Temporal collection of 4 frames."""
    import h5py
    import numpy as np
    out, xdmf = heat_series(d, paths)
    with h5py.File(out, "r") as f:
        g = f["meshes/g_float64/fields"]
        for base in ("u", "g", "n"):
            names = [f"{base}@t={t}" for t in SERIES_TIMES]
            missing = [n for n in names if n not in g]
            if missing:
                fail(f"{out}: time-series fields {missing} missing (have {sorted(g)})")
            if not np.array_equal(g[names[-1]][...], g[base][...]):
                fail(f"{out}: {names[-1]} differs from {base}, the field after the last step")
            if np.array_equal(g[names[0]][...], g[names[1]][...]):
                fail(f"{out}: {names[0]} and {names[1]} are equal: the steps did not run")
    text = open(xdmf).read()
    if 'CollectionType="Temporal"' not in text or text.count("<Time Value=") != len(SERIES_TIMES):
        fail(f"{xdmf}: not a Temporal collection of {len(SERIES_TIMES)} frames")
    print("heat time series: fields NAME@t=TIME at steps 0, 2, 4, 5, the last equal to the field; "
          "the dataset's .xdmf a Temporal collection of 4 frames")


PV_SERIES = r"""
import sys
from paraview.simple import XDMFReader, Xdmf3ReaderS
from paraview import servermanager as sm
def probe(path, reader):
    r = XDMFReader(FileNames=[path]) if reader == "XDMFReader" else Xdmf3ReaderS(FileName=[path])
    r.UpdatePipelineInformation()
    times = list(r.TimestepValues)
    print("TIMES", *[repr(t) for t in times])
    for t in times:
        r.UpdatePipeline(t)
        d = sm.Fetch(r)
        while d.IsA("vtkMultiBlockDataSet") or d.IsA("vtkMultiPieceDataSet"):
            d = d.GetBlock(0) if d.IsA("vtkMultiBlockDataSet") else d.GetPiece(0)
        a = d.GetPointData().GetArray("u")
        print("FRAME", repr(t), a.GetNumberOfTuples(), repr(a.GetValue(123)))
""" + PV_DRIVER


def check_paraview_series(d, paths):
    """ParaView plays the heat op's time series: TimestepValues are the 4
    times, and each frame's u is that snapshot's values."""
    import h5py
    pv = os.environ.get("MESHBATCH_PVPYTHON", "pvpython")
    out, xdmf = heat_series(d, paths)
    script = os.path.join(d, "pv_series.py")
    with open(script, "w") as f:
        f.write(PV_SERIES)
    with h5py.File(out, "r") as f:
        want = {t: float(f[f"meshes/g_float64/fields/u@t={t}"][...].ravel()[123]) for t in SERIES_TIMES}
    readers = ("XDMFReader", "Xdmf3ReaderS")
    got = pv_probes(pv, script, [(os.path.abspath(xdmf), r) for r in readers])
    for reader in readers:
        p = got[(os.path.abspath(xdmf), reader)]
        times = [ln.split()[1:] for ln in p.stdout.splitlines() if ln.startswith("TIMES")]
        frames = [ln.split()[1:] for ln in p.stdout.splitlines() if ln.startswith("FRAME")]
        if p.returncode != 0 or not times:
            fail(f"{reader} on {xdmf}: exit {p.returncode}\n{p.stderr[-2000:]}")
        if [float(t) for t in times[0]] != [float(t) for t in SERIES_TIMES]:
            fail(f"{reader} on {xdmf}: times {times[0]}, expected {SERIES_TIMES}")
        for (t, n, v), ts in zip(frames, SERIES_TIMES):
            if int(n) != SHAPE[0] * SHAPE[1] * SHAPE[2] or float(v) != want[ts]:
                fail(f"{reader} on {xdmf}: frame {t} has u[123] = {v}, expected {want[ts]}")
    print("ParaView (XDMFReader, Xdmf3ReaderS): the heat time series plays as 4 frames with "
          "each snapshot's values")


def check_resume(d, paths):
    """A partitioned heat run over two grids stopped by SIGTERM after the
    first (MESHBATCH_FAULT) and resumed: the grid is read back block by
    block from the checkpoint and the output equals an uninterrupted run."""
    import h5py
    import numpy as np
    job = os.path.join(d, "resume.yaml")
    out = os.path.join(d, "resume.h5")
    with open(job, "w") as f:
        f.write(f"input:\n  - {paths['float64']}\n  - {paths['float32']}\noutput: {out}\n"
                "backend: cpu\ndistribute: partitioned\n"
                "stages:\n  - {op: heat, alpha: 0.1, dt: 1e-4, steps: 3}\n")
    run(["run", job])
    ref = os.path.join(d, "resume_ref.h5")
    shutil.move(out, ref)
    os.environ["MESHBATCH_FAULT"] = "term:-1:1"
    try:
        p = run(["run", job, "--checkpoint"], expect=3)  # stopped by a signal
    finally:
        os.environ.pop("MESHBATCH_FAULT")
    if "stopped by SIGTERM (" not in p.stderr or "1 of 2 meshes finished" not in p.stderr or \
            os.path.exists(out):
        fail("a partitioned grid run stopped by SIGTERM: wrong message, or an output left")
    p = run(["run", job, "--resume"])
    if "resume: 1 mesh taken from the checkpoint, 1 computed" not in p.stdout:
        fail("the partitioned grid run did not take its finished grid from the checkpoint")
    with h5py.File(ref, "r") as a, h5py.File(out, "r") as b:
        for name in ("g_float64", "g_float32"):
            for fld in a[f"meshes/{name}/fields"]:
                if not np.array_equal(a[f"meshes/{name}/fields/{fld}"][...],
                                      b[f"meshes/{name}/fields/{fld}"][...]):
                    fail(f"resumed {name}/{fld} differs from the uninterrupted run")
    print("partitioned grids: stopped by SIGTERM after the first, resumed from the checkpoint "
          "(read back by block), equal to an uninterrupted run")


def check_meshio(d, paths):
    """meshio reads the grid exported as legacy VTK (its XDMF reader takes no
    structured topology): points at origin + index x spacing, x fastest, and
    every field's values bit for bit. Returns 0, or SKIP where meshio is
    not installed (run last: the checks before it passed)."""
    try:
        import meshio
    except ImportError:
        print("SKIP: python module meshio is not installed: the VTK export is not read back "
              "(the other checks passed)")
        return SKIP
    import h5py
    import numpy as np
    for dtype, path in paths.items():
        vtk = os.path.join(d, f"g_{dtype}.vtk")
        run(["export", path, "-o", vtk])
        m = meshio.read(vtk)
        with h5py.File(path, "r") as f:
            g = f[f"meshes/g_{dtype}"]
            axes = [ORIGIN[a] + SPACING[a] * np.arange(SHAPE[a]) for a in range(3)]
            z, y, x = np.meshgrid(*axes, indexing="ij")
            want = np.stack([x.ravel(), y.ravel(), z.ravel()], axis=1)
            if m.points.shape != want.shape or not np.allclose(m.points, want, rtol=0, atol=1e-12):
                fail(f"meshio on {vtk}: points differ from origin + index x spacing")
            for n in ("u", "g", "n"):
                ref = g[f"fields/{n}"][...].ravel()
                got = np.asarray(m.point_data[n]).reshape(-1)
                if got.dtype.itemsize != ref.dtype.itemsize or not np.array_equal(got, ref):
                    fail(f"meshio on {vtk}: field {n} ({got.dtype}) differs from the collection ({ref.dtype})")
    print("meshio: the grids exported as VTK read back with their points and fields bit for bit")
    return 0


def main():
    paraview = "--paraview" in sys.argv[1:]
    try:
        import h5py  # noqa: F401
        import numpy  # noqa: F401
    except ImportError as exc:
        print(f"SKIP: {exc}")
        return SKIP
    if paraview and not shutil.which(os.environ.get("MESHBATCH_PVPYTHON", "pvpython")):
        print("SKIP: pvpython is not on PATH")
        return SKIP
    d = os.path.join(TMP, "grid_collection")
    shutil.rmtree(d, ignore_errors=True)
    os.makedirs(d)
    paths = make(d)
    if paraview:
        check_paraview(d, paths)
        check_paraview_series(d, paths)
        return 0
    check_layout(paths)
    check_cli(d, paths)
    check_npy(d, paths)
    check_series(d, paths)
    check_resume(d, paths)
    check_bad_inputs(d, paths)
    return check_meshio(d, paths)  # last: 77 where meshio is missing


if __name__ == "__main__":
    sys.exit(main())
