#!/usr/bin/env python3
"""meshbatch: check the XDMF companions of a collection (docs/format.md).

Usage: test_xdmf_meshio.py WRITER   (WRITER = collection_sample_writer)

Writes the sample collection with 2 ranks, then checks:
  * <stem>.xdmf: a spatial collection with one Uniform grid per mesh whose
    DataItems resolve to HDF5 datasets of the announced dimensions, and whose
    Mixed topology decodes back to the polygons of face_offsets/face_indices;
  * <stem>.<mesh>.xdmf: meshio.read works and gives each mesh's vertices
    (exact), the expected cells and the per-vertex fields.
Exit code 77 (skip) if meshio or h5py cannot be imported.
"""
import os
import shlex
import subprocess
import sys
import xml.etree.ElementTree as ET

try:
    import h5py
    import meshio
    import numpy as np
except ImportError as exc:
    print(f"skipping: {exc}")
    sys.exit(77)

EXPECTED = {  # name -> (vertices, meshio cell blocks {type: count}, point fields {name: ncomp})
    "house": (7, {"triangle": 6}, {}),  # pentagon + quad + triangle, fan view
    "quadtri": (5, {"quad": 1, "triangle": 1}, {"w": 2}),
    "solo": (3, {"triangle": 1}, {}),
    "tet": (4, {"triangle": 4}, {"temperature": 1, "velocity": 3}),
}
ORDER = ["house", "quadtri", "solo", "tet"]


def resolve(item, folder):
    """Load the HDF5 dataset a DataItem points to, check its Dimensions."""
    assert item.get("Format") == "HDF", item.attrib
    fname, h5path = item.text.strip().split(":")
    with h5py.File(os.path.join(folder, fname), "r") as f:
        data = f[h5path][()]
    dims = tuple(int(d) for d in item.get("Dimensions").split())
    assert data.shape == dims, (h5path, data.shape, dims)
    want = "Float" if data.dtype.kind == "f" else "Int"
    assert item.get("DataType") == want and item.get("Precision") == "8", item.attrib
    return data


def decode_mixed(mixed):
    faces, r = [], 0
    sizes = {4: 3, 5: 4}
    while r < len(mixed):
        t = int(mixed[r])
        if t == 3:
            n, r = int(mixed[r + 1]), r + 2
        else:
            n, r = sizes[t], r + 1
        faces.append(list(mixed[r:r + n]))
        r += n
    return faces


def check_collection(xdmf, h5):
    folder = os.path.dirname(xdmf)
    root = ET.parse(xdmf).getroot()
    assert root.tag == "Xdmf" and root.get("Version") == "3.0"
    (domain,) = list(root)
    (coll,) = list(domain)
    assert coll.get("GridType") == "Collection" and coll.get("CollectionType") == "Spatial"
    grids = list(coll)
    assert [g.get("Name") for g in grids] == ORDER, [g.get("Name") for g in grids]
    with h5py.File(h5, "r") as f:
        assert f.attrs["format"] == b"meshbatch-collection", f.attrs["format"]
        assert int(f.attrs["format_version"]) == 2
        groups = {n: f["meshes"][n] for n in ORDER}
        for g in grids:
            name = g.get("Name")
            grp = groups[name]
            assert g.get("GridType") == "Uniform"
            topo, geo = g.find("Topology"), g.find("Geometry")
            assert geo.get("GeometryType") == "XYZ"
            xyz = resolve(geo.find("DataItem"), folder)
            assert xyz.shape == (EXPECTED[name][0], 3)
            kind = topo.get("TopologyType")
            conn = resolve(topo.find("DataItem"), folder)
            if "triangles" in grp:
                assert kind == "Triangle" and topo.get("NodesPerElement") == "3"
                assert int(topo.get("NumberOfElements")) == grp["triangles"].shape[0]
            else:
                assert kind == "Mixed", kind
                off, idx = grp["face_offsets"][()], grp["face_indices"][()]
                faces = [list(idx[off[i]:off[i + 1]]) for i in range(len(off) - 1)]
                assert int(topo.get("NumberOfElements")) == len(faces)
                assert decode_mixed(conn) == faces, (name, decode_mixed(conn), faces)
            attrs = {a.get("Name"): a for a in g.findall("Attribute")}
            assert set(attrs) == set(EXPECTED[name][2]), (name, attrs.keys())
            for fname, a in attrs.items():
                assert a.get("Center") == "Node"
                data = resolve(a.find("DataItem"), folder)
                assert data.shape == (xyz.shape[0], EXPECTED[name][2][fname])


def check_meshio(stem, h5):
    with h5py.File(h5, "r") as f:
        for name in ORDER:
            nv, cells, fields = EXPECTED[name]
            mesh = meshio.read(f"{stem}.{name}.xdmf")
            assert mesh.points.shape == (nv, 3), (name, mesh.points.shape)
            assert np.array_equal(mesh.points, f["meshes"][name]["vertices"][()])
            got = {}
            for block in mesh.cells:
                got[block.type] = got.get(block.type, 0) + len(block.data)
            assert got == cells, (name, got, cells)
            assert set(mesh.point_data) == set(fields), (name, mesh.point_data.keys())
            for fname, k in fields.items():
                assert mesh.point_data[fname].reshape(nv, -1).shape == (nv, k)
            print(f"meshio: {name}: {nv} vertices, cells {got}, fields {sorted(fields)}")


def main():
    writer = sys.argv[1]
    tmp = os.environ.get("MESHBATCH_TEST_TMP", "/tmp")
    mpiexec = shlex.split(os.environ.get("MESHBATCH_MPIEXEC", "mpiexec -n"))
    h5 = os.path.join(tmp, "sample.h5")
    subprocess.run(mpiexec + ["2", writer, h5], check=True)
    stem = h5[:-3]
    check_collection(stem + ".xdmf", h5)
    check_meshio(stem, h5)
    try:
        meshio.read(stem + ".xdmf")
        print("note: meshio read the multi-mesh collection file")
    except BaseException as exc:  # expected (meshio may sys.exit) with meshio's one-grid XDMF reader
        print(f"note: meshio cannot read the collection file itself ({type(exc).__name__}: {exc})")
    print("ok")


if __name__ == "__main__":
    main()
