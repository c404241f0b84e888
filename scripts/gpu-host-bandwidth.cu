/* meshbatch: the host's side of a whole call from host arrays to host
 * arrays, measured (docs/benchmarks.md, "Partitioned Polylla on one host").
 *
 * Prints, for the machine it runs on:
 *   - the host's memory bandwidth: memcpy of a 2 GiB buffer into another
 *     (both touched first) split over T OpenMP threads, best of 3, as GB/s
 *     copied (1e9 bytes; the memory moves twice that, read and written);
 *   - each GPU's link alone: cudaMemcpyAsync of a 2 GiB page-locked host
 *     buffer to the device (H2D) and back (D2H), best of 3;
 *   - all GPUs at once, one host thread each, started together: H2D, D2H,
 *     and both directions at once (two streams a GPU), as the sum of the
 *     bytes over the slowest GPU's time.
 * The one-GPU figure bounds a one-rank call's copies; the all-GPU figure,
 * where it stays below the sum of the links, is the host's memory shared
 * by the ranks of one host.
 *
 * Build and run (any CUDA machine; no meshbatch library needed):
 *   nvcc -O2 -Xcompiler -fopenmp -o gpu-host-bandwidth scripts/gpu-host-bandwidth.cu
 *   ./gpu-host-bandwidth [GiB per buffer, default 2]
 */
#include <cuda_runtime.h>
#include <omp.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#define CK(x)                                                                      \
  do {                                                                             \
    cudaError_t e_ = (x);                                                          \
    if (e_ != cudaSuccess) {                                                       \
      std::fprintf(stderr, "%s:%d: %s\n", __FILE__, __LINE__, cudaGetErrorString(e_)); \
      std::exit(1);                                                                \
    }                                                                              \
  } while (0)

static double now() { return omp_get_wtime(); }

/* Best of 3 of memcpy(dst, src, bytes) over t threads, GB/s copied. */
static double host_copy(char *dst, const char *src, size_t bytes, int t) {
  double best = 1e30;
  for (int rep = 0; rep < 3; rep++) {
    double t0 = now();
#pragma omp parallel num_threads(t)
    {
      int i = omp_get_thread_num(), n = omp_get_num_threads();
      size_t a = bytes * (size_t)i / (size_t)n, b = bytes * (size_t)(i + 1) / (size_t)n;
      std::memcpy(dst + a, src + a, b - a);
    }
    double dt = now() - t0;
    if (dt < best) best = dt;
  }
  return (double)bytes / best / 1e9;
}

struct gpu_bufs {
  char *host, *host2, *dev, *dev2;
  cudaStream_t s, s2;
};

/* Seconds of one copy of `bytes` on GPU g: dir 0 H2D, 1 D2H, 2 both at once. */
static double link_copy(gpu_bufs &b, int g, size_t bytes, int dir) {
  CK(cudaSetDevice(g));
  CK(cudaDeviceSynchronize());
  double t0 = now();
  if (dir == 0 || dir == 2) CK(cudaMemcpyAsync(b.dev, b.host, bytes, cudaMemcpyHostToDevice, b.s));
  if (dir == 1 || dir == 2) CK(cudaMemcpyAsync(b.host2, b.dev2, bytes, cudaMemcpyDeviceToHost, b.s2));
  CK(cudaStreamSynchronize(b.s));
  CK(cudaStreamSynchronize(b.s2));
  return now() - t0;
}

int main(int argc, char **argv) {
  double gib = argc > 1 ? std::atof(argv[1]) : 2.0;
  size_t bytes = (size_t)(gib * 1073741824.0);
  int ngpu = 0;
  CK(cudaGetDeviceCount(&ngpu));
  std::printf("host: %d OpenMP threads available; %d GPUs; buffers of %.2f GiB\n",
              omp_get_max_threads(), ngpu, gib);

  char *a = (char *)std::malloc(bytes), *c = (char *)std::malloc(bytes);
  if (!a || !c) return 1;
#pragma omp parallel for
  for (long long i = 0; i < (long long)bytes; i += 4096) a[i] = (char)i, c[i] = 0;
  int maxt = omp_get_max_threads();
  for (int t = 1; t <= maxt; t *= 2) {
    double gbs = host_copy(c, a, bytes, t);
    std::printf("host memcpy, %2d threads: %6.1f GB/s copied (%6.1f GB/s read + written)\n", t,
                gbs, 2 * gbs);
    if (t < maxt && 2 * t > maxt) t = maxt / 2; /* end on maxt */
  }
  std::free(a), std::free(c);

  std::vector<gpu_bufs> b((size_t)ngpu);
  for (int g = 0; g < ngpu; g++) {
    CK(cudaSetDevice(g));
    CK(cudaHostAlloc((void **)&b[g].host, bytes, cudaHostAllocPortable));
    CK(cudaHostAlloc((void **)&b[g].host2, bytes, cudaHostAllocPortable));
    std::memset(b[g].host, 1, bytes);
    std::memset(b[g].host2, 0, bytes);
    CK(cudaMalloc((void **)&b[g].dev, bytes));
    CK(cudaMalloc((void **)&b[g].dev2, bytes));
    CK(cudaStreamCreateWithFlags(&b[g].s, cudaStreamNonBlocking));
    CK(cudaStreamCreateWithFlags(&b[g].s2, cudaStreamNonBlocking));
    link_copy(b[g], g, bytes, 2); /* warm-up */
  }
  const char *dirname[3] = {"H2D", "D2H", "H2D + D2H"};
  for (int dir = 0; dir < 3; dir++) {
    double moved = dir == 2 ? 2.0 * (double)bytes : (double)bytes;
    for (int g = 0; g < ngpu; g++) {
      double best = 1e30;
      for (int rep = 0; rep < 3; rep++) {
        double t = link_copy(b[g], g, bytes, dir);
        if (t < best) best = t;
      }
      std::printf("GPU %d alone, %-9s: %6.1f GB/s\n", g, dirname[dir], moved / best / 1e9);
    }
    if (ngpu < 2) continue;
    double best = 1e30;
    for (int rep = 0; rep < 3; rep++) {
      double slowest = 0;
#pragma omp parallel num_threads(ngpu) reduction(max : slowest)
      {
        int g = omp_get_thread_num();
        CK(cudaSetDevice(g));
        CK(cudaDeviceSynchronize());
#pragma omp barrier
        slowest = link_copy(b[g], g, bytes, dir);
      }
      if (slowest < best) best = slowest;
    }
    std::printf("all %d GPUs at once, %-9s: %6.1f GB/s in all (%.1f a GPU)\n", ngpu, dirname[dir],
                ngpu * moved / best / 1e9, moved / best / 1e9);
  }
  for (int g = 0; g < ngpu; g++) {
    CK(cudaSetDevice(g));
    CK(cudaFreeHost(b[g].host));
    CK(cudaFreeHost(b[g].host2));
    CK(cudaFree(b[g].dev));
    CK(cudaFree(b[g].dev2));
  }
  return 0;
}
