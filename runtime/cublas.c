/* runtime/cublas.c: opening cuBLAS, and the one checker of its statuses.
 *
 * The dense update of a model layer (X.W) is an SGEMM, and cuBLAS is the
 * library every framework uses for it; gop opens it with dlopen, as it does
 * the driver, so that no tool needs it to start and the interpreter path
 * of the models never touches it. cuBLAS runs on the CUDA runtime, which
 * attaches to the device's primary context: the one rt_cuda_open retains,
 * so the buffers of runtime/ are cuBLAS's too. One handle serves the
 * process, made on first use; like the driver session it is process-wide
 * state by nature. Every status goes through rt_cublas_check, which names
 * the call and the error.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "cublas.def"

static const Loc no_loc = {0};

static struct {
  pthread_mutex_t lock;
  void *lib;
  RtCublasApi api;
  cublasHandle_t handle; /* non-NULL once open */
  char name[160];
} C = {.lock = PTHREAD_MUTEX_INITIALIZER};

/* For when the library cannot name a status itself (it failed to load). */
static const char *fallback_status_name(int s) {
  switch (s) {
  case 0: return "CUBLAS_STATUS_SUCCESS";
  case 1: return "CUBLAS_STATUS_NOT_INITIALIZED";
  case 3: return "CUBLAS_STATUS_ALLOC_FAILED";
  case 7: return "CUBLAS_STATUS_INVALID_VALUE";
  case 8: return "CUBLAS_STATUS_ARCH_MISMATCH";
  case 11: return "CUBLAS_STATUS_MAPPING_ERROR";
  case 13: return "CUBLAS_STATUS_EXECUTION_FAILED";
  case 14: return "CUBLAS_STATUS_INTERNAL_ERROR";
  case 15: return "CUBLAS_STATUS_NOT_SUPPORTED";
  case 16: return "CUBLAS_STATUS_LICENSE_ERROR";
  }
  return NULL;
}

RtStatus rt_cublas_check(int status, const char *call, const char *what,
                         Diag *d) {
  if (status == CUBLAS_STATUS_SUCCESS) return RT_OK;
  const char *name = C.lib ? C.api.cublasGetStatusName(status) : NULL;
  const char *desc = C.lib ? C.api.cublasGetStatusString(status) : NULL;
  if (!name) name = fallback_status_name(status);
  char num[32];
  if (!name) {
    snprintf(num, sizeof num, "status %d", status);
    name = num;
  }
  ir_error(d, no_loc, "cuBLAS error in %s: %s%s%s%s%s%s", call, name,
           desc ? " (" : "", desc ? desc : "", desc ? ")" : "",
           what ? " " : "", what ? what : "");
  return status == 3 ? RT_OOM : RT_ERR;
}

const RtCublasApi *rt_cublas_api(void) { return C.lib ? &C.api : NULL; }
cublasHandle_t rt_cublas_handle(void) { return C.handle; }
const char *rt_cublas_name(void) { return C.lib ? C.name : ""; }

static void teardown(void) {
  if (C.handle) C.api.cublasDestroy_v2(C.handle);
  /* The library stays mapped: cuBLAS carries a C++ runtime whose static
   * allocations are lost (and reported as leaks) when it is unloaded, and
   * a later rt_cublas_load finds it again through dlopen. */
  C.handle = NULL;
  C.lib = NULL;
  memset(&C.api, 0, sizeof C.api);
  C.name[0] = 0;
}

/* Fills the table from `lib`; false after naming the first missing entry
 * point. */
static bool load_symbols(void *lib, const char *libname, Diag *d) {
#define SYM(name, ret, params) {#name, NULL, &C.api.name},
  const RtDlSym syms[] = {RT_CUBLAS_FUNCS(SYM)};
#undef SYM
  const char *first_missing;
  int missing = rt_dl_bind(lib, syms, (int)(sizeof syms / sizeof syms[0]), &first_missing);
  if (missing == 0) return true;
  ir_error(d, no_loc,
           "no usable cuBLAS: %s has no entry point %s (%d missing); it is "
           "not libcublas, or older than CUDA 11.4",
           libname, first_missing, missing);
  return false;
}

/* dlopens the first library that loads; reports every one tried. */
static void *open_library(const char **used, Diag *d) {
  const char *env = getenv("GOP_CUBLAS_LIBRARY");
  static const char *defaults[] = {
      "libcublas.so.13", "libcublas.so.12", "libcublas.so",
      "/usr/local/cuda/lib64/libcublas.so.13",
      "/usr/local/cuda/lib64/libcublas.so.12"};
  const char *one[1] = {env};
  const char **names = env && *env ? one : defaults;
  size_t n = env && *env ? 1 : sizeof defaults / sizeof defaults[0];
  RtDlTried tried;
  void *lib = rt_dl_open(names, (int)n, &tried);
  if (lib) {
    *used = tried.used;
    return lib;
  }
  ir_error(d, no_loc, "no cuBLAS: cannot load %s:%s",
           env && *env ? env : "libcublas.so.13, .so.12 or libcublas.so", tried.all);
  ir_note(d, no_loc,
          env && *env ? "GOP_CUBLAS_LIBRARY names the cuBLAS library to use"
                      : "GPU runs of the models need cuBLAS (CUDA toolkit); "
                        "set GOP_CUBLAS_LIBRARY to its path if it is "
                        "installed elsewhere");
  return NULL;
}

/* Loads the library and its table. Caller holds the lock. */
static RtStatus load_locked(Diag *d) {
  const char *used = NULL;
  void *lib = open_library(&used, d);
  if (!lib) return RT_NO_DRIVER;
  if (!load_symbols(lib, used, d)) {
    rt_dl_close(lib);
    memset(&C.api, 0, sizeof C.api);
    return RT_NO_DRIVER;
  }
  C.lib = lib;
  snprintf(C.name, sizeof C.name, "%s", used);
  return RT_OK;
}

RtStatus rt_cublas_load(Diag *d) {
  pthread_mutex_lock(&C.lock);
  RtStatus s = C.lib ? RT_OK : load_locked(d);
  pthread_mutex_unlock(&C.lock);
  return s;
}

/* Makes the handle on the current (primary) context. Caller holds the
 * lock; the library is loaded. */
static RtStatus create_locked(Diag *d) {
  RtStatus s = RT_CUBLAS_WHAT("while creating the cuBLAS handle", cublasCreate_v2,
                              (&C.handle));
  if (s != RT_OK) {
    C.handle = NULL; /* cublasCreate leaves it undefined on failure */
    return s;
  }
  int ver = 0;
  if (!(s = RT_CUBLAS(cublasGetVersion_v2, (C.handle, &ver))))
    s = RT_CUBLAS(cublasSetMathMode, (C.handle, CUBLAS_DEFAULT_MATH));
  if (s != RT_OK) {
    C.api.cublasDestroy_v2(C.handle);
    C.handle = NULL;
    return s;
  }
  size_t n = strlen(C.name);
  snprintf(C.name + n, sizeof C.name - n, " (cuBLAS %d.%d.%d)", ver / 10000, ver / 100 % 100,
           ver % 100);
  return RT_OK;
}

RtStatus rt_cublas_open(Diag *d) {
  /* The driver first: without it, that is the reason to give. */
  RtStatus s = rt_cuda_open(d);
  if (s != RT_OK) return s;
  pthread_mutex_lock(&C.lock);
  if (!C.lib) s = load_locked(d);
  if (s == RT_OK && !C.handle) s = create_locked(d);
  pthread_mutex_unlock(&C.lock);
  return s;
}

void rt_cublas_close(void) {
  pthread_mutex_lock(&C.lock);
  teardown();
  pthread_mutex_unlock(&C.lock);
}

RtStatus rt_cublas_sgemm_rows(RtDevPtr a, RtDevPtr b, RtDevPtr c, int n,
                              int k, int m, float beta, Diag *d) {
  RtStatus s = rt_cublas_open(d);
  if (s != RT_OK) return s;
  /* cuBLAS is column-major: a row-major [n, m] matrix is its transpose,
   * so C^T[m, n] = B^T[m, k] . A^T[k, n] computes row-major C = A . B
   * with no transposition at all. */
  const float one = 1.0f;
  char what[96];
  snprintf(what, sizeof what, "computing [%d x %d] . [%d x %d]", n, k, k, m);
  return RT_CUBLAS_WHAT(
      what, cublasSgemm_v2,
      (C.handle, CUBLAS_OP_N, CUBLAS_OP_N, m, n, k, &one,
       (const float *)(uintptr_t)b, m, (const float *)(uintptr_t)a, k, &beta,
       (float *)(uintptr_t)c, m));
}
