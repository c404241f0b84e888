#!/usr/bin/env python3
"""Partitioned Polylla at a million triangles on 4 CPU ranks equals the
one-rank output bitwise (issue 27, point 1: the size where the host steps
of the partitioned path must hold up, run in CI). Input: the Delaunay
triangulation of 500 000 uniform points, seed 3 (about 1.0 M triangles),
split by METIS and by blocks.

  polylla_partitioned_1m.py
Environment: see tests/CMakeLists.txt.
"""
import os
import shutil
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "util"))
from mbtest import TMP, fail, need_module, run, same_datasets  # noqa: E402


def main():
    h5py = need_module("h5py")
    d = os.path.join(TMP, "polylla_partitioned_1m")
    shutil.rmtree(d, ignore_errors=True)
    os.makedirs(d)
    node = os.path.join(d, "delaunay.node")
    run(["generate", "delaunay", "--points", 500000, "--seed", 3, "-o", node])
    coll = os.path.join(d, "input.h5")
    run(["import", node, "-o", coll])
    with h5py.File(coll, "r") as f:
        (mesh,) = f["meshes"].values()
        nt = mesh["faces"].shape[0] if "faces" in mesh else mesh["triangles"].shape[0]
    if nt < 990000:
        fail(f"the input has {nt} triangles, fewer than the million this test is for")
    print(f"input: {nt} triangles")

    def job(name, extra=""):
        path = os.path.join(d, name + ".yaml")
        with open(path, "w") as f:
            f.write(f"input: {coll}\noutput: {d}/{name}.h5\nbackend: cpu\n{extra}"
                    "stages:\n  - {op: polylla}\n")
        return path

    run(["run", "-q", job("ref")])
    ref = os.path.join(d, "ref.h5")
    for part in ("metis", "blocks"):
        name = f"np4_{part}"
        run(["run", "-q", job(name, f"distribute: partitioned\npartitioner: {part}\n")], np=4)
        same_datasets(ref, os.path.join(d, name + ".h5"))
    print("PASS: 4 ranks (metis, blocks) bitwise the one-rank output at", nt, "triangles")
    return 0


if __name__ == "__main__":
    sys.exit(main())
