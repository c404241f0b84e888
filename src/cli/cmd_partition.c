/* meshbatch partition: compute and store a METIS partition of one mesh. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "mb_adjacency.h"
#include "mb_inputs.h"
#include "mb_log.h"
#include "mb_partfile.h"
#include "mb_partition.h"

static const char partition_help[] =
    "usage: meshbatch partition INPUT [--mesh NAME] --parts K -o PART.h5\n\n"
    "Split the vertices of one mesh (a mesh file or a collection; --mesh picks\n"
    "the mesh) into K parts with METIS k-way on the vertex adjacency graph, and\n"
    "write the part of every vertex and face (a face belongs to the part of its\n"
    "lowest-numbered vertex) to PART.h5. A partitioned job reuses it with the\n"
    "key `partition: PART.h5` when run on K ranks. Prints the edge cut, the\n"
    "owned-vertex imbalance (max/mean) and the number of empty parts;\n"
    "`meshbatch info PART.h5` prints them again.\n";

void mb_cli_print_partition(const mb_partfile *p) {
  printf("partition of %s: %d %s, %lld vertices, %lld faces\n", p->mesh, p->nparts,
         mb_plural(p->nparts, "part", "parts"), (long long)p->nv, (long long)p->nf);
  printf("  edge cut %lld, owned imbalance %.4f (max %lld / mean %.1f), %d empty part%s\n",
         (long long)p->quality.edge_cut, p->quality.imbalance, (long long)p->quality.max_owned,
         p->quality.mean_owned, p->quality.nempty, p->quality.nempty == 1 ? "" : "s");
}

/* Fill face owners: the part of each face's lowest-numbered vertex. */
static void face_parts(const mb_mesh *m, const int32_t *vpart, int32_t *fpart) {
  for (int64_t f = 0; f < m->nf; f++) {
    int64_t lo = m->face_indices[m->face_offsets[f]];
    for (int64_t k = m->face_offsets[f] + 1; k < m->face_offsets[f + 1]; k++)
      if (m->face_indices[k] < lo) lo = m->face_indices[k];
    fpart[f] = vpart[lo];
  }
}

int mb_cmd_partition(int argc, char **argv) {
  const char *input = NULL, *only = NULL, *out = NULL;
  int64_t parts = 0;
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
    if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
      if (mb_cli_rank() == 0) fputs(partition_help, stdout);
      return MB_EXIT_OK;
    }
    if (mb_cli_log_option(a)) continue;
    if (!strcmp(a, "--mesh") && v) only = argv[++i];
    else if (!strcmp(a, "-o") && v) out = argv[++i];
    else if (!strcmp(a, "--parts") && v) {
      if (mb_cli_parse_int64(argv[++i], &parts) || parts < 1 || parts > (1 << 20))
        return mb_cli_usage_error("partition", "--parts needs a number in [1, 2^20]");
    } else if (a[0] != '-' && !input) input = a;
    else return mb_cli_usage_error("partition", "unexpected argument '%s'", a);
  }
  if (!input) return mb_cli_usage_error("partition", "missing INPUT");
  if (!parts) return mb_cli_usage_error("partition", "missing --parts K");
  if (!out) return mb_cli_usage_error("partition", "missing -o PART.h5");
  if (mb_cli_same_file(input, out))
    return mb_cli_usage_error("partition", "the output %s is the input %s: it would replace the "
                              "mesh with its partition; choose another output", out, input);
  if (mb_cli_rank() != 0) return MB_EXIT_OK; /* a serial tool */
  char *patterns[] = {(char *)input};
  mb_inputs *in = NULL;
  if (mb_inputs_open(MPI_COMM_SELF, 1, patterns, &in)) return mb_cli_report(MB_EXIT_FAILED);
  int64_t s = only ? -1 : 0;
  for (int64_t k = 0; only && k < in->nsources; k++)
    if (!strcmp(in->sources[k].name, only)) s = k;
  mb_mesh *m = NULL;
  mb_adjacency *adj = NULL;
  mb_partfile p = {.nparts = (int)parts};
  int code = MB_EXIT_OK;
  if (s < 0) code = mb_cli_usage_error("partition", "no mesh named '%s' in %s", only, input);
  else if (mb_inputs_read(in, s, &m) || mb_adjacency_build(m, &adj)) code = mb_cli_report(MB_EXIT_FAILED);
  if (!code) {
    snprintf(p.mesh, sizeof p.mesh, "%s", m->name);
    p.nv = m->nv;
    p.nf = m->nf;
    p.vertex_part = malloc(sizeof(int32_t) * (size_t)m->nv);
    p.face_part = malloc(sizeof(int32_t) * (size_t)(m->nf ? m->nf : 1));
    if (!p.vertex_part || !p.face_part) code = mb_cli_usage_error("partition", "out of memory");
  }
  if (!code && mb_partition_metis(adj, p.nparts, p.vertex_part)) code = mb_cli_report(MB_EXIT_FAILED);
  if (!code) {
    face_parts(m, p.vertex_part, p.face_part);
    mb_partition_measure(adj, p.nparts, p.vertex_part, &p.quality);
    if (mb_partfile_write(out, &p)) code = mb_cli_report(MB_EXIT_FAILED);
    else {
      mb_cli_print_partition(&p);
      printf("written to %s\n", out);
    }
  }
  free(p.vertex_part);
  free(p.face_part);
  mb_adjacency_free(adj);
  mb_mesh_free(m);
  mb_inputs_close(in);
  return code;
}
