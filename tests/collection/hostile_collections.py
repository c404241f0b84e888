"""Collections from other people (issue 28, "Faults"): datasets whose data
would come from outside the collection, and datasets that declare sizes
their file does not hold.

- A field stored with HDF5 external raw storage in a host file, and a
  virtual dataset mapping another file's data: `info` and `run` refuse the
  dataset naming it ("external raw storage", "virtual dataset"), the host
  file's bytes appear in no output, and the valid dataset beside it is
  processed and written.
- A surface declaring 2^40 triangles (an unallocated dataset: the file is a
  few KB) and a grid3d whose field declares (2^20)^3 points beside two
  valid datasets: the run reports each corrupt dataset by name as corrupt
  (not a false "no room for the output"), exits 1, and the output holds the
  valid datasets, equal to a run on them alone.

`hostile_collections.py [--np N] [--distribute per-mesh|partitioned]`: the
runs on N ranks (1: without the launcher). Needs h5py and numpy (skipped
with 77 where absent).
"""
import argparse
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "util"))
from mbtest import fail, fresh, need_module, new_dataset_group, run  # noqa: E402


OPT = argparse.Namespace(np=1, distribute="per-mesh")


def job(path, inputs, output, stage):
    with open(path, "w") as f:
        f.write("input:\n" + "".join(f"  - {i}\n" for i in inputs))
        f.write(f"output: {output}\nbackend: cpu\ndistribute: {OPT.distribute}\n")
        f.write(f"stages:\n  - {stage}\n")
    return path


def run_job(jp, expect):
    return run(["run", jp], np=OPT.np if OPT.np > 1 else None, expect=expect)


def tetra(g, np, field=None):
    g["vertices"] = np.array([[0, 0, 0], [1, 0, 0], [0, 1, 0], [0, 0, 1]], dtype="f8")
    g["triangles"] = np.array([[0, 2, 1], [0, 1, 3], [0, 3, 2], [1, 2, 3]], dtype="i8")


def outside_storage(d, np, h5py):
    secret = os.path.join(d, "host_secret.bin")
    with open(secret, "wb") as f:
        f.write(np.arange(4, dtype="f8").tobytes() * 3)
    ext = os.path.join(d, "external.h5")
    with h5py.File(ext, "w") as f:
        tetra(new_dataset_group(f, "good", index=0), np)
        g = new_dataset_group(f, "leaky", index=1)
        tetra(g, np)
        g.create_group("fields").create_dataset("stolen", (4, 3), dtype="f8",
                                                 external=[(secret, 0, 96)])
    src = os.path.join(d, "source.h5")
    with h5py.File(src, "w") as f:
        f["data"] = np.ones((4, 3))
    virt = os.path.join(d, "virtual.h5")
    with h5py.File(virt, "w") as f:
        tetra(new_dataset_group(f, "good", index=0), np)
        g = new_dataset_group(f, "mapped", index=1)
        tetra(g, np)
        layout = h5py.VirtualLayout(shape=(4, 3), dtype="f8")
        layout[:] = h5py.VirtualSource(src, "data", shape=(4, 3))
        g.create_group("fields").create_virtual_dataset("remote", layout)
    for path, bad, what in ((ext, "leaky", "external raw storage"),
                            (virt, "mapped", "virtual dataset")):
        name = os.path.basename(path)
        p = run(["info", path], expect=None)
        if what not in p.stdout + p.stderr or f"/meshes/{bad}/fields/" not in p.stdout + p.stderr:
            fail(f"info {name}: the {what} of '{bad}' is not named:\n{p.stdout}{p.stderr}")
        out = os.path.join(d, "out_" + name)
        p = run_job(job(os.path.join(d, name + ".yaml"), [path], out,
                        "{op: laplacian, iterations: 1}"), expect=1)
        if what not in p.stderr or f"/meshes/{bad}/fields/" not in p.stderr:
            fail(f"run {name}: the {what} is not refused naming the dataset:\n{p.stderr}")
        with h5py.File(out, "r") as f:
            if sorted(f["meshes"].keys()) != ["good"]:
                fail(f"run {name}: the output holds {sorted(f['meshes'].keys())}, not ['good']")
        if open(out, "rb").read().find(open(secret, "rb").read()[8:40]) >= 0:
            fail(f"run {name}: the host file's bytes are in the output")
        print(f"{name}: '{bad}' refused ({what}), 'good' written")


def declared_sizes(d, np, h5py):
    path = os.path.join(d, "declared.h5")
    with h5py.File(path, "w") as f:
        tetra(new_dataset_group(f, "a_good", index=0), np)
        g = new_dataset_group(f, "b_huge", index=1)
        g["vertices"] = np.zeros((4, 3))
        g.create_dataset("triangles", (1 << 40, 3), dtype="i8")  # never written: no storage
        g = new_dataset_group(f, "c_grid", kind="grid3d", index=2)
        g.attrs["shape"] = np.array([1 << 20] * 3, dtype="i8")
        g.attrs["origin"] = np.zeros(3)
        g.attrs["spacing"] = np.ones(3)
        g.create_group("fields").create_dataset("u", (1 << 20,) * 3, dtype="f8",
                                                 chunks=(16, 16, 16))
        tetra(new_dataset_group(f, "d_good", index=3), np)
    good = os.path.join(d, "good_only.h5")
    with h5py.File(good, "w") as f:
        tetra(new_dataset_group(f, "a_good", index=0), np)
        tetra(new_dataset_group(f, "d_good", index=1), np)
    stage = "{op: laplacian, iterations: 2}"
    out = os.path.join(d, "out.h5")
    p = run_job(job(os.path.join(d, "declared.yaml"), [path], out, stage), expect=1)
    for bad in ("/meshes/b_huge/triangles", "/meshes/c_grid/fields/u"):
        if bad not in p.stderr or "corrupt" not in p.stderr:
            fail(f"the corrupt dataset {bad} is not reported:\n{p.stderr}")
    if "no room" in p.stderr or "no space" in p.stderr:
        fail(f"a corrupt dataset is reported as a full disk:\n{p.stderr}")
    ref = os.path.join(d, "ref.h5")
    run_job(job(os.path.join(d, "ref.yaml"), [good], ref, stage), expect=0)
    with h5py.File(out, "r") as f, h5py.File(ref, "r") as r:
        if sorted(f["meshes"].keys()) != ["a_good", "d_good"]:
            fail(f"the output holds {sorted(f['meshes'].keys())}, not the two valid datasets")
        for m in ("a_good", "d_good"):
            if f[f"meshes/{m}/vertices"][()].tobytes() != r[f"meshes/{m}/vertices"][()].tobytes():
                fail(f"{m} differs from a run on the valid datasets alone")
    print("declared sizes: b_huge (2^40 triangles) and c_grid ((2^20)^3) reported corrupt, "
          "a_good and d_good written")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--np", type=int, default=1)
    ap.add_argument("--distribute", default="per-mesh", choices=["per-mesh", "partitioned"])
    ap.parse_args(namespace=OPT)
    np = need_module("numpy")
    h5py = need_module("h5py")
    d = fresh(f"hostile_collections_{OPT.np}_{OPT.distribute}")
    outside_storage(d, np, h5py)
    declared_sizes(d, np, h5py)
    print("PASS")


if __name__ == "__main__":
    main()
