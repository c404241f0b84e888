#!/usr/bin/env python3
"""scripts/render-mesh.py, the guide's picture renderer:

- `--help` exits 0 and prints the usage;
- two panels (a tetrahedron surface and a quadrilateral grid, the polygon
  path) from collections written by `meshbatch import` make a PNG of the
  asked size (2 panels of 1.5 in at 60 dpi: 180 x 90 pixels) with shaded
  (non-white, non-uniform) pixels in each panel's half;
- a missing file, a missing dataset, a collection of several datasets
  without :MESH, a grid3d and a mismatched --title count fail with exit
  code 1 or 2 and a message naming the problem, and write no PNG.

Exit code 0 passes, 77 skips (numpy, h5py or matplotlib missing), other fails.
"""
import os
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "util"))
from mbtest import SRC, TMP, fail, need_module, noisy_grid_obj, run  # noqa: E402

SCRIPT = os.path.join(SRC, "scripts", "render-mesh.py")


def render(*args, expect=0, says=None):
    cmd = [sys.executable, SCRIPT] + [str(a) for a in args]
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    print("$", " ".join(cmd), f"-> {p.returncode}")
    print(p.stdout, p.stderr, sep="")
    if p.returncode != expect:
        fail(f"exit code {p.returncode}, expected {expect}")
    if says and says not in p.stdout + p.stderr:
        fail(f"the output does not say '{says}'")
    return p


def main():
    for m in ("numpy", "h5py", "matplotlib"):
        need_module(m)
    np = need_module("numpy")
    import matplotlib.image

    render("--help", says="usage: render-mesh.py")

    tet = os.path.join(TMP, "tet.obj")
    with open(tet, "w") as f:
        f.write("v 0 0 0\nv 1 0 0\nv 0 1 0\nv 0 0 1\nf 1 3 2\nf 1 2 4\nf 1 4 3\nf 2 3 4\n")
    quads = noisy_grid_obj(os.path.join(TMP, "quads.obj"), 6, quads=True)
    one = os.path.join(TMP, "tet.h5")
    both = os.path.join(TMP, "both.h5")
    grid = os.path.join(TMP, "grid.h5")
    for p in (one, both, grid):
        if os.path.exists(p):
            os.remove(p)
    run(["import", tet, "-o", one])
    run(["import", tet, quads, "-o", both])
    run(["generate", "grid", "--shape", "4,4,4", "--field", "u=sines", "-o", grid])

    png = os.path.join(TMP, "two.png")
    if os.path.exists(png):
        os.remove(png)
    render(one, f"{both}:quads", "-o", png, "--panel-size", 1.5, "--dpi", 60,
           "--title", "tet", "quads", says="2 panels written")
    img = matplotlib.image.imread(png)
    print(f"{png}: {img.shape[1]} x {img.shape[0]} pixels")
    if img.shape[:2] != (90, 180):
        fail(f"the PNG is {img.shape[1]} x {img.shape[0]}, expected 180 x 90")
    body = img[15:, :, :3]  # below the titles
    for k, half in enumerate((body[:, :90], body[:, 90:])):
        shaded = np.any(half < 0.95, axis=2)  # not the white background
        levels = len(np.unique(np.round(half[shaded].mean(axis=1), 2)))
        print(f"panel {k}: {int(shaded.sum())} shaded pixels, {levels} grey levels")
        if shaded.sum() < 100 or levels < 3:
            fail(f"panel {k} shows no shaded mesh")

    bad = os.path.join(TMP, "bad.png")
    for args, code, says in (([os.path.join(TMP, "none.h5")], 1, "no such file"),
                             ([f"{one}:cow"], 1, "no dataset 'cow'"),
                             ([both], 1, "name one as"),
                             ([grid], 1, "is a grid3d"),
                             ([one, "--title", "a", "b"], 2, "2 titles for 1 panels")):
        if os.path.exists(bad):
            os.remove(bad)
        render(*args, "-o", bad, expect=code, says=says)
        if os.path.exists(bad):
            fail(f"{bad} was written by a failing call")
    print("render-mesh: all checks passed")


if __name__ == "__main__":
    main()
