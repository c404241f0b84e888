#!/bin/sh
# Remake docs/guide.md's pictures (docs/images/: mean_curvature_flow,
# implicit_fairing, willmore_flow, deform) with pvpython (scripts/render-pvpython.sh; Debian: paraview xvfb
# python3-h5py python3-pil):
#
#   scripts/guide-pictures.sh MESHBATCH SPOT.obj [WORKDIR]
#
# MESHBATCH: the meshbatch program; SPOT.obj: Crane's spot (2,930 vertices);
# WORKDIR (default: a new temporary folder) receives the collections.
# About two minutes on one CPU rank.
set -eu
[ $# -ge 2 ] || { echo "usage: $0 MESHBATCH SPOT.obj [WORKDIR]" >&2; exit 2; }
mb=$(realpath "$1"); spot=$(realpath "$2")
root=$(cd "$(dirname "$0")/.." && pwd)
images="$root/docs/images"
work=${3:-$(mktemp -d)}
mkdir -p "$work" "$images"
cd "$work"
render() { "$root/scripts/render-pvpython.sh" "$@"; }
job() { # OUTPUT STAGE... : a job on spot.h5, one stage per argument
  out=$1; shift
  { printf 'input: spot.h5\noutput: %s\nbackend: cpu\nstages:\n' "$out"
    for s in "$@"; do printf '  - %s\n' "$s"; done; } > job.yaml
  "$mb" run job.yaml > /dev/null
}
"$mb" import "$spot" -o spot.h5 > /dev/null
# willmore_flow: the guide's two stages, and the first stage cut short
job out/spot_10.h5 "{op: willmore_flow, time_step: 0.05, steps: 10}"
job out/spot_40.h5 "{op: willmore_flow, time_step: 0.05, steps: 40}"
job out/spot_140.h5 "{op: willmore_flow, time_step: 0.05, steps: 40}" \
    "{op: willmore_flow, time_step: 0.5, steps: 100}"
# mean_curvature_flow (conformalized) on the same mesh: time_step 0.01 of
# spot's area (5.71), as the guide's unit-area example
job out/mcf_3.h5 "{op: mean_curvature_flow, time_step: 0.057, steps: 3, rescale: area}"
job out/mcf_40.h5 "{op: mean_curvature_flow, time_step: 0.057, steps: 40, rescale: area}"
render spot.h5 out/spot_10.h5 out/spot_40.h5 out/spot_140.h5 -o "$images/willmore-spot.png" \
    --up y --edges --panel-size 240 240 \
    --title "spot" "10 steps of 0.05" "40 steps" "+100 steps of 0.5"
render out/spot_40.h5 out/mcf_3.h5 out/mcf_40.h5 -o "$images/willmore-vs-flow.png" \
    --up y --edges --panel-size 240 240 \
    --title "willmore_flow, 40 steps" "mean_curvature_flow, 3 steps" "mean_curvature_flow, 40 steps"
# mean_curvature_flow and implicit_fairing: the guide's examples
"$mb" generate subdivide "$spot" --levels 1 --unit-area -o spot_unit.h5 > /dev/null
for n in 1 3 40; do
  printf 'input: spot_unit.h5\noutput: out/flow_%s.h5\nbackend: cpu\nstages:\n  - %s\n' "$n" \
      "{op: mean_curvature_flow, time_step: 0.01, steps: $n, rescale: area}" > flow.yaml
  "$mb" run flow.yaml > /dev/null
done
render spot_unit.h5 out/flow_1.h5 out/flow_3.h5 out/flow_40.h5 -o "$images/flow-spot.png" \
    --up y --panel-size 240 240 \
    --title "spot, unit area" "1 step" "3 steps" "40 steps: round"
"$mb" generate sphere --vertices 10000 --noise 0.02 -o noisy.h5 > /dev/null
for n in 1 3; do
  printf 'input: noisy.h5\noutput: out/fair_%s.h5\nbackend: cpu\nstages:\n  - %s\n' "$n" \
      "{op: implicit_fairing, weights: cotangent, time_step: 10, steps: $n}" > fair.yaml
  "$mb" run fair.yaml > /dev/null
done
render noisy.h5 out/fair_1.h5 out/fair_3.h5 -o "$images/fairing-sphere.png" --panel-size 240 240 \
    --title "noisy sphere" "1 step" "3 steps"
# deform: the guide's roof, planarised with hard constraints
"$mb" generate panels --vertices 400 --surface dome --lift 0.2 --handles roof_handles.txt \
    -o roof.h5 > /dev/null
printf 'input: roof.h5\noutput: roof_planar.h5\nbackend: cpu\nstages:\n  - %s\n' \
    "{op: deform, constraint: planar, hard: yes, iterations: 2000, tolerance: 1e-10}" > planarize.yaml
"$mb" run planarize.yaml > /dev/null
# the input has no planarity field (deform writes it on its output): add
# it to a copy, by the op's definition (the largest distance of a face's
# vertex from the face's least-squares plane over the mean edge length)
cp roof.h5 roof_in.h5
/usr/bin/python3 - roof_in.h5 <<'PY'
import sys
import h5py
import numpy as np
with h5py.File(sys.argv[1], "r+") as f:
    g = f["meshes"][list(f["meshes"].keys())[0]]
    v, off, idx = g["vertices"][()], g["face_offsets"][()], g["face_indices"][()]
    faces = [idx[a:b] for a, b in zip(off[:-1], off[1:])]
    edges = {tuple(sorted((int(fc[k]), int(fc[(k + 1) % len(fc)])))) for fc in faces
             for k in range(len(fc))}
    mean_edge = np.mean([np.linalg.norm(v[a] - v[b]) for a, b in edges])
    pl = []
    for fc in faces:
        p = v[fc] - v[fc].mean(0)
        n = np.linalg.svd(p)[2][-1]
        pl.append(np.abs(p @ n).max() / mean_edge)
    g.require_group("face_fields").create_dataset("planarity", data=np.array(pl)[:, None])
    print(f"input planarity: max {max(pl):.3g} mean edge lengths")
PY
render roof_in.h5 roof_planar.h5 -o "$images/deform-roof.png" --color planarity --log --range 1e-12 1e-2 \
    --view 35 300 --edges --panel-size 320 260 \
    --title "roof on a dome: input" "deform planar, hard: planar to 1e-10"
ls -l "$images"
