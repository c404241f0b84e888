/* meshbatch: reproducible reductions on the CPU, the accumulator's carries,
 * its collective sum and its rounding (method: mb_reduce.h). */
#include "mb_reduce.h"

#include <math.h>
#include <omp.h>
#include <string.h>

#include "mb_reduce_impl.h"

void mb_reduce_acc_zero(mb_reduce_acc *acc) { memset(acc, 0, sizeof *acc); }

void mb_reduce_acc_add_slots(mb_reduce_acc *acc, const int64_t *s) {
  for (int i = 0; i < MB_REDUCE_NSLOTS; i++) acc->slot[i] += s[i];
  mb_reduce_normalise(acc->slot);
}

/* Terms i0 .. i1-1 into bins b[NSLOTS] (at most MB_REDUCE_CHUNK of them,
 * so every bin stays below 2^61 + its value on entry). On the CPU each term
 * goes straight to its three bins, without branches that depend on the
 * data; four sets of bins, term i in set i % 4, keep the adds of
 * consecutive terms of one magnitude from waiting on each other. */
static void add_range(int64_t *b, int64_t i0, int64_t i1, const double *x, const double *y) {
  int64_t bb[4][MB_REDUCE_NSLOTS];
  memset(bb, 0, sizeof bb);
  for (int64_t i = i0; i < i1; i++) {
    const double t = y ? x[i] * y[i] : x[i]; /* one rounded product: -ffp-contract=off */
    int k = 0;
    int64_t c0 = 0, c1 = 0, c2 = 0;
    const int kind = mb_reduce_split(t, &k, &c0, &c1, &c2);
    int64_t *q = bb[i & 3];
    if (kind <= MB_REDUCE_FINITE) { /* a zero adds 0 to bins 0 .. 2 */
      q[k] += c0;
      q[k + 1] += c1;
      q[k + 2] += c2;
    } else {
      q[MB_REDUCE_NBINS + kind - MB_REDUCE_NAN]++;
    }
  }
  for (int s = 0; s < 4; s++)
    for (int j = 0; j < MB_REDUCE_NSLOTS; j++) b[j] += bb[s][j];
}

/* The GPU's method (a register window, see mb_reduce_impl.h) on the CPU,
 * serial, for the tests: the same bins must come out. */
void mb_reduce_acc_add_windowed(mb_reduce_acc *acc, int64_t n, const double *x, const double *y) {
  mb_reduce_normalise(acc->slot);
  for (int64_t c = 0; c < n; c += MB_REDUCE_CHUNK) {
    const int64_t c1 = n - c < MB_REDUCE_CHUNK ? n : c + MB_REDUCE_CHUNK;
    int64_t b[MB_REDUCE_NSLOTS] = {0}, out[4];
    int ob = 0;
    mb_reduce_win w;
    mb_reduce_win_init(&w);
    for (int64_t i = c; i < c1; i++)
      if (mb_reduce_win_add(&w, y ? x[i] * y[i] : x[i], out, &ob))
        for (int j = 0; j < 4; j++) b[ob + j] += out[j];
    if (w.base >= 0) {
      b[w.base] += w.r0;
      b[w.base + 1] += w.r1;
      b[w.base + 2] += w.r2;
      b[w.base + 3] += w.r3;
    }
    b[MB_REDUCE_NBINS] += w.n_nan;
    b[MB_REDUCE_NBINS + 1] += w.n_pinf;
    b[MB_REDUCE_NBINS + 2] += w.n_ninf;
    mb_reduce_acc_add_slots(acc, b);
  }
}

void mb_reduce_acc_add(mb_reduce_acc *acc, int64_t n, const double *x, const double *y) {
  mb_reduce_normalise(acc->slot);
  if (n <= 0) return;
  int nt = omp_get_max_threads();
  if (n < 65536) nt = 1; /* not worth a team */
#pragma omp parallel num_threads(nt)
  {
    const int64_t T = omp_get_num_threads(), id = omp_get_thread_num();
    const int64_t i0 = n * id / T, i1 = n * (id + 1) / T;
    int64_t b[MB_REDUCE_NSLOTS] = {0};
    for (int64_t c = i0; c < i1; c += MB_REDUCE_CHUNK) {
      add_range(b, c, i1 - c < MB_REDUCE_CHUNK ? i1 : c + MB_REDUCE_CHUNK, x, y);
      mb_reduce_normalise(b);
    }
#pragma omp critical(mb_reduce_acc)
    mb_reduce_acc_add_slots(acc, b); /* integer sums: the order of threads does not matter */
  }
}

mb_error mb_reduce_acc_allreduce(MPI_Comm comm, int count, mb_reduce_acc *acc) {
  MB_CHECK(count >= 1 && acc, MB_ERR_ARG, "mb_reduce_acc_allreduce: %d accumulators", count);
  for (int a = 0; a < count; a++) mb_reduce_normalise(acc[a].slot); /* bins below 2^32: no overflow
                                                             for fewer than 2^31 ranks */
  MB_CALL_MPI(MPI_Allreduce(MPI_IN_PLACE, acc, count * MB_REDUCE_NSLOTS, MPI_INT64_T, MPI_SUM,
                            comm));
  for (int a = 0; a < count; a++) mb_reduce_normalise(acc[a].slot);
  return MB_SUCCESS;
}

double mb_reduce_acc_value(const mb_reduce_acc *acc) { return mb_reduce_slots_value(acc->slot); }

static mb_error reduce_host(MPI_Comm comm, int64_t n, const double *x, const double *y,
                            double *out, const char *what) {
  MB_CHECK(out && n >= 0 && (n == 0 || x), MB_ERR_ARG,
           "%s: n = %lld values, x %s, result %s", what, (long long)n, x ? "given" : "NULL",
           out ? "given" : "NULL");
  mb_reduce_acc acc;
  mb_reduce_acc_zero(&acc);
  mb_reduce_acc_add(&acc, n, x, y);
  MB_CALL(mb_reduce_acc_allreduce(comm, 1, &acc));
  *out = mb_reduce_acc_value(&acc);
  return MB_SUCCESS;
}

mb_error mb_reduce_dot(MPI_Comm comm, int64_t n, const double *x, const double *y, double *dot) {
  MB_CHECK(n == 0 || y, MB_ERR_ARG, "mb_reduce_dot: y is NULL");
  MB_CALL(reduce_host(comm, n, x, n ? y : NULL, dot, "mb_reduce_dot"));
  return MB_SUCCESS;
}

mb_error mb_reduce_norm2(MPI_Comm comm, int64_t n, const double *x, double *norm) {
  double s = 0;
  MB_CALL(reduce_host(comm, n, x, x, &s, "mb_reduce_norm2"));
  *norm = sqrt(s);
  return MB_SUCCESS;
}

mb_error mb_reduce_sum(MPI_Comm comm, int64_t n, const double *x, double *sum) {
  MB_CALL(reduce_host(comm, n, x, NULL, sum, "mb_reduce_sum"));
  return MB_SUCCESS;
}
