"""Datasets over 2 GiB (label `large`): MPI-IO moves at most 2^31 - 1 bytes
per call, so meshbatch reads and writes such datasets in pieces
(io/mb_collection_common.c, mb_h5_block_transfer).

- A surface whose vertices dataset is 2^31 + 5,592 bytes (89,478,486
  vertices in float64, the first count that failed before) with three
  triangles, written here with h5py: a Taubin iteration on 1 and 2 ranks,
  per-mesh and partitioned (`partitioner: blocks`, so each rank reads and
  writes its slab). Every output's vertices equal the input's bitwise
  outside the triangles' six vertices, and the four outputs are bitwise
  identical.
- A grid3d float64 field of 2^31 + 1 MiB (512 x 512 x 1025 points) from
  `meshbatch generate grid`: the z derivative on 1 rank per-mesh and on
  2 ranks partitioned (Cartesian blocks by hyperslab): both outputs are
  bitwise identical, and the input field is read back unchanged.

Needs h5py and numpy, about 20 GB of free disk in the test folder and
about 16 GB of memory; skipped (77) with the reason where they are absent.
"""
import hashlib
import os
import shutil
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "util"))
from mbtest import SKIP, TMP, fail, need_module, new_dataset_group, run  # noqa: E402

NV = 89_478_486                      # 24 * NV > 2^31 - 1
TRIS = [[0, 1, 2], [1, 3, 2], [NV - 3, NV - 2, NV - 1]]
GRID = (1025, 512, 512)              # z, y, x: 8 * 268,697,600 bytes > 2^31
ROWS = 1 << 22                       # rows per h5py block


def write_surface(path, np, h5py):
    with h5py.File(path, "w") as f:
        g = new_dataset_group(f, "big")
        d = g.create_dataset("vertices", (NV, 3), dtype="f8")
        for s in range(0, NV, ROWS):
            i = np.arange(s, min(NV, s + ROWS), dtype=np.float64)
            d[s:s + len(i)] = np.stack([np.sin(i * 1e-3), np.cos(i * 1e-3), i * 1e-6], axis=1)
        g.create_dataset("triangles", data=np.array(TRIS, dtype="i8"))


def digest(dset, np):
    """SHA-256 of a dataset's bytes, read in blocks along its first axis."""
    h = hashlib.sha256()
    for s in range(0, dset.shape[0], ROWS if dset.ndim == 2 else 64):
        h.update(np.ascontiguousarray(dset[s:s + (ROWS if dset.ndim == 2 else 64)]).tobytes())
    return h.hexdigest()


def check_surface_outside_triangles(src, out, np, h5py):
    """Rows of out's vertices outside the triangles equal src's bitwise."""
    touched = sorted({v for t in TRIS for v in t})
    with h5py.File(src, "r") as a, h5py.File(out, "r") as b:
        x, y = a["meshes/big/vertices"], b["meshes/big/vertices"]
        if y.shape != (NV, 3) or y.dtype != np.float64:
            fail(f"{out}: vertices {y.shape} {y.dtype}, expected ({NV}, 3) float64")
        for s in range(0, NV, ROWS):
            u, v = x[s:s + ROWS].view(np.uint64), y[s:s + ROWS].view(np.uint64)
            bad = np.nonzero((u != v).any(axis=1))[0] + s
            extra = [int(r) for r in bad if r not in touched]
            if extra:
                fail(f"{out}: vertex rows {extra[:5]} differ from the input")
        return digest(y, np)


def job(path, inp, out, extra, stage):
    with open(path, "w") as f:
        f.write(f"input: {inp}\noutput: {out}\nbackend: cpu\n{extra}stages:\n  - {stage}\n")
    return path


def main():
    np = need_module("numpy")
    h5py = need_module("h5py")
    d = os.path.join(TMP, "large")
    shutil.rmtree(d, ignore_errors=True)
    os.makedirs(d)
    free = shutil.disk_usage(d).free
    if free < 20e9:
        print(f"SKIP: {free / 1e9:.1f} GB free in {d}; this test writes about 20 GB")
        sys.exit(SKIP)
    mem = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    if mem < 16e9:
        print(f"SKIP: {mem / 1e9:.1f} GB of memory; this test needs about 16 GB")
        sys.exit(SKIP)

    src = os.path.join(d, "big.h5")
    write_surface(src, np, h5py)
    print(f"surface: {NV} vertices, vertices dataset {24 * NV} bytes (2^31 = {2 ** 31})")
    taubin = "{op: taubin, lambda: 0.5, mu: -0.53, iterations: 1}"
    digests = {}
    for np_ranks in (1, 2):
        for name, extra in (("per-mesh", ""),
                            ("partitioned", "distribute: partitioned\npartitioner: blocks\n")):
            out = os.path.join(d, f"out_{name}_{np_ranks}.h5")
            run(["run", job(os.path.join(d, "job.yaml"), src, out, extra, taubin)], np=np_ranks)
            digests[(name, np_ranks)] = check_surface_outside_triangles(src, out, np, h5py)
            print(f"surface, {name}, {np_ranks} rank(s): written and read back, "
                  f"sha256 {digests[(name, np_ranks)][:16]}")
            os.remove(out)
    if len(set(digests.values())) != 1:
        fail(f"the surface outputs differ: {digests}")
    os.remove(src)
    print("surface: the 4 outputs are bitwise identical")

    grid = os.path.join(d, "grid.h5")
    run(["generate", "grid", "--shape", ",".join(map(str, GRID)), "--field", "u=sines",
         "--dtype", "float64", "--name", "g", "-o", grid])
    with h5py.File(grid, "r") as f:
        u = f["meshes/g/fields/u"]
        print(f"grid: field u {u.shape}, {u.size * 8} bytes")
        ref_u = digest(u, np)
    outs = {}
    for np_ranks, extra in ((1, ""), (2, "distribute: partitioned\n")):
        out = os.path.join(d, f"grid_out_{np_ranks}.h5")
        run(["run", job(os.path.join(d, "grid.yaml"), grid, out, extra,
                        "{op: derivative, axis: z}")], np=np_ranks)
        with h5py.File(out, "r") as f:
            fields = f["meshes/g/fields"]
            outs[np_ranks] = {k: digest(fields[k], np) for k in fields}
        if outs[np_ranks].get("u") != ref_u:
            fail(f"grid, {np_ranks} rank(s): the field u was not carried through unchanged")
        print(f"grid, {np_ranks} rank(s): fields {sorted(outs[np_ranks])} written and read back")
        os.remove(out)
    if outs[1] != outs[2]:
        fail(f"grid: 1 rank per-mesh and 2 ranks partitioned differ: {outs}")
    print("grid: 1 rank per-mesh and 2 ranks partitioned are bitwise identical")
    shutil.rmtree(d, ignore_errors=True)
    print("large datasets: all checks passed")


if __name__ == "__main__":
    main()
