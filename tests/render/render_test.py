#!/usr/bin/env python3
"""scripts/render-pvpython.py (run by scripts/render-pvpython.sh: pvpython
under xvfb-run), the guide's picture renderer:

- `--help` exits 0 and prints the usage;
- two panels (a tetrahedron surface and a quadrilateral grid, the polygon
  path) from collections written by `meshbatch import` make a PNG of the
  asked size (2 panels of 120 x 100 pixels: 240 x 100) with shaded
  (non-white, several grey levels) pixels in each panel's half;
- a panel mesh coloured by its face field `planarity` (a soft `deform`
  run's output) on a log scale makes a PNG with coloured (not grey)
  pixels;
- a missing file, a missing dataset, a collection of several datasets
  without :MESH, a grid3d, a missing field and a mismatched --title count
  fail with exit code 1 or 2 and a message naming the problem, and write
  no PNG.

The PNGs are read back with pvpython's VTK (vtkPNGReader). Exit code 0
passes, 77 skips (pvpython or xvfb-run missing), other fails.
"""
import os
import shutil
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "util"))
from mbtest import SKIP, SRC, TMP, fail, noisy_grid_obj, run  # noqa: E402

SCRIPT = os.path.join(SRC, "scripts", "render-pvpython.sh")

# pvpython: the PNG's size and, per panel of width W below the title rows,
# the count of non-white pixels, of distinct grey levels and of coloured
# (channel spread > 30) pixels
PNG_STATS = r"""
import sys
from vtkmodules.vtkIOImage import vtkPNGReader
from vtkmodules.util.numpy_support import vtk_to_numpy
r = vtkPNGReader(); r.SetFileName(sys.argv[1]); r.Update()
im = r.GetOutput(); w, h, _ = im.GetDimensions()
a = vtk_to_numpy(im.GetPointData().GetScalars()).reshape(h, w, -1)[::-1, :, :3].astype(int)
W = int(sys.argv[2])
print("size", w, h)
for k in range(w // W):
    p = a[h // 6:, k * W:(k + 1) * W]
    shaded = (p < 242).any(axis=2)
    grey = len({int(v) for v in p[shaded].mean(axis=1) // 4})
    colour = int(((p.max(axis=2) - p.min(axis=2)) > 30).sum())
    print("panel", k, int(shaded.sum()), grey, colour)
"""


def render(*args, expect=0, says=None):
    cmd = [SCRIPT] + [str(a) for a in args]
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    out = "\n".join(l for l in (p.stdout + p.stderr).splitlines() if " 0x" not in l)
    print("$", " ".join(cmd), f"-> {p.returncode}")
    print(out)
    if p.returncode != expect:
        fail(f"exit code {p.returncode}, expected {expect}")
    if says and says not in out:
        fail(f"the output does not say '{says}'")
    return p


def png_stats(png, panel_w):
    p = subprocess.run(["pvpython", "-c", PNG_STATS, png, str(panel_w)], capture_output=True,
                       text=True, timeout=300)
    lines = [l.split() for l in p.stdout.splitlines() if l.startswith(("size", "panel"))]
    if p.returncode != 0 or not lines:
        fail(f"pvpython could not read {png}: {p.stdout}{p.stderr}")
    size = tuple(int(v) for v in lines[0][1:3])
    panels = [tuple(int(v) for v in l[2:5]) for l in lines[1:]]
    print(f"{png}: {size[0]} x {size[1]} pixels; panels (shaded, grey levels, coloured): {panels}")
    return size, panels


def main():
    for tool in ("pvpython", "xvfb-run"):
        if shutil.which(tool) is None:
            print(f"{tool} is missing (Debian: apt-get install paraview xvfb): skipped")
            sys.exit(SKIP)
    render("--help", says="usage: render-pvpython.py")

    tet = os.path.join(TMP, "tet.obj")
    with open(tet, "w") as f:
        f.write("v 0 0 0\nv 1 0 0\nv 0 1 0\nv 0 0 1\nf 1 3 2\nf 1 2 4\nf 1 4 3\nf 2 3 4\n")
    quads = noisy_grid_obj(os.path.join(TMP, "quads.obj"), 6, quads=True)
    one = os.path.join(TMP, "tet.h5")
    both = os.path.join(TMP, "both.h5")
    grid = os.path.join(TMP, "grid.h5")
    roof = os.path.join(TMP, "roof.h5")
    for p in (one, both, grid, roof):
        if os.path.exists(p):
            os.remove(p)
    run(["import", tet, "-o", one])
    run(["import", tet, quads, "-o", both])
    run(["generate", "grid", "--shape", "4,4,4", "--field", "u=sines", "-o", grid])
    run(["generate", "panels", "--vertices", "100", "--surface", "dome", "-o", roof])
    job = os.path.join(TMP, "deform.yaml")
    planar = os.path.join(TMP, "roof_planar.h5")
    with open(job, "w") as f:
        f.write(f"input: {roof}\noutput: {planar}\nbackend: cpu\nstages:\n"
                "  - {op: deform, constraint: planar, iterations: 3}\n")
    run(["run", job])

    png = os.path.join(TMP, "two.png")
    if os.path.exists(png):
        os.remove(png)
    render(one, f"{both}:quads", "-o", png, "--panel-size", 120, 100, "--edges",
           "--title", "tet", "quads", says="2 panels written")
    size, panels = png_stats(png, 120)
    if size != (240, 100) or len(panels) != 2:
        fail(f"the PNG is {size[0]} x {size[1]}, expected 240 x 100")
    for k, (shaded, grey, _) in enumerate(panels):
        if shaded < 100 or grey < 3:
            fail(f"panel {k} shows no shaded mesh ({shaded} pixels, {grey} grey levels)")

    png = os.path.join(TMP, "planarity.png")
    if os.path.exists(png):
        os.remove(png)
    render(planar, "-o", png, "--color", "planarity", "--log", "--range", "1e-8", "1e-1",
           "--panel-size", 160, 120, says="1 panel written")
    size, panels = png_stats(png, 160)
    if size != (160, 120) or panels[0][2] < 100:
        fail(f"the planarity-coloured PNG has {panels[0][2]} coloured pixels (or the wrong size)")

    bad = os.path.join(TMP, "bad.png")
    for args, code, says in (([os.path.join(TMP, "none.h5")], 1, "no such file"),
                             ([f"{one}:cow"], 1, "no dataset 'cow'"),
                             ([both], 1, "name one as"),
                             ([grid], 1, "is a grid3d"),
                             ([one, "--color", "planarity"], 1, "no face or vertex field"),
                             ([one, "--title", "a", "b"], 2, "2 titles for 1 panel")):
        if os.path.exists(bad):
            os.remove(bad)
        render(*args, "-o", bad, expect=code, says=says)
        if os.path.exists(bad):
            fail(f"{bad} was written by a failing call")
    print("render-pvpython: all checks passed")


if __name__ == "__main__":
    main()
