/* meshbatch: write the kind samples of coll_kinds.h (surface, triangulation2d,
 * polygons2d with faces of 3 to 8 vertices) to argv[1], collective over
 * MPI_COMM_WORLD; used by test_xdmf_kinds_meshio.py and test_xdmf_paraview.py. */
#include <mpi.h>
#include <stdio.h>

#include "coll_kinds.h"
#include "mb_collection.h"

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  int rank, size;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  if (argc != 2) {
    if (rank == 0) fprintf(stderr, "usage: %s out.h5\n", argv[0]);
    MPI_Finalize();
    return 2;
  }
  mb_mesh *all[KINDS_NMESH], *local[KINDS_NMESH];
  kinds_make(all);
  int n = kinds_local(all, rank, size, local);
  mb_error e = mb_collection_write(MPI_COMM_WORLD, argv[1], n, local);
  if (e) fprintf(stderr, "rank %d: %s\n%s", rank, mb_error_message(), mb_error_traceback());
  kinds_free(all);
  MPI_Finalize();
  return e ? 1 : 0;
}
