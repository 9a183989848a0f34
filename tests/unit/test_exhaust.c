/* tests/unit/test_exhaust.c: a device that runs out of memory
 * (docs/reliability.md), on the stand-in driver with a small budget
 * (fake_cuda_set_memory): in the graph's upload, in an operator's
 * temporary, at every allocation of a first launch, in the host-copy
 * runs, and in the tuner's candidates. Each time the error names what did
 * not fit and how much, the context stays usable (the next call with
 * memory to spare succeeds), and freeing the context gives back every
 * byte gop took. The same under AddressSanitizer shows no host leak.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gop.h"
#include "testutil.h"

static void *fake;
static void (*fake_set_memory)(size_t);
static size_t (*fake_used)(int *);
static uint64_t (*fake_alloc_on)(int, size_t);
static int (*fake_free)(uint64_t);

static void setup(void) {
  const char *path = getenv("GOP_FAKE_CUDA");
  ck_assert_msg(path != NULL, "GOP_FAKE_CUDA is not set (ctest sets it)");
  setenv("GOP_CUDA_LIBRARY", path, 1);
  unsetenv("GOP_CACHE_DIR");
  unsetenv("GOP_CUDA_FAIL");
  fake = dlopen(path, RTLD_NOW); /* the handle gop's runtime gets too */
  ck_assert_msg(fake != NULL, "%s", dlerror());
  *(void **)&fake_set_memory = dlsym(fake, "fake_cuda_set_memory");
  *(void **)&fake_used = dlsym(fake, "fake_cuda_used");
  *(void **)&fake_alloc_on = dlsym(fake, "fake_cuda_alloc_on");
  *(void **)&fake_free = dlsym(fake, "cuMemFree_v2");
  ck_assert(fake_set_memory && fake_used && fake_alloc_on && fake_free);
  fake_set_memory(0);
}

static void teardown(void) {
  fake_set_memory(0);
  if (fake) dlclose(fake);
}

#define HAS(c, s) \
  ck_assert_msg(strstr(gop_diagnostics(c), (s)) != NULL, "no '%s' in:\n%s", (s), \
                gop_diagnostics(c))

/* A device-resident run of `opname` on rmat:12:8 with the caller's tensors
 * allocated on the fake device. */
typedef struct Dev {
  GopContext *ctx;
  GopGraph *g;
  GopRun *r;
  int n;
  GopDevicePtr ptr[8];
} Dev;

static void dev_open(Dev *x, const char *opname, int64_t F) {
  memset(x, 0, sizeof *x);
  x->ctx = gop_context_new();
  x->g = gop_graph_open(x->ctx, "rmat:12:8");
  GopOp *op = gop_module_find_op(gop_stdlib(x->ctx), opname);
  ck_assert(x->g && op);
  x->r = gop_run_new(x->ctx, op, x->g);
  if (F) ck_assert_int_eq(gop_run_set_extent(x->r, "F", F), 0);
  x->n = gop_run_num_tensors(x->r);
  for (int i = 0; i < x->n; i++) {
    int64_t shape[8], numel = 1;
    int rank = gop_run_tensor_shape(x->r, i, shape);
    for (int d = 0; d < rank; d++) numel *= shape[d];
    x->ptr[i] = fake_alloc_on(0, (size_t)numel * 4);
    ck_assert(x->ptr[i] != 0);
  }
}

static int dev_launch(Dev *x) {
  gop_clear_diagnostics(x->ctx);
  return gop_run_launch_ptrs(x->r, x->ptr, x->n, (void *)0x1000);
}

static void dev_close(Dev *x) {
  gop_context_free(x->ctx);
  for (int i = 0; i < x->n; i++) fake_free(x->ptr[i]);
}

START_TEST(graph_upload_out_of_memory) {
  Dev x;
  dev_open(&x, "u_mul_e_sum", 8);
  size_t base = fake_used(NULL); /* the caller's tensors */
  fake_set_memory(base + 4096);  /* far less than the graph's CSR */
  ck_assert_int_eq(dev_launch(&x), -1);
  HAS(x.ctx, "CUDA_ERROR_OUT_OF_MEMORY");
  HAS(x.ctx, "while allocating");
  HAS(x.ctx, "for graph");
  HAS(x.ctx, "KiB");
  HAS(x.ctx, "free of");
  /* nothing half-uploaded is left behind beyond the formats that fit */
  ck_assert_uint_le(fake_used(NULL), base + 4096);
  fake_set_memory(0);
  ck_assert_msg(dev_launch(&x) == 0, "%s", gop_diagnostics(x.ctx));
  ck_assert_msg(dev_launch(&x) == 0, "%s", gop_diagnostics(x.ctx));
  dev_close(&x);
  ck_assert_uint_eq(fake_used(NULL), 0);
}
END_TEST

START_TEST(temporary_out_of_memory) {
  /* edge_softmax keeps a per-destination max M and sum Z on the device */
  Dev x;
  dev_open(&x, "edge_softmax", 0);
  ck_assert_msg(dev_launch(&x) == 0, "%s", gop_diagnostics(x.ctx)); /* graph up */
  /* a second run on the same graph needs only its temporaries */
  GopRun *r2 = gop_run_new(x.ctx, gop_run_op(x.r), x.g);
  size_t held = fake_used(NULL);
  fake_set_memory(held + 1024); /* M is 4096 floats */
  gop_clear_diagnostics(x.ctx);
  ck_assert_int_eq(gop_run_launch_ptrs(r2, x.ptr, x.n, (void *)0x1010), -1);
  HAS(x.ctx, "CUDA_ERROR_OUT_OF_MEMORY");
  HAS(x.ctx, "while allocating 16 KiB for temporary M of edge_softmax");
  ck_assert_uint_eq(fake_used(NULL), held); /* the failed prepare holds nothing */
  /* the first run still launches: it holds its temporaries already */
  ck_assert_msg(dev_launch(&x) == 0, "%s", gop_diagnostics(x.ctx));
  fake_set_memory(0);
  gop_clear_diagnostics(x.ctx);
  ck_assert_msg(gop_run_launch_ptrs(r2, x.ptr, x.n, (void *)0x1010) == 0, "%s",
                gop_diagnostics(x.ctx));
  dev_close(&x);
  ck_assert_uint_eq(fake_used(NULL), 0);
}
END_TEST

/* A budget at every 2 KiB step from nothing to enough: the first launch
 * fails at each of its allocations in turn (graph formats, temporaries),
 * and after each failure the same run launches once memory is back. */
START_TEST(every_allocation_point) {
  int failed = 0;
  for (size_t extra = 0;; extra += 2048) {
    Dev x;
    dev_open(&x, "edge_softmax", 0);
    size_t base = fake_used(NULL);
    fake_set_memory(base + extra);
    int rc = dev_launch(&x);
    if (rc != 0) {
      failed++;
      HAS(x.ctx, "CUDA_ERROR_OUT_OF_MEMORY");
      HAS(x.ctx, "while allocating");
    }
    fake_set_memory(0);
    ck_assert_msg(dev_launch(&x) == 0, "budget +%zu: %s", extra, gop_diagnostics(x.ctx));
    dev_close(&x);
    ck_assert_uint_eq(fake_used(NULL), 0);
    if (rc == 0) break;
    ck_assert_int_lt(extra, 16 << 20);
  }
  ck_assert_int_gt(failed, 3);
}
END_TEST

START_TEST(host_copy_run_out_of_memory) {
  GopContext *ctx = gop_context_new();
  GopGraph *g = gop_graph_open(ctx, "rmat:12:8");
  GopRun *r = gop_run_new(ctx, gop_module_find_op(gop_stdlib(ctx), "u_mul_e_sum"), g);
  GopGraphInfo info;
  gop_graph_info(g, &info);
  int64_t F = 16;
  float *x = calloc((size_t)(info.num_vertices * F), 4), *w = calloc((size_t)info.num_edges, 4),
        *y = calloc((size_t)(info.num_vertices * F), 4);
  ck_assert_int_eq(gop_run_set_extent(r, "F", F), 0);
  ck_assert_int_eq(gop_run_bind(r, "X", x, info.num_vertices * F), 0);
  ck_assert_int_eq(gop_run_bind(r, "W", w, info.num_edges), 0);
  ck_assert_int_eq(gop_run_bind(r, "Y", y, info.num_vertices * F), 0);
  gop_run_set_device(r, GOP_DEVICE_GPU);
  gop_run_set_timing(r, 0, 1);
  fake_set_memory(64 << 10);
  ck_assert_int_eq(gop_run_exec(r), -1);
  HAS(ctx, "CUDA_ERROR_OUT_OF_MEMORY");
  HAS(ctx, "while allocating");
  ck_assert_int_eq(gop_run_stats(r)->gpu_status, 5);
  fake_set_memory(0);
  gop_clear_diagnostics(ctx);
  ck_assert_msg(gop_run_exec(r) == 0, "%s", gop_diagnostics(ctx));
  ck_assert(gop_run_stats(r)->on_gpu);
  gop_context_free(ctx);
  /* the host-copy runs keep the graph in runtime/'s own cache, freed with
   * the graph */
  ck_assert_uint_eq(fake_used(NULL), 0);
  free(x), free(w), free(y);
}
END_TEST

START_TEST(tuner_candidates_out_of_memory) {
  GopContext *ctx = gop_context_new();
  GopGraph *g = gop_graph_open(ctx, "rmat:10:8");
  GopRun *r = gop_run_new(ctx, gop_module_find_op(gop_stdlib(ctx), "u_mul_e_sum"), g);
  ck_assert_int_eq(gop_run_set_extent(r, "F", 8), 0);
  GopTuneOptions o = {.budget_s = 60, .max_candidates = 3, .warmup = 1, .reps = 1};
  GopTuneReport rep;
  fake_set_memory(8 << 10); /* not even the graph fits */
  int rc = gop_tune(r, &o, &rep);
  ck_assert_msg(rc == 0 || rc == -1, "%d", rc);
  printf("tune with 8 KiB: %d, %s\n", rc,
         rc == 0 && rep.nentries ? rep.entries[0].why : gop_diagnostics(ctx));
  if (rc == 0) {
    /* the tune ran: each candidate failed with the reason */
    ck_assert_int_eq(rep.measured, 0);
    ck_assert_int_gt(rep.failed, 0);
    for (int i = 0; i < rep.nentries; i++) {
      ck_assert_int_eq(rep.entries[i].status, GOP_TUNE_FAILED);
      ck_assert_msg(strstr(rep.entries[i].why, "out of memory") ||
                        strstr(rep.entries[i].why, "OUT_OF_MEMORY"),
                    "%s", rep.entries[i].why);
    }
  } else { /* three candidates in a row failed: the tune stops, saying why */
    HAS(ctx, "OUT_OF_MEMORY");
    HAS(ctx, "while allocating");
  }
  /* with memory back, the same run tunes: every candidate is measured (the
   * stand-in runs no kernel, so each is found wrong, not failed) */
  fake_set_memory(0);
  gop_clear_diagnostics(ctx);
  ck_assert_msg(gop_tune(r, &o, &rep) == 0, "%s", gop_diagnostics(ctx));
  ck_assert_int_eq(rep.failed, 0);
  ck_assert_int_gt(rep.tried, 0);
  gop_context_free(ctx);
  ck_assert_uint_eq(fake_used(NULL), 0);
}
END_TEST

int main(void) {
  Suite *s = suite_create("exhaust");
  TCase *t = tcase_create("exhaust");
  tcase_add_checked_fixture(t, setup, teardown);
  tcase_set_timeout(t, 600);
  tcase_add_test(t, graph_upload_out_of_memory);
  tcase_add_test(t, temporary_out_of_memory);
  tcase_add_test(t, every_allocation_point);
  tcase_add_test(t, host_copy_run_out_of_memory);
  tcase_add_test(t, tuner_candidates_out_of_memory);
  suite_add_tcase(s, t);
  return tu_run(s);
}
