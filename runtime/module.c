/* runtime/module.c: PTX modules, their kernels, and launching them.
 *
 * The driver JIT-compiles PTX at load, which costs milliseconds to seconds;
 * the tuner and the tools load the same text many times, so loaded modules
 * are cached by a 64-bit FNV-1a hash of the text (and the text itself, so
 * that a collision can never hand back the wrong kernel). When the JIT
 * fails, its error log is the only useful explanation, so it is quoted line
 * by line.
 *
 * The cache is bounded: a tuner measures hundreds of candidates and a
 * long job's kernel cache drops and compiles programs, and every module
 * left loaded keeps its code on the device. A module is held by whoever
 * loaded it (a host-copy run for the call, a prepared device run until it
 * is freed) and is never unloaded while held; past GOP_CACHE_MAX_MODULES
 * loaded modules (256 by default), those held by nobody go, least recently
 * loaded first.
 *
 * A launch is checked against the device's limits before the driver sees
 * it: the driver answers a bad configuration with a bare
 * CUDA_ERROR_INVALID_VALUE, while the check names the rule and the numbers.
 */
#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "cuda.def"

static const Loc no_loc = {0};

struct RtModule {
  char name[96]; /* what the first load called it, for messages */
  uint64_t hash;
  char *ptx; /* a copy of the text: the key, and where kernel names are */
  char *compiled; /* the text compiled, where a floor was lowered; else NULL */
  size_t len;
  CUmodule mod;
  uint32_t epoch;
  int holds;     /* rt_module_load's not yet released: never unloaded */
  uint64_t used; /* C.tick at its last load: the LRU order */
  RtKernel **kernels;
  int nkernels, cap;
  RtModule *next; /* in its bucket */
};

/* The cache: chained buckets, doubled when the load factor passes 1. The
 * lock is held across a JIT, so two threads asking for the same text load
 * it once. */
static struct {
  pthread_mutex_t lock;
  RtModule **buckets;
  size_t nbuckets;
  int count;
  uint64_t tick;   /* counts loads */
  int max;         /* GOP_CACHE_MAX_MODULES, read at each JIT */
  int64_t evicted; /* modules unloaded by the bound */
} C = {.lock = PTHREAD_MUTEX_INITIALIZER, .max = 256};

uint64_t rt_fnv1a64(const void *data, size_t n) {
  const unsigned char *p = data;
  uint64_t h = 0xcbf29ce484222325ull; /* FNV offset basis */
  for (size_t i = 0; i < n; i++) {
    h ^= p[i];
    h *= 0x100000001b3ull; /* FNV prime */
  }
  return h;
}

static bool grow(void) {
  size_t n = C.nbuckets ? C.nbuckets * 2 : 64;
  RtModule **b = calloc(n, sizeof *b);
  if (!b) return false;
  for (size_t i = 0; i < C.nbuckets; i++)
    for (RtModule *m = C.buckets[i], *next; m; m = next) {
      next = m->next;
      m->next = b[m->hash % n];
      b[m->hash % n] = m;
    }
  free(C.buckets);
  C.buckets = b;
  C.nbuckets = n;
  return true;
}

static RtModule *find(uint64_t hash, const char *ptx, size_t len) {
  if (!C.nbuckets) return NULL;
  for (RtModule *m = C.buckets[hash % C.nbuckets]; m; m = m->next)
    if (m->hash == hash && m->len == len && memcmp(m->ptx, ptx, len) == 0)
      return m;
  return NULL;
}

/* Quotes the JIT log, one note per line, at most `max` lines. */
static void quote_log(Diag *d, const char *kind, const char *log, int max) {
  int shown = 0, total = 0;
  for (const char *p = log; *p;) {
    const char *end = strchr(p, '\n');
    int n = end ? (int)(end - p) : (int)strlen(p);
    if (n > 0) {
      if (shown < max) {
        ir_note(d, no_loc, "%s: %.*s", kind, n, p);
        shown++;
      }
      total++;
    }
    p += n + (end ? 1 : 0);
  }
  if (total > shown)
    ir_note(d, no_loc, "%s: ... %d more lines", kind, total - shown);
}

/* The `.version X.Y` of the PTX text, as 10 * X + Y, or 0. */
static int ptx_version(const char *ptx) {
  const char *p = strstr(ptx, ".version");
  int major, minor;
  if (p && sscanf(p, ".version %d.%d", &major, &minor) == 2)
    return 10 * major + minor;
  return 0;
}

#define JIT_LOG_BYTES 16384

/* JIT-compiles `ptx`; returns the module, or NULL after reporting. */
static CUmodule jit(const char *ptx, const char *what, Diag *d) {
  char *err_log = calloc(1, JIT_LOG_BYTES), *info_log = calloc(1, JIT_LOG_BYTES);
  if (!err_log || !info_log) {
    free(err_log);
    free(info_log);
    ir_error(d, no_loc, "out of host memory loading %s", what);
    return NULL;
  }
  /* Sizes travel in the void* slots themselves, as the driver API wants;
   * the driver writes back how much of each log it filled. */
  CUjit_option opts[] = {
      CU_JIT_ERROR_LOG_BUFFER, CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES,
      CU_JIT_INFO_LOG_BUFFER, CU_JIT_INFO_LOG_BUFFER_SIZE_BYTES};
  void *values[] = {err_log, (void *)(uintptr_t)(JIT_LOG_BYTES - 1), info_log,
                    (void *)(uintptr_t)(JIT_LOG_BYTES - 1)};
  CUmodule mod = NULL;
  char msg[160];
  snprintf(msg, sizeof msg, "while loading %s", what);
  CUresult r = rt_cuda_api()->cuModuleLoadDataEx(
      &mod, ptx, sizeof opts / sizeof opts[0], opts, values);
  if (rt_cuda_check(r, "cuModuleLoadDataEx", msg, d) != RT_OK) {
    err_log[JIT_LOG_BYTES - 1] = 0;
    if (err_log[0])
      quote_log(d, "JIT", err_log, 40);
    else
      ir_note(d, no_loc, "the JIT left no log");
    if (r == 222) { /* CUDA_ERROR_UNSUPPORTED_PTX_VERSION */
      const RtDeviceInfo *dev = rt_cuda_device();
      int v = ptx_version(ptx);
      ir_note(d, no_loc,
              "the text is PTX %d.%d; this driver (%d.%d) is older than the "
              "toolchain that wrote it",
              v / 10, v % 10, dev ? dev->driver_version / 1000 : 0,
              dev ? dev->driver_version % 1000 / 10 : 0);
    }
    mod = NULL;
  }
  free(err_log);
  free(info_log);
  return mod;
}

/* Where the digits of kernel `name`'s occupancy floor are in `ptx` (its
 * `.minnctapersm N`, between its `.entry` and its body), or NULL where it
 * has none. */
static const char *floor_at(const char *ptx, const char *name) {
  char want[160];
  snprintf(want, sizeof want, ".entry %s(", name);
  const char *p = strstr(ptx, want);
  const char *body = p ? strchr(p, '{') : NULL;
  const char *f = p ? strstr(p, ".minnctapersm") : NULL;
  if (!f || !body || f > body) return NULL;
  f += strlen(".minnctapersm");
  while (*f == ' ' || *f == '\t') f++;
  return f;
}

/* Kernel `name`'s occupancy floor in `ptx` (blocks an SM), or 0. */
static int floor_of(const char *ptx, const char *name) {
  const char *f = floor_at(ptx, name);
  return f ? atoi(f) : 0;
}

/* Lowers kernel `name`'s occupancy floor N in `ptx` to N / 2, in place
 * (the digits padded with spaces); false where it has none or N is 1. */
static bool halve_floor(char *ptx, const char *name) {
  const char *at = floor_at(ptx, name);
  if (!at) return false;
  char *digits = ptx + (at - ptx), *end;
  long n = strtol(digits, &end, 10);
  if (end == digits || n <= 1) return false;
  char half[24];
  int w = snprintf(half, sizeof half, "%ld", n / 2); /* never longer than n */
  memset(digits, ' ', (size_t)(end - digits));
  memcpy(digits, half, (size_t)w);
  return true;
}

/* The occupancy floor of a kernel (.minnctapersm) is what lets ptxas use
 * registers: gop asks for one that fits most kernels in registers at the
 * occupancy they need (codegen/kernel.c), and the few that spill at it
 * (JIT-reported local memory) are compiled again with half the floor, up
 * to three times, each time only those of `lower` (the kernels whose floor
 * is gop's choice, not an @occupancy) that still spill. The cache keys the
 * module by the text asked for, whatever text was compiled. Measured on an
 * H200 (bench/NOTES.md, 2026-11-28): 64-bit copy_u_sum spmm_groups(32, 2)
 * at 1536 threads an SM is 1.01-1.04x the 32-bit kernel, at 512 1.10-1.16x;
 * kernels reading edge rows (u_mul_e_sum_full) spill at 1024. */
static CUmodule jit_unspilled(const char *ptx, const char *what, const char *const *lower,
                              int nlower, char **compiled, Diag *d) {
  CUmodule mod = jit(ptx, what, d);
  char *text = NULL;
  for (int round = 0; mod && nlower > 0 && round < 3; round++) {
    char *next = NULL;
    bool changed = false;
    for (int i = 0; i < nlower; i++) {
      CUfunction fn = NULL;
      int local = 0;
      if (rt_cuda_api()->cuModuleGetFunction(&fn, mod, lower[i]) != CUDA_SUCCESS ||
          rt_cuda_api()->cuFuncGetAttribute(&local, CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES, fn) !=
              CUDA_SUCCESS ||
          local <= 0)
        continue;
      if (!next && !(next = strdup(text ? text : ptx))) break; /* keep what there is */
      changed |= halve_floor(next, lower[i]);
    }
    if (!changed) {
      free(next);
      break;
    }
    Diag quiet; /* a failure here keeps the module that loaded */
    ir_diag_init(&quiet, NULL);
    CUmodule again = jit(next, what, &quiet);
    ir_diag_free(&quiet);
    if (!again) {
      free(next);
      break;
    }
    (void)rt_cuda_api()->cuModuleUnload(mod);
    mod = again;
    free(text);
    text = next;
  }
  *compiled = text; /* NULL: `ptx` itself */
  return mod;
}

static void unload_all(void);
static void destroy(RtModule *m);

/* GOP_CACHE_MAX_MODULES: a number in [1, 2^20], else 256. */
static int module_limit(void) {
  const char *s = getenv("GOP_CACHE_MAX_MODULES");
  if (!s || !*s) return 256;
  char *end;
  long v = strtol(s, &end, 10);
  return *end || v < 1 || v > (1L << 20) ? 256 : (int)v;
}

/* Unloads the modules nobody holds, least recently loaded first, while
 * more than C.max are loaded. Caller holds the lock. */
static void trim(void) {
  bool synced = false;
  while (C.count > C.max) {
    RtModule **victim = NULL;
    for (size_t i = 0; i < C.nbuckets; i++)
      for (RtModule **at = &C.buckets[i]; *at; at = &(*at)->next)
        if ((*at)->holds == 0 && (!victim || (*at)->used < (*victim)->used)) victim = at;
    if (!victim) return; /* every one is in use */
    RtModule *m = *victim;
    *victim = m->next;
    C.count--;
    C.evicted++;
    if (!synced && m->epoch == rt_cuda_epoch() && rt_cuda_api()) {
      /* released is not finished: a run prepared again, or whose program
       * a kernel cache dropped, gave its module back with its last
       * launches maybe still queued in the caller's stream. Unloading
       * waits for the device first (rare: only past the bound). */
      (void)rt_cuda_api()->cuCtxSynchronize();
      synced = true;
    }
    destroy(m);
  }
}

RtModule *rt_module_load(const char *ptx, const char *what, Diag *d) {
  return rt_module_load_floors(ptx, what, NULL, 0, d);
}

RtModule *rt_module_load_floors(const char *ptx, const char *what, const char *const *lower,
                                int nlower, Diag *d) {
  /* Opened before the cache lock: rt_cuda_close takes the locks in the
   * order driver, cache. */
  if (rt_cuda_open(d)) return NULL;
  rt_cuda_at_close(unload_all); /* the modules go before their context */
  size_t len = strlen(ptx);
  uint64_t hash = rt_fnv1a64(ptx, len);
  char name[96];
  if (what)
    snprintf(name, sizeof name, "%s", what);
  else
    snprintf(name, sizeof name, "PTX module %016llx", (unsigned long long)hash);

  pthread_mutex_lock(&C.lock);
  RtModule *m = find(hash, ptx, len);
  if (m) {
    m->holds++;
    m->used = ++C.tick;
    goto done;
  }
  C.max = module_limit();
  m = calloc(1, sizeof *m);
  char *copy = malloc(len + 1);
  if (!m || !copy || ((size_t)C.count >= C.nbuckets && !grow())) {
    free(m);
    free(copy);
    m = NULL;
    ir_error(d, no_loc, "out of host memory loading %s", name);
    goto done;
  }
  memcpy(copy, ptx, len + 1);
  m->mod = jit_unspilled(ptx, name, lower, nlower, &m->compiled, d);
  if (!m->mod) {
    free(m->compiled);
    free(copy);
    free(m);
    m = NULL;
    goto done;
  }
  memcpy(m->name, name, sizeof m->name);
  m->hash = hash;
  m->ptx = copy;
  m->len = len;
  m->epoch = rt_cuda_epoch();
  m->holds = 1;
  m->used = ++C.tick;
  m->next = C.buckets[hash % C.nbuckets];
  C.buckets[hash % C.nbuckets] = m;
  C.count++;
  trim();
done:
  pthread_mutex_unlock(&C.lock);
  return m;
}

int rt_module_count(void) {
  pthread_mutex_lock(&C.lock);
  int n = C.count;
  pthread_mutex_unlock(&C.lock);
  return n;
}

int64_t rt_module_evicted(void) {
  pthread_mutex_lock(&C.lock);
  int64_t n = C.evicted;
  pthread_mutex_unlock(&C.lock);
  return n;
}

/* Unloading needs the context current on this thread: bound (when `m`'s
 * session is still open) before the cache lock, in the order
 * rt_cuda_close takes the locks. */
static void bind_for_unload(const RtModule *m) {
  Diag quiet;
  ir_diag_init(&quiet, NULL);
  if (m->epoch == rt_cuda_epoch()) (void)rt_cuda_open(&quiet);
  ir_diag_free(&quiet);
}

void rt_module_release(RtModule *m) {
  if (!m) return;
  bind_for_unload(m); /* unloading by the bound */
  pthread_mutex_lock(&C.lock);
  if (m->holds > 0) m->holds--;
  trim();
  pthread_mutex_unlock(&C.lock);
}

/* Frees `m` and its kernels, unloading it from the driver when its session
 * is still open. Caller holds the lock and has unlinked it. */
static void destroy(RtModule *m) {
  if (m->epoch == rt_cuda_epoch() && rt_cuda_api())
    rt_cuda_api()->cuModuleUnload(m->mod);
  for (int i = 0; i < m->nkernels; i++) {
    free((char *)m->kernels[i]->name);
    free(m->kernels[i]);
  }
  free(m->kernels);
  free(m->ptx);
  free(m->compiled);
  free(m);
}

void rt_module_unload(RtModule *m) {
  if (!m) return;
  bind_for_unload(m);
  pthread_mutex_lock(&C.lock);
  for (RtModule **p = &C.buckets[m->hash % C.nbuckets]; *p; p = &(*p)->next)
    if (*p == m) {
      *p = m->next;
      C.count--;
      break;
    }
  destroy(m);
  pthread_mutex_unlock(&C.lock);
}

static void unload_all(void) {
  pthread_mutex_lock(&C.lock);
  for (size_t i = 0; i < C.nbuckets; i++)
    for (RtModule *m = C.buckets[i], *next; m; m = next) {
      next = m->next;
      destroy(m);
    }
  free(C.buckets);
  C.buckets = NULL;
  C.nbuckets = 0;
  C.count = 0;
  pthread_mutex_unlock(&C.lock);
}

/* Names the `.entry` kernels of a PTX text, for a lookup that failed. */
static void note_entries(Diag *d, const char *ptx) {
  char list[512] = "";
  size_t used = 0;
  int n = 0;
  for (const char *p = ptx; (p = strstr(p, ".entry")) != NULL;) {
    p += strlen(".entry");
    while (*p == ' ' || *p == '\t') p++;
    size_t k = strcspn(p, " \t\n(");
    if (k == 0) continue;
    int w = snprintf(list + used, sizeof list - used, "%s%.*s",
                     n ? ", " : "", (int)k, p);
    if (w < 0 || (size_t)w >= sizeof list - used) break;
    used += (size_t)w;
    n++;
  }
  if (n)
    ir_note(d, no_loc, "its kernels are: %s", list);
  else
    ir_note(d, no_loc, "it defines no kernel (.entry)");
}

static RtStatus kernel_info(CUfunction fn, RtKernel *k, Diag *d) {
  struct {
    int *out;
    CUfunction_attribute a;
  } want[] = {
      {&k->info.max_threads, CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK},
      {&k->info.static_shared, CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES},
      {&k->info.num_regs, CU_FUNC_ATTRIBUTE_NUM_REGS},
      {&k->info.local_bytes, CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES},
      {&k->info.ptx_version, CU_FUNC_ATTRIBUTE_PTX_VERSION},
      {&k->info.binary_version, CU_FUNC_ATTRIBUTE_BINARY_VERSION},
      {&k->dyn_shared_max, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES},
  };
  for (size_t i = 0; i < sizeof want / sizeof want[0]; i++) {
    RtStatus s = RT_CU(cuFuncGetAttribute, (want[i].out, want[i].a, fn));
    if (s) return s;
  }
  return RT_OK;
}

RtKernel *rt_kernel_get(RtModule *m, const char *name, Diag *d) {
  if (rt_cuda_open(d)) return NULL;
  pthread_mutex_lock(&C.lock);
  RtKernel *k = NULL;
  for (int i = 0; i < m->nkernels; i++)
    if (strcmp(m->kernels[i]->name, name) == 0) {
      k = m->kernels[i];
      goto done;
    }
  if (m->epoch != rt_cuda_epoch()) {
    ir_error(d, no_loc, "%s was loaded by a CUDA session now closed",
             m->name);
    goto done;
  }
  CUfunction fn = NULL;
  CUresult r = rt_cuda_api()->cuModuleGetFunction(&fn, m->mod, name);
  if (r == CUDA_ERROR_NOT_FOUND) {
    ir_error(d, no_loc, "%s has no kernel named '%s'", m->name, name);
    note_entries(d, m->ptx);
    goto done;
  }
  char what[160];
  snprintf(what, sizeof what, "while looking up kernel '%s'", name);
  if (rt_cuda_check(r, "cuModuleGetFunction", what, d)) goto done;

  if (m->nkernels == m->cap) {
    int cap = m->cap ? m->cap * 2 : 4;
    RtKernel **ks = realloc(m->kernels, sizeof *ks * (size_t)cap);
    if (!ks) goto oom;
    m->kernels = ks;
    m->cap = cap;
  }
  k = calloc(1, sizeof *k);
  char *copy = strdup(name);
  if (!k || !copy) {
    free(k);
    free(copy);
    k = NULL;
    goto oom;
  }
  k->name = copy;
  k->module = m;
  k->fn = fn;
  k->info.floor_asked = floor_of(m->ptx, name);
  k->info.floor = m->compiled ? floor_of(m->compiled, name) : k->info.floor_asked;
  if (kernel_info(fn, k, d)) {
    free(copy);
    free(k);
    k = NULL;
    goto done;
  }
  m->kernels[m->nkernels++] = k;
  goto done;
oom:
  ir_error(d, no_loc, "out of host memory looking up kernel '%s'", name);
done:
  pthread_mutex_unlock(&C.lock);
  return k;
}

RtStatus rt_launch_validate(const RtLaunchConfig *c,
                            const RtDeviceLimits *lim, const RtKernelInfo *k,
                            const char *kernel, Diag *d) {
  int before = d->nerrors;
  uint32_t g[3] = {c->grid.x, c->grid.y, c->grid.z};
  uint32_t b[3] = {c->block.x, c->block.y, c->block.z};
  static const char axis[] = "xyz";
  char head[160];
  snprintf(head, sizeof head, "launch of kernel '%s' refused",
           kernel ? kernel : "?");

  if (!g[0] || !g[1] || !g[2])
    ir_error(d, no_loc, "%s: grid (%u, %u, %u) has a zero dimension", head,
             g[0], g[1], g[2]);
  if (!b[0] || !b[1] || !b[2])
    ir_error(d, no_loc, "%s: block (%u, %u, %u) has a zero dimension", head,
             b[0], b[1], b[2]);
  for (int i = 0; i < 3; i++) {
    if (b[i] > (uint32_t)lim->max_block[i])
      ir_error(d, no_loc, "%s: block.%c = %u exceeds the device's limit of %d",
               head, axis[i], b[i], lim->max_block[i]);
    if (g[i] > (uint32_t)lim->max_grid[i])
      ir_error(d, no_loc, "%s: grid.%c = %u exceeds the device's limit of %d",
               head, axis[i], g[i], lim->max_grid[i]);
  }
  uint64_t threads = (uint64_t)b[0] * b[1] * b[2];
  if (threads > (uint64_t)lim->max_threads_per_block)
    ir_error(d, no_loc,
             "%s: block (%u, %u, %u) has %llu threads; a block holds at most "
             "%d",
             head, b[0], b[1], b[2], (unsigned long long)threads,
             lim->max_threads_per_block);
  else if (k && k->max_threads > 0 && threads > (uint64_t)k->max_threads)
    ir_error(d, no_loc,
             "%s: it uses %d registers per thread, so a block holds at most "
             "%d threads, not %llu",
             head, k->num_regs, k->max_threads, (unsigned long long)threads);

  uint64_t stat = k ? (uint64_t)k->static_shared : 0;
  uint64_t shared = stat + c->shared_bytes;
  if (shared > (uint64_t)lim->shared_per_block_optin) {
    char a[32], s[32], t[32], l[32];
    if (stat)
      ir_error(d, no_loc,
               "%s: a block asks for %s of shared memory (%s dynamic and %s "
               "static); the device allows at most %s per block",
               head, rt_format_bytes(shared, a),
               rt_format_bytes(c->shared_bytes, s), rt_format_bytes(stat, t),
               rt_format_bytes((uint64_t)lim->shared_per_block_optin, l));
    else
      ir_error(d, no_loc,
               "%s: a block asks for %s of shared memory; the device allows "
               "at most %s per block",
               head, rt_format_bytes(shared, a),
               rt_format_bytes((uint64_t)lim->shared_per_block_optin, l));
  }
  return d->nerrors > before ? RT_ERR : RT_OK;
}

/* Queues the launch; `*call` names the entry point used. A kernel that
 * waits for the one before it (c->programmatic: griddepcontrol.wait, sm_90)
 * goes through cuLaunchKernelEx with programmatic stream serialization, so
 * that its blocks are scheduled while that kernel finishes; a driver
 * without cuLaunchKernelEx launches it plainly (the wait then returns at
 * once). `inject`: GOP_CUDA_FAIL may fail it (rt_cuda_inject; not on the
 * per-call path, which reads no environment). */
static CUresult launch(RtKernel *k, const RtLaunchConfig *c, void **args, void *stream,
                       bool inject, const char **call) {
  const RtCudaApi *api = rt_cuda_api();
  bool ex = c->programmatic && api->cuLaunchKernelEx;
  *call = ex ? "cuLaunchKernelEx" : "cuLaunchKernel";
  CUresult r = inject ? rt_cuda_inject(*call) : 0;
  if (r) return r;
  if (!ex)
    return api->cuLaunchKernel((CUfunction)k->fn, c->grid.x, c->grid.y, c->grid.z, c->block.x,
                               c->block.y, c->block.z, c->shared_bytes, (CUstream)stream, args,
                               NULL);
  CUlaunchAttribute at = {.id = CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION};
  at.value.programmatic_serialization_allowed = 1;
  CUlaunchConfig lc = {.grid_x = c->grid.x,   .grid_y = c->grid.y,   .grid_z = c->grid.z,
                       .block_x = c->block.x, .block_y = c->block.y, .block_z = c->block.z,
                       .shared_bytes = c->shared_bytes, .stream = (CUstream)stream,
                       .attrs = &at, .nattrs = 1};
  return api->cuLaunchKernelEx(&lc, (CUfunction)k->fn, args, NULL);
}

RtStatus rt_launch_stream(RtKernel *k, const RtLaunchConfig *c, void **args,
                          void *stream, Diag *d) {
  if ((int64_t)c->shared_bytes > k->dyn_shared_max) { /* the rare path */
    RtStatus s;
    if ((s = RT_CU_WHAT("while allowing a kernel more dynamic shared memory", cuFuncSetAttribute,
                        ((CUfunction)k->fn, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                         (int)c->shared_bytes))))
      return s;
    k->dyn_shared_max = (int)c->shared_bytes;
  }
  const char *call;
  CUresult r = launch(k, c, args, stream, false, &call);
  if (r == CUDA_SUCCESS) return RT_OK;
  /* the message is built only when something went wrong: this is the
   * per-call path */
  char what[200];
  snprintf(what, sizeof what, "while launching kernel '%s' on grid (%u, %u, %u), block "
           "(%u, %u, %u) in the caller's stream", k->name, c->grid.x, c->grid.y, c->grid.z,
           c->block.x, c->block.y, c->block.z);
  return rt_cuda_check(r, call, what, d);
}

RtStatus rt_launch(RtKernel *k, const RtLaunchConfig *c, void **args,
                   Diag *d) {
  RtStatus s = rt_cuda_open(d);
  if (s) return s;
  if (k->module->epoch != rt_cuda_epoch()) {
    ir_error(d, no_loc,
             "kernel '%s' was loaded by a CUDA session now closed; load it "
             "again",
             k->name);
    return RT_ERR;
  }
  if ((s = rt_launch_validate(c, &rt_cuda_device()->limits, &k->info, k->name,
                              d)))
    return s;
  char what[200];
  /* Above 48 KiB a kernel must opt in to dynamic shared memory; the
   * attribute is raised once and stays for later launches. */
  if ((int64_t)c->shared_bytes > k->dyn_shared_max) {
    snprintf(what, sizeof what,
             "while allowing kernel '%s' %u bytes of dynamic shared memory",
             k->name, c->shared_bytes);
    if ((s = RT_CU_WHAT(what, cuFuncSetAttribute,
                        ((CUfunction)k->fn,
                         CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                         (int)c->shared_bytes))))
      return s;
    k->dyn_shared_max = (int)c->shared_bytes;
  }
  snprintf(what, sizeof what,
           "while launching kernel '%s' on grid (%u, %u, %u), block (%u, %u, "
           "%u), %u bytes of dynamic shared memory",
           k->name, c->grid.x, c->grid.y, c->grid.z, c->block.x, c->block.y,
           c->block.z, c->shared_bytes);
  const char *call;
  CUresult r = launch(k, c, args, NULL, true, &call);
  return rt_cuda_check(r, call, what, d);
}
