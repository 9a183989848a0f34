/* tests/unit/fake_cuda.c: a stand-in CUDA driver, so that CI (no GPU) can
 * run the device-resident API's whole path: open, pointer and stream
 * checks, graph upload, memsets and launches in the caller's stream.
 *
 * Loaded through GOP_CUDA_LIBRARY. "Device memory" is host memory from
 * cuMemAlloc, recorded with its size so that cuPointerGetAttributes can
 * answer; copies and memsets act on it; kernels do not run: cuLaunchKernel
 * records the launch (function, grid, stream, and each parameter's value,
 * counted from the .entry's parameter list in the PTX) for the test to
 * read through fake_cuda_launches(). Streams are handles the test makes up:
 * 0x1000 and 0x1100 belong to the primary context, 0x2000 to another one;
 * anything else is an invalid handle. fake_cuda_alloc_on(1, n) makes memory
 * on a second device. Nothing here is thread-safe: the tests are not
 * threaded. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef int CUresult;
typedef uint64_t CUdeviceptr;

enum { MAX_ALLOCS = 4096, MAX_FUNCS = 64, MAX_LAUNCHES = 64, MAX_PARAMS = 48 };

static struct {
  CUdeviceptr ptr;
  size_t bytes;
  int device;
} allocs[MAX_ALLOCS];
static int nallocs;

typedef struct FakeFunc {
  char name[128];
  int nparams;
  int size[MAX_PARAMS]; /* bytes of each parameter: 4 or 8 */
} FakeFunc;
static FakeFunc funcs[MAX_FUNCS];
static int nfuncs;
static const char *module_ptx; /* the last module's text (gop loads one per program) */

typedef struct FakeLaunch {
  const char *fn;
  unsigned grid, block, shared;
  void *stream;
  int nparams;
  uint64_t params[MAX_PARAMS];
} FakeLaunch;
static FakeLaunch launches[MAX_LAUNCHES];
static int nlaunches;

typedef struct FakeMemset {
  CUdeviceptr ptr;
  unsigned value;
  size_t count;
  void *stream;
} FakeMemset;
static FakeMemset memsets[MAX_LAUNCHES];
static int nmemsets;

static char primary_ctx, other_ctx;

/* ---- what the test reads ---- */
int fake_cuda_launches(const FakeLaunch **out) {
  *out = launches;
  return nlaunches;
}
int fake_cuda_memsets(const FakeMemset **out) {
  *out = memsets;
  return nmemsets;
}
void fake_cuda_reset_log(void) { nlaunches = nmemsets = 0; }

static CUresult alloc_on(int device, CUdeviceptr *p, size_t bytes) {
  if (nallocs == MAX_ALLOCS) return 2; /* CUDA_ERROR_OUT_OF_MEMORY */
  void *m = aligned_alloc(256, (bytes + 255) / 256 * 256 + 256);
  if (!m) return 2;
  memset(m, 0, bytes);
  *p = (CUdeviceptr)(uintptr_t)m;
  allocs[nallocs].ptr = *p;
  allocs[nallocs].bytes = bytes;
  allocs[nallocs].device = device;
  nallocs++;
  return 0;
}
CUdeviceptr fake_cuda_alloc_on(int device, size_t bytes) {
  CUdeviceptr p = 0;
  return alloc_on(device, &p, bytes) == 0 ? p : 0;
}

/* ---- the driver ---- */
CUresult cuGetErrorName(CUresult e, const char **s) {
  *s = e == 1 ? "CUDA_ERROR_INVALID_VALUE" : e == 400 ? "CUDA_ERROR_INVALID_HANDLE" : "CUDA_ERROR_FAKE";
  return 0;
}
CUresult cuGetErrorString(CUresult e, const char **s) {
  *s = e == 400 ? "invalid resource handle" : "fake error";
  return 0;
}
CUresult cuInit(unsigned flags) { return 0; }
CUresult cuDriverGetVersion(int *v) { *v = 13000; return 0; }
CUresult cuDeviceGetCount(int *n) { *n = 2; return 0; }
CUresult cuDeviceGet(int *dev, int ordinal) { *dev = ordinal; return 0; }
CUresult cuDeviceGetName(char *name, int len, int dev) {
  snprintf(name, (size_t)len, "Fake GPU %d", dev);
  return 0;
}
CUresult cuDeviceGetAttribute(int *v, int attr, int dev) {
  switch (attr) {
  case 1: *v = 1024; break;                 /* threads per block */
  case 2: case 3: *v = 1024; break;         /* block x, y */
  case 4: *v = 64; break;
  case 5: *v = 2147483647; break;           /* grid x */
  case 6: case 7: *v = 65535; break;
  case 8: *v = 48 * 1024; break;
  case 10: *v = 32; break;
  case 12: *v = 65536; break;
  case 16: *v = 132; break;                 /* SMs */
  case 38: *v = 50 << 20; break;
  case 39: *v = 2048; break;
  case 75: *v = 9; break;                   /* sm_90 */
  case 76: *v = 0; break;
  case 81: *v = 228 * 1024; break;
  case 97: *v = 227 * 1024; break;
  default: *v = 0; break;
  }
  return 0;
}
CUresult cuDevicePrimaryCtxRetain(void **ctx, int dev) { *ctx = &primary_ctx; return 0; }
CUresult cuDevicePrimaryCtxRelease_v2(int dev) { return 0; }
CUresult cuCtxSetCurrent(void *ctx) { return 0; }
CUresult cuCtxSynchronize(void) { return 0; }
CUresult cuMemGetInfo_v2(size_t *f, size_t *t) { *f = *t = (size_t)80 << 30; return 0; }
CUresult cuMemAlloc_v2(CUdeviceptr *p, size_t bytes) { return alloc_on(0, p, bytes); }
CUresult cuMemFree_v2(CUdeviceptr p) {
  for (int i = 0; i < nallocs; i++)
    if (allocs[i].ptr == p) {
      free((void *)(uintptr_t)p);
      allocs[i] = allocs[--nallocs];
      return 0;
    }
  return 1;
}
CUresult cuMemcpyHtoD_v2(CUdeviceptr d, const void *s, size_t n) {
  memcpy((void *)(uintptr_t)d, s, n);
  return 0;
}
CUresult cuMemcpyDtoH_v2(void *d, CUdeviceptr s, size_t n) {
  memcpy(d, (void *)(uintptr_t)s, n);
  return 0;
}
CUresult cuMemcpyDtoD_v2(CUdeviceptr d, CUdeviceptr s, size_t n) {
  memmove((void *)(uintptr_t)d, (void *)(uintptr_t)s, n);
  return 0;
}
CUresult cuMemsetD32_v2(CUdeviceptr d, unsigned v, size_t n) {
  for (size_t i = 0; i < n; i++) ((uint32_t *)(uintptr_t)d)[i] = v;
  return 0;
}
CUresult cuMemsetD32Async(CUdeviceptr d, unsigned v, size_t n, void *stream) {
  if (nmemsets < MAX_LAUNCHES) memsets[nmemsets++] = (FakeMemset){d, v, n, stream};
  return cuMemsetD32_v2(d, v, n);
}
CUresult cuMemsetD16_v2(CUdeviceptr d, unsigned short v, size_t n) {
  for (size_t i = 0; i < n; i++) ((uint16_t *)(uintptr_t)d)[i] = v;
  return 0;
}
CUresult cuMemsetD2D32_v2(CUdeviceptr d, size_t pitch, unsigned v, size_t w, size_t h) {
  for (size_t r = 0; r < h; r++)
    for (size_t i = 0; i < w; i++) ((uint32_t *)(uintptr_t)(d + r * pitch))[i] = v;
  return 0;
}
CUresult cuMemHostRegister_v2(void *p, size_t n, unsigned f) { return 0; }
CUresult cuMemHostUnregister(void *p) { return 0; }
CUresult cuModuleLoadDataEx(void **mod, const void *image, unsigned n, int *o, void **v) {
  module_ptx = strdup(image); /* the module: freed by cuModuleUnload */
  *mod = (void *)module_ptx;
  return 0;
}
CUresult cuModuleUnload(void *mod) {
  if (mod == module_ptx) module_ptx = NULL;
  free(mod);
  return 0;
}
/* Counts the parameters of `.entry name(` in the module's PTX. */
CUresult cuModuleGetFunction(void **fn, void *mod, const char *name) {
  const char *ptx = mod;
  char want[160];
  snprintf(want, sizeof want, ".entry %s(", name);
  const char *p = strstr(ptx, want);
  if (!p || nfuncs == MAX_FUNCS) return 500; /* CUDA_ERROR_NOT_FOUND */
  FakeFunc *f = &funcs[nfuncs++];
  snprintf(f->name, sizeof f->name, "%s", name);
  f->nparams = 0;
  const char *end = strchr(p, ')');
  for (const char *q = p; (q = strstr(q, ".param")) && q < end && f->nparams < MAX_PARAMS; q++)
    f->size[f->nparams++] = strncmp(q, ".param .u64", 11) == 0 || strncmp(q, ".param .b64", 11) == 0
                                ? 8 : 4;
  *fn = f;
  return 0;
}
CUresult cuFuncGetAttribute(int *v, int attr, void *fn) {
  switch (attr) {
  case 0: *v = 1024; break;
  case 4: *v = 32; break;
  case 5: case 6: *v = 90; break;
  case 8: *v = 48 * 1024; break;
  default: *v = 0;
  }
  return 0;
}
CUresult cuFuncSetAttribute(void *fn, int attr, int v) { return 0; }
CUresult cuLaunchKernel(void *fn, unsigned gx, unsigned gy, unsigned gz, unsigned bx,
                        unsigned by, unsigned bz, unsigned shared, void *stream, void **params,
                        void **extra) {
  FakeFunc *f = fn;
  if (nlaunches == MAX_LAUNCHES) return 0;
  FakeLaunch *l = &launches[nlaunches++];
  *l = (FakeLaunch){.fn = f->name, .grid = gx, .block = bx, .shared = shared, .stream = stream,
                    .nparams = f->nparams};
  for (int i = 0; i < f->nparams; i++) {
    uint64_t v = 0;
    memcpy(&v, params[i], (size_t)f->size[i]);
    l->params[i] = v;
  }
  return 0;
}
CUresult cuEventCreate(void **ev, unsigned flags) { *ev = malloc(1); return 0; }
CUresult cuEventRecord(void *ev, void *stream) { return 0; }
CUresult cuEventSynchronize(void *ev) { return 0; }
CUresult cuEventElapsedTime_v2(float *ms, void *a, void *b) { *ms = 0.01f; return 0; }
CUresult cuEventDestroy_v2(void *ev) { free(ev); return 0; }
CUresult cuStreamSynchronize(void *stream) { return 0; }
CUresult cuStreamGetCtx(void *stream, void **ctx) {
  uintptr_t s = (uintptr_t)stream;
  if (s == 0x1000 || s == 0x1100) *ctx = &primary_ctx;
  else if (s == 0x2000) *ctx = &other_ctx;
  else return 400; /* CUDA_ERROR_INVALID_HANDLE */
  return 0;
}
/* MEMORY_TYPE 2, DEVICE_ORDINAL 9, RANGE_START_ADDR 11, RANGE_SIZE 12 */
CUresult cuPointerGetAttributes(unsigned n, int *attrs, void **data, CUdeviceptr p) {
  int found = -1;
  for (int i = 0; i < nallocs; i++)
    if (p >= allocs[i].ptr && p < allocs[i].ptr + (allocs[i].bytes ? allocs[i].bytes : 1))
      found = i;
  for (unsigned i = 0; i < n; i++) {
    switch (attrs[i]) {
    case 2: *(unsigned *)data[i] = found < 0 ? 0 : 2; break;
    case 9: *(int *)data[i] = found < 0 ? -1 : allocs[found].device; break;
    case 11: *(CUdeviceptr *)data[i] = found < 0 ? 0 : allocs[found].ptr; break;
    case 12: *(size_t *)data[i] = found < 0 ? 0 : allocs[found].bytes; break;
    default: return 1;
    }
  }
  return 0;
}
