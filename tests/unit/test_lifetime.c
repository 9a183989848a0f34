/* tests/unit/test_lifetime.c: graphs and runs freed before their context,
 * and the process-wide module cache bounded (docs/reliability.md).
 *
 * A training job on sampled mini-batches makes a graph and its runs at
 * every step; before gop_graph_free and gop_run_free they lived until the
 * context was freed, so such a job grew without bound. A tuner or a long
 * job's kernel cache loads hundreds of PTX modules, each keeping its code
 * on the device; GOP_CACHE_MAX_MODULES bounds those nobody holds.
 *
 * On the stand-in driver (tests/unit/fake_cuda.c): device memory and loaded
 * modules are counted there.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "gop.h"
#include "runtime/runtime.h"
#include "testutil.h"

static size_t (*fake_used)(int *);
static uint64_t (*fake_alloc_on)(int, size_t);
static int (*fake_free)(uint64_t);
static int (*fake_modules)(void);

static void use_fake_driver(void) {
  const char *path = getenv("GOP_FAKE_CUDA");
  ck_assert_msg(path != NULL, "GOP_FAKE_CUDA is not set (ctest sets it)");
  setenv("GOP_CUDA_LIBRARY", path, 1);
  void *fake = dlopen(path, RTLD_NOW);
  ck_assert_msg(fake != NULL, "%s", dlerror());
  *(void **)&fake_used = dlsym(fake, "fake_cuda_used");
  *(void **)&fake_alloc_on = dlsym(fake, "fake_cuda_alloc_on");
  *(void **)&fake_free = dlsym(fake, "cuMemFree_v2");
  *(void **)&fake_modules = dlsym(fake, "fake_cuda_modules");
  ck_assert(fake_used && fake_alloc_on && fake_free && fake_modules);
}

static int64_t numel_of(GopRun *r, int i) {
  int64_t shape[8], n = 1;
  int rank = gop_run_tensor_shape(r, i, shape);
  ck_assert_int_ge(rank, 0);
  for (int d = 0; d < rank; d++) n *= shape[d];
  return n;
}

/* A sampled mini-batch: `nv` vertices, 4 random in-edges each. */
static GopGraph *batch(GopContext *ctx, int64_t nv, uint64_t *seed) {
  int64_t ne = 4 * nv, *src = malloc(sizeof *src * (size_t)ne), *dst = malloc(sizeof *dst * (size_t)ne);
  for (int64_t e = 0; e < ne; e++) {
    *seed = *seed * 6364136223846793005ull + 1442695040888963407ull;
    src[e] = (int64_t)((*seed >> 33) % (uint64_t)nv);
    dst[e] = e / 4;
  }
  GopGraph *g = gop_graph_from_arcs(ctx, nv, ne, src, dst, "batch");
  free(src);
  free(dst);
  ck_assert_msg(g != NULL, "%s", gop_diagnostics(ctx));
  return g;
}

/* One training step on a graph of its own: the graph, a device run (a
 * neighbour-group schedule, so the graph's group tables are uploaded) and
 * an interpreter run with its check, all freed at the end of the step. */
static void step(GopContext *ctx, const GopOp *op, uint64_t *seed, int i) {
  GopGraph *g = batch(ctx, 48 + i % 5, seed);
  GopRun *dev = gop_run_new(ctx, op, g);
  ck_assert_ptr_nonnull(dev);
  ck_assert_int_eq(gop_run_set_compile(dev, &(GopCompileOptions){.schedule = "spmm_groups(4, 4)"}), 0);
  ck_assert_int_eq(gop_run_set_extent(dev, "F", 8), 0);
  int n = gop_run_num_tensors(dev);
  GopDevicePtr ptr[8];
  for (int t = 0; t < n; t++) ptr[t] = fake_alloc_on(0, (size_t)numel_of(dev, t) * 4);
  ck_assert_msg(gop_run_launch_ptrs(dev, ptr, n, (void *)0x1000) == 0, "%s", gop_diagnostics(ctx));
  ck_assert_int_eq(gop_run_sync(dev), 0);
  gop_run_free(dev);
  for (int t = 0; t < n; t++) fake_free(ptr[t]);

  GopRun *host = gop_run_new(ctx, op, g);
  ck_assert_int_eq(gop_run_set_compile(host, &(GopCompileOptions){.schedule = "warp_vertex(1, 1)"}), 0);
  ck_assert_int_eq(gop_run_set_extent(host, "F", 4), 0);
  gop_run_set_device(host, GOP_DEVICE_INTERP);
  float *buf[8];
  for (int t = 0; t < n; t++) {
    int64_t m = numel_of(host, t);
    buf[t] = malloc(sizeof(float) * (size_t)m);
    for (int64_t k = 0; k < m; k++) buf[t][k] = (float)((k + t) % 5) * 0.5f;
    ck_assert_int_eq(gop_run_bind(host, gop_run_tensor_name(host, t), buf[t], m), 0);
  }
  ck_assert_msg(gop_run_exec(host) == 0, "%s", gop_diagnostics(ctx));
  double worst;
  ck_assert_int_eq(gop_run_check(host, &worst), 0);
  gop_run_free(host);
  for (int t = 0; t < n; t++) free(buf[t]);
  ck_assert_msg(gop_graph_free(ctx, g) == 0, "%s", gop_diagnostics(ctx));
}

START_TEST(graph_and_runs_per_step) {
  use_fake_driver();
  GopContext *ctx = gop_context_new();
  const GopOp *op = gop_module_find_op(gop_stdlib(ctx), "u_mul_e_sum");
  uint64_t seed = 1;
  for (int i = 0; i < 20; i++) step(ctx, op, &seed, i); /* compiles, first touches */
  size_t dev0 = fake_used(NULL);
  long before = tu_rss();
  const char *s = getenv("GOP_LONGRUN_ITERS");
  long n = s && atol(s) > 0 ? atol(s) / 10 : 1000;
  for (long i = 0; i < n; i++) step(ctx, op, &seed, (int)i);
  long after = tu_rss();
  printf("lifetime: %ld steps (a graph and two runs each), host RSS %+ld KiB, device %zu -> %zu "
         "bytes\n", n, (after - before) >> 10, dev0, fake_used(NULL));
  /* nothing of a freed graph stays on the device: its CSR, group tables */
  ck_assert_uint_eq(fake_used(NULL), dev0);
#if !defined(__SANITIZE_ADDRESS__) && !defined(__SANITIZE_THREAD__)
  ck_assert_msg(after - before < (1 << 20), "RSS grew by %ld KiB over %ld steps",
                (after - before) >> 10, n);
#endif
  ck_assert_str_eq(gop_diagnostics(ctx), "");
  GopCacheStats st;
  gop_cache_stats(ctx, &st);
  ck_assert_int_eq(st.compiled, 1); /* every step's run found the kernel */
  gop_context_free(ctx);
  ck_assert_uint_eq(fake_used(NULL), 0);
}
END_TEST

START_TEST(graph_free_refused_while_runs_remain) {
  setenv("GOP_CUDA_LIBRARY", "/nonexistent/libcuda.so", 1);
  GopContext *ctx = gop_context_new(), *other = gop_context_new();
  const GopOp *op = gop_module_find_op(gop_stdlib(ctx), "copy_u_sum");
  GopGraph *g = gop_graph_open(ctx, "grid:8x8");
  GopRun *a = gop_run_new(ctx, op, g), *b = gop_run_new(ctx, op, g);
  ck_assert_int_eq(gop_graph_free(ctx, g), -1);
  ck_assert_ptr_nonnull(strstr(gop_diagnostics(ctx), "2 runs on this graph still exist"));
  gop_run_free(a);
  gop_clear_diagnostics(ctx);
  ck_assert_int_eq(gop_graph_free(ctx, g), -1);
  ck_assert_ptr_nonnull(strstr(gop_diagnostics(ctx), "1 run on this graph still exists"));
  gop_run_free(b);
  /* a graph of another context is not this one's to free */
  GopGraph *h = gop_graph_open(other, "grid:4x4");
  gop_clear_diagnostics(ctx);
  ck_assert_int_eq(gop_graph_free(ctx, h), -1);
  ck_assert_ptr_nonnull(strstr(gop_diagnostics(ctx), "not this context's"));
  ck_assert_int_eq(gop_graph_free(ctx, g), 0);
  ck_assert_int_eq(gop_graph_free(ctx, NULL), 0);
  gop_run_free(NULL);
  /* the graphs left, a reordered one among them, go with the context */
  ck_assert_ptr_nonnull(gop_graph_reorder(other, h, "degree"));
  gop_context_free(ctx);
  gop_context_free(other);
}
END_TEST

/* A model frees its runs and its self-loop graph, so the caller's graph
 * can be freed after it; its interpreter forward frees the run of each
 * step (GCN runs on the self-loop graph: were a step's run left, freeing
 * that graph would report it). */
START_TEST(model_frees_its_runs) {
  setenv("GOP_CUDA_LIBRARY", "/nonexistent/libcuda.so", 1);
  GopContext *ctx = gop_context_new();
  GopGraph *g = gop_graph_open(ctx, "grid:6x6");
  GopModelOptions o = {.in_features = 4, .classes = 3, .hidden = 8, .seed = 3};
  GopModel *m = gop_model_new(ctx, "gcn", g, &o);
  ck_assert_msg(m != NULL, "%s", gop_diagnostics(ctx));
  float x[36 * 4], y[36 * 3];
  for (int i = 0; i < 36 * 4; i++) x[i] = (float)(i % 7) * 0.1f;
  GopModelStats st;
  for (int i = 0; i < 3; i++)
    ck_assert_msg(gop_model_forward(m, x, y, GOP_DEVICE_INTERP, 0, &st) == 0, "%s",
                  gop_diagnostics(ctx));
  /* the self-loop graph the forwards ran on is freed with the model: no
   * run of theirs is left on it (else gop_graph_free reports them) */
  gop_model_free(m);
  ck_assert_str_eq(gop_diagnostics(ctx), "");
  ck_assert_msg(gop_graph_free(ctx, g) == 0, "%s", gop_diagnostics(ctx));
  gop_context_free(ctx);
}
END_TEST

static const char *const scheds[] = {"thread_vertex(1, 1)", "warp_vertex(1, 1)",
                                     "thread_edge(1, 1)", "warp_edge(1, 1)"};

static GopRun *spmm(GopContext *ctx, GopGraph *g, const char *sched, float **bufs) {
  GopRun *r = gop_run_new(ctx, gop_module_find_op(gop_stdlib(ctx), "u_mul_e_sum"), g);
  ck_assert_int_eq(gop_run_set_compile(r, &(GopCompileOptions){.schedule = sched}), 0);
  ck_assert_int_eq(gop_run_set_extent(r, "F", 8), 0);
  for (int i = 0; bufs && i < gop_run_num_tensors(r); i++) {
    int64_t n = numel_of(r, i);
    bufs[i] = calloc((size_t)n, sizeof(float));
    ck_assert_int_eq(gop_run_bind(r, gop_run_tensor_name(r, i), bufs[i], n), 0);
  }
  return r;
}

START_TEST(module_cache_bounded) {
  use_fake_driver();
  setenv("GOP_CACHE_MAX_MODULES", "2", 1);
  GopContext *ctx = gop_context_new();
  GopGraph *g = gop_graph_open(ctx, "grid:8x8");
  int64_t evicted0 = rt_module_evicted();
  /* host-copy runs hold their module for the call only */
  for (int round = 0; round < 2; round++)
    for (int s = 0; s < 4; s++) {
      float *bufs[8] = {0};
      GopRun *r = spmm(ctx, g, scheds[s], bufs);
      gop_run_set_device(r, GOP_DEVICE_GPU);
      gop_run_set_timing(r, 0, 1);
      ck_assert_msg(gop_run_exec(r) == 0, "%s", gop_diagnostics(ctx));
      ck_assert_int_le(rt_module_count(), 2);
      ck_assert_int_le(fake_modules(), 2);
      gop_run_free(r);
      for (int i = 0; i < 8; i++) free(bufs[i]);
    }
  ck_assert_int_ge(rt_module_evicted() - evicted0, 6); /* 8 loads, at most 2 kept */

  /* prepared device runs hold theirs: never unloaded under them, so the
   * cache goes past its bound while three are held, and back after */
  GopRun *held[3];
  GopDevicePtr ptr[3][8];
  for (int s = 0; s < 3; s++) {
    held[s] = spmm(ctx, g, scheds[s], NULL);
    for (int t = 0; t < gop_run_num_tensors(held[s]); t++)
      ptr[s][t] = fake_alloc_on(0, (size_t)numel_of(held[s], t) * 4);
    ck_assert_msg(gop_run_launch_ptrs(held[s], ptr[s], gop_run_num_tensors(held[s]),
                                      (void *)0x1000) == 0, "%s", gop_diagnostics(ctx));
  }
  ck_assert_int_eq(rt_module_count(), 3);
  ck_assert_int_eq(fake_modules(), 3);
  for (int s = 0; s < 3; s++) /* launching again needs no load */
    ck_assert_int_eq(gop_run_launch_ptrs(held[s], ptr[s], gop_run_num_tensors(held[s]),
                                         (void *)0x1000), 0);
  gop_run_free(held[0]);
  gop_run_free(held[1]);
  ck_assert_int_le(rt_module_count(), 2);
  ck_assert_int_le(fake_modules(), 2);
  /* a run whose module went loads it again */
  GopRun *again = spmm(ctx, g, scheds[0], NULL);
  ck_assert_msg(gop_run_launch_ptrs(again, ptr[0], gop_run_num_tensors(again), (void *)0x1000) == 0,
                "%s", gop_diagnostics(ctx));
  ck_assert_int_eq(rt_module_count(), 2);
  ck_assert_str_eq(gop_diagnostics(ctx), "");
  gop_context_free(ctx);
  for (int s = 0; s < 3; s++)
    for (int t = 0; t < 3; t++) fake_free(ptr[s][t]);
  ck_assert_int_le(rt_module_count(), 2);
  unsetenv("GOP_CACHE_MAX_MODULES");
}
END_TEST

/* A schedule's text is parsed in a scratch arena while a run is keyed,
 * and freed after; the diagnostics, which live as long as the context,
 * keep their own copy of every text they may quote (before, they kept a
 * pointer, and the next error that looked a source up read freed memory). */
START_TEST(diagnostics_outlive_scratch_texts) {
  setenv("GOP_CUDA_LIBRARY", "/nonexistent/libcuda.so", 1);
  GopContext *ctx = gop_context_new();
  const GopOp *op = gop_module_find_op(gop_stdlib(ctx), "copy_u_sum");
  char key[17];
  for (int i = 0; i < 4; i++)
    ck_assert_msg(gop_kernel_key(op, &(GopCompileOptions){.schedule = i % 2 ? "spmm_groups(4, 4)" : "warp_vertex(1, 1)"}, key) == 0,
                  "%s", gop_diagnostics(ctx));
  GopGraph *g = gop_graph_open(ctx, "grid:4x4");
  ck_assert_ptr_null(gop_graph_partition(ctx, g, 2, "kway"));
  ck_assert_ptr_nonnull(strstr(gop_diagnostics(ctx), "kway"));
  /* a bad schedule text is still quoted, its line and a caret */
  gop_clear_diagnostics(ctx);
  ck_assert_int_ne(gop_kernel_key(op, &(GopCompileOptions){.schedule = "warp_vertex(1, 1"}, key), 0);
  ck_assert_msg(strstr(gop_diagnostics(ctx), "syntax error") && strstr(gop_diagnostics(ctx), "\n^"),
                "%s", gop_diagnostics(ctx));
  ck_assert_int_eq(gop_graph_free(ctx, g), 0);
  gop_context_free(ctx);
}
END_TEST

int main(void) {
  Suite *s = suite_create("lifetime");
  TCase *t = tcase_create("lifetime");
  tcase_set_timeout(t, 600);
  tcase_add_test(t, graph_and_runs_per_step);
  tcase_add_test(t, graph_free_refused_while_runs_remain);
  tcase_add_test(t, model_frees_its_runs);
  tcase_add_test(t, module_cache_bounded);
  tcase_add_test(t, diagnostics_outlive_scratch_texts);
  suite_add_tcase(s, t);
  return tu_run(s);
}
