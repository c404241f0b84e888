#!/usr/bin/env python3
"""One conformance body for every op: each backend, each distribution the op
supports, on N ranks, gives the answer of the CPU reference on one rank.

    conformance.py OP --np N [--backend cpu|cuda]

OP names a row of OPS below: how to make inputs of the op's kind and the
stages to run. Everything else comes from the op registry (`meshbatch ops`
says whether the op runs partitioned). The reference is the CPU backend,
per-mesh, on one rank. Checked on N ranks with the chosen backend:
per-mesh with the static and the dynamic schedule and, where the op has a
partitioned form, distribute: partitioned with partitioner: metis, blocks
and parmetis. The CPU must match bit for bit; the CUDA backend bit for
bit or within the op's stated tolerance. Outputs
are compared dataset by dataset with h5py where it is installed, else with
`meshbatch compare` (kinds, faces and face fields bitwise, vertices within
the tolerance).

Each row of OPS says on which backends the op must have a partitioned
entry (`partitioned`): an op that loses one fails, it is not skipped.
MESHBATCH_HAVE_PARMETIS (set by CMakeLists.txt from the build) says whether
partitioner: parmetis must run; where the build has no ParMETIS, the run
must be refused as such, every other run is checked, and the test then
exits 77 (an optional dependency absent). Exit code 0 passes, 77 skips (no
CUDA device, or no ParMETIS in the build), other fails.
"""
import argparse
import os
import shutil
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "util"))
from mbtest import (DATA, SKIP, SRC, TMP, compare, cuda_devices, fail,  # noqa: E402
                    noisy_grid_obj, run, same_datasets)


# ----------------------------------------------------------------- inputs

def surface_inputs(d):
    return [noisy_grid_obj(os.path.join(d, "grid.obj"), 30),
            noisy_grid_obj(os.path.join(d, "quads.obj"), 12, quads=True),
            os.path.join(SRC, "data", "meshes", "spot.obj")]


def write_triangle(path, xy, tris):
    """Triangle .node/.ele files, 0-based, each triangle made counter-clockwise.
    Coordinates must be exactly representable (the text is then the same on
    every platform: repr of a dyadic float is its exact decimal)."""
    with open(path, "w") as f:
        f.write(f"{len(xy)} 2 0 0\n")
        f.writelines(f"{i} {float(x)!r} {float(y)!r}\n" for i, (x, y) in enumerate(xy))
    with open(path[:-len(".node")] + ".ele", "w") as f:
        f.write(f"{len(tris)} 3 0\n")
        for i, (a, b, c) in enumerate(tris):
            (ax, ay), (bx, by), (cx, cy) = xy[a], xy[b], xy[c]
            if (bx - ax) * (cy - ay) - (by - ay) * (cx - ax) < 0:
                b, c = c, b
            f.write(f"{i} {a} {b} {c}\n")
    return path


def strip_mesh(n=200, h=64.0):
    """A long thin strip: 2 rows of n points, the bottom row at y = 0 and the
    top row at y = h, the rows interleaved in x (p0 bottom, p1 top, p2 bottom,
    ...) and the x gap between p_k and p_k+1 growing, 1 + k/64 (at most about
    7 << h). Triangle k is (p_k, p_k+1, p_k+2); its longest edge is p_k+1 p_k+2
    (the longer of its two edges across the strip), shared with triangle k+1,
    so longest-edge propagation runs the length of the strip to the last
    cross edge, on the boundary: the whole strip is one terminal-edge region
    (1 polygon from polylla on one rank)."""
    xy, x = [], 0.0
    for k in range(2 * n):
        xy.append((x, h if k % 2 else 0.0))
        x += 1 + k / 64
    return xy, [(k, k + 1, k + 2) for k in range(2 * n - 2)]


def grid_mesh(n, x0=0.0, hole=()):
    """An n x n grid of unit cells' corners from (x0, 0), each cell split by
    the diagonal alternating with (i + j) % 2; the cells (i, j) in `hole` are
    left out and the vertices no triangle uses dropped."""
    tris = []
    for j in range(n - 1):
        for i in range(n - 1):
            if (i, j) in hole:
                continue
            a, b, c, e = j * n + i, j * n + i + 1, (j + 1) * n + i + 1, (j + 1) * n + i
            tris += [(a, b, c), (a, c, e)] if (i + j) % 2 == 0 else [(a, b, e), (b, c, e)]
    used = sorted({v for t in tris for v in t})
    new = {v: k for k, v in enumerate(used)}
    xy = [(x0 + v % n, float(v // n)) for v in used]
    return xy, [tuple(new[v] for v in t) for t in tris]


def edge_case_inputs(d):
    """Small and odd planar inputs for the partitioned form: one triangle (more
    ranks than triangles, ranks with none), two triangles sharing an edge, a
    strip whose single terminal-edge region runs its whole length (crossing
    every cut), and two components, one with a hole."""
    files = [write_triangle(os.path.join(d, "single.node"),
                            [(0.0, 0.0), (2.0, 0.0), (0.5, 1.5)], [(0, 1, 2)]),
             write_triangle(os.path.join(d, "pair.node"),
                            [(0.0, 0.0), (3.0, 0.0), (3.0, 2.0), (0.0, 2.0)], [(0, 1, 2), (0, 2, 3)]),
             write_triangle(os.path.join(d, "strip.node"), *strip_mesh())]
    # 1-rank polylla (meshbatch info, attribute polygons): single 1, pair 1,
    # strip 1 (the whole strip, 400 frontier edges), components 158 (81 + 77:
    # with square cells each cell's diagonal is its terminal edge).
    xa, ta = grid_mesh(10)
    xb, tb = grid_mesh(10, x0=100.0, hole={(4, 4), (4, 5), (5, 4), (5, 5)})
    files.append(write_triangle(os.path.join(d, "components.node"), xa + xb,
                                ta + [(a + len(xa), b + len(xa), c + len(xa)) for a, b, c in tb]))
    return files


def planar_inputs(d):
    """Delaunay triangulations (uniform and clustered), the uniform grid
    triangulation, pikachu where ../shared/data is present, and the edge
    cases of edge_case_inputs."""
    files = []
    for name, args in (("uniform", ["--points", 3000, "--seed", 7]),
                       ("clustered", ["--points", 2000, "--seed", 3, "--distribution", "clustered"])):
        out = os.path.join(d, name + ".node")
        run(["generate", "delaunay", *args, "-o", out])
        files.append(out)
    grid = os.path.join(d, "grid2d.node")
    run(["generate", "grid2d", "--vertices", 900, "-o", grid])
    files.append(grid)
    pikachu = os.path.join(DATA, "triangulations", "pikachu.1.node") if DATA else ""
    if os.path.exists(pikachu):
        files.append(pikachu)
    return files + edge_case_inputs(d)


SMOOTH_STAGES = "".join(
    f"  - {{op: taubin, lambda: 0.5, mu: -0.53, iterations: 3, weights: {w}, boundary: {b}}}\n"
    f"  - {{op: laplacian, lambda: 0.3, iterations: 2, weights: {w}, boundary: {b}}}\n"
    for w in ("uniform", "inverse_distance") for b in ("free", "fixed", "boundary_curve"))

# op -> how to test it. cuda_rtol: 0 means bitwise identical to the CPU.
# partitioned: the backends on which the op must have a partitioned entry.
BOTH = ("cpu", "cuda")
OPS = {
    "smooth": dict(inputs=surface_inputs, stages=SMOOTH_STAGES, op="taubin", cuda_rtol=1e-12,
                   partitioned=BOTH),
    "polylla": dict(inputs=planar_inputs, stages="  - {op: polylla}\n", op="polylla", cuda_rtol=0,
                    partitioned=BOTH),
}


# ----------------------------------------------------------------- checks

def same(ref, out, rtol):
    """Bitwise (every dataset with h5py, else meshbatch compare) where the op
    must be exact; else meshbatch compare: kinds, faces and face fields
    bitwise, vertices within rtol."""
    if rtol:
        compare(ref, out, rtol)
    else:
        same_datasets(ref, out)


# What partition/mb_parmetis.c says when partitioner: parmetis is asked of a
# meshbatch built without it: that run is skipped, not failed.
NO_PARMETIS = "built without ParMETIS"


def tip_fan_inputs(d):
    """Eight triangles round vertex 0 whose spokes rise and fall once in
    length: only the shortest spoke is a frontier edge, so vertex 0 is a
    barrier-edge tip and that spoke its barrier edge (one region, two
    polygons after the repair). Coordinates on a 1/64 grid. Run on 8 ranks,
    each triangle gets a rank of its own (no more triangles than parts), so
    every interior edge is cut, the barrier edge included."""
    import math
    rad = [10, 11, 12, 13, 14, 13.5, 12.5, 11.5]
    xy = [(0.0, 0.0)] + [(round(64 * r * math.cos(math.pi * i / 4)) / 64,
                          round(64 * r * math.sin(math.pi * i / 4)) / 64) for i, r in enumerate(rad)]
    return [write_triangle(os.path.join(d, "tipfan.node"), xy,
                           [(0, 1 + i, 1 + (i + 1) % 8) for i in range(8)])]


LARGE = False  # --large


def delaunay_inputs(d):
    """Delaunay triangulations of 10 k and 200 k uniform random points (about
    2 x 10^4 and 4 x 10^5 triangles), or of 10 k and 1 M points with --large
    (the `large` test, about 2 x 10^6 triangles)."""
    files = []
    for n in (10000, 1000000 if LARGE else 200000):
        out = os.path.join(d, f"delaunay{n}.node")
        run(["generate", "delaunay", "--points", n, "--seed", 1, "-o", out])
        files.append(out)
    return files


def grid_inputs(d):
    """Two grids: float64 sines on 20 x 24 x 28 points and float32 Gaussian
    on 16 x 16 x 16 (collections of grid3d)."""
    files = []
    for name, shape, field, dtype in (("g64", "20,24,28", "u=sines", "float64"),
                                      ("g32", "16,16,16", "v=gaussian", "float32")):
        out = os.path.join(d, name + ".h5")
        run(["generate", "grid", "--shape", shape, "--field", field, "--dtype", dtype,
             "--name", name, "-o", out])
        files.append(out)
    return files


GRID_STAGES = ("  - {op: derivative, axis: all}\n"
               "  - {op: grid_laplacian, boundary: dirichlet, outside: 0.25}\n"
               "  - {op: heat, alpha: 0.5, dt: 1e-5, steps: 3, every: 2}\n"
               "  - {op: wave, c: 1, dt: 0.001, steps: 3, boundary: dirichlet}\n")

# umbrella computes a per-vertex field from each vertex's neighbours: split by
# vertices, the field must come back from every rank equal to one rank's, bit
# for bit; after taubin stages (umbrella_chain) the field is computed from the
# smoothed positions and travels with them.
OPS["umbrella"] = dict(inputs=surface_inputs, stages="  - {op: umbrella}\n", op="umbrella",
                       cuda_rtol=0, partitioned=BOTH)
OPS["umbrella_chain"] = dict(
    inputs=surface_inputs, op="umbrella", cuda_rtol=1e-12,
    stages="  - {op: taubin, lambda: 0.5, mu: -0.53, iterations: 3}\n  - {op: umbrella}\n"
           "  - {op: laplacian, lambda: 0.3, iterations: 1}\n", partitioned=BOTH)

# The flows solve a sparse system per step. Split by vertices they run the
# distributed PCG, whose rows, sums and dot products (exact) are those of one
# rank: with solver: pcg the per-mesh reference is matched bit for bit; the
# CUDA backend within 1e-8 (PCG to 1e-12 on both).
def triangle_inputs(d):
    return [noisy_grid_obj(os.path.join(d, "grid.obj"), 30),
            os.path.join(SRC, "data", "meshes", "spot.obj")]


OPS["flow"] = dict(
    inputs=triangle_inputs, op="mean_curvature_flow", cuda_rtol=1e-8, partitioned=BOTH,
    stages="  - {op: mean_curvature_flow, time_step: 1e-4, steps: 2, solver: pcg, tolerance: 1e-12}\n"
           "  - {op: mean_curvature_flow, variant: classic, time_step: 1e-4, steps: 1, solver: pcg, "
           "tolerance: 1e-12, boundary: fixed}\n"
           "  - {op: implicit_fairing, time_step: 0.5, steps: 2, weights: cotangent, solver: pcg, "
           "tolerance: 1e-12}\n")

OPS["stencil"] = dict(inputs=grid_inputs, stages=GRID_STAGES, op="heat", cuda_rtol=0,
                      partitioned=BOTH)

OPS["polylla_delaunay"] = dict(inputs=delaunay_inputs, stages="  - {op: polylla}\n", op="polylla",
                               cuda_rtol=0, partitioned=BOTH)

OPS["polylla_tips"] = dict(inputs=tip_fan_inputs, stages="  - {op: polylla}\n", op="polylla",
                           cuda_rtol=0, partitioned=BOTH)


def partitioned(op):
    return "partitioned: yes" in run(["ops", op]).stdout


def adjacency_builds(d, job, np):
    """The CUDA per-mesh smoothing path builds the adjacency on the device
    from the face list (the default) or, with MESHBATCH_ADJACENCY=host, on
    the host: the two runs must agree bit for bit, and -v must say which
    build ran for every mesh (3 inputs)."""
    dev = run(["run", job("adjacency_device", "cuda"), "-v"], np=np)
    os.environ["MESHBATCH_ADJACENCY"] = "host"
    try:
        host = run(["run", job("adjacency_host", "cuda"), "-v"], np=np)
    finally:
        del os.environ["MESHBATCH_ADJACENCY"]
    dev_log, host_log = dev.stdout + dev.stderr, host.stdout + host.stderr
    if dev_log.count(": adjacency on the device ") != 3:
        fail("the device adjacency build did not run once per mesh (-v lines missing)")
    if ": adjacency on the device " in host_log or host_log.count(": adjacency ") != 3:
        fail("MESHBATCH_ADJACENCY=host did not build every adjacency on the host")
    same_datasets(os.path.join(d, "adjacency_device.h5"), os.path.join(d, "adjacency_host.h5"))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("room", choices=sorted(OPS))
    ap.add_argument("--np", type=int, default=1)
    ap.add_argument("--backend", default="cpu", choices=["cpu", "cuda"])
    ap.add_argument("--large", action="store_true", help="the larger inputs (polylla_delaunay: 1 M points)")
    a = ap.parse_args()
    global LARGE
    LARGE = a.large
    if a.backend == "cuda" and cuda_devices() == 0:
        print("SKIP: no CUDA device")
        return SKIP
    t = OPS[a.room]
    d = os.path.join(TMP, f"{a.room}_{a.backend}_{a.np}")
    shutil.rmtree(d, ignore_errors=True)
    os.makedirs(d)
    files = t["inputs"](d)
    coll = os.path.join(d, "inputs.h5")
    run(["import", *files, "-o", coll])

    def job(name, backend, **keys):
        path = os.path.join(d, name + ".yaml")
        extra = "".join(f"{k}: {v}\n" for k, v in keys.items())
        with open(path, "w") as f:
            f.write(f"input: {coll}\noutput: {d}/{name}.h5\nbackend: {backend}\n{extra}stages:\n{t['stages']}")
        return path

    run(["run", job("ref", "cpu")], np=1)
    ref = os.path.join(d, "ref.h5")
    rtol = t["cuda_rtol"] if a.backend == "cuda" else 0
    runs = [("static", {}), ("dynamic", {"schedule": "dynamic"})]
    expect_part = a.backend in t["partitioned"]
    if partitioned(t["op"]) != bool(t["partitioned"]):
        fail(f"`meshbatch ops {t['op']}` says partitioned: {partitioned(t['op'])}; this test expects "
             f"a partitioned entry on {', '.join(t['partitioned']) or 'no backend'}")
    have_parmetis = os.environ.get("MESHBATCH_HAVE_PARMETIS")  # "1", "0" or unset (by hand)
    if partitioned(t["op"]):
        runs += [("partitioned_metis", {"distribute": "partitioned", "partitioner": "metis"}),
                 ("partitioned_parmetis", {"distribute": "partitioned", "partitioner": "parmetis"}),
                 ("partitioned_blocks", {"distribute": "partitioned", "partitioner": "blocks"})]
        if a.backend == "cuda" and a.np > 1:  # each halo transport by name (auto picks one)
            runs.append(("partitioned_halo_mpi", {"distribute": "partitioned", "partitioner": "blocks",
                                                  "halo": "mpi"}))
            if cuda_devices() >= a.np:  # NCCL needs a GPU per rank
                runs.append(("partitioned_halo_nccl", {"distribute": "partitioned",
                                                       "partitioner": "blocks", "halo": "nccl"}))
    done, skipped = [], []
    for name, keys in runs:
        p = run(["run", job(name, a.backend, **keys)], np=a.np, expect=None)
        said = p.stdout + p.stderr
        if keys.get("partitioner") == "parmetis" and have_parmetis != "1":
            if p.returncode != 0 and NO_PARMETIS in said:
                print(f"{name}: refused, this meshbatch was built without ParMETIS")
                skipped.append(name)
                continue
            if have_parmetis == "0":
                fail(f"{name}: the build has no ParMETIS, but the run was not refused as such "
                     f"(exit {p.returncode})")
        if f"no partitioned form on the {a.backend} backend" in said:
            if expect_part:
                fail(f"{name}: the op lost its partitioned entry on the {a.backend} backend")
            print(f"{name}: refused, no partitioned form on the {a.backend} backend, as expected")
            continue
        if p.returncode != 0:
            fail(f"{name}: exit code {p.returncode}, expected 0")
        if keys.get("distribute") == "partitioned" and not expect_part:
            fail(f"{name}: ran partitioned on {a.backend}, which this test does not expect: "
                 "update the op's row in OPS")
        same(ref, os.path.join(d, name + ".h5"), rtol)
        done.append(name)
    if a.room == "smooth" and a.backend == "cuda":
        adjacency_builds(d, job, a.np)
        done.append("device vs host adjacency")
    print(f"{a.room} on {a.np} rank(s), {a.backend}: {', '.join(done)} match the reference")
    if skipped:
        print(f"SKIP: ParMETIS is absent from this build: {', '.join(skipped)} not checked "
              "(the runs above passed)")
        return SKIP
    return 0


if __name__ == "__main__":
    sys.exit(main())
