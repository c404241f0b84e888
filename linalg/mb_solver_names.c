/* meshbatch: names of the solver methods (see mb_solver.h). */
#include "mb_solver.h"

const char *mb_solver_method_name(mb_solver_method m) {
  switch (m) {
  case MB_SOLVER_AUTO: return "auto";
  case MB_SOLVER_CHOLESKY: return "cholesky";
  case MB_SOLVER_PCG: return "pcg";
  case MB_SOLVER_AMG: return "amg";
  }
  return NULL;
}
