#!/usr/bin/env python3
"""meshbatch: the XDMF companions of a collection of every kind, read by meshio.

Usage: test_xdmf_kinds_meshio.py WRITER   (WRITER = collection_kinds_writer)

Writes the kind samples (tests/collection/coll_kinds.h: a surface with a
pentagon, two triangulation2d, two polygons2d -- one with faces of 3 to 8
vertices mixed, one of triangles and quads only) with 2 ranks, then checks
against the HDF5 datasets (h5py), exactly:
  * <stem>.xdmf: one Uniform grid per dataset; Geometry XY -> vertices [N,2]
    for planar kinds, XYZ -> [N,3] for surfaces; Triangle -> triangles, or
    Mixed -> xdmf_mixed, which decodes to the faces of face_offsets /
    face_indices (polygon type 3 with its vertex count for n >= 5); Node
    attributes = fields/<f> [N,k], Cell attributes = face_fields/<f> [M,k];
  * <stem>.<name>.xdmf with meshio.read: points = vertices (2 columns for
    planar kinds); cells = the faces (triangles, or triangle/quad blocks of a
    Mixed topology), or for datasets with a face of >= 5 vertices the fan
    triangles, from which the polygons are rebuilt (with the HDF5 face sizes,
    and for polygons2d also from the `vertex_count` cell data alone); point
    data = the fields; cell data = the face fields (in the fan view, each
    face's row repeated for its n - 2 triangles).
Exit code 77 (skip) if meshio, h5py or numpy cannot be imported.
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

ORDER = ["surf", "tri2d", "poly2d", "quad2d", "tiny2d"]
KINDS = {"surf": "surface", "tri2d": "triangulation2d", "poly2d": "polygons2d",
         "quad2d": "polygons2d", "tiny2d": "triangulation2d"}
MESHIO_TYPES = {3: "triangle", 4: "quad"}


def text(value):
    return value.decode() if isinstance(value, bytes) else str(value)


def load(h5):
    """name -> dict of the dataset as stored (docs/format.md)."""
    out = {}
    with h5py.File(h5, "r") as f:
        assert f.attrs["format"] == b"meshbatch-collection", f.attrs["format"]
        assert int(f.attrs["format_version"]) == 2
        names = sorted(f["meshes"], key=lambda n: int(f["meshes"][n].attrs["index"]))
        assert names == ORDER, names
        for name in names:
            g = f["meshes"][name]
            kind = text(g.attrs["kind"])
            if "triangles" in g:
                faces = g["triangles"][()].tolist()
            else:
                off, idx = g["face_offsets"][()], g["face_indices"][()]
                faces = [idx[off[i]:off[i + 1]].tolist() for i in range(len(off) - 1)]
            out[name] = {
                "kind": kind,
                "vertices": g["vertices"][()],
                "faces": faces,
                "triangles": "triangles" in g,
                "fields": {k: g["fields"][k][()] for k in g["fields"]} if "fields" in g else {},
                "face_fields": ({k: g["face_fields"][k][()] for k in g["face_fields"]}
                                if "face_fields" in g else {}),
                "fan": g["xdmf_triangles"][()] if "xdmf_triangles" in g else None,
            }
    return out


def resolve(item, folder):
    """The HDF5 dataset a DataItem points to, after checking its Dimensions."""
    assert item.get("Format") == "HDF", item.attrib
    fname, h5path = item.text.strip().split(":")
    with h5py.File(os.path.join(folder, fname), "r") as f:
        data = f[h5path][()]
    dims = tuple(int(d) for d in item.get("Dimensions").split())
    assert data.shape == dims, (h5path, data.shape, dims)
    want = "Float" if data.dtype.kind == "f" else "Int"
    assert item.get("DataType") == want and item.get("Precision") == "8", item.attrib
    return data, h5path


def decode_mixed(mixed):
    faces, r = [], 0
    while r < len(mixed):
        t = int(mixed[r])
        if t == 3:
            n, r = int(mixed[r + 1]), r + 2
        else:
            n, r = {4: 3, 5: 4}[t], r + 1
        faces.append([int(v) for v in mixed[r:r + n]])
        r += n
    return faces


def check_collection(xdmf, meshes):
    folder = os.path.dirname(xdmf)
    root = ET.parse(xdmf).getroot()
    (domain,) = list(root)
    (coll,) = list(domain)
    assert coll.get("GridType") == "Collection" and coll.get("CollectionType") == "Spatial"
    grids = list(coll)
    assert [g.get("Name") for g in grids] == ORDER
    for g in grids:
        name = g.get("Name")
        exp = meshes[name]
        assert exp["kind"] == KINDS[name], (name, exp["kind"])
        planar = exp["kind"] != "surface"
        geo = g.find("Geometry")
        assert geo.get("GeometryType") == ("XY" if planar else "XYZ"), geo.attrib
        xyz, path = resolve(geo.find("DataItem"), folder)
        assert path == f"/meshes/{name}/vertices"
        assert xyz.shape[1] == (2 if planar else 3)
        assert np.array_equal(xyz, exp["vertices"])
        topo = g.find("Topology")
        conn, _ = resolve(topo.find("DataItem"), folder)
        if exp["triangles"]:
            assert topo.get("TopologyType") == "Triangle" and topo.get("NodesPerElement") == "3"
            assert conn.tolist() == exp["faces"]
        else:
            assert topo.get("TopologyType") == "Mixed", topo.attrib
            assert decode_mixed(conn) == exp["faces"], name
        assert int(topo.get("NumberOfElements")) == len(exp["faces"])
        nodes = {a.get("Name"): a for a in g.findall("Attribute") if a.get("Center") == "Node"}
        cells = {a.get("Name"): a for a in g.findall("Attribute") if a.get("Center") == "Cell"}
        assert len(nodes) + len(cells) == len(g.findall("Attribute"))
        assert set(nodes) == set(exp["fields"]), (name, nodes.keys())
        assert set(cells) == set(exp["face_fields"]), (name, cells.keys())
        for fname, a in nodes.items():
            data, path = resolve(a.find("DataItem"), folder)
            assert path == f"/meshes/{name}/fields/{fname}"
            assert np.array_equal(data, exp["fields"][fname])
        for fname, a in cells.items():
            data, path = resolve(a.find("DataItem"), folder)
            assert path == f"/meshes/{name}/face_fields/{fname}"
            assert data.shape[0] == len(exp["faces"])
            assert np.array_equal(data, exp["face_fields"][fname])
        sizes = sorted({len(face) for face in exp["faces"]})
        print(f"collection: {name} ({exp['kind']}): {len(exp['faces'])} faces of sizes {sizes}, "
              f"node {sorted(nodes)}, cell {sorted(cells)}")


def polygons_from_fan(tris, sizes):
    """Rebuild polygons from consecutive fan triangles (v0 vk vk+1), n - 2 per face."""
    faces, t = [], 0
    for n in sizes:
        fan = tris[t:t + n - 2]
        assert all(tri[0] == fan[0][0] for tri in fan), fan
        assert all(fan[k][2] == fan[k + 1][1] for k in range(len(fan) - 1)), fan
        faces.append([int(fan[0][0]), int(fan[0][1])] + [int(tri[2]) for tri in fan])
        t += n - 2
    assert t == len(tris)
    return faces


def check_meshio(stem, meshes):
    for name in ORDER:
        exp = meshes[name]
        mesh = meshio.read(f"{stem}.{name}.xdmf")
        assert mesh.points.shape == exp["vertices"].shape, (name, mesh.points.shape)
        assert np.array_equal(mesh.points, exp["vertices"]), name
        faces, sizes = exp["faces"], [len(face) for face in exp["faces"]]
        fan = exp["fan"] is not None
        if fan:  # a face of >= 5 vertices: meshio has no polygon cell type for XDMF
            assert [b.type for b in mesh.cells] == ["triangle"], name
            tris = mesh.cells[0].data.tolist()
            assert tris == exp["fan"].tolist()
            assert polygons_from_fan(tris, sizes) == faces, name
        else:
            got = [c.tolist() for b in mesh.cells for c in b.data]
            types = [b.type for b in mesh.cells for _ in b.data]
            assert got == faces, (name, got, faces)
            assert types == [MESHIO_TYPES[n] for n in sizes], (name, types)
        assert set(mesh.point_data) == set(exp["fields"]), (name, mesh.point_data.keys())
        for fname, want in exp["fields"].items():
            assert np.array_equal(mesh.point_data[fname].reshape(want.shape), want), (name, fname)
        assert set(mesh.cell_data) == set(exp["face_fields"]), (name, mesh.cell_data.keys())
        for fname, want in exp["face_fields"].items():
            got = np.concatenate([np.asarray(a).reshape(-1, want.shape[1])
                                  for a in mesh.cell_data[fname]])
            if fan:
                assert np.array_equal(got, np.repeat(want, [n - 2 for n in sizes], axis=0))
                firsts = np.cumsum([0] + [n - 2 for n in sizes[:-1]])
                assert np.array_equal(got[firsts], want), (name, fname)
            else:
                assert np.array_equal(got, want), (name, fname)
        if name == "poly2d":  # the polygons from meshio's data alone (Polylla's vertex_count)
            counts = np.concatenate(mesh.cell_data["vertex_count"]).reshape(-1)
            rebuilt, t = [], 0
            while t < len(counts):
                n = int(counts[t])
                assert np.all(counts[t:t + n - 2] == n)
                rebuilt.append(n)
                t += n - 2
            assert polygons_from_fan(mesh.cells[0].data.tolist(), rebuilt) == faces
            assert sorted(set(rebuilt)) == [3, 4, 5, 6, 7, 8], rebuilt
            assert rebuilt != sorted(rebuilt)  # sizes are mixed, not grouped
        blocks = {b.type: len(b.data) for b in mesh.cells}
        print(f"meshio: {name}: points {mesh.points.shape}, cells {blocks}"
              f"{' (fan view of ' + str(len(faces)) + ' polygons)' if fan else ''}, "
              f"point data {sorted(mesh.point_data)}, cell data {sorted(mesh.cell_data)}")


def main():
    writer = sys.argv[1]
    tmp = os.environ.get("MESHBATCH_TEST_TMP", "/tmp")
    mpiexec = shlex.split(os.environ.get("MESHBATCH_MPIEXEC", "mpiexec -n"))
    h5 = os.path.join(tmp, "kinds.h5")
    subprocess.run(mpiexec + ["2", writer, h5], check=True)
    stem = h5[:-3]
    meshes = load(h5)
    check_collection(stem + ".xdmf", meshes)
    check_meshio(stem, meshes)
    print("ok")


if __name__ == "__main__":
    main()
