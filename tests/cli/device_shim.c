/* meshbatch test shim (LD_PRELOAD; test cli_device_init): a CUDA device
 * for the runner's initialisation on its own thread, on a machine without
 * one. The three runtime calls of mb_cuda_select_device answer as a device
 * would, the first cudaSetDevice after 200 ms (a context's creation); every
 * other CUDA call goes to the real runtime, which has no device: the job's
 * first device allocation fails and the mesh is reported failed. */
#define _DEFAULT_SOURCE /* usleep */
#include <string.h>
#include <unistd.h>

int cudaGetDeviceCount(int *count) {
  *count = 1;
  return 0;
}

int cudaSetDevice(int device) {
  static int made;
  (void)device;
  if (!made) usleep(200000);
  made = 1;
  return 0;
}

int cudaGetDeviceProperties(void *prop, int device) {
  (void)device;
  strcpy((char *)prop, "meshbatch test shim"); /* cudaDeviceProp starts with its name */
  return 0;
}
