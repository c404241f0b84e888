/* meshbatch: the per-face projections of the deform op (see mb_deform.h,
 * Kaspar & Deng section 2.2.2.1): planar (best plane through the centroid,
 * normal of the smallest eigenvalue of the scatter matrix) and regular
 * (best similarity transform of the regular n-gon). float64 throughout.
 * The math is cuda/deform/mb_deform_face.h's, plain C here: the CPU and the
 * device run one text of the formulas (on the device only the regular
 * projection's cos and sin may round differently from the host's libm). */
/* No auto-vectorization here (the header's functions included below as
 * well): GCC 12's SLP vectorizer packs the scatter matrix's sums into
 * pairs that are stored and reloaded across a store-forwarding boundary
 * once per face point; without it a quad's planar projection took 140
 * against 175 ns (80,000 random near-planar quads, 20 passes, one core).
 * The rounding is the same (GCC vectorizes no floating-point sum without
 * -fassociative-math): the same bits either way. */
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC optimize("no-tree-vectorize")
#endif
#include "mb_deform.h"
#include "mb_deform_face.h"

void mb_deform_eigen3(const double S[9], double w[3], double V[9]) { mb_dface_eigen3(S, w, V); }

void mb_deform_project_planar(int n, const double *q, double *z) {
  mb_dface_project_planar(n, q, z);
}

double mb_deform_planarity(int n, const double *q) { return mb_dface_planarity(n, q); }

void mb_deform_project_regular(int n, const double *q, double *z) {
  mb_dface_project_regular(n, q, z);
}

double mb_deform_regularity(int n, const double *q) { return mb_dface_regularity(n, q); }
