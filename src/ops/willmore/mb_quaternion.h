/* meshbatch: the quaternion products of willmore_flow, shared by the CPU
 * step (mb_willmore.c), the CPU's quaternion Cholesky factor
 * (mb_willmore_qchol.c) and the CUDA step (cuda/willmore/mb_willmore.cu),
 * so that the three compute them with the same operations in the same
 * order (the CPU and CUDA backends agree bit for bit where their sums do).
 * Quaternions are 4 doubles: w, x, y, z (real part first). Not collective;
 * no errors; static inline (__host__ __device__ under nvcc). */
#ifndef MB_QUATERNION_H
#define MB_QUATERNION_H

#ifdef __CUDACC__
#define MB_QUAT static inline __host__ __device__
#else
#define MB_QUAT static inline
#endif

/* r = a b, the Hamilton product; r may not alias a or b. */
MB_QUAT void mb_qmul(const double *a, const double *b, double *r) {
  const double w = a[0] * b[0] - a[1] * b[1] - a[2] * b[2] - a[3] * b[3];
  const double x = a[0] * b[1] + a[1] * b[0] + a[2] * b[3] - a[3] * b[2];
  const double y = a[0] * b[2] - a[1] * b[3] + a[2] * b[0] + a[3] * b[1];
  const double z = a[0] * b[3] + a[1] * b[2] - a[2] * b[1] + a[3] * b[0];
  r[0] = w;
  r[1] = x;
  r[2] = y;
  r[3] = z;
}

/* r = conj(a) e b: the edge vector e (an imaginary quaternion) carried by
 * the spin transformations a and b of its ends (Crane, Pinkall, Schroeder
 * 2011, the new edge vectors of the spin transformation). */
MB_QUAT void mb_qsandwich(const double *a, const double *e, const double *b, double *r) {
  const double ca[4] = {a[0], -a[1], -a[2], -a[3]};
  double t[4];
  mb_qmul(ca, e, t);
  mb_qmul(t, b, r);
}

#endif
