#!/usr/bin/env python3
"""Conformalized mean-curvature flow against references nobody here wrote.

  compare_flow.py --check references|meshbatch
                  [--igl IGL_MCF | --igl-missing WHY]
                  [--cgal CGAL_SMOOTH_SHAPE | --cgal-missing WHY]
                  [--mesh spot] [--steps 10] [--dt 1e-3] [--tol 1e-8]
                  [--backend cpu|cuda] [--repeat 3] [--keep DIR]

The input is a real mesh of ../shared/data/meshes (MESHBATCH_DATA_DIR),
normalised first by `meshbatch generate subdivide MESH --levels 0
--unit-area` (area-weighted barycentre at the origin, unit area), so that
libigl's loop, which rescales to unit area after every step, and
meshbatch's `rescale: area`, which rescales to the input's area, are the
same map. Differences are reported as max |x_a - x_b| over all vertices
and coordinates, divided by the diagonal of the reference's bounding box.

--check references: libigl's tutorial-205 loop (igl_mcf) and CGAL's
  smooth_shape (cgal_smooth_shape, given meshbatch's dt and passing dt / 4
  to CGAL) must agree after one step, up to a similarity (CGAL keeps the
  volume, libigl the area), within --tol; this checks both programs and
  the stated relation between the two time conventions. Both are timed
  (ms per step) on the same mesh and steps in the same run; their
  difference after --steps steps is printed, not asserted (the
  normalisations make the effective time steps differ after step 1).
--check meshbatch: `meshbatch run` with mean_curvature_flow (variant
  conformalized, boundary free, rescale area) for k = 1 .. --steps steps,
  each compared with libigl's step k; every step must be within --tol.
  CGAL runs in the same invocation, timed, where it is built.

Exit 0 when the checks pass, 1 when one fails, 77 (saying why) when the
mesh, a reference program or the op (`meshbatch ops`) is missing.
"""
import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time

SKIP = 77


def skip(why):
    print(f"SKIP: {why}")
    sys.exit(SKIP)


def fail(why):
    print(f"FAIL: {why}")
    sys.exit(1)


try:
    import numpy as np
except ImportError:
    skip("numpy is not installed for this python (Debian: python3-numpy)")


def run(cmd, **kw):
    t0 = time.perf_counter()
    p = subprocess.run(cmd, capture_output=True, text=True, **kw)
    wall = time.perf_counter() - t0
    if p.returncode != 0:
        fail(f"{' '.join(cmd)} exited {p.returncode}:\n{p.stdout}{p.stderr}")
    return p, wall


def read_obj_faces(path):
    faces = []
    with open(path) as f:
        for line in f:
            if line.startswith("f "):
                faces.append([int(t.split("/")[0]) - 1 for t in line.split()[1:]])
    return np.array(faces, dtype=np.int64)


def area_and_barycentre(x, faces):
    p = x[faces]
    n = np.cross(p[:, 1] - p[:, 0], p[:, 2] - p[:, 0])
    a = 0.5 * np.linalg.norm(n, axis=1)
    return a.sum(), (a[:, None] * p.mean(axis=1)).sum(axis=0) / a.sum()


def normalise(x, faces):
    """The similarity libigl applies after each step: barycentre to 0, area 1."""
    area, c = area_and_barycentre(x, faces)
    return (x - c) / np.sqrt(area)


def rel_diff(x, ref):
    diag = np.linalg.norm(ref.max(axis=0) - ref.min(axis=0))
    return float(np.abs(x - ref).max() / diag)


def radius_variation(x):
    r = np.linalg.norm(x - x.mean(axis=0), axis=1)
    return float((r.max() - r.min()) / r.mean())


def ms_per_step(out, name):
    m = re.search(r"([0-9.]+) ms/step", out)
    if not m:
        fail(f"{name} printed no 'ms/step' figure:\n{out}")
    return float(m.group(1))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--check", choices=["references", "meshbatch"], required=True)
    ap.add_argument("--igl")
    ap.add_argument("--igl-missing")
    ap.add_argument("--cgal")
    ap.add_argument("--cgal-missing")
    ap.add_argument("--mesh", default="spot")
    ap.add_argument("--steps", type=int, default=10)
    ap.add_argument("--dt", type=float, default=1e-3)
    ap.add_argument("--tol", type=float, default=1e-8)
    ap.add_argument("--backend", default="cpu")
    ap.add_argument("--repeat", type=int, default=3,
                    help="timed runs of each reference; their median is printed")
    ap.add_argument("--keep", help="write the files here (default: a scratch folder)")
    a = ap.parse_args()

    exe = os.environ.get("MESHBATCH_EXE") or shutil.which("meshbatch")
    if not exe:
        skip("MESHBATCH_EXE is not set and no meshbatch on PATH")
    data = os.environ.get("MESHBATCH_DATA_DIR", "")
    src = os.path.join(data, "meshes", a.mesh + ".obj")
    if not data or not os.path.exists(src):
        skip(f"no {a.mesh}.obj under MESHBATCH_DATA_DIR ({data or 'unset'}/meshes)")
    if not a.igl:
        skip(f"the libigl reference is not built: {a.igl_missing or 'no --igl given'}")
    if a.check == "references" and not a.cgal:
        skip(f"the CGAL reference is not built: {a.cgal_missing or 'no --cgal given'}")
    if a.check == "meshbatch":
        ops, _ = run([exe, "ops"])
        if not re.search(r"^mean_curvature_flow:", ops.stdout, re.M):
            skip("meshbatch has no op mean_curvature_flow yet (`meshbatch ops` does not list it)")

    d = a.keep or os.environ.get("MESHBATCH_TEST_TMP") or tempfile.mkdtemp()
    os.makedirs(d, exist_ok=True)
    mesh = os.path.join(d, a.mesh + ".obj")
    p, _ = run([exe, "generate", "subdivide", src, "--levels", "0", "--unit-area",
                "-o", mesh, "--name", a.mesh])
    faces = read_obj_faces(mesh)
    print(p.stdout.strip())

    # libigl: every step
    igl_out = os.path.join(d, "igl.npy")
    p, _ = run([a.igl, mesh, igl_out, "--steps", str(a.steps), "--dt", repr(a.dt),
                "--repeat", str(a.repeat)])
    print(p.stdout.strip())
    igl_ms = ms_per_step(p.stdout, "igl_mcf")
    igl = np.load(igl_out)
    if igl.shape != (a.steps + 1, len(read_vertices(mesh)), 3):
        fail(f"igl_mcf wrote shape {igl.shape}")
    if not np.array_equal(igl[0], read_vertices(mesh)):
        fail("igl_mcf's step 0 is not the input as meshbatch wrote it")
    for k in range(1, a.steps + 1):
        area, c = area_and_barycentre(igl[k], faces)
        if abs(area - 1) > 1e-12 or np.abs(c).max() > 1e-12:
            fail(f"libigl step {k}: area {area!r}, barycentre {c}; expected 1 and 0")
    print("libigl radius variation (max - min) / mean per step: " +
          " ".join(f"{radius_variation(igl[k]):.4g}" for k in range(a.steps + 1)))

    cgal_ms = None
    if a.cgal:
        one = os.path.join(d, "cgal_1.npy")
        p, _ = run([a.cgal, mesh, one, "--steps", "1", "--dt", repr(a.dt)])
        e1 = rel_diff(normalise(np.load(one), faces), igl[1])
        allsteps = os.path.join(d, "cgal.npy")
        p, _ = run([a.cgal, mesh, allsteps, "--steps", str(a.steps), "--dt", repr(a.dt),
                    "--repeat", str(a.repeat)])
        print(p.stdout.strip())
        cgal_ms = ms_per_step(p.stdout, "cgal_smooth_shape")
        en = rel_diff(normalise(np.load(allsteps), faces), igl[a.steps])
        print(f"CGAL against libigl, up to a similarity: step 1 {e1:.3e} (tolerance "
              f"{a.tol:g}); step {a.steps} {en:.3e} (not asserted: CGAL keeps the volume, so "
              f"its effective time step differs after step 1)")
        if a.check == "references" and not e1 <= a.tol:
            fail(f"CGAL and libigl differ by {e1:.3e} after one step (tolerance {a.tol:g})")
    else:
        print(f"CGAL not run: {a.cgal_missing or 'no --cgal given'}")

    if a.check == "meshbatch":
        worst, mb_wall = 0.0, None
        print("step  max |meshbatch - libigl| / bbox diagonal")
        for k in range(1, a.steps + 1):
            out = os.path.join(d, f"mcf_{k}.h5")
            job = os.path.join(d, f"mcf_{k}.yaml")
            with open(job, "w") as f:
                f.write(f"input: {mesh}\noutput: {out}\ndistribute: per-mesh\n"
                        f"backend: {a.backend}\nstages:\n"
                        f"  - op: mean_curvature_flow\n    time_step: {a.dt!r}\n"
                        f"    steps: {k}\n    variant: conformalized\n    boundary: free\n"
                        f"    rescale: area\n")
            if os.path.exists(out):
                os.remove(out)
            _, wall = run([exe, "run", job, "-q"])
            if k == a.steps:
                mb_wall = wall
            import h5py
            with h5py.File(out, "r") as h:
                x = h["meshes"][a.mesh]["vertices"][...]
            e = rel_diff(x, igl[k])
            worst = max(worst, e)
            print(f"{k:4d}  {e:.3e}")
        print(f"meshbatch {a.backend}: {a.steps} steps in {1e3 * mb_wall:.1f} ms wall "
              f"(the whole command, start-up and I/O included); libigl {igl_ms:.3f} ms/step"
              + (f", CGAL {cgal_ms:.3f} ms/step" if cgal_ms is not None else ""))
        if not worst <= a.tol:
            fail(f"meshbatch and libigl differ by {worst:.3e} (tolerance {a.tol:g})")
        print(f"PASS: meshbatch within {worst:.3e} of libigl at every step")
    else:
        print(f"PASS: libigl {igl_ms:.3f} ms/step, CGAL {cgal_ms:.3f} ms/step on {a.mesh} "
              f"({a.steps} steps of dt {a.dt:g})")


def read_vertices(path):
    xs = []
    with open(path) as f:
        for line in f:
            if line.startswith("v "):
                xs.append([float(t) for t in line.split()[1:4]])
    return np.array(xs)


if __name__ == "__main__":
    main()
