#!/usr/bin/env python3
"""Full disks, size estimates and small output-path faults (issue 28).

`disk_test.py CASE [--np N] [--distribute per-mesh|partitioned]` runs one
case; exit 0 passes, 77 skips (no tmpfs can be mounted: needs root), other
fails. Environment as for cli_test.py (tests/util/mbtest.py).

Cases:
  full_grid     a grid job with a time series (heat, every) on a small tmpfs
  full_surface  a batch of surfaces on a small tmpfs
      both: refused before compute with the figures ("no space for the
      output"); with the check skipped (MESHBATCH_SPACE_CHECK=0) the write
      itself fills the disk: exit 1 with "no space", never a crash, no
      temporary or lock file left, the earlier output at that path kept
      byte for byte
  xdmf_full     the HDF5 file fits, its XDMF companions do not: "no space"
  heat_huge     heat, steps 100000000, every 1, on an 8^3 grid: refused
                before compute with the estimate (disk, then memory)
  output_paths  `o.h5/` makes no folder; /dev/null and x.obj refused clearly
  bad_numbers   a .npy with trailing bytes, hex floats and inf in OBJ refused
"""
import argparse
import os
import shutil
import subprocess
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "util"))
from mbtest import SKIP, SRC, TMP, fail, run  # noqa: E402


def fresh(name):
    d = os.path.join(TMP, name)
    if os.path.ismount(os.path.join(d, "mnt")):
        subprocess.run(["umount", os.path.join(d, "mnt")], capture_output=True)
    shutil.rmtree(d, ignore_errors=True)
    os.makedirs(d)
    return d


def mount_tmpfs(mnt, size):
    os.makedirs(mnt, exist_ok=True)
    p = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", mnt],
                       capture_output=True, text=True)
    if p.returncode != 0:
        print(f"SKIP: cannot mount a {size} tmpfs here (needs root and mount rights): "
              f"{p.stderr.strip()}")
        sys.exit(SKIP)


def umount(mnt):
    subprocess.run(["umount", mnt], capture_output=True)


def job(path, inputs, output, stage, **keys):
    with open(path, "w") as f:
        f.write("input:\n" + "".join(f"  - {i}\n" for i in inputs))
        f.write(f"output: {output}\nbackend: cpu\n")
        f.writelines(f"{k}: {v}\n" for k, v in keys.items())
        f.write(f"stages:\n  - {stage}\n")
    return path


def snapshot(folder):
    return {n: open(os.path.join(folder, n), "rb").read() for n in sorted(os.listdir(folder))}


def with_env(extra, fn):
    old = {k: os.environ.get(k) for k in extra}
    os.environ.update(extra)
    try:
        return fn()
    finally:
        for k, v in old.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


def fill_the_disk(a, d, mnt, small, inputs, stage, small_stage):
    """The common part of full_grid and full_surface (see the module text)."""
    out = os.path.join(mnt, "o.h5")
    keys = {"distribute": a.distribute} if a.distribute != "per-mesh" else {}
    np_ = a.np if a.np > 1 else None
    run(["run", job(os.path.join(d, "small.yaml"), small, out, small_stage, **keys), "-q"],
        np=np_)
    earlier = snapshot(mnt)
    print("earlier output:", {n: len(b) for n, b in earlier.items()})
    jp = job(os.path.join(d, "big.yaml"), inputs, out, stage, **keys)
    t0 = time.monotonic()
    p = run(["run", jp], np=np_, expect=1)
    if "no room for the output" not in p.stderr or "MB are free" not in p.stderr \
            or "no space" not in p.stderr or "nothing was computed" not in p.stderr:
        fail("the output larger than the disk is not refused before compute with the figures")
    print(f"refused before compute in {time.monotonic() - t0:.2f} s")
    if snapshot(mnt) != earlier:
        fail("a refused run changed the output folder")
    p = with_env({"MESHBATCH_SPACE_CHECK": "0"}, lambda: run(["run", jp], np=np_, expect=None))
    if p.returncode != 1:
        fail(f"the run that fills the disk exits {p.returncode}, not 1 (139: the segfault)")
    if "no space" not in p.stderr.lower():
        fail("the full disk is not reported as 'no space'")
    if "Segmentation" in p.stderr or "signal" in p.stderr.lower():
        fail("the run crashed")
    now = snapshot(mnt)
    left = [n for n in now if n not in earlier]
    if left:
        fail(f"files left on the full disk: {left}")
    if now != earlier:
        fail("the earlier output was not kept byte for byte")
    print(f"full disk on {a.np} rank(s), {a.distribute}: exit 1 with 'no space', nothing left, "
          f"the earlier output ({len(earlier)} files) kept")


def case_full_grid(a):
    d = fresh(f"disk_full_grid_{a.np}_{a.distribute}")
    grid = os.path.join(d, "g.h5")
    run(["generate", "grid", "--shape", "32,32,32", "--field", "u=sines", "-o", grid])
    mnt = os.path.join(d, "mnt")
    mount_tmpfs(mnt, "2m")
    try:
        fill_the_disk(a, d, mnt, [grid], [grid], "{op: heat, dt: 1e-5, steps: 40, every: 4}",
                      "{op: heat, dt: 1e-5, steps: 1}")
    finally:
        umount(mnt)


def case_full_surface(a):
    d = fresh(f"disk_full_surface_{a.np}_{a.distribute}")
    inputs = []
    for k, nv in enumerate((2000, 20000, 20000, 20000)):
        p = os.path.join(d, f"s{k}.ply")
        run(["generate", "sphere", "--vertices", nv, "--seed", k + 1, "-o", p])
        inputs.append(p)
    coll = os.path.join(d, "in.h5")
    run(["import"] + inputs + ["-o", coll])
    mnt = os.path.join(d, "mnt")
    mount_tmpfs(mnt, "2m")
    try:
        fill_the_disk(a, d, mnt, inputs[:1], [coll], "{op: umbrella}", "{op: laplacian, iterations: 1}")
    finally:
        umount(mnt)


def case_xdmf_full(a):
    """Measure the output on a large disk, then mount a tmpfs with room for
    the HDF5 file (and the lock) but not for its XDMF companions."""
    d = fresh("disk_xdmf_full")
    grid = os.path.join(d, "g.h5")
    run(["generate", "grid", "--shape", "16,16,16", "--field", "u=sines", "-o", grid])
    stage = "{op: heat, dt: 1e-5, steps: 400, every: 1}"
    ref = os.path.join(d, "ref")
    os.makedirs(ref)
    run(["run", job(os.path.join(d, "ref.yaml"), [grid], os.path.join(ref, "o.h5"), stage), "-q"])
    page = 4096
    size = {n: os.path.getsize(os.path.join(ref, n)) for n in os.listdir(ref)}
    h5 = -(-size["o.h5"] // page) * page
    xdmf = sum(v for n, v in size.items() if n.endswith(".xdmf"))
    print(f"HDF5 file {size['o.h5']} bytes, XDMF companions {xdmf} bytes")
    if xdmf < 8 * page:
        fail("the XDMF companions are too small for this test")
    mnt = os.path.join(d, "mnt")
    mount_tmpfs(mnt, str(h5 + 4 * page))
    try:
        jp = job(os.path.join(d, "j.yaml"), [grid], os.path.join(mnt, "o.h5"), stage)
        p = with_env({"MESHBATCH_SPACE_CHECK": "0"}, lambda: run(["run", jp], expect=None))
        if p.returncode != 1:
            fail(f"exit {p.returncode}, expected 1")
        if "XDMF" not in p.stderr or "no space" not in p.stderr.lower():
            fail("the XDMF file that does not fit is not reported as 'no space'")
        if "Input/output error" in p.stderr:
            fail("errno read after fclose: 'Input/output error'")
        left = os.listdir(mnt)
        if left:
            fail(f"files left: {left}")
    finally:
        umount(mnt)
    print("XDMF on a full disk: 'no space', nothing left")


def case_heat_huge(a):
    d = fresh("disk_heat_huge")
    grid = os.path.join(d, "g.h5")
    run(["generate", "grid", "--shape", "8,8,8", "--field", "u=sines", "-o", grid])
    jp = job(os.path.join(d, "huge.yaml"), [grid], os.path.join(d, "out", "h.h5"),
             "{op: heat, dt: 1e-6, steps: 100000000, every: 1}")
    t0 = time.monotonic()
    p = run(["run", jp], expect=1)
    dt = time.monotonic() - t0
    if "no room for the output" not in p.stderr or "nothing was computed" not in p.stderr:
        fail("heat with 1e8 snapshots is not refused with the estimate")
    if "4.096e+05 MB" not in p.stderr:
        fail("the estimate (8^3 points x 8 bytes x 1e8 + 3 snapshots) is not stated")
    # with the disk check off (a file system whose statvfs misleads), the memory check
    p = with_env({"MESHBATCH_SPACE_CHECK": "0", "MESHBATCH_MEMORY_LIMIT": "1G"},
                 lambda: run(["run", jp], expect=1))
    if "of memory" not in p.stderr or "MESHBATCH_MEMORY_LIMIT" not in p.stderr:
        fail("heat with 1e8 snapshots is not refused for its memory")
    if os.path.exists(os.path.join(d, "out", "h.h5")):
        fail("an output was written")
    print(f"heat steps 1e8 every 1 on 8^3: refused before compute in {dt:.2f} s")


def case_output_paths(a):
    d = fresh("disk_output_paths")
    grid = os.path.join(d, "g.h5")
    run(["generate", "grid", "--shape", "8,8,8", "--field", "u=sines", "-o", grid])
    stage = "{op: grid_laplacian}"
    for out, want in ((os.path.join(d, "o.h5") + "/", "is a folder"),
                      (os.path.join(d, "sub", "o.h5") + "/", "is a folder"),
                      ("/dev/null", "is a character device, not a file"),
                      (os.path.join(d, "x.obj"), "names a mesh file"),
                      (os.path.join(d, "x.PLY"), "names a mesh file")):
        p = run(["run", job(os.path.join(d, "j.yaml"), [grid], out, stage)], expect=2)
        if want not in p.stderr:
            fail(f"output {out}: no clear message ('{want}')")
        if "in the way" in p.stderr:
            fail(f"output {out}: refused only at publication")
    for made in ("o.h5", "sub", "x.obj", "x.PLY"):
        if os.path.exists(os.path.join(d, made)):
            fail(f"a refused output made {made}")
    if [n for n in os.listdir("/dev") if n.startswith("null.")]:
        fail("a probe was left in /dev")
    print("output paths: o.h5/, /dev/null and mesh-file names refused before anything is made")


def case_bad_numbers(a):
    d = fresh("disk_bad_numbers")
    import struct
    header = "{'descr': '<f8', 'fortran_order': False, 'shape': (2, 2, 2), }"
    header += " " * (64 - 10 - len(header) - 1) + "\n"
    npy = b"\x93NUMPY\x01\x00" + struct.pack("<H", len(header)) + header.encode()
    npy += struct.pack("<8d", *range(8))
    good = os.path.join(d, "good.npy")
    open(good, "wb").write(npy)
    run(["import", good, "-o", os.path.join(d, "good.h5")])
    bad = os.path.join(d, "trailing.npy")
    open(bad, "wb").write(npy + b"\0" * 8)
    p = run(["import", bad, "-o", os.path.join(d, "bad.h5")], expect=None)
    if p.returncode == 0 or "bytes follow" not in p.stderr:
        fail("a .npy with trailing bytes is accepted")
    for k, tok in enumerate(("0x1p0", "inf", "nan", "1e", ".")):
        obj = os.path.join(d, f"n{k}.obj")
        open(obj, "w").write(f"v {tok} 0 0\nv 1 0 0\nv 0 1 0\nf 1 2 3\n")
        p = run(["import", obj, "-o", os.path.join(d, f"n{k}.h5")], expect=None)
        if p.returncode == 0 or tok not in p.stderr:
            fail(f"the OBJ coordinate '{tok}' is accepted as a number")
    obj = os.path.join(d, "ok.obj")
    open(obj, "w").write("v 1e0 -0.5 +2.\nv 1 0 0\nv 0 1 0.25E-1\nf 1 2 3\n")
    run(["import", obj, "-o", os.path.join(d, "ok.h5")])
    print("numbers: trailing .npy bytes, hex floats, inf and nan refused; decimals read")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("case")
    ap.add_argument("--np", type=int, default=1)
    ap.add_argument("--distribute", default="per-mesh", choices=["per-mesh", "partitioned"])
    a = ap.parse_args()
    globals()["case_" + a.case](a)
    print("PASS")


if __name__ == "__main__":
    main()
