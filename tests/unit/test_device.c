/* tests/unit/test_device.c: the device-resident C API (api/device.c) where
 * it runs without a GPU: argument checks before the driver, the no-driver
 * path (GOP_CUDA_LIBRARY names a library that does not exist, so this holds
 * on any machine), the kernel cache's keys, and its folder of kernel packs.
 * The launches themselves are checked on the GPU machine
 * (tests/gpu/python_check.py). */
#include <check.h>
#include <dirent.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "gop.h"
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
}
END_TEST

START_TEST(launch_ptrs_checks) {
  GopRun *r = spmm(ctx, std_, grid);
  GopDevicePtr p[3] = {0x1000, 0x2000, 0x3000};
  ck_assert_int_eq(gop_run_launch_ptrs(r, p, 2, NULL), -1);
  HAS(ctx, "u_mul_e_sum takes 3 tensors (X first), got 2");
  ck_assert_int_eq(gop_run_launch_ptrs(r, NULL, 3, NULL), -1);
  gop_clear_diagnostics(ctx);
  p[1] = 0;
  ck_assert_int_eq(gop_run_launch_ptrs(r, p, 3, NULL), -1);
  HAS(ctx, "W of u_mul_e_sum: NULL device pointer");
  p[1] = 0x2000;
  gop_clear_diagnostics(ctx);
  ck_assert_int_eq(gop_run_launch_ptrs(r, p, 3, NULL), -1);
  HAS(ctx, "extent F of u_mul_e_sum is not set");
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
  suite_add_tcase(s, tc);
  return s;
}

int main(void) { return tu_run(suite()); }
