#!/usr/bin/env python3
"""Render meshes of meshbatch collections side by side into one PNG, headless.

    render-mesh.py FILE.h5[:MESH] ... -o OUT.png [--title TEXT ...]
                   [--columns N] [--up x|y|z] [--view ELEV AZIM]
                   [--panel-size INCHES] [--dpi D] [--edges] [--common-scale]

Each positional argument is one panel: a collection written by meshbatch
(`meshbatch run`, `meshbatch import`, `meshbatch generate ... -o X.h5`) and
the dataset to draw (`:MESH`; without it the file must hold exactly one).
Surfaces, triangulation2d and polygons2d are drawn (polygons are split
into fans of triangles for the drawing); grid3d datasets are refused.
Faces are shaded flat with Lambert's cosine law from their normals
(two-sided, a headlight a little above and left of the viewer), the axes
are equal and hidden. Titles default to FILE:MESH with the vertex count.

Needs numpy, h5py and matplotlib (Debian: python3-numpy python3-h5py
python3-matplotlib); runs with the Agg backend, no display needed.
Exit codes: 0 written, 1 a file or mesh could not be read or drawn,
2 usage error.
"""
import argparse
import os
import sys


def die(msg, code=1):
    print(f"render-mesh: error: {msg}", file=sys.stderr)
    sys.exit(code)


def need(name):
    try:
        return __import__(name)
    except ImportError as e:
        die(f"the Python module '{name}' is missing ({e}); install numpy, h5py and "
            "matplotlib (Debian: apt-get install python3-numpy python3-h5py python3-matplotlib)")


def parse_spec(spec):
    """FILE.h5[:MESH] -> (file, mesh or None). A ':' inside an existing
    file name is taken as part of the name."""
    if os.path.exists(spec) or ":" not in spec:
        return spec, None
    path, mesh = spec.rsplit(":", 1)
    return path, mesh or None


def read_mesh(np, h5py, path, mesh):
    """Vertices [N,3] and triangles [T,3] (polygons as fans) of one dataset."""
    if not os.path.isfile(path):
        die(f"{path}: no such file")
    try:
        f = h5py.File(path, "r")
    except OSError as e:
        die(f"{path}: not an HDF5 file ({e})")
    with f:
        if "meshes" not in f:
            die(f"{path}: not a meshbatch collection (no /meshes group; see docs/format.md)")
        names = list(f["meshes"].keys())
        if mesh is None:
            if len(names) != 1:
                die(f"{path} holds {len(names)} datasets ({', '.join(names[:8])}"
                    f"{', ...' if len(names) > 8 else ''}): name one as {path}:MESH")
            mesh = names[0]
        if mesh not in f["meshes"]:
            die(f"{path}: no dataset '{mesh}' (it holds: {', '.join(names[:8])}"
                f"{', ...' if len(names) > 8 else ''})")
        g = f["meshes"][mesh]
        kind = g.attrs.get("kind", b"surface")
        kind = kind.decode().rstrip("\0") if isinstance(kind, bytes) else str(kind)
        if kind == "grid3d" or "vertices" not in g:
            die(f"{path}:{mesh} is a {kind}: only surfaces and planar meshes can be drawn")
        v = np.asarray(g["vertices"][()], dtype=np.float64)
        if v.ndim != 2 or v.shape[1] not in (2, 3):
            die(f"{path}:{mesh}: vertices have shape {v.shape}, expected [N,3] or [N,2]")
        if v.shape[1] == 2:
            v = np.hstack([v, np.zeros((len(v), 1))])
        if "triangles" in g:
            t = np.asarray(g["triangles"][()], dtype=np.int64)
        elif "face_offsets" in g and "face_indices" in g:
            off = np.asarray(g["face_offsets"][()], dtype=np.int64)
            idx = np.asarray(g["face_indices"][()], dtype=np.int64)
            t = [(idx[a], idx[k], idx[k + 1]) for a, b in zip(off[:-1], off[1:])
                 for k in range(a + 1, b - 1)]
            t = np.asarray(t, dtype=np.int64).reshape(-1, 3)
        else:
            die(f"{path}:{mesh}: no faces (neither triangles nor face_offsets/face_indices)")
    if len(t) == 0:
        die(f"{path}:{mesh}: has no faces to draw")
    if t.min() < 0 or t.max() >= len(v):
        die(f"{path}:{mesh}: a face refers to a vertex outside 0..{len(v) - 1}")
    if not np.all(np.isfinite(v)):
        die(f"{path}:{mesh}: a vertex coordinate is not finite")
    return mesh, v, t


UP = {"z": [0, 1, 2], "y": [2, 0, 1], "x": [1, 2, 0]}  # model axes shown as (x, y, z)


def main():
    ap = argparse.ArgumentParser(
        prog="render-mesh.py",
        description="Render meshes of meshbatch HDF5 collections side by side into one PNG "
                    "(headless, matplotlib Agg, flat Lambert shading, equal axes).",
        epilog="example: render-mesh.py spot.h5 out/spot_3.h5 out/spot_40.h5 -o spot.png "
               "--up y --title input '3 steps' '40 steps'")
    ap.add_argument("meshes", nargs="+", metavar="FILE.h5[:MESH]",
                    help="one panel each: a collection and the dataset in it (needed when the "
                         "file holds more than one)")
    ap.add_argument("-o", "--output", required=True, metavar="OUT.png", help="the PNG to write")
    ap.add_argument("--title", nargs="+", metavar="TEXT",
                    help="one title per panel (default: FILE:MESH and the vertex count)")
    ap.add_argument("--columns", type=int, default=0, metavar="N",
                    help="panels per row (default: all in one row)")
    ap.add_argument("--up", choices=sorted(UP), default="z",
                    help="the model axis that points up in the picture (default z; OBJ files "
                         "from graphics, spot among them, are y-up)")
    ap.add_argument("--view", nargs=2, type=float, default=(15.0, -60.0), metavar=("ELEV", "AZIM"),
                    help="camera elevation and azimuth in degrees (default 15 -60)")
    ap.add_argument("--panel-size", type=float, default=3.0, metavar="INCHES",
                    help="width and height of one panel in inches (default 3)")
    ap.add_argument("--dpi", type=int, default=100, help="dots per inch (default 100)")
    ap.add_argument("--edges", action="store_true", help="draw the triangle edges too")
    ap.add_argument("--common-scale", action="store_true",
                    help="the same scale in every panel (default: each panel fills its box)")
    a = ap.parse_args()
    if a.title and len(a.title) != len(a.meshes):
        ap.error(f"{len(a.title)} titles for {len(a.meshes)} panels")
    if a.columns < 0 or a.panel_size <= 0 or a.dpi <= 0:
        ap.error("--columns, --panel-size and --dpi must be positive")
    if not a.output.lower().endswith(".png"):
        ap.error(f"the output '{a.output}' must end in .png")

    np = need("numpy")
    h5py = need("h5py")
    matplotlib = need("matplotlib")
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from mpl_toolkits.mplot3d.art3d import Poly3DCollection

    panels = []
    for spec in a.meshes:
        path, mesh = parse_spec(spec)
        name, v, t = read_mesh(np, h5py, path, mesh)
        v = v[:, UP[a.up]]
        panels.append((f"{os.path.basename(path)}:{name}", v, t))

    centres = [(v.min(0) + v.max(0)) / 2 for _, v, _ in panels]
    halves = [float((v.max(0) - v.min(0)).max()) / 2 or 1.0 for _, v, _ in panels]
    if a.common_scale:
        halves = [max(halves)] * len(panels)

    n = len(panels)
    cols = a.columns or n
    rows = (n + cols - 1) // cols
    fig = plt.figure(figsize=(a.panel_size * cols, a.panel_size * rows), dpi=a.dpi)
    elev, azim = np.radians(a.view[0]), np.radians(a.view[1])
    eye = np.array([np.cos(elev) * np.cos(azim), np.cos(elev) * np.sin(azim), np.sin(elev)])
    right = np.array([-np.sin(azim), np.cos(azim), 0.0])
    up = np.cross(eye, right)
    light = eye + 0.4 * up - 0.4 * right
    light /= np.linalg.norm(light)
    base = np.array([0.80, 0.82, 0.88])
    for k, (label, v, t) in enumerate(panels):
        ax = fig.add_subplot(rows, cols, k + 1, projection="3d")
        tri = v[t]                                   # [T,3,3]
        nrm = np.cross(tri[:, 1] - tri[:, 0], tri[:, 2] - tri[:, 0])
        length = np.linalg.norm(nrm, axis=1)
        length[length == 0] = 1.0
        lambert = np.abs(nrm @ light) / length       # two-sided: orientation does not matter
        shade = (0.25 + 0.75 * lambert)[:, None] * base
        # without --edges each face's outline takes its own colour: no seams between faces
        coll = Poly3DCollection(tri, facecolors=shade, linewidths=0.2 if a.edges else 0.3,
                                edgecolors=(0, 0, 0, 0.3) if a.edges else shade)
        ax.add_collection3d(coll)
        c, h = centres[k], halves[k]
        ax.set_xlim(c[0] - h, c[0] + h)
        ax.set_ylim(c[1] - h, c[1] + h)
        ax.set_zlim(c[2] - h, c[2] + h)
        ax.set_box_aspect((1, 1, 1), zoom=1.1)  # fill the panel (mpl >= 3.6)
        ax.view_init(elev=a.view[0], azim=a.view[1])
        ax.set_axis_off()
        title = a.title[k] if a.title else f"{label}\n{len(v)} vertices"
        ax.set_title(title, fontsize=10)
    fig.subplots_adjust(left=0, right=1, bottom=0, top=0.9, wspace=0, hspace=0.05)
    try:
        fig.savefig(a.output, dpi=a.dpi)
    except OSError as e:
        die(f"cannot write {a.output}: {e}")
    print(f"render-mesh: {n} panel{'s' if n > 1 else ''} written to {a.output}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
