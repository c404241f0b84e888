#!/usr/bin/env python3
"""`meshbatch generate subdivide` options of the solver ops' benchmark input:
--vertices N (exact count, red-green partial level) and --unit-area (area 1,
area-weighted barycentre at the origin), on a generated sphere (no data
needed), and their usage errors. Exit 0, 1 on a failed check, 77 without
numpy/h5py."""
import os
import subprocess
import sys

try:
    import h5py
    import numpy as np
except ImportError:
    print("SKIP: numpy and h5py are needed (Debian: python3-numpy python3-h5py)")
    sys.exit(77)

exe = os.environ["MESHBATCH_EXE"]
d = os.environ.get("MESHBATCH_TEST_TMP", "/tmp")


def run(args, code=0):
    p = subprocess.run([exe] + args, capture_output=True, text=True)
    if p.returncode != code:
        print(f"FAIL: meshbatch {' '.join(args)} exited {p.returncode}, expected {code}:\n"
              f"{p.stdout}{p.stderr}")
        sys.exit(1)
    return p


def check(cond, what):
    if not cond:
        print(f"FAIL: {what}")
        sys.exit(1)


def load(path):
    with h5py.File(path, "r") as h:
        g = h["meshes"][list(h["meshes"])[0]]
        return g["vertices"][...], g["triangles"][...]


def area_centroid(x, t):
    p = x[t]
    a = 0.5 * np.linalg.norm(np.cross(p[:, 1] - p[:, 0], p[:, 2] - p[:, 0]), axis=1)
    return a.sum(), (a[:, None] * p.mean(axis=1)).sum(0) / a.sum()


s = os.path.join(d, "s.obj")
run(["generate", "sphere", "--vertices", "600", "--noise", "0.05", "-o", s])  # 642 vertices
x0, t0 = None, None
for n, whole in ((642, 0), (1000, 0), (2562, 1), (5000, 1)):
    out = os.path.join(d, f"s_{n}.h5")
    p = run(["generate", "subdivide", s, "--vertices", str(n), "--unit-area", "-o", out])
    check(f"{whole} whole 1-to-4 level" in p.stdout, f"--vertices {n}: {p.stdout}")
    check(f"{n} vertices, {2 * n - 4} faces" in p.stdout, f"--vertices {n}: {p.stdout}")
    x, t = load(out)
    check(x.shape == (n, 3) and t.shape == (2 * n - 4, 3), f"shapes {x.shape} {t.shape}")
    a, c = area_centroid(x, t)
    check(abs(a - 1) < 1e-13 and np.abs(c).max() < 1e-14, f"--vertices {n}: area {a}, centre {c}")
    if x0 is None:
        x0 = x
    else:  # the input's vertices keep their indices; same similarity for all
        check(np.abs(x[:642] - x0).max() < 1e-14, f"--vertices {n} moved the input's vertices")
# --levels and --unit-area together; L=0 only normalises
out = os.path.join(d, "s_l0.h5")
run(["generate", "subdivide", s, "--levels", "0", "--unit-area", "-o", out])
x, _ = load(out)
check(np.abs(x - x0).max() < 1e-14, "--levels 0 --unit-area differs from --vertices 642")
# usage errors
p = run(["generate", "subdivide", s, "--levels", "1", "--vertices", "900", "-o", out], 2)
check("one of --levels L or --vertices N" in p.stderr, p.stderr)
p = run(["generate", "subdivide", s, "--vertices", "10", "-o", out], 1)
check("target vertex count 10" in p.stderr, p.stderr)
p = run(["generate", "sphere", "--vertices", "100", "--unit-area", "-o", out], 2)
check("--unit-area is an option of subdivide only" in p.stderr, p.stderr)
print("PASS")
