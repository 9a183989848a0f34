/* tests/unit/fake_cuda.c: the stand-in CUDA driver of every test that needs
 * a GPU's driver on a machine without one (CI).
 *
 * Loaded through GOP_CUDA_LIBRARY (ctest gives its path as GOP_FAKE_CUDA).
 * It answers every entry point of runtime/cuda.def like a small H100
 * would, with device memory in host memory:
 *
 * - Memory: cuMemAlloc gives zeroed host memory from a 1 GiB budget
 *   (CUDA_ERROR_OUT_OF_MEMORY past it; FAKE_CUDA_MEMORY=BYTES, read at each
 *   allocation, or fake_cuda_set_memory sets another, for tests of an
 *   exhausted device; fake_cuda_used says what is held), recorded with its
 *   size and device
 *   so that cuPointerGetAttributes can answer; copies and memsets act on
 *   it. The records are a static table, so memory a lost context never
 *   frees (after a sticky error gop stops calling the driver) stays
 *   reachable, as a real driver's is, and LeakSanitizer does not blame gop.
 *   fake_cuda_alloc_on(1, n) makes memory on a second device.
 * - Kernels do not run: cuLaunchKernel records the launch (function, grid,
 *   stream, and each parameter's value, counted from the .entry's
 *   parameter list in the PTX) for the test to read through
 *   fake_cuda_launches(); cuLaunchKernelEx likewise, with whether it asked
 *   for programmatic stream serialization (any other attribute is
 *   refused); cuMemsetD32Async is recorded likewise.
 * - Streams are handles the test makes up: 0 (the legacy stream), 0x1000,
 *   0x1010, ... 0x10f0 (sixteen, one per thread of a stress test) and
 *   0x1100 belong to the primary context, 0x2000 to another one; anything
 *   else is an invalid handle. fake_cuda_stream_launches counts the
 *   launches queued in each (not capped like the record).
 * - Streams it makes (cuStreamCreate) are 0x3000, 0x3010, ... (at most
 *   sixteen live), of the primary context. Captures into a CUDA graph
 *   (cuStreamBeginCapture_v2 ... cuStreamEndCapture) record the launches
 *   and asynchronous fills queued in the capturing stream as the graph's
 *   nodes (they are still logged, with that stream, and fills still act
 *   at once); a call that could not be captured while one is under way (a
 *   synchronous copy or fill, an allocation, a wait, a launch in the legacy
 *   stream) fails with CUDA_ERROR_STREAM_CAPTURE_IMPLICIT and invalidates
 *   it, so that ending it fails with CUDA_ERROR_STREAM_CAPTURE_INVALIDATED,
 *   as a real driver does. cuGraphLaunch counts replays and the nodes they
 *   ran; fake_cuda_graph_stats reads the counts and how many streams,
 *   graphs and instances are live. An elapsed time between events is 0.01
 *   ms whatever the events.
 * - Kernels report 32 registers and no local memory, unless
 *   FAKE_CUDA_SPILL_ABOVE=N: a kernel whose PTX asks for more than N
 *   threads an SM (.maxntid x .minnctapersm) reports 8 bytes of local
 *   memory, as a kernel that spills at its occupancy floor does.
 * - Failures mid-run are injected by gop itself (GOP_CUDA_FAIL,
 *   runtime/cuda.c); this driver only names the errors they use.
 * - It is also a cuBLAS (GOP_CUBLAS_LIBRARY): cublasSgemm_v2 computes
 *   C = alpha op(A) op(B) + beta C, column-major, on that memory.
 * - fake_cuda_trace() is every call that moves, allocates or waits, one
 *   letter each, in order: a alloc, f free, h host to device, d device to
 *   host, c device to device, s memset, m memset in a stream, l module
 *   load, k kernel launch, g SGEMM, e event record, w a wait (context,
 *   stream or event). A test reads it to see, for instance, that nothing
 *   crosses the bus between the steps of a forward; b, n: a capture
 *   begun, ended; r a graph replayed. fake_cuda_modules()
 *   counts the modules loaded and not unloaded; fake_cuda_calls() the
 *   calls made to it (every entry point that takes its lock).
 *
 * Every entry point takes one lock, so threaded tests (test_threads) may
 * call it from any thread, as they may a real driver. */
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef int CUresult;
typedef uint64_t CUdeviceptr;

#define EXPORT __attribute__((visibility("default")))

static pthread_mutex_t big = PTHREAD_MUTEX_INITIALIZER;
static void unlock_big(int *unused) { pthread_mutex_unlock(&big); }
static long calls; /* entry points entered under the lock (fake_cuda_calls) */
static int lock_big(void) {
  pthread_mutex_lock(&big);
  calls++;
  return 0;
}
/* Holds the driver's lock until the end of the enclosing block. */
#define LOCKED int locked_ __attribute__((cleanup(unlock_big), unused)) = lock_big()

enum { MAX_ALLOCS = 4096, MAX_FUNCS = 1024, MAX_LAUNCHES = 64, MAX_PARAMS = 48 };
static const size_t MEMORY = (size_t)1 << 30;
static size_t memory_set; /* fake_cuda_set_memory's, or 0 */

/* The budget: fake_cuda_set_memory's, else FAKE_CUDA_MEMORY, else 1 GiB. */
static size_t budget(void) {
  if (memory_set) return memory_set;
  const char *env = getenv("FAKE_CUDA_MEMORY");
  if (env && *env) return (size_t)strtoull(env, NULL, 10);
  return MEMORY;
}

static struct {
  CUdeviceptr ptr;
  size_t bytes;
  int device;
} allocs[MAX_ALLOCS];
static int nallocs;
static size_t used;
static int modules; /* loaded, not yet unloaded */

typedef struct FakeFunc {
  char name[128];
  int local; /* bytes of local memory a thread: FAKE_CUDA_SPILL_ABOVE */
  int nparams;
  int size[MAX_PARAMS]; /* bytes of each parameter: 4 or 8 */
} FakeFunc;
static FakeFunc funcs[MAX_FUNCS];
static int nfuncs;

typedef struct FakeLaunch {
  const char *fn;
  unsigned grid, block, shared;
  void *stream;
  int nparams;
  int programmatic; /* cuLaunchKernelEx with programmatic stream serialization */
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

enum { NSTREAMS = 16 };
static long stream_launches[NSTREAMS + 1]; /* 0x1000 + 0x10 i; the last: any other */
static long total_launches;

static char trace[1 << 16];
static size_t ntrace;

/* Appends one letter to the trace; '+' at its end says it overflowed. */
static void note(char c) {
  if (ntrace + 2 < sizeof trace) trace[ntrace++] = c;
  else trace[sizeof trace - 2] = '+';
}

/* ---- streams and captured graphs ---- */
enum { MAX_MADE_STREAMS = 16 };
static bool made_stream[MAX_MADE_STREAMS]; /* 0x3000 + 0x10 i is live */
static void *capturing;                    /* the stream capturing, or NULL */
static bool capture_broken;                /* an uncapturable call met it */
static long capture_nodes;                 /* nodes recorded so far */
static int live_graphs, live_execs;
static long graph_replays, graph_nodes_run;

typedef struct FakeGraph {
  long nodes;
} FakeGraph;

/* What a call that cannot be captured meets while a capture is under way:
 * the capture is invalidated, the call fails (0 when none is). */
static CUresult uncapturable(void) {
  if (!capturing) return 0;
  capture_broken = true;
  return 906; /* CUDA_ERROR_STREAM_CAPTURE_IMPLICIT */
}
/* Work queued in `stream`: a node of the capture when it is capturing;
 * work in the legacy stream during a capture cannot be captured. */
static CUresult queued(void *stream) {
  if (capturing && stream == capturing) {
    capture_nodes++;
    return 0;
  }
  return stream ? 0 : uncapturable();
}

/* ---- what the test reads ---- */
/* Graphs replayed and nodes they ran since the last reset; and the
 * streams, graphs and instances live now. */
EXPORT void fake_cuda_graph_stats(long *replays, long *nodes, int *streams, int *graphs,
                                  int *execs) {
  LOCKED;
  int n = 0;
  for (int i = 0; i < MAX_MADE_STREAMS; i++) n += made_stream[i];
  *replays = graph_replays;
  *nodes = graph_nodes_run;
  *streams = n;
  *graphs = live_graphs;
  *execs = live_execs;
}
EXPORT int fake_cuda_launches(const FakeLaunch **out) {
  LOCKED;
  *out = launches;
  return nlaunches;
}
EXPORT int fake_cuda_memsets(const FakeMemset **out) {
  LOCKED;
  *out = memsets;
  return nmemsets;
}
EXPORT const char *fake_cuda_trace(void) { return trace; }
/* How many times an entry point took the driver's lock (nearly every call,
 * fake_cuda_* included): what a benchmark counts per step. */
EXPORT long fake_cuda_calls(void) { return calls; }
/* Launches queued in stream 0x1000 + 0x10 i (i < 16), or with i = -1 in
 * every stream, since the last reset. */
EXPORT long fake_cuda_stream_launches(int i) {
  LOCKED;
  return i < 0 ? total_launches : i < NSTREAMS ? stream_launches[i] : 0;
}
/* Sets the device memory budget (0: back to FAKE_CUDA_MEMORY or 1 GiB). */
EXPORT void fake_cuda_set_memory(size_t bytes) {
  LOCKED;
  memory_set = bytes;
}
/* Device memory held now, and by how many allocations. */
/* Modules loaded and not unloaded. */
EXPORT int fake_cuda_modules(void) {
  LOCKED;
  return modules;
}
EXPORT size_t fake_cuda_used(int *count) {
  LOCKED;
  if (count) *count = nallocs;
  return used;
}
EXPORT void fake_cuda_reset_log(void) {
  LOCKED;
  memset(stream_launches, 0, sizeof stream_launches);
  total_launches = 0;
  nlaunches = nmemsets = 0;
  graph_replays = graph_nodes_run = 0;
  memset(trace, 0, sizeof trace);
  ntrace = 0;
}

static CUresult alloc_on(int device, CUdeviceptr *p, size_t bytes) {
  size_t limit = budget();
  if (nallocs == MAX_ALLOCS || used > limit || bytes > limit - used) return 2; /* OUT_OF_MEMORY */
  void *m = aligned_alloc(256, (bytes + 255) / 256 * 256 + 256);
  if (!m) return 2;
  memset(m, 0, bytes);
  *p = (CUdeviceptr)(uintptr_t)m;
  allocs[nallocs].ptr = *p;
  allocs[nallocs].bytes = bytes;
  allocs[nallocs].device = device;
  nallocs++;
  used += bytes;
  return 0;
}
EXPORT CUdeviceptr fake_cuda_alloc_on(int device, size_t bytes) {
  LOCKED;
  CUdeviceptr p = 0;
  return alloc_on(device, &p, bytes) == 0 ? p : 0;
}

/* ---- the driver ---- */
static const char *name_of(CUresult r) {
  switch (r) {
  case 0: return "CUDA_SUCCESS";
  case 1: return "CUDA_ERROR_INVALID_VALUE";
  case 2: return "CUDA_ERROR_OUT_OF_MEMORY";
  case 400: return "CUDA_ERROR_INVALID_HANDLE";
  case 500: return "CUDA_ERROR_NOT_FOUND";
  case 700: return "CUDA_ERROR_ILLEGAL_ADDRESS";
  case 719: return "CUDA_ERROR_LAUNCH_FAILED";
  case 900: return "CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED";
  case 901: return "CUDA_ERROR_STREAM_CAPTURE_INVALIDATED";
  case 906: return "CUDA_ERROR_STREAM_CAPTURE_IMPLICIT";
  case 999: return "CUDA_ERROR_UNKNOWN";
  default: return NULL;
  }
}
EXPORT CUresult cuGetErrorName(CUresult e, const char **s) {
  LOCKED;
  *s = name_of(e);
  return *s ? 0 : 1; /* as the driver: an unknown code is an invalid value */
}
EXPORT CUresult cuGetErrorString(CUresult e, const char **s) {
  LOCKED;
  *s = e == 2     ? "out of memory"
       : e == 400 ? "invalid resource handle"
       : e == 700 ? "an illegal memory access was encountered"
                  : "fake driver error";
  return 0;
}
EXPORT CUresult cuInit(unsigned flags) { return 0; }
EXPORT CUresult cuDriverGetVersion(int *v) {
  LOCKED;
  *v = 13000;
  return 0;
}
EXPORT CUresult cuDeviceGetCount(int *n) {
  LOCKED;
  *n = 2;
  return 0;
}
EXPORT CUresult cuDeviceGet(int *dev, int ordinal) {
  LOCKED;
  *dev = ordinal;
  return ordinal >= 0 && ordinal < 2 ? 0 : 101; /* CUDA_ERROR_INVALID_DEVICE */
}
EXPORT CUresult cuDeviceGetName(char *name, int len, int dev) {
  LOCKED;
  snprintf(name, (size_t)len, "gop fake GPU %d", dev);
  return 0;
}
EXPORT CUresult cuDeviceGetAttribute(int *v, int attr, int dev) {
  LOCKED;
  switch (attr) {
  case 1: case 2: case 3: *v = 1024; break; /* threads per block, block x, y */
  case 4: *v = 64; break;                   /* block z */
  case 5: *v = 2147483647; break;           /* grid x */
  case 6: case 7: *v = 65535; break;        /* grid y, z */
  case 8: *v = 48 << 10; break;             /* shared per block */
  case 10: *v = 32; break;                  /* warp */
  case 12: *v = 65536; break;               /* registers per block */
  case 16: *v = 132; break;                 /* SMs */
  case 38: *v = 50 << 20; break;            /* L2 */
  case 39: *v = 2048; break;                /* threads per SM */
  case 75: *v = 9; break;                   /* cc major: sm_90 */
  case 76: *v = 0; break;                   /* cc minor */
  case 81: *v = 228 << 10; break;           /* shared per SM */
  case 97: *v = 227 << 10; break;           /* opt-in shared per block */
  default: *v = 0; break;
  }
  return 0;
}
EXPORT CUresult cuDevicePrimaryCtxRetain(void **ctx, int dev) {
  LOCKED;
  *ctx = &primary_ctx;
  return 0;
}
EXPORT CUresult cuDevicePrimaryCtxRelease_v2(int dev) { return 0; }
EXPORT CUresult cuCtxSetCurrent(void *ctx) { return 0; }
EXPORT CUresult cuCtxSynchronize(void) {
  LOCKED;
  note('w');
  if (capturing) return uncapturable();
  return 0;
}
EXPORT CUresult cuMemGetInfo_v2(size_t *free_bytes, size_t *total) {
  LOCKED;
  size_t limit = budget();
  *free_bytes = used < limit ? limit - used : 0;
  *total = limit;
  return 0;
}
EXPORT CUresult cuMemAlloc_v2(CUdeviceptr *p, size_t bytes) {
  LOCKED;
  note('a');
  if (capturing) return uncapturable();
  return alloc_on(0, p, bytes);
}
EXPORT CUresult cuMemFree_v2(CUdeviceptr p) {
  LOCKED;
  if (!p) return 0;
  note('f');
  for (int i = 0; i < nallocs; i++)
    if (allocs[i].ptr == p) {
      free((void *)(uintptr_t)p);
      used -= allocs[i].bytes;
      allocs[i] = allocs[--nallocs];
      return 0;
    }
  return 1;
}
EXPORT CUresult cuMemcpyHtoD_v2(CUdeviceptr d, const void *s, size_t n) {
  LOCKED;
  note('h');
  if (capturing) return uncapturable();
  memcpy((void *)(uintptr_t)d, s, n);
  return 0;
}
EXPORT CUresult cuMemcpyDtoH_v2(void *d, CUdeviceptr s, size_t n) {
  LOCKED;
  note('d');
  if (capturing) return uncapturable();
  memcpy(d, (const void *)(uintptr_t)s, n);
  return 0;
}
EXPORT CUresult cuMemcpyDtoD_v2(CUdeviceptr d, CUdeviceptr s, size_t n) {
  LOCKED;
  note('c');
  if (capturing) return uncapturable();
  memmove((void *)(uintptr_t)d, (const void *)(uintptr_t)s, n);
  return 0;
}
static void fill32(CUdeviceptr d, unsigned v, size_t n) {
  for (size_t i = 0; i < n; i++) ((uint32_t *)(uintptr_t)d)[i] = v;
}
/* FAKE_CUDA_NO_FILL=1: fills queued in a stream are recorded, not done (a
 * real driver queues them without host work; a benchmark of host time,
 * bench/minibatch_host.c, sets it). */
static bool queued_fills(void) {
  static int on = -1;
  if (on < 0) on = !(getenv("FAKE_CUDA_NO_FILL") && atoi(getenv("FAKE_CUDA_NO_FILL")));
  return on;
}
EXPORT CUresult cuMemsetD32_v2(CUdeviceptr d, unsigned v, size_t n) {
  LOCKED;
  note('s');
  if (capturing) return uncapturable();
  fill32(d, v, n);
  return 0;
}
EXPORT CUresult cuMemsetD32Async(CUdeviceptr d, unsigned v, size_t n, void *stream) {
  LOCKED;
  note('m');
  CUresult q = queued(stream);
  if (q) return q;
  if (nmemsets < MAX_LAUNCHES) memsets[nmemsets++] = (FakeMemset){d, v, n, stream};
  if (queued_fills()) fill32(d, v, n);
  return 0;
}
/* the same in a stream for 16-bit and f64 outputs (exec.c rt_devexec_launch):
 * recorded with the pattern and the count (rows for the 2-D fill) */
EXPORT CUresult cuMemsetD16Async(CUdeviceptr d, unsigned short v, size_t n, void *stream) {
  LOCKED;
  note('m');
  CUresult q = queued(stream);
  if (q) return q;
  if (nmemsets < MAX_LAUNCHES) memsets[nmemsets++] = (FakeMemset){d, v, n, stream};
  for (size_t i = 0; i < n; i++) ((uint16_t *)(uintptr_t)d)[i] = v;
  return 0;
}
EXPORT CUresult cuMemsetD2D32Async(CUdeviceptr d, size_t pitch, unsigned v, size_t w, size_t h,
                                   void *stream) {
  LOCKED;
  note('m');
  CUresult q = queued(stream);
  if (q) return q;
  if (nmemsets < MAX_LAUNCHES) memsets[nmemsets++] = (FakeMemset){d, v, h, stream};
  for (size_t r = 0; r < h; r++)
    for (size_t i = 0; i < w; i++) ((uint32_t *)(uintptr_t)(d + r * pitch))[i] = v;
  return 0;
}
/* the fills of 16-bit and f64 tensors (runtime/memory.c rt_tensor_fill_bits) */
EXPORT CUresult cuMemsetD16_v2(CUdeviceptr d, unsigned short v, size_t n) {
  LOCKED;
  note('s');
  if (capturing) return uncapturable();
  for (size_t i = 0; i < n; i++) ((uint16_t *)(uintptr_t)d)[i] = v;
  return 0;
}
EXPORT CUresult cuMemsetD2D32_v2(CUdeviceptr d, size_t pitch, unsigned v, size_t w,
                                 size_t h) {
  LOCKED;
  note('s');
  if (capturing) return uncapturable();
  for (size_t r = 0; r < h; r++)
    for (size_t i = 0; i < w; i++) ((uint32_t *)(uintptr_t)(d + r * pitch))[i] = v;
  return 0;
}
EXPORT CUresult cuMemHostRegister_v2(void *p, size_t n, unsigned f) { return 0; }
EXPORT CUresult cuMemHostUnregister(void *p) { return 0; }
EXPORT CUresult cuModuleLoadDataEx(void **mod, const void *image, unsigned n, int *o,
                                   void **v) {
  LOCKED;
  note('l');
  *mod = strdup(image); /* the module is its PTX: freed by cuModuleUnload */
  if (*mod) modules++;
  return *mod ? 0 : 2;
}
EXPORT CUresult cuModuleUnload(void *mod) {
  LOCKED;
  if (mod) modules--;
  free(mod);
  return 0;
}
/* Counts the parameters of `.entry name(` in the module's PTX. */
EXPORT CUresult cuModuleGetFunction(void **fn, void *mod, const char *name) {
  LOCKED;
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
    f->size[f->nparams++] =
        strncmp(q, ".param .u64", 11) == 0 || strncmp(q, ".param .b64", 11) == 0 ? 8 : 4;
  /* FAKE_CUDA_SPILL_ABOVE=N: a kernel whose occupancy floor (.maxntid x
   * .minnctapersm, threads an SM) is above N "spills" (8 bytes of local
   * memory), as ptxas does when a floor leaves too few registers */
  const char *spill = getenv("FAKE_CUDA_SPILL_ABOVE"), *body = strchr(end, '{');
  const char *nt = strstr(end, ".maxntid"), *mc = strstr(end, ".minnctapersm");
  int threads = 0, floor = 0;
  f->local = 0;
  if (spill && body && nt && mc && nt < body && mc < body &&
      sscanf(nt, ".maxntid %d", &threads) == 1 && sscanf(mc, ".minnctapersm %d", &floor) == 1 &&
      threads * floor > atoi(spill))
    f->local = 8;
  *fn = f;
  return 0;
}
EXPORT CUresult cuFuncGetAttribute(int *v, int attr, void *fn) {
  LOCKED;
  switch (attr) {
  case 3: *v = ((FakeFunc *)fn)->local; break; /* local memory a thread */
  case 0: *v = 1024; break;        /* max threads per block */
  case 4: *v = 32; break;          /* registers */
  case 5: case 6: *v = 90; break;  /* PTX and binary versions */
  case 8: *v = 48 << 10; break;    /* max dynamic shared */
  default: *v = 0;
  }
  return 0;
}
EXPORT CUresult cuFuncSetAttribute(void *fn, int attr, int v) { return 0; }
static CUresult launch(void *fn, unsigned gx, unsigned bx, unsigned shared, void *stream,
                       void **params, int programmatic) {
  FakeFunc *f = fn;
  note('k');
  CUresult q = queued(stream);
  if (q) return q;
  uintptr_t s = (uintptr_t)stream;
  total_launches++;
  stream_launches[s >= 0x1000 && s < 0x1000 + 0x10 * NSTREAMS ? (s - 0x1000) / 0x10 : NSTREAMS]++;
  if (nlaunches == MAX_LAUNCHES) return 0;
  FakeLaunch *l = &launches[nlaunches++];
  *l = (FakeLaunch){.fn = f->name, .grid = gx, .block = bx, .shared = shared, .stream = stream,
                    .nparams = f->nparams, .programmatic = programmatic};
  for (int i = 0; i < f->nparams; i++) {
    uint64_t v = 0;
    memcpy(&v, params[i], (size_t)f->size[i]);
    l->params[i] = v;
  }
  return 0;
}
EXPORT CUresult cuLaunchKernel(void *fn, unsigned gx, unsigned gy, unsigned gz, unsigned bx,
                               unsigned by, unsigned bz, unsigned shared, void *stream,
                               void **params, void **extra) {
  LOCKED;
  return launch(fn, gx, bx, shared, stream, params, 0);
}
/* CUlaunchConfig and CUlaunchAttribute as cuda.h lays them out; attribute 6
 * is programmatic stream serialization, the one gop sets. */
typedef struct {
  int id;
  char pad[4];
  union {
    char pad[64];
    int value;
  } value;
} FakeAttr;
typedef struct {
  unsigned gx, gy, gz, bx, by, bz, shared;
  void *stream;
  FakeAttr *attrs;
  unsigned nattrs;
} FakeLaunchConfig;
EXPORT CUresult cuLaunchKernelEx(const FakeLaunchConfig *c, void *fn, void **params,
                                 void **extra) {
  LOCKED;
  int programmatic = 0;
  for (unsigned i = 0; i < c->nattrs; i++) {
    if (c->attrs[i].id != 6) return 1; /* CUDA_ERROR_INVALID_VALUE: not one gop sets */
    programmatic = c->attrs[i].value.value;
  }
  return launch(fn, c->gx, c->bx, c->shared, c->stream, params, programmatic);
}
static int event_token;
EXPORT CUresult cuEventCreate(void **ev, unsigned flags) {
  LOCKED;
  *ev = &event_token;
  return 0;
}
EXPORT CUresult cuEventRecord(void *ev, void *stream) {
  LOCKED;
  note('e');
  return 0;
}
EXPORT CUresult cuEventSynchronize(void *ev) {
  LOCKED;
  note('w');
  if (capturing) return uncapturable();
  return 0;
}
EXPORT CUresult cuEventElapsedTime_v2(float *ms, void *a, void *b) {
  LOCKED;
  *ms = 0.01f;
  return 0;
}
EXPORT CUresult cuEventDestroy_v2(void *ev) { return 0; }
EXPORT CUresult cuStreamSynchronize(void *stream) {
  LOCKED;
  note('w');
  if (capturing && stream == capturing) {
    capture_broken = true;
    return 900; /* CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED */
  }
  if (capturing && !stream) return uncapturable();
  return 0;
}
EXPORT CUresult cuStreamGetCtx(void *stream, void **ctx) {
  LOCKED;
  uintptr_t s = (uintptr_t)stream;
  if (s == 0 || (s >= 0x1000 && s < 0x1000 + 0x10 * NSTREAMS && s % 0x10 == 0) || s == 0x1100 ||
      (s >= 0x3000 && s < 0x3000 + 0x10 * MAX_MADE_STREAMS && s % 0x10 == 0 &&
       made_stream[(s - 0x3000) / 0x10]))
    *ctx = &primary_ctx;
  else if (s == 0x2000) *ctx = &other_ctx;
  else return 400; /* CUDA_ERROR_INVALID_HANDLE */
  return 0;
}
EXPORT CUresult cuStreamCreate(void **stream, unsigned flags) {
  LOCKED;
  for (int i = 0; i < MAX_MADE_STREAMS; i++)
    if (!made_stream[i]) {
      made_stream[i] = true;
      *stream = (void *)(uintptr_t)(0x3000 + 0x10 * i);
      return 0;
    }
  return 2; /* CUDA_ERROR_OUT_OF_MEMORY */
}
/* Index of a stream cuStreamCreate made and not destroyed, or -1. */
static int made_index(void *stream) {
  uintptr_t s = (uintptr_t)stream;
  if (s < 0x3000 || s >= 0x3000 + 0x10 * MAX_MADE_STREAMS || s % 0x10) return -1;
  return made_stream[(s - 0x3000) / 0x10] ? (int)(s - 0x3000) / 0x10 : -1;
}
EXPORT CUresult cuStreamDestroy_v2(void *stream) {
  LOCKED;
  int i = made_index(stream);
  if (i < 0) return 400; /* CUDA_ERROR_INVALID_HANDLE */
  made_stream[i] = false;
  if (capturing == stream) capturing = NULL; /* the capture goes with it */
  return 0;
}
EXPORT CUresult cuStreamBeginCapture_v2(void *stream, int mode) {
  LOCKED;
  note('b');
  if (!stream) return 900;             /* the legacy stream cannot be captured */
  if (made_index(stream) < 0) return 400;
  if (capturing) return 401;           /* CUDA_ERROR_ILLEGAL_STATE: one at a time here */
  capturing = stream;
  capture_broken = false;
  capture_nodes = 0;
  return 0;
}
EXPORT CUresult cuStreamEndCapture(void *stream, FakeGraph **graph) {
  LOCKED;
  note('n');
  *graph = NULL;
  if (!capturing || stream != capturing) return 401; /* not capturing */
  capturing = NULL;
  if (capture_broken) return 901; /* CUDA_ERROR_STREAM_CAPTURE_INVALIDATED */
  FakeGraph *g = malloc(sizeof *g);
  if (!g) return 2;
  g->nodes = capture_nodes;
  live_graphs++;
  *graph = g;
  return 0;
}
EXPORT CUresult cuGraphInstantiateWithFlags(FakeGraph **exec, FakeGraph *graph,
                                            unsigned long long flags) {
  LOCKED;
  if (!graph) return 400;
  FakeGraph *x = malloc(sizeof *x);
  if (!x) return 2;
  *x = *graph;
  live_execs++;
  *exec = x;
  return 0;
}
EXPORT CUresult cuGraphLaunch(FakeGraph *exec, void *stream) {
  LOCKED;
  note('r');
  if (!exec) return 400;
  if (capturing) return uncapturable(); /* not nested captures here */
  graph_replays++;
  graph_nodes_run += exec->nodes;
  return 0;
}
EXPORT CUresult cuGraphExecDestroy(FakeGraph *exec) {
  LOCKED;
  if (exec) live_execs--;
  free(exec);
  return 0;
}
EXPORT CUresult cuGraphDestroy(FakeGraph *graph) {
  LOCKED;
  if (graph) live_graphs--;
  free(graph);
  return 0;
}
/* MEMORY_TYPE 2, DEVICE_ORDINAL 9, RANGE_START_ADDR 11, RANGE_SIZE 12 */
EXPORT CUresult cuPointerGetAttributes(unsigned n, int *attrs, void **data, CUdeviceptr p) {
  LOCKED;
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

/* ---- cuBLAS (runtime/cublas.def) ---- */
static int cublas_handle;
EXPORT int cublasCreate_v2(void **handle) {
  LOCKED;
  *handle = &cublas_handle;
  return 0;
}
EXPORT int cublasDestroy_v2(void *handle) { return 0; }
EXPORT int cublasGetVersion_v2(void *handle, int *version) {
  LOCKED;
  *version = 130000;
  return 0;
}
EXPORT int cublasSetMathMode(void *handle, int mode) { return 0; }
EXPORT const char *cublasGetStatusName(int status) {
  LOCKED;
  return status == 0 ? "CUBLAS_STATUS_SUCCESS" : "CUBLAS_STATUS_INVALID_VALUE";
}
EXPORT const char *cublasGetStatusString(int status) {
  LOCKED;
  return status == 0 ? "success" : "an unsupported value or parameter was passed";
}
/* Column-major, as cuBLAS: C[m, n] = alpha op(A)[m, k] op(B)[k, n] + beta C. */
EXPORT int cublasSgemm_v2(void *handle, int ta, int tb, int m, int n, int k, const float *alpha,
                          const float *A, int lda, const float *B, int ldb, const float *beta,
                          float *C, int ldc) {
  LOCKED;
  note('g');
  if (m < 0 || n < 0 || k < 0) return 7; /* CUBLAS_STATUS_INVALID_VALUE */
  for (int j = 0; j < n; j++)
    for (int i = 0; i < m; i++) {
      float acc = 0;
      for (int p = 0; p < k; p++)
        acc += (ta ? A[p + (size_t)i * lda] : A[i + (size_t)p * lda]) *
               (tb ? B[j + (size_t)p * ldb] : B[p + (size_t)j * ldb]);
      float *c = &C[i + (size_t)j * ldc];
      *c = *alpha * acc + (*beta == 0 ? 0 : *beta * *c);
    }
  return 0;
}
