#!/usr/bin/env python3
"""Partitioned Polylla on pinched inputs equals the one-rank output bitwise:
the pinch repair (mb_polylla.h, "Pinch repair") runs inside each rank's
whole regions, and its rule reads only edge keys and canonical lists, so
the cuts are the one-rank cuts. Inputs: the Delaunay triangulations of 300
clustered points, seed 2 (a pinched region), and of 100 k uniform points,
seed 1 (issue 28's case, one). Split over 2, 3 and 4 ranks by METIS and by
blocks; every output must also hold pinches_split > 0.

  polylla_pinch_partitioned.py
Environment: see tests/CMakeLists.txt.
"""
import os
import shutil
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "util"))
from mbtest import TMP, fail, need_module, run, same_datasets  # noqa: E402


def main():
    h5py = need_module("h5py")
    d = os.path.join(TMP, "pinch_partitioned")
    shutil.rmtree(d, ignore_errors=True)
    os.makedirs(d)
    inputs = []
    for n, seed, dist in ((300, 2, "clustered"), (100000, 1, "uniform")):
        out = os.path.join(d, f"delaunay{n}.node")
        run(["generate", "delaunay", "--points", n, "--seed", seed, "--distribution", dist,
             "-o", out])
        inputs.append(out)
    coll = os.path.join(d, "inputs.h5")
    run(["import"] + inputs + ["-o", coll])

    def job(name, extra=""):
        path = os.path.join(d, name + ".yaml")
        with open(path, "w") as f:
            f.write(f"input: {coll}\noutput: {d}/{name}.h5\nbackend: cpu\n{extra}"
                    "stages:\n  - {op: polylla}\n")
        return path

    run(["run", "-q", job("ref")])
    ref = os.path.join(d, "ref.h5")
    with h5py.File(ref, "r") as f:
        cuts = {n: int(g.attrs["pinches_split"]) for n, g in f["meshes"].items()}
    print("pinches split (one rank):", cuts)
    if not all(c > 0 for c in cuts.values()):
        fail(f"an input has no pinch, so the test would not test the repair: {cuts}")
    for np in (2, 3, 4):
        for part in ("metis", "blocks"):
            name = f"np{np}_{part}"
            run(["run", "-q", job(name, f"distribute: partitioned\npartitioner: {part}\n")], np=np)
            same_datasets(ref, os.path.join(d, name + ".h5"))
            with h5py.File(os.path.join(d, name + ".h5"), "r") as f:
                got = {n: int(g.attrs["pinches_split"]) for n, g in f["meshes"].items()}
            if got != cuts:
                fail(f"{name}: pinches_split {got}, one rank {cuts}")
    print("PASS: 2, 3 and 4 ranks (metis, blocks) bitwise the one-rank output")
    return 0


if __name__ == "__main__":
    sys.exit(main())
