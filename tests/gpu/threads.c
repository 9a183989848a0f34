/* tests/gpu/threads.c: 8 threads, a CUDA stream each, device runs on shared
 * graphs (docs/threads.md), on a real GPU; tests/gpu/threads.sh runs it.
 *
 *   threads --prepare DIR     compile every job's kernels into the cache
 *                             folder DIR (here, with LLVM; no GPU needed)
 *   threads DIR [ITERS]       on the GPU machine: kernels from DIR, each
 *                             thread launches its run ITERS times (default
 *                             1000) in its own stream, then every output
 *                             is compared with the interpreter's
 *
 * The same jobs as tests/unit/test_threads.c: u_mul_e_sum under four
 * schedules (neighbour groups included, so the shared group tables are
 * exercised), copy_u_sum and edge_softmax, on rmat:12:8 and grid:64x64.
 * Exit status 0 when every thread's outputs agree within 1e-5 relative L2.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <math.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gop.h"

enum { THREADS = 8 };

typedef struct Job {
  const char *op, *schedule;
  int graph;
  int64_t F;
} Job;

static const Job jobs[THREADS] = {
    {"u_mul_e_sum", NULL, 0, 64},         {"u_mul_e_sum", "spmm_groups(4, 4)", 0, 64},
    {"copy_u_sum", "warp_vertex(1, 1)", 1, 32}, {"edge_softmax", NULL, 0, 0},
    {"u_mul_e_sum", "thread_edge(1, 1)", 1, 16}, {"copy_u_sum", NULL, 0, 64},
    {"u_mul_e_sum", "spmm_groups(4, 4)", 1, 64}, {"edge_softmax", NULL, 1, 0},
};
static const char *const graph_specs[2] = {"rmat:12:8", "grid:64x64"};

/* The few driver calls the test makes itself (gop makes its own). */
static struct {
  int (*retain)(void **, int);
  int (*set_current)(void *);
  int (*stream_create)(void **, unsigned);
  int (*stream_destroy)(void *);
  int (*alloc)(uint64_t *, size_t);
  int (*free_)(uint64_t);
  int (*htod)(uint64_t, const void *, size_t);
  int (*dtoh)(void *, uint64_t, size_t);
} cu;
static void *primary;

static int load_driver(void) {
  void *lib = dlopen("libcuda.so.1", RTLD_NOW);
  if (!lib) return -1;
  *(void **)&cu.retain = dlsym(lib, "cuDevicePrimaryCtxRetain");
  *(void **)&cu.set_current = dlsym(lib, "cuCtxSetCurrent");
  *(void **)&cu.stream_create = dlsym(lib, "cuStreamCreate");
  *(void **)&cu.stream_destroy = dlsym(lib, "cuStreamDestroy_v2");
  *(void **)&cu.alloc = dlsym(lib, "cuMemAlloc_v2");
  *(void **)&cu.free_ = dlsym(lib, "cuMemFree_v2");
  *(void **)&cu.htod = dlsym(lib, "cuMemcpyHtoD_v2");
  *(void **)&cu.dtoh = dlsym(lib, "cuMemcpyDtoH_v2");
  if (!cu.retain || !cu.set_current || !cu.stream_create || !cu.alloc || !cu.htod || !cu.dtoh)
    return -1;
  return cu.retain(&primary, 0) == 0 ? 0 : -1;
}

typedef struct Worker {
  int id, iters;
  GopContext *ctx;
  GopRun *run;
  int n;
  int64_t numel[8];
  float *host[8], *want[8];
  GopDevicePtr dev[8];
  void *stream;
  int failed;
  char why[600];
} Worker;

static GopRun *make_run(GopContext *ctx, GopGraph *const *graphs, const Job *j) {
  GopRun *r = gop_run_new(ctx, gop_module_find_op(gop_stdlib(ctx), j->op), graphs[j->graph]);
  if (!r) return NULL;
  if (j->schedule && gop_run_set_compile(r, &(GopCompileOptions){.schedule = j->schedule}) != 0)
    return NULL;
  if (j->F && gop_run_set_extent(r, "F", j->F) != 0) return NULL;
  return r;
}

static void *worker_main(void *arg) {
  Worker *w = arg;
  cu.set_current(primary);
  for (int it = 0; it < w->iters && !w->failed; it++) {
    if (gop_run_launch_ptrs(w->run, w->dev, w->n, w->stream) != 0 ||
        (it % 50 == 49 && gop_run_sync(w->run) != 0)) {
      w->failed = 1;
      snprintf(w->why, sizeof w->why, "iteration %d: %s", it, gop_diagnostics(w->ctx));
    }
  }
  if (!w->failed && gop_run_sync(w->run) != 0) {
    w->failed = 1;
    snprintf(w->why, sizeof w->why, "sync: %s", gop_diagnostics(w->ctx));
  }
  return NULL;
}

int main(int argc, char **argv) {
  if (argc >= 3 && strcmp(argv[1], "--prepare") == 0) {
    GopContext *ctx = gop_context_new();
    if (gop_set_cache_dir(ctx, argv[2]) != 0) return 2;
    GopGraph *graphs[2] = {gop_graph_open(ctx, graph_specs[0]), gop_graph_open(ctx, graph_specs[1])};
    for (int t = 0; t < THREADS; t++) {
      GopRun *r = make_run(ctx, graphs, &jobs[t]);
      if (!r || gop_run_prepare(r) != 0) {
        fprintf(stderr, "%s", gop_diagnostics(ctx));
        return 1;
      }
    }
    GopCacheStats st;
    gop_cache_stats(ctx, &st);
    printf("prepared %d kernels in %s\n", st.entries, argv[2]);
    gop_context_free(ctx);
    return 0;
  }
  if (argc < 2) {
    fprintf(stderr, "usage: threads --prepare DIR | threads DIR [ITERS]\n");
    return 2;
  }
  int iters = argc > 2 ? atoi(argv[2]) : 1000;
  char what[256];
  if (gop_device_status(what, sizeof what) != 0 || load_driver() != 0) {
    fprintf(stderr, "no GPU: %s\n", what);
    return 3;
  }
  cu.set_current(primary);
  printf("== %s: %d threads x %d launches, a stream each\n", what, THREADS, iters);
  GopContext *ctx = gop_context_new();
  gop_set_cache_dir(ctx, argv[1]);
  GopGraph *graphs[2] = {gop_graph_open(ctx, graph_specs[0]), gop_graph_open(ctx, graph_specs[1])};
  Worker w[THREADS];
  memset(w, 0, sizeof w);
  for (int t = 0; t < THREADS; t++) {
    w[t].id = t;
    w[t].iters = iters;
    w[t].ctx = ctx;
    w[t].run = make_run(ctx, graphs, &jobs[t]);
    GopRun *ref = make_run(ctx, graphs, &jobs[t]);
    if (!w[t].run || !ref) {
      fprintf(stderr, "%s", gop_diagnostics(ctx));
      return 1;
    }
    gop_run_set_device(ref, GOP_DEVICE_INTERP);
    w[t].n = gop_run_num_tensors(w[t].run);
    uint64_t seed = 77 + (uint64_t)t;
    for (int i = 0; i < w[t].n; i++) {
      int64_t shape[8], numel = 1;
      int rank = gop_run_tensor_shape(w[t].run, i, shape);
      for (int d = 0; d < rank; d++) numel *= shape[d];
      w[t].numel[i] = numel;
      w[t].host[i] = calloc((size_t)numel, 4);
      w[t].want[i] = calloc((size_t)numel, 4);
      if (!gop_run_tensor_is_output(w[t].run, i))
        for (int64_t k = 0; k < numel; k++) {
          seed = seed * 6364136223846793005ull + 1442695040888963407ull;
          w[t].host[i][k] = (float)((seed >> 33) % 2000) / 1000.0f - 1.0f;
        }
      memcpy(w[t].want[i], w[t].host[i], (size_t)numel * 4);
      gop_run_bind(ref, gop_run_tensor_name(ref, i), w[t].want[i], numel);
      if (cu.alloc(&w[t].dev[i], (size_t)numel * 4) != 0 ||
          cu.htod(w[t].dev[i], w[t].host[i], (size_t)numel * 4) != 0) {
        fprintf(stderr, "cannot allocate or copy tensor %d of thread %d\n", i, t);
        return 1;
      }
    }
    if (gop_run_exec(ref) != 0 || cu.stream_create(&w[t].stream, 1 /* non-blocking */) != 0) {
      fprintf(stderr, "thread %d: %s", t, gop_diagnostics(ctx));
      return 1;
    }
  }
  pthread_t th[THREADS];
  for (int t = 0; t < THREADS; t++) pthread_create(&th[t], NULL, worker_main, &w[t]);
  for (int t = 0; t < THREADS; t++) pthread_join(th[t], NULL);
  int bad = 0;
  for (int t = 0; t < THREADS; t++) {
    double worst = 0;
    for (int i = 0; i < w[t].n && !w[t].failed; i++) {
      if (!gop_run_tensor_is_output(w[t].run, i)) continue;
      float *got = calloc((size_t)w[t].numel[i], 4);
      cu.dtoh(got, w[t].dev[i], (size_t)w[t].numel[i] * 4);
      double num = 0, den = 0;
      for (int64_t k = 0; k < w[t].numel[i]; k++) {
        double d = (double)got[k] - w[t].want[i][k];
        num += d * d;
        den += (double)w[t].want[i][k] * w[t].want[i][k];
      }
      double rel = sqrt(num / (den > 0 ? den : 1));
      if (!(rel <= worst)) worst = rel;
      free(got);
    }
    int ok = !w[t].failed && worst <= 1e-5;
    bad += !ok;
    printf("thread %d  %-13s %-20s %-10s  %s  rel L2 %.2e%s%s\n", t, jobs[t].op,
           jobs[t].schedule ? jobs[t].schedule : "default", graph_specs[jobs[t].graph],
           ok ? "ok   " : "WRONG", worst, w[t].failed ? "  " : "", w[t].failed ? w[t].why : "");
  }
  GopCacheStats st;
  gop_cache_stats(ctx, &st);
  printf("== %s: %d of %d threads agree with the interpreter; kernels compiled here: %lld\n",
         bad ? "FAILED" : "passed", THREADS - bad, THREADS, (long long)st.compiled);
  for (int t = 0; t < THREADS; t++)
    for (int i = 0; i < w[t].n; i++) cu.free_(w[t].dev[i]);
  gop_context_free(ctx);
  return bad ? 1 : 0;
}
