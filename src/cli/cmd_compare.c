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
    "vertices and each per-vertex field, the largest difference relative to\n"
    "the largest magnitude of it in A, max |a - b| / max |a| (a NaN on one side\n"
    "only is a difference; NaN on both sides agrees). Exit code 0 when every\n"
    "mesh agrees within R (default 0: bitwise identical), 1 otherwise. Grids:\n"
    "the same shape, origin, spacing and fields (names, types), each field\n"
    "within R of its largest magnitude.\n";

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

/* Value k of a field in double. */
static double field_value(const mb_field *f, int64_t k) {
  return f->dtype == MB_FLOAT32 ? (double)f->data32[k] : f->data[k];
}

/* The values of one quantity on both sides: doubles (d) or a field's
 * values (f, float32 or float64), n of them. */
typedef struct values {
  const double *d;
  const mb_field *f;
} values;

static double value_at(values v, int64_t k) { return v.d ? v.d[k] : field_value(v.f, k); }

static const void *values_bytes(values v) {
  return v.d ? (const void *)v.d
             : v.f->dtype == MB_FLOAT32 ? (const void *)v.f->data32 : (const void *)v.f->data;
}

/* max |a - b| / max |a| over n values (the absolute difference where a is
 * all zero); INFINITY where one side holds a NaN the other does not (fmax
 * would drop it); NaN on both sides agrees. *bitwise: the bytes equal. */
static double rel_diff(values a, values b, int64_t n, size_t width, int *bitwise) {
  *bitwise = !memcmp(values_bytes(a), values_bytes(b), width * (size_t)n);
  if (*bitwise) return 0;
  double scale = 0, diff = 0;
  for (int64_t k = 0; k < n; k++) {
    const double x = value_at(a, k), y = value_at(b, k);
    if (isnan(x) || isnan(y)) {
      if (isnan(x) != isnan(y)) diff = INFINITY;
      continue;
    }
    scale = fmax(scale, fabs(x));
    diff = fmax(diff, fabs(x - y));
  }
  return scale > 0 ? diff / scale : diff;
}

/* Each field of a (ncomp values at each of n points) against b's of the
 * same name, type and components, one line each ("field NAME"); 1 where
 * all agree within rtol. */
static int compare_fields(const char *name, const mb_field *fa, int nfa, const mb_mesh *b,
                          int64_t n, const char *what, double rtol) {
  int ok = 1;
  for (int f = 0; f < nfa; f++) {
    const mb_field *x = &fa[f];
    const int g = mb_mesh_field_index(b, x->name);
    const mb_field *y = g >= 0 ? &b->fields[g] : NULL;
    if (!y || y->dtype != x->dtype || y->ncomp != x->ncomp) {
      printf("%-24s field %s missing or of another type in the second\n", name, x->name);
      ok = 0;
      continue;
    }
    int bitwise = 0;
    const size_t width = x->dtype == MB_FLOAT32 ? sizeof(float) : sizeof(double);
    const double rel = rel_diff((values){NULL, x}, (values){NULL, y}, n * x->ncomp, width, &bitwise);
    const int good = bitwise || rel <= rtol;
    printf("%-24s field %-12s %10lld %s  max rel diff %.3e%s  %s\n", name, x->name, (long long)n,
           what, rel, bitwise ? " (bitwise identical)" : "", good ? "ok" : "DIFFERENT");
    ok &= good;
  }
  return ok;
}

/* Two grid3d datasets: geometry and field names, types and components
 * equal; each field bitwise or within rtol of its largest magnitude. */
static int compare_grid(const mb_mesh *a, const mb_mesh *b, double rtol) {
  if (memcmp(a->shape, b->shape, sizeof a->shape) || memcmp(a->origin, b->origin, sizeof a->origin) ||
      memcmp(a->spacing, b->spacing, sizeof a->spacing) || a->nfields != b->nfields) {
    printf("%-24s different grid shapes, origins, spacings or fields\n", a->name);
    return 0;
  }
  return compare_fields(a->name, a->fields, a->nfields, b, a->nv, "points", rtol);
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
  int bitwise = 0;
  const double rel = rel_diff((values){a->xyz, NULL}, (values){b->xyz, NULL}, 3 * a->nv,
                              sizeof(double), &bitwise);
  int ok = bitwise || rel <= rtol;
  printf("%-24s %10lld vertices  max rel diff %.3e%s  %s\n", a->name, (long long)a->nv, rel,
         bitwise ? " (bitwise identical)" : "", ok ? "ok" : "DIFFERENT");
  if (a->nfields != b->nfields) {
    printf("%-24s %d per-vertex fields in the first, %d in the second\n", a->name, a->nfields,
           b->nfields);
    ok = 0;
  }
  return compare_fields(a->name, a->fields, a->nfields, b, a->nv, "vertices", rtol) && ok;
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
    printf("%s has %lld %s, %s has %lld\n", pa, (long long)mb_collection_count(a),
           mb_plural(mb_collection_count(a), "mesh", "meshes"), pb,
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
