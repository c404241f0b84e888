#!/usr/bin/env python3
"""Partitioned Polylla's slab path (src/ops/polylla/mb_polylla_slab.c: each
rank meshes its own face rows, only the regions that cross the cut move)
equals the one-rank output bitwise, and is taken exactly where it applies.

Inputs: a grid of 4 vertices, 2 triangles (more ranks than rows: some ranks hold
no triangle), grids of 20 k and 100 k vertices (one region crosses each cut),
Delaunay triangulations of 20 000 uniform and 3 000 clustered points
(generate's Hilbert numbering: regions crossing the cut on several ranks,
rounds of labels), and the same uniform triangulation with its triangles
shuffled (each rank's rows scattered over the square: the slab path must
decline and the general path run), and the 20 k grid with a degenerate
triangle in the last rank's rows (the slab path hands it to the general
path, whose message names the whole mesh's row, as one rank's does; exit
1: the other ranks, whose CPU backend gave their rows' faces up, give them
back), and the same grid with a triangle repeated in the last rank's rows
(an edge of three triangles, found there after that rank gave its faces
up: the general path names the same triangle as one rank; exit 1). Split over 2, 3 and 4 ranks with
`partitioner: blocks`; the log (-v) must name the path; with
MB_POLYLLA_GENERAL=1 the general path gives the same bits; one run on 3
OpenMP threads a rank.

  polylla_slab_path.py [--gpu]
--gpu: the partitioned runs on the CUDA backend (skips, 77, without a
device), against the CPU's one-rank output.
Environment: see tests/CMakeLists.txt.
"""
import os
import re
import random
import shutil
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "util"))
from mbtest import TMP, cuda_devices, fail, run, same_datasets  # noqa: E402


def shuffle_ele(src, dst, seed):
    """Triangle's .ele with its triangles in a random order."""
    with open(src) as f:
        lines = [ln for ln in f.read().splitlines() if ln.strip() and not ln.startswith("#")]
    head, rows = lines[0], lines[1:]
    random.Random(seed).shuffle(rows)
    with open(dst, "w") as f:
        f.write(head + "\n")
        for i, ln in enumerate(rows):
            f.write(" ".join([str(i)] + ln.split()[1:]) + "\n")


def run_failing(args, np):
    """meshbatch args on np ranks under mpirun, exit code 1 expected. On one
    rank with mpirun's wait before its SIGTERM and its SIGKILL at 0 s (Open
    MPI's odls_base_sigkill_timeout, 1 s): after a rank exits non-zero,
    mpirun 4.1 signals its ranks and sleeps 1 s before each signal even
    where they have all exited (ESRCH); a lone rank has exited by then, and
    the 2 s were most of the run. On more ranks the default stays (a rank
    still printing when another exits keeps its grace)."""
    if np != 1:
        return run(args, np=np, expect=1)
    os.environ["OMPI_MCA_odls_base_sigkill_timeout"] = "0"
    try:
        return run(args, np=np, expect=1)
    finally:
        del os.environ["OMPI_MCA_odls_base_sigkill_timeout"]


def main():
    gpu = "--gpu" in sys.argv[1:]
    if gpu and cuda_devices() < 1:
        print("SKIP: no CUDA device")
        return 77
    d = os.path.join(TMP, "polylla_slab_path" + ("_gpu" if gpu else ""))
    shutil.rmtree(d, ignore_errors=True)
    os.makedirs(d)
    made = []
    for n in (4, 20000, 100000):
        out = os.path.join(d, f"grid{n}.node")
        run(["generate", "grid2d", "--vertices", n, "-o", out, "--name", f"grid{n}"])
        made.append(out)
    for n, seed, dist in ((20000, 4, "uniform"), (3000, 5, "clustered")):
        out = os.path.join(d, f"del{n}.node")
        run(["generate", "delaunay", "--points", n, "--seed", seed, "--distribution", dist,
             "-o", out, "--name", f"del{n}"])
        made.append(out)
    # the same points, triangles shuffled
    shutil.copy(os.path.join(d, "del20000.node"), os.path.join(d, "shuffled.node"))
    shuffle_ele(os.path.join(d, "del20000.ele"), os.path.join(d, "shuffled.ele"), 7)
    made.append(os.path.join(d, "shuffled.node"))
    colls = {}
    for path in made:
        name = os.path.splitext(os.path.basename(path))[0]
        colls[name] = os.path.join(d, name + ".h5")
        run(["import", path, "-o", colls[name]])

    def job(name, coll, extra="", backend="cpu"):
        path = os.path.join(d, name + ".yaml")
        with open(path, "w") as f:
            f.write(f"input: {coll}\noutput: {d}/{name}.h5\nbackend: {backend}\n{extra}"
                    "stages:\n  - {op: polylla}\n")
        return path

    blocks = "distribute: partitioned\npartitioner: blocks\n"
    for name, coll in colls.items():
        run(["run", "-q", job(f"{name}_ref", coll)])
        ref = os.path.join(d, f"{name}_ref.h5")
        want = "general" if name == "shuffled" else "slab"
        for np in (2, 3, 4):
            out = f"{name}_np{np}"
            p = run(["run", "-v", job(out, coll, blocks, "cuda" if gpu else "cpu")], np=np)
            if f"partitioned Polylla by the {want} path" not in p.stdout + p.stderr:
                fail(f"{out}: the log does not say the {want} path was taken")
            same_datasets(ref, os.path.join(d, out + ".h5"))
        if name == "del20000":  # the passes on several OpenMP threads
            os.environ["OMP_NUM_THREADS"] = "3"
            out = f"{name}_threads"
            p = run(["run", "-v", job(out, coll, blocks, "cuda" if gpu else "cpu")], np=2)
            os.environ["OMP_NUM_THREADS"] = "1"
            if "partitioned Polylla by the slab path" not in p.stdout + p.stderr:
                fail(f"{out}: the log does not say the slab path was taken")
            same_datasets(ref, os.path.join(d, out + ".h5"))
        os.environ["MB_POLYLLA_GENERAL"] = "1"
        out = f"{name}_general"
        p = run(["run", "-v", job(out, coll, blocks)], np=3)
        del os.environ["MB_POLYLLA_GENERAL"]
        if "partitioned Polylla by the general path" not in p.stdout + p.stderr:
            fail(f"{out}: MB_POLYLLA_GENERAL=1 did not give the general path")
        same_datasets(ref, os.path.join(d, out + ".h5"))
    if not gpu:  # a fault in one rank's rows: the general path names it, in whole-mesh rows
        src = os.path.join(d, "grid20000.ele")
        with open(src) as f:
            lines = f.read().splitlines()
        bad_row = 3 * (len(lines) - 1) // 4  # in the last rank's rows on 2-4 ranks
        cols = lines[1 + bad_row].split()
        cols[3] = cols[2]  # a repeated vertex: zero area
        lines[1 + bad_row] = " ".join(cols)
        shutil.copy(os.path.join(d, "grid20000.node"), os.path.join(d, "faulty.node"))
        with open(os.path.join(d, "faulty.ele"), "w") as f:
            f.write("\n".join(lines) + "\n")
        coll = os.path.join(d, "faulty.h5")
        run(["import", os.path.join(d, "faulty.node"), "-o", coll])
        for np in (1, 3):
            p = run_failing(["run", job(f"faulty_np{np}", coll, blocks if np > 1 else "")], np)
            if f"triangle {bad_row} (0-based) is degenerate" not in p.stdout + p.stderr:
                fail(f"faulty_np{np}: the message does not name triangle {bad_row}")
        # an edge used twice one way (a triangle repeated) inside the last rank's
        # rows: found after that rank gave its faces up for their corners; every
        # rank gives them back and the general path names both rows
        with open(src) as f:
            lines = f.read().splitlines()
        cols, nxt = lines[1 + bad_row].split(), lines[2 + bad_row].split()
        lines[1 + bad_row] = " ".join([cols[0]] + nxt[1:])
        with open(os.path.join(d, "twice.ele"), "w") as f:
            f.write("\n".join(lines) + "\n")
        shutil.copy(os.path.join(d, "grid20000.node"), os.path.join(d, "twice.node"))
        coll = os.path.join(d, "twice.h5")
        run(["import", os.path.join(d, "twice.node"), "-o", coll])
        first = None  # the first triangle one rank names (the general path has its own words)
        for np in (1, 3):
            p = run_failing(["run", job(f"twice_np{np}", coll, blocks if np > 1 else "")], np)
            m = re.search(r"mesh 'twice': .*triangle (\d+) \(0-based\).*not a planar manifold "
                          r"triangulation", p.stdout + p.stderr)
            if not m:
                fail(f"twice_np{np}: no message naming the edge's triangle")
            first = first or m.group(1)
            if m.group(1) != first:
                fail(f"twice_np{np}: names triangle {m.group(1)}, one rank {first}")
    print("PASS: the slab path on 2-4 ranks (and the general path) bitwise the one-rank output")
    return 0


if __name__ == "__main__":
    sys.exit(main())
