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
import shutil
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "util"))
from mbtest import (DATA, SKIP, SRC, TMP, compare, cuda_devices, noisy_grid_obj,  # noqa: E402
                    run, same_datasets)


# ----------------------------------------------------------------- inputs

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

def same(ref, out, rtol):
    """Bitwise (every dataset with h5py, else meshbatch compare) where the op
    must be exact; else meshbatch compare: kinds, faces and face fields
    bitwise, vertices within rtol."""
    if rtol:
        compare(ref, out, rtol)
    else:
        same_datasets(ref, out)


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
