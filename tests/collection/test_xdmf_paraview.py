#!/usr/bin/env python3
"""meshbatch: open the XDMF companions of a collection with ParaView's readers.

Usage: test_xdmf_paraview.py WRITER            (WRITER = collection_sample_writer)
       test_xdmf_paraview.py WRITER --kinds    (WRITER = collection_kinds_writer)
       test_xdmf_paraview.py --existing C.h5   (a collection written already, e.g. by
                                                `meshbatch run`; datasets in file order)

Writes the sample collection (tests/collection/coll_fixtures.h), or with
--kinds the datasets of every kind (tests/collection/coll_kinds.h: surface,
triangulation2d, polygons2d with faces of 3 to 8 vertices, per-face fields),
with 2 ranks, then opens <stem>.xdmf and every <stem>.<mesh>.xdmf with each XDMF reader of
ParaView -- XDMFReader (legacy Xdmf2), Xdmf3ReaderT ("Xdmf3 Reader") and
Xdmf3ReaderS ("Xdmf3 Reader (Top Level Partition)") -- in time-limited,
headless pvpython processes: first all files and readers in one process
(pvpython's start, 2-4 s, was most of each probe's time), then every probe
that gave no result there (an Xdmf3 reader aborts the whole process on a bad
file; an exception; the time limit) again in a process of its own, as each
probe ran before, whose result or error is the one checked and reported.
Against the HDF5 datasets (h5py) it checks:
  * collection: one leaf dataset per mesh, in collection order; the block
    names equal the mesh names (XDMFReader, Xdmf3ReaderT; Xdmf3ReaderS turns
    the grids into unnamed pieces of one partitioned dataset, by design);
    points = vertices (exact; planar kinds, stored [N,2] with Geometry XY,
    come back with z = 0), cells = the faces exactly (sizes, VTK types
    triangle / quad / polygon, vertex indices), point-data arrays = fields
    and cell-data arrays = face fields (names, components, values);
  * single-mesh files: the same for their one grid, whose cells are the
    faces, or the fan triangles of `xdmf_triangles` for meshes with a face of
    5 or more vertices (cell data: `xdmf_fan_fields`).

Exit code 77 (skip) if pvpython is not on PATH or h5py/numpy are missing.
Environment: MESHBATCH_PVPYTHON (pvpython command, default "pvpython"),
MESHBATCH_PV_TIMEOUT (seconds per probe, default 120; the shared process has
that much and 10 s a probe), MESHBATCH_PV_SEPARATE=1 (every probe in a process of
its own from the start).

Run as `pvpython test_xdmf_paraview.py --probe READER FILE OUT.json` it is the
probe itself: it reads FILE with READER and writes what ParaView saw as JSON;
`--probes LIST.json` runs the probes of LIST ([[READER, FILE, OUT.json], ...])
in turn, one after the other's reader is deleted.
"""
import json
import os
import shlex
import shutil
import subprocess
import sys

READERS = ["XDMFReader", "Xdmf3ReaderT", "Xdmf3ReaderS"]
NAMED = {"XDMFReader", "Xdmf3ReaderT"}  # readers that keep grid names as block names
SAMPLE_ORDER = ["house", "quadtri", "solo", "tet"]
KINDS_ORDER = ["surf", "tri2d", "poly2d", "quad2d", "tiny2d"]
VTK_TYPES = {3: 5, 4: 9}  # cell size -> VTK_TRIANGLE, VTK_QUAD; larger: VTK_POLYGON (7)
VTK_POLYGON = 7


# ----------------------------------------------------------------------------
# The probe (runs inside pvpython)
# ----------------------------------------------------------------------------
def probe(reader_name, path, out):
    import paraview.simple as pvs
    from paraview import servermanager
    from vtkmodules.vtkCommonDataModel import vtkCompositeDataSet
    from vtkmodules.util.numpy_support import vtk_to_numpy

    if reader_name == "XDMFReader":
        reader = pvs.XDMFReader(FileNames=[path])
    else:
        reader = getattr(pvs, reader_name)(FileName=[path])
    reader.UpdatePipeline()
    data = servermanager.Fetch(reader)

    def dataset(ds, name):
        n = ds.GetNumberOfCells()
        cells = []
        for c in range(n):
            ids = ds.GetCell(c).GetPointIds()
            cells.append([ds.GetCellType(c)] + [ids.GetId(j) for j in range(ids.GetNumberOfIds())])
        pts = ds.GetPoints()

        def arrays(data):
            out = {}
            for i in range(data.GetNumberOfArrays()):
                a = data.GetArray(i)
                out[a.GetName()] = {"ncomp": a.GetNumberOfComponents(),
                                    "values": vtk_to_numpy(a).reshape(-1).tolist()}
            return out
        return {"name": name, "class": ds.GetClassName(),
                "npoints": ds.GetNumberOfPoints(), "ncells": n,
                "points": vtk_to_numpy(pts.GetData()).reshape(-1).tolist() if pts else [],
                "cells": cells, "point_data": arrays(ds.GetPointData()),
                "cell_data": arrays(ds.GetCellData())}

    leaves = []
    if data.IsA("vtkCompositeDataSet"):
        it = data.NewTreeIterator()
        it.VisitOnlyLeavesOn()
        it.SkipEmptyNodesOn()
        it.InitTraversal()
        while not it.IsDoneWithTraversal():
            md = it.GetCurrentMetaData() if it.HasCurrentMetaData() else None
            name = md.Get(vtkCompositeDataSet.NAME()) if md and md.Has(vtkCompositeDataSet.NAME()) else None
            leaves.append(dataset(it.GetCurrentDataObject(), name))
            it.GoToNextItem()
    else:
        leaves.append(dataset(data, None))
    result = {"reader": reader_name, "file": path, "output": data.GetClassName(),
              "version": servermanager.vtkSMProxyManager.GetParaViewSourceVersion(),
              "leaves": leaves}
    pvs.Delete(reader)  # the next probe of a --probes run starts without it
    with open(out + ".part", "w") as f:
        json.dump(result, f)
    os.replace(out + ".part", out)  # whole or absent


def probes(listfile):
    """Each probe of listfile in turn; one that raises leaves no result (it is
    run again alone) and the others go on."""
    import traceback
    with open(listfile) as f:
        todo = json.load(f)
    for reader_name, path, out in todo:
        try:
            probe(reader_name, path, out)
        except Exception:  # noqa: BLE001 - reported by the probe's own run
            print(f"probe {reader_name} {path} raised:", flush=True)
            traceback.print_exc()


# ----------------------------------------------------------------------------
# The test (runs with the ordinary python3)
# ----------------------------------------------------------------------------
def expected_meshes(h5, order):
    """name -> dict(vertices, faces, fan, fields, face_fields, fan_fields) read
    from the collection; checks that the meshes in index order are `order`."""
    import h5py
    out = {}
    with h5py.File(h5, "r") as f:
        names = sorted(f["meshes"], key=lambda n: int(f["meshes"][n].attrs["index"]))
        assert names == order, (names, order)
        for name in order:
            g = f["meshes"][name]
            if "triangles" in g:
                faces = g["triangles"][()].tolist()
            else:
                off, idx = g["face_offsets"][()], g["face_indices"][()]
                faces = [idx[off[i]:off[i + 1]].tolist() for i in range(len(off) - 1)]
            fan = g["xdmf_triangles"][()].tolist() if "xdmf_triangles" in g else None
            def group(key):
                return {k: g[key][k][()] for k in g[key]} if key in g else {}
            out[name] = {"vertices": g["vertices"][()], "faces": faces, "fan": fan,
                         "fields": group("fields"), "face_fields": group("face_fields"),
                         "fan_fields": group("xdmf_fan_fields")}
    return out


def check_arrays(got_arrays, want_arrays, where, what):
    import numpy as np
    got = {k: v["ncomp"] for k, v in got_arrays.items()}
    want = {k: (v.shape[1] if v.ndim == 2 else 1) for k, v in want_arrays.items()}
    assert got == want, (where, what, got, want)
    for k, v in want_arrays.items():
        vals = np.array(got_arrays[k]["values"], dtype=float)
        assert np.array_equal(vals, v.reshape(-1)), (where, f"{what} {k} values differ")


def check_leaf(leaf, name, exp, faces, cell_fields, where):
    import numpy as np
    nv, dim = exp["vertices"].shape
    assert leaf["npoints"] == nv, (where, "points", leaf["npoints"], nv)
    pts = np.array(leaf["points"], dtype=float).reshape(-1, 3)
    assert np.array_equal(pts[:, :dim], exp["vertices"]), (where, "coordinates differ")
    if dim == 2:  # planar kinds: XY geometry, z = 0
        assert np.all(pts[:, 2] == 0), (where, "z is not 0")
    assert leaf["ncells"] == len(faces), (where, "cells", leaf["ncells"], len(faces))
    for c, (cell, face) in enumerate(zip(leaf["cells"], faces)):
        want = [VTK_TYPES.get(len(face), VTK_POLYGON)] + list(face)
        assert cell == want, (where, f"cell {c}", cell, want)
    check_arrays(leaf["point_data"], exp["fields"], where, "point data")
    check_arrays(leaf["cell_data"], cell_fields, where, "cell data")


def summary(leaf):
    sizes = {}
    for cell in leaf["cells"]:
        sizes[len(cell) - 1] = sizes.get(len(cell) - 1, 0) + 1
    arrays = {k: v["ncomp"] for k, v in leaf["point_data"].items()}
    cell_arrays = {k: v["ncomp"] for k, v in leaf["cell_data"].items()}
    return (f"{leaf['name']!r}: {leaf['npoints']} points, {leaf['ncells']} cells "
            f"(by size {dict(sorted(sizes.items()))}), point data {arrays}, "
            f"cell data {cell_arrays}")


def pvpython_run(pvpython, args, timeout):
    """pvpython, headless, on this script with args: (exit code, output text),
    exit code None when it ran past timeout."""
    cmd = pvpython + ["--force-offscreen-rendering", os.path.abspath(__file__)] + args
    env = dict(os.environ)
    env.pop("DISPLAY", None)  # headless: never talk to an X server
    env.setdefault("QT_QPA_PLATFORM", "offscreen")
    try:
        p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                           stdin=subprocess.DEVNULL, env=env, timeout=timeout)
    except subprocess.TimeoutExpired:
        return None, ""
    return p.returncode, p.stdout.decode(errors="replace")


def run_probes(pvpython, todo, listfile, timeout):
    """The probes todo ([(reader, path, out)]) in one pvpython process; the
    outputs of those that finished are left in their files. Returns nothing:
    a probe without its file is run again alone (run_probe)."""
    with open(listfile, "w") as f:
        json.dump(todo, f)
    # one probe's limit and 10 s a probe (each takes well under 1 s there): a
    # probe that hangs costs that much before it runs alone, not n limits
    code, text = pvpython_run(pvpython, ["--probes", listfile], timeout + 10 * len(todo))
    missing = [t for t in todo if not os.path.exists(t[2])]
    if missing:
        print(f"the shared pvpython process ({'timed out' if code is None else f'exit code {code}'}) "
              f"left {len(missing)} of {len(todo)} probes without a result: each is run alone")
        print("\n".join(line for line in text.splitlines() if "0x" not in line)[-1500:])


def run_probe(pvpython, reader, path, out, timeout):
    if os.path.exists(out):
        os.remove(out)
    code, text = pvpython_run(pvpython, ["--probe", reader, path, out], timeout)
    if code is None:
        return None, f"timed out after {timeout} s"
    if code != 0 or not os.path.exists(out):
        tail = "\n".join(line for line in text.splitlines()
                         if "0x" not in line)[-1500:]  # drop stack-trace frames
        return None, f"exit code {code}:\n{tail}"
    with open(out) as f:
        return json.load(f), None


def main():
    if len(sys.argv) == 5 and sys.argv[1] == "--probe":
        probe(*sys.argv[2:])
        return 0
    if len(sys.argv) == 3 and sys.argv[1] == "--probes":
        probes(sys.argv[2])
        return 0
    pvpython = shlex.split(os.environ.get("MESHBATCH_PVPYTHON", "pvpython"))
    if not shutil.which(pvpython[0]):
        print(f"skipping: {pvpython[0]} is not on PATH")
        return 77
    try:
        import h5py
        import numpy  # noqa: F401
    except ImportError as exc:
        print(f"skipping: {exc}")
        return 77
    timeout = float(os.environ.get("MESHBATCH_PV_TIMEOUT", "120"))
    tmp = os.path.abspath(os.environ.get("MESHBATCH_TEST_TMP", "/tmp"))
    if sys.argv[1] == "--existing":
        h5 = os.path.abspath(sys.argv[2])
        with h5py.File(h5, "r") as f:
            order = sorted(f["meshes"], key=lambda n: int(f["meshes"][n].attrs["index"]))
    else:
        writer = sys.argv[1]
        kinds = "--kinds" in sys.argv[2:]
        order = KINDS_ORDER if kinds else SAMPLE_ORDER
        mpiexec = shlex.split(os.environ.get("MESHBATCH_MPIEXEC", "mpiexec -n"))
        h5 = os.path.join(tmp, "kinds.h5" if kinds else "sample.h5")
        subprocess.run(mpiexec + ["2", writer, h5], check=True, timeout=timeout)
    stem = h5[:-3]
    meshes = expected_meshes(h5, order)

    failures = []
    # Absolute paths: the Xdmf3 readers of ParaView 5.11 resolve the HDF5 file
    # wrongly when the .xdmf path has no folder part ("sample.xdmf").
    files = [(stem + ".xdmf", None)] + [(f"{stem}.{n}.xdmf", n) for n in order]
    outs = {(path, reader): os.path.join(tmp, f"probe-{reader}-{single or 'collection'}.json")
            for path, single in files for reader in READERS}
    for out in outs.values():  # none left from an earlier run
        if os.path.exists(out):
            os.remove(out)
    if os.environ.get("MESHBATCH_PV_SEPARATE", "") != "1":
        run_probes(pvpython, [(r, p, o) for (p, r), o in outs.items()],
                   os.path.join(tmp, "probes.json"), timeout)
    for path, single in files:
        for reader in READERS:
            where = f"{os.path.basename(path)} with {reader}"
            out = outs[(path, reader)]
            if os.path.exists(out):  # from the shared process
                with open(out) as f:
                    res, err = json.load(f), None
            else:
                res, err = run_probe(pvpython, reader, path, out, timeout)
            if err:
                failures.append(f"{where}: {err}")
                print(f"FAIL {where}: {err}")
                continue
            try:
                leaves = res["leaves"]
                if single is None:
                    assert len(leaves) == len(order), (where, "blocks", len(leaves))
                    if reader in NAMED:
                        names = [leaf["name"] for leaf in leaves]
                        assert names == order, (where, "block names", names)
                    for leaf, name in zip(leaves, order):
                        exp = meshes[name]
                        check_leaf(leaf, name, exp, exp["faces"], exp["face_fields"],
                                   f"{where}: {name}")
                else:
                    assert len(leaves) == 1, (where, "datasets", len(leaves))
                    exp = meshes[single]
                    fan = exp["fan"] is not None
                    check_leaf(leaves[0], single, exp, exp["fan"] if fan else exp["faces"],
                               exp["fan_fields"] if fan else exp["face_fields"], where)
                print(f"ok   {where} (ParaView {res['version']}, {res['output']})")
                for leaf in leaves:
                    print(f"       {summary(leaf)}")
            except AssertionError as exc:
                failures.append(f"{where}: {exc}")
                print(f"FAIL {where}: {exc}")
    if failures:
        print(f"{len(failures)} failure(s)")
        return 1
    print("ok")
    return 0


if __name__ == "__main__":
    sys.exit(main())
