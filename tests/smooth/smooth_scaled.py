#!/usr/bin/env python3
"""Smoothing is exact under scaling: spot scaled by 1e150 and by 1e-150 and
smoothed with each weight (uniform, cotangent, inverse_distance) equals the
unscaled mesh's result scaled back, within 1e-12 of the largest coordinate
(issue 28: squared lengths overflowed at 1e160 and underflowed at 1e-160,
so the weights became 0 and the vertices stayed where they were, silently).

  smooth_scaled.py [--backend cpu|cuda]

cpu: also a 2-rank partitioned run at 1e150 equals the one-rank run bitwise
(the scale is agreed over the ranks), and a NaN coordinate in the input is
an error, not a silent run (the OBJ reader refuses it first; the smoothing's
own check, mb_smooth_maxabs, is tested in test_smooth_rules.c).
cuda: the same comparisons on the GPU in float64, whose outputs must also
equal the CPU's bitwise; exits 77 (skipped) without a CUDA device.
Environment: see tests/CMakeLists.txt.
"""
import os
import shutil
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "util"))
from mbtest import EXE, SRC, SKIP, TMP, cuda_devices, fail, need_module, run  # noqa: E402,F401

WEIGHTS = ("uniform", "cotangent", "inverse_distance")
SCALES = (1e150, 1e-150)
RTOL = 1e-12


def read_obj(path):
    v, f = [], []
    with open(path) as inp:
        for line in inp:
            t = line.split()
            if t and t[0] == "v":
                v.append([float(x) for x in t[1:4]])
            elif t and t[0] == "f":
                f.append(line)
    return v, f


def write_obj(path, v, f, scale):
    with open(path, "w") as out:
        out.writelines(f"v {x * scale!r} {y * scale!r} {z * scale!r}\n" for x, y, z in v)
        out.writelines(f)


def smooth(d, name, mesh, weights, backend, np=None, distribute="per-mesh"):
    """Run one Taubin stage on mesh; return the output vertices [nv, 3]."""
    h5py = need_module("h5py")
    job = os.path.join(d, name + ".yaml")
    out = os.path.join(d, name + ".h5")
    with open(job, "w") as f:
        f.write(f"input: {mesh}\noutput: {out}\nbackend: {backend}\nprecision: float64\n"
                f"distribute: {distribute}\nstages:\n"
                f"  - {{op: taubin, lambda: 0.5, mu: -0.53, iterations: 4, weights: {weights}}}\n")
    run(["run", "-q", job], np=np)
    with h5py.File(out, "r") as f:
        (g,) = list(f["meshes"].values())
        return g["vertices"][...]


def main():
    np = need_module("numpy")
    need_module("h5py")
    backend = sys.argv[sys.argv.index("--backend") + 1] if "--backend" in sys.argv else "cpu"
    if backend == "cuda" and cuda_devices() == 0:
        print("SKIP: no CUDA device (or meshbatch built without CUDA): the GPU comparison "
              "runs on a machine with one")
        return SKIP
    d = os.path.join(TMP, "scaled_" + backend)
    shutil.rmtree(d, ignore_errors=True)
    os.makedirs(d)
    v, f = read_obj(os.path.join(SRC, "data", "meshes", "spot.obj"))
    x0 = np.array(v)
    meshes = {1.0: os.path.join(SRC, "data", "meshes", "spot.obj")}
    for s in SCALES:
        meshes[s] = os.path.join(d, f"spot_{s:g}.obj")
        write_obj(meshes[s], v, f, s)
    checked = 0
    for w in WEIGHTS:
        ref = smooth(d, f"{w}_1", meshes[1.0], w, backend)
        moved = np.abs(ref - x0).max()
        if not moved > 1e-4:
            fail(f"{w}: the unscaled run moved the vertices by only {moved:g}")
        size = np.abs(ref).max()
        for s in SCALES:
            got = smooth(d, f"{w}_{s:g}", meshes[s], w, backend)
            if not np.all(np.isfinite(got)):
                fail(f"{w} at {s:g}: non-finite output")
            err = np.abs(got / s - ref).max() / size
            print(f"{backend} {w:16s} scale {s:g}: vertices moved {moved:.3g}, largest "
                  f"difference from the unscaled result {err:.3g} (relative)")
            if not err <= RTOL:
                fail(f"{w} at scale {s:g}: {err:.3g} relative from the unscaled result "
                     f"(tolerance {RTOL:g})")
            checked += 1
            if backend == "cuda":
                cpu = smooth(d, f"{w}_{s:g}_cpu", meshes[s], w, "cpu")
                if cpu.tobytes() != got.tobytes():
                    fail(f"{w} at scale {s:g}: CUDA and CPU outputs differ "
                         f"(largest {np.abs(cpu - got).max() / (s * size):.3g} relative)")
                print(f"  CUDA == CPU bitwise ({len(got)} vertices)")
            elif s == SCALES[0]:
                part = smooth(d, f"{w}_{s:g}_np2", meshes[s], w, backend, np=2,
                              distribute="partitioned")
                if part.tobytes() != got.tobytes():
                    fail(f"{w} at scale {s:g}: 2 ranks partitioned differ from one rank")
                print("  2 ranks partitioned == 1 rank bitwise")
    if backend == "cpu":
        bad = os.path.join(d, "spot_nan.obj")
        write_obj(bad, [[float("nan"), 0.0, 0.0]] + v[1:], f, 1.0)
        job = os.path.join(d, "nan.yaml")
        with open(job, "w") as out:
            out.write(f"input: {bad}\noutput: {d}/nan.h5\nbackend: cpu\nstages:\n"
                      "  - {op: taubin, iterations: 1, weights: cotangent}\n")
        p = run(["run", "-q", job], expect=None)
        text = p.stdout + p.stderr
        if p.returncode == 0:
            fail("a NaN coordinate was smoothed without an error")
        if "non-finite" not in text and "nan" not in text.lower():
            fail("the error for a NaN coordinate does not say so")
        print("a NaN coordinate: exit", p.returncode)
    print(f"PASS: {checked} scaled runs equal the unscaled ones within {RTOL:g}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
