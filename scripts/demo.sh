#!/usr/bin/env bash
# Install what is missing, build, and smooth the demo meshes (data/meshes)
# with jobs/demo.yaml on 2 MPI ranks. Prints where the results are and how
# to put meshbatch on the PATH.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/setup.sh
exe="${MB_BUILD_DIR:-build}/meshbatch"
mpirun --oversubscribe -np 2 "$exe" run jobs/demo.yaml
echo
"$exe" info out/demo/smoothed.h5 | grep -E "^[a-z_]+:|stage_0"
# The Python with meshio: setup.sh installs python3-meshio for /usr/bin/python3,
# which another python3 earlier on PATH (pyenv, a virtualenv) may hide.
py=python3
python3 -c 'import meshio' >/dev/null 2>&1 || py=/usr/bin/python3
# meshbatch on the PATH: the build folder, absolute, for the user's shell
bindir=$(cd "$(dirname "$exe")" && pwd)
# Every command below is run by the test cli_demo_hints (tests/cli/cli_test.py).
cat <<TXT

Results: out/demo/smoothed.h5 (HDF5 collection), out/demo/smoothed.xdmf beside it (all
meshes, for ParaView) and out/demo/smoothed.NAME.xdmf (one mesh each, for meshio; meshio
raises SystemExit on the all-meshes and grid XDMF, and reads OFF of triangles only).
  ParaView:  paraview out/demo/smoothed.xdmf   (choose the "Xdmf3 Reader" if asked)
  meshio:    $py -c 'import meshio; m = meshio.read("out/demo/smoothed.spot.xdmf"); print(m)'
  OBJ files: $exe export out/demo/smoothed.h5 -o out/demo/obj --format obj

meshbatch on your PATH (this shell; add the line to ~/.bashrc to keep it):
  PATH:      export PATH="$bindir:\$PATH"
  or install it: cmake --install $(dirname "$exe") --prefix ~/.local   (~/.local/bin on the PATH)
TXT
