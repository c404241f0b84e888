// igl_mcf: libigl's conformalized mean-curvature flow loop (libigl tutorial
// 205 "Laplacian", the key ' ' handler), run N times without the viewer, as
// the reference that meshbatch's mean_curvature_flow (variant
// conformalized, rescale area) is compared against step by step
// (compare_flow.py; docs/benchmarks.md, "Reference programs").
//
//   igl_mcf INPUT.obj OUTPUT.npy [--steps N] [--dt DT] [--every 1|0] [--repeat R]
//
// The loop, as the tutorial writes it (Kazhdan, Solomon, Ben-Chen, "Can
// mean-curvature flow be made non-singular?", SGP 2012):
//   L = cotmatrix(V, F)                      once, from the input
//   U = V
//   each step:
//     M = massmatrix(U, F, BARYCENTRIC)      lumped, area / 3 per corner
//     U = SimplicialLLT(M - dt L).solve(M U) a fresh factorization each step
//     U -= area-weighted barycentre of U     (doublearea, barycenter)
//     U /= sqrt(area of U)                   unit surface area
// L is libigl's cotangent Laplacian ((cot a + cot b) / 2 off the diagonal,
// negative semi-definite), so M - dt L is positive definite for dt > 0.
// dt is in units of area (the mesh has unit area after the first step).
//
// OUTPUT: float64 .npy of shape [N + 1, nv, 3] (step 0 is the input as
// read, step k the positions after k steps), or [nv, 3] with --every 0
// (the last step only). Prints the time of each phase per step, in ms,
// on one line that compare_flow.py parses ("igl_mcf: ... ms/step"): with
// --repeat R the whole run (cotmatrix and N steps) is made R times from the
// input and each figure is the median over the R runs (the output is the
// last run's; every run computes the same bits).
// Exit 0, or 1 with a message (unreadable input, failed factorization).
#include <cmath>
#include <cstdio>
#include <iostream>

#include <Eigen/Dense>
#include <Eigen/Sparse>

#include <igl/barycenter.h>
#include <igl/cotmatrix.h>
#include <igl/doublearea.h>
#include <igl/massmatrix.h>

#include "ref_io.hpp"

int main(int argc, char **argv) {
  try {
    mbref::Args args(argc, argv);
    if (args.pos.size() != 2) {
      std::fprintf(stderr, "usage: igl_mcf INPUT.obj OUTPUT.npy [--steps N] [--dt DT] [--every 1|0] "
                           "[--repeat R]\n");
      return 2;
    }
    const int steps = std::atoi(args.get("--steps", "10"));
    const double dt = std::strtod(args.get("--dt", "0.001"), nullptr);
    const bool every = std::atoi(args.get("--every", "1")) != 0;
    const int repeat = std::atoi(args.get("--repeat", "1"));
    if (steps < 0 || !(dt > 0) || repeat < 1)
      throw std::runtime_error("--steps must be >= 0, --dt > 0 and --repeat >= 1");
    mbref::Mesh mesh = mbref::read_obj(args.pos[0]);
    const Eigen::Index nv = (Eigen::Index)mesh.nv(), nf = (Eigen::Index)mesh.nf();
    Eigen::MatrixXd V(nv, 3);
    Eigen::MatrixXi F(nf, 3);
    for (Eigen::Index i = 0; i < nv; i++)
      for (int d = 0; d < 3; d++) V(i, d) = mesh.xyz[3 * i + d];
    for (Eigen::Index f = 0; f < nf; f++)
      for (int d = 0; d < 3; d++) F(f, d) = mesh.tri[3 * f + d];

    std::vector<double> out;
    std::vector<double> r_cot, r_mass, r_factor, r_solve, r_norm, r_step;
    for (int rep = 0; rep < repeat; rep++) {
    out.clear();
    auto keep = [&](const Eigen::MatrixXd &U) {
      for (Eigen::Index i = 0; i < nv; i++)
        for (int d = 0; d < 3; d++) out.push_back(U(i, d));
    };

    double t0 = mbref::now_ms();
    Eigen::SparseMatrix<double> L;
    igl::cotmatrix(V, F, L);
    const double t_cot = mbref::now_ms() - t0;

    Eigen::MatrixXd U = V;
    if (every) keep(U);
    double t_mass = 0, t_factor = 0, t_solve = 0, t_norm = 0;
    for (int s = 0; s < steps; s++) {
      double a = mbref::now_ms();
      Eigen::SparseMatrix<double> M;
      igl::massmatrix(U, F, igl::MASSMATRIX_TYPE_BARYCENTRIC, M);
      double b = mbref::now_ms();
      const Eigen::SparseMatrix<double> S = M - dt * L;
      Eigen::SimplicialLLT<Eigen::SparseMatrix<double>> solver(S);
      if (solver.info() != Eigen::Success)
        throw std::runtime_error("step " + std::to_string(s + 1) + ": SimplicialLLT failed");
      double c = mbref::now_ms();
      U = solver.solve(M * U).eval();
      double d = mbref::now_ms();
      Eigen::VectorXd dblA;
      igl::doublearea(U, F, dblA);
      const double area = 0.5 * dblA.sum();
      Eigen::MatrixXd BC;
      igl::barycenter(U, F, BC);
      Eigen::RowVector3d centroid(0, 0, 0);
      for (Eigen::Index i = 0; i < BC.rows(); i++) centroid += 0.5 * dblA(i) / area * BC.row(i);
      U.rowwise() -= centroid;
      U.array() /= std::sqrt(area);
      double e = mbref::now_ms();
      t_mass += b - a;
      t_factor += c - b;
      t_solve += d - c;
      t_norm += e - d;
      if (every || s == steps - 1) keep(U);
    }
    if (!every && steps == 0) keep(U);
    const double n = steps > 0 ? steps : 1;
    r_cot.push_back(t_cot);
    r_mass.push_back(t_mass / n);
    r_factor.push_back(t_factor / n);
    r_solve.push_back(t_solve / n);
    r_norm.push_back(t_norm / n);
    r_step.push_back((t_mass + t_factor + t_solve + t_norm) / n);
    }
    if (every) mbref::write_npy(args.pos[1], {(std::size_t)steps + 1, (std::size_t)nv, 3}, out.data());
    else mbref::write_npy(args.pos[1], {(std::size_t)nv, 3}, out.data());
    using mbref::median;
    std::printf("igl_mcf: %lld vertices, %lld triangles, %d steps of dt %g, median of %d: "
                "cotmatrix %.3f ms once; per step massmatrix %.3f, LLT factor %.3f, solve %.3f, "
                "normalise %.3f; %.3f ms/step\n",
                (long long)nv, (long long)nf, steps, dt, repeat, median(r_cot), median(r_mass),
                median(r_factor), median(r_solve), median(r_norm), median(r_step));
    return 0;
  } catch (const std::exception &ex) {
    std::fprintf(stderr, "igl_mcf: %s\n", ex.what());
    return 1;
  }
}
