/* tests/unit/test_device.c: the device-resident C API (api/device.c) where
 * it runs without a GPU: argument checks before the driver, the no-driver
 * path (GOP_CUDA_LIBRARY names a library that does not exist, so this holds
 * on any machine), the kernel cache's keys, and its folder of kernel packs.
 * The launches themselves are checked on the GPU machine
 * (tests/gpu/python_check.py). */
#include <check.h>
#include <dirent.h>
#include <dlfcn.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "gop.h"
#include "codegen/codegen.h"
#include "graph/graph.h"
#include "lang/lang.h"
#include "runtime/runtime.h"
#include "testutil.h"

#define HAS(ctx, text)                                                         \
  ck_assert_msg(strstr(gop_diagnostics(ctx), (text)) != NULL,                  \
                "expected '%s' in:\n%s", (text), gop_diagnostics(ctx))

static GopContext *ctx;
static GopModule *std_;
static GopGraph *grid;

static void setup(void) {
  setenv("GOP_CUDA_LIBRARY", "/nonexistent/libcuda.so", 1);
  unsetenv("GOP_CACHE_DIR");
  ctx = gop_context_new();
  std_ = gop_stdlib(ctx);
  grid = gop_graph_open(ctx, "grid:4x3");
  ck_assert_ptr_nonnull(std_);
  ck_assert_ptr_nonnull(grid);
}

static void teardown(void) { gop_context_free(ctx); }

static GopRun *spmm(GopContext *c, GopModule *m, GopGraph *g) {
  GopRun *r = gop_run_new(c, gop_module_find_op(m, "u_mul_e_sum"), g);
  ck_assert_ptr_nonnull(r);
  return r;
}

START_TEST(bind_checks) {
  GopRun *r = spmm(ctx, std_, grid);
  ck_assert_int_eq(gop_run_bind_device(r, "X", 0x1000, 12 * 8), -1);
  HAS(ctx, "extent F of tensor X is not set");
  ck_assert_int_eq(gop_run_set_extent(r, "F", 8), 0);
  gop_clear_diagnostics(ctx);
  ck_assert_int_eq(gop_run_bind_device(r, "Q", 0x1000, 1), -1);
  HAS(ctx, "operator u_mul_e_sum has no input or output named 'Q'");
  ck_assert_int_eq(gop_run_bind_device(r, "X", 0x1000, 12 * 8 + 1), -1);
  HAS(ctx, "tensor X needs 96 elements on this graph, got 97");
  ck_assert_int_eq(gop_run_bind_device(r, "X", 0, 96), -1);
  HAS(ctx, "(NULL device pointer)");
  ck_assert_int_eq(gop_run_bind_device(r, NULL, 0x1000, 96), -1);
  ck_assert_int_eq(gop_run_bind_device(r, "X", 0x1000, 96), 0);
  gop_clear_diagnostics(ctx);
  /* W (one weight per edge) and Y are still unbound */
  ck_assert_int_eq(gop_run_launch(r), -1);
  HAS(ctx, "input W is not bound to device memory");
  /* a bf16 instance binds the same element counts (device_dtypes runs it) */
  GopOp *bf = gop_op_retype(gop_module_find_op(std_, "u_mul_e_sum"), "bf16");
  ck_assert_ptr_nonnull(bf);
  GopRun *rb = gop_run_new(ctx, bf, grid);
  ck_assert_int_eq(gop_run_set_extent(rb, "F", 8), 0);
  ck_assert_int_eq(gop_run_bind_device(rb, "X", 0x1000, 96), 0);
  ck_assert_int_eq(gop_run_bind_device(rb, "X", 0x1000, 97), -1);
  HAS(ctx, "tensor X needs 96 elements on this graph, got 97");
  ck_assert_ptr_null(gop_op_retype(bf, "i32"));
  HAS(ctx, "unknown dtype 'i32'");
}
END_TEST

START_TEST(launch_ptrs_checks) {
  GopRun *r = spmm(ctx, std_, grid);
  GopDevicePtr p[3] = {0x1000, 0x2000, 0x3000};
  ck_assert_int_eq(gop_run_launch_ptrs(r, p, 2, NULL), -1);
  HAS(ctx, "u_mul_e_sum takes 3 tensors (X first), got 2");
  ck_assert_int_eq(gop_run_launch_ptrs(r, NULL, 3, NULL), -1);
  gop_clear_diagnostics(ctx);
  ck_assert_int_eq(gop_run_launch_ptrs(r, p, 3, NULL), -1);
  HAS(ctx, "extent F of u_mul_e_sum is not set");
  /* a NULL pointer for a tensor with elements (one without may have none:
   * empty_tensor_device) */
  ck_assert_int_eq(gop_run_set_extent(r, "F", 8), 0);
  p[1] = 0;
  gop_clear_diagnostics(ctx);
  ck_assert_int_eq(gop_run_launch_ptrs(r, p, 3, NULL), -1);
  HAS(ctx, "W of u_mul_e_sum: NULL device pointer");
}
END_TEST

/* With no driver a launch says why, and the context goes on working: the
 * same operator then runs on the interpreter. */
START_TEST(no_driver) {
  char what[256];
  ck_assert_int_eq(gop_device_status(what, sizeof what), 3);
  ck_assert_msg(strstr(what, "no CUDA driver") != NULL, "%s", what);
  GopRun *r = spmm(ctx, std_, grid);
  ck_assert_int_eq(gop_run_set_extent(r, "F", 2), 0);
  GopDevicePtr p[3] = {0x1000, 0x2000, 0x3000};
  ck_assert_int_eq(gop_run_launch_ptrs(r, p, 3, NULL), -1);
  HAS(ctx, "cannot run u_mul_e_sum on the GPU: no CUDA driver");
  ck_assert_int_eq(gop_run_stats(r)->gpu_status, 3);
  ck_assert_int_eq(gop_run_sync(r), -1);

  gop_clear_diagnostics(ctx);
  GopGraphInfo gi;
  gop_graph_info(grid, &gi);
  float x[12 * 2], w[64], y[12 * 2];
  for (int i = 0; i < 24; i++) x[i] = (float)i;
  for (int i = 0; i < gi.num_edges; i++) w[i] = 1.0f;
  ck_assert_int_eq(gop_run_bind(r, "X", x, 24), 0);
  ck_assert_int_eq(gop_run_bind(r, "W", w, gi.num_edges), 0);
  ck_assert_int_eq(gop_run_bind(r, "Y", y, 24), 0);
  gop_run_set_device(r, GOP_DEVICE_INTERP);
  ck_assert_int_eq(gop_run_exec(r), 0);
  ck_assert_int_eq(gop_error_count(ctx), 0);
}
END_TEST

START_TEST(keys) {
  GopOp *a = gop_module_find_op(std_, "u_mul_e_sum"), *b = gop_module_find_op(std_, "copy_u_sum");
  char k1[17], k2[17], k3[17], k4[17], k5[17];
  ck_assert_int_eq(gop_kernel_key(a, NULL, k1), 0);
  ck_assert_int_eq(strlen(k1), 16);
  ck_assert_int_eq(gop_kernel_key(a, &(GopCompileOptions){.target = "sm_90"}, k2), 0);
  ck_assert_str_eq(k1, k2); /* no GPU: the default target is sm_90 */
  ck_assert_int_eq(gop_kernel_key(a, &(GopCompileOptions){.target = "sm_80"}, k3), 0);
  ck_assert_str_ne(k1, k3);
  ck_assert_int_eq(gop_kernel_key(b, NULL, k4), 0);
  ck_assert_str_ne(k1, k4);
  ck_assert_int_eq(gop_kernel_key(a, &(GopCompileOptions){.schedule = "thread_edge(2, 1)"}, k5),
                   0);
  ck_assert_str_ne(k1, k5);
  /* the key is the code's: spelling out the default schedule changes nothing */
  ck_assert_int_eq(gop_kernel_key(a, &(GopCompileOptions){.schedule = "warp_edge(1, 1)"}, k4), 0);
  ck_assert_str_eq(k1, k4);
  /* the same in another context: keys are stable across processes */
  GopContext *c2 = gop_context_new();
  char k6[17];
  ck_assert_int_eq(gop_kernel_key(gop_module_find_op(gop_stdlib(c2), "u_mul_e_sum"),
                                  &(GopCompileOptions){.schedule = "thread_edge(2, 1)"}, k6),
                   0);
  ck_assert_str_eq(k5, k6);
  gop_context_free(c2);
  ck_assert_int_eq(gop_kernel_key(a, &(GopCompileOptions){.target = "sm_75"}, k3), -1);
  HAS(ctx, "unknown target sm_75");
  ck_assert_int_eq(gop_kernel_key(a, &(GopCompileOptions){.schedule = "nonsense(1)"}, k3), -1);
}
END_TEST

static int count_packs(const char *dir) {
  DIR *d = opendir(dir);
  ck_assert_ptr_nonnull(d);
  int n = 0;
  for (struct dirent *e; (e = readdir(d));) n += strstr(e->d_name, ".gopk") != NULL;
  closedir(d);
  return n;
}

START_TEST(pack_cache) {
  char dir[512];
  snprintf(dir, sizeof dir, "%s/kernels/deeper", tu_tmpdir());
  ck_assert_int_eq(gop_set_cache_dir(ctx, dir), 0);
  ck_assert_str_eq(gop_cache_dir(ctx), dir);
  GopRun *r = spmm(ctx, std_, grid);
  ck_assert_int_eq(gop_run_prepare(r), 0); /* no GPU: compiles into the cache */
  GopCacheStats st;
  gop_cache_stats(ctx, &st);
  ck_assert_int_eq(st.compiled, 1);
  ck_assert_int_eq(st.disk_writes, 1);
  ck_assert_int_eq(st.entries, 1);
  ck_assert_int_eq(count_packs(dir), 1);
  char key[17], path[640];
  ck_assert_int_eq(gop_kernel_key(gop_run_op(r), NULL, key), 0);
  snprintf(path, sizeof path, "%s/u_mul_e_sum-%s.gopk", dir, key);
  struct stat sb;
  ck_assert_int_eq(stat(path, &sb), 0);

  /* a second run of the same operator in the same context: memory */
  GopRun *r2 = spmm(ctx, std_, grid);
  ck_assert_int_eq(gop_run_prepare(r2), 0);
  gop_cache_stats(ctx, &st);
  ck_assert_int_eq(st.memory_hits, 1);
  ck_assert_int_eq(st.compiled, 1);

  /* another process (context) reads the pack instead of compiling */
  GopContext *c2 = gop_context_new();
  ck_assert_int_eq(gop_set_cache_dir(c2, dir), 0);
  GopModule *m2 = gop_stdlib(c2);
  GopGraph *g2 = gop_graph_open(c2, "rmat:6:4");
  GopRun *r3 = spmm(c2, m2, g2);
  ck_assert_int_eq(gop_run_prepare(r3), 0);
  gop_cache_stats(c2, &st);
  ck_assert_int_eq(st.disk_hits, 1);
  ck_assert_int_eq(st.compiled, 0);
  gop_context_free(c2);

  /* a damaged pack is compiled again and replaced */
  FILE *f = fopen(path, "w");
  fputs("not a pack\n", f);
  fclose(f);
  c2 = gop_context_new();
  ck_assert_int_eq(gop_set_cache_dir(c2, dir), 0);
  r3 = spmm(c2, gop_stdlib(c2), gop_graph_open(c2, "grid:2x2"));
  ck_assert_int_eq(gop_run_prepare(r3), 0);
  gop_cache_stats(c2, &st);
  ck_assert_int_eq(st.disk_hits, 0);
  ck_assert_int_eq(st.compiled, 1);
  gop_context_free(c2);

  /* clearing removes gop's packs and nothing else */
  char other[640];
  snprintf(other, sizeof other, "%s/notes.txt", dir);
  f = fopen(other, "w");
  fputs("mine\n", f);
  fclose(f);
  ck_assert_int_eq(gop_cache_clear(ctx), 1);
  ck_assert_int_eq(count_packs(dir), 0);
  ck_assert_int_eq(stat(other, &sb), 0);
  /* the memory cache stays */
  GopRun *r4 = spmm(ctx, std_, grid);
  ck_assert_int_eq(gop_run_prepare(r4), 0);
  gop_cache_stats(ctx, &st);
  ck_assert_int_eq(st.compiled, 1);
  ck_assert_int_eq(st.memory_hits, 2);
}
END_TEST

START_TEST(cache_dir_errors) {
  const char *file = tu_write("plain-file", "x\n");
  ck_assert_int_eq(gop_set_cache_dir(ctx, file), -1);
  HAS(ctx, "cannot use this as the kernel cache folder");
  ck_assert_ptr_null(gop_cache_dir(ctx));
  ck_assert_int_eq(gop_set_cache_dir(ctx, NULL), 0);
  ck_assert_int_eq(gop_cache_clear(ctx), 0); /* no folder: nothing to do */
  /* GOP_CACHE_DIR sets a new context's folder */
  char dir[512];
  snprintf(dir, sizeof dir, "%s/from-env", tu_tmpdir());
  setenv("GOP_CACHE_DIR", dir, 1);
  GopContext *c2 = gop_context_new();
  ck_assert_str_eq(gop_cache_dir(c2), dir);
  /* ... made when the first pack is written */
  GopRun *r = spmm(c2, gop_stdlib(c2), gop_graph_open(c2, "grid:2x2"));
  ck_assert_int_eq(gop_run_prepare(r), 0);
  ck_assert_int_eq(count_packs(dir), 1);
  gop_context_free(c2);
  unsetenv("GOP_CACHE_DIR");
}
END_TEST

/* ---- the device path against tests/unit/fake_cuda.c (GOP_FAKE_CUDA) ---- */

typedef struct FakeLaunch {
  const char *fn;
  unsigned grid, block, shared;
  void *stream;
  int nparams;
  int programmatic;
  uint64_t params[48];
} FakeLaunch;
typedef struct FakeMemset {
  uint64_t ptr;
  unsigned value;
  size_t count;
  void *stream;
} FakeMemset;

static void *fake;
static int (*fake_launches)(const FakeLaunch **);
static int (*fake_memsets)(const FakeMemset **);
static void (*fake_reset)(void);
static uint64_t (*fake_alloc_on)(int, size_t);
static int (*fake_free)(uint64_t);

static void use_fake_driver(void) {
  const char *path = getenv("GOP_FAKE_CUDA");
  ck_assert_msg(path != NULL, "GOP_FAKE_CUDA is not set (ctest sets it)");
  setenv("GOP_CUDA_LIBRARY", path, 1);
  fake = dlopen(path, RTLD_NOW);
  ck_assert_msg(fake != NULL, "%s", dlerror());
  *(void **)&fake_launches = dlsym(fake, "fake_cuda_launches");
  *(void **)&fake_memsets = dlsym(fake, "fake_cuda_memsets");
  *(void **)&fake_reset = dlsym(fake, "fake_cuda_reset_log");
  *(void **)&fake_alloc_on = dlsym(fake, "fake_cuda_alloc_on");
  *(void **)&fake_free = dlsym(fake, "cuMemFree_v2");
}

/* Whether some launch passed `p` as one of its parameters. */
static bool passed(uint64_t p) {
  const FakeLaunch *l;
  int n = fake_launches(&l);
  for (int i = 0; i < n; i++)
    for (int k = 0; k < l[i].nparams; k++)
      if (l[i].params[k] == p) return true;
  return false;
}

START_TEST(device_launch) {
  use_fake_driver();
  char what[256];
  ck_assert_int_eq(gop_device_status(what, sizeof what), 0);
  ck_assert_str_eq(what, "gop fake GPU 0");
  GopGraphInfo gi;
  gop_graph_info(grid, &gi);
  int64_t nv = gi.num_vertices, ne = gi.num_edges, F = 8;
  GopRun *r = spmm(ctx, std_, grid);
  ck_assert_int_eq(gop_run_set_extent(r, "F", F), 0);
  uint64_t x = fake_alloc_on(0, (size_t)(nv * F * 4)), w = fake_alloc_on(0, (size_t)ne * 4),
           y = fake_alloc_on(0, (size_t)(nv * F * 4));
  void *stream = (void *)0x1000;
  GopDevicePtr p[3] = {x, w, y};
  ck_assert_msg(gop_run_launch_ptrs(r, p, 3, stream) == 0, "%s", gop_diagnostics(ctx));
  const FakeLaunch *l;
  const FakeMemset *ms;
  int nl = fake_launches(&l), nm = fake_memsets(&ms);
  ck_assert_int_ge(nl, 1);
  for (int i = 0; i < nl; i++) {
    ck_assert_ptr_eq(l[i].stream, stream); /* the caller's stream, every kernel */
    ck_assert_uint_ge(l[i].grid, 1);
  }
  for (int i = 0; i < nm; i++) {
    ck_assert_ptr_eq(ms[i].stream, stream); /* ... and every initialisation */
    ck_assert_msg(ms[i].ptr != x && ms[i].ptr != w, "an input was cleared");
  }
  ck_assert(passed(x) && passed(w) && passed(y));

  /* the same again: the same launches, nothing prepared twice */
  fake_reset();
  ck_assert_int_eq(gop_run_launch_ptrs(r, p, 3, (void *)0x1100), 0);
  ck_assert_int_eq(fake_launches(&l), nl);
  ck_assert_ptr_eq(l[0].stream, (void *)0x1100);
  /* other buffers: their addresses are what the kernels get */
  uint64_t y2 = fake_alloc_on(0, (size_t)(nv * F * 4));
  fake_reset();
  p[2] = y2;
  ck_assert_int_eq(gop_run_launch_ptrs(r, p, 3, stream), 0);
  ck_assert(passed(y2) && !passed(y));
  ck_assert_int_eq(gop_run_sync(r), 0);
  ck_assert_int_eq(gop_run_stats(r)->gpu_status, 0);

  /* bind + stream + launch: the same through the other entry */
  fake_reset();
  ck_assert_int_eq(gop_run_bind_device(r, "X", x, nv * F), 0);
  ck_assert_int_eq(gop_run_bind_device(r, "W", w, ne), 0);
  ck_assert_int_eq(gop_run_bind_device(r, "Y", y, nv * F), 0);
  gop_run_set_stream(r, stream);
  ck_assert_int_eq(gop_run_launch(r), 0);
  ck_assert(passed(y));

  /* wider: prepared again for F = 16, with buffers of that size */
  ck_assert_int_eq(gop_run_set_extent(r, "F", 16), 0);
  uint64_t x16 = fake_alloc_on(0, (size_t)(nv * 16 * 4)), y16 = fake_alloc_on(0, (size_t)(nv * 16 * 4));
  GopDevicePtr p16[3] = {x16, w, y16};
  fake_reset();
  ck_assert_int_eq(gop_run_launch_ptrs(r, p16, 3, stream), 0);
  ck_assert(passed(x16) && passed(y16));
  /* the old, smaller Y is now too small, and is refused */
  GopDevicePtr bad[3] = {x16, w, y};
  ck_assert_int_eq(gop_run_launch_ptrs(r, bad, 3, stream), -1);
  HAS(ctx, "output Y of u_mul_e_sum: 768 bytes at");
  HAS(ctx, "run past the end of its allocation (384 bytes");
  ck_assert_int_eq(gop_run_launch_ptrs(r, p16, 3, stream), 0);

  GopCacheStats st;
  gop_cache_stats(ctx, &st);
  ck_assert_int_eq(st.compiled, 1); /* one compilation, for every width */

  /* a cached call costs gop a microsecond or so (the driver's launch
   * comes on top): the bound is loose for loaded or sanitized machines,
   * and catches a call that prepares or compiles again */
  enum { CALLS = 2000 };
  int failed = 0;
  fake_reset();
  double t0 = rt_wall_seconds();
  for (int i = 0; i < CALLS; i++) failed += gop_run_launch_ptrs(r, p16, 3, stream) != 0;
  double us = (rt_wall_seconds() - t0) / CALLS * 1e6;
  ck_assert_int_eq(failed, 0);
  ck_assert_int_eq(fake_launches(&l), 64); /* the log's capacity: it filled */
  printf("device_launch: %.2f us of gop's own work per cached call (stand-in driver)\n", us);
  ck_assert_msg(us < 200, "a cached call took %.1f us", us);
  gop_cache_stats(ctx, &st);
  ck_assert_int_eq(st.compiled, 1);
  gop_context_free(ctx);
  ctx = gop_context_new();
  rt_cuda_close();
}
END_TEST

/* An edgeless graph's edge tensor is empty; torch gives an empty CUDA
 * tensor no memory (data_ptr() 0): bound or passed as 0, the launch goes
 * through (nothing reads it, no fill or check touches it) while a 0 for a
 * tensor with elements is still refused. */
START_TEST(empty_tensor_device) {
  use_fake_driver();
  GopGraph *none = gop_graph_from_arcs(ctx, 6, 0, NULL, NULL, "edgeless");
  ck_assert_ptr_nonnull(none);
  GopRun *r = spmm(ctx, std_, none);
  ck_assert_int_eq(gop_run_set_extent(r, "F", 4), 0);
  uint64_t x = fake_alloc_on(0, 6 * 4 * 4), y = fake_alloc_on(0, 6 * 4 * 4);
  fake_reset();
  GopDevicePtr p[3] = {x, 0, y};
  ck_assert_msg(gop_run_launch_ptrs(r, p, 3, (void *)0x1000) == 0, "%s", gop_diagnostics(ctx));
  ck_assert(passed(y));
  const FakeMemset *ms;
  for (int i = 0, nm = fake_memsets(&ms); i < nm; i++) ck_assert(ms[i].ptr != 0);
  ck_assert_int_eq(gop_run_bind_device(r, "X", x, 24), 0);
  ck_assert_int_eq(gop_run_bind_device(r, "W", 0, 0), 0);
  ck_assert_int_eq(gop_run_bind_device(r, "Y", y, 24), 0);
  gop_run_set_stream(r, (void *)0x1000);
  ck_assert_msg(gop_run_launch(r) == 0, "%s", gop_diagnostics(ctx));
  GopDevicePtr q[3] = {x, 0, 0};
  ck_assert_int_eq(gop_run_launch_ptrs(r, q, 3, (void *)0x1000), -1);
  HAS(ctx, "Y of u_mul_e_sum: NULL device pointer");
  gop_context_free(ctx);
  ctx = gop_context_new();
  rt_cuda_close();
}
END_TEST

/* Operator `name` of the standard library under schedule `sched`,
 * lowered and compiled for sm_90 into `p`. */
/* The fake driver, with an arena, a diagnostics buffer and the standard
 * library parsed into it. */
static IrModule *fake_stdlib(Arena **a, Diag *d) {
  use_fake_driver();
  *a = ir_arena_new();
  ir_diag_init(d, NULL);
  IrModule *lib = lang_stdlib(*a, d);
  ck_assert_ptr_nonnull(lib);
  return lib;
}

static void compile_stdlib(const IrModule *lib, const char *name, const char *sched, Arena *a,
                           Diag *d, CgProgram *p) {
  IrOp *op = tu_lowered(lib, ir_module_find_op(lib, name), sched, a, d);
  ck_assert_msg(op != NULL, "%s", d->buf ? d->buf : "");
  ck_assert_msg(cg_compile(op, "sm_90", p, d) == 0, "%s", d->buf ? d->buf : "");
}

/* A kernel that spills at the occupancy floor gop asked for is compiled
 * again with half the floor, up to three times (runtime/module.c,
 * jit_unspilled); a floor an @occupancy asked for is kept, and a pack
 * keeps the @occupancy. The stand-in "spills" a kernel asking for more
 * than FAKE_CUDA_SPILL_ABOVE threads an SM. */
START_TEST(spill_lowers_floor) {
  Arena *a;
  Diag d;
  IrModule *lib = fake_stdlib(&a, &d);
  const char *(*trace)(void) = (const char *(*)(void))dlsym(fake, "fake_cuda_trace");
  IrOp *op = tu_lowered(lib, ir_module_find_op(lib, "copy_u_sum"), "spmm_groups(32, 2)", a, &d);
  ck_assert_msg(op != NULL, "%s", d.buf ? d.buf : "");
  CgProgram wide, full;
  ck_assert_msg(cg_compile_bits(op, "sm_90", 64, &wide, &d) == 0, "%s", d.buf ? d.buf : "");
  /* 64-bit groups kernels ask for 1536 threads an SM (12 blocks of 128) */
  int g = -1;
  for (int k = 0; k < wide.nkernels; k++)
    if (wide.kernels[k].group) g = k;
  ck_assert_int_ge(g, 0);
  const char *name = wide.kernels[g].name;
  char want[160];
  snprintf(want, sizeof want, ".entry %s(", name);
  const char *at = strstr(wide.ptx, want);
  ck_assert_ptr_nonnull(at);
  ck_assert_ptr_nonnull(strstr(at, ".minnctapersm 12"));
  const char *lower[] = {name};
  struct {
    const char *above;
    int loads, local, floor; /* JIT loads; the kernel's local bytes and floor after */
  } cases[] = {
      {"2000", 1, 0, 12}, /* no spill: one load */
      {"1024", 2, 0, 6},  /* 1536 spills; 6 x 128 = 768 does not */
      {"100", 4, 8, 1},   /* 12 -> 6 -> 3 -> 1: still "spilling", three retries */
  };
  for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
    setenv("FAKE_CUDA_SPILL_ABOVE", cases[c].above, 1);
    fake_reset();
    RtModule *m = rt_module_load_floors(wide.ptx, "spill test", lower, 1, &d);
    ck_assert_msg(m != NULL, "%s", d.buf ? d.buf : "");
    int loads = 0;
    for (const char *t = trace(); *t; t++) loads += *t == 'l';
    ck_assert_int_eq(loads, cases[c].loads);
    RtKernel *k = rt_kernel_get(m, name, &d);
    ck_assert_ptr_nonnull(k);
    ck_assert_int_eq(k->info.local_bytes, cases[c].local);
    ck_assert_int_eq(k->info.floor_asked, 12);
    ck_assert_int_eq(k->info.floor, cases[c].floor);
    rt_module_release(m);
    rt_module_unload(m); /* the next case loads the text again */
  }
  /* a kernel not named keeps its floor, spilling */
  setenv("FAKE_CUDA_SPILL_ABOVE", "1024", 1);
  fake_reset();
  RtModule *m = rt_module_load_floors(wide.ptx, "spill test", NULL, 0, &d);
  ck_assert_ptr_nonnull(m);
  ck_assert_int_eq(rt_kernel_get(m, name, &d)->info.local_bytes, 8);
  rt_module_release(m);
  rt_module_unload(m);
  unsetenv("FAKE_CUDA_SPILL_ABOVE");

  /* @occupancy(2048) is recorded on the kernel and survives a pack */
  IrOp *fop = tu_lowered(lib, ir_module_find_op(lib, "copy_u_sum"), "spmm_groups_full(32, 4)",
                         a, &d);
  ck_assert_msg(fop != NULL, "%s", d.buf ? d.buf : "");
  ck_assert_int_eq(cg_compile(fop, "sm_90", &full, &d), 0);
  char path[] = "/tmp/gop_spill_XXXXXX";
  int fd = mkstemp(path);
  ck_assert_int_ge(fd, 0);
  close(fd);
  ck_assert_int_eq(cg_pack_write(&full, path, &d), 0);
  CgProgram back;
  ck_assert_msg(cg_pack_read(path, &back, &d) == 0, "%s", d.buf ? d.buf : "");
  unlink(path);
  int occs = 0;
  for (int k = 0; k < back.nkernels; k++) {
    ck_assert_int_eq(back.kernels[k].occ, full.kernels[k].occ);
    occs += back.kernels[k].occ == 2048;
  }
  ck_assert_int_eq(occs, 1);
  cg_program_free(&back);
  cg_program_free(&full);
  cg_program_free(&wide);
  ir_diag_free(&d);
  ir_arena_free(a);
  rt_cuda_close();
}
END_TEST

/* A groups stage's grid is sized by its table, as an extent loop's is:
 * one warp (4 of a block of 128 threads: GROUPS_THREADS, codegen/kernel.c)
 * a row of the table, at most 8 waves; a team of 8 lanes a row under
 * spmm_teams(G, 8). A block size the schedule asks for is kept. */
START_TEST(groups_grid_by_table) {
  Arena *a;
  Diag d;
  IrModule *lib = fake_stdlib(&a, &d);
  const char *sched[2] = {"spmm_groups(4, 4)", "spmm_teams(4, 8)"};
  const int rows_per_block[2] = {4, 16};
  for (int s = 0; s < 2; s++) {
    CgProgram p;
    compile_stdlib(lib, "copy_u_sum", sched[s], a, &d, &p);
    Graph *g = graph_generate("rmat:12:8", &d);
    ck_assert_ptr_nonnull(g);
    int64_t F = 8, syms[1] = {F};
    float *x = calloc((size_t)(g->nv * F), sizeof *x), *y = calloc((size_t)(g->nv * F), sizeof *y);
    void *host[2];
    for (int i = 0; i < p.ntensors; i++) host[i] = !strcmp(p.tensors[i].name, "X") ? x : y;
    fake_reset();
    RtExecOptions opt = {.warmup = 0, .reps = 1, .sets = 1};
    RtExecResult res;
    ck_assert_msg(rt_exec_program(&p, g, syms, host, &opt, &res, &d) == RT_OK, "%s",
                  d.buf ? d.buf : "");
    const FakeLaunch *l;
    int nl = fake_launches(&l), seen = 0, seen_unowned = 0;
    for (int i = 0; i < nl; i++)
      for (int kk = 0; kk < p.nkernels; kk++) {
        const CgKernel *k = &p.kernels[kk];
        if (strcmp(k->name, l[i].fn)) continue;
        /* the fill stage first, launched plainly; the groups stage after
         * it waits for it (griddepcontrol.wait), so it is launched with
         * programmatic stream serialization (cuLaunchKernelEx) */
        ck_assert_int_eq(k->waits, kk > 0);
        ck_assert_int_eq(l[i].programmatic, kk > 0);
        if (k->launch.kind != CG_LAUNCH_FILL) continue;
        int64_t rows = -1, unowned = -1;
        for (int j = 0; j < k->nparams; j++) {
          if (k->params[j].kind == CG_PARAM_NGROUPS) rows = (int32_t)l[i].params[j];
          if (k->params[j].kind == CG_PARAM_NUNOWNED) unowned = (int32_t)l[i].params[j];
        }
        if (unowned >= 0) {
          /* the fill of the rows no group owns (passes/lower_mean.c): a
           * team of 8 lanes a row, over the destinations of in-degree 0 or
           * over G = 4 alone, counted here from the degrees */
          int64_t n = 0;
          for (int32_t v = 0; v < g->nv; v++) {
            int64_t deg = g->in_ptr[v + 1] - g->in_ptr[v];
            n += deg == 0 || deg > 4;
          }
          ck_assert_int_eq(unowned, n);
          ck_assert_int_lt(unowned, g->nv);
          int64_t per = k->threads / 8;
          ck_assert_int_eq((int64_t)l[i].grid, (unowned + per - 1) / per);
          seen_unowned++;
          continue;
        }
        ck_assert_int_gt(rows, 8 * 132); /* more rows than one wave has warps */
        ck_assert_int_eq(k->threads, 128);
        int64_t want = (rows + rows_per_block[s] - 1) / rows_per_block[s];
        int64_t cap = 8 * 132 * (2048 / k->threads); /* 8 waves of the fake's 132 SMs */
        if (want > cap) want = cap;
        ck_assert_int_eq((int64_t)l[i].grid, want);
        seen++;
      }
    ck_assert_int_ge(seen, 1);
    ck_assert_int_ge(seen_unowned, 1);
    free(x), free(y);
    graph_free(g);
    cg_program_free(&p);
  }
  /* a block size the schedule asks for is kept; other stages keep 256 */
  CgProgram p;
  compile_stdlib(lib, "copy_u_sum",
                 "group(e, 4) -> (eo, ei); split(f, 32) -> (fo, fl); "
                 "reorder(eo, fo, fl, ei); bind(eo, warp, 256); bind(fl, lane)",
                 a, &d, &p);
  for (int kk = 0; kk < p.nkernels; kk++)
    ck_assert_int_eq(p.kernels[kk].threads, 256);
  cg_program_free(&p);
  compile_stdlib(lib, "copy_u_sum", "spmm_vec4(4)", a, &d, &p);
  for (int kk = 0; kk < p.nkernels; kk++) ck_assert_int_eq(p.kernels[kk].threads, 256);
  cg_program_free(&p);
  ir_diag_free(&d);
  ir_arena_free(a);
  rt_cuda_close();
}
END_TEST

/* The device's group tables: the least recently used of four is dropped
 * for a fifth. A program of two tables (an interleaved groups stage and
 * the plain table whose unowned(G) list its row stages walk) takes the
 * plain one first; taking the interleaved one next must not drop it, or
 * the first kernel launches with a freed list (the GPU suite, 2026-11-27:
 * NaN rows and an illegal address once four other tables were cached). */
START_TEST(groups_cache_keeps_recent) {
  use_fake_driver();
  Diag d;
  ir_diag_init(&d, NULL);
  Graph *g = graph_generate("rmat:10:8", &d);
  ck_assert_ptr_nonnull(g);
  RtDevGraph dg;
  rt_devgraph_init(&dg, g);
  const struct RtDevGroups *t;
  /* four plain tables, G = 16 first (the oldest upload) */
  static const int Gs[] = {16, 3, 5, 6};
  for (int i = 0; i < 4; i++) {
    t = rt_devgraph_groups(&dg, Gs[i], 0, 0, 0, &d);
    ck_assert_msg(t != NULL, "%s", d.buf ? d.buf : "");
  }
  int gen = dg.groups_gen;
  /* a program's first kernel takes G = 16 again: found, nothing moves on
   * the device */
  t = rt_devgraph_groups(&dg, 16, 0, 0, 0, &d);
  ck_assert_ptr_nonnull(t);
  RtDevPtr list = t->unowned.ptr, dst = t->dst.ptr;
  ck_assert_int_eq(dg.groups_gen, gen);
  /* its second the interleaved table of G = 16: a fifth, which drops the
   * least recently used (G = 3), not G = 16 */
  t = rt_devgraph_groups(&dg, 16, 4, 2, 0, &d);
  ck_assert_msg(t != NULL, "%s", d.buf ? d.buf : "");
  ck_assert_int_eq(dg.groups_gen, gen + 1);
  ck_assert_int_eq(dg.ngroups, 4);
  bool plain16 = false, three = false;
  for (int i = 0; i < dg.ngroups; i++) {
    const GraphGroups *h = dg.groups[i].host;
    three |= h->G == 3;
    if (h->G == 16 && h->ilv == 0) {
      plain16 = true;
      ck_assert(dg.groups[i].unowned.ptr == list && dg.groups[i].dst.ptr == dst);
    }
  }
  ck_assert(plain16 && !three);
  /* the third kernel (the finishing stage) finds G = 16 where it was */
  t = rt_devgraph_groups(&dg, 16, 0, 0, 0, &d);
  ck_assert(t != NULL && t->unowned.ptr == list);
  ck_assert_int_eq(dg.groups_gen, gen + 1);
  rt_devgraph_free(&dg);
  graph_free(g);
  ir_diag_free(&d);
  rt_cuda_close();
}
END_TEST

/* Kernels for a graph whose edge ids are its CSR positions (CgLayout
 * csr_edges, docs/gpu-ir.md): an in-edge's id is its position, so no
 * kernel reads in_eid, with or without prefetch; the pack keeps the
 * layout; the runtime runs them on such a graph (a reordered one, or arcs
 * sorted by destination) and refuses any other, and the API keys them
 * apart. */
START_TEST(csr_edge_ids) {
  Arena *a;
  Diag d;
  IrModule *lib = fake_stdlib(&a, &d);
  /* which graphs have them */
  Graph *g = graph_generate("rmat:10:8", &d), *r = graph_reorder(g, "none", &d);
  ck_assert_ptr_nonnull(g);
  ck_assert_ptr_nonnull(r);
  ck_assert(!g->csr_edges);
  ck_assert(r->csr_edges);
  int64_t sd[4] = {2, 0, 1, 0}, dd[4] = {0, 0, 1, 2}; /* by destination */
  Graph *byd = graph_from_coo(3, 4, sd, dd, "byd", &d, (Loc){0});
  ck_assert(byd && byd->csr_edges);
  dd[0] = 1; /* edge 0 now comes after edge 1 in the CSR */
  Graph *notd = graph_from_coo(3, 4, sd, dd, "notd", &d, (Loc){0});
  ck_assert(notd && !notd->csr_edges);
  setenv("GOP_CSR_EDGES", "0", 1);
  ck_assert(!rt_csr_edges(r));
  unsetenv("GOP_CSR_EDGES");
  ck_assert(rt_csr_edges(r));
  const char *sched[3] = {"spmm_groups(4, 4)", "spmm_groupsp(4, 4)", "spmm_vec4(4)"};
  for (int s = 0; s < 3; s++) {
    IrOp *op = tu_lowered(lib, ir_module_find_op(lib, "u_mul_e_sum"), sched[s], a, &d);
    ck_assert_msg(op != NULL, "%s", d.buf ? d.buf : "");
    CgProgram gen, csr, back;
    ck_assert_msg(cg_compile(op, "sm_90", &gen, &d) == 0, "%s", d.buf ? d.buf : "");
    ck_assert_msg(cg_compile_layout(op, "sm_90", (CgLayout){32, true}, &csr, &d) == 0, "%s",
                  d.buf ? d.buf : "");
    ck_assert(csr.csr_edges && !gen.csr_edges);
    int eid_gen = 0, eid_csr = 0;
    for (int k = 0; k < gen.nkernels; k++)
      for (int i = 0; i < gen.kernels[k].nparams; i++)
        eid_gen += gen.kernels[k].params[i].kind == CG_PARAM_IN_EID;
    for (int k = 0; k < csr.nkernels; k++)
      for (int i = 0; i < csr.kernels[k].nparams; i++)
        eid_csr += csr.kernels[k].params[i].kind == CG_PARAM_IN_EID;
    ck_assert_msg(eid_gen > 0 && eid_csr == 0, "%s: in_eid taken %d / %d", sched[s], eid_gen,
                  eid_csr);
    char path[512];
    snprintf(path, sizeof path, "%s/csr-%d.pack", tu_tmpdir(), s);
    ck_assert_int_eq(cg_pack_write(&csr, path, &d), 0);
    char *text = tu_read_file(path, NULL);
    ck_assert_ptr_nonnull(strstr(text, "\nedges csr\n"));
    free(text);
    ck_assert_msg(cg_pack_read(path, &back, &d) == 0, "%s", d.buf ? d.buf : "");
    ck_assert(back.csr_edges);
    cg_program_free(&back);
    /* run on the reordered graph; refused on the graph in file order */
    int64_t F = 8, syms[1] = {F};
    float *x = calloc((size_t)(g->nv * F), sizeof *x), *w = calloc((size_t)g->ne, sizeof *w),
          *y = calloc((size_t)(g->nv * F), sizeof *y);
    void *host[3];
    for (int i = 0; i < csr.ntensors; i++)
      host[i] = !strcmp(csr.tensors[i].name, "X")   ? (void *)x
                : !strcmp(csr.tensors[i].name, "W") ? (void *)w
                                                    : (void *)y;
    RtExecOptions opt = {.warmup = 0, .reps = 1, .sets = 1};
    RtExecResult res;
    fake_reset();
    ck_assert_msg(rt_exec_program(&csr, r, syms, host, &opt, &res, &d) == RT_OK, "%s",
                  d.buf ? d.buf : "");
    ck_assert_msg(rt_exec_program(&gen, g, syms, host, &opt, &res, &d) == RT_OK, "%s",
                  d.buf ? d.buf : "");
    ir_diag_free(&d);
    ir_diag_init(&d, NULL);
    ck_assert_int_eq(rt_exec_program(&csr, g, syms, host, &opt, &res, &d), RT_ERR);
    ck_assert_msg(d.buf && strstr(d.buf, "compiled for edge ids in CSR order") &&
                      strstr(d.buf, "--reorder none"),
                  "%s", d.buf ? d.buf : "");
    ir_diag_free(&d);
    ir_diag_init(&d, NULL);
    free(x), free(w), free(y);
    cg_program_free(&gen);
    cg_program_free(&csr);
  }
  /* the kernel cache keeps the two apart */
  GopOp *op = gop_module_find_op(std_, "u_mul_e_sum");
  ck_assert_ptr_nonnull(op);
  GopCompileOptions o0 = {.schedule = "spmm_groups(4, 4)"}, o1 = o0;
  o1.csr_edges = 1;
  char k0[17], k1[17];
  ck_assert_int_eq(gop_kernel_key(op, &o0, k0), 0);
  ck_assert_int_eq(gop_kernel_key(op, &o1, k1), 0);
  ck_assert_str_ne(k0, k1);
  graph_free(byd), graph_free(notd), graph_free(r), graph_free(g);
  ir_diag_free(&d);
  ir_arena_free(a);
  rt_cuda_close();
}
END_TEST

/* Timed runs rotating among copies of the tensors (RtExecOptions.sets, as
 * gop_bench asks where a case fits in L2): each repetition runs every copy
 * once, so the kernels see as many different output buffers, and the
 * result says how many copies there were. */
START_TEST(exec_rotated_sets) {
  Arena *a;
  Diag d;
  IrModule *lib = fake_stdlib(&a, &d);
  CgProgram p;
  compile_stdlib(lib, "u_mul_e_sum", "spmm_vec4(4)", a, &d, &p);
  Graph *g = graph_generate("grid:4x3", &d);
  ck_assert_ptr_nonnull(g);
  int64_t F = 8, syms[1] = {F};
  ck_assert_int_eq(p.nsyms, 1);
  float *x = calloc((size_t)(g->nv * F), sizeof *x), *w = calloc((size_t)g->ne, sizeof *w),
        *y = calloc((size_t)(g->nv * F), sizeof *y);
  void *host[3];
  for (int i = 0; i < p.ntensors; i++)
    host[i] = !strcmp(p.tensors[i].name, "X") ? (void *)x : !strcmp(p.tensors[i].name, "W") ? (void *)w
                                                                                          : (void *)y;
  for (int sets = 1; sets <= 3; sets += 2) {
    fake_reset();
    RtExecOptions opt = {.warmup = 1, .reps = 2, .sets = sets};
    RtExecResult res;
    ck_assert_msg(rt_exec_program(&p, g, syms, host, &opt, &res, &d) == RT_OK, "%s",
                  d.buf ? d.buf : "");
    ck_assert_int_eq(res.sets, sets);
    const FakeLaunch *l;
    int nl = fake_launches(&l);
    /* the checked run, then (warm-up + repetitions) x the sets */
    ck_assert_int_eq(nl, p.nkernels * (1 + (1 + 2) * sets));
    /* the output pointers the timed launches got: one per set */
    uint64_t seen[8];
    int nseen = 0;
    for (int i = p.nkernels; i < nl; i++) {
      uint64_t yp = l[i].params[2]; /* X, W, Y, then the graph */
      bool known = false;
      for (int k = 0; k < nseen; k++) known |= seen[k] == yp;
      if (!known && nseen < 8) seen[nseen++] = yp;
    }
    ck_assert_int_eq(nseen, sets);
  }
  free(x), free(w), free(y);
  graph_free(g);
  cg_program_free(&p);
  ir_diag_free(&d);
  ir_arena_free(a);
  rt_cuda_close();
}
END_TEST

/* The checked run of rt_exec_program fills what the kernels write whole
 * with NaN first, so that an element they forget shows as NaN; unpoisoned
 * (tests/gpu/suite.c --no-poison, for compute-sanitizer's initcheck)
 * leaves it as allocated, while reduction targets still get their
 * identity from the runtime. The stand-in runs no kernel and hands out
 * zeroed memory, so an output reads back NaN when poisoned and 0 when left
 * unwritten; its trace counts the fills (s). Each case is one kind of
 * output: plain stores, one an op fills itself (passes/fill.c), and a
 * reduction target (atomics, filled with -inf by the runtime). */
START_TEST(exec_unpoisoned) {
  Arena *a;
  Diag d;
  IrModule *lib = fake_stdlib(&a, &d);
  const char *(*trace)(void) = (const char *(*)(void))dlsym(fake, "fake_cuda_trace");
  ck_assert_ptr_nonnull(trace);
  static const struct {
    const char *op, *sched;
    bool filled; /* the output is marked filled: the op writes its start */
    float poisoned, unpoisoned; /* what the output reads back */
  } cases[] = {
      {"u_dot_v", "thread_edge(1, 1)", false, NAN, 0},
      {"u_mul_e_sum", "gnnadvisor(4, 32)", true, NAN, 0},
      {"copy_u_max", "thread_edge(1, 1)", false, -INFINITY, -INFINITY},
  };
  Graph *g = graph_generate("grid:4x3", &d);
  ck_assert_ptr_nonnull(g);
  int64_t F = 8, syms[1] = {F};
  size_t most = (size_t)(g->ne > g->nv ? g->ne : g->nv) * (size_t)F;
  for (size_t c = 0; c < sizeof cases / sizeof *cases; c++) {
    CgProgram p;
    compile_stdlib(lib, cases[c].op, cases[c].sched, a, &d, &p);
    void *host[8] = {0};
    int out = -1;
    ck_assert_int_le(p.ntensors, 8);
    for (int i = 0; i < p.ntensors; i++) {
      if (p.tensors[i].role == IR_ROLE_TEMP) continue;
      host[i] = calloc(most, sizeof(float));
      if (p.tensors[i].role == IR_ROLE_OUT) out = i;
    }
    ck_assert_int_ge(out, 0);
    const CgTensorInfo *t = &p.tensors[out];
    ck_assert_msg(t->filled == cases[c].filled, "%s under %s: filled %d", cases[c].op,
                  cases[c].sched, t->filled);
    int64_t n = (t->domain == IR_DOM_EDGE ? g->ne : g->nv) * (t->ndims > 1 ? F : 1);
    for (int unpoisoned = 0; unpoisoned <= 1; unpoisoned++) {
      float *y = host[out];
      for (int64_t k = 0; k < n; k++) y[k] = 7; /* the download overwrites it */
      fake_reset();
      RtExecOptions opt = {.unpoisoned = unpoisoned};
      RtExecResult res;
      ck_assert_msg(rt_exec_program(&p, g, syms, host, &opt, &res, &d) == RT_OK, "%s",
                    d.buf ? d.buf : "");
      float want = unpoisoned ? cases[c].unpoisoned : cases[c].poisoned;
      for (int64_t k = 0; k < n; k++)
        ck_assert_msg(isnan(want) ? isnan(y[k]) : y[k] == want,
                      "%s under %s, %s: %s[%lld] = %g, want %g", cases[c].op, cases[c].sched,
                      unpoisoned ? "unpoisoned" : "poisoned", t->name, (long long)k, y[k], want);
      /* one fill a tensor the runtime initialises; none left unwritten */
      int fills = 0, launches = 0;
      for (const char *q = trace(); *q; q++) fills += *q == 's', launches += *q == 'k';
      int want_fills = 0;
      for (int i = 0; i < p.ntensors; i++) {
        const CgTensorInfo *u = &p.tensors[i];
        bool whole = u->red == IR_RED_ASSIGN && (u->role == IR_ROLE_OUT || u->filled);
        want_fills += u->role != IR_ROLE_IN && (!unpoisoned || !whole);
      }
      ck_assert_int_eq(fills, want_fills);
      ck_assert_int_eq(launches, p.nkernels); /* the checked run alone */
    }
    for (int i = 0; i < p.ntensors; i++) free(host[i]);
    cg_program_free(&p);
  }
  graph_free(g);
  ir_diag_free(&d);
  ir_arena_free(a);
  rt_cuda_close();
}
END_TEST

/* 16-bit and f64 tensors on the caller's device memory: buffers sized by
 * the dtype are accepted (one element fewer's bytes is refused), and the
 * outputs start at their reduction's identity in their own width, in the
 * caller's stream. */
START_TEST(device_dtypes) {
  use_fake_driver();
  GopGraphInfo gi;
  gop_graph_info(grid, &gi);
  int64_t nv = gi.num_vertices, ne = gi.num_edges, F = 8;
  void *stream = (void *)0x1000;
  static const struct {
    const char *op, *dtype, *sched;
    int bytes;
    bool fill;       /* Y is a reduction target in memory (atomics) */
    unsigned lo, hi; /* its start value's words: low (all of a 16-bit one), f64 high */
  } cases[] = {
      /* 16-bit outputs refuse atomics: plain stores write Y whole */
      {"u_mul_e_sum", "bf16", "warp_vertex(1, 1)", 2, false, 0, 0},
      {"u_mul_e_sum", "f16", "thread_vertex(1, 1)", 2, false, 0, 0},
      {"copy_u_max", "bf16", "warp_vertex(1, 1)", 2, false, 0, 0},
      /* neighbour groups own Y's rows and add its heavy rows into an f32
       * twin: the op's stages fill both, so nothing is cleared at all */
      {"copy_u_sum", "bf16", "spmm_groups(16, 4)", 2, false, 0, 0},
      /* f64 atomics: -inf is low words 0, then the high words 0xfff00000 */
      {"copy_u_max", "f64", "thread_edge(1, 1)", 8, true, 0, 0xfff00000u},
      {"u_mul_e_sum", "f64", "thread_edge(1, 1)", 8, true, 0, 0},
  };
  for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
    GopOp *op = gop_op_retype(gop_module_find_op(std_, cases[c].op), cases[c].dtype);
    ck_assert_ptr_nonnull(op);
    GopRun *r = gop_run_new(ctx, op, grid);
    ck_assert_int_eq(gop_run_set_extent(r, "F", F), 0);
    /* plain reductions: 16-bit outputs refuse atomics */
    GopCompileOptions o = {.schedule = cases[c].sched};
    ck_assert_int_eq(gop_run_set_compile(r, &o), 0);
    bool weighted = strcmp(cases[c].op, "u_mul_e_sum") == 0;
    size_t b = (size_t)cases[c].bytes;
    uint64_t x = fake_alloc_on(0, (size_t)(nv * F) * b), w = fake_alloc_on(0, (size_t)ne * b),
             y = fake_alloc_on(0, (size_t)(nv * F) * b), small = fake_alloc_on(0, (size_t)(nv * F) * b - b);
    GopDevicePtr p3[3] = {x, w, y}, p2[2] = {x, y};
    fake_reset();
    ck_assert_msg(gop_run_launch_ptrs(r, weighted ? p3 : p2, weighted ? 3 : 2, stream) == 0,
                  "%s %s: %s", cases[c].op, cases[c].dtype, gop_diagnostics(ctx));
    ck_assert(passed(x) && passed(y));
    const FakeMemset *ms;
    int nm = fake_memsets(&ms);
    bool lo = false, hi = cases[c].hi == 0, any = false;
    for (int i = 0; i < nm; i++) {
      ck_assert_ptr_eq(ms[i].stream, stream);
      any |= ms[i].ptr == y || ms[i].ptr == y + 4;
      if (ms[i].ptr == y && ms[i].value == cases[c].lo)
        lo = ms[i].count == (size_t)(nv * F) * (b == 8 ? 2 : 1);
      if (ms[i].ptr == y + 4 && ms[i].value == cases[c].hi) hi = ms[i].count == (size_t)(nv * F);
    }
    if (cases[c].fill)
      ck_assert_msg(lo && hi, "%s %s: Y not filled with its start value (%d memsets)",
                    cases[c].op, cases[c].dtype, nm);
    else
      ck_assert_msg(!any, "%s %s: Y of plain stores was filled", cases[c].op, cases[c].dtype);
    if (strstr(cases[c].sched, "groups"))
      ck_assert_msg(nm == 0, "%s %s: %d memsets where the op fills Y and its twin itself",
                    cases[c].op, cases[c].dtype, nm);
    /* a buffer one element short is refused before any launch */
    GopDevicePtr bad3[3] = {x, w, small}, bad2[2] = {x, small};
    fake_reset();
    ck_assert_int_eq(gop_run_launch_ptrs(r, weighted ? bad3 : bad2, weighted ? 3 : 2, stream), -1);
    HAS(ctx, "run past the end of its allocation");
    const FakeLaunch *l;
    ck_assert_int_eq(fake_launches(&l), 0);
    gop_clear_diagnostics(ctx);
  }
  gop_context_free(ctx);
  ctx = gop_context_new();
  rt_cuda_close();
}
END_TEST

/* gop_run_print_kernels: each kernel's registers, and the floor the
 * runtime lowered where the JIT spilled (64-bit copy_e_sum under
 * spmm_groups(1, 1) on the stand-in, told that more than 1024 threads an
 * SM spill); nothing after a run on the interpreter. */
START_TEST(kernels_report) {
  use_fake_driver();
  setenv("GOP_INDEX64", "1", 1);
  setenv("FAKE_CUDA_SPILL_ABOVE", "1024", 1);
  GopGraphInfo gi;
  gop_graph_info(grid, &gi);
  int64_t nv = gi.num_vertices, ne = gi.num_edges, F = 4;
  GopRun *r = gop_run_new(ctx, gop_module_find_op(std_, "copy_e_sum"), grid);
  ck_assert_ptr_nonnull(r);
  ck_assert_int_eq(gop_run_set_extent(r, "F", F), 0);
  GopCompileOptions o = {.schedule = "spmm_groups(1, 1)"};
  ck_assert_int_eq(gop_run_set_compile(r, &o), 0);
  gop_run_set_device(r, GOP_DEVICE_GPU);
  gop_run_set_timing(r, 0, 1);
  float *e = calloc((size_t)(ne * F), sizeof(float)), *y = calloc((size_t)(nv * F), sizeof(float));
  ck_assert_int_eq(gop_run_bind(r, "W", e, ne * F), 0);
  ck_assert_int_eq(gop_run_bind(r, "Y", y, nv * F), 0);
  ck_assert_msg(gop_run_exec(r) == 0, "%s", gop_diagnostics(ctx));
  char *text = NULL;
  size_t len = 0;
  FILE *f = open_memstream(&text, &len);
  gop_run_print_kernels(r, f);
  fclose(f);
  ck_assert_msg(strstr(text, "  kernels: copy_e_sum_s0 32 registers; copy_e_sum_s1 32 registers, "
                             "1536 threads an SM asked for, 768 compiled (spilled at the first)") &&
                    !strstr(text, "copy_e_sum_s0 32 registers,"),
                "%s", text);
  free(text);
  /* on the interpreter: nothing */
  gop_run_set_device(r, GOP_DEVICE_INTERP);
  ck_assert_int_eq(gop_run_exec(r), 0);
  text = NULL;
  f = open_memstream(&text, &len);
  gop_run_print_kernels(r, f);
  fclose(f);
  ck_assert_int_eq(len, 0);
  free(text);
  free(e);
  free(y);
  unsetenv("GOP_INDEX64");
  unsetenv("FAKE_CUDA_SPILL_ABOVE");
  gop_context_free(ctx);
  ctx = gop_context_new();
  rt_cuda_close();
}
END_TEST

START_TEST(device_refusals) {
  use_fake_driver();
  GopGraphInfo gi;
  gop_graph_info(grid, &gi);
  int64_t nv = gi.num_vertices, ne = gi.num_edges, F = 4;
  GopRun *r = spmm(ctx, std_, grid);
  ck_assert_int_eq(gop_run_set_extent(r, "F", F), 0);
  uint64_t x = fake_alloc_on(0, (size_t)(nv * F * 4)), w = fake_alloc_on(0, (size_t)ne * 4),
           y = fake_alloc_on(0, (size_t)(nv * F * 4));
  float *host = calloc((size_t)(nv * F), sizeof(float));
  uint64_t other = fake_alloc_on(1, (size_t)(nv * F * 4));
  struct {
    GopDevicePtr x;
    void *stream;
    const char *msg;
  } cases[] = {
      {(GopDevicePtr)(uintptr_t)host, (void *)0x1000,
       "input X of u_mul_e_sum: address 0x"},
      {(GopDevicePtr)(uintptr_t)host, (void *)0x1000, "is not memory CUDA knows"},
      {other, (void *)0x1000, "is memory of device 1; gop runs on device 0"},
      {x + 4, (void *)0x1000, "run past the end of its allocation"},
      {x, (void *)0x2000, "the stream belongs to another CUDA context"},
      {x, (void *)0x3000, "CUDA_ERROR_INVALID_HANDLE"},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    gop_clear_diagnostics(ctx);
    fake_reset();
    GopDevicePtr p[3] = {cases[i].x, w, y};
    ck_assert_int_eq(gop_run_launch_ptrs(r, p, 3, cases[i].stream), -1);
    HAS(ctx, cases[i].msg);
    const FakeLaunch *l;
    ck_assert_int_eq(fake_launches(&l), 0); /* refused before any launch */
    /* and the context goes on working */
    GopDevicePtr good[3] = {x, w, y};
    ck_assert_msg(gop_run_launch_ptrs(r, good, 3, (void *)0x1000) == 0, "%s",
                  gop_diagnostics(ctx));
  }
  free(host);
  gop_context_free(ctx);
  ctx = gop_context_new();
  rt_cuda_close();
}
END_TEST

static Suite *suite(void) {
  Suite *s = suite_create("device");
  TCase *tc = tcase_create("device");
  tcase_add_checked_fixture(tc, setup, teardown);
  tcase_set_timeout(tc, 120);
  tcase_add_test(tc, bind_checks);
  tcase_add_test(tc, launch_ptrs_checks);
  tcase_add_test(tc, no_driver);
  tcase_add_test(tc, keys);
  tcase_add_test(tc, pack_cache);
  tcase_add_test(tc, cache_dir_errors);
  tcase_add_test(tc, device_launch);
  tcase_add_test(tc, empty_tensor_device);
  tcase_add_test(tc, exec_rotated_sets);
  tcase_add_test(tc, exec_unpoisoned);
  tcase_add_test(tc, groups_grid_by_table);
  tcase_add_test(tc, spill_lowers_floor);
  tcase_add_test(tc, kernels_report);
  tcase_add_test(tc, groups_cache_keeps_recent);
  tcase_add_test(tc, csr_edge_ids);
  tcase_add_test(tc, device_refusals);
  tcase_add_test(tc, device_dtypes);
  suite_add_tcase(s, tc);
  return s;
}

int main(void) { return tu_run(suite()); }
