// cgal_smooth_shape: CGAL's Polygon_mesh_processing::smooth_shape on an
// OBJ mesh, timed, as the second reference of meshbatch's
// mean_curvature_flow (compare_flow.py; docs/benchmarks.md, "Reference
// programs").
//
//   cgal_smooth_shape INPUT.obj OUTPUT.npy [--steps N] [--dt DT] [--repeat R]
//
// What smooth_shape computes (CGAL 5.5, curvature_flow_impl.h): the
// cotangent stiffness K once from the input (K_ij = cot a + cot b, twice
// libigl's L_ij), then per iteration a lumped mass D (area / 6 per corner,
// half of the barycentric mass M), the system (D - t K) X' = D X solved per
// coordinate with Eigen's BiCGSTAB and an incomplete-LUT preconditioner
// (CGAL's default), and, on a closed mesh, a uniform scaling about the
// volume centroid that restores the volume the mesh had before the step.
// Since D - t K = (M - 4 t L) / 2 and D X = M X / 2, CGAL's time t is
// meshbatch's (and libigl's) time step dt / 4: this program takes DT in
// meshbatch's convention and passes t = DT / 4. The normalisation differs
// (volume kept, not area), so after the first step the effective time step
// differs from libigl's and meshbatch's by the ratio of the areas; after
// one step the two agree up to a similarity (compare_flow.py checks that).
//
// OUTPUT: float64 .npy [nv, 3], the positions after N iterations, in the
// input's vertex order. Prints the time of smooth_shape (one call with
// number_of_iterations N, on a mesh built afresh from the input) per step,
// in ms, the median over --repeat R calls ("cgal_smooth_shape: ...
// ms/step"). Exit 0, or 1 with a message.
#include <cstdio>
#include <vector>

#include <CGAL/Exact_predicates_inexact_constructions_kernel.h>
#include <CGAL/Polygon_mesh_processing/smooth_shape.h>
#include <CGAL/Surface_mesh.h>

#include "ref_io.hpp"

typedef CGAL::Exact_predicates_inexact_constructions_kernel K;
typedef CGAL::Surface_mesh<K::Point_3> Surface;

int main(int argc, char **argv) {
  try {
    mbref::Args args(argc, argv);
    if (args.pos.size() != 2) {
      std::fprintf(stderr, "usage: cgal_smooth_shape INPUT.obj OUTPUT.npy [--steps N] [--dt DT] "
                           "[--repeat R]\n");
      return 2;
    }
    const int steps = std::atoi(args.get("--steps", "10"));
    const double dt = std::strtod(args.get("--dt", "0.001"), nullptr);
    const int repeat = std::atoi(args.get("--repeat", "1"));
    if (steps < 1 || !(dt > 0) || repeat < 1)
      throw std::runtime_error("--steps must be >= 1, --dt > 0 and --repeat >= 1");
    mbref::Mesh mesh = mbref::read_obj(args.pos[0]);
    const double t = dt / 4.0;
    std::vector<double> r_ms;
    Surface sm;
    std::vector<Surface::Vertex_index> vid;
    for (int rep = 0; rep < repeat; rep++) {
    sm.clear();
    vid.clear();
    for (std::size_t i = 0; i < mesh.nv(); i++)
      vid.push_back(sm.add_vertex(K::Point_3(mesh.xyz[3 * i], mesh.xyz[3 * i + 1], mesh.xyz[3 * i + 2])));
    for (std::size_t f = 0; f < mesh.nf(); f++) {
      auto fi = sm.add_face(vid[mesh.tri[3 * f]], vid[mesh.tri[3 * f + 1]], vid[mesh.tri[3 * f + 2]]);
      if (fi == Surface::null_face())
        throw std::runtime_error("face " + std::to_string(f) + " is not manifold for a Surface_mesh");
    }
    double t0 = mbref::now_ms();
    CGAL::Polygon_mesh_processing::smooth_shape(
        sm, t, CGAL::parameters::number_of_iterations((unsigned)steps));
    r_ms.push_back(mbref::now_ms() - t0);
    }
    const double ms = mbref::median(r_ms);
    std::vector<double> out;
    for (std::size_t i = 0; i < mesh.nv(); i++) {
      const K::Point_3 &p = sm.point(vid[i]);
      out.push_back(p.x());
      out.push_back(p.y());
      out.push_back(p.z());
    }
    mbref::write_npy(args.pos[1], {mesh.nv(), 3}, out.data());
    std::printf("cgal_smooth_shape: %zu vertices, %zu triangles, %d steps of dt %g (CGAL time %g), "
                "median of %d: %.3f ms in all, %.3f ms/step\n",
                mesh.nv(), mesh.nf(), steps, dt, t, repeat, ms, ms / steps);
    return 0;
  } catch (const std::exception &ex) {
    std::fprintf(stderr, "cgal_smooth_shape: %s\n", ex.what());
    return 1;
  }
}
