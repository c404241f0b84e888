#!/usr/bin/env python3
"""Friction in the command line found by a user audit, one check per defect
(run by CTest as cli_friction, see CMakeLists.txt): every check asserts the
exit code (0 success, 1 some datasets failed, 2 usage error) and a fragment
of the message, and where a refusal must come before any writing, that
nothing was written. One rank (two for the checks of a job's exit code over ranks), small
generated inputs: a few seconds.

Exit code 0 passes, 77 skips, other fails. Environment as for cli_test.py.
"""
import os
import re
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "util"))
from mbtest import SKIP, fail, fresh, run  # noqa: E402


def check(args, code, *fragments):
    """Run meshbatch, fail unless it exits with `code` and says every fragment."""
    p = run(args, expect=code)
    text = p.stdout + p.stderr
    for f in fragments:
        if f not in text:
            fail(f"meshbatch {' '.join(map(str, args))}: no '{f}' in the output")
    return p


def same_bytes(path, data, what):
    with open(path, "rb") as f:
        if f.read() != data:
            fail(f"{what}: {path} changed")


def main():
    d = fresh("cli_friction")
    p = lambda *n: os.path.join(d, *n)  # noqa: E731
    # inputs: two small meshes in a collection, a grid of one field, a triangulation
    for name, nv in (("a", 100), ("b", 300)):
        run(["generate", "sphere", "--vertices", nv, "--name", name, "-o", p(name + ".obj")])
    coll = p("meshes.h5")
    run(["import", p("a.obj"), p("b.obj"), "-o", coll, "-q"])
    grid = p("grid.h5")
    run(["generate", "grid", "--shape", "8,8,8", "--field", "u=sines", "-o", grid])
    tri = p("tri.h5")
    run(["generate", "grid2d", "--vertices", 100, "-o", tri])

    # 1. a file PATH for a collection of several meshes: refused before writing
    check(["export", coll, "-o", p("one.obj")], 2, "one.obj is one file",
          "holds 2 meshes (a, b)", "--mesh NAME")
    if os.path.exists(p("one.obj")):
        fail("export -o one.obj of two meshes left one.obj behind")
    check(["export", coll, "--mesh", "b", "-o", p("one.obj")], 0, "b -> ")
    print("1: export of several meshes to one file refused before writing")

    # 2. .npy decides the format as .vtk does
    check(["export", grid, "-o", p("g.npy")], 0, "field u -> ")
    with open(p("g.npy"), "rb") as f:
        if f.read(6) != b"\x93NUMPY":
            fail("export -o g.npy did not write a NumPy file")
    check(["export", grid, "-o", p("g.vtk")], 0, "-> ")
    check(["export", coll, "--mesh", "a", "-o", p("a.npy")], 1, "a is a mesh", ".npy file holds a grid")
    print("2: -o FILE.npy exports a grid as .npy without --format")

    # 3. an unknown extension is not a folder; existing folders and NAME/ are
    for name in ("bob.stl", "copy.h5"):
        ext = os.path.splitext(name)[1]
        check(["export", coll, "--mesh", "a", "-o", p(name)], 2, f"export writes no {ext} files",
              ".obj, .off, .ply")
        if os.path.exists(p(name)):
            fail(f"export -o {name} created {name}")
    os.makedirs(p("existing.d"))
    check(["export", coll, "-o", p("existing.d"), "--format", "obj"], 0, "existing.d/a.obj")
    check(["export", coll, "--mesh", "a", "-o", p("slash.stl") + "/"], 0, "slash.stl/a.ply")
    check(["export", coll, "-o", p("plain"), "--format", "off"], 0, "plain/b.off")
    if not os.path.isfile(p("plain", "a.off")):
        fail("export -o plain (a new folder) did not write plain/a.off")
    print("3: -o NAME.EXT of an unknown extension refused; folders as documented")

    # 4. every bench refuses an unknown --mesh as info and export do: a usage
    # error (exit 2) before any work, in the same words
    check(["info", coll, "--mesh", "nosuch"], 2, f"meshbatch info: no mesh named 'nosuch' in {coll}")
    for args in (["bench", "smooth", coll, "--mesh", "nosuch", "--repeats", 1, "--warmup", 0],
                 ["bench", "smooth", coll, "--mesh", "nosuch", "--distribute", "partitioned"],
                 ["bench", "polylla", tri, "--mesh", "nosuch", "--backend", "cpu", "--repeats", 1,
                  "--warmup", 0],
                 ["bench", "flow", coll, "--mesh", "nosuch"],
                 ["bench", "willmore", coll, "--mesh", "nosuch", "--backend", "cpu"],
                 ["bench", "deform", coll, "--mesh", "nosuch", "--backend", "cpu"]):
        name = args[1]
        where = tri if name == "polylla" else coll
        q = check(args, 2, f"meshbatch bench {name}: no mesh named 'nosuch' in {where}",
                  f"Try 'meshbatch bench {name} --help'.")
        if q.stdout.strip():
            fail(f"bench {name} --mesh nosuch printed figures: {q.stdout.strip()}")
    # a mesh the input holds is still found
    check(["bench", "smooth", coll, "--mesh", "b", "--backend", "cpu", "--repeats", 1,
           "--warmup", 0], 0)
    print("4: every bench refuses --mesh nosuch as info does (exit 2, same message)")

    # 5. generate KIND --help: that generator's usage, exit 0
    for kind, flag in (("grid", "--help"), ("panels", "--help"), ("subdivide", "-h"),
                       ("sphere", "--help"), ("delaunay", "-h"), ("grid2d", "--help")):
        q = check(["generate", kind, flag], 0, f"usage: meshbatch generate {kind} ")
        if "meshbatch generate" in q.stdout.split("\n", 1)[1].split("\n\n")[0].replace(
                f"meshbatch generate {kind}", ""):
            fail(f"generate {kind} {flag} printed the usage of other generators")
    check(["generate", "grid", "--shape", "4,4,4", "--help"], 0, "usage: meshbatch generate grid ")
    check(["generate", "nosuch", "--help"], 2, "unknown generator 'nosuch'")
    check(["generate", "--help"], 0, "meshbatch generate subdivide", "meshbatch generate panels")
    print("5: generate KIND --help prints that generator's usage")

    # 6. an output that is the input: refused, the input unchanged
    sub = p("s.h5")
    run(["generate", "subdivide", p("a.obj"), "--levels", 0, "-o", sub])
    keep = open(sub, "rb").read()
    check(["generate", "subdivide", sub, "--levels", 1, "-o", sub], 2,
          f"the output {sub} is the input {sub}", "choose another output")
    check(["generate", "subdivide", os.path.join(d, ".", "s.h5"), "--levels", 1, "-o", sub], 2,
          "is the input", "choose another output")
    same_bytes(sub, keep, "generate subdivide onto its input")
    src_obj = open(p("a.obj"), "rb").read()
    check(["generate", "subdivide", p("a.obj"), "--levels", 1, "-o", p("a.obj")], 2, "is the input")
    same_bytes(p("a.obj"), src_obj, "generate subdivide onto its .obj input")
    run(["generate", "grid2d", "--vertices", 9, "-o", p("t.node")])
    node = open(p("t.node"), "rb").read()
    check(["generate", "subdivide", p("t.node"), "--levels", 0, "-o", p("t.ele")], 2, "is the input")
    same_bytes(p("t.node"), node, "generate subdivide onto its Triangle input's stem")
    check(["import", sub, "-o", sub], 2, "is the input", "choose another output")
    same_bytes(sub, keep, "import onto its input")
    # replacing an unrelated collection stays allowed
    check(["generate", "subdivide", p("a.obj"), "--levels", 1, "-o", sub], 0, "-> " + sub)
    check(["import", p("b.obj"), "-o", sub, "-q"], 0)
    print("6: generate subdivide and import refuse an output that is an input")

    # 7. deform's handles is a path in `meshbatch ops`; the columns line up
    q = check(["ops", "deform"], 0, "handles")
    line = next(s for s in q.stdout.splitlines() if s.split()[:1] == ["handles"])
    if line.split()[1] != "path" or "NAME" in line:
        fail(f"ops deform shows handles as: {line.strip()}")
    q = check(["ops"], 0, "max_iterations", "w_constraint", "cg_iterations")
    keys = [s for s in q.stdout.splitlines()
            if re.match(r"    [a-z_0-9]+ +(integer|number|name|names|path) ", s)]
    cols = {(s.index(" default "), len(re.match(r"    \S+ +", s).group(0))) for s in keys}
    if len(keys) < 20 or len(cols) != 1:
        fail(f"ops: the key lines' columns do not line up: {sorted(cols)}")
    # a handles file whose name has a comma is one path; a list is refused
    panels = p("panels.h5")
    run(["generate", "panels", "--vertices", 25, "--handles", p("h,1.txt"), "-o", panels])
    for stage, code, words in (("{op: deform, iterations: 2, handles: 'h,1.txt'}", 0, "1 written"),
                               ("{op: deform, handles: [h1.txt, h2.txt]}", 2,
                                "handles: expected a path, got a list")):
        jobf = p("deform.yaml")
        with open(jobf, "w") as f:
            f.write(f"input: [{panels}]\noutput: {p('deformed.h5')}\nbackend: cpu\n"
                    f"stages:\n  - {stage}\n")
        check(["run", jobf], code, words)
        if code == 0:  # the 13 handles of the file (relative to the job's folder) were read
            check(["info", p("deformed.h5")], 0, "handles 13")
    print("7: ops shows handles as a path, the key columns aligned; handles: one path")

    # 8. smaller: spacing, grid2d:N, --levels
    for h in ("0", "-0.1", "nan", "inf", "1,0,1"):
        check(["generate", "grid", "--shape", "4,4,4", "--field", "u=sines", "--spacing", h,
               "-o", p("sp.h5")], 2, "--spacing", "finite and > 0")
    if os.path.exists(p("sp.h5")):
        fail("generate grid --spacing 0 wrote its output")
    for n in ("0", "-5", "abc"):
        check(["bench", "polylla", f"grid2d:{n}", "--backend", "cpu"], 2,
              "grid2d:N needs the vertex count N, a positive integer", f"'{n}'")
    check(["bench", "polylla", "delaunay:2", "--backend", "cpu"], 2, "delaunay:N[:SEED]")
    check(["bench", "polylla", "grid2d:100", "--backend", "cpu", "--repeats", 1, "--warmup", 0],
          0, "grid2d_100")
    for lv in ("-2", "13"):
        check(["generate", "subdivide", p("a.obj"), "--levels", lv, "-o", p("x.h5")], 2,
              f"--levels must be in [0, 12], got {lv}")
    check(["generate", "subdivide", p("a.obj"), "-o", p("x.h5")], 2, "needs one of --levels")
    print("8: --spacing, grid2d:N and --levels ranges: usage errors that name the range")

    plurals(d)
    missing_inputs(d)
    failure_recap(d)


def smooth_job(path, inputs, out):
    """A job file of one short Taubin stage on the CPU over `inputs` (one a line)."""
    with open(path, "w") as f:
        f.write("input:\n" + "".join(f"  - {i}\n" for i in inputs) +
                f"output: {out}\nbackend: cpu\nstages:\n  - {{op: taubin, iterations: 1}}\n")
    return path


def plurals(d):
    """9. a count's noun agrees with it: 1 mesh, 2 meshes (nothing says "1 meshes")."""
    p = lambda *n: os.path.join(d, *n)  # noqa: E731
    one = smooth_job(p("one.yaml"), [p("a.obj")], p("one.h5"))
    q = check(["run", one], 0, "1 mesh on 1 rank,", "\n1 mesh, 1 written, 0 failed")
    two = smooth_job(p("two.yaml"), [p("a.obj"), p("b.obj")], p("two.h5"))
    q2 = check(["run", two], 0, "2 meshes on 1 rank,", "\n2 meshes, 2 written, 0 failed")
    check(["compare", p("one.h5"), p("two.h5")], 1, f"{p('one.h5')} has 1 mesh, {p('two.h5')} has 2")
    check(["compare", p("two.h5"), p("one.h5")], 1, f"{p('two.h5')} has 2 meshes, {p('one.h5')} has 1")
    # partitioned over one rank: "[1 rank]"
    part = p("part.yaml")
    with open(part, "w") as f:
        f.write(open(one).read().replace("backend: cpu", "backend: cpu\ndistribute: partitioned")
                .replace(p("one.h5"), p("part.h5")))
    q3 = check(["run", part], 0, "[1 rank] a: ")
    for r in (q, q2, q3):
        bad = re.findall(r"(?<![\d.])1 (meshes|ranks|files|datasets|layouts|parts|components)\b",
                         r.stdout + r.stderr)
        if bad:
            fail(f"a count of 1 with a plural noun: {bad}")
    print("9: counts agree with their nouns (1 mesh, 2 meshes, [1 rank])")


def missing_inputs(d):
    """10. a named input that does not exist is a job error before any work
    (exit 2, the job file's line), like a glob that matches nothing, on one
    rank and on two (every rank exits 2); an input that exists but cannot be
    read is that mesh's failure (exit 1, the others written)."""
    p = lambda *n: os.path.join(d, *n)  # noqa: E731
    jobf = smooth_job(p("missing.yaml"), [p("a.obj"), p("nosuch.obj")], p("missing.h5"))
    for np in (None, 2):
        q = run(["run", jobf], np=np, expect=2)
        if f"{jobf}:3: input[1]: '{p('nosuch.obj')}' does not exist" not in q.stderr:
            fail(f"run on {np or 1} rank(s): no message naming the missing input and its line")
        if "meshes on" in q.stdout or "written" in q.stdout or os.path.exists(p("missing.h5")) \
                or os.path.exists(p("missing.h5.ckpt")):
            fail(f"run on {np or 1} rank(s) of a job with a missing input did some work")
        if q.stderr.count("does not exist") != 1:
            fail(f"run on {np or 1} rank(s): the missing input reported "
                 f"{q.stderr.count('does not exist')} times")
    # a single input (a string, not a list); a collection; the glob case, with its line
    for text, needle in ((f"input: {p('gone.h5')}\n", f"{p('missing2.yaml')}:1: input: '{p('gone.h5')}' does not exist"),
                         (f"input:\n  - {p('a.obj')}\n  - {p('none*.obj')}\n",
                          f"{p('missing2.yaml')}:3: input[1]: '{p('none*.obj')}' matches no file")):
        with open(p("missing2.yaml"), "w") as f:
            f.write(text + f"output: {p('missing2.h5')}\nstages:\n  - {{op: taubin, iterations: 1}}\n")
        for np in (None, 2):
            q = run(["run", p("missing2.yaml")], np=np, expect=2)
            if needle not in q.stderr:
                fail(f"run on {np or 1} rank(s): no '{needle}'")
    # exists but cannot be read: that mesh fails, the other is written
    with open(p("garbage.obj"), "w") as f:
        f.write("v 0 0 0\nf 1 2 9\n")
    bad = smooth_job(p("bad.yaml"), [p("a.obj"), p("garbage.obj")], p("bad.h5"))
    for np in (None, 2):
        q = run(["run", bad], np=np, expect=1)
        if "garbage" not in q.stderr or "1 written, 1 failed" not in q.stdout:
            fail(f"run on {np or 1} rank(s): an unreadable input is not one mesh's failure")
    # import: a FILE that does not exist is a usage error too, nothing written
    check(["import", p("a.obj"), p("nosuch.obj"), "-o", p("imp.h5")], 2,
          f"'{p('nosuch.obj')}' does not exist")
    if os.path.exists(p("imp.h5")):
        fail("import with a missing FILE wrote its output")
    check(["run", "--help"], 0, "input that does not exist")
    print("10: a missing input is a job error (exit 2, FILE:LINE) on 1 and 2 ranks; "
          "an unreadable one fails alone (exit 1)")


def failure_recap(d):
    """11. each failed mesh's error printed once whole, as it happens; the
    recap at the end is a header and one line per failed mesh (name, file,
    the error's first line), the first 20, then how many more."""
    p = lambda *n: os.path.join(d, *n)  # noqa: E731
    bad = []
    for k in range(23):
        bad.append(p(f"bad{k:02d}.obj"))
        with open(bad[-1], "w") as f:
            f.write("v 0 0 0\nv 1 0 0\nv 0 1 0\nf 1 2 9\n")
    jobf = smooth_job(p("recap.yaml"), [p("a.obj")] + bad, p("recap.h5"))
    q = run(["run", jobf, "--no-checkpoint"], expect=1)
    err = q.stderr.splitlines()
    live = [ln for ln in err if ": skipped: " in ln]
    if len(live) != 23:
        fail(f"{len(live)} live error lines for 23 failed meshes")
    if "24 meshes, 1 written, 23 failed" not in q.stdout:
        fail("no summary line 24 meshes, 1 written, 23 failed")
    if "meshbatch: 23 of 24 meshes failed:" not in err:
        fail("no recap header 'meshbatch: 23 of 24 meshes failed:'")
    recap = err[err.index("meshbatch: 23 of 24 meshes failed:") + 1:]
    lines = [ln for ln in recap if ln.startswith("  bad")]
    if lines != [f"  bad{k:02d} ({bad[k]}): {bad[k]}:4: face index 9 out of range [1, 3]"
                 for k in range(20)]:
        fail(f"the recap lists {lines}, expected bad00..bad19 with their files and errors")
    if "  ... and 3 more; see above" not in recap:
        fail("the recap does not end with '... and 3 more; see above'")
    for k in range(23):  # the whole error once (the live line); the recap its first line once more
        if sum(f"bad{k:02d}.obj:4" in ln for ln in err) > 2 or \
                sum(f"bad{k:02d}: skipped:" in ln for ln in err) != 1:
            fail(f"bad{k:02d}'s error printed more than once whole")
    if any(ln.startswith("meshbatch: error: bad") for ln in recap):
        fail("the recap repeats the errors verbatim")
    # a run with 2 failures lists both, with no '... more'
    jobf = smooth_job(p("recap2.yaml"), [p("a.obj")] + bad[:2], p("recap2.h5"))
    q = run(["run", jobf, "-q"], np=2, expect=1)
    err = q.stderr.splitlines()
    if "meshbatch: 2 of 3 meshes failed:" not in err or "more; see above" in q.stderr:
        fail("2 ranks, -q: no recap of the 2 failed meshes")
    i = err.index("meshbatch: 2 of 3 meshes failed:")
    if not (err[i + 1].startswith(f"  bad00 ({bad[0]}): ") and
            err[i + 2].startswith(f"  bad01 ({bad[1]}): ")):
        fail(f"2 ranks: the recap lines are {err[i + 1:i + 3]}")
    print("11: failures printed once as they happen, then a capped recap, one line each")


if __name__ == "__main__":
    if not os.path.exists(os.environ.get("MESHBATCH_EXE", "")):
        print("SKIP: no meshbatch executable (MESHBATCH_EXE)")
        sys.exit(SKIP)
    main()
    print("ok")
