/* tests/gpu/longrun.c: long runs on a real GPU, host and device memory
 * measured (docs/reliability.md); tests/gpu/reliability.sh runs it.
 *
 *   longrun --prepare DIR           compile every kernel the phases run into
 *                                   the cache folder DIR (here, with LLVM)
 *   longrun DIR [CALLS] [STEPS]     on the GPU machine, kernels from DIR:
 *
 * 1. cached calls: CALLS (default 100,000) device launches, round robin
 *    over u_mul_e_sum (the default mapping and neighbour groups) and
 *    edge_softmax on rmat:14:8, synchronised every 1,000;
 * 2. training steps: STEPS (default 10,000) steps, each on a sampled
 *    mini-batch graph of its own (gop_graph_from_arcs), its three runs
 *    launched, waited for and freed with the graph (gop_run_free,
 *    gop_graph_free), as a job on sampled mini-batches does;
 * 3. the module cache bounded: with GOP_CACHE_MAX_MODULES=3, a device run
 *    of u_mul_e_sum on rmat:12:8 per schedule (six) and round (three),
 *    each made,
 *    launched, checked and freed: the modules the bound unloads (with the
 *    run that held them gone) are loaded again when asked.
 *
 * Each phase warms up, then reads the host's resident set and the device's
 * free memory (cuMemGetInfo) before and after; it fails on host growth of
 * 1 MiB or more, on any device growth, on an error, or on an output that
 * differs from the interpreter's (the last launch of each run of phases 1
 * and 2, every run of phase 3). The interpreter's reference of phase 3
 * runs once per case, so phase 3 also times the interpreter. Exit status 0 when every phase passed.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "gop.h"

enum { NRUNS = 3, MAX_T = 4 };

/* phases 1 and 2: the same three runs */
static const struct {
  const char *op, *schedule;
  int64_t F;
} jobs[NRUNS] = {
    {"u_mul_e_sum", NULL, 64},
    {"u_mul_e_sum", "spmm_groups(4, 4)", 32},
    {"edge_softmax", NULL, 0},
};
/* phase 3 */
static const char *const scheds[] = {"thread_vertex(1, 1)", "warp_vertex(1, 1)",
                                     "thread_edge(1, 1)",   "warp_edge(1, 1)",
                                     "spmm_groups(4, 4)",   "warp_vertex(2, 2)"};
enum { NSCHEDS = sizeof scheds / sizeof scheds[0] };
static const char *const big = "rmat:14:8";
static const char *const small = "rmat:12:8"; /* phase 3: checked at every run */
enum { BATCH_V = 2048, BATCH_DEG = 8 };

static struct {
  int (*retain)(void **, int);
  int (*set_current)(void *);
  int (*alloc)(uint64_t *, size_t);
  int (*free_)(uint64_t);
  int (*htod)(uint64_t, const void *, size_t);
  int (*dtoh)(void *, uint64_t, size_t);
  int (*mem_info)(size_t *, size_t *);
  int (*sync)(void);
} cu;
static void *primary;

static int load_driver(void) {
  void *lib = dlopen("libcuda.so.1", RTLD_NOW);
  if (!lib) return -1;
  *(void **)&cu.retain = dlsym(lib, "cuDevicePrimaryCtxRetain");
  *(void **)&cu.set_current = dlsym(lib, "cuCtxSetCurrent");
  *(void **)&cu.alloc = dlsym(lib, "cuMemAlloc_v2");
  *(void **)&cu.free_ = dlsym(lib, "cuMemFree_v2");
  *(void **)&cu.htod = dlsym(lib, "cuMemcpyHtoD_v2");
  *(void **)&cu.dtoh = dlsym(lib, "cuMemcpyDtoH_v2");
  *(void **)&cu.mem_info = dlsym(lib, "cuMemGetInfo_v2");
  *(void **)&cu.sync = dlsym(lib, "cuCtxSynchronize");
  if (!cu.retain || !cu.set_current || !cu.alloc || !cu.free_ || !cu.htod || !cu.dtoh ||
      !cu.mem_info || !cu.sync)
    return -1;
  if (cu.retain(&primary, 0) != 0) return -1;
  return cu.set_current(primary) == 0 ? 0 : -1;
}

static long rss(void) {
  FILE *f = fopen("/proc/self/statm", "r");
  long size = 0, res = 0;
  if (f) {
    if (fscanf(f, "%ld %ld", &size, &res) != 2) res = 0;
    fclose(f);
  }
  return res * sysconf(_SC_PAGESIZE);
}

static size_t device_free(void) {
  size_t free_b = 0, total = 0;
  cu.sync();
  cu.mem_info(&free_b, &total);
  return free_b;
}

static double now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static int failures;

#define FAIL(...)                \
  do {                           \
    printf("FAIL: " __VA_ARGS__); \
    printf("\n");                \
    failures++;                  \
  } while (0)

static GopRun *make_run(GopContext *ctx, GopGraph *g, const char *op, const char *sched,
                        int64_t F) {
  GopRun *r = gop_run_new(ctx, gop_module_find_op(gop_stdlib(ctx), op), g);
  if (!r) return NULL;
  if (sched && gop_run_set_compile(r, &(GopCompileOptions){.schedule = sched}) != 0) return NULL;
  if (F && gop_run_set_extent(r, "F", F) != 0) return NULL;
  return r;
}

static int64_t numel_of(GopRun *r, int i) {
  int64_t shape[8], n = 1;
  int rank = gop_run_tensor_shape(r, i, shape);
  for (int d = 0; d < rank; d++) n *= shape[d];
  return rank < 0 ? -1 : n;
}

/* A device run with its tensors: inputs random, on the device. */
typedef struct Dev {
  GopRun *run;
  int n;
  int64_t numel[MAX_T];
  float *host[MAX_T];
  GopDevicePtr ptr[MAX_T];
} Dev;

static uint64_t seed = 12345;
static float rnd(void) {
  seed = seed * 6364136223846793005ull + 1442695040888963407ull;
  return (float)((seed >> 33) % 2000) / 1000.0f - 1.0f;
}

/* Sets `d`'s sizes, allocating device memory of `cap` elements for each
 * tensor when it is not there yet (phases 2 and 3 reuse it). */
static int dev_bind(Dev *d, const int64_t *cap) {
  d->n = gop_run_num_tensors(d->run);
  for (int i = 0; i < d->n; i++) {
    d->numel[i] = numel_of(d->run, i);
    int64_t room = cap ? cap[i] : d->numel[i];
    if (d->numel[i] < 0 || d->numel[i] > room) return -1;
    /* inputs are made and uploaded once: later runs of the same shapes
     * (phases 2 and 3) read what is there */
    bool fresh = !d->host[i];
    if (fresh) d->host[i] = malloc(sizeof(float) * (size_t)room);
    if (!d->ptr[i] && cu.alloc(&d->ptr[i], sizeof(float) * (size_t)room) != 0) return -1;
    if (fresh && !gop_run_tensor_is_output(d->run, i)) {
      for (int64_t k = 0; k < d->numel[i]; k++) d->host[i][k] = rnd();
      if (cu.htod(d->ptr[i], d->host[i], sizeof(float) * (size_t)d->numel[i]) != 0) return -1;
    }
  }
  return 0;
}

/* Compares `d`'s outputs on the device with the interpreter's on the same
 * inputs; the relative L2 error, or -1 when it could not. */
static double dev_check(GopContext *ctx, Dev *d, GopGraph *g, const char *op, const char *sched,
                        int64_t F) {
  GopRun *ref = make_run(ctx, g, op, sched, F);
  if (!ref) return -1;
  gop_run_set_device(ref, GOP_DEVICE_INTERP);
  float *want[MAX_T] = {0};
  double worst = 0;
  for (int i = 0; i < d->n; i++) {
    want[i] = malloc(sizeof(float) * (size_t)(d->numel[i] ? d->numel[i] : 1));
    memcpy(want[i], d->host[i], sizeof(float) * (size_t)d->numel[i]);
    gop_run_bind(ref, gop_run_tensor_name(ref, i), want[i], d->numel[i]);
  }
  if (gop_run_exec(ref) != 0) worst = -1;
  for (int i = 0; worst >= 0 && i < d->n; i++) {
    if (!gop_run_tensor_is_output(d->run, i)) continue;
    float *got = malloc(sizeof(float) * (size_t)(d->numel[i] ? d->numel[i] : 1));
    cu.dtoh(got, d->ptr[i], sizeof(float) * (size_t)d->numel[i]);
    double num = 0, den = 0;
    for (int64_t k = 0; k < d->numel[i]; k++) {
      double e = (double)got[k] - want[i][k];
      num += e * e;
      den += (double)want[i][k] * want[i][k];
    }
    double rel = sqrt(num / (den > 0 ? den : 1));
    if (!(rel <= worst)) worst = rel;
    free(got);
  }
  for (int i = 0; i < d->n; i++) free(want[i]);
  gop_run_free(ref);
  return worst;
}

/* What a phase measured. */
static void report(const char *phase, long n, const char *unit, double secs, long rss0,
                   long rss1, size_t free0, size_t free1) {
  long host = rss1 - rss0;
  long long dev = (long long)free0 - (long long)free1; /* growth: less free */
  printf("%s: %ld %s, %.1f us each, host RSS %ld -> %ld KiB (%+ld KiB), device free %.1f -> "
         "%.1f MiB (%+lld bytes used)\n",
         phase, n, unit, secs / (double)n * 1e6, rss0 >> 10, rss1 >> 10, host >> 10,
         (double)free0 / 1048576.0, (double)free1 / 1048576.0, dev);
  if (host >= (1 << 20)) FAIL("%s: host RSS grew by %ld KiB", phase, host >> 10);
  if (dev > 0) FAIL("%s: device memory grew by %lld bytes", phase, dev);
}

static int prepare(const char *dir) {
  GopContext *ctx = gop_context_new();
  if (gop_set_cache_dir(ctx, dir) != 0) return 2;
  GopGraph *g = gop_graph_open(ctx, big);
  /* a batch graph has the same layout as those of phase 2 (32-bit, edge
   * ids in CSR order): the same kernels */
  int64_t *src = malloc(sizeof *src * BATCH_V * BATCH_DEG), *dst = malloc(sizeof *dst * BATCH_V * BATCH_DEG);
  for (int64_t e = 0; e < BATCH_V * BATCH_DEG; e++) {
    src[e] = (e * 7919) % BATCH_V;
    dst[e] = e / BATCH_DEG;
  }
  GopGraph *b = gop_graph_from_arcs(ctx, BATCH_V, BATCH_V * BATCH_DEG, src, dst, "batch");
  free(src);
  free(dst);
  int rc = 0;
  for (int k = 0; k < NRUNS && rc == 0; k++) {
    GopRun *r1 = make_run(ctx, g, jobs[k].op, jobs[k].schedule, jobs[k].F);
    GopRun *r2 = make_run(ctx, b, jobs[k].op, jobs[k].schedule, jobs[k].F);
    if (!r1 || !r2 || gop_run_prepare(r1) != 0 || gop_run_prepare(r2) != 0) rc = 1;
  }
  GopGraph *sm = gop_graph_open(ctx, small);
  for (int s = 0; s < NSCHEDS && rc == 0; s++) {
    GopRun *r = make_run(ctx, sm, "u_mul_e_sum", scheds[s], 16);
    if (!r || gop_run_prepare(r) != 0) rc = 1;
  }
  if (rc) fprintf(stderr, "%s", gop_diagnostics(ctx));
  GopCacheStats st;
  gop_cache_stats(ctx, &st);
  printf("prepared %d kernels in %s\n", st.entries, dir);
  gop_context_free(ctx);
  return rc;
}

/* 1. cached calls */
static void cached_calls(GopContext *ctx, long calls) {
  GopGraph *g = gop_graph_open(ctx, big);
  Dev d[NRUNS] = {0};
  for (int k = 0; k < NRUNS; k++) {
    d[k].run = make_run(ctx, g, jobs[k].op, jobs[k].schedule, jobs[k].F);
    if (!d[k].run || dev_bind(&d[k], NULL) != 0) {
      FAIL("cached calls: cannot set up %s: %s", jobs[k].op, gop_diagnostics(ctx));
      return;
    }
  }
  long warm = 1000, i = 0;
  double t0 = 0;
  long rss0 = 0;
  size_t free0 = 0;
  for (; i < warm + calls; i++) {
    if (i == warm) {
      free0 = device_free();
      rss0 = rss();
      t0 = now();
    }
    Dev *x = &d[i % NRUNS];
    if (gop_run_launch_ptrs(x->run, x->ptr, x->n, NULL) != 0 ||
        (i % 1000 == 999 && gop_run_sync(x->run) != 0)) {
      FAIL("cached calls: call %ld: %s", i, gop_diagnostics(ctx));
      return;
    }
  }
  cu.sync();
  double secs = now() - t0;
  report("1. cached calls", calls, "calls", secs, rss0, rss(), free0, device_free());
  for (int k = 0; k < NRUNS; k++) {
    double rel = dev_check(ctx, &d[k], g, jobs[k].op, jobs[k].schedule, jobs[k].F);
    printf("   %s %s: relative L2 %.2e against the interpreter\n", jobs[k].op,
           jobs[k].schedule ? jobs[k].schedule : "default", rel);
    if (!(rel >= 0 && rel <= 1e-5)) FAIL("cached calls: %s disagrees with the interpreter", jobs[k].op);
    gop_run_free(d[k].run);
    for (int i2 = 0; i2 < d[k].n; i2++) {
      cu.free_(d[k].ptr[i2]);
      free(d[k].host[i2]);
    }
  }
  if (gop_graph_free(ctx, g) != 0) FAIL("cached calls: %s", gop_diagnostics(ctx));
}

/* 2. training steps, a graph each */
static void training_steps(GopContext *ctx, long steps) {
  int64_t ne = (int64_t)BATCH_V * BATCH_DEG;
  int64_t *src = malloc(sizeof *src * (size_t)ne), *dst = malloc(sizeof *dst * (size_t)ne);
  /* room for the largest tensor of each run: vertex rows of F, or edges */
  int64_t cap[NRUNS][MAX_T];
  for (int k = 0; k < NRUNS; k++)
    for (int t = 0; t < MAX_T; t++) cap[k][t] = ne * 64 > (int64_t)BATCH_V * 64 ? ne * 64 : BATCH_V * 64;
  Dev d[NRUNS] = {0};
  long warm = 100;
  double t0 = 0, secs = 0;
  long rss0 = 0, rss1 = 0;
  size_t free0 = 0, free1 = 0;
  for (long s = 0; s < warm + steps; s++) {
    if (s == warm) {
      free0 = device_free();
      rss0 = rss();
      t0 = now();
    }
    for (int64_t e = 0; e < ne; e++) {
      seed = seed * 6364136223846793005ull + 1442695040888963407ull;
      src[e] = (int64_t)((seed >> 33) % BATCH_V);
      dst[e] = e / BATCH_DEG;
    }
    GopGraph *g = gop_graph_from_arcs(ctx, BATCH_V, ne, src, dst, "batch");
    if (!g) {
      FAIL("training steps: step %ld: %s", s, gop_diagnostics(ctx));
      break;
    }
    bool last = s == warm + steps - 1;
    if (last) { /* measured before the last step's check allocates */
      rss1 = rss();
      free1 = device_free();
      secs = now() - t0;
    }
    for (int k = 0; k < NRUNS; k++) {
      d[k].run = make_run(ctx, g, jobs[k].op, jobs[k].schedule, jobs[k].F);
      if (!d[k].run || dev_bind(&d[k], cap[k]) != 0 ||
          gop_run_launch_ptrs(d[k].run, d[k].ptr, d[k].n, NULL) != 0 ||
          gop_run_sync(d[k].run) != 0) {
        FAIL("training steps: step %ld, %s: %s", s, jobs[k].op, gop_diagnostics(ctx));
        steps = 0;
      }
      if (last && d[k].run) {
        double rel = dev_check(ctx, &d[k], g, jobs[k].op, jobs[k].schedule, jobs[k].F);
        printf("   last step, %s %s: relative L2 %.2e against the interpreter\n", jobs[k].op,
               jobs[k].schedule ? jobs[k].schedule : "default", rel);
        if (!(rel >= 0 && rel <= 1e-5)) FAIL("training steps: %s disagrees", jobs[k].op);
      }
      gop_run_free(d[k].run);
    }
    if (gop_graph_free(ctx, g) != 0) {
      FAIL("training steps: %s", gop_diagnostics(ctx));
      break;
    }
    if (steps == 0) break;
  }
  if (steps > 1) report("2. training steps", steps - 1, "steps", secs, rss0, rss1, free0, free1);
  for (int k = 0; k < NRUNS; k++)
    for (int t = 0; t < MAX_T; t++) {
      if (d[k].ptr[t]) cu.free_(d[k].ptr[t]);
      free(d[k].host[t]);
    }
  free(src);
  free(dst);
}

/* 3. the module cache's bound: a device run per schedule and round, made,
 * launched, checked and freed; its module is released with it, and past
 * the bound unloaded, to be loaded again in the next round */
static void module_bound(GopContext *ctx) {
  GopGraph *g = gop_graph_open(ctx, small);
  GopGraphInfo info;
  gop_graph_info(g, &info);
  int64_t cap[MAX_T];
  for (int t = 0; t < MAX_T; t++) cap[t] = (info.num_vertices > info.num_edges ? info.num_vertices : info.num_edges) * 16;
  Dev d = {0};
  size_t free1 = 0;
  long rss1 = 0;
  double t0 = 0;
  int runs = 0;
  for (int round = 0; round < 3; round++) {
    if (round == 1) {
      free1 = device_free();
      rss1 = rss();
      t0 = now();
    }
    for (int s = 0; s < NSCHEDS; s++) {
      d.run = make_run(ctx, g, "u_mul_e_sum", scheds[s], 16);
      if (!d.run || dev_bind(&d, cap) != 0 || gop_run_launch_ptrs(d.run, d.ptr, d.n, NULL) != 0 ||
          gop_run_sync(d.run) != 0) {
        FAIL("module bound: %s, round %d: %s", scheds[s], round, gop_diagnostics(ctx));
      } else {
        double rel = dev_check(ctx, &d, g, "u_mul_e_sum", scheds[s], 16);
        if (!(rel >= 0 && rel <= 1e-5))
          FAIL("module bound: %s, round %d: relative L2 %.2e against the interpreter", scheds[s],
               round, rel);
      }
      if (round > 0) runs++;
      gop_run_free(d.run);
    }
  }
  report("3. module cache bound (GOP_CACHE_MAX_MODULES=3, rounds 2-3)", runs, "runs",
         now() - t0, rss1, rss(), free1, device_free());
  for (int t = 0; t < MAX_T; t++) {
    if (d.ptr[t]) cu.free_(d.ptr[t]);
    free(d.host[t]);
  }
  gop_graph_free(ctx, g);
}

int main(int argc, char **argv) {
  setvbuf(stdout, NULL, _IOLBF, 0);
  if (argc >= 3 && strcmp(argv[1], "--prepare") == 0) return prepare(argv[2]);
  if (argc < 2) {
    fprintf(stderr, "usage: longrun --prepare DIR | longrun DIR [CALLS] [STEPS]\n");
    return 2;
  }
  long calls = argc > 2 ? atol(argv[2]) : 100000, steps = argc > 3 ? atol(argv[3]) : 10000;
  char what[256];
  if (gop_device_status(what, sizeof what) != 0 || load_driver() != 0) {
    fprintf(stderr, "no GPU: %s\n", what);
    return 3;
  }
  printf("== longrun on %s: %ld cached calls, %ld training steps\n", what, calls, steps);
  GopContext *ctx = gop_context_new();
  gop_set_cache_dir(ctx, argv[1]);
  if (calls > 0) cached_calls(ctx, calls);
  if (steps > 0) training_steps(ctx, steps);
  setenv("GOP_CACHE_MAX_MODULES", "3", 1); /* read at each load */
  module_bound(ctx);
  GopCacheStats st;
  gop_cache_stats(ctx, &st);
  printf("== longrun %s: %d failure%s; kernels compiled here: %lld (0: all from the folder)\n",
         failures ? "FAILED" : "passed", failures, failures == 1 ? "" : "s",
         (long long)st.compiled);
  if (st.compiled) failures++;
  gop_context_free(ctx);
  return failures ? 1 : 0;
}
