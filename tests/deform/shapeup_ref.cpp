// meshbatch tests: libigl's ShapeUp (igl::shapeup_precomputation and
// igl::shapeup_solve, after Bouaziz et al., "Shape-Up: Shaping Discrete
// Geometry with Projections", SGP 2012) run on a polygon mesh, as the
// reference of compare_shapeup.py for the deform op's soft mode.
//
//   shapeup_ref IN.txt OUT.txt ITERATIONS CLOSE SHAPE planar|regular
//
// IN.txt (written by compare_shapeup.py): a line "NV NF", NV lines "x y z"
// (input positions), NV lines "tx ty tz" (the closeness targets of every
// vertex: the handle's target or the input position), NF lines "n i0 ..
// i(n-1)" (faces, 0-based). Every vertex is one of ShapeUp's closeness
// vertices b (weight CLOSE, its closeCoeff), every face a shape set (weight
// SHAPE, its shapeCoeff times wShape 1); no smoothness (smoothCoeff 0).
// ITERATIONS local-global iterations (pTolerance 0: none stops early).
// planar: this file's best-plane projection (the plane through the face's
// centroid whose normal is the eigenvector of the smallest eigenvalue of the
// scatter matrix, Eigen's SelfAdjointEigenSolver; libigl has no planarity
// projection); regular: libigl's igl::shapeup_regular_face_projection.
// OUT.txt: NV lines "x y z" (%.17g). Exit 0, or 1 with a message.
#include <cstdio>
#include <cstring>
#include <fstream>
#include <functional>
#include <iostream>

#include <Eigen/Core>
#include <Eigen/Eigenvalues>
#include <igl/shapeup.h>

static bool planar_projection(const Eigen::MatrixBase<Eigen::MatrixXd> &P,
                              const Eigen::MatrixBase<Eigen::VectorXi> &SC,
                              const Eigen::MatrixBase<Eigen::MatrixXi> &S,
                              Eigen::PlainObjectBase<Eigen::MatrixXd> &projP) {
  projP.conservativeResize(SC.rows(), 3 * SC.maxCoeff());
  for (int f = 0; f < S.rows(); f++) {
    const int n = SC(f);
    Eigen::RowVector3d c = Eigen::RowVector3d::Zero();
    for (int k = 0; k < n; k++) c += P.row(S(f, k));
    c /= double(n);
    Eigen::Matrix3d M = Eigen::Matrix3d::Zero();
    for (int k = 0; k < n; k++) {
      const Eigen::RowVector3d q = P.row(S(f, k)) - c;
      M += q.transpose() * q;
    }
    Eigen::SelfAdjointEigenSolver<Eigen::Matrix3d> es(M);
    const Eigen::RowVector3d nrm = es.eigenvectors().col(0).transpose();
    // ShapeUp's shape rows are centred (DShape = I - 1/n): the projection in
    // centred coordinates
    for (int k = 0; k < n; k++) {
      const Eigen::RowVector3d q = P.row(S(f, k)) - c;
      projP.block(f, 3 * k, 1, 3) = q - q.dot(nrm) * nrm;
    }
  }
  return true;
}

int main(int argc, char **argv) {
  if (argc != 7) {
    std::cerr << "usage: shapeup_ref IN.txt OUT.txt ITERATIONS CLOSE SHAPE planar|regular\n";
    return 1;
  }
  std::ifstream in(argv[1]);
  int nv = 0, nf = 0;
  if (!(in >> nv >> nf) || nv < 1 || nf < 1) {
    std::cerr << argv[1] << ": bad header\n";
    return 1;
  }
  Eigen::MatrixXd P(nv, 3), T(nv, 3);
  for (int i = 0; i < nv; i++) in >> P(i, 0) >> P(i, 1) >> P(i, 2);
  for (int i = 0; i < nv; i++) in >> T(i, 0) >> T(i, 1) >> T(i, 2);
  std::vector<std::vector<int>> faces(nf);
  int nmax = 0;
  for (int f = 0; f < nf; f++) {
    int n = 0;
    in >> n;
    faces[f].resize(n);
    for (int k = 0; k < n; k++) in >> faces[f][k];
    nmax = std::max(nmax, n);
  }
  if (!in) {
    std::cerr << argv[1] << ": truncated\n";
    return 1;
  }
  Eigen::VectorXi SC(nf), b(nv);
  Eigen::MatrixXi S = Eigen::MatrixXi::Constant(nf, nmax, -1);
  for (int f = 0; f < nf; f++) {
    SC(f) = int(faces[f].size());
    for (int k = 0; k < SC(f); k++) S(f, k) = faces[f][k];
  }
  for (int i = 0; i < nv; i++) b(i) = i;
  Eigen::MatrixXi E(1, 2); // one (unweighted: smoothCoeff 0) smoothness row
  E << S(0, 0), S(0, 1);
  Eigen::VectorXd wShape = Eigen::VectorXd::Ones(nf), wSmooth = Eigen::VectorXd::Ones(1);
  igl::ShapeupData su;
  su.maxIterations = std::atoi(argv[3]);
  su.pTolerance = 0;
  su.closeCoeff = std::atof(argv[4]);
  su.shapeCoeff = std::atof(argv[5]);
  su.smoothCoeff = 0;
  if (!igl::shapeup_precomputation(P, SC, S, E, b, wShape, wSmooth, su)) {
    std::cerr << "shapeup_precomputation failed\n";
    return 1;
  }
  std::function<bool(const Eigen::MatrixBase<Eigen::MatrixXd> &,
                     const Eigen::MatrixBase<Eigen::VectorXi> &,
                     const Eigen::MatrixBase<Eigen::MatrixXi> &,
                     Eigen::PlainObjectBase<Eigen::MatrixXd> &)>
      proj = !std::strcmp(argv[6], "regular") ? igl::shapeup_regular_face_projection
                                               : planar_projection;
  Eigen::MatrixXd X;
  igl::shapeup_solve(T, proj, P, su, true, X);
  FILE *out = std::fopen(argv[2], "w");
  if (!out) {
    std::cerr << argv[2] << ": cannot write\n";
    return 1;
  }
  for (int i = 0; i < nv; i++) std::fprintf(out, "%.17g %.17g %.17g\n", X(i, 0), X(i, 1), X(i, 2));
  std::fclose(out);
  return 0;
}
