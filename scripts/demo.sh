#!/usr/bin/env bash
# Install what is missing, build, and smooth the demo meshes (data/meshes)
# with jobs/demo.yaml on 2 MPI ranks. Prints where the results are.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/setup.sh
exe="${MB_BUILD_DIR:-build}/meshbatch"
mpirun --oversubscribe -np 2 "$exe" run jobs/demo.yaml
echo
"$exe" info out/demo/smoothed.h5 | grep -E "^[a-z_]+:|stage_0"
cat <<TXT

Results: out/demo/smoothed.h5 (HDF5 collection) and out/demo/smoothed.xdmf beside it.
  ParaView:  paraview out/demo/smoothed.xdmf   (choose the "Xdmf3 Reader S" if asked)
  meshio:    python3 -c 'import meshio; m = meshio.read("out/demo/smoothed.xdmf"); print(m)'
  OBJ files: $exe export out/demo/smoothed.h5 -o out/demo/obj --format obj
TXT
