#!/usr/bin/env python3
"""The deform op's soft mode against libigl's ShapeUp (shapeup_ref.cpp,
built where Eigen and libigl's headers are given):

    compare_shapeup.py --shapeup PROGRAM [--vertices N] [--iterations K] [--rtol R]
    compare_shapeup.py --shapeup-missing WHY

On a generated dome of N panels (meshbatch generate panels, its `handle`
field) both run K local-global iterations of the same energy and the
largest vertex distance between their outputs, relative to the bounding-box
diagonal of the input, is printed per constraint. The energies match term
by term when deform's w_handle = w_close (ShapeUp weighs every closeness
vertex alike: closeCoeff) and w_fair = 0 (ShapeUp's smoothness pulls edges
towards zero length, not the displacement towards a smooth one, so it is
switched off: smoothCoeff 0): deform with w_handle = w_close = --close
(default 1), w_constraint = --shape (default 10), against ShapeUp with
closeCoeff --close, shapeCoeff --shape, every
vertex a closeness vertex (target: the handle's, else the input position),
every face a shape set; both project the faces' barycentre-centred
coordinates and solve the normal equations once per iteration.

  planar   ShapeUp with shapeup_ref.cpp's best-plane projection (libigl has
           none; Eigen's eigen-solver, not deform's closed form): the same
           iteration, so asserted within --rtol (default 1e-9).
  regular  libigl's shapeup_regular_face_projection: the same rotation (the
           orthogonal Procrustes fit of the regular n-gon, reflections
           allowed in both) but another scale: the mean of the ratios of
           the face's edge lengths to the template's, where deform takes
           the least-squares scale (trace of the fit's singular values / n).
           The two agree on regular faces only, so the outputs differ by
           what the scales' difference moves: printed, with each output's
           regularity, never asserted equal.

Exit 0 passes, 77 skips (shapeup_ref not built: WHY; h5py or numpy
missing), 1 fails.
"""
import argparse
import os
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "util"))
from mbtest import SKIP, TMP, fail, need_module, run, run_job  # noqa: E402


def regularity(np, x, fo, fi, scale):
    """max over faces of the distance to the least-squares regular n-gon / scale"""
    worst = 0.0
    for f in range(len(fo) - 1):
        q = x[fi[fo[f]:fo[f + 1]]]
        n = len(q)
        q = q - q.mean(0)
        t = 2 * np.pi * np.arange(n) / n
        r = np.stack([np.cos(t), np.sin(t)], 1)
        u, s, vt = np.linalg.svd(q.T @ r, full_matrices=False)
        z = (s.sum() / n) * (r @ (u @ vt).T)
        worst = max(worst, float(np.linalg.norm(q - z, axis=1).max()))
    return worst / scale


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--shapeup")
    ap.add_argument("--shapeup-missing")
    ap.add_argument("--vertices", type=int, default=400)
    ap.add_argument("--iterations", type=int, default=50)
    ap.add_argument("--rtol", type=float, default=1e-9)
    ap.add_argument("--close", type=float, default=1.0)
    ap.add_argument("--shape", type=float, default=10.0)
    a = ap.parse_args()
    if not a.shapeup:
        print(f"skipped: shapeup_ref was not built: {a.shapeup_missing}")
        return SKIP
    np = need_module("numpy")
    h5py = need_module("h5py")
    d = os.path.join(TMP, "shapeup")
    os.makedirs(d, exist_ok=True)
    src = os.path.join(d, "panels.h5")
    run(["generate", "panels", "--vertices", a.vertices, "-o", src])
    with h5py.File(src, "r") as f:
        name = list(f["meshes"])[0]
        g = f["meshes"][name]
        x0 = g["vertices"][()]
        fo = g["face_offsets"][()]
        fi = g["face_indices"][()]
        h = g["fields"]["handle"][()]
    t = np.where(np.isnan(h), x0, h)
    inp = os.path.join(d, "in.txt")
    with open(inp, "w") as f:
        f.write(f"{len(x0)} {len(fo) - 1}\n")
        for v in list(x0) + list(t):
            f.write("%.17g %.17g %.17g\n" % tuple(v))
        for k in range(len(fo) - 1):
            f.write(" ".join(str(int(i)) for i in [fo[k + 1] - fo[k]] + list(fi[fo[k]:fo[k + 1]]))
                    + "\n")
    diag = float(np.linalg.norm(x0.max(0) - x0.min(0)))
    edges = set()
    for k in range(len(fo) - 1):
        c = list(fi[fo[k]:fo[k + 1]])
        for i, j in zip(c, c[1:] + c[:1]):
            edges.add((min(i, j), max(i, j)))
    ell = float(np.mean([np.linalg.norm(x0[i] - x0[j]) for i, j in edges]))
    print(f"{name}: {len(x0)} vertices, {len(fo) - 1} faces, {int((~np.isnan(h[:, 0])).sum())} "
          f"handles; {a.iterations} iterations; deform w_handle = w_close = {a.close:g}, w_fair 0, "
          f"w_constraint {a.shape:g}; ShapeUp closeCoeff {a.close:g}, shapeCoeff {a.shape:g}, "
          "smoothCoeff 0")
    bad = []
    for c in ("planar", "regular"):
        stage = (f"  - {{op: deform, constraint: {c}, iterations: {a.iterations}, "
                 f"tolerance: 1e-300, w_handle: {a.close!r}, w_close: {a.close!r}, w_fair: 0, "
                 f"w_constraint: {a.shape!r}}}\n")
        out, _ = run_job(f"shapeup_{c}", [src], stage)
        with h5py.File(out, "r") as f:
            xm = f["meshes"][name]["vertices"][()]
        ref = os.path.join(d, f"igl_{c}.txt")
        p = subprocess.run([a.shapeup, inp, ref, str(a.iterations), repr(a.close), repr(a.shape), c],
                           capture_output=True, text=True)
        if p.returncode != 0:
            fail(f"shapeup_ref {c} failed ({p.returncode}): {p.stderr}")
        xi = np.loadtxt(ref)
        dist = float(np.linalg.norm(xm - xi, axis=1).max()) / diag
        moved = float(np.linalg.norm(xm - x0, axis=1).max()) / diag
        msg = (f"{c}: largest vertex distance deform - ShapeUp {dist:.3g} of the bounding-box "
               f"diagonal (deform moved vertices up to {moved:.3g})")
        if c == "regular":
            msg += (f"; regularity (least-squares n-gon / mean edge length) deform "
                    f"{regularity(np, xm, fo, fi, ell):.3g}, ShapeUp "
                    f"{regularity(np, xi, fo, fi, ell):.3g}, input {regularity(np, x0, fo, fi, ell):.3g}")
        print(msg)
        if c == "planar" and not dist <= a.rtol:
            bad.append(f"planar: deform and ShapeUp differ by {dist:.3g} > {a.rtol:g}")
        if not np.isfinite(dist):
            bad.append(f"{c}: non-finite output")
    if bad:
        fail("; ".join(bad))
    print("passed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
