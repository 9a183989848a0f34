/* tests/unit/test_longrun.c: many cached calls keep host memory flat
 * (docs/reliability.md).
 *
 * A training job calls the same operators millions of times: each call
 * after the first must find everything it needs (kernels, the graph on the
 * device, the prepared launch) and allocate nothing that outlives it. Each
 * test warms up, reads the resident set size, makes GOP_LONGRUN_ITERS
 * calls (default 10,000; the figure is 100,000) and requires the
 * resident set to grow by less than 1 MiB, and the stand-in driver's
 * device memory not at all. The figures are printed for the record.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "gop.h"
#include "testutil.h"

static long iters(void) {
  const char *s = getenv("GOP_LONGRUN_ITERS");
  long n = s ? atol(s) : 0;
  return n > 0 ? n : 10000;
}

static size_t (*fake_used)(int *);
static uint64_t (*fake_alloc_on)(int, size_t);
static int (*fake_free)(uint64_t);

static void use_fake_driver(void) {
  const char *path = getenv("GOP_FAKE_CUDA");
  ck_assert_msg(path != NULL, "GOP_FAKE_CUDA is not set (ctest sets it)");
  setenv("GOP_CUDA_LIBRARY", path, 1);
  void *fake = dlopen(path, RTLD_NOW);
  ck_assert_msg(fake != NULL, "%s", dlerror());
  *(void **)&fake_used = dlsym(fake, "fake_cuda_used");
  *(void **)&fake_alloc_on = dlsym(fake, "fake_cuda_alloc_on");
  *(void **)&fake_free = dlsym(fake, "cuMemFree_v2");
}

typedef int (*CallFn)(void *arg);

/* Warms up, then measures `iters()` calls of `fn`: fails on an error, on
 * host growth of 1 MiB or more, or on device growth. */
static void measure(const char *what, CallFn fn, void *arg, GopContext *ctx, long n) {
  for (int i = 0; i < 20; i++) ck_assert_msg(fn(arg) == 0, "%s", gop_diagnostics(ctx));
  size_t dev0 = fake_used ? fake_used(NULL) : 0;
  long before = tu_rss();
  struct timespec a, b;
  clock_gettime(CLOCK_MONOTONIC, &a);
  for (long i = 0; i < n; i++)
    if (fn(arg) != 0) ck_abort_msg("call %ld: %s", i, gop_diagnostics(ctx));
  clock_gettime(CLOCK_MONOTONIC, &b);
  double secs = (double)(b.tv_sec - a.tv_sec) + (double)(b.tv_nsec - a.tv_nsec) * 1e-9;
  long after = tu_rss();
  size_t dev1 = fake_used ? fake_used(NULL) : 0;
  printf("longrun %s: %ld calls, %.2f us each, host RSS %ld -> %ld KiB (%+ld KiB), device %zu "
         "-> %zu bytes\n",
         what, n, secs / (double)n * 1e6, before >> 10, after >> 10, (after - before) >> 10,
         dev0, dev1);
  fflush(stdout);
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
  /* a sanitizer keeps freed memory aside (ASan's quarantine, 256 MB):
   * RSS says nothing here; LeakSanitizer checks the leaks instead */
#else
  ck_assert_msg(after - before < (1 << 20), "%s: RSS grew by %ld KiB over %ld calls", what,
                (after - before) >> 10, n);
#endif
  ck_assert_uint_eq(dev1, dev0);
  ck_assert_str_eq(gop_diagnostics(ctx), "");
}

static int exec_call(void *arg) { return gop_run_exec(arg); }

typedef struct Launch {
  GopRun *r;
  GopDevicePtr ptr[8];
  int n;
} Launch;

static int launch_call(void *arg) {
  Launch *l = arg;
  return gop_run_launch_ptrs(l->r, l->ptr, l->n, (void *)0x1000);
}

/* u_mul_e_sum on `graph` at F = 8, its host buffers bound. */
static GopRun *spmm(GopContext *ctx, const char *graph, float **bufs) {
  GopGraph *g = gop_graph_open(ctx, graph);
  GopRun *r = gop_run_new(ctx, gop_module_find_op(gop_stdlib(ctx), "u_mul_e_sum"), g);
  ck_assert_ptr_nonnull(r);
  ck_assert_int_eq(gop_run_set_extent(r, "F", 8), 0);
  for (int i = 0; i < gop_run_num_tensors(r); i++) {
    int64_t shape[8], numel = 1;
    int rank = gop_run_tensor_shape(r, i, shape);
    for (int d = 0; d < rank; d++) numel *= shape[d];
    bufs[i] = calloc((size_t)numel, sizeof(float));
    for (int64_t k = 0; k < numel; k++) bufs[i][k] = (float)(k % 7) * 0.25f;
    ck_assert_int_eq(gop_run_bind(r, gop_run_tensor_name(r, i), bufs[i], numel), 0);
  }
  return r;
}

START_TEST(interpreter_calls) {
  setenv("GOP_CUDA_LIBRARY", "/nonexistent/libcuda.so", 1);
  GopContext *ctx = gop_context_new();
  float *bufs[8] = {0};
  GopRun *r = spmm(ctx, "grid:4x4", bufs); /* the interpreter is slow: a small graph */
  gop_run_set_device(r, GOP_DEVICE_INTERP);
  measure("interpreter", exec_call, r, ctx, iters());
  gop_context_free(ctx);
  for (int i = 0; i < 8; i++) free(bufs[i]);
}
END_TEST

START_TEST(device_launches) {
  use_fake_driver();
  GopContext *ctx = gop_context_new();
  float *bufs[8] = {0};
  Launch l = {.r = spmm(ctx, "grid:16x16", bufs)};
  l.n = gop_run_num_tensors(l.r);
  for (int i = 0; i < l.n; i++) {
    int64_t shape[8], numel = 1;
    int rank = gop_run_tensor_shape(l.r, i, shape);
    for (int d = 0; d < rank; d++) numel *= shape[d];
    l.ptr[i] = fake_alloc_on(0, (size_t)numel * 4);
  }
  measure("device launches (stand-in driver)", launch_call, &l, ctx, iters());
  gop_context_free(ctx);
  for (int i = 0; i < l.n; i++) fake_free(l.ptr[i]);
  for (int i = 0; i < 8; i++) free(bufs[i]);
}
END_TEST

START_TEST(host_copy_runs) {
  use_fake_driver();
  GopContext *ctx = gop_context_new();
  float *bufs[8] = {0};
  GopRun *r = spmm(ctx, "grid:16x16", bufs);
  gop_run_set_device(r, GOP_DEVICE_GPU);
  gop_run_set_timing(r, 0, 1);
  measure("host-copy runs (stand-in driver)", exec_call, r, ctx, iters());
  gop_context_free(ctx);
  for (int i = 0; i < 8; i++) free(bufs[i]);
}
END_TEST

typedef struct Choice {
  GopRun *r;
  GopScheduleChoice c;
} Choice;

static int choose_call(void *arg) {
  Choice *ch = arg;
  return gop_choose_schedule(gop_run_op(ch->r), gop_run_graph(ch->r), 8, NULL, &ch->c);
}

/* gop_choose_schedule, as a framework's layer calls it at every step: it
 * schedules every candidate of the space (339 for u_mul_e_sum), and kept
 * them all in the context until it was freed (about 58 MB a call). */
START_TEST(schedule_choices) {
  setenv("GOP_CUDA_LIBRARY", "/nonexistent/libcuda.so", 1);
  GopContext *ctx = gop_context_new();
  float *bufs[8] = {0};
  Choice ch = {.r = spmm(ctx, "rmat:9:8", bufs)};
  /* each call takes 0.1-0.3 s here: a few of them show the growth */
  measure("schedule choices", choose_call, &ch, ctx, iters() / 500 > 20 ? iters() / 500 : 20);
  ck_assert_int_gt(ch.c.candidates, 100);
  gop_context_free(ctx);
  for (int i = 0; i < 8; i++) free(bufs[i]);
}
END_TEST

int main(void) {
  Suite *s = suite_create("longrun");
  TCase *t = tcase_create("longrun");
  tcase_set_timeout(t, 1200);
  tcase_add_test(t, interpreter_calls);
  tcase_add_test(t, device_launches);
  tcase_add_test(t, host_copy_runs);
  tcase_add_test(t, schedule_choices);
  suite_add_tcase(s, t);
  return tu_run(s);
}
