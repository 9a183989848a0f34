/* runtime/cuda.c: opening the CUDA driver, and the one checker of its
 * results.
 *
 * libcuda is opened with dlopen rather than linked, so that every gop tool
 * starts on a machine with no GPU and can say plainly why it cannot run a
 * kernel there. The entry points come from the list in cuda.def; a driver
 * that lacks one is refused as a whole at open, so no call can later find a
 * NULL pointer. The process shares one driver session: device 0's (or
 * GOP_CUDA_DEVICE's) primary context, which CUDA 13 keeps stable where
 * cuCtxCreate changed. A session gets a new epoch number each time it
 * opens, so that buffers and modules of a closed session are recognised
 * and never handed to the driver again.
 *
 * Every CUresult of runtime/ goes through rt_cuda_check, which names the
 * call and the error, says what was being done, and maps the error to the
 * RtStatus a tool exits with.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdio.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "cuda.def"

static const Loc no_loc = {0};

/* The session. `lock` serialises open and close; the fast path of
 * rt_cuda_open reads only `epoch`. */
static struct {
  pthread_mutex_t lock;
  void *lib;         /* dlopen handle; non-NULL once the table is filled */
  RtCudaApi api;
  CUdevice dev;
  CUcontext ctx;     /* retained primary context, or NULL */
  RtDeviceInfo info;
  _Atomic uint32_t epoch; /* 0 while not open */
  /* what must go before the context does (rt_cuda_at_close), in the order
   * registered; called last first */
  void (*at_close[RT_AT_CLOSE_MAX])(void);
  int nat_close;
  /* A sticky error corrupted the context: the error and the call that met
   * it. Kept for the life of the process (closing does not clear it: the
   * primary context would come back corrupt), so that gop refuses GPU
   * work with this reason instead of failing call after call. */
  _Atomic int lost;
  char lost_call[64];
} S = {.lock = PTHREAD_MUTEX_INITIALIZER};

/* Epochs are never reused within a process, so a stale one never matches. */
static uint32_t last_epoch;
/* The epoch whose context is current on this thread: the driver makes a
 * context current per thread, so each new thread binds it once. */
static _Thread_local uint32_t bound_epoch;

const char *rt_status_name(RtStatus s) {
  switch (s) {
  case RT_OK: return "ok";
  case RT_ERR: return "error";
  case RT_NO_DRIVER: return "no CUDA driver";
  case RT_NO_DEVICE: return "no CUDA device";
  case RT_OOM: return "out of device memory";
  }
  return "unknown status";
}

const char *rt_reason(const Diag *d, RtStatus s) {
  const char *msg = d->buf ? d->buf : rt_status_name(s);
  return strncmp(msg, "error: ", 7) == 0 ? msg + 7 : msg;
}

const char *rt_format_bytes(uint64_t bytes, char buf[32]) {
  static const char *units[] = {"KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
  if (bytes < 1024) {
    snprintf(buf, 32, "%llu B", (unsigned long long)bytes);
    return buf;
  }
  double v = (double)bytes;
  int u = -1;
  while (v >= 1024.0 && u < 5) {
    v /= 1024.0;
    u++;
  }
  /* One decimal is enough to tell sizes apart; "1.0 PiB" reads worse than
   * "1 PiB". */
  snprintf(buf, 32, "%.1f", v);
  size_t n = strlen(buf);
  if (n > 2 && strcmp(buf + n - 2, ".0") == 0) buf[n - 2] = 0;
  snprintf(buf + strlen(buf), 32 - strlen(buf), " %s", units[u]);
  return buf;
}

/* Names for the errors runtime/ meets most, for when the driver cannot name
 * them itself: the toolkit's stub library answers every call, including
 * cuGetErrorName, with CUDA_ERROR_STUB_LIBRARY. */
static const char *fallback_error_name(CUresult r) {
  switch (r) {
  case 0: return "CUDA_SUCCESS";
  case 1: return "CUDA_ERROR_INVALID_VALUE";
  case 2: return "CUDA_ERROR_OUT_OF_MEMORY";
  case 3: return "CUDA_ERROR_NOT_INITIALIZED";
  case 4: return "CUDA_ERROR_DEINITIALIZED";
  case 34: return "CUDA_ERROR_STUB_LIBRARY";
  case 36: return "CUDA_ERROR_CALL_REQUIRES_NEWER_DRIVER";
  case 46: return "CUDA_ERROR_DEVICE_UNAVAILABLE";
  case 100: return "CUDA_ERROR_NO_DEVICE";
  case 101: return "CUDA_ERROR_INVALID_DEVICE";
  case 200: return "CUDA_ERROR_INVALID_IMAGE";
  case 201: return "CUDA_ERROR_INVALID_CONTEXT";
  case 209: return "CUDA_ERROR_NO_BINARY_FOR_GPU";
  case 218: return "CUDA_ERROR_INVALID_PTX";
  case 221: return "CUDA_ERROR_JIT_COMPILER_NOT_FOUND";
  case 222: return "CUDA_ERROR_UNSUPPORTED_PTX_VERSION";
  case 400: return "CUDA_ERROR_INVALID_HANDLE";
  case 500: return "CUDA_ERROR_NOT_FOUND";
  case 700: return "CUDA_ERROR_ILLEGAL_ADDRESS";
  case 701: return "CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES";
  case 702: return "CUDA_ERROR_LAUNCH_TIMEOUT";
  case 715: return "CUDA_ERROR_ILLEGAL_INSTRUCTION";
  case 716: return "CUDA_ERROR_MISALIGNED_ADDRESS";
  case 719: return "CUDA_ERROR_LAUNCH_FAILED";
  case 803: return "CUDA_ERROR_SYSTEM_DRIVER_MISMATCH";
  case 804: return "CUDA_ERROR_COMPAT_NOT_SUPPORTED_ON_DEVICE";
  case 900: return "CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED";
  case 901: return "CUDA_ERROR_STREAM_CAPTURE_INVALIDATED";
  case 906: return "CUDA_ERROR_STREAM_CAPTURE_IMPLICIT";
  case 999: return "CUDA_ERROR_UNKNOWN";
  }
  return NULL;
}

/* Errors after which the context is corrupt: every later call fails too,
 * and only a new process recovers. Saying so saves a confusing cascade. */
static bool is_sticky(CUresult r) {
  return r == 700 || r == 702 || (r >= 714 && r <= 719);
}

/* ---- injected failures (GOP_CUDA_FAIL) ----
 *
 * GOP_CUDA_FAIL=NAME[:CODE[:N]] makes the N-th call (default the first) of
 * driver entry point NAME fail with CUresult CODE (default 999,
 * CUDA_ERROR_UNKNOWN) without reaching the driver, so that the paths of a
 * driver call failing mid-run (and of a sticky error, CODE 700) can be
 * tested on any GPU, and on CPU machines against a fake driver. The count
 * is per process. The message of the failure says it was injected. */
static _Atomic long inject_seen;
static _Thread_local bool injected_here;

int rt_cuda_inject(const char *call) {
  const char *env = getenv("GOP_CUDA_FAIL");
  if (!env || !*env) return 0;
  size_t n = strcspn(env, ":");
  if (strlen(call) != n || strncmp(env, call, n) != 0) return 0;
  long code = 999, nth = 1;
  if (env[n] == ':') {
    char *end;
    code = strtol(env + n + 1, &end, 10);
    if (*end == ':') nth = strtol(end + 1, &end, 10);
    if (*end || code <= 0) return 0; /* malformed: inject nothing */
  }
  if (atomic_fetch_add(&inject_seen, 1) + 1 != nth) return 0;
  injected_here = true;
  return (int)code;
}

bool rt_cuda_lost(Diag *d) {
  int lost = atomic_load(&S.lost);
  if (!lost) return false;
  const char *name = fallback_error_name(lost);
  if (d)
    ir_error(d, no_loc,
             "the GPU is unusable in this process: %s (CUDA error %d) in %s corrupted "
             "the CUDA context earlier; gop refuses further GPU work (start a new "
             "process)", name ? name : "an error", lost, S.lost_call);
  return true;
}

RtStatus rt_cuda_check(int result, const char *call, const char *what,
                       Diag *d) {
  if (result == CUDA_SUCCESS) return RT_OK;
  const char *name = NULL, *desc = NULL;
  if (S.lib) {
    if (S.api.cuGetErrorName(result, &name) != CUDA_SUCCESS) name = NULL;
    if (S.api.cuGetErrorString(result, &desc) != CUDA_SUCCESS) desc = NULL;
  }
  if (!name) name = fallback_error_name(result);
  char num[32];
  if (!name) {
    snprintf(num, sizeof num, "error %d", result);
    name = num;
  }
  ir_error(d, no_loc, "CUDA error in %s: %s%s%s%s%s%s%s", call, name,
           desc ? " (" : "", desc ? desc : "", desc ? ")" : "",
           what ? " " : "", what ? what : "",
           injected_here ? " (injected by GOP_CUDA_FAIL)" : "");
  injected_here = false;
  if (is_sticky(result)) {
    int none = 0;
    if (atomic_compare_exchange_strong(&S.lost, &none, result))
      snprintf(S.lost_call, sizeof S.lost_call, "%s", call);
    ir_note(d, no_loc,
            "the CUDA context is now unusable: gop refuses further GPU work in "
            "this process (a new process gets a fresh context)");
  }
  switch (result) {
  case CUDA_ERROR_OUT_OF_MEMORY: return RT_OOM;
  case CUDA_ERROR_NO_DEVICE:
  case CUDA_ERROR_INVALID_DEVICE: return RT_NO_DEVICE;
  case CUDA_ERROR_STUB_LIBRARY: return RT_NO_DRIVER;
  default: return RT_ERR;
  }
}

const RtCudaApi *rt_cuda_api(void) { return S.lib ? &S.api : NULL; }

uint32_t rt_cuda_epoch(void) { return atomic_load(&S.epoch); }

bool rt_cuda_available(void) { return rt_cuda_epoch() != 0; }

const RtDeviceInfo *rt_cuda_device(void) {
  return rt_cuda_available() ? &S.info : NULL;
}

const char *rt_cuda_device_name(void) {
  return rt_cuda_available() ? S.info.name : "no CUDA device";
}

void *rt_cuda_context(void) { return rt_cuda_available() ? (void *)S.ctx : NULL; }

int rt_cuda_cc(void) { return rt_cuda_available() ? S.info.cc : 0; }

/* Undoes whatever a (possibly partial) open did. Caller holds the lock. */
static void teardown(void) {
  if (S.ctx) S.api.cuDevicePrimaryCtxRelease_v2(S.dev);
  rt_dl_close(S.lib);
  atomic_store(&S.epoch, 0);
  S.lib = NULL;
  S.ctx = NULL;
  memset(&S.api, 0, sizeof S.api);
  memset(&S.info, 0, sizeof S.info);
}

/* Fills the table. Returns false after reporting the first entry point the
 * library lacks, and how many more; the optional ones may be missing. */
static bool load_symbols(void *lib, const char *libname, Diag *d) {
#define SYM(name, ret, params, older) {#name, older, &S.api.name},
  const RtDlSym syms[] = {RT_CUDA_FUNCS(SYM)}, optional[] = {RT_CUDA_OPTIONAL_FUNCS(SYM)};
#undef SYM
  const char *first_missing;
  rt_dl_bind(lib, optional, (int)(sizeof optional / sizeof optional[0]), &first_missing);
  int missing = rt_dl_bind(lib, syms, (int)(sizeof syms / sizeof syms[0]), &first_missing);
  if (missing == 0) return true;
  char more[48] = "";
  if (missing > 1)
    snprintf(more, sizeof more, " (and %d more entry points)", missing - 1);
  ir_error(d, no_loc,
           "no usable CUDA driver: %s has no entry point %s%s; it is not "
           "libcuda, or the driver is too old for gop",
           libname, first_missing, more);
  return false;
}

static RtStatus attr(int *out, CUdevice_attribute a, Diag *d) {
  return RT_CU(cuDeviceGetAttribute, (out, a, S.dev));
}

/* Reads what the rest of runtime/ needs to know about the device. */
static RtStatus query_device(Diag *d) {
  RtDeviceInfo *in = &S.info;
  RtDeviceLimits *l = &in->limits;
  RtStatus s;
  if ((s = RT_CU(cuDeviceGetName, (in->name, sizeof in->name, S.dev))))
    return s;
  int major = 0, minor = 0;
  struct {
    int *out;
    CUdevice_attribute a;
  } want[] = {
      {&major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR},
      {&minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR},
      {&in->sm_count, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT},
      {&in->warp_size, CU_DEVICE_ATTRIBUTE_WARP_SIZE},
      {&in->max_threads_per_sm,
       CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR},
      {&in->regs_per_block, CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_BLOCK},
      {&in->shared_per_sm,
       CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_MULTIPROCESSOR},
      {&in->l2_bytes, CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE},
      {&l->max_threads_per_block, CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK},
      {&l->max_block[0], CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_X},
      {&l->max_block[1], CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Y},
      {&l->max_block[2], CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Z},
      {&l->max_grid[0], CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_X},
      {&l->max_grid[1], CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Y},
      {&l->max_grid[2], CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Z},
      {&l->shared_per_block, CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK},
      {&l->shared_per_block_optin,
       CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN},
  };
  for (size_t i = 0; i < sizeof want / sizeof want[0]; i++)
    if ((s = attr(want[i].out, want[i].a, d))) return s;
  in->cc = 10 * major + minor;
  /* Devices before opt-in shared memory report 0 here. */
  if (l->shared_per_block_optin < l->shared_per_block)
    l->shared_per_block_optin = l->shared_per_block;
  if ((s = RT_CU(cuDriverGetVersion, (&in->driver_version)))) return s;
  size_t free_bytes = 0;
  return RT_CU(cuMemGetInfo_v2, (&free_bytes, &in->mem_total));
}

/* The device ordinal: GOP_CUDA_DEVICE, else 0. */
static int device_ordinal(Diag *d, bool *ok) {
  const char *env = getenv("GOP_CUDA_DEVICE");
  *ok = true;
  if (!env || !*env) return 0;
  char *end;
  long v = strtol(env, &end, 10);
  if (*end || v < 0 || v > 1024) {
    ir_error(d, no_loc, "GOP_CUDA_DEVICE=%s is not a device number", env);
    *ok = false;
  }
  return (int)v;
}

/* The slow path of rt_cuda_open. Caller holds the lock. */
static RtStatus open_locked(Diag *d) {
  const char *libname = getenv("GOP_CUDA_LIBRARY");
  bool default_name = !libname || !*libname;
  if (default_name) libname = "libcuda.so.1";
  bool ok;
  int ordinal = device_ordinal(d, &ok);
  if (!ok) return RT_ERR;

  RtDlTried tried;
  void *lib = rt_dl_open(&libname, 1, &tried);
  if (!lib) {
    const char *why = tried.first;
    /* dlerror usually starts with the file's name already */
    if (strstr(why, libname))
      ir_error(d, no_loc, "no CUDA driver: %s", why);
    else
      ir_error(d, no_loc, "no CUDA driver: cannot load %s: %s", libname, why);
    ir_note(d, no_loc,
            default_name
                ? "this machine has no NVIDIA driver; GPU runs need one (set "
                  "GOP_CUDA_LIBRARY if libcuda is installed elsewhere)"
                : "GOP_CUDA_LIBRARY names the driver library to use");
    return RT_NO_DRIVER;
  }
  if (!load_symbols(lib, libname, d)) {
    rt_dl_close(lib);
    memset(&S.api, 0, sizeof S.api);
    return RT_NO_DRIVER;
  }
  S.lib = lib;

  char what[512];
  CUresult r = S.api.cuInit(0);
  if (r == CUDA_ERROR_STUB_LIBRARY)
    snprintf(what, sizeof what,
             "while initialising %s: it is the CUDA toolkit's stub library, "
             "not a driver",
             libname);
  else
    snprintf(what, sizeof what, "while initialising the CUDA driver %s",
             libname);
  RtStatus s = rt_cuda_check(r, "cuInit", what, d);
  if (s) {
    /* Whatever cuInit says, there is no working driver, unless it found
     * the driver fine and no GPU. */
    teardown();
    return s == RT_NO_DEVICE ? RT_NO_DEVICE : RT_NO_DRIVER;
  }

  int count = 0;
  if ((s = RT_CU(cuDeviceGetCount, (&count)))) goto fail;
  if (count == 0 || ordinal >= count) {
    if (count == 0)
      ir_error(d, no_loc, "no CUDA device: the driver %s sees no GPU",
               libname);
    else
      ir_error(d, no_loc,
               "no CUDA device %d: the driver sees %d GPU%s (GOP_CUDA_DEVICE)",
               ordinal, count, count == 1 ? "" : "s");
    s = RT_NO_DEVICE;
    goto fail;
  }
  if ((s = RT_CU(cuDeviceGet, (&S.dev, ordinal)))) goto fail;
  S.info.ordinal = ordinal;
  if ((s = RT_CU(cuDevicePrimaryCtxRetain, (&S.ctx, S.dev)))) {
    S.ctx = NULL;
    goto fail;
  }
  if ((s = RT_CU(cuCtxSetCurrent, (S.ctx)))) goto fail;
  if ((s = query_device(d))) goto fail;

  atomic_store(&S.epoch, ++last_epoch);
  bound_epoch = last_epoch;
  return RT_OK;

fail:
  teardown();
  return s;
}

RtStatus rt_cuda_open(Diag *d) {
  if (rt_cuda_lost(d)) return RT_ERR;
  uint32_t epoch = atomic_load(&S.epoch);
  if (epoch != 0 && epoch == bound_epoch) return RT_OK;
  pthread_mutex_lock(&S.lock);
  RtStatus s = RT_OK;
  if (atomic_load(&S.epoch) == 0) {
    s = open_locked(d);
  } else {
    /* Open, but by another thread: make the context current here too. */
    s = RT_CU(cuCtxSetCurrent, (S.ctx));
    if (s == RT_OK) bound_epoch = atomic_load(&S.epoch);
  }
  pthread_mutex_unlock(&S.lock);
  return s;
}

void rt_cuda_at_close(void (*fn)(void)) {
  pthread_mutex_lock(&S.lock);
  bool known = false;
  for (int i = 0; i < S.nat_close; i++) known |= S.at_close[i] == fn;
  if (!known && S.nat_close < RT_AT_CLOSE_MAX) S.at_close[S.nat_close++] = fn;
  pthread_mutex_unlock(&S.lock);
}

void rt_cuda_close(void) {
  pthread_mutex_lock(&S.lock);
  if (atomic_load(&S.epoch) != 0) {
    /* Modules must go while their context is current on this thread. */
    S.api.cuCtxSetCurrent(S.ctx);
    for (int i = S.nat_close - 1; i >= 0; i--) S.at_close[i]();
    teardown();
  }
  pthread_mutex_unlock(&S.lock);
}

RtStatus rt_cuda_mem_info(size_t *free_bytes, size_t *total_bytes, Diag *d) {
  RtStatus s = rt_cuda_open(d);
  if (s) return s;
  return RT_CU(cuMemGetInfo_v2, (free_bytes, total_bytes));
}

RtStatus rt_cuda_sync(Diag *d) {
  RtStatus s = rt_cuda_open(d);
  if (s) return s;
  /* Kernels run asynchronously: their faults surface here, not at launch. */
  return RT_CU_WHAT("while waiting for the GPU to finish earlier launches",
                    cuCtxSynchronize, ());
}
