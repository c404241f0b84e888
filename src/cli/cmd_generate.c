/* meshbatch generate: scale-test inputs. */
#include <math.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "mb_collection.h"
#include "mb_generate.h"
#include "mb_inputs.h"
#include "mb_log.h"
#include "mb_meshfile.h"

/* The help of each generator: its usage (lines after the first indented as
 * under "usage: ") and its paragraph; `generate --help` prints them all,
 * `generate KIND --help` the one. */
typedef struct generator_help {
  const char *name, *usage, *text;
} generator_help;

static const generator_help generators[] = {
    {"subdivide",
     "meshbatch generate subdivide INPUT --levels L | --vertices N [--unit-area] -o OUTPUT\n"
     "                                    [--mesh NAME] [--name NAME]\n",
     "subdivide  midpoint subdivision of a triangle mesh, L times (each level\n"
     "           multiplies the faces by 4; igea with L=1 has 537 k vertices, with\n"
     "           L=2 2.1 M; L in [0, 12]). New vertices are edge midpoints: every\n"
     "           point stays on the input's flat triangles, the shape is not\n"
     "           smoothed (no Loop weights). --unit-area then moves the\n"
     "           area-weighted barycentre to the origin and scales the mesh to\n"
     "           surface area 1 (libigl's normalisation in its mean-curvature-flow\n"
     "           tutorial). L=0 only copies (or, with --unit-area, normalises) the\n"
     "           mesh.\n"
     "           --vertices N instead of --levels: whole levels while they fit,\n"
     "           then the longest edges split at their midpoints (1, 2 or 3 per\n"
     "           triangle, red-green: still conforming, still on the flat\n"
     "           triangles) until the mesh has exactly N vertices (the solver\n"
     "           ops' benchmark: igea --vertices 1000000 --unit-area).\n"
     "           INPUT is a mesh file or a collection (then --mesh picks the mesh);\n"
     "           OUTPUT may not be INPUT (exit code 2).\n"},
    {"sphere",
     "meshbatch generate sphere --vertices N [--noise A] [--seed S] -o OUTPUT [--name NAME]\n",
     "sphere     an icosphere with at least N vertices (10*4^L+2), each vertex\n"
     "           moved radially by a uniform random amount in [-A, A] (default\n"
     "           A=0.01, seed 1).\n"},
    {"delaunay",
     "meshbatch generate delaunay --points N [--seed S]\n"
     "                                   [--distribution uniform|clustered] -o OUTPUT [--name NAME]\n",
     "delaunay   the Delaunay triangulation (qhull) of N random points in the unit\n"
     "           square (a triangulation2d, about 2N triangles): uniform (default)\n"
     "           or clustered (8 Gaussian clusters and a 10% uniform background),\n"
     "           seed 1 by default. qhull takes about 9 s and 0.7 GB per million\n"
     "           points on one thread (25 M points: 330 s, 17 GB); from 100 000\n"
     "           points it runs on one strip of the square a thread\n"
     "           (OMP_NUM_THREADS), the same triangles for any count. The vertices are\n"
     "           numbered along a Hilbert curve of the square and the triangles\n"
     "           sorted by smallest vertex, so that a block of rows is a compact\n"
     "           piece of it: partitioned runs split the rows into one block a\n"
     "           rank (partitioner: blocks keeps them as they are).\n"},
    {"grid2d", "meshbatch generate grid2d --vertices N -o OUTPUT [--name NAME]\n",
     "grid2d     the uniform grid triangulation of the unit square (a\n"
     "           triangulation2d): n x n vertices, n = ceil(sqrt(N)), each square\n"
     "           split by the same diagonal into 2 counter-clockwise triangles.\n"},
    {"grid",
     "meshbatch generate grid --shape NZ,NY,NX --field NAME=sines|gaussian|noise ...\n"
     "                               [--spacing H | HZ,HY,HX] [--origin OZ,OY,OX]\n"
     "                               [--dtype float64|float32] [--seed S] -o OUTPUT.h5\n"
     "                               [--name NAME]\n",
     "grid       a grid3d of NZ x NY x NX points (x fastest) with spacing H\n"
     "           (> 0; default 1/NX, the same on every axis, in your length unit)\n"
     "           and origin (default 0,0,0), holding one field per --field: sines\n"
     "           (sin(2 pi x/Lx) sin(2 pi y/Ly) sin(2 pi z/Lz), periodic over the grid),\n"
     "           gaussian (exp(-r^2/2s^2) about the centre, s = min(L)/10) or noise\n"
     "           (uniform in [-1,1), --seed); float64 unless --dtype float32. A\n"
     "           grid goes into a collection (OUTPUT.h5).\n"},
    {"panels",
     "meshbatch generate panels --vertices N [--surface dome|saddle] [--height H]\n"
     "                                 [--interior 0|1|5] [--lift L] [--handles FILE]\n"
     "                                 -o OUTPUT [--name NAME]\n",
     "panels     the deform op's inputs: an n x n quad grid (n = ceil(sqrt(N))) over\n"
     "           [-1,1]^2 lifted onto a dome (a spherical cap of height H, default\n"
     "           0.5) or a saddle (z = H x y): its quads are not planar. The vertex\n"
     "           field `handle` holds the targets (NaN where free): the corners and\n"
     "           the sides' midpoints in place, and the centre (--interior 1) or\n"
     "           the centre and the quarter points (5, the default) lifted by L\n"
     "           (default 0.2) in z. --handles FILE also writes them as a handles\n"
     "           file (MESH VERTEX X Y Z per line). The chapter's Roof1 and Roof2\n"
     "           sizes: --vertices 20464 and 80352. Needs a collection (.h5) to\n"
     "           keep the field.\n"}};

enum { NGENERATORS = (int)(sizeof generators / sizeof generators[0]) };
#define GENERATOR_NAMES "subdivide, sphere, delaunay, grid2d, grid or panels"

static const char generate_help_tail[] =
    "OUTPUT is a collection (.h5, with .xdmf beside it) or a mesh file (.obj,\n"
    ".off, .ply; for delaunay and grid2d also Triangle's .node or .ele, which\n"
    "writes STEM.node, STEM.ele and STEM.neigh). Run it on one rank.\n"
    "The mesh (the dataset in a collection) is named after what was generated,\n"
    "not after OUTPUT: delaunay_N (N points), grid2d_N (N vertices asked),\n"
    "grid_NZxNYxNX, sphere, and for subdivide the input mesh's name; --name NAME\n"
    "names it otherwise (jobs and --mesh pick meshes by name).\n";

/* The help of one generator (only) or of all (only NULL) to f. */
static void print_help(FILE *f, const generator_help *only) {
  int first = 1;
  for (int g = 0; g < NGENERATORS; g++)
    if (!only || only == &generators[g]) {
      fprintf(f, "%s%s", first ? "usage: " : "       ", generators[g].usage);
      first = 0;
    }
  fputs("\n", f);
  for (int g = 0; g < NGENERATORS; g++)
    if (!only || only == &generators[g]) fputs(generators[g].text, f);
  fputs(generate_help_tail, f);
}

/* Write one mesh to a collection or a mesh file, by extension. */
static int write_output(const char *out, mb_mesh *m) {
  mb_error e = mb_meshfile_format_of(out) != MB_MESHFILE_UNKNOWN
                   ? mb_meshfile_write(out, m)
                   : mb_collection_write(MPI_COMM_SELF, out, 1, &m);
  if (e) return mb_cli_report(MB_EXIT_FAILED);
  if (m->kind == MB_KIND_GRID3D)
    mb_log(MB_LOG_NORMAL, "%s: grid3d %lld x %lld x %lld, %d field%s -> %s", m->name,
           (long long)m->shape[0], (long long)m->shape[1], (long long)m->shape[2], m->nfields,
           m->nfields == 1 ? "" : "s", out);
  else
    mb_log(MB_LOG_NORMAL, "%s: %lld vertices, %lld faces -> %s", m->name, (long long)m->nv,
           (long long)m->nf, out);
  return MB_EXIT_OK;
}

/* Read the mesh named `only` (or the first) from a file or collection. */
static int read_input(const char *path, const char *only, mb_mesh **m) {
  char *patterns[] = {(char *)path};
  mb_inputs *in = NULL;
  if (mb_inputs_open(MPI_COMM_SELF, 1, patterns, &in)) return mb_cli_report(MB_EXIT_FAILED);
  int64_t pick = only ? -1 : 0;
  for (int64_t s = 0; only && s < in->nsources; s++)
    if (!strcmp(in->sources[s].name, only)) pick = s;
  int code = MB_EXIT_OK;
  if (pick < 0) code = mb_cli_usage_error("generate", "no mesh named '%s' in %s", only, path);
  else if (mb_inputs_read(in, pick, m)) code = mb_cli_report(MB_EXIT_FAILED);
  mb_inputs_close(in);
  return code;
}

/* 1 if writing out would replace the input file in (mb_cli_same_file):
 * out itself, or for Triangle outputs STEM.node, STEM.ele or STEM.neigh,
 * against in and, for a Triangle input, its STEM.node and STEM.ele. */
static int same_file_output(const char *in, const char *out) {
  static const char *const tri[] = {".node", ".ele", ".neigh"};
  char outs[3][4200], ins[2][4200];
  int nout = 1, nin = 1;
  snprintf(outs[0], sizeof outs[0], "%s", out);
  snprintf(ins[0], sizeof ins[0], "%s", in);
  const mb_meshfile_format fo = mb_meshfile_format_of(out), fi = mb_meshfile_format_of(in);
  if (fo == MB_MESHFILE_NODE || fo == MB_MESHFILE_ELE)
    for (nout = 0; nout < 3; nout++)
      snprintf(outs[nout], sizeof outs[0], "%.*s%s", (int)(strrchr(out, '.') - out), out,
               tri[nout]);
  if (fi == MB_MESHFILE_NODE || fi == MB_MESHFILE_ELE)
    for (nin = 0; nin < 2; nin++)
      snprintf(ins[nin], sizeof ins[0], "%.*s%s", (int)(strrchr(in, '.') - in), in, tri[nin]);
  for (int a = 0; a < nout; a++)
    for (int b = 0; b < nin; b++)
      if (mb_cli_same_file(outs[a], ins[b])) return 1;
  return 0;
}

/* "A,B,C" (or one value for all three when one_for_all) into v[3]. */
static int parse_triple_double(const char *s, int one_for_all, double v[3]) {
  char extra;
  if (sscanf(s, "%lf,%lf,%lf%c", &v[0], &v[1], &v[2], &extra) == 3) return 0;
  if (one_for_all && sscanf(s, "%lf%c", &v[0], &extra) == 1) {
    v[1] = v[2] = v[0];
    return 0;
  }
  return 1;
}

enum { MAX_GRID_FIELDS = 16 };

/* generate grid: the options after the kind. */
static int generate_grid(int argc, char **argv, mb_mesh **m, const char **out) {
  int64_t shape[3] = {0, 0, 0}, seed = 1;
  double origin[3] = {0, 0, 0}, spacing[3] = {0, 0, 0};
  int have_spacing = 0, nfields = 0;
  mb_dtype dtype = MB_FLOAT64;
  char names[MAX_GRID_FIELDS][256];
  const char *name_ptr[MAX_GRID_FIELDS];
  mb_grid_field_kind kinds[MAX_GRID_FIELDS];
  const char *rename = NULL;
  for (int i = 2; i < argc; i++) {
    const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
    if (mb_cli_log_option(a)) continue;
    if (!v) return mb_cli_usage_error("generate", "%s needs a value", a);
    i++;
    if (!strcmp(a, "-o")) *out = v;
    else if (!strcmp(a, "--name")) rename = v;
    else if (!strcmp(a, "--shape")) {
      if (mb_cli_parse_shape(v, shape))
        return mb_cli_usage_error("generate", "--shape needs NZ,NY,NX (each >= 1), got '%s'", v);
    } else if (!strcmp(a, "--spacing")) {
      if (parse_triple_double(v, 1, spacing) || !(spacing[0] > 0 && isfinite(spacing[0])) ||
          !(spacing[1] > 0 && isfinite(spacing[1])) || !(spacing[2] > 0 && isfinite(spacing[2])))
        return mb_cli_usage_error("generate", "--spacing needs H or HZ,HY,HX, each finite and > 0, "
                                  "got '%s'", v);
      have_spacing = 1;
    } else if (!strcmp(a, "--origin")) {
      if (parse_triple_double(v, 0, origin) || !isfinite(origin[0]) || !isfinite(origin[1]) ||
          !isfinite(origin[2]))
        return mb_cli_usage_error("generate", "--origin needs OZ,OY,OX (finite numbers), got '%s'",
                                  v);
    } else if (!strcmp(a, "--dtype")) {
      if (strcmp(v, "float64") && strcmp(v, "float32"))
        return mb_cli_usage_error("generate", "--dtype must be float64 or float32, got '%s'", v);
      dtype = !strcmp(v, "float32") ? MB_FLOAT32 : MB_FLOAT64;
    } else if (!strcmp(a, "--seed")) {
      if (mb_cli_parse_int64(v, &seed))
        return mb_cli_usage_error("generate", "--seed needs an integer, got '%s'", v);
    } else if (!strcmp(a, "--field")) {
      const char *eq = strchr(v, '=');
      int k = eq ? mb_grid_field_kind_from_name(eq + 1) : -1;
      if (!eq || eq == v || (size_t)(eq - v) >= sizeof names[0] || k < 0)
        return mb_cli_usage_error("generate", "--field needs NAME=sines|gaussian|noise, got '%s'",
                                  v);
      if (nfields == MAX_GRID_FIELDS)
        return mb_cli_usage_error("generate", "at most %d fields", MAX_GRID_FIELDS);
      snprintf(names[nfields], sizeof names[0], "%.*s", (int)(eq - v), v);
      name_ptr[nfields] = names[nfields];
      kinds[nfields++] = (mb_grid_field_kind)k;
    } else {
      return mb_cli_usage_error("generate", "unexpected argument '%s'", a);
    }
  }
  if (!*out) return mb_cli_usage_error("generate", "missing -o OUTPUT");
  if (!shape[0]) return mb_cli_usage_error("generate", "grid needs --shape NZ,NY,NX");
  if (!nfields) return mb_cli_usage_error("generate", "grid needs at least one --field NAME=KIND");
  if (!have_spacing) spacing[0] = spacing[1] = spacing[2] = 1.0 / (double)shape[2];
  double t0 = mb_wtime();
  if (mb_generate_grid3d(shape, origin, spacing, nfields, name_ptr, kinds, dtype, (uint64_t)seed,
                         m))
    return mb_cli_report(MB_EXIT_FAILED);
  if (rename) {
    free((*m)->name);
    (*m)->name = mb_strdup(rename);
  }
  mb_log(MB_LOG_NORMAL, "grid: %lld points, %d field%s, built in %.2f s", (long long)(*m)->nv,
         nfields, nfields == 1 ? "" : "s", mb_wtime() - t0);
  return MB_EXIT_OK;
}

/* generate panels: the options after the kind. */
static int generate_panels(int argc, char **argv, mb_mesh **m, const char **out) {
  int64_t nverts = -1, interior = 5;
  double height = 0.5, lift = 0.2;
  int surface = MB_PANELS_DOME;
  const char *rename = NULL, *handles = NULL;
  for (int i = 2; i < argc; i++) {
    const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
    if (mb_cli_log_option(a)) continue;
    if (!v) return mb_cli_usage_error("generate", "%s needs a value", a);
    i++;
    int bad = 0;
    if (!strcmp(a, "-o")) *out = v;
    else if (!strcmp(a, "--name")) rename = v;
    else if (!strcmp(a, "--handles")) handles = v;
    else if (!strcmp(a, "--vertices")) bad = mb_cli_parse_int64(v, &nverts);
    else if (!strcmp(a, "--interior")) bad = mb_cli_parse_int64(v, &interior);
    else if (!strcmp(a, "--height")) bad = mb_cli_parse_double(v, &height);
    else if (!strcmp(a, "--lift")) bad = mb_cli_parse_double(v, &lift);
    else if (!strcmp(a, "--surface")) {
      if (strcmp(v, "dome") && strcmp(v, "saddle"))
        return mb_cli_usage_error("generate", "--surface must be dome or saddle, got '%s'", v);
      surface = !strcmp(v, "dome") ? MB_PANELS_DOME : MB_PANELS_SADDLE;
    } else {
      return mb_cli_usage_error("generate", "unexpected argument '%s'", a);
    }
    if (bad) return mb_cli_usage_error("generate", "%s needs a number, got '%s'", a, v);
  }
  if (!*out) return mb_cli_usage_error("generate", "missing -o OUTPUT");
  if (nverts < 9) return mb_cli_usage_error("generate", "panels needs --vertices N (N >= 9)");
  if (interior != 0 && interior != 1 && interior != 5)
    return mb_cli_usage_error("generate", "--interior must be 0, 1 or 5");
  if (mb_generate_panels(nverts, surface, height, (int)interior, lift, m))
    return mb_cli_report(MB_EXIT_FAILED);
  if (rename) {
    free((*m)->name);
    (*m)->name = mb_strdup(rename);
  }
  if (handles) {
    FILE *f = fopen(handles, "w");
    if (!f) return mb_cli_usage_error("generate", "cannot write %s", handles);
    const double *h = (*m)->fields[mb_mesh_field_index(*m, "handle")].data;
    fprintf(f, "# handles of %s: MESH VERTEX X Y Z (0-based vertex)\n", (*m)->name);
    for (int64_t v = 0; v < (*m)->nv; v++)
      if (h[3 * v] == h[3 * v]) /* not NaN */
        fprintf(f, "%s %lld %.17g %.17g %.17g\n", (*m)->name, (long long)v, h[3 * v],
                h[3 * v + 1], h[3 * v + 2]);
    if (fclose(f)) return mb_cli_usage_error("generate", "cannot write %s", handles);
  }
  return MB_EXIT_OK;
}

int mb_cmd_generate(int argc, char **argv) {
  if (argc < 2 || !strcmp(argv[1], "--help") || !strcmp(argv[1], "-h")) {
    if (mb_cli_rank() == 0) print_help(argc < 2 ? stderr : stdout, NULL);
    return argc < 2 ? MB_EXIT_USAGE : MB_EXIT_OK;
  }
  /* generate KIND ... --help: that generator's usage (as bench NAME --help) */
  for (int i = 2; i < argc; i++)
    if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
      for (int g = 0; g < NGENERATORS; g++)
        if (!strcmp(argv[1], generators[g].name)) {
          if (mb_cli_rank() == 0) print_help(stdout, &generators[g]);
          return MB_EXIT_OK;
        }
      return mb_cli_usage_error("generate", "unknown generator '%s' (" GENERATOR_NAMES ")",
                                argv[1]);
    }
  if (mb_cli_rank() != 0) return MB_EXIT_OK; /* a serial tool */
  if (!strcmp(argv[1], "grid")) {
    mb_mesh *g = NULL;
    const char *gout = NULL;
    int code = generate_grid(argc, argv, &g, &gout);
    if (code) return code;
    g->index = 0;
    if (mb_meshfile_format_of(gout) != MB_MESHFILE_UNKNOWN)
      code = mb_cli_usage_error("generate", "a grid goes into a collection (.h5), not %s", gout);
    else code = write_output(gout, g);
    mb_mesh_free(g);
    return code;
  }
  if (!strcmp(argv[1], "panels")) {
    mb_mesh *g = NULL;
    const char *gout = NULL;
    int code = generate_panels(argc, argv, &g, &gout);
    if (code) return code;
    g->index = 0;
    code = write_output(gout, g);
    mb_mesh_free(g);
    return code;
  }
  const char *kind = argv[1], *input = NULL, *out = NULL, *only = NULL, *name = NULL;
  const char *distribution = "uniform";
  int64_t levels = -1, nverts = -1, npoints = -1, seed = 1;
  double noise = 0.01;
  int unit_area = 0, levels_given = 0, nverts_given = 0;
  for (int i = 2; i < argc; i++) {
    const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
    if (mb_cli_log_option(a)) continue;
    int bad = 0;
    if (!strcmp(a, "-o") && v) out = argv[++i];
    else if (!strcmp(a, "--mesh") && v) only = argv[++i];
    else if (!strcmp(a, "--name") && v) name = argv[++i];
    else if (!strcmp(a, "--levels") && v) {
      bad = mb_cli_parse_int64(argv[++i], &levels);
      levels_given = 1;
    } else if (!strcmp(a, "--vertices") && v) {
      bad = mb_cli_parse_int64(argv[++i], &nverts);
      nverts_given = 1;
    }
    else if (!strcmp(a, "--points") && v) bad = mb_cli_parse_int64(argv[++i], &npoints);
    else if (!strcmp(a, "--distribution") && v) distribution = argv[++i];
    else if (!strcmp(a, "--seed") && v) bad = mb_cli_parse_int64(argv[++i], &seed);
    else if (!strcmp(a, "--noise") && v) bad = mb_cli_parse_double(argv[++i], &noise);
    else if (!strcmp(a, "--unit-area")) unit_area = 1;
    else if (a[0] != '-' && !input) input = a;
    else return mb_cli_usage_error("generate", "unexpected argument '%s'", a);
    if (bad) return mb_cli_usage_error("generate", "%s needs a number, got '%s'", a, argv[i]);
  }
  if (!out) return mb_cli_usage_error("generate", "missing -o OUTPUT");
  if (unit_area && strcmp(kind, "subdivide"))
    return mb_cli_usage_error("generate", "--unit-area is an option of subdivide only");
  mb_mesh *m = NULL;
  if (!strcmp(kind, "subdivide")) {
    if (!input) return mb_cli_usage_error("generate", "subdivide needs an INPUT mesh");
    if (levels_given == nverts_given)
      return mb_cli_usage_error("generate", "subdivide needs one of --levels L or --vertices N");
    if (levels_given && (levels < 0 || levels > 12))
      return mb_cli_usage_error("generate", "--levels must be in [0, 12], got %lld",
                                (long long)levels);
    if (nverts_given && nverts < 1)
      return mb_cli_usage_error("generate", "--vertices must be >= 1, got %lld", (long long)nverts);
    if (same_file_output(input, out))
      return mb_cli_usage_error("generate", "the output %s is the input %s: subdivide would "
                                "replace the mesh it reads; choose another output", out, input);
    mb_mesh *src = NULL;
    int code = read_input(input, only, &src);
    if (code) return code;
    int whole = (int)levels;
    mb_error e = nverts >= 0 ? mb_generate_subdivide_to(src, nverts, &whole, &m)
                             : mb_generate_subdivide(src, (int)levels, &m);
    mb_mesh_free(src);
    if (e) return mb_cli_report(MB_EXIT_FAILED);
    if (nverts >= 0)
      mb_log(MB_LOG_NORMAL, "%s: %d whole 1-to-4 level%s, then longest edges split to %lld vertices",
             m->name, whole, whole == 1 ? "" : "s", (long long)m->nv);
    if (unit_area) {
      double area = 0;
      if (mb_generate_unit_area(m, &area)) {
        mb_mesh_free(m);
        return mb_cli_report(MB_EXIT_FAILED);
      }
      mb_log(MB_LOG_NORMAL, "%s: area %.17g scaled to 1, area-weighted barycentre at the origin",
             m->name, area);
    }
  } else if (!strcmp(kind, "sphere")) {
    if (nverts < 1) return mb_cli_usage_error("generate", "sphere needs --vertices N (N >= 1)");
    if (mb_generate_sphere(nverts, noise, (uint64_t)seed, &m)) return mb_cli_report(MB_EXIT_FAILED);
  } else if (!strcmp(kind, "delaunay")) {
    if (npoints < 3 || npoints > 2147483647)
      return mb_cli_usage_error("generate", "delaunay needs --points N (3 <= N < 2^31)");
    int clustered = !strcmp(distribution, "clustered");
    if (!clustered && strcmp(distribution, "uniform"))
      return mb_cli_usage_error("generate", "--distribution must be uniform or clustered, got '%s'",
                                distribution);
    double t0 = mb_wtime();
    if (mb_generate_delaunay(npoints, (uint64_t)seed, clustered, &m))
      return mb_cli_report(MB_EXIT_FAILED);
    mb_log(MB_LOG_NORMAL, "delaunay: %lld %s points triangulated in %.2f s", (long long)npoints,
           distribution, mb_wtime() - t0);
  } else if (!strcmp(kind, "grid2d")) {
    if (nverts < 1) return mb_cli_usage_error("generate", "grid2d needs --vertices N (N >= 1)");
    double t0 = mb_wtime();
    if (mb_generate_grid2d(nverts, &m)) return mb_cli_report(MB_EXIT_FAILED);
    mb_log(MB_LOG_NORMAL, "grid2d: built in %.2f s", mb_wtime() - t0);
  } else {
    return mb_cli_usage_error("generate", "unknown generator '%s' (" GENERATOR_NAMES ")", kind);
  }
  if (name) {
    free(m->name);
    m->name = mb_strdup(name);
  }
  m->index = 0;
  int code = write_output(out, m);
  mb_mesh_free(m);
  return code;
}
