#!/bin/sh
# Run scripts/render-pvpython.py headless: pvpython under a virtual X server
# (xvfb-run, Debian package xvfb; a 24-bit screen). Debian's ParaView 5.11
# needs an X display even with --force-offscreen-rendering, and now and then
# aborts while opening it ("bad X server connection", SIGABRT, exit 134,
# before anything is written): such a run is retried, 3 tries in all.
#
#   scripts/render-pvpython.sh FILE[:MESH] ... -o OUT.png [options]
#
# The options are render-pvpython.py's (--help). Exit codes: those of
# render-pvpython.py; 127 when pvpython or xvfb-run is missing.
here=$(dirname "$0")
for tool in pvpython xvfb-run; do
  command -v "$tool" > /dev/null 2>&1 || {
    echo "render-pvpython.sh: $tool is missing (Debian: apt-get install paraview xvfb)" >&2
    exit 127
  }
done
try=1
while :; do
  xvfb-run -a -s "-screen 0 1280x1024x24" pvpython "$here/render-pvpython.py" "$@"
  rc=$?
  [ "$rc" -ne 134 ] || [ "$try" -ge 3 ] && exit "$rc"
  echo "render-pvpython.sh: pvpython aborted (exit 134) opening its window; try $((try + 1)) of 3" >&2
  try=$((try + 1))
done
