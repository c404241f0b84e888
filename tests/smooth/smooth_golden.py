#!/usr/bin/env python3
"""Smoothing outputs stay bitwise identical across refactors.

Runs every smoothing rule (taubin and laplacian x weights x boundary rules,
chained in one job) on the CPU over meshes built here deterministically and
the repository's spot.obj, and compares the SHA-256 of every output
dataset's vertex array (float64, little endian) with the values recorded
from meshbatch 0.1.0 at commit 656697f, before smoothing moved into the op
registry. Run with --record to print new values.
Exit code 0 passes, other fails. Environment: see tests/CMakeLists.txt.
"""
import hashlib
import os
import shutil
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "util"))
from mbtest import EXE, SRC, TMP, noisy_grid_obj  # noqa: E402

# (mesh, sha256 of the smoothed vertex coordinates) recorded at 656697f.
GOLDEN = {
    "quad": "ba34e9adbef3e26b3061cae264f9c9a2354796c0f811b7e34789eec125aa754a",
    "spot": "95ad6971b60a95373bfdd61219aa0a9fc56de4a0dd25d0a668bdae886a2e6c78",
    "tri": "2ee62fe50a7c5d0600cbe08d86c78874ed3f3f9ef90493cb4fb80a37f3e7fb1a",
}


def stages(quads):
    weights = ["uniform", "inverse_distance"] + ([] if quads else ["cotangent"])
    out = []
    for w in weights:
        for b in ("free", "fixed", "boundary_curve"):
            out.append(f"  - {{op: taubin, lambda: 0.5, mu: -0.53, iterations: 3, weights: {w}, boundary: {b}}}")
            out.append(f"  - {{op: laplacian, lambda: 0.3, iterations: 2, weights: {w}, boundary: {b}}}")
    return "\n".join(out) + "\n"


def vertex_hashes(path):
    """sha256 of each mesh's vertex array (float64, little endian)."""
    import h5py
    out = {}
    with h5py.File(path, "r") as f:
        def visit(name, obj):
            if isinstance(obj, h5py.Dataset) and name.endswith("/vertices"):
                data = obj[...].astype("<f8")
                out[name.split("/")[-2]] = hashlib.sha256(data.tobytes()).hexdigest()
        f.visititems(visit)
    return out


def main():
    try:
        import h5py  # noqa: F401
    except ImportError:
        print("SKIP: python module h5py is not installed")
        return 77
    d = os.path.join(TMP, "golden")
    shutil.rmtree(d, ignore_errors=True)
    os.makedirs(d)
    results = {}
    for name, quads in (("tri", False), ("quad", True), ("spot", False)):
        mesh = (os.path.join(SRC, "data", "meshes", "spot.obj") if name == "spot"
                else noisy_grid_obj(os.path.join(d, name + ".obj"), 25, quads))
        job = os.path.join(d, name + ".yaml")
        with open(job, "w") as f:
            f.write(f"input: {mesh}\noutput: {d}/{name}.h5\nbackend: cpu\nstages:\n" + stages(quads))
        p = subprocess.run([EXE, "run", job], capture_output=True, text=True)
        print(p.stdout, p.stderr, sep="")
        if p.returncode != 0:
            print(f"FAIL: meshbatch run {job} exited {p.returncode}")
            return 1
        results.update(vertex_hashes(os.path.join(d, name + ".h5")))
    if "--record" in sys.argv:
        for k, v in sorted(results.items()):
            print(f'    "{k}": "{v}",')
        return 0
    if results != GOLDEN:
        for k in sorted(set(results) | set(GOLDEN)):
            print(f"{k}: got {results.get(k)} recorded {GOLDEN.get(k)}")
        print("FAIL: smoothing output differs from the recorded one")
        return 1
    print(f"{len(results)} smoothed meshes bitwise identical to those of 656697f")
    return 0


if __name__ == "__main__":
    sys.exit(main())
