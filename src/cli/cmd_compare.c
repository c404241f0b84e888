/* meshbatch compare: compare the datasets of two collections. */
#include <math.h>
#include <mpi.h>
#include <stdio.h>
#include <string.h>

#include "cli.h"
#include "mb_collection.h"
#include "mb_log.h"

static const char compare_help[] =
    "usage: meshbatch compare A.h5 B.h5 [--rtol R]\n\n"
    "Compare two collections dataset by dataset (by name): the same meshes, kinds,\n"
    "vertex and face counts, faces and per-face fields (bitwise); for the\n"
    "vertices, the largest difference\n"
    "relative to the largest coordinate magnitude of the mesh in A,\n"
    "max |a - b| / max |a|. Exit code 0 when every mesh agrees within R\n"
    "(default 0: bitwise identical), 1 otherwise. Grids: the same shape, origin,\n"
    "spacing and fields (names, types), each field within R of its largest\n"
    "magnitude.\n";

/* 1 if the per-face fields of a and b are the same, bit for bit. */
static int same_face_fields(const mb_mesh *a, const mb_mesh *b) {
  if (a->nface_fields != b->nface_fields) return 0;
  for (int f = 0; f < a->nface_fields; f++) {
    const mb_field *x = &a->face_fields[f], *y = &b->face_fields[f];
    if (strcmp(x->name, y->name) || x->ncomp != y->ncomp ||
        memcmp(x->data, y->data, sizeof(double) * (size_t)x->ncomp * (size_t)a->nf))
      return 0;
  }
  return 1;
}

/* Value k of a grid field in double. */
static double field_value(const mb_field *f, int64_t k) {
  return f->dtype == MB_FLOAT32 ? (double)f->data32[k] : f->data[k];
}

/* Two grid3d datasets: geometry and field names, types and components
 * equal; each field bitwise or within rtol of its largest magnitude. */
static int compare_grid(const mb_mesh *a, const mb_mesh *b, double rtol) {
  if (memcmp(a->shape, b->shape, sizeof a->shape) || memcmp(a->origin, b->origin, sizeof a->origin) ||
      memcmp(a->spacing, b->spacing, sizeof a->spacing) || a->nfields != b->nfields) {
    printf("%-24s different grid shapes, origins, spacings or fields\n", a->name);
    return 0;
  }
  int ok = 1;
  for (int f = 0; f < a->nfields; f++) {
    const mb_field *x = &a->fields[f];
    int g = mb_mesh_field_index(b, x->name);
    const mb_field *y = g >= 0 ? &b->fields[g] : NULL;
    if (!y || y->dtype != x->dtype || y->ncomp != x->ncomp) {
      printf("%-24s field %s missing or of another type in the second\n", a->name, x->name);
      ok = 0;
      continue;
    }
    const int64_t n = a->nv * x->ncomp;
    const size_t width = x->dtype == MB_FLOAT32 ? sizeof(float) : sizeof(double);
    int bitwise = !memcmp(x->dtype == MB_FLOAT32 ? (const void *)x->data32 : x->data,
                          y->dtype == MB_FLOAT32 ? (const void *)y->data32 : y->data,
                          width * (size_t)n);
    double scale = 0, diff = 0;
    for (int64_t k = 0; k < n; k++) {
      scale = fmax(scale, fabs(field_value(x, k)));
      diff = fmax(diff, fabs(field_value(x, k) - field_value(y, k)));
    }
    double rel = scale > 0 ? diff / scale : diff;
    int good = bitwise || rel <= rtol;
    printf("%-24s field %-12s %10lld points  max rel diff %.3e%s  %s\n", a->name, x->name,
           (long long)a->nv, rel, bitwise ? " (bitwise identical)" : "", good ? "ok" : "DIFFERENT");
    ok &= good;
  }
  return ok;
}

/* Compare one pair of meshes; returns 1 if they agree within rtol. */
static int compare_mesh(const mb_mesh *a, const mb_mesh *b, double rtol) {
  if (a->kind != b->kind) {
    printf("%-24s kinds differ: %s and %s\n", a->name, mb_kind_name(a->kind), mb_kind_name(b->kind));
    return 0;
  }
  if (a->kind == MB_KIND_GRID3D) return compare_grid(a, b, rtol);
  if (!same_face_fields(a, b)) {
    printf("%-24s per-face fields differ\n", a->name);
    return 0;
  }
  if (a->nv != b->nv || a->nf != b->nf ||
      memcmp(a->face_offsets, b->face_offsets, sizeof(int64_t) * (size_t)(a->nf + 1)) ||
      memcmp(a->face_indices, b->face_indices, sizeof(int64_t) * (size_t)a->face_offsets[a->nf])) {
    printf("%-24s different sizes or faces\n", a->name);
    return 0;
  }
  double scale = 0, diff = 0;
  for (int64_t k = 0; k < 3 * a->nv; k++) {
    scale = fmax(scale, fabs(a->xyz[k]));
    diff = fmax(diff, fabs(a->xyz[k] - b->xyz[k]));
  }
  int bitwise = !memcmp(a->xyz, b->xyz, sizeof(double) * 3 * (size_t)a->nv);
  double rel = scale > 0 ? diff / scale : diff;
  int ok = bitwise || rel <= rtol;
  printf("%-24s %10lld vertices  max rel diff %.3e%s  %s\n", a->name, (long long)a->nv, rel,
         bitwise ? " (bitwise identical)" : "", ok ? "ok" : "DIFFERENT");
  return ok;
}

int mb_cmd_compare(int argc, char **argv) {
  const char *pa = NULL, *pb = NULL;
  double rtol = 0;
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
      if (mb_cli_rank() == 0) fputs(compare_help, stdout);
      return MB_EXIT_OK;
    }
    if (!strcmp(argv[i], "--rtol") && i + 1 < argc) {
      if (mb_cli_parse_double(argv[++i], &rtol) || rtol < 0)
        return mb_cli_usage_error("compare", "--rtol needs a number >= 0");
    } else if (argv[i][0] != '-' && !pa) pa = argv[i];
    else if (argv[i][0] != '-' && !pb) pb = argv[i];
    else return mb_cli_usage_error("compare", "unexpected argument '%s'", argv[i]);
  }
  if (!pa || !pb) return mb_cli_usage_error("compare", "two collections expected");
  mb_collection *a = NULL, *b = NULL;
  if (mb_collection_open(MPI_COMM_WORLD, pa, &a)) return mb_cli_report(MB_EXIT_FAILED);
  if (mb_collection_open(MPI_COMM_WORLD, pb, &b)) {
    mb_collection_close(a);
    return mb_cli_report(MB_EXIT_FAILED);
  }
  int same = mb_collection_count(a) == mb_collection_count(b);
  if (!same && mb_cli_rank() == 0)
    printf("%s has %lld meshes, %s has %lld\n", pa, (long long)mb_collection_count(a), pb,
           (long long)mb_collection_count(b));
  for (int64_t i = 0; mb_cli_rank() == 0 && i < mb_collection_count(a); i++) {
    int64_t j = -1;
    for (int64_t k = 0; k < mb_collection_count(b); k++)
      if (!strcmp(mb_collection_info(a, i)->name, mb_collection_info(b, k)->name)) j = k;
    mb_mesh *ma = NULL, *mb = NULL;
    if (j < 0) {
      printf("%-24s missing from %s\n", mb_collection_info(a, i)->name, pb);
      same = 0;
    } else if (mb_collection_read(a, i, &ma) || mb_collection_read(b, j, &mb)) {
      mb_cli_report(MB_EXIT_FAILED);
      same = 0;
    } else {
      same &= compare_mesh(ma, mb, rtol);
    }
    mb_mesh_free(ma);
    mb_mesh_free(mb);
  }
  mb_collection_close(a);
  mb_collection_close(b);
  return same ? MB_EXIT_OK : MB_EXIT_FAILED;
}
