"""Shared helpers of meshbatch's Python tests (run by CTest; see tests/CMakeLists.txt).

Environment set by mb_add_test: MESHBATCH_EXE, MESHBATCH_SOURCE_DIR,
MESHBATCH_DATA_DIR (may be absent), MESHBATCH_TEST_TMP, MESHBATCH_MPIEXEC.
A test script adds this folder to sys.path and imports what it needs.
"""
import math
import os
import shlex
import shutil
import struct
import subprocess
import sys
import zlib

EXE = os.environ["MESHBATCH_EXE"]
SRC = os.environ["MESHBATCH_SOURCE_DIR"]
DATA = os.environ.get("MESHBATCH_DATA_DIR", "")
TMP = os.environ["MESHBATCH_TEST_TMP"]
MPIEXEC = shlex.split(os.environ["MESHBATCH_MPIEXEC"])
SKIP = 77


def fail(msg):
    """Print the reason and leave with exit code 1."""
    print("FAIL:", msg)
    sys.exit(1)


def count(n, one, many):
    """A count as meshbatch prints it, its noun agreeing: count(1, "mesh",
    "meshes") is "1 mesh", count(2, ...) "2 meshes", count(0, ...) "0 meshes"."""
    return f"{n} {one if n == 1 else many}"


def fresh(name):
    """An empty folder TMP/name (removed first where it exists)."""
    d = os.path.join(TMP, name)
    shutil.rmtree(d, ignore_errors=True)
    os.makedirs(d)
    return d


def run(args, np=None, expect=0):
    """Run the meshbatch command (under the MPI launcher with np ranks when
    np is given), print its output, fail unless it exits with `expect`
    (None: any code). Returns the CompletedProcess."""
    cmd = (MPIEXEC + [str(np)] if np else []) + [EXE] + [str(a) for a in args]
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    print("$", " ".join(cmd), f"-> {p.returncode}")
    print(p.stdout, p.stderr, sep="")
    if expect is not None and p.returncode != expect:
        fail(f"exit code {p.returncode}, expected {expect}")
    return p


def noisy_grid_obj(path, n, quads=False):
    """An open n x n grid surface with deterministic noise (no random module,
    so the text is the same everywhere), triangles or quadrilaterals."""
    v, f = [], []
    for j in range(n):
        for i in range(n):
            h = (i * 7919 + j * 104729) % 1000 / 1000.0
            v.append((i + 0.3 * (h - 0.5), j + 0.2 * (0.5 - h), 0.4 * h - 0.2))
    for j in range(n - 1):
        for i in range(n - 1):
            a = j * n + i
            f += [(a, a + 1, a + n + 1, a + n)] if quads else [(a, a + 1, a + n + 1), (a, a + n + 1, a + n)]
    with open(path, "w") as out:
        out.writelines(f"v {x!r} {y!r} {z!r}\n" for x, y, z in v)
        out.writelines("f " + " ".join(str(k + 1) for k in face) + "\n" for face in f)
    return path


def need_module(name):
    """Import a Python module or leave with the skip code."""
    try:
        return __import__(name)
    except ImportError:
        print(f"SKIP: python module {name} is not installed")
        sys.exit(SKIP)


def mesh_vertices(out, mesh):
    """A mesh's vertex positions [nv, 3] (a numpy array) and its attributes
    (a dict of strings: the provenance) from a collection. With h5py, read
    directly; without it (GPU machines often lack it), through the CLI:
    `meshbatch export --mesh` to OBJ (full double precision) and `meshbatch
    info --mesh` for the attributes. MB_TEST_NO_H5PY=1 takes the second way
    where h5py is present (to test it). Skips (77) without numpy."""
    np = need_module("numpy")
    if os.environ.get("MB_TEST_NO_H5PY") != "1":
        try:
            import h5py
            with h5py.File(out, "r") as f:
                g = f["meshes"][mesh]
                attrs = {k: (v.decode() if isinstance(v, bytes) else str(v)) for k, v in g.attrs.items()}
                return g["vertices"][()], attrs
        except ImportError:
            pass
    obj = f"{out}.{mesh}.vertices.obj"
    run(["export", out, "--mesh", mesh, "-o", obj, "--force"])
    with open(obj) as fh:
        xyz = [[float(w) for w in ln.split()[1:4]] for ln in fh if ln.startswith("v ")]
    os.remove(obj)
    p = subprocess.run([EXE, "info", out, "--mesh", mesh], capture_output=True, text=True, timeout=600)
    if p.returncode != 0:
        fail(f"meshbatch info {out} --mesh {mesh}: exit code {p.returncode}")
    attrs = {}
    for ln in p.stdout.splitlines():
        if ln.startswith("  ") and " = " in ln:
            k, v = ln.strip().split(" = ", 1)
            attrs[k] = v
    return np.array(xyz, dtype=np.float64).reshape(-1, 3), attrs


def new_dataset_group(f, name, kind="surface", index=0):
    """In an h5py file f opened for writing: the collection's root attributes
    (docs/format.md, version 2) and the group of dataset `name`, returned
    for the caller to fill with its datasets."""
    import numpy as np
    if "format" not in f.attrs:
        f.attrs["format"] = np.bytes_("meshbatch-collection")
        f.attrs["format_version"] = np.int64(2)
    g = f.require_group("meshes").create_group(name)
    g.attrs["index"] = np.int64(index)
    g.attrs["kind"] = np.bytes_(kind)
    return g


def datasets(path):
    """All datasets of an HDF5 file as {name: bytes}."""
    h5py = need_module("h5py")
    out = {}
    with h5py.File(path, "r") as f:
        f.visititems(lambda n, o: out.__setitem__(n, o[()].tobytes()) if isinstance(o, h5py.Dataset) else None)
    return out


def same_datasets(a, b):
    """Bitwise comparison of every dataset (h5py), or of the meshes through
    `meshbatch compare` where h5py is not installed."""
    try:
        import h5py  # noqa: F401
    except ImportError:
        compare(a, b, 0)
        return
    da, db = datasets(a), datasets(b)
    if sorted(da) != sorted(db):
        fail(f"{a} and {b} hold different datasets: {sorted(da)} vs {sorted(db)}")
    for k in da:
        if da[k] != db[k]:
            fail(f"dataset {k} differs between {a} and {b}")
    print(f"{len(da)} datasets bitwise identical: {a} == {b}")


def compare(a, b, rtol):
    p = run(["compare", a, b, "--rtol", rtol], expect=None)
    if p.returncode != 0:
        fail(f"{a} and {b} differ by more than {rtol}")


def cuda_devices():
    """CUDA devices meshbatch can use (from `meshbatch --version`)."""
    p = run(["--version"])
    for line in p.stdout.splitlines():
        if line.startswith("CUDA devices:"):
            return int(line.split(":")[1].split()[0])
    return 0


def icosahedron():
    """The regular icosahedron on the unit sphere: (vertices, faces), 0-based."""
    t = (1 + 5 ** 0.5) / 2
    v = [(-1, t, 0), (1, t, 0), (-1, -t, 0), (1, -t, 0), (0, -1, t), (0, 1, t), (0, -1, -t),
         (0, 1, -t), (t, 0, -1), (t, 0, 1), (-t, 0, -1), (-t, 0, 1)]
    f = [(0, 11, 5), (0, 5, 1), (0, 1, 7), (0, 7, 10), (0, 10, 11), (1, 5, 9), (5, 11, 4),
         (11, 10, 2), (10, 7, 6), (7, 1, 8), (3, 9, 4), (3, 4, 2), (3, 2, 6), (3, 6, 8),
         (3, 8, 9), (4, 9, 5), (2, 4, 11), (6, 2, 10), (8, 6, 7), (9, 8, 1)]
    v = [tuple(c / math.sqrt(sum(x * x for x in p)) for c in p) for p in v]
    return v, f


def icosphere(levels):
    """The icosahedron subdivided `levels` times, new vertices on the unit sphere."""
    v, f = icosahedron()
    for _ in range(levels):
        mid, nf = {}, []

        def m(a, b):
            k = (min(a, b), max(a, b))
            if k not in mid:
                p = [(x + y) / 2 for x, y in zip(v[a], v[b])]
                r = math.sqrt(sum(c * c for c in p))
                v.append(tuple(c / r for c in p))
                mid[k] = len(v) - 1
            return mid[k]
        for a, b, c in f:
            ab, bc, ca = m(a, b), m(b, c), m(c, a)
            nf += [(a, ab, ca), (b, bc, ab), (c, ca, bc), (ab, bc, ca)]
        f = nf
    return v, f


def write_obj(path, v, f):
    """Write vertices v and 0-based faces f as an OBJ file at path; returns path."""
    with open(path, "w") as out:
        out.writelines(f"v {float(x)!r} {float(y)!r} {float(z)!r}\n" for x, y, z in v)
        out.writelines("f " + " ".join(str(k + 1) for k in face) + "\n" for face in f)
    return path


def run_job(name, inputs, stages, backend="cpu", np=None, expect=0, distribute="per-mesh"):
    """Write TMP/name/job.yaml (inputs, output TMP/name/out.h5 removed first,
    backend, distribute, the stages' YAML text), run it with -v on np ranks
    and check its exit code (expect; None: any). Returns (out, process)."""
    d = os.path.join(TMP, name)
    os.makedirs(d, exist_ok=True)
    out = os.path.join(d, "out.h5")
    if os.path.exists(out):
        os.remove(out)
    job = os.path.join(d, "job.yaml")
    with open(job, "w") as f:
        f.write("input:\n" + "".join(f"  - {p}\n" for p in inputs) +
                f"output: {out}\nbackend: {backend}\ndistribute: {distribute}\nstages:\n{stages}")
    p = run(["run", "-v", job], np=np, expect=expect)
    return out, p


def ckpt_records(ckdir):
    """The checkpoint log records in folder ckdir (every run-G.rank-R.log),
    read as docs/format.md ("Checkpoint log") lays them out: a list of
    (path, offset, header bytes, payload bytes, source) of those whose
    two CRC-32s hold, scanning past damaged bytes 8 at a time."""
    good = []
    for name in sorted(os.listdir(ckdir)):
        if not (name.startswith("run-") and name.endswith(".log")):
            continue
        path = os.path.join(ckdir, name)
        data = open(path, "rb").read()
        pos = 0
        while pos + 64 <= len(data):
            magic, hlen, hcrc, plen, pcrc, narr, source = struct.unpack_from("<8sIIQIIq", data, pos)
            if magic == b"MBCKLOG1" and 64 <= hlen and pos + hlen + plen <= len(data):
                head = bytearray(data[pos:pos + hlen])
                head[12:16] = b"\0\0\0\0"
                body = data[pos + hlen:pos + hlen + plen]
                if zlib.crc32(bytes(head)) == hcrc and zlib.crc32(body) == pcrc:
                    good.append((path, pos, hlen, plen, source))
                    pos += hlen + plen
                    continue
            pos += 8
    return good


def ckpt_count(ckdir):
    """Meshes kept in checkpoint folder ckdir: good log records (per mesh)
    and N.h5 files (partitioned)."""
    return len(ckpt_records(ckdir)) + len([f for f in os.listdir(ckdir) if f.endswith(".h5")])
