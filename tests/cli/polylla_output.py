#!/usr/bin/env python3
"""The output of a Polylla run opens in meshio and ParaView, and exports to
OFF with its polygons.

    polylla_output.py            meshio and OFF export (h5py, meshio needed)
    polylla_output.py --paraview ParaView's three XDMF readers on the same
                                 output (tests/collection/test_xdmf_paraview.py;
                                 exit 77 without pvpython)
    polylla_output.py --bad      malformed Triangle files and a non-planar surface
                                 in a batch: each is reported (file:line, or the
                                 job's stage line), the others are written; a
                                 fan that ties: corners refuses
    polylla_output.py --gpu      the job on the CUDA backend (one rank, --timings):
                                 every dataset bitwise equal to the CPU backend's
                                 output, and --timings prints the device and copy
                                 rows (exit 77 without a CUDA device)

Inputs: a Delaunay triangulation and the uniform grid triangulation made by
`meshbatch generate`, imported into one collection, run through a job with
one polylla stage on 2 ranks. Exit code 0 passes, 77 skips, other fails.
"""
import os
import shutil
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "util"))
from mbtest import EXE, MPIEXEC, SRC, TMP, cuda_devices, fail, run, same_datasets  # noqa: E402


def polylla_run(d, backend="cpu", np=2, name="poly", args=()):
    tri = [os.path.join(d, "delaunay.node"), os.path.join(d, "grid.node")]
    coll = os.path.join(d, "tri.h5")
    if not os.path.exists(coll):
        run(["generate", "delaunay", "--points", 4000, "--seed", 5, "-o", tri[0]])
        run(["generate", "grid2d", "--vertices", 400, "-o", tri[1]])
        # the pattern matches .node, .ele and .neigh of both: each dataset once
        p = run(["import", os.path.join(d, "*"), "-o", coll])
        if "2 meshes, 2 written" not in p.stdout:
            fail("import of a folder of Triangle files did not give 2 datasets")
    job = os.path.join(d, f"{name}.yaml")
    with open(job, "w") as f:
        f.write(f"input: {coll}\noutput: {d}/{name}.h5\nbackend: {backend}\n"
                "stages:\n  - op: polylla\n")
    p = run(["run", job, *args], np=np)
    return os.path.join(d, f"{name}.h5"), p


def check_gpu(d):
    """The job on the CUDA backend (the positions taken from the input, the
    copies through the pinned pool) gives the CPU backend's bits, and
    --timings shows the device and copy rows."""
    cpu, _ = polylla_run(d, "cpu", 1, "poly_cpu")
    gpu, p = polylla_run(d, "cuda", 1, "poly_gpu", ("--timings",))
    for row in ("device (ops' report)", "host-device copies (ops)"):
        if not any(ln.strip().startswith(row) and " s " in ln for ln in p.stdout.splitlines()):
            fail(f"--timings of a Polylla job on the GPU: no '{row}' row")
    # provenance differs (backend, times); the meshes' datasets must not.
    # GPU machines often lack h5py: then `meshbatch compare` (faces and
    # fields bitwise, vertices within --rtol 0, i.e. bitwise).
    try:
        import h5py  # noqa: F401
        same_datasets(cpu, gpu)
    except ImportError:
        c = run(["compare", cpu, gpu], expect=None)
        print(c.stdout.strip())
        if c.returncode != 0:
            fail("the GPU job's output differs from the CPU job's (meshbatch compare)")
    print("the GPU job's output is the CPU job's, bit for bit; --timings has its rows")


def read_off(path):
    with open(path) as f:
        words = f.read().split()
    if words[0] != "OFF":
        fail(f"{path}: not an OFF file")
    nv, nf = int(words[1]), int(words[2])
    pos = 4
    xyz = [tuple(float(w) for w in words[pos + 3 * i:pos + 3 * i + 3]) for i in range(nv)]
    pos += 3 * nv
    faces = []
    for _ in range(nf):
        k = int(words[pos])
        faces.append([int(w) for w in words[pos + 1:pos + 1 + k]])
        pos += 1 + k
    return xyz, faces


def check_meshio_and_off(d, out):
    import h5py
    import meshio
    import numpy as np
    with h5py.File(out, "r") as f:
        names = sorted(f["meshes"], key=lambda n: int(f["meshes"][n].attrs["index"]))
        data = {}
        for n in names:
            g = f["meshes"][n]
            kind = g.attrs["kind"]
            kind = kind.decode() if isinstance(kind, bytes) else str(kind)
            if kind != "polygons2d":
                fail(f"{n}: kind {kind}, expected polygons2d")
            offsets, indices = g["face_offsets"][()], g["face_indices"][()]
            data[n] = dict(vertices=g["vertices"][()], offsets=offsets, indices=indices,
                           count=g["face_fields"]["vertex_count"][()].ravel(),
                           polygons=int(g.attrs["polygons"]))
    for n, m in data.items():
        sizes = np.diff(m["offsets"])
        if len(sizes) != m["polygons"] or not np.array_equal(sizes, m["count"].astype(int)):
            fail(f"{n}: vertex_count or polygons attribute disagrees with the faces")
        # meshio: the per-dataset XDMF (quads and triangles exactly; larger
        # polygons as their fan triangles with the face fields repeated)
        mesh = meshio.read(os.path.join(d, f"poly.{n}.xdmf"))
        if not np.array_equal(mesh.points[:, :2], m["vertices"][:, :2]):
            fail(f"{n}: meshio points differ")
        ncells = sum(len(c.data) for c in mesh.cells)
        fan = int(np.sum(sizes - 2))
        if ncells not in (len(sizes), fan):
            fail(f"{n}: meshio read {ncells} cells, expected {len(sizes)} polygons or {fan} fan triangles")
        print(f"{n}: meshio read {len(mesh.points)} points, {ncells} cells "
              f"({', '.join(c.type for c in mesh.cells)})")
        # OFF export keeps the polygons
        off = os.path.join(d, f"{n}.off")
        run(["export", out, "--mesh", n, "-o", off])
        xyz, faces = read_off(off)
        if len(faces) != m["polygons"]:
            fail(f"{n}: OFF has {len(faces)} faces, expected {m['polygons']}")
        for p, face in enumerate(faces):
            want = m["indices"][m["offsets"][p]:m["offsets"][p + 1]].tolist()
            if face != want:
                fail(f"{n}: OFF face {p} is {face}, expected {want}")
        if any(z != 0 for _, _, z in xyz) or len(xyz) != len(m["vertices"]):
            fail(f"{n}: OFF vertices differ")
        print(f"{n}: OFF export holds the {len(faces)} polygons "
              f"({int(sizes.min())}..{int(sizes.max())} vertices)")


BAD = {  # name: (.node text, .ele text, expected message)
    "count": ("4 2 0 0\n0 0 0\n1 1 0\n2 0 1\n", "1 3 0\n0 0 1 2\n",
              "count.node:5: file ends after 3 of 4 vertices"),
    "index": ("3 2 0 0\n0 0 0\n1 1 0\n2 0 1\n", "1 3 0\n0 0 1 7\n",
              "index.ele:2: vertex index 7 out of range [0, 2]"),
    "nan": ("3 2 0 0\n0 0 0\n1 nan 0\n2 0 1\n", "1 3 0\n0 0 1 2\n",
            "nan.node:3: non-finite coordinate"),
}


def check_bad_inputs(d):
    files = []
    for name, (node, ele, _) in BAD.items():
        for ext, text in ((".node", node), (".ele", ele)):
            with open(os.path.join(d, name + ext), "w") as f:
                f.write(text)
        files.append(os.path.join(d, name + ".node"))
    # a surface that is not planar: the stage's input kind does not fit
    bumpy = os.path.join(d, "bumpy.obj")
    with open(bumpy, "w") as f:
        f.write("v 0 0 0\nv 1 0 0.5\nv 0 1 0\nf 1 2 3\n")
    files.append(bumpy)
    good = os.path.join(d, "good.node")
    run(["generate", "delaunay", "--points", 300, "--seed", 2, "-o", good])
    job = os.path.join(d, "bad.yaml")
    with open(job, "w") as f:
        f.write("input:\n" + "".join(f"  - {p}\n" for p in files + [good]) +
                f"output: {d}/bad.h5\nbackend: cpu\nstages:\n  - op: polylla\n")
    cmd = MPIEXEC + ["2", EXE, "run", job]
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    print(p.stdout, p.stderr, sep="")
    if p.returncode != 1:
        fail(f"exit code {p.returncode}, expected 1 (some datasets failed)")
    for name, (_, _, message) in BAD.items():
        if message not in p.stdout + p.stderr:
            fail(f"no message '{message}' for {name}")
    line = 1 + len(files) + 1 + 3  # input:, the inputs, good, output, backend, stages
    kind_message = f"bad.yaml:{line + 1}: stage 0 (polylla) reads triangulation2d datasets"
    if kind_message not in p.stdout + p.stderr:
        fail(f"no message '{kind_message}' for bumpy.obj")
    import h5py
    with h5py.File(os.path.join(d, "bad.h5"), "r") as f:
        written = sorted(f["meshes"])
    if written != ["good"]:
        fail(f"written datasets {written}, expected ['good']")
    print("malformed Triangle files reported with file:line; the good one written")
    check_tie_cycle(d, good)


def check_tie_cycle(d, good):
    """ties: corners refuses a fan whose equally long spokes join its
    triangles in a cycle (naming the triangle), and the batch goes on; the
    default ties: key meshes the same fan."""
    ring = [(5, 0), (4, 3), (3, 4), (0, 5), (-3, 4), (-4, 3), (-5, 0), (-4, -3), (-3, -4),
            (0, -5), (3, -4), (4, -3)]
    pts = ring + [(0, 0), (9, 4)]
    tris = [(1, 0, 13)] + [(12, i, (i + 1) % 12) for i in range(12)]
    fan = os.path.join(d, "fan.node")
    with open(fan, "w") as f:
        f.write(f"{len(pts)} 2 0 0\n" + "".join(f"{i} {x} {y}\n" for i, (x, y) in enumerate(pts)))
    with open(os.path.join(d, "fan.ele"), "w") as f:
        f.write(f"{len(tris)} 3 0\n" + "".join(f"{i} {a} {b} {c}\n" for i, (a, b, c) in enumerate(tris)))
    # the same on 2 ranks, partitioned: the message names the whole mesh's row
    coll = os.path.join(d, "ties_in.h5")
    run(["import", fan, good, "-o", coll])
    for ties, code in (("corners", 1), ("key", 0), ("corners_partitioned", 1)):
        job = os.path.join(d, f"ties_{ties}.yaml")
        split = ties.endswith("_partitioned")
        with open(job, "w") as f:
            f.write((f"input: {coll}\ndistribute: partitioned\n" if split else
                     f"input:\n  - {fan}\n  - {good}\n") +
                    f"output: {d}/ties_{ties}.h5\nbackend: cpu\nstages:\n"
                    f"  - op: polylla\n    ties: {ties.split('_')[0]}\n")
        p = run(["run", job], np=2, expect=code)
        msg = "triangle 1 (0-based) and its neighbours form a cycle"
        if (msg in p.stdout + p.stderr) != ties.startswith("corners"):
            fail(f"ties: {ties}: the message '{msg}' is {'missing' if code else 'there'}")
        import h5py
        with h5py.File(os.path.join(d, f"ties_{ties}.h5"), "r") as f:
            written = sorted(f["meshes"])
        want = ["good"] if ties.startswith("corners") else ["fan", "good"]
        if written != want:
            fail(f"ties: {ties}: written datasets {written}, expected {want}")
    print("ties: corners refuses the cycle of ties with the triangle; ties: key meshes it")


def main():
    paraview = "--paraview" in sys.argv[1:]
    if "--gpu" in sys.argv[1:]:  # needs neither h5py nor meshio (check_gpu)
        if cuda_devices() < 1:
            print("SKIP: no CUDA device")
            return 77
        d = os.path.join(TMP, "polylla_output_gpu")
        shutil.rmtree(d, ignore_errors=True)
        os.makedirs(d)
        check_gpu(d)
        return 0
    try:
        import h5py  # noqa: F401
        if not paraview:
            import meshio  # noqa: F401
    except ImportError as exc:
        print(f"SKIP: {exc}")
        return 77
    if paraview and not shutil.which(os.environ.get("MESHBATCH_PVPYTHON", "pvpython")):
        print("SKIP: pvpython is not on PATH")
        return 77
    d = os.path.join(TMP, "polylla_output")
    shutil.rmtree(d, ignore_errors=True)
    os.makedirs(d)
    if "--bad" in sys.argv[1:]:
        check_bad_inputs(d)
        return 0
    out, _ = polylla_run(d)
    if paraview:
        script = os.path.join(SRC, "tests", "collection", "test_xdmf_paraview.py")
        return subprocess.run([sys.executable, script, "--existing", out]).returncode
    check_meshio_and_off(d, out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
