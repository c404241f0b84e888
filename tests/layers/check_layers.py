#!/usr/bin/env python3
"""The layers depend one way (docs/architecture.md, "Layers, one way"):

    core  <-  io, partition  <-  linalg  <-  ops  <-  runner  <-  cli

Every source file's folder names its layer; every `#include "..."` of a
meshbatch header must name a header of the same layer or of a layer below
(io and partition are side by side: neither includes the other). The build
enforces the same rule through each layer's include folders; this test
says which file breaks it, and also fails when a header's name is in two
layers (an include would then depend on the folder order).

    check_layers.py SOURCE_DIR      exit 0: the rule holds; 1: it does not
"""
import os
import re
import sys

# folder (relative to the source tree) -> layer; the longest prefix wins.
LAYERS = {
    "src/core": "core", "cuda/core": "core",
    "io": "io",
    "partition": "partition", "cuda/partition": "partition",
    "linalg": "linalg", "cuda/linalg": "linalg",
    "src/ops": "ops", "cuda": "ops",          # cuda/<room>/ for the op rooms
    "src/runner": "runner",
    "src/cli": "cli",
}
BELOW = {  # what each layer may include besides itself
    "core": set(),
    "io": {"core"},
    "partition": {"core"},
    "linalg": {"core", "partition"},
    "ops": {"core", "io", "partition", "linalg"},
    "runner": {"core", "io", "partition", "linalg", "ops"},
    "cli": {"core", "io", "partition", "linalg", "ops", "runner"},
}
GENERATED = {"mb_config.h": "core"}  # made by CMake from src/core/mb_config.h.in
INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)


def layer_of(rel):
    best = None
    for prefix, layer in LAYERS.items():
        if rel == prefix or rel.startswith(prefix + "/"):
            if best is None or len(prefix) > len(best[0]):
                best = (prefix, layer)
    return best[1] if best else None


def main():
    root = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else ".")
    files, headers = [], {}
    for top in ("src", "cuda", "io", "partition", "linalg"):
        for d, _, names in os.walk(os.path.join(root, top)):
            for n in names:
                if n.endswith((".c", ".h", ".cu", ".cuh", ".def")):
                    rel = os.path.relpath(os.path.join(d, n), root)
                    layer = layer_of(rel)
                    files.append((rel, layer))
                    if n.endswith((".h", ".cuh", ".def")):
                        headers.setdefault(n, set()).add((layer, rel))
    bad = []
    for name, where in sorted(headers.items()):
        if len({layer for layer, _ in where}) > 1:
            bad.append(f"{name} is a header of several layers: {sorted(r for _, r in where)}")
    for rel, layer in files:
        with open(os.path.join(root, rel), encoding="utf-8", errors="replace") as f:
            text = f.read()
        for inc in INCLUDE.findall(text):
            name = os.path.basename(inc)
            if name in GENERATED:
                target = GENERATED[name]
            elif name in headers:
                target = sorted(headers[name])[0][0]
            else:
                bad.append(f"{rel}: includes \"{inc}\", which is no header of the source tree")
                continue
            if target != layer and target not in BELOW[layer]:
                bad.append(f"{rel} ({layer}) includes {inc} ({target}): a {layer} file may "
                           f"include {', '.join(sorted(BELOW[layer] | {layer}))} headers only")
    for b in bad:
        print("FAIL:", b)
    print(f"{len(files)} files of {len(LAYERS)} layer folders read; {len(bad)} wrong-way "
          f"include{'s' if len(bad) != 1 else ''}")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
