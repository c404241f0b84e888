/* polylla_tool: a small driver of the Polylla CPU backend for
 * scripts/polylla-reference.sh (not a test).
 *
 *   polylla_tool run IN OUT.off [--repeat R] [--check]
 *       IN: STEM.node or STEM.ele (Triangle), or any mesh file meshbatch
 *       reads (taken as a triangulation2d). Runs mb_polylla_cpu R times
 *       (default 1), writes the polygons of the last run to OUT.off and
 *       prints one JSON object: counts, the polygon-set hash, and per-phase
 *       times of the run with the smallest label + repair + traversal time
 *       (also the median of that sum). --check runs the independent checker.
 *   polylla_tool delaunay N SEED STEM [--clustered]
 *       Writes the Delaunay triangulation of N random points
 *       (mb_generate_delaunay) as STEM.node/.ele/.neigh.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#ifdef _OPENMP
#include <omp.h>
#endif

#include "mb_meshfile.h"
#include "mb_trianglefile.h"
#include "polylla_check.h"
#include "mb_generate.h"

static int die(const char *what) {
  fprintf(stderr, "polylla_tool: %s: %s\n", what, mb_error_message());
  return 1;
}

static int ends_with(const char *s, const char *suf) {
  size_t n = strlen(s), k = strlen(suf);
  return n >= k && !strcmp(s + n - k, suf);
}

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

static int write_off(const char *path, const mb_mesh *p) {
  FILE *f = fopen(path, "w");
  if (!f) return 0;
  fprintf(f, "OFF\n%" PRId64 " %" PRId64 " 0\n", p->nv, p->nf);
  for (int64_t v = 0; v < p->nv; v++)
    fprintf(f, "%.17g %.17g 0\n", p->xyz[3 * v], p->xyz[3 * v + 1]);
  for (int64_t q = 0; q < p->nf; q++) {
    fprintf(f, "%" PRId64, p->face_offsets[q + 1] - p->face_offsets[q]);
    for (int64_t i = p->face_offsets[q]; i < p->face_offsets[q + 1]; i++)
      fprintf(f, " %" PRId64, p->face_indices[i]);
    fputc('\n', f);
  }
  return fclose(f) == 0;
}

static int cmd_run(int argc, char **argv) {
  if (argc < 4) return fprintf(stderr, "usage: polylla_tool run IN OUT.off [--repeat R] [--check] [--ties key|corners]\n"), 2;
  int repeat = 1, check = 0;
  mb_polylla_opts opts = {.ties = MB_POLYLLA_TIES_KEY};
  for (int i = 4; i < argc; i++) {
    if (!strcmp(argv[i], "--repeat") && i + 1 < argc)
      repeat = atoi(argv[++i]);
    else if (!strcmp(argv[i], "--ties") && i + 1 < argc && !strcmp(argv[i + 1], "corners"))
      opts.ties = MB_POLYLLA_TIES_CORNERS, i++;
    else if (!strcmp(argv[i], "--ties") && i + 1 < argc && !strcmp(argv[i + 1], "key"))
      i++;
    else if (!strcmp(argv[i], "--check"))
      check = 1;
    else
      return fprintf(stderr, "polylla_tool: unknown option %s\n", argv[i]), 2;
  }
  if (repeat < 1) repeat = 1;
  mb_mesh *tri = NULL;
  if (ends_with(argv[2], ".node") || ends_with(argv[2], ".ele")) {
    if (mb_trianglefile_read(argv[2], &tri)) return die(argv[2]);
  } else {
    if (mb_meshfile_read(argv[2], &tri)) return die(argv[2]);
    tri->kind = MB_KIND_TRIANGULATION2D;
  }
  mb_polylla_stats best, st;
  double *sums = malloc(sizeof *sums * (size_t)repeat);
  mb_mesh *poly = NULL;
  for (int r = 0; r < repeat; r++) {
    mb_mesh_free(poly);
    poly = NULL;
    if (mb_polylla_cpu(tri, &opts, &poly, &st)) return die("mb_polylla_cpu");
    sums[r] = st.ms_label + st.ms_repair + st.ms_traversal;
    if (r == 0 || sums[r] < best.ms_label + best.ms_repair + best.ms_traversal) best = st;
  }
  qsort(sums, (size_t)repeat, sizeof *sums, cmp_double);
  if (check) {
    char why[512];
    if (!polylla_check(tri, poly, why, sizeof why) ||
        !polylla_check_rules_ties(tri, poly, opts.ties, why, sizeof why)) {
      fprintf(stderr, "polylla_tool: output invalid: %s\n", why);
      return 1;
    }
  }
  if (!write_off(argv[3], poly)) return fprintf(stderr, "polylla_tool: cannot write %s\n", argv[3]), 1;
  int threads = 1;
#ifdef _OPENMP
  threads = omp_get_max_threads();
#endif
  printf("{\"triangles\": %" PRId64 ", \"vertices\": %" PRId64 ", \"polygons\": %" PRId64
         ", \"frontier_edges\": %" PRId64 ", \"barrier_edge_tips\": %" PRId64
         ", \"polygons_repaired\": %" PRId64 ", \"set_hash\": \"%016" PRIx64 "\""
         ", \"threads\": %d, \"repeat\": %d, \"checked\": %s"
         ", \"ms_halfedge\": %.3f, \"ms_label\": %.3f, \"ms_repair\": %.3f"
         ", \"ms_traversal\": %.3f, \"ms_label_repair_traversal\": %.3f"
         ", \"ms_label_repair_traversal_median\": %.3f, \"ms_total\": %.3f}\n",
         best.triangles, tri->nv, best.polygons, best.frontier_edges, best.barrier_edge_tips,
         best.polygons_repaired, polylla_set_hash(poly), threads, repeat,
         check ? "true" : "false", best.ms_halfedge, best.ms_label, best.ms_repair,
         best.ms_traversal, best.ms_label + best.ms_repair + best.ms_traversal,
         sums[repeat / 2], best.ms_total);
  free(sums);
  mb_mesh_free(poly);
  mb_mesh_free(tri);
  return 0;
}

static int cmd_delaunay(int argc, char **argv) {
  if (argc < 5) return fprintf(stderr, "usage: polylla_tool delaunay N SEED STEM [--clustered]\n"), 2;
  int clustered = argc > 5 && !strcmp(argv[5], "--clustered");
  mb_mesh *m = NULL;
  if (mb_generate_delaunay(strtoll(argv[2], NULL, 10), strtoull(argv[3], NULL, 10), clustered, &m))
    return die("mb_generate_delaunay");
  if (mb_trianglefile_write(argv[4], m)) return die(argv[4]);
  printf("%s: %" PRId64 " vertices, %" PRId64 " triangles\n", argv[4], m->nv, m->nf);
  mb_mesh_free(m);
  return 0;
}

int main(int argc, char **argv) {
  if (argc >= 2 && !strcmp(argv[1], "run")) return cmd_run(argc, argv);
  if (argc >= 2 && !strcmp(argv[1], "delaunay")) return cmd_delaunay(argc, argv);
  fprintf(stderr,
          "usage: polylla_tool run IN OUT.off [--repeat R] [--check] [--ties key|corners]\n"
          "       polylla_tool delaunay N SEED STEM [--clustered]\n");
  return 2;
}
