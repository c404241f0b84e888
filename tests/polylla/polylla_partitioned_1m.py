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


def check_memory_report(text):
    """The per-rank report states each rank's memory: peak RSS, the RSS at
    the program's start, the rank's share of the input and the ratio
    (peak - start) / share, consistent with one another."""
    lines = text.splitlines()
    head = [i for i, l in enumerate(lines) if "(peak - start) / share" in l]
    if len(head) != 1:
        fail("no per-rank report with the memory columns")
    rows = lines[head[0] + 1:head[0] + 5]
    for r, line in enumerate(rows):
        f = line.split()
        if len(f) < 8 or f[0] != str(r) or f[-2] != "MB":
            fail(f"rank {r}'s report line is not as expected: {line!r}")
        peak, start, share, ratio = float(f[-7]), float(f[-5]), float(f[-3]), float(f[-1])
        if not (0 < start < peak and share > 0):
            fail(f"rank {r}: peak {peak}, start {start}, share {share} MB")
        lo = (peak - start - 1) / (share + 0.5)  # the MB printed rounded to 1
        hi = (peak - start + 1) / (share - 0.5)
        if not lo - 0.01 <= ratio <= hi + 0.01:
            fail(f"rank {r}: ratio {ratio} against ({peak} - {start}) / {share} (rounded)")
    print("the per-rank report states each rank's memory:", *(l.strip() for l in rows), sep="\n  ")


def main():
    h5py = need_module("h5py")
    d = os.path.join(TMP, "polylla_partitioned_1m")
    shutil.rmtree(d, ignore_errors=True)
    os.makedirs(d)
    # straight into a collection: the same vertices and triangles as through
    # Triangle's text files and `import` (28 MB of text written, parsed)
    coll = os.path.join(d, "input.h5")
    run(["generate", "delaunay", "--points", 500000, "--seed", 3, "-o", coll])
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
        quiet = ["-q"] if part == "metis" else []  # blocks: the per-rank report read below
        p = run(["run"] + quiet + [job(name, f"distribute: partitioned\npartitioner: {part}\n")],
                np=4)
        same_datasets(ref, os.path.join(d, name + ".h5"))
        if not quiet:
            check_memory_report(p.stdout + p.stderr)
    print("PASS: 4 ranks (metis, blocks) bitwise the one-rank output at", nt, "triangles")
    return 0


if __name__ == "__main__":
    sys.exit(main())
