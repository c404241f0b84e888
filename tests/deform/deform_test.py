#!/usr/bin/env python3
"""The deform op through `meshbatch generate panels`, `meshbatch run` and
h5py:

    deform_test.py CASE

op          generate panels (a lifted 20 x 20 quad grid, its `handle`
            field and a handles file); hard planar: converged in the
            provenance, every face planar to 1e-8 of the mean edge length
            (recomputed here with numpy's SVD, and the output's face field
            `planarity`), the handles exactly at their targets; the same
            job with `handles: FILE` (relative to the job file) gives the
            same bits as the field; solver: pcg meets the same
            constraints, and with cg_iterations: 4 too (at most 4 CG
            iterations per iteration in the provenance, within 1e-8 of
            the box of cholesky's result); soft planar with the handles in place
            lowers the planarity below half the input's; hard regular on a saddle without handles: every
            face regular to 1e-8 (recomputed here); backend: cuda
            within 1e-8 of the bounding box of the CPU's result (where a
            device is present); distribute: partitioned is refused with a
            message naming deform.
polylla     a Polylla polygon mesh (300 random points, faces of 3-24
            vertices) lifted onto a low dome (height 0.01 over [-1, 1]^2), as
            an OBJ file: hard planar without handles reaches planarity <=
            1e-8 (recomputed here). (On a dome of height 0.5 the iteration
            stalls at 5e-5..2e-2 for every mu schedule tried: neighbouring
            Polylla faces share chains of 3-5 edges through vertices of
            degree 2, which forces whole regions into one plane, far from
            the input.) With
            fix_boundary: yes in a soft run every boundary vertex keeps its
            input position bit for bit while the others move.
bad_inputs  a batch: a handle index past the vertex count (handles file),
            a face with a repeated vertex, four pinned non-coplanar
            corners of a quad in hard mode (the residual reached in the
            message), a `handle` field with a NaN in one component; each an
            error naming its mesh, exit 1, the good mesh written. A handles
            file with bad lines (4 fields, NaN, not a number): FILE:LINE
            errors. Keys out of range refused.
ranks       a batch of 6 panels meshes (dome and saddle, 100-900
            vertices) on 1, 2, 3 and 4 ranks: every dataset bitwise equal
            to one rank's.
pipeline    the ranks case's batch (first stage with a handles file) and
            the bad_inputs case's batch through the per-mesh pipeline
            (MESHBATCH_PIPELINE=1, where the runner's preparing threads
            make each mesh's setup ahead of its run: mb_op_info.prepare;
            MESHBATCH_PREPARE_THREADS 1, 2 and 3) on 1 and 3 ranks: every dataset bitwise equal to one rank's
            without the pipeline; stopped by SIGTERM after each rank's
            first mesh (meshes prepared ahead dropped) and resumed: the
            same bits; --timings has the prepares' row and the compute
            thread's waits; the same per-mesh errors, exit 1, the good
            mesh written.
cuda        (exits 77 where no CUDA device can be used) the ranks case's
            batch, soft then hard planar (solver pcg), with backend: cuda
            on 1 and 2 ranks: every mesh within 1e-8 of its bounding box of
            the CPU's result; the bad_inputs case's batch with backend:
            cuda: the same per-mesh errors, exit 1, the good mesh written.

Exit code 0 passes, 77 skips (h5py or numpy missing), other fails.
"""
import argparse
import os
import re
import shutil
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "util"))
from mbtest import TMP, fail, need_module, run, run_job, same_datasets  # noqa: E402


def job(name, inputs, stages, np=None, expect=0, backend="cpu", distribute="per-mesh"):
    out, p = run_job(name, inputs, stages, backend=backend, np=np, expect=expect,
                     distribute=distribute)
    return out, p, os.path.dirname(out)


def panels(path, n, surface="dome", interior=5, lift=0.2, height=0.5, handles=None):
    args = ["generate", "panels", "--vertices", n, "--surface", surface, "--interior", interior,
            "--lift", lift, "--height", height, "-o", path]
    if handles:
        args += ["--handles", handles]
    run(args)
    return path


def read(out, mesh):
    h5py = need_module("h5py")
    with h5py.File(out, "r") as f:
        g = f["meshes"][mesh]
        x = g["vertices"][()]
        off = g["face_offsets"][()]
        idx = g["face_indices"][()]
        fields = {k: g["fields"][k][()] for k in g["fields"]} if "fields" in g else {}
        ffields = {k: g["face_fields"][k][()] for k in g["face_fields"]} if "face_fields" in g else {}
        attrs = {k: (v.decode() if isinstance(v, bytes) else v) for k, v in g.attrs.items()}
    return x, off, idx, fields, ffields, attrs


def mean_edge(x, off, idx):
    np = need_module("numpy")
    edges = set()
    for f in range(len(off) - 1):
        v = idx[off[f]:off[f + 1]]
        for k in range(len(v)):
            a, b = int(v[k]), int(v[(k + 1) % len(v)])
            edges.add((min(a, b), max(a, b)))
    e = np.array(sorted(edges))
    return float(np.mean(np.linalg.norm(x[e[:, 0]] - x[e[:, 1]], axis=1)))


def planarity(x, off, idx, ell):
    """max over faces of the largest distance to the best plane (SVD) / ell"""
    np = need_module("numpy")
    worst = 0.0
    for f in range(len(off) - 1):
        q = x[idx[off[f]:off[f + 1]]]
        q = q - q.mean(axis=0)
        n = np.linalg.svd(q)[2][-1]
        worst = max(worst, float(np.max(np.abs(q @ n))))
    return worst / ell


def regularity(x, off, idx, ell):
    """max over faces of the distance to the best similarity image of the
    regular n-gon (Procrustes by numpy's SVD) / ell"""
    np = need_module("numpy")
    worst = 0.0
    for f in range(len(off) - 1):
        q = x[idx[off[f]:off[f + 1]]]
        n = len(q)
        c = q.mean(axis=0)
        t = 2 * np.pi * np.arange(n) / n
        r = np.stack([np.cos(t), np.sin(t)], axis=1)  # [n, 2]
        m = (q - c).T @ r  # [3, 2]
        u, s, vt = np.linalg.svd(m, full_matrices=False)
        z = c + (s.sum() / n) * (r @ (u @ vt).T)
        worst = max(worst, float(np.max(np.linalg.norm(q - z, axis=1))))
    return worst / ell


def case_op():
    np = need_module("numpy")
    d = os.path.join(TMP, "op")
    os.makedirs(d, exist_ok=True)
    src = panels(os.path.join(d, "dome.h5"), 400, handles=os.path.join(d, "handles.txt"))
    x0, off, idx, fields, _, _ = read(src, "panels_dome_400")
    ell = mean_edge(x0, off, idx)
    p0 = planarity(x0, off, idx, ell)
    print(f"input planarity {p0:.3g}")
    if p0 < 1e-3:
        fail(f"the generated panels are already planar ({p0})")
    hard = "  - {op: deform, constraint: planar, hard: yes, iterations: 5000, tolerance: 1e-10}\n"
    out, p, _ = job("op_field", [src], hard)
    x, off, idx, _, ff, attrs = read(out, "panels_dome_400")
    prov = attrs.get("stage_0_deform", "")
    if "converged yes" not in prov:
        fail(f"not converged: {prov!r}")
    pl = planarity(x, off, idx, ell)
    print(f"hard planar: planarity {pl:.3g} (provenance: {prov})")
    if not pl <= 1e-8:
        fail(f"planarity {pl} > 1e-8")
    if "planarity" not in ff or not float(np.max(ff["planarity"])) <= 1e-8:
        fail("the face field planarity is missing or above 1e-8")
    h = fields["handle"]
    hv = ~np.isnan(h[:, 0])
    if hv.sum() != 13 or not np.array_equal(x[hv], h[hv]):
        fail(f"handles not at their targets ({int(hv.sum())} handles)")
    if "deform" not in p.stdout + p.stderr or "iterations" not in p.stdout + p.stderr:
        fail("no -v line for the mesh")
    # the handles file, relative to the job's folder, gives the same bits
    os.makedirs(os.path.join(TMP, "op_file"), exist_ok=True)
    shutil.copy(os.path.join(d, "handles.txt"), os.path.join(TMP, "op_file", "h.txt"))
    out2, _, _ = job("op_file", [src], hard.replace("}", ", handles: h.txt}"))
    x2 = read(out2, "panels_dome_400")[0]
    if not np.array_equal(x, x2):
        fail("the handles file and the handle field give different positions")
    print("handles file == handle field, bit for bit")
    # solver: pcg (warm-started CG instead of CHOLMOD) meets the same constraints
    out5, _, _ = job("op_pcg", [src], hard.replace("}", ", solver: pcg}"))
    x5, _, _, _, _, a5 = read(out5, "panels_dome_400")
    p5 = planarity(x5, off, idx, ell)
    print(f"solver pcg: planarity {p5:.3g}, max distance from cholesky's result "
          f"{float(np.max(np.abs(x5 - x))):.3g} ({a5.get('stage_0_deform')})")
    if not p5 <= 1e-8 or "pcg_iterations 0" in a5.get("stage_0_deform", ""):
        fail("solver pcg: not planar to 1e-8, or no CG iterations recorded")
    if not np.array_equal(x5[hv], h[hv]):
        fail("solver pcg: handles not at their targets")
    # cg_iterations: 4 (inexact inner solves): the same constraints met, at
    # most 4 CG iterations per iteration, within 1e-8 of the box of cholesky's
    out6, _, _ = job("op_pcg_k", [src], hard.replace("}", ", solver: pcg, cg_iterations: 4}"))
    x6, _, _, _, _, a6 = read(out6, "panels_dome_400")
    p6 = planarity(x6, off, idx, ell)
    rec = a6.get("stage_0_deform", "")
    m6 = re.search(r"iterations (\d+) .*pcg_iterations (\d+)", rec)
    box6 = float(np.linalg.norm(np.max(x, axis=0) - np.min(x, axis=0)))
    d6 = float(np.max(np.abs(x6 - x)))
    print(f"cg_iterations 4: planarity {p6:.3g}, {d6 / box6:.3g} of the box from cholesky's "
          f"result ({rec})")
    if not m6 or not 0 < int(m6.group(2)) <= 4 * int(m6.group(1)):
        fail(f"cg_iterations 4: CG iterations not within 4 per iteration ({rec})")
    if not p6 <= 1e-8 or not d6 <= 1e-8 * box6 or not np.array_equal(x6[hv], h[hv]):
        fail("cg_iterations 4: not planar to 1e-8, handles moved, or off cholesky's result")
    # soft, the handles where they are: lower planarity than the input's
    still = panels(os.path.join(d, "still.h5"), 400, lift=0.0)
    out3, _, _ = job("op_soft", [still], "  - {op: deform, w_constraint: 1000, iterations: 200}\n")
    x3, _, _, _, _, a3 = read(out3, "panels_dome_400")
    ps = planarity(x3, off, idx, ell)
    print(f"soft planar: planarity {ps:.3g} ({a3.get('stage_0_deform')})")
    if not ps < 0.5 * p0:
        fail(f"soft planar did not lower the planarity: {p0} -> {ps}")
    # hard regular on a saddle without handles (a handles file naming none
    # of its vertices replaces the generated field)
    sad = panels(os.path.join(d, "saddle.h5"), 64, surface="saddle", interior=0, height=0.3)
    os.makedirs(os.path.join(TMP, "op_regular"), exist_ok=True)
    with open(os.path.join(TMP, "op_regular", "none.txt"), "w") as f:
        f.write("# no handles for this mesh\nother 0 0 0 0\n")
    out4, _, _ = job("op_regular", [sad], "  - {op: deform, constraint: regular, hard: yes, "
                     "iterations: 5000, tolerance: 1e-10, handles: none.txt}\n")
    x4, off4, idx4, _, _, a4 = read(out4, "panels_saddle_64")
    rg = regularity(x4, off4, idx4, mean_edge(x4, off4, idx4))
    print(f"hard regular: regularity {rg:.3g} ({a4.get('stage_0_deform')})")
    if not rg <= 1e-8:
        fail(f"regularity {rg} > 1e-8")
    # backend: cuda (on a machine with a device) agrees with the CPU within
    # 1e-8 of the bounding box; a partitioned run is refused
    outg, p, _ = job("op_cuda", [src], "  - {op: deform}\n", backend="cuda", expect=None)
    text = p.stdout + p.stderr
    if "no CUDA device can be used" in text:  # a build or machine without CUDA
        print("backend cuda: no device here (test_gpu_deform checks it where there is one)")
    else:
        if p.returncode != 0:
            fail(f"backend: cuda failed: {text}")
        outc, _, _ = job("op_cuda_cpu", [src], "  - {op: deform}\n")
        xg, xc = read(outg, "panels_dome_400")[0], read(outc, "panels_dome_400")[0]
        box = float(np.linalg.norm(np.max(xc, axis=0) - np.min(xc, axis=0)))
        dev = float(np.max(np.abs(xg - xc)))
        print(f"backend cuda: max distance from the CPU's result {dev:.3g} (box {box:.3g})")
        if not dev <= 1e-8 * box:
            fail(f"backend cuda: {dev} from the CPU's result (> 1e-8 of the box {box})")
    _, p, _ = job("op_part", [src], "  - {op: deform}\n", distribute="partitioned", np=2,
                  expect=None)
    text = p.stdout + p.stderr
    if p.returncode == 0 or "deform" not in text:
        fail("distribute: partitioned was not refused with a message naming deform")
    print("partitioned refused")


def write_obj(path, v, f):
    with open(path, "w") as out:
        out.writelines(f"v {float(x)!r} {float(y)!r} {float(z)!r}\n" for x, y, z in v)
        out.writelines("f " + " ".join(str(k + 1) for k in face) + "\n" for face in f)
    return path


def case_bad_inputs():
    np = need_module("numpy")
    h5py = need_module("h5py")
    d = os.path.join(TMP, "bad")
    os.makedirs(d, exist_ok=True)
    grid_v = [(i, j, 0.1 * ((i * 7 + j * 3) % 5)) for j in range(4) for i in range(4)]
    grid_f = [(j * 4 + i, j * 4 + i + 1, j * 4 + i + 5, j * 4 + i + 4) for j in range(3)
              for i in range(3)]
    good = write_obj(os.path.join(d, "good.obj"), grid_v, grid_f)
    past = write_obj(os.path.join(d, "past.obj"), grid_v, grid_f)
    rep_f = [list(f) for f in grid_f]
    rep_f[4] = [5, 6, 6, 9]
    repeated = write_obj(os.path.join(d, "repeated.obj"), grid_v, rep_f)
    quad = write_obj(os.path.join(d, "quad.obj"),
                     [(0, 0, 0), (1, 0, 0), (1, 1, 0.5), (0, 1, 0)], [(0, 1, 2, 3)])
    with open(os.path.join(d, "h.txt"), "w") as f:
        f.write("# MESH VERTEX X Y Z\ngood 0 0 0 0\npast 16 0 0 0   # one past the count\n"
                "quad 0 0 0 0\nquad 1 1 0 0\nquad 2 1 1 0.5\nquad 3 0 1 0\n")
    stage = ("  - {op: deform, hard: yes, iterations: 200, tolerance: 1e-8, "
             f"handles: {os.path.join(d, 'h.txt')}}}\n")
    out, p, _ = job("bad_batch", [good, past, repeated, quad], stage, expect=None)
    text = p.stdout + p.stderr
    if p.returncode != 1:
        fail(f"exit code {p.returncode}, expected 1")
    for name, words in (("past", "past the vertex count"), ("repeated", "repeated"),
                        ("quad", "not met: residual")):
        if not any(name in line and words in line for line in text.splitlines()):
            fail(f"no clear error for {name} (a line naming it with '{words}')")
    with h5py.File(out, "r") as h:
        written = sorted(h["meshes"].keys())
    if written != ["good"]:
        fail(f"written {written}, expected ['good']")
    print("past, repeated, infeasible: errors naming the mesh; good written; exit 1")
    # a handle field with one NaN component
    src = panels(os.path.join(d, "p.h5"), 25, interior=1)
    with h5py.File(src, "r+") as h:
        g = h["meshes"]["panels_dome_25"]["fields"]["handle"]
        a = g[()]
        a[12, 1] = np.nan
        g[...] = a
    _, p, _ = job("bad_field", [src], "  - {op: deform}\n", expect=1)
    if "three finite" not in p.stdout + p.stderr:
        fail("a handle target with one NaN component was not refused")
    # handles files with bad lines: FILE:LINE
    for body, words in (("good 0 0 0\n", "h2.txt:1: 4 fields"),
                        ("# c\ngood 0 nan 0 0\n", "h2.txt:2: coordinate 'nan' is not finite"),
                        ("good 0 0 zero 0\n", "h2.txt:1: coordinate 'zero' is not a number"),
                        ("good x 0 0 0\n", "h2.txt:1: vertex 'x' is not a non-negative integer")):
        with open(os.path.join(d, "h2.txt"), "w") as f:
            f.write(body)
        _, p, _ = job("bad_file", [good], "  - {op: deform, handles: "
                      f"{os.path.join(d, 'h2.txt')}}}\n", expect=1)
        if words not in p.stdout + p.stderr:
            fail(f"no '{words}' in the message")
    print("handles files with bad lines: FILE:LINE errors")
    for kv in ("iterations: 0", "tolerance: 0", "w_close: 0", "w_fair: -1", "constraint: round",
               "hard: maybe", "handles: [a, b]"):
        _, p, _ = job("bad_key", [good], f"  - {{op: deform, {kv}}}\n", expect=None)
        key = kv.split(":")[0]
        if p.returncode == 0 or key not in p.stdout + p.stderr:
            fail(f"{kv} was not refused with a message naming {key}")
    print("keys out of range refused")


def case_ranks():
    d = os.path.join(TMP, "ranks")
    os.makedirs(d, exist_ok=True)
    inputs = []
    for k, (n, surface) in enumerate(((100, "dome"), (400, "saddle"), (900, "dome"),
                                      (225, "saddle"), (144, "dome"), (625, "saddle"))):
        inputs.append(panels(os.path.join(d, f"m{k}.h5"), n, surface=surface, lift=0.1 * k))
    stages = ("  - {op: deform, iterations: 30}\n"
              "  - {op: deform, constraint: planar, hard: yes, iterations: 3000, "
              "tolerance: 1e-9}\n")
    outs = []
    for np_ in (1, 2, 3, 4):
        out, _, _ = job(f"np{np_}", inputs, stages, np=np_)
        outs.append(out)
    for o in outs[1:]:
        same_datasets(outs[0], o)
    print("1, 2, 3 and 4 ranks: bitwise the same outputs")


def with_pipeline(on, fn):
    """fn() with MESHBATCH_PIPELINE set to on ("0" or "1"), restored after."""
    old = os.environ.get("MESHBATCH_PIPELINE")
    os.environ["MESHBATCH_PIPELINE"] = on
    try:
        return fn()
    finally:
        if old is None:
            del os.environ["MESHBATCH_PIPELINE"]
        else:
            os.environ["MESHBATCH_PIPELINE"] = old


def case_pipeline():
    h5py = need_module("h5py")
    d = os.path.join(TMP, "pipeline")
    os.makedirs(d, exist_ok=True)
    inputs, lines = [], []
    for k, (n, surface) in enumerate(((100, "dome"), (400, "saddle"), (900, "dome"),
                                      (225, "saddle"), (144, "dome"), (625, "saddle"))):
        inputs.append(panels(os.path.join(d, f"m{k}.h5"), n, surface=surface, lift=0.1 * k))
        lines.append(f"panels_{surface}_{n} {3 * k} 0.1 0.2 {0.05 * k}\n")
    with open(os.path.join(d, "h.txt"), "w") as f:
        f.write("# one handle a mesh\n" + "".join(lines))
    stages = (f"  - {{op: deform, iterations: 30, handles: {os.path.join(d, 'h.txt')}}}\n"
              "  - {op: deform, constraint: planar, hard: yes, iterations: 3000, "
              "tolerance: 1e-9}\n")
    ref, p, _ = with_pipeline("0", lambda: job("pipe_off", inputs, stages, np=1))
    if "prepares them" in p.stdout + p.stderr:
        fail("MESHBATCH_PIPELINE=0 ran the pipeline")
    with h5py.File(ref, "r") as h:
        for name in h["meshes"]:
            text = h["meshes"][name].attrs["stage_0_deform"]
            text = text.decode() if isinstance(text, bytes) else str(text)
            if "handles 1 " not in text:
                fail(f"{name}: the handles file's handle not in the provenance")
    for np_, nprep in ((1, "1"), (3, "1"), (1, "3"), (3, "2")):
        os.environ["MESHBATCH_PREPARE_THREADS"] = nprep
        try:
            out, p, _ = with_pipeline("1", lambda: job(f"pipe_np{np_}", inputs, stages, np=np_))
        finally:
            del os.environ["MESHBATCH_PREPARE_THREADS"]
        text = p.stdout + p.stderr
        words = "a thread" if nprep == "1" else "threads"
        if f"prepares them on {words} of their own" not in text:
            fail(f"{np_} ranks, {nprep} preparing threads: -v does not say so")
        ahead = len(re.findall(r"deform soft planar: .* analysis [0-9.]+ \(set up ahead\)", text))
        if ahead != len(inputs):
            fail(f"{np_} ranks: {ahead} of {len(inputs)} first stages set up ahead")
        same_datasets(ref, out)
    print("pipeline with 1, 2 and 3 preparing threads, 1 and 3 ranks: bitwise the same outputs")
    # SIGTERM after each rank's first mesh, with meshes read and prepared
    # but not started (dropped, their setups freed), then --resume
    jp, out = os.path.join(os.path.dirname(out), "job.yaml"), out
    os.remove(out)

    def stopped_then_resumed():
        os.environ["MESHBATCH_FAULT"] = "term:-1:1"
        try:
            p = run(["run", jp, "--checkpoint"], np=3, expect=3)
        finally:
            del os.environ["MESHBATCH_FAULT"]
        if os.path.exists(out) or "stopped by SIGTERM" not in p.stderr:
            fail("SIGTERM in the pipeline: an output left, or no message saying the run stopped")
        run(["run", jp, "--resume"], np=3)
    with_pipeline("1", stopped_then_resumed)
    same_datasets(ref, out)
    print("SIGTERM with meshes prepared ahead, then --resume: bitwise the same outputs")
    # --timings names the preparing thread's seconds and the compute thread's waits
    os.remove(out)
    p = with_pipeline("1", lambda: run(["run", jp, "-q", "--timings"]))
    comp = re.search(r"^  compute \(setup \+ stages\) +([0-9.]+) s", p.stdout, re.M)
    for row in ("prepares, ahead (own thread)", "it waiting for its next mesh"):
        m = re.search(r"^    " + re.escape(row) + r" +([0-9.]+) s", p.stdout, re.M)
        if not m or not comp or float(m.group(1)) > float(comp.group(1)) + 0.001:
            fail(f"--timings: no '{row}' row under compute, or more than the compute")
    print("--timings: the prepares' and the compute thread's waits' rows")
    with_pipeline("1", case_bad_inputs)


def case_polylla():
    np = need_module("numpy")
    d = os.path.join(TMP, "polylla")
    os.makedirs(d, exist_ok=True)
    tri = os.path.join(d, "tri.h5")
    run(["generate", "delaunay", "--points", 300, "--seed", 3, "-o", tri])
    out, _, _ = job("polylla_mesh", [tri], "  - {op: polylla}\n")
    h5py = need_module("h5py")
    with h5py.File(out, "r") as f:
        g = f["meshes"][list(f["meshes"].keys())[0]]
        xy = g["vertices"][()]
        off = g["face_offsets"][()]
        idx = g["face_indices"][()]
    sizes = np.diff(off)
    print(f"polylla: {len(xy)} vertices, {len(sizes)} faces of {sizes.min()}-{sizes.max()} vertices")
    if sizes.max() < 5:
        fail("the Polylla mesh has no face of 5 or more vertices")
    x, y = 2 * xy[:, 0] - 1, 2 * xy[:, 1] - 1
    z = 0.01 * (np.sqrt(4 - x * x - y * y) - np.sqrt(2)) / (2 - np.sqrt(2))
    v = np.stack([x, y, z], axis=1)
    obj = os.path.join(d, "lifted.obj")
    with open(obj, "w") as f:
        f.writelines(f"v {float(a)!r} {float(b)!r} {float(c)!r}\n" for a, b, c in v)
        for k in range(len(sizes)):
            f.write("f " + " ".join(str(int(i) + 1) for i in idx[off[k]:off[k + 1]]) + "\n")
    ell = mean_edge(v, off, idx)
    p0 = planarity(v, off, idx, ell)
    if not p0 > 1e-4:
        fail(f"the lifted Polylla mesh is already planar ({p0})")
    out2, _, _ = job("polylla_hard", [obj], "  - {op: deform, hard: yes, iterations: 5000, "
                     "tolerance: 1e-10}\n")
    x2, off2, idx2, _, _, a2 = read(out2, "lifted")
    p2 = planarity(x2, off2, idx2, ell)
    print(f"hard planar on the lifted Polylla mesh: planarity {p0:.3g} -> {p2:.3g} "
          f"({a2.get('stage_0_deform')})")
    if not p2 <= 1e-8:
        fail(f"planarity {p2} > 1e-8")
    # fix_boundary: the boundary keeps its bits, the interior moves
    out3, _, _ = job("polylla_fixed", [obj], "  - {op: deform, fix_boundary: yes, "
                     "w_constraint: 100}\n")
    x3 = read(out3, "lifted")[0]
    edges = {}
    for k in range(len(sizes)):
        f = idx[off[k]:off[k + 1]]
        for j in range(len(f)):
            e = (min(f[j], f[(j + 1) % len(f)]), max(f[j], f[(j + 1) % len(f)]))
            edges[e] = edges.get(e, 0) + 1
    bnd = sorted({int(i) for e, c in edges.items() if c == 1 for i in e})
    inner = np.setdiff1d(np.arange(len(v)), bnd)
    if not np.array_equal(x3[bnd], v[bnd]):
        fail("fix_boundary: yes moved a boundary vertex")
    if not np.max(np.abs(x3[inner] - v[inner])) > 1e-6:
        fail("fix_boundary: yes: the interior did not move")
    print(f"fix_boundary: {len(bnd)} boundary vertices kept bit for bit, the interior moved")


def case_cuda():
    np = need_module("numpy")
    h5py = need_module("h5py")
    d = os.path.join(TMP, "cuda")
    os.makedirs(d, exist_ok=True)
    inputs = []
    for k, (n, surface) in enumerate(((100, "dome"), (400, "saddle"), (900, "dome"),
                                      (225, "saddle"), (144, "dome"), (625, "saddle"))):
        inputs.append(panels(os.path.join(d, f"m{k}.h5"), n, surface=surface, lift=0.1 * k))
    stages = ("  - {op: deform, iterations: 30}\n"
              "  - {op: deform, constraint: planar, hard: yes, iterations: 3000, "
              "tolerance: 1e-9, solver: pcg}\n")
    outg, p, _ = job("cuda_batch", inputs, stages, backend="cuda", expect=None)
    text = p.stdout + p.stderr
    if "no CUDA device can be used" in text:
        print("deform_cuda: skipped, no CUDA device here")
        sys.exit(77)
    if p.returncode != 0:
        fail(f"backend cuda: exit {p.returncode}: {text}")
    outc, _, _ = job("cuda_batch_cpu", inputs, stages)
    outg2, _, _ = job("cuda_batch_np2", inputs, stages, backend="cuda", np=2)
    with h5py.File(outc, "r") as hc, h5py.File(outg, "r") as hg, h5py.File(outg2, "r") as h2:
        names = sorted(hc["meshes"].keys())
        if sorted(hg["meshes"].keys()) != names or sorted(h2["meshes"].keys()) != names:
            fail("backend cuda wrote other meshes than the CPU")
        for name in names:
            xc = hc["meshes"][name]["vertices"][()]
            box = float(np.linalg.norm(np.max(xc, axis=0) - np.min(xc, axis=0)))
            for h in (hg, h2):
                xg = h["meshes"][name]["vertices"][()]
                dev = float(np.max(np.abs(xg - xc)))
                if not dev <= 1e-8 * box:
                    fail(f"{name}: backend cuda is {dev} from the CPU (box {box})")
            print(f"{name}: cuda within {dev:.3g} of the CPU (box {box:.3g}); "
                  f"{hg['meshes'][name].attrs.get('stage_1_deform')}")
    print("a batch of 6 meshes, soft then hard: cuda (1 and 2 ranks) within 1e-8 of the box")
    # bad inputs: the same per-mesh errors on cuda, the good mesh written
    grid_v = [(i, j, 0.1 * ((i * 7 + j * 3) % 5)) for j in range(4) for i in range(4)]
    grid_f = [(j * 4 + i, j * 4 + i + 1, j * 4 + i + 5, j * 4 + i + 4) for j in range(3)
              for i in range(3)]
    good = write_obj(os.path.join(d, "good.obj"), grid_v, grid_f)
    past = write_obj(os.path.join(d, "past.obj"), grid_v, grid_f)
    rep_f = [list(f) for f in grid_f]
    rep_f[4] = [5, 6, 6, 9]
    repeated = write_obj(os.path.join(d, "repeated.obj"), grid_v, rep_f)
    quad = write_obj(os.path.join(d, "quad.obj"),
                     [(0, 0, 0), (1, 0, 0), (1, 1, 0.5), (0, 1, 0)], [(0, 1, 2, 3)])
    with open(os.path.join(d, "h.txt"), "w") as f:
        f.write("good 0 0 0 0\npast 16 0 0 0\n"
                "quad 0 0 0 0\nquad 1 1 0 0\nquad 2 1 1 0.5\nquad 3 0 1 0\n")
    stage = ("  - {op: deform, hard: yes, iterations: 200, tolerance: 1e-8, "
             f"handles: {os.path.join(d, 'h.txt')}}}\n")
    out, p, _ = job("cuda_bad", [good, past, repeated, quad], stage, backend="cuda",
                    expect=None)
    text = p.stdout + p.stderr
    if p.returncode != 1:
        fail(f"backend cuda, bad inputs: exit code {p.returncode}, expected 1")
    for name, words in (("past", "past the vertex count"), ("repeated", "repeated"),
                        ("quad", "not met: residual")):
        if not any(name in line and words in line for line in text.splitlines()):
            fail(f"backend cuda: no clear error for {name} (a line naming it with '{words}')")
    with h5py.File(out, "r") as h:
        written = sorted(h["meshes"].keys())
    if written != ["good"]:
        fail(f"backend cuda: written {written}, expected ['good']")
    print("backend cuda: past, repeated, infeasible: errors naming the mesh; good written")


CASES = {"polylla": case_polylla, "op": case_op, "bad_inputs": case_bad_inputs, "ranks": case_ranks,
         "cuda": case_cuda, "pipeline": case_pipeline}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("case", choices=sorted(CASES))
    a = ap.parse_args()
    need_module("numpy")
    need_module("h5py")
    CASES[a.case]()


if __name__ == "__main__":
    main()
