/* tests/unit/test_faults.c: what a run does when the GPU fails under it
 * (issue 17), on the fake driver (fake_cuda.c) with injected failures
 * (GOP_CUDA_FAIL): the failure is reported with the driver call and the
 * reason; where the context survives, the next run works; after a sticky
 * error, runs that require the GPU are refused with the reason and runs
 * that may fall back go to the interpreter with a note. The same paths on
 * a real GPU: tests/gpu/faults.sh.
 */
#include <stdlib.h>
#include <string.h>

#include "gop.h"
#include "testutil.h"

static GopContext *ctx;
static GopRun *run;
static float x[16 * 4], y[16 * 4];

static void setup(void) {
  const char *fake = getenv("GOP_FAKE_CUDA");
  ck_assert_msg(fake != NULL, "GOP_FAKE_CUDA is not set (run through ctest)");
  setenv("GOP_CUDA_LIBRARY", fake, 1);
  ctx = gop_context_new();
  GopOp *op = gop_module_find_op(gop_stdlib(ctx), "copy_u_sum");
  GopGraph *g = gop_graph_open(ctx, "grid:4x4");
  ck_assert(op && g);
  run = gop_run_new(ctx, op, g);
  ck_assert_int_eq(gop_run_set_extent(run, "F", 4), 0);
  for (int i = 0; i < 64; i++) x[i] = (float)i;
  ck_assert_int_eq(gop_run_bind(run, "X", x, 64), 0);
  ck_assert_int_eq(gop_run_bind(run, "Y", y, 64), 0);
  gop_run_set_timing(run, 0, 1);
}

static void teardown(void) {
  gop_context_free(ctx);
  unsetenv("GOP_CUDA_FAIL");
}

#define ASSERT_DIAG(s) \
  ck_assert_msg(strstr(gop_diagnostics(ctx), (s)) != NULL, "no '%s' in:\n%s", (s), \
                gop_diagnostics(ctx))

START_TEST(failed_launch_then_next_run) {
  gop_run_set_device(run, GOP_DEVICE_GPU);
  setenv("GOP_CUDA_FAIL", "cuLaunchKernel:1", 1);
  ck_assert_int_ne(gop_run_exec(run), 0);
  ASSERT_DIAG("CUDA error in cuLaunchKernel: CUDA_ERROR_INVALID_VALUE");
  ASSERT_DIAG("injected by GOP_CUDA_FAIL");
  gop_clear_diagnostics(ctx);
  ck_assert_msg(gop_run_exec(run) == 0, "%s", gop_diagnostics(ctx));
  ck_assert(gop_run_stats(run)->on_gpu);
}
END_TEST

START_TEST(failed_copy_then_next_run) {
  gop_run_set_device(run, GOP_DEVICE_GPU);
  setenv("GOP_CUDA_FAIL", "cuMemcpyHtoD_v2:999:2", 1);
  ck_assert_int_ne(gop_run_exec(run), 0);
  ASSERT_DIAG("CUDA error in cuMemcpyHtoD_v2: CUDA_ERROR_UNKNOWN");
  gop_clear_diagnostics(ctx);
  ck_assert_msg(gop_run_exec(run) == 0, "%s", gop_diagnostics(ctx));
}
END_TEST

START_TEST(sticky_fault_refuses_gpu_runs) {
  gop_run_set_device(run, GOP_DEVICE_GPU);
  setenv("GOP_CUDA_FAIL", "cuCtxSynchronize:700", 1);
  ck_assert_int_ne(gop_run_exec(run), 0);
  ASSERT_DIAG("CUDA_ERROR_ILLEGAL_ADDRESS");
  ASSERT_DIAG("gop refuses further GPU work");
  unsetenv("GOP_CUDA_FAIL");
  gop_clear_diagnostics(ctx);
  /* required on the GPU: refused, with the reason */
  ck_assert_int_ne(gop_run_exec(run), 0);
  ASSERT_DIAG("cannot run on the GPU: the GPU is unusable in this process: "
              "CUDA_ERROR_ILLEGAL_ADDRESS (CUDA error 700) in cuCtxSynchronize");
  ck_assert_int_ne(gop_run_stats(run)->gpu_status, 0);
  /* allowed to fall back: the interpreter runs it, and says why */
  gop_clear_diagnostics(ctx);
  gop_run_set_device(run, GOP_DEVICE_AUTO);
  ck_assert_msg(gop_run_exec(run) == 0, "%s", gop_diagnostics(ctx));
  ck_assert(!gop_run_stats(run)->on_gpu);
  ck_assert_msg(strstr(gop_run_stats(run)->note, "the GPU is unusable in this process"),
                "%s", gop_run_stats(run)->note);
  double worst;
  ck_assert_int_eq(gop_run_check(run, &worst), 0);
}
END_TEST

static Suite *suite(void) {
  Suite *s = suite_create("faults");
  TCase *t = tcase_create("fake driver");
  tcase_set_timeout(t, 120); /* each test compiles the operator through LLVM */
  tcase_add_checked_fixture(t, setup, teardown);
  tcase_add_test(t, failed_launch_then_next_run);
  tcase_add_test(t, failed_copy_then_next_run);
  tcase_add_test(t, sticky_fault_refuses_gpu_runs);
  suite_add_tcase(s, t);
  return s;
}

int main(void) { return tu_run(suite()); }
