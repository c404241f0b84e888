#!/usr/bin/env python3
"""Compare meshbatch's Polylla output with the reference implementation's.

Used by scripts/polylla-reference.sh. Two commands:

  polylla_compare.py to-off [--longest-first] IN.node|IN.ele OUT.off
      Triangle's .node/.ele (0- or 1-based, comments allowed) as an OFF file
      that the reference reads (its OFF mode), 0-based, each triangle turned
      counter-clockwise with meshbatch's rule ((a, b, c) -> (a, c, b) when
      orient < 0), since the reference assumes counter-clockwise input.
      --longest-first also rotates each triangle's corners to start at its
      longest edge by meshbatch's key (squared length, max vertex, min
      vertex). The triangles and so meshbatch's polygon set stay the same,
      but the reference, which takes the first of equally long edges in
      corner order, then breaks ties as meshbatch does.

  polylla_compare.py compare --tri IN --ref REF.off --mb MB.off
                             [--ref-log LOG] [--mb-json JSON] [--json OUT]
      Compares the polygon SETS: each polygon is a cyclic vertex sequence,
      normalised by rotation to its lexicographically smallest rotation.
      Reports the counts, the reference polygons holding a barrier-edge tip
      (an a, v, a pattern, cyclically), whether the sets are equal, and
      whether they are equal where the reference leaves no tip (every tip-
      free reference polygon is one of meshbatch's, and meshbatch's other
      polygons cover exactly the area of the reference's tip polygons).
      It then recomputes the label phase (plain Python) and checks that the
      sets are equal outside the label-phase regions that hold a tip, and
      counts, inside them, the reference polygons with a tip and the tip-
      free ones that differ (another middle edge). Exit status 1 when the
      sets differ outside those regions.
      The set hash is FNV-1a 64 over the sorted normalised polygons written
      as "a b c\\n" lines (the same function as polylla_set_hash in
      tests/polylla/polylla_check.c). With the logs, also the times.
"""
import argparse
import json
import re
import sys


def _lines(path):
    with open(path) as f:
        for line in f:
            line = line.split("#", 1)[0].strip()
            if line:
                yield line


def read_triangle(path):
    """(xy list, triangles list) from STEM.node / STEM.ele, 0-based."""
    stem = re.sub(r"\.(node|ele)$", "", path, flags=re.I)
    it = _lines(stem + ".node")
    nv = int(next(it).split()[0])
    xy, base = [], None
    for _ in range(nv):
        w = next(it).split()
        if base is None:
            base = int(w[0])
        xy.append((float(w[1]), float(w[2])))
    it = _lines(stem + ".ele")
    nt = int(next(it).split()[0])
    tris = []
    for _ in range(nt):
        w = next(it).split()
        tris.append((int(w[1]) - base, int(w[2]) - base, int(w[3]) - base))
    return xy, tris


def orient_ccw(xy, t):
    a, b, c = t
    (xa, ya), (xb, yb), (xc, yc) = xy[a], xy[b], xy[c]
    o = (xb - xa) * (yc - ya) - (yb - ya) * (xc - xa)
    return (a, c, b) if o < 0 else (a, b, c)


def edge_key(xy, a, b):
    lo, hi = min(a, b), max(a, b)
    dx, dy = xy[hi][0] - xy[lo][0], xy[hi][1] - xy[lo][1]
    return (dx * dx + dy * dy, hi, lo)


def longest_first(xy, t):
    k = max(range(3), key=lambda k: edge_key(xy, t[k], t[(k + 1) % 3]))
    return t[k:] + t[:k]


def to_off(src, dst, rotate=False):
    xy, tris = read_triangle(src)
    with open(dst, "w") as f:
        f.write("OFF\n%d %d 0\n" % (len(xy), len(tris)))
        for x, y in xy:
            f.write("%.17g %.17g 0\n" % (x, y))
        for t in tris:
            t = orient_ccw(xy, t)
            if rotate:
                t = longest_first(xy, t)
            f.write("3 %d %d %d\n" % t)


def read_off_polygons(path):
    it = _lines(path)
    head = next(it)
    if not head.startswith("OFF"):
        raise SystemExit("%s: not an OFF file" % path)
    rest = head[3:].split()
    counts = rest if rest else next(it).split()
    nv, nf = int(counts[0]), int(counts[1])
    xy = []
    for _ in range(nv):
        w = next(it).split()
        xy.append((float(w[0]), float(w[1])))
    polys = []
    for _ in range(nf):
        w = [int(v) for v in next(it).split()]
        polys.append(tuple(w[1:1 + w[0]]))
    return xy, polys


def normalise(p):
    """Lexicographically smallest rotation of the cyclic sequence p."""
    m = min(p)
    best = None
    for i, v in enumerate(p):
        if v == m:
            r = p[i:] + p[:i]
            if best is None or r < best:
                best = r
    return best


def tips(p):
    n = len(p)
    return [p[(i + 1) % n] for i in range(n) if p[(i + 2) % n] == p[i]]


def shoelace(xy, p):
    x0, y0 = xy[p[0]]
    a = 0.0
    n = len(p)
    for i in range(n):
        (x1, y1), (x2, y2) = xy[p[i]], xy[p[(i + 1) % n]]
        a += (x1 - x0) * (y2 - y0) - (x2 - x0) * (y1 - y0)
    return 0.5 * a


def set_hash(polys):
    h = 1469598103934665603
    for p in sorted(normalise(q) for q in polys):
        for ch in (" ".join(str(v) for v in p) + "\n").encode():
            h ^= ch
            h = (h * 1099511628211) & 0xFFFFFFFFFFFFFFFF
    return "%016x" % h


def reference_times(log):
    """The reference's own printed times (ms)."""
    keys = {
        "label_max_edges": r"Time to label max edges ([0-9.e+-]+) ms",
        "label_frontier_edges": r"Time to label frontier edges ([0-9.e+-]+) ms",
        "label_seed_edges": r"Time to label seed edges ([0-9.e+-]+) ms",
        "traversal_and_repair": r"Time to traversal and repair ([0-9.e+-]+) ms",
        "traversal": r"Time to traversal ([0-9.e+-]+) ms",
        "repair": r"Time to repair ([0-9.e+-]+) ms",
        "total": r"Time to generate polygonal mesh ([0-9.e+-]+) ms",
    }
    text = open(log).read()
    out = {}
    for k, rx in keys.items():
        m = re.search(rx, text)
        if m:
            out[k] = float(m.group(1))
    return out


def label_regions(xy, tris):
    """Label phase of mb_polylla.h in plain Python: for each oriented
    triangle, the id of its label-phase region (triangles joined across
    non-frontier edges), the directed edge -> triangle map, and the set of
    regions that hold a barrier-edge tip (interior vertex with exactly one
    frontier edge)."""
    T = [orient_ccw(xy, t) for t in tris]
    owner = {}
    for i, (a, b, c) in enumerate(T):
        owner[(a, b)] = owner[(b, c)] = owner[(c, a)] = i
    lm = [max(range(3), key=lambda k: edge_key(xy, t[k], t[(k + 1) % 3])) for t in T]
    parent = list(range(len(T)))

    def find(i):
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    nfront, boundary = {}, set()
    for i, t in enumerate(T):
        for k in range(3):
            a, b = t[k], t[(k + 1) % 3]
            j = owner.get((b, a))
            if j is None:
                boundary.update((a, b))
                front = True
            else:
                kj = T[j].index(b)
                front = lm[i] != k and lm[j] != kj
                if not front:
                    ri, rj = find(i), find(j)
                    if ri != rj:
                        parent[ri] = rj
            if front and (j is None or a < b):
                nfront[a] = nfront.get(a, 0) + 1
                nfront[b] = nfront.get(b, 0) + 1
    tipv = set(v for v, n in nfront.items() if n == 1 and v not in boundary)
    region = [find(i) for i in range(len(T))]
    tipregions = set()
    for i, t in enumerate(T):
        if tipv.intersection(t):
            tipregions.add(region[i])
    return region, owner, tipregions


def compare(args):
    xy, ref = read_off_polygons(args.ref)
    _, mb = read_off_polygons(args.mb)
    ref_tip_polys = [p for p in ref if tips(p)]
    n_ref_tips = sum(len(tips(p)) for p in ref)
    ref_set = set(normalise(p) for p in ref)
    mb_set = set(normalise(p) for p in mb)
    clean = set(normalise(p) for p in ref if not tips(p))
    mb_only = [p for p in mb_set if p not in ref_set]
    area_ref_tip = sum(shoelace(xy, p) for p in ref_tip_polys)
    area_mb_only = sum(shoelace(xy, p) for p in mb_only)
    scale = max(1e-300, sum(abs(shoelace(xy, p)) for p in mb))
    equal_where_no_tip = clean <= mb_set and abs(area_ref_tip - area_mb_only) <= 1e-9 * scale
    rep = {
        "input": args.tri,
        "reference_polygons": len(ref),
        "reference_distinct_polygons": len(ref_set),
        "meshbatch_polygons": len(mb),
        "reference_polygons_with_tip": len(ref_tip_polys),
        "reference_tips": n_ref_tips,
        "meshbatch_polygons_with_tip": sum(1 for p in mb if tips(p)),
        "sets_equal": ref_set == mb_set,
        "tip_free_reference_polygons_in_meshbatch": sum(1 for p in clean if p in mb_set),
        "tip_free_reference_polygons": len(clean),
        "meshbatch_polygons_not_in_reference": len(mb_only),
        "area_reference_tip_polygons": area_ref_tip,
        "area_meshbatch_polygons_not_in_reference": area_mb_only,
        "equal_where_reference_has_no_tip": equal_where_no_tip,
        "reference_set_hash": set_hash(ref),
        "meshbatch_set_hash": set_hash(mb),
    }
    # Where do the sets differ? Outside the label-phase regions that hold a
    # tip, both must be equal (same label phase); inside, the reference
    # may leave tips or cut at another middle edge.
    if args.tri.endswith(".off"):
        _, tris = read_off_polygons(args.tri)
        txy = xy
    else:
        txy, tris = read_triangle(args.tri)
    region, owner, tipregions = label_regions(txy, tris)

    def in_tip_region(p):
        return region[owner[(p[0], p[1])]] in tipregions

    ref_out = set(q for q in ref_set if not in_tip_region(q))
    mb_out = set(q for q in mb_set if not in_tip_region(q))
    ref_in = [q for q in ref_set if in_tip_region(q)]
    rep["label_regions_with_tip"] = len(tipregions)
    rep["equal_outside_regions_with_tip"] = ref_out == mb_out
    rep["polygons_outside_regions_with_tip"] = len(mb_out)
    rep["reference_polygons_in_regions_with_tip"] = len(ref_in)
    rep["meshbatch_polygons_in_regions_with_tip"] = len(mb_set) - len(mb_out)
    rep["differing_reference_polygons_without_tip_in_regions_with_tip"] = sum(
        1 for q in ref_in if q not in mb_set and not tips(q))
    if args.ref_log:
        rep["reference_ms"] = reference_times(args.ref_log)
    if args.mb_json:
        with open(args.mb_json) as f:
            rep["meshbatch"] = json.load(f)
    text = json.dumps(rep, indent=1)
    print(text)
    if args.json:
        with open(args.json, "w") as f:
            f.write(text + "\n")
    return 0 if rep["equal_outside_regions_with_tip"] else 1


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="cmd", required=True)
    a = sub.add_parser("to-off")
    a.add_argument("--longest-first", action="store_true")
    a.add_argument("src")
    a.add_argument("dst")
    c = sub.add_parser("compare")
    c.add_argument("--tri", required=True)
    c.add_argument("--ref", required=True)
    c.add_argument("--mb", required=True)
    c.add_argument("--ref-log")
    c.add_argument("--mb-json")
    c.add_argument("--json")
    args = ap.parse_args()
    if args.cmd == "to-off":
        to_off(args.src, args.dst, args.longest_first)
        return 0
    return compare(args)


if __name__ == "__main__":
    sys.exit(main())
