/* LD_PRELOAD shim for tests/cli/mpi_fault.py: one MPI call of meshbatch
 * fails on request, on one rank, as a real failure would come back under
 * MPI_ERRORS_RETURN; no network is harmed.
 *   MB_FAULT_MPI=NAME      the MPI function that fails (MPI_Allreduce,
 *                          MPI_Bcast, MPI_Gather, MPI_Gatherv, MPI_Allgather,
 *                          MPI_Allgatherv, MPI_Alltoall, MPI_Alltoallv,
 *                          MPI_Reduce, MPI_Scatterv, MPI_Exscan,
 *                          MPI_Barrier, MPI_Isend, MPI_Irecv, MPI_Waitall)
 *   MB_FAULT_RANK=R        on this rank of MPI_COMM_WORLD (default 0)
 *   MB_FAULT_AFTER=N       after N calls that succeed: call N+1 fails, once
 *                          (default 0, the first)
 *   MB_FAULT_ANY_CALLER=1  count the calls of the libraries too (HDF5,
 *                          ParMETIS); by default only those made by the
 *                          meshbatch program itself
 *   MB_FAULT_SITE=OFFSET   count only the calls of NAME made at this call
 *                          site: the return address in the program, as a
 *                          hex offset from its load address (what
 *                          MB_FAULT_COUNT prints; addr2line -f -e meshbatch
 *                          OFFSET names the function that calls)
 *   MB_FAULT_COUNT=1       at MPI_Finalize, print how often each function
 *                          was called ("mb_fault: rank R NAME N calls") and
 *                          from each call site ("mb_fault: rank R NAME at
 *                          0xOFFSET N calls")
 *   MB_FAULT_BACKTRACE=1   print the failing call's return addresses in
 *                          the program (for addr2line -f -e meshbatch)
 * The failing call runs the real function first (PMPI_...), so the other
 * ranks are not left waiting in a collective, then calls the handler of
 * the communicator (which aborts the job under MPI's default
 * MPI_ERRORS_ARE_FATAL, as a real failure would) and returns
 * MPI_ERR_OTHER. It says so on stderr: "mb_fault: rank R: NAME call K fails".
 * Built without sanitizers. */
#define _GNU_SOURCE
#include <execinfo.h>
#include <link.h>
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { MAX_SEGMENTS = 16 };

static uintptr_t seg_lo[MAX_SEGMENTS], seg_hi[MAX_SEGMENTS], base;
static int nseg = -1;

/* The loaded segments of the main program: the first object listed. */
static int main_segments(struct dl_phdr_info *info, size_t size, void *data) {
  (void)size;
  (void)data;
  nseg = 0;
  base = info->dlpi_addr;
  for (int i = 0; i < info->dlpi_phnum && nseg < MAX_SEGMENTS; i++)
    if (info->dlpi_phdr[i].p_type == PT_LOAD) {
      seg_lo[nseg] = info->dlpi_addr + info->dlpi_phdr[i].p_vaddr;
      seg_hi[nseg] = seg_lo[nseg] + info->dlpi_phdr[i].p_memsz;
      nseg++;
    }
  return 1; /* the first object only */
}

static int from_program(const void *ret) {
  if (nseg < 0) dl_iterate_phdr(main_segments, NULL);
  for (int i = 0; i < nseg; i++)
    if ((uintptr_t)ret >= seg_lo[i] && (uintptr_t)ret < seg_hi[i]) return 1;
  return 0;
}

static long env_long(const char *name, long dflt) {
  const char *v = getenv(name);
  return v && *v ? strtol(v, NULL, 10) : dflt;
}

enum {
  F_ALLREDUCE, F_BCAST, F_GATHER, F_GATHERV, F_ALLGATHER, F_ALLGATHERV, F_ALLTOALL,
  F_ALLTOALLV, F_REDUCE, F_SCATTERV, F_EXSCAN, F_BARRIER, F_ISEND, F_IRECV, F_WAITALL, F_COUNT
};
static const char *const names[F_COUNT] = {
    "MPI_Allreduce", "MPI_Bcast",    "MPI_Gather",   "MPI_Gatherv", "MPI_Allgather",
    "MPI_Allgatherv", "MPI_Alltoall", "MPI_Alltoallv", "MPI_Reduce", "MPI_Scatterv",
    "MPI_Exscan",    "MPI_Barrier",  "MPI_Isend",    "MPI_Irecv",   "MPI_Waitall"};
static long calls[F_COUNT];

/* Calls per (function, call site in the program). */
enum { MAX_SITES = 1024 };
static struct site { int f; uintptr_t off; long calls; } sites[MAX_SITES];
static int nsites;

/* Count one call of f at program offset off; returns the site's count so far. */
static long site_call(int f, uintptr_t off) {
  for (int i = 0; i < nsites; i++)
    if (sites[i].f == f && sites[i].off == off) return ++sites[i].calls;
  if (nsites == MAX_SITES) return 0; /* not counted: a site past the table */
  sites[nsites] = (struct site){f, off, 1};
  return sites[nsites++].calls;
}

/* After the real call returned rc: the code to return for this call. */
static int after(int f, const void *ret, MPI_Comm comm, int rc) {
  if (rc != MPI_SUCCESS) return rc;
  if (!from_program(ret) && !env_long("MB_FAULT_ANY_CALLER", 0)) return rc;
  long k = ++calls[f];
  const uintptr_t off = (uintptr_t)ret - base - 1; /* within the call instruction */
  const long at_site = site_call(f, off);
  const char *want = getenv("MB_FAULT_MPI"), *site = getenv("MB_FAULT_SITE");
  if (!want || strcmp(want, names[f])) return rc;
  if (site && *site) {
    if (strtoull(site, NULL, 16) != off) return rc;
    k = at_site;
  }
  int rank = -1;
  PMPI_Comm_rank(MPI_COMM_WORLD, &rank);
  if (rank != env_long("MB_FAULT_RANK", 0) || k != env_long("MB_FAULT_AFTER", 0) + 1) return rc;
  fprintf(stderr, "mb_fault: rank %d: %s call %ld fails\n", rank, names[f], k);
  if (env_long("MB_FAULT_BACKTRACE", 0)) { /* addr2line -f -e meshbatch OFFSETS */
    void *frames[32];
    const int n = backtrace(frames, 32);
    fprintf(stderr, "mb_fault: rank %d: called from", rank);
    for (int i = 1; i < n; i++)
      if (from_program(frames[i])) fprintf(stderr, " 0x%lx", (unsigned long)((uintptr_t)frames[i] - base - 1));
    fprintf(stderr, "\n");
  }
  fflush(stderr);
  PMPI_Comm_call_errhandler(comm, MPI_ERR_OTHER);
  return MPI_ERR_OTHER;
}

#define RET __builtin_return_address(0)

int MPI_Allreduce(const void *s, void *r, int n, MPI_Datatype t, MPI_Op op, MPI_Comm c) {
  return after(F_ALLREDUCE, RET, c, PMPI_Allreduce(s, r, n, t, op, c));
}
int MPI_Bcast(void *b, int n, MPI_Datatype t, int root, MPI_Comm c) {
  return after(F_BCAST, RET, c, PMPI_Bcast(b, n, t, root, c));
}
int MPI_Gather(const void *s, int sn, MPI_Datatype st, void *r, int rn, MPI_Datatype rt, int root,
               MPI_Comm c) {
  return after(F_GATHER, RET, c, PMPI_Gather(s, sn, st, r, rn, rt, root, c));
}
int MPI_Gatherv(const void *s, int sn, MPI_Datatype st, void *r, const int rn[], const int d[],
                MPI_Datatype rt, int root, MPI_Comm c) {
  return after(F_GATHERV, RET, c, PMPI_Gatherv(s, sn, st, r, rn, d, rt, root, c));
}
int MPI_Allgather(const void *s, int sn, MPI_Datatype st, void *r, int rn, MPI_Datatype rt,
                  MPI_Comm c) {
  return after(F_ALLGATHER, RET, c, PMPI_Allgather(s, sn, st, r, rn, rt, c));
}
int MPI_Allgatherv(const void *s, int sn, MPI_Datatype st, void *r, const int rn[], const int d[],
                   MPI_Datatype rt, MPI_Comm c) {
  return after(F_ALLGATHERV, RET, c, PMPI_Allgatherv(s, sn, st, r, rn, d, rt, c));
}
int MPI_Alltoall(const void *s, int sn, MPI_Datatype st, void *r, int rn, MPI_Datatype rt,
                 MPI_Comm c) {
  return after(F_ALLTOALL, RET, c, PMPI_Alltoall(s, sn, st, r, rn, rt, c));
}
int MPI_Alltoallv(const void *s, const int sn[], const int sd[], MPI_Datatype st, void *r,
                  const int rn[], const int rd[], MPI_Datatype rt, MPI_Comm c) {
  return after(F_ALLTOALLV, RET, c, PMPI_Alltoallv(s, sn, sd, st, r, rn, rd, rt, c));
}
int MPI_Reduce(const void *s, void *r, int n, MPI_Datatype t, MPI_Op op, int root, MPI_Comm c) {
  return after(F_REDUCE, RET, c, PMPI_Reduce(s, r, n, t, op, root, c));
}
int MPI_Scatterv(const void *s, const int sn[], const int d[], MPI_Datatype st, void *r, int rn,
                 MPI_Datatype rt, int root, MPI_Comm c) {
  return after(F_SCATTERV, RET, c, PMPI_Scatterv(s, sn, d, st, r, rn, rt, root, c));
}
int MPI_Exscan(const void *s, void *r, int n, MPI_Datatype t, MPI_Op op, MPI_Comm c) {
  return after(F_EXSCAN, RET, c, PMPI_Exscan(s, r, n, t, op, c));
}
int MPI_Barrier(MPI_Comm c) { return after(F_BARRIER, RET, c, PMPI_Barrier(c)); }
int MPI_Isend(const void *b, int n, MPI_Datatype t, int dest, int tag, MPI_Comm c,
              MPI_Request *req) {
  return after(F_ISEND, RET, c, PMPI_Isend(b, n, t, dest, tag, c, req));
}
int MPI_Irecv(void *b, int n, MPI_Datatype t, int src, int tag, MPI_Comm c, MPI_Request *req) {
  return after(F_IRECV, RET, c, PMPI_Irecv(b, n, t, src, tag, c, req));
}
int MPI_Waitall(int n, MPI_Request req[], MPI_Status st[]) {
  return after(F_WAITALL, RET, MPI_COMM_WORLD, PMPI_Waitall(n, req, st));
}

int MPI_Finalize(void) {
  if (env_long("MB_FAULT_COUNT", 0)) {
    int rank = -1;
    PMPI_Comm_rank(MPI_COMM_WORLD, &rank);
    for (int f = 0; f < F_COUNT; f++)
      if (calls[f]) fprintf(stderr, "mb_fault: rank %d %s %ld calls\n", rank, names[f], calls[f]);
    for (int i = 0; i < nsites; i++)
      fprintf(stderr, "mb_fault: rank %d %s at 0x%lx %ld calls\n", rank, names[sites[i].f],
              (unsigned long)sites[i].off, sites[i].calls);
    if (nsites == MAX_SITES) fprintf(stderr, "mb_fault: rank %d: more call sites than counted\n", rank);
  }
  return PMPI_Finalize();
}
