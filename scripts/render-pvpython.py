#!/usr/bin/env pvpython
"""Render meshes of meshbatch outputs side by side into one PNG with
ParaView's Python (pvpython), headless.

    xvfb-run -a -s '-screen 0 1280x1024x24' \
        pvpython scripts/render-pvpython.py FILE[:MESH] ... -o OUT.png
        [--color FIELD] [--range MIN MAX] [--log] [--title TEXT ...] [--up x|y|z]
        [--view ELEV AZIM] [--panel-size W H] [--edges] [--no-bar] [--palette N]

Each positional argument is one panel: a collection written by meshbatch
(`meshbatch run`, `import`, `generate ... -o X.h5`; FILE.h5, or its XDMF
companion FILE.xdmf, whose HDF5 file is read) and the dataset to draw
(`:MESH`; without it the file must hold exactly one). Surfaces,
triangulation2d and polygons2d are drawn with their own faces (polygons
stay polygons); grid3d datasets are refused. `--color FIELD` colours by a
per-face field (`face_fields/FIELD`, e.g. `planarity` of the deform op) or
else a per-vertex one (`fields/FIELD`; several components: the magnitude),
with one colour scale for every panel (`--range`, or the fields' overall
minimum and maximum; `--log` for a logarithmic one) and its bar in the
last panel. Without it the faces
are a flat grey lit by ParaView's headlight. The camera looks at each
panel's bounding box from the direction ELEV degrees above the plane
normal to the `--up` axis and AZIM degrees around it, and fits the box.
Titles default to FILE:MESH with the vertex count.

Needs ParaView's pvpython (Debian: paraview) with numpy and h5py in its
Python (Debian: python3-numpy python3-h5py). pvpython's offscreen mode
(`--force-offscreen-rendering`) of Debian's ParaView 5.11 still opens an
X display and crashes without one, so run it under a virtual X server:
`apt-get install xvfb`, then `xvfb-run -a -s '-screen 0 1280x1024x24'
pvpython ...` (xvfb-run's default screen of 8-bit depth makes ParaView
abort now and then while creating its window). `--palette` (default 128
colours, by PIL where pvpython's Python has it) keeps the PNGs small.
Exit codes: 0 written, 1 a file, mesh or field could not be read or
drawn, 2 usage error (argparse).
"""
import argparse
import math
import os
import sys
import tempfile


def die(msg, code=1):
    print(f"render-pvpython: error: {msg}", file=sys.stderr)
    sys.exit(code)


def need(name):
    try:
        return __import__(name)
    except ImportError as e:
        die(f"the Python module '{name}' is missing in pvpython's Python ({e}); "
            "Debian: apt-get install python3-numpy python3-h5py")


def parse_spec(spec):
    """FILE[:MESH] -> (file, mesh or None). A ':' inside an existing file
    name is taken as part of the name."""
    if os.path.exists(spec) or ":" not in spec:
        path, mesh = spec, None
    else:
        path, mesh = spec.rsplit(":", 1)
        mesh = mesh or None
    return path, mesh


def h5_of(path):
    """The HDF5 file of FILE.h5 or of its XDMF companion FILE.xdmf."""
    if not path.endswith(".xdmf"):
        return path
    import re
    with open(path) as f:
        m = re.search(r">\s*([^<>:]+\.h5):/meshes/", f.read())
    if not m:
        die(f"{path}: no meshbatch HDF5 dataset referenced in this XDMF file")
    return os.path.join(os.path.dirname(path), m.group(1))


def read_mesh(np, h5py, path, mesh, field):
    """(name, vertices [N,3], face offsets [M+1], face indices [K], field
    values per face or per vertex or None, 'CELLS'|'POINTS'|None)."""
    if not os.path.isfile(path):
        die(f"{path}: no such file")
    path = h5_of(path)
    if not os.path.isfile(path):
        die(f"{path}: no such file (named by the XDMF file)")
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
            idx = np.asarray(g["triangles"][()], dtype=np.int64).reshape(-1)
            off = np.arange(0, len(idx) + 1, 3, dtype=np.int64)
        elif "face_offsets" in g and "face_indices" in g:
            off = np.asarray(g["face_offsets"][()], dtype=np.int64)
            idx = np.asarray(g["face_indices"][()], dtype=np.int64)
        else:
            die(f"{path}:{mesh}: no faces (neither triangles nor face_offsets/face_indices)")
        values, assoc = None, None
        if field:
            if "face_fields" in g and field in g["face_fields"]:
                values, assoc = np.asarray(g["face_fields"][field][()], dtype=np.float64), "CELLS"
            elif "fields" in g and field in g["fields"]:
                values, assoc = np.asarray(g["fields"][field][()], dtype=np.float64), "POINTS"
            else:
                have = sorted(list(g["face_fields"].keys()) if "face_fields" in g else []) + \
                    sorted(list(g["fields"].keys()) if "fields" in g else [])
                die(f"{path}:{mesh}: no face or vertex field '{field}' (it has: "
                    f"{', '.join(have) or 'none'})")
            if values.ndim == 2:
                values = values[:, 0] if values.shape[1] == 1 else np.linalg.norm(values, axis=1)
    if len(off) < 2:
        die(f"{path}:{mesh}: has no faces to draw")
    if off[0] != 0 or off[-1] != len(idx) or np.any(np.diff(off) < 3):
        die(f"{path}:{mesh}: bad face offsets")
    if idx.min() < 0 or idx.max() >= len(v):
        die(f"{path}:{mesh}: a face refers to a vertex outside 0..{len(v) - 1}")
    if not np.all(np.isfinite(v)):
        die(f"{path}:{mesh}: a vertex coordinate is not finite")
    want = len(off) - 1 if assoc == "CELLS" else len(v)
    if values is not None and len(values) != want:
        die(f"{path}:{mesh}: field '{field}' has {len(values)} rows, expected {want}")
    return mesh, v, off, idx, values, assoc


def polydata(np, v, off, idx, values, assoc, field):
    from vtkmodules.util.numpy_support import numpy_to_vtk, numpy_to_vtkIdTypeArray
    from vtkmodules.vtkCommonCore import vtkPoints
    from vtkmodules.vtkCommonDataModel import vtkCellArray, vtkPolyData
    pts = vtkPoints()
    pts.SetData(numpy_to_vtk(np.ascontiguousarray(v), deep=1))
    cells = vtkCellArray()
    cells.SetData(numpy_to_vtkIdTypeArray(np.ascontiguousarray(off), deep=1),
                  numpy_to_vtkIdTypeArray(np.ascontiguousarray(idx), deep=1))
    pd = vtkPolyData()
    pd.SetPoints(pts)
    pd.SetPolys(cells)
    if values is not None:
        arr = numpy_to_vtk(np.ascontiguousarray(values), deep=1)
        arr.SetName(field)
        (pd.GetCellData() if assoc == "CELLS" else pd.GetPointData()).AddArray(arr)
    return pd


UP = {"z": [0, 1, 2], "y": [2, 0, 1], "x": [1, 2, 0]}  # model axes shown as (x, y, z)


def main():
    ap = argparse.ArgumentParser(
        prog="render-pvpython.py",
        description="Render meshbatch collections side by side into one PNG with pvpython.",
        epilog="example: xvfb-run -a pvpython render-pvpython.py spot.h5 out/spot_140.h5 "
               "-o spot.png --up y --title spot 'after 140 steps'")
    ap.add_argument("panels", nargs="+", metavar="FILE[:MESH]")
    ap.add_argument("-o", "--output", required=True, help="the PNG to write")
    ap.add_argument("--color", metavar="FIELD", help="colour by this face or vertex field")
    ap.add_argument("--range", nargs=2, type=float, metavar=("MIN", "MAX"),
                    help="the colour scale (default: the fields' min and max over the panels)")
    ap.add_argument("--log", action="store_true", help="a logarithmic colour scale")
    ap.add_argument("--title", nargs="+", help="one title per panel")
    ap.add_argument("--up", choices=("x", "y", "z"), default="z", help="the model's up axis")
    ap.add_argument("--view", nargs=2, type=float, default=(20.0, -60.0),
                    metavar=("ELEV", "AZIM"),
                    help="camera elevation and azimuth, degrees (pvpython takes a negative "
                         "number for one of its own options: write -60 as 300)")
    ap.add_argument("--panel-size", nargs=2, type=int, default=(400, 400), metavar=("W", "H"),
                    help="pixels per panel")
    ap.add_argument("--edges", action="store_true", help="draw the faces' edges")
    ap.add_argument("--no-bar", action="store_true", help="no colour bar with --color")
    ap.add_argument("--palette", type=int, default=128, metavar="N",
                    help="quantise the PNG to N colours (2-256; 0: full RGB; needs PIL in "
                         "pvpython's Python, else full RGB), for small files")
    a = ap.parse_args()
    if a.title and len(a.title) != len(a.panels):
        nt, npan = len(a.title), len(a.panels)
        ap.error(f"{nt} title{'' if nt == 1 else 's'} for {npan} panel{'' if npan == 1 else 's'}")
    if a.panel_size[0] < 16 or a.panel_size[1] < 16:
        ap.error("--panel-size: at least 16 x 16 pixels")
    if a.palette and not 2 <= a.palette <= 256:
        ap.error("--palette: 2 to 256 colours, or 0")
    if a.range and not a.range[0] < a.range[1]:
        ap.error("--range: MIN must be below MAX")
    np = need("numpy")
    h5py = need("h5py")
    meshes = []
    for spec in a.panels:
        path, mesh = parse_spec(spec)
        meshes.append((path,) + read_mesh(np, h5py, path, mesh, a.color))
    lo, hi = (a.range if a.range else (None, None))
    if a.color and not a.range:
        lo = min(float(np.nanmin(m[5])) for m in meshes)
        hi = max(float(np.nanmax(m[5])) for m in meshes)
        if a.log:
            pos = [float(np.min(m[5][m[5] > 0])) for m in meshes if np.any(m[5] > 0)]
            lo = min(pos) if pos else 1e-16
        if not hi > lo:
            hi = lo + (abs(lo) * 1e-6 or 1.0)
    if a.color and a.log and not lo > 0:
        die(f"--log: the colour scale's minimum {lo} is not positive")

    from paraview import simple as ps
    from vtkmodules.vtkIOImage import vtkPNGReader, vtkPNGWriter
    from vtkmodules.vtkFiltersCore import vtkImageAppend
    W, H = a.panel_size
    view = ps.CreateRenderView()
    view.ViewSize = [W, H]
    view.OrientationAxesVisibility = 0
    try:  # ParaView >= 5.10 takes the background from the palette unless told
        view.UseColorPaletteForBackground = 0
    except AttributeError:
        pass
    view.Background = [1.0, 1.0, 1.0]
    up = [0.0, 0.0, 0.0]
    up[UP[a.up][2]] = 1.0
    elev, azim = math.radians(a.view[0]), math.radians(a.view[1])
    shown = [math.cos(elev) * math.cos(azim), math.cos(elev) * math.sin(azim), math.sin(elev)]
    direction = [0.0, 0.0, 0.0]
    for k in range(3):
        direction[UP[a.up][k]] = shown[k]
    lut = None
    if a.color:
        lut = ps.GetColorTransferFunction(a.color)
        lut.ApplyPreset("Viridis (matplotlib)", True)
        try:
            lut.AutomaticRescaleRangeMode = "Never"
        except AttributeError:
            pass
        lut.RescaleTransferFunction(lo, hi)
        if a.log:
            lut.MapControlPointsToLogSpace()  # else the preset stays spread linearly
            lut.UseLogScale = 1
    tmp = tempfile.mkdtemp(prefix="render-pvpython-")
    files = []
    for k, (path, name, v, off, idx, values, assoc) in enumerate(meshes):
        src = ps.TrivialProducer()
        src.GetClientSideObject().SetOutput(polydata(np, v, off, idx, values, assoc, a.color))
        src.UpdatePipeline()
        disp = ps.Show(src, view)
        disp.SetRepresentationType("Surface With Edges" if a.edges else "Surface")
        disp.EdgeColor = [0.3, 0.3, 0.36]
        if a.color:
            ps.ColorBy(disp, (assoc, a.color))
            disp.LookupTable = lut
            lut.RescaleTransferFunction(lo, hi)  # ColorBy may have fitted it to this panel
            disp.SetScalarBarVisibility(view, (not a.no_bar) and k == len(meshes) - 1)
            if k == len(meshes) - 1 and not a.no_bar:
                bar = ps.GetScalarBar(lut, view)
                bar.Title = a.color
                bar.ComponentTitle = ""
                bar.TitleColor = bar.LabelColor = [0.0, 0.0, 0.0]
                bar.WindowLocation = "Lower Right Corner"
                bar.ScalarBarLength = 0.4
                bar.TitleFontSize = bar.LabelFontSize = max(7, H // 30)
                bar.RangeLabelFormat = "%-#.2g"
        else:
            disp.ColorArrayName = ["POINTS", ""]
            disp.AmbientColor = disp.DiffuseColor = [0.86, 0.88, 0.93]
        title = a.title[k] if a.title else f"{os.path.basename(path)}:{name} ({len(v):,} vertices)"
        text = ps.Text(Text=title)
        tdisp = ps.Show(text, view)
        tdisp.Color = [0.0, 0.0, 0.0]
        tdisp.FontSize = max(8, H // 28)
        tdisp.WindowLocation = "Upper Center"
        lo3, hi3 = v.min(0), v.max(0)
        centre = (lo3 + hi3) / 2
        radius = float(np.linalg.norm(hi3 - lo3)) / 2 or 1.0
        view.CameraFocalPoint = list(centre)
        view.CameraPosition = list(centre + 3.0 * radius * np.array(direction))
        view.CameraViewUp = up
        view.CameraParallelProjection = 0
        view.ResetCamera(False)
        view.GetActiveCamera().Dolly(1.3)  # ResetCamera fits the bounding sphere: closer
        ps.Render(view)
        png = os.path.join(tmp, f"panel{k}.png")
        ps.SaveScreenshot(png, view, ImageResolution=[W, H], TransparentBackground=0)
        files.append(png)
        ps.Hide(src, view)
        ps.Hide(text, view)
        if a.color:
            disp.SetScalarBarVisibility(view, False)
    join = vtkImageAppend()
    join.SetAppendAxis(0)
    readers = []
    for png in files:
        r = vtkPNGReader()
        r.SetFileName(png)
        r.Update()
        readers.append(r)
        join.AddInputConnection(r.GetOutputPort())
    join.Update()
    out = a.output
    if os.path.dirname(out):
        os.makedirs(os.path.dirname(out), exist_ok=True)
    w = vtkPNGWriter()
    w.SetCompressionLevel(9)
    w.SetFileName(out)
    w.SetInputConnection(join.GetOutputPort())
    w.Write()
    if a.palette:
        try:
            from PIL import Image
        except ImportError:
            print("render-pvpython: PIL is missing: the PNG is full RGB (Debian: python3-pil)")
        else:
            Image.open(out).convert("RGB").quantize(a.palette).save(out, optimize=True)
    for png in files:
        os.remove(png)
    os.rmdir(tmp)
    if not os.path.isfile(out) or os.path.getsize(out) == 0:
        die(f"{out}: the PNG was not written")
    n = len(meshes)
    print(f"render-pvpython: {n} panel{'s' if n > 1 else ''} written to {out} "
          f"({n * W} x {H} pixels)")


if __name__ == "__main__":
    main()
    # Debian's ParaView 5.11 can abort while tearing its X render window
    # down at interpreter exit (SIGABRT after the PNG is written): leave
    # without that teardown.
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0)
