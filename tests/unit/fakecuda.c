/* tests/unit/fakecuda.c: a fake CUDA driver, for testing runtime/'s
 * failure paths on machines without a GPU.
 *
 * Built as a shared library and named by GOP_CUDA_LIBRARY, it answers every
 * entry point of runtime/cuda.def like a small GPU would, with device
 * memory in host memory; kernels do nothing (launches succeed without
 * running anything), so results are meaningless: it exists so that tests
 * can reach the driver calls that happen mid-run and fail them with
 * GOP_CUDA_FAIL, and see what gop says and does next.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

typedef int CUresult;
typedef uint64_t CUdeviceptr;

#define EXPORT __attribute__((visibility("default")))

static const char *name_of(CUresult r) {
  switch (r) {
  case 0: return "CUDA_SUCCESS";
  case 1: return "CUDA_ERROR_INVALID_VALUE";
  case 2: return "CUDA_ERROR_OUT_OF_MEMORY";
  case 700: return "CUDA_ERROR_ILLEGAL_ADDRESS";
  case 719: return "CUDA_ERROR_LAUNCH_FAILED";
  case 999: return "CUDA_ERROR_UNKNOWN";
  default: return NULL;
  }
}

EXPORT CUresult cuGetErrorName(CUresult e, const char **s) {
  *s = name_of(e);
  return *s ? 0 : 1;
}
EXPORT CUresult cuGetErrorString(CUresult e, const char **s) {
  *s = e == 2 ? "out of memory" : e == 700 ? "an illegal memory access was encountered"
                                           : "fake driver error";
  return 0;
}
EXPORT CUresult cuInit(unsigned flags) { return 0; }
EXPORT CUresult cuDriverGetVersion(int *v) {
  *v = 13000;
  return 0;
}
EXPORT CUresult cuDeviceGetCount(int *n) {
  *n = 1;
  return 0;
}
EXPORT CUresult cuDeviceGet(int *dev, int ordinal) {
  *dev = ordinal;
  return ordinal == 0 ? 0 : 101;
}
EXPORT CUresult cuDeviceGetName(char *name, int len, int dev) {
  strncpy(name, "gop fake GPU", (size_t)len);
  name[len - 1] = 0;
  return 0;
}
EXPORT CUresult cuDeviceGetAttribute(int *v, int attr, int dev) {
  switch (attr) {
  case 1: case 2: case 3: *v = 1024; break;         /* threads, block x, y */
  case 4: *v = 64; break;                           /* block z */
  case 5: *v = 2147483647; break;                   /* grid x */
  case 6: case 7: *v = 65535; break;                /* grid y, z */
  case 8: *v = 48 << 10; break;                     /* shared per block */
  case 10: *v = 32; break;                          /* warp */
  case 12: *v = 65536; break;                       /* registers per block */
  case 16: *v = 4; break;                           /* SMs */
  case 38: *v = 4 << 20; break;                     /* L2 */
  case 39: *v = 2048; break;                        /* threads per SM */
  case 75: *v = 9; break;                           /* cc major */
  case 76: *v = 0; break;                           /* cc minor */
  case 81: *v = 228 << 10; break;                   /* shared per SM */
  case 97: *v = 227 << 10; break;                   /* opt-in */
  default: *v = 0;
  }
  return 0;
}
static int ctx_token;
EXPORT CUresult cuDevicePrimaryCtxRetain(void **ctx, int dev) {
  *ctx = &ctx_token;
  return 0;
}
EXPORT CUresult cuDevicePrimaryCtxRelease_v2(int dev) { return 0; }
EXPORT CUresult cuCtxSetCurrent(void *ctx) { return 0; }
EXPORT CUresult cuCtxSynchronize(void) { return 0; }
static size_t used;
EXPORT CUresult cuMemGetInfo_v2(size_t *free_bytes, size_t *total) {
  *free_bytes = ((size_t)1 << 30) - used;
  *total = (size_t)1 << 30;
  return 0;
}
/* 1 GiB of "device memory": each block carries its size and its links in
 * a 32-byte header; the blocks stay listed from a global, so that memory a
 * lost context never frees (a sticky error: gop stops calling the driver)
 * is still reachable, as a real driver's is, and LeakSanitizer does not
 * report the fake's blocks as gop's leaks. */
static size_t *blocks; /* the most recent block's header */
EXPORT CUresult cuMemAlloc_v2(CUdeviceptr *p, size_t bytes) {
  if (bytes > ((size_t)1 << 30) - used) return 2;
  size_t *m = calloc(1, bytes + 32);
  if (!m) return 2;
  m[0] = bytes;
  m[1] = 0;                      /* prev */
  m[2] = (size_t)(uintptr_t)blocks; /* next */
  if (blocks) blocks[1] = (size_t)(uintptr_t)m;
  blocks = m;
  used += bytes;
  *p = (CUdeviceptr)(uintptr_t)(m + 4);
  return 0;
}
EXPORT CUresult cuMemFree_v2(CUdeviceptr p) {
  if (!p) return 0;
  size_t *m = (size_t *)(uintptr_t)p - 4;
  size_t *prev = (size_t *)(uintptr_t)m[1], *next = (size_t *)(uintptr_t)m[2];
  if (prev) prev[2] = m[2];
  else blocks = next;
  if (next) next[1] = m[1];
  used -= m[0];
  free(m);
  return 0;
}
EXPORT CUresult cuMemcpyHtoD_v2(CUdeviceptr d, const void *s, size_t n) {
  memcpy((void *)(uintptr_t)d, s, n);
  return 0;
}
EXPORT CUresult cuMemcpyDtoH_v2(void *d, CUdeviceptr s, size_t n) {
  memcpy(d, (const void *)(uintptr_t)s, n);
  return 0;
}
EXPORT CUresult cuMemcpyDtoD_v2(CUdeviceptr d, CUdeviceptr s, size_t n) {
  memmove((void *)(uintptr_t)d, (const void *)(uintptr_t)s, n);
  return 0;
}
EXPORT CUresult cuMemsetD32_v2(CUdeviceptr d, unsigned v, size_t n) {
  uint32_t *p = (uint32_t *)(uintptr_t)d;
  for (size_t i = 0; i < n; i++) p[i] = v;
  return 0;
}
EXPORT CUresult cuMemsetD16_v2(CUdeviceptr d, unsigned short v, size_t n) {
  for (size_t i = 0; i < n; i++) ((uint16_t *)(uintptr_t)d)[i] = v;
  return 0;
}
EXPORT CUresult cuMemsetD2D32_v2(CUdeviceptr d, size_t pitch, unsigned v, size_t w, size_t h) {
  for (size_t r = 0; r < h; r++)
    for (size_t i = 0; i < w; i++) ((uint32_t *)(uintptr_t)(d + r * pitch))[i] = v;
  return 0;
}
EXPORT CUresult cuMemHostRegister_v2(void *p, size_t n, unsigned flags) { return 0; }
EXPORT CUresult cuMemHostUnregister(void *p) { return 0; }
static int module_token, function_token;
EXPORT CUresult cuModuleLoadDataEx(void **mod, const void *image, unsigned nopts, int *opts,
                                   void **values) {
  *mod = &module_token;
  return 0;
}
EXPORT CUresult cuModuleUnload(void *mod) { return 0; }
EXPORT CUresult cuModuleGetFunction(void **fn, void *mod, const char *name) {
  *fn = &function_token;
  return 0;
}
EXPORT CUresult cuFuncGetAttribute(int *v, int attr, void *fn) {
  switch (attr) {
  case 0: *v = 256; break; /* max threads per block: as .maxntid 256 */
  case 4: *v = 32; break;   /* registers */
  case 5: case 6: *v = 90; break;
  default: *v = 0;
  }
  return 0;
}
EXPORT CUresult cuFuncSetAttribute(void *fn, int attr, int v) { return 0; }
EXPORT CUresult cuLaunchKernel(void *fn, unsigned gx, unsigned gy, unsigned gz, unsigned bx,
                               unsigned by, unsigned bz, unsigned shared, void *stream,
                               void **params, void **extra) {
  return 0;
}
static int event_token;
EXPORT CUresult cuEventCreate(void **ev, unsigned flags) {
  *ev = &event_token;
  return 0;
}
EXPORT CUresult cuEventRecord(void *ev, void *stream) { return 0; }
EXPORT CUresult cuEventSynchronize(void *ev) { return 0; }
EXPORT CUresult cuEventElapsedTime_v2(float *ms, void *a, void *b) {
  *ms = 0.01f;
  return 0;
}
EXPORT CUresult cuEventDestroy_v2(void *ev) { return 0; }
/* the device-resident runs' entry points (runtime/cuda.def): present, so
 * that the driver opens; the failure tests do not go through them */
EXPORT CUresult cuMemsetD32Async(CUdeviceptr d, unsigned v, size_t n, void *stream) {
  return cuMemsetD32_v2(d, v, n);
}
EXPORT CUresult cuStreamSynchronize(void *stream) { return 0; }
EXPORT CUresult cuStreamGetCtx(void *stream, void **ctx) {
  *ctx = &ctx_token;
  return 0;
}
EXPORT CUresult cuPointerGetAttributes(unsigned n, int *attrs, void **data, CUdeviceptr p) {
  return 1; /* CUDA_ERROR_INVALID_VALUE: not memory this fake knows */
}
