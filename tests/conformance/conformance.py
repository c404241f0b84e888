#!/usr/bin/env python3
"""One conformance body for every op: each backend, each distribution the op
supports, on N ranks, gives the answer of the CPU reference on one rank.

    conformance.py OP --np N [--backend cpu|cuda]

OP names a row of OPS below: how to make inputs of the op's kind and the
stages to run. Everything else comes from the op registry (`meshbatch ops`
says whether the op runs partitioned). The reference is the CPU backend,
per-mesh, on one rank. Checked on N ranks with the chosen backend:
per-mesh with the static and the dynamic schedule and, where the op has a
partitioned form, distribute: partitioned. The CPU must match bit for bit;
the CUDA backend bit for bit or within the op's stated tolerance. Outputs
are compared dataset by dataset with h5py where it is installed, else with
`meshbatch compare` (kinds, faces and face fields bitwise, vertices within
the tolerance). Exit code 0 passes, 77 skips (no CUDA device), other fails.
"""
import argparse
import os
import shlex
import shutil
import subprocess
import sys

EXE = os.environ["MESHBATCH_EXE"]
SRC = os.environ["MESHBATCH_SOURCE_DIR"]
DATA = os.environ.get("MESHBATCH_DATA_DIR", "")
TMP = os.environ["MESHBATCH_TEST_TMP"]
MPIEXEC = shlex.split(os.environ["MESHBATCH_MPIEXEC"])
SKIP = 77


def fail(msg):
    print("FAIL:", msg)
    sys.exit(1)


def run(args, np=None):
    cmd = (MPIEXEC + [str(np)] if np else []) + [EXE] + [str(a) for a in args]
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    print("$", " ".join(cmd), f"-> {p.returncode}")
    print(p.stdout, p.stderr, sep="")
    if p.returncode != 0:
        fail(f"exit code {p.returncode}")
    return p


# ----------------------------------------------------------------- inputs

def noisy_grid_obj(path, n, quads=False):
    """An open n x n grid with deterministic noise (a surface with a boundary)."""
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


def surface_inputs(d):
    return [noisy_grid_obj(os.path.join(d, "grid.obj"), 30),
            noisy_grid_obj(os.path.join(d, "quads.obj"), 12, quads=True),
            os.path.join(SRC, "data", "meshes", "spot.obj")]


def planar_inputs(d):
    """Delaunay triangulations (uniform and clustered), the uniform grid
    triangulation, and pikachu where ../shared/data is present."""
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
    return files


SMOOTH_STAGES = "".join(
    f"  - {{op: taubin, lambda: 0.5, mu: -0.53, iterations: 3, weights: {w}, boundary: {b}}}\n"
    f"  - {{op: laplacian, lambda: 0.3, iterations: 2, weights: {w}, boundary: {b}}}\n"
    for w in ("uniform", "inverse_distance") for b in ("free", "fixed", "boundary_curve"))

# op -> how to test it. cuda_rtol: 0 means bitwise identical to the CPU.
OPS = {
    "smooth": dict(inputs=surface_inputs, stages=SMOOTH_STAGES, op="taubin", cuda_rtol=1e-12),
    "polylla": dict(inputs=planar_inputs, stages="  - {op: polylla}\n", op="polylla", cuda_rtol=0),
}


# ----------------------------------------------------------------- checks

def datasets(path):
    import h5py
    out = {}
    with h5py.File(path, "r") as f:
        f.visititems(lambda n, o: out.__setitem__(n, o[()].tobytes()) if isinstance(o, h5py.Dataset) else None)
    return out


def have_h5py():
    try:
        import h5py  # noqa: F401
        return True
    except ImportError:
        return False


def same(ref, out, rtol):
    if not rtol and have_h5py():
        same_datasets(ref, out)
    else:  # meshbatch compare: kinds, faces, face fields bitwise; vertices within rtol
        run(["compare", ref, out, "--rtol", rtol])


def same_datasets(ref, out):
    a, b = datasets(ref), datasets(out)
    if sorted(a) != sorted(b):
        fail(f"{ref} and {out} hold different datasets: {sorted(a)} vs {sorted(b)}")
    bad = [k for k in a if a[k] != b[k]]
    if bad:
        fail(f"datasets differ between {ref} and {out}: {bad[:5]}")
    print(f"{len(a)} datasets bitwise identical: {out} == {ref}")


def cuda_devices():
    p = run(["--version"])
    for line in p.stdout.splitlines():
        if line.startswith("CUDA devices:"):
            return int(line.split(":")[1].split()[0])
    return 0


def partitioned(op):
    return "partitioned: yes" in run(["ops", op]).stdout


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("room", choices=sorted(OPS))
    ap.add_argument("--np", type=int, default=1)
    ap.add_argument("--backend", default="cpu", choices=["cpu", "cuda"])
    a = ap.parse_args()
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
    if partitioned(t["op"]):
        runs.append(("partitioned", {"distribute": "partitioned"}))
    for name, keys in runs:
        run(["run", job(name, a.backend, **keys)], np=a.np)
        same(ref, os.path.join(d, name + ".h5"), rtol)
    print(f"{a.room} on {a.np} rank(s), {a.backend}: {', '.join(n for n, _ in runs)} match the reference")
    return 0


if __name__ == "__main__":
    sys.exit(main())
