/* meshbatch info / export: read a collection. */
#include <mpi.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli.h"
#include "mb_collection.h"
#include "mb_log.h"
#include "mb_meshfile.h"
#include "mb_npy.h"
#include "mb_vtk.h"
#include "mb_partfile.h"

static const char info_help[] =
    "usage: meshbatch info COLLECTION.h5 [--mesh NAME]\n"
    "       meshbatch info PART.h5\n\n"
    "List the meshes of a collection: vertices, faces, bounding box and the\n"
    "provenance attributes (every stage with its parameters, version, backend,\n"
    "ranks, wall time). Given a partition file (meshbatch partition), prints\n"
    "its parts, edge cut and owned-vertex imbalance.\n";

static void print_grid(const mb_mesh *m) {
  printf("%s: grid3d %lld x %lld x %lld (z, y, x; %lld points), origin (%.6g, %.6g, %.6g), "
         "spacing (%.6g, %.6g, %.6g)\n", m->name, (long long)m->shape[0], (long long)m->shape[1],
         (long long)m->shape[2], (long long)m->nv, m->origin[0], m->origin[1], m->origin[2],
         m->spacing[0], m->spacing[1], m->spacing[2]);
  for (int f = 0; f < m->nfields; f++)
    printf("  field %s (%s, %d component%s)\n", m->fields[f].name,
           m->fields[f].dtype == MB_FLOAT32 ? "float32" : "float64", m->fields[f].ncomp,
           m->fields[f].ncomp == 1 ? "" : "s");
  for (int a = 0; a < m->attrs.n; a++) printf("  %s = %s\n", m->attrs.keys[a], m->attrs.values[a]);
}

static void print_mesh(const mb_mesh *m) {
  if (m->kind == MB_KIND_GRID3D) {
    print_grid(m);
    return;
  }
  double lo[3], hi[3];
  mb_mesh_bbox(m, lo, hi);
  printf("%s: %lld vertices, %lld faces%s, kind %s\n", m->name, (long long)m->nv,
         (long long)m->nf, mb_mesh_is_triangles(m) ? " (triangles)" : " (polygons)",
         mb_kind_name(m->kind));
  printf("  bbox [%.6g, %.6g] x [%.6g, %.6g] x [%.6g, %.6g]\n", lo[0], hi[0], lo[1], hi[1],
         lo[2], hi[2]);
  for (int f = 0; f < m->nfields; f++)
    printf("  field %s (%d %s)\n", m->fields[f].name, m->fields[f].ncomp,
           mb_plural(m->fields[f].ncomp, "component", "components"));
  for (int f = 0; f < m->nface_fields; f++)
    printf("  face field %s (%d %s)\n", m->face_fields[f].name, m->face_fields[f].ncomp,
           mb_plural(m->face_fields[f].ncomp, "component", "components"));
  for (int a = 0; a < m->attrs.n; a++) printf("  %s = %s\n", m->attrs.keys[a], m->attrs.values[a]);
}

/* Open path, then call fn for each selected mesh (rank 0 only). one_file:
 * the meshes go into the one file one_file, so a collection of several
 * meshes without `only` is refused before fn is called. */
static int for_each_mesh(const char *cmd, const char *path, const char *only,
                         const char *one_file, int (*fn)(const mb_mesh *, void *), void *ctx) {
  mb_collection *c = NULL;
  if (mb_collection_open(MPI_COMM_WORLD, path, &c) != MB_SUCCESS)
    return mb_cli_report(MB_EXIT_FAILED);
  const int64_t n = mb_collection_count(c);
  if (one_file && !only && n > 1) {
    char names[256] = "";
    size_t used = 0;
    for (int64_t i = 0; i < n && used < sizeof names; i++)
      used += (size_t)snprintf(names + used, sizeof names - used, "%s%s", i ? ", " : "",
                               mb_collection_info(c, i)->name);
    if (used >= sizeof names) snprintf(names + sizeof names - 5, 5, "...");
    mb_collection_close(c);
    return mb_cli_usage_error(cmd, "-o %s is one file but %s holds %lld meshes (%s): choose one "
                              "with --mesh NAME, or give a folder for -o", one_file, path,
                              (long long)n, names);
  }
  int code = MB_EXIT_OK, found = 0;
  for (int64_t i = 0; i < mb_collection_count(c); i++) {
    if (only && strcmp(only, mb_collection_info(c, i)->name)) continue;
    found = 1;
    if (mb_cli_rank() != 0) continue;
    mb_mesh *m = NULL;
    if (mb_collection_read(c, i, &m) != MB_SUCCESS) {
      code = mb_cli_report(MB_EXIT_FAILED);
      continue;
    }
    int rc = fn(m, ctx);
    if (rc > code) code = rc;
    mb_mesh_free(m);
    if (rc == MB_EXIT_USAGE) break; /* a refused output: nothing more is written */
  }
  mb_collection_close(c);
  if (only && !found) return mb_cli_usage_error(cmd, "no mesh named '%s' in %s", only, path);
  return code;
}

static int info_one(const mb_mesh *m, void *ctx) {
  (void)ctx;
  print_mesh(m);
  return MB_EXIT_OK;
}

int mb_cmd_info(int argc, char **argv) {
  const char *path = NULL, *only = NULL;
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
      if (mb_cli_rank() == 0) fputs(info_help, stdout);
      return MB_EXIT_OK;
    }
    if (!strcmp(argv[i], "--mesh") && i + 1 < argc) { only = argv[++i]; continue; }
    if (argv[i][0] == '-') return mb_cli_usage_error("info", "unknown option '%s'", argv[i]);
    if (path) return mb_cli_usage_error("info", "one collection expected");
    path = argv[i];
  }
  if (!path) return mb_cli_usage_error("info", "missing COLLECTION.h5");
  mb_partfile *part = NULL;
  if (mb_partfile_read(path, &part) == MB_SUCCESS) { /* a partition file */
    if (mb_cli_rank() == 0) mb_cli_print_partition(part);
    mb_partfile_free(part);
    return MB_EXIT_OK;
  }
  mb_error_clear();
  return for_each_mesh("info", path, only, NULL, info_one, NULL);
}

static const char export_help[] =
    "usage: meshbatch export COLLECTION.h5 [--mesh NAME] -o PATH\n"
    "                        [--format obj|off|ply|node|npy|vtk] [--force]\n\n"
    "Export datasets with full double precision. With one dataset (or --mesh)\n"
    "and a PATH ending in .obj, .off, .ply, .node, .ele, .npy or .vtk, that file\n"
    "is written (.node/.ele: Triangle's .node, .ele and .neigh, for planar\n"
    "triangulations); otherwise PATH is a folder (created if missing) that\n"
    "receives NAME.FORMAT for every dataset (format from --format, default ply).\n"
    "A PATH with another extension (out.stl, out.h5) is refused (exit code 2)\n"
    "unless it is an existing folder or ends in /. Polygon meshes keep their\n"
    "polygons in OFF, OBJ and PLY; planar datasets are written with z = 0.\n"
    "Grids (grid3d) export as NumPy arrays with --format npy: NAME.FIELD.npy in\n"
    "the folder per field (shape nz, ny, nx; float32 or float64 as stored), or\n"
    "PATH.npy for a grid of one field (--format npy not needed there); with\n"
    "--format vtk (or PATH.vtk) as legacy VTK structured points, all fields in\n"
    "one NAME.vtk, which meshio and ParaView read (meshio does not read the\n"
    "collection's XDMF view of grids: it raises SystemExit on it and on the\n"
    "collection's XDMF of all meshes).\n"
    "A file PATH decides the format; a --format that differs from its\n"
    "extension is refused (exit code 2), and so is a file PATH for a collection\n"
    "of several datasets without --mesh (before anything is written).\n"
    "PLY keeps the mesh's extra per-vertex and per-face fields as properties.\n"
    "meshio reads OFF of triangles only: the polygons of a polylla result are\n"
    "not readable from OFF by meshio (use PLY, OBJ or the NAME.xdmf view).\n\n"
    "A file that exists already is not replaced (exit code 2, before it is\n"
    "written) unless --force is given; the collection itself is never replaced.\n";

typedef struct export_ctx {
  const char *out;
  const char *format;
  const char *collection; /* the input, never replaced */
  int folder;
  int written;
  int force;              /* replace existing files */
} export_ctx;

/* MB_EXIT_USAGE (reported) if path may not be written: it is the input
 * collection, or it exists and --force was not given; else MB_EXIT_OK. */
static int export_target(const export_ctx *x, const char *path) {
  if (mb_cli_same_file(path, x->collection)) {
    mb_log_error("%s is the collection being exported: it is never replaced", path);
    return MB_EXIT_USAGE;
  }
  if (!x->force && access(path, F_OK) == 0) {
    mb_log_error("%s exists: export does not replace files (give --force to replace it, or "
                 "another -o)", path);
    return MB_EXIT_USAGE;
  }
  return MB_EXIT_OK;
}

/* "/" between the folder and a file name, "" where the folder ends in one. */
static const char *folder_sep(const export_ctx *x) {
  const size_t n = strlen(x->out);
  return n && x->out[n - 1] == '/' ? "" : "/";
}

static int export_one(const mb_mesh *m, void *p) {
  export_ctx *x = p;
  if (!x->folder && x->written++) {
    mb_log_error("%s holds several meshes: choose one with --mesh NAME, or give a folder", x->out);
    return MB_EXIT_USAGE;
  }
  if (m->kind == MB_KIND_GRID3D && !strcmp(x->format, "vtk")) { /* all fields in one file */
    char path[4096];
    if (x->folder) snprintf(path, sizeof path, "%s%s%s.vtk", x->out, folder_sep(x), m->name);
    else snprintf(path, sizeof path, "%s", x->out);
    if (export_target(x, path)) return MB_EXIT_USAGE;
    if (mb_vtk_write_grid(path, m) != MB_SUCCESS) return mb_cli_report(MB_EXIT_FAILED);
    mb_log(MB_LOG_NORMAL, "%s -> %s", m->name, path);
    return MB_EXIT_OK;
  }
  if (m->kind == MB_KIND_GRID3D) { /* one .npy per field */
    if (strcmp(x->format, "npy")) {
      if (x->folder)
        mb_log_error("%s is a grid3d: export it with --format npy (one .npy per field) or vtk",
                     m->name);
      else
        mb_log_error("%s is a grid3d: export it to a .npy file (a grid of one field) or a .vtk "
                     "file, not %s", m->name, x->out);
      return MB_EXIT_FAILED;
    }
    for (int f = 0; f < m->nfields; f++) {
      char path[4096];
      if (x->folder)
        snprintf(path, sizeof path, "%s%s%s.%s.npy", x->out, folder_sep(x), m->name,
                 m->fields[f].name);
      else if (m->nfields == 1) snprintf(path, sizeof path, "%s", x->out);
      else {
        mb_log_error("%s has %d fields: give a folder to write one .npy per field", m->name,
                     m->nfields);
        return MB_EXIT_USAGE;
      }
      if (export_target(x, path)) return MB_EXIT_USAGE;
      if (mb_npy_write_field(path, m, f) != MB_SUCCESS) return mb_cli_report(MB_EXIT_FAILED);
      mb_log(MB_LOG_NORMAL, "%s field %s -> %s", m->name, m->fields[f].name, path);
    }
    return MB_EXIT_OK;
  }
  if (!strcmp(x->format, "npy") || !strcmp(x->format, "vtk")) {
    if (x->folder) mb_log_error("%s is a mesh: --format %s writes grids", m->name, x->format);
    else
      mb_log_error("%s is a mesh: a .%s file holds a grid; export it to .obj, .off, .ply or .node",
                   m->name, x->format);
    return MB_EXIT_FAILED;
  }
  char path[4096];
  if (x->folder)
    snprintf(path, sizeof path, "%s%s%s.%s", x->out, folder_sep(x), m->name, x->format);
  else snprintf(path, sizeof path, "%s", x->out);
  if (!strcmp(x->format, "node") || mb_meshfile_format_of(path) == MB_MESHFILE_NODE ||
      mb_meshfile_format_of(path) == MB_MESHFILE_ELE) { /* Triangle: three files of one stem */
    const char *dot = strrchr(path, '.');
    const int stem = dot && !strchr(dot, '/') ? (int)(dot - path) : (int)strlen(path);
    static const char *const ext[] = {".node", ".ele", ".neigh"};
    for (int k = 0; k < 3; k++) {
      char q[4200];
      snprintf(q, sizeof q, "%.*s%s", stem, path, ext[k]);
      if (export_target(x, q)) return MB_EXIT_USAGE;
    }
  } else if (export_target(x, path)) {
    return MB_EXIT_USAGE;
  }
  if (mb_meshfile_write(path, m) != MB_SUCCESS) return mb_cli_report(MB_EXIT_FAILED);
  mb_log(MB_LOG_NORMAL, "%s -> %s", m->name, path);
  return MB_EXIT_OK;
}

/* The extension of path's last name ("stl" of "out/bob.stl"), or NULL
 * where it has none (no dot, a leading dot only, a trailing /). */
static const char *name_extension(const char *path) {
  const char *base = strrchr(path, '/');
  base = base ? base + 1 : path;
  const char *dot = strrchr(base, '.');
  return dot && dot > base && dot[1] ? dot + 1 : NULL;
}

int mb_cmd_export(int argc, char **argv) {
  const char *path = NULL, *only = NULL;
  export_ctx x = {.format = "ply"};
  int format_given = 0;
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
      if (mb_cli_rank() == 0) fputs(export_help, stdout);
      return MB_EXIT_OK;
    }
    if (mb_cli_log_option(argv[i])) continue;
    int has_value = i + 1 < argc;
    if (!strcmp(argv[i], "--mesh") && has_value) { only = argv[++i]; continue; }
    if (!strcmp(argv[i], "-o") && has_value) { x.out = argv[++i]; continue; }
    if (!strcmp(argv[i], "--format") && has_value) {
      x.format = argv[++i];
      format_given = 1;
      continue;
    }
    if (!strcmp(argv[i], "--force")) { x.force = 1; continue; }
    if (argv[i][0] == '-') return mb_cli_usage_error("export", "unknown option or missing value '%s'", argv[i]);
    if (path) return mb_cli_usage_error("export", "one collection expected");
    path = argv[i];
  }
  if (!path) return mb_cli_usage_error("export", "missing COLLECTION.h5");
  if (!x.out) return mb_cli_usage_error("export", "missing -o PATH");
  x.collection = path;
  if (strcmp(x.format, "obj") && strcmp(x.format, "off") && strcmp(x.format, "ply") &&
      strcmp(x.format, "node") && strcmp(x.format, "npy") && strcmp(x.format, "vtk"))
    return mb_cli_usage_error("export", "--format must be obj, off, ply, node, npy or vtk");
  /* an explicit --format and a file name of another format: refused, not
   * one of them silently preferred */
  static const char *const ext_format[] = {
      [MB_MESHFILE_OBJ] = "obj", [MB_MESHFILE_OFF] = "off", [MB_MESHFILE_PLY] = "ply",
      [MB_MESHFILE_NODE] = "node", [MB_MESHFILE_ELE] = "node", [MB_MESHFILE_NPY] = "npy",
      [MB_MESHFILE_VTK] = "vtk"};
  const mb_meshfile_format of = mb_meshfile_format_of(x.out);
  if (format_given && of != MB_MESHFILE_UNKNOWN && strcmp(ext_format[of], x.format))
    return mb_cli_usage_error("export",
                              "-o %s is a .%s file but --format %s was given: make them agree, "
                              "or give a folder for -o",
                              x.out, ext_format[of], x.format);
  if (of == MB_MESHFILE_VTK) x.format = "vtk";
  if (of == MB_MESHFILE_NPY) x.format = "npy";
  x.folder = of == MB_MESHFILE_UNKNOWN;
  /* a name with an extension export does not write (bob.stl, out.h5) was
   * meant as a file: refused, not made a folder, unless that folder exists
   * or the name ends in / */
  struct stat so;
  const char *ext = name_extension(x.out);
  if (x.folder && ext && !(stat(x.out, &so) == 0 && S_ISDIR(so.st_mode)))
    return mb_cli_usage_error("export",
                              "-o %s: export writes no .%s files (files: .obj, .off, .ply, .node, "
                              ".ele, .npy, .vtk); for a folder give an existing one, a name "
                              "without an extension, or end it with /", x.out, ext);
  if (!x.folder || mb_cli_rank() != 0)
    return for_each_mesh("export", path, only, x.folder ? NULL : x.out, export_one, &x);
  mkdir(x.out, 0777);
  return for_each_mesh("export", path, only, NULL, export_one, &x);
}
