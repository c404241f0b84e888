// flo_willmore: the flo project's host implementation of conformal Willmore
// flow (github nitronoid/flo, flo/include/flo/host; header-only over Eigen
// and libigl), built against a flo checkout that nobody here wrote, as the
// reference that meshbatch's willmore_flow is compared against step by step
// (compare_flo.py). Nothing of flo is copied here: this program includes
// flo's headers and calls its functions.
//
//   flo_willmore INPUT.obj OUTPUT.npy [--steps N] [--tau T] [--mode flo|rho]
//                [--back-substitutions B] [--normals area|angle]
//
// --mode flo  flo's own step, flo::host::willmore_flow with the forward-Euler
//             integrator of flo's sample (samples/host/willmore_flow): flo's
//             curvature change is rho = -(H_f + T P(H_f)) with H_f its signed
//             mean curvature (a third of the mean curvature: flo divides by
//             12 M and multiplies by 2) and P the projection off {1, N};
//             its eigenvector is one solve from the constant 1.
// --mode rho  meshbatch's curvature change, made of flo's pieces: rho =
//             -T P(3 H_f) (the mean curvature; libigl's vertex normals,
//             area-weighted as meshbatch's, or angle-weighted as flo's with
//             --normals angle; flo's vertex mass, Gram-Schmidt and projection),
//             then flo's intrinsic Dirac operator, its similarity transform
//             with B + 1 solves (--back-substitutions, default 4) and its
//             transformed edges (flo::host::spin_xform's steps, called one by
//             one for B); the Poisson solve is this program's (below: flo's
//             factors a singular matrix and fails on spot).
// Both: flo's positions are recentred on the vertex mean and scaled to a
// largest distance 1 from it after every step (flo's spin_positions), so a
// comparison is modulo a similarity.
//
// OUTPUT: float64 .npy [N + 1, nv, 3] (step 0 the input; from a step whose
// positions are not finite on, NaN). Prints "flo_willmore: mode M, tau T,
// D steps of N, X ms/step" (the median step). Exit 0, or 1 with a message. flo is compiled with FLO_USE_DOUBLE_PRECISION (float64).
#include <cmath>
#include <cstdio>
#include <iostream>

#include <Eigen/Dense>
#include <Eigen/Sparse>

#include <igl/cotmatrix.h>
#include <igl/doublearea.h>
#include <igl/per_vertex_normals.h>

#include "flo/host/divergent_edges.hpp"
#include "flo/host/flo_matrix_operation.hpp"
#include "flo/host/intrinsic_dirac.hpp"
#include "flo/host/mean_curvature.hpp"
#include "flo/host/orthonormalize.hpp"
#include "flo/host/project_basis.hpp"
#include "flo/host/similarity_xform.hpp"
#include "flo/host/spin_positions.hpp"
#include "flo/host/vertex_mass.hpp"
#include "flo/host/vertex_vertex_adjacency.hpp"
#include "flo/host/willmore_flow.hpp"

#include "ref_io.hpp"

using Mat3 = Eigen::Matrix<flo::real, Eigen::Dynamic, 3>;
using MatF = Eigen::Matrix<int, Eigen::Dynamic, 3>;
using Vec = Eigen::Matrix<flo::real, Eigen::Dynamic, 1>;

// meshbatch's curvature change with flo's pieces, then flo's spin_xform
// steps with `back` back substitutions.
static void rho_step(Mat3 &V, const MatF &F, double tau, int back, bool area_normals) {
  using namespace Eigen;
  Mat3 N;
  igl::per_vertex_normals(V, F,
                          area_normals ? igl::PER_VERTEX_NORMALS_WEIGHTING_TYPE_AREA
                                       : igl::PER_VERTEX_NORMALS_WEIGHTING_TYPE_ANGLE,
                          N);
  SparseMatrix<flo::real> L;
  igl::cotmatrix(V, F, L);
  L = (-L.eval());
  Vec M;
  flo::host::vertex_mass(V, F, M);
  Matrix<flo::real, Dynamic, 4> C(N.rows(), 4);
  C.col(0) = Vec::Ones(N.rows());
  C.col(1) = N.col(0);
  C.col(2) = N.col(1);
  C.col(3) = N.col(2);
  const auto ip = [&M](const Vec &x, const Vec &y) -> flo::real {
    return (x.transpose() * M.asDiagonal() * y)(0, 0);
  };
  Matrix<flo::real, Dynamic, Dynamic> U;
  flo::host::orthonormalize(C, ip, U);
  Vec H;
  flo::host::signed_mean_curvature(V, L, M, N, H);
  Vec rho = -tau * 3.0 * H;  // flo's H is a third of the mean curvature
  flo::host::project_basis(rho, U, ip);
  // flo::host::spin_xform, step by step
  auto QL = flo::host::to_real_quaternion_matrix(L);
  Vec A;
  igl::doublearea(V, F, A);
  A *= 0.5;
  Matrix<int, Dynamic, 1> VV, VA, VAK, VCV;
  flo::host::vertex_vertex_adjacency(F, VAK, VA, VV, VCV);
  SparseMatrix<flo::real> D;
  flo::host::intrinsic_dirac(V, F, VV, A, rho, D);
  Matrix<flo::real, Dynamic, 4> X;
  flo::host::similarity_xform(D, X, back);
  Matrix<flo::real, Dynamic, 4> E;
  flo::host::divergent_edges(V, F, X, L, E);
  // The Poisson solve: flo's spin_positions factors the whole 4n x 4n
  // Laplacian, which is singular (constants), and gives non-finite positions
  // on spot from the second or third step; here -L with vertex 0 pinned
  // (meshbatch's choice), the edges' divergence E's imaginary parts (x, y,
  // z; flo keeps w last), then flo's normalisation (vertex mean to the
  // origin, largest distance 1).
  SparseMatrix<flo::real> P = L;
  for (int k = 0; k < P.outerSize(); ++k)
    for (SparseMatrix<flo::real>::InnerIterator it(P, k); it; ++it)
      if (it.row() == 0 || it.col() == 0) it.valueRef() = it.row() == it.col() ? 1.0 : 0.0;
  Mat3 B = E.leftCols(3);
  B.row(0).setZero();
  SimplicialLLT<SparseMatrix<flo::real>> llt(P);
  if (llt.info() != Success) throw std::runtime_error("the pinned Laplacian's factor failed");
  Mat3 NV = llt.solve(B);
  NV.rowwise() -= NV.colwise().mean();
  NV /= std::sqrt(NV.rowwise().squaredNorm().maxCoeff());
  V = NV;
  (void)QL;
}

struct ForwardEuler {
  flo::real tau;
  void operator()(Vec &x, const Vec &dx) const { x += dx * tau; }
};

int main(int argc, char **argv) {
  try {
    mbref::Args args(argc, argv);
    if (args.pos.size() != 2) {
      std::fprintf(stderr, "usage: flo_willmore INPUT.obj OUTPUT.npy [--steps N] [--tau T] "
                           "[--mode flo|rho] [--back-substitutions B]\n");
      return 2;
    }
    const int steps = std::atoi(args.get("--steps", "5"));
    const double tau = std::atof(args.get("--tau", "0.05"));
    const std::string mode = args.get("--mode", "rho");
    const int back = std::atoi(args.get("--back-substitutions", "4"));
    const std::string normals = args.get("--normals", "area");
    if (steps < 1 || !(tau > 0) || (mode != "flo" && mode != "rho") || back < 0 ||
        (normals != "area" && normals != "angle"))
      throw std::runtime_error("bad --steps, --tau, --mode, --back-substitutions or --normals");
    const mbref::Mesh m = mbref::read_obj(args.pos[0]);
    const long nv = (long)m.nv(), nf = (long)m.nf();
    Mat3 V(nv, 3);
    MatF F(nf, 3);
    for (long i = 0; i < nv; i++)
      for (int k = 0; k < 3; k++) V(i, k) = m.xyz[3 * i + k];
    for (long f = 0; f < nf; f++)
      for (int k = 0; k < 3; k++) F(f, k) = m.tri[3 * f + k];
    std::vector<double> out((std::size_t)(steps + 1) * nv * 3, NAN);
    auto keep = [&](int s) {
      for (long i = 0; i < nv; i++)
        for (int k = 0; k < 3; k++) out[((std::size_t)s * nv + i) * 3 + k] = V(i, k);
    };
    keep(0);
    std::vector<double> ms;
    int done = 0;
    for (int s = 1; s <= steps; s++) {
      const double t0 = mbref::now_ms();
      if (mode == "flo") {
        ForwardEuler integrator{(flo::real)tau};
        flo::host::willmore_flow(V, F, integrator);
      } else {
        rho_step(V, F, tau, back, normals == "area");
      }
      ms.push_back(mbref::now_ms() - t0);
      if (!V.allFinite()) {
        std::printf("flo_willmore: step %d: non-finite positions; steps %d on are NaN\n", s, s);
        break;
      }
      keep(s);
      done = s;
    }
    mbref::write_npy(args.pos[1], {(std::size_t)steps + 1, (std::size_t)nv, 3}, out.data());
    std::printf("flo_willmore: mode %s, tau %g, %d steps of %d, %.3f ms/step\n", mode.c_str(),
                tau, done, steps, mbref::median(ms));
    return 0;
  } catch (const std::exception &e) {
    std::fprintf(stderr, "flo_willmore: %s\n", e.what());
    return 1;
  }
}
