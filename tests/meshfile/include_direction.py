"""The mesh file code depends one way (docs/architecture.md, "io"): the
dispatcher io/mb_meshfile.c calls the formats' readers and writers, which
call the helpers of io/mb_meshfile_util.c, which call neither. Fails when a
reader or the helpers include the dispatcher's header or call its
functions, or the helpers include the formats' header.

usage: include_direction.py SOURCE_DIR"""
import os
import re
import sys

io = os.path.join(sys.argv[1], "io")
readers = ["mb_obj.c", "mb_off.c", "mb_ply.c", "mb_trianglefile.c", "mb_npy.c", "mb_vtk.c"]
helpers = ["mb_meshfile_util.c", "mb_meshfile_util.h"]
formats_header = ["mb_meshfile_private.h"]  # included by mb_obj.c, mb_off.c, mb_ply.c
dispatcher_calls = re.compile(
    r"\b(mb_meshfile_read|mb_meshfile_write|mb_meshfile_format_of|mb_mesh_convert_kind)\s*\(")
bad = []
for name in readers + helpers + formats_header:
    text = open(os.path.join(io, name)).read()
    includes = re.findall(r'#include\s+"([^"]+)"', text)
    if "mb_meshfile.h" in includes:
        bad.append(f"{name} includes mb_meshfile.h (the dispatcher)")
    if name in helpers and "mb_meshfile_private.h" in includes:
        bad.append(f"{name} includes mb_meshfile_private.h (the formats)")
    code = re.sub(r"/\*.*?\*/", "", text, flags=re.S)
    for m in dispatcher_calls.finditer(code):
        bad.append(f"{name} calls {m.group(1)} (the dispatcher)")
    if name in helpers:
        for m in re.finditer(r"\b(mb_(?:obj|off|ply)_(?:read|write)|mb_trianglefile_\w+|mb_npy_\w+|"
                             r"mb_vtk_\w+)\s*\(", code):
            bad.append(f"{name} calls {m.group(1)} (a format)")
# the dispatcher itself must still be where the formats are called from
if not re.search(r"\bmb_obj_read\s*\(", open(os.path.join(io, "mb_meshfile.c")).read()):
    bad.append("mb_meshfile.c does not call mb_obj_read: is this check still looking at the right files?")
for b in bad:
    print("include_direction:", b)
n = len(readers) + len(helpers) + len(formats_header)
print("include_direction:", "FAILED" if bad else "ok", f"({n} files checked)")
sys.exit(1 if bad else 0)
