/* tests/unit/test_cuda.c: the CUDA driver layer on a machine without a GPU.
 *
 * CI has no driver, so these tests pin down what runtime/ says and returns
 * when there is none (GOP_CUDA_LIBRARY makes that deterministic on any
 * machine), when the library is not a driver, and everything that needs no
 * driver: the checker's messages, launch validation, sizes, the cache hash.
 * tests/gpu/test_driver.c covers the rest on a GPU machine. Each test runs
 * in its own process (Check's fork mode), so the driver state starts fresh.
 */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "graph/graph.h"
#include "runtime/runtime.h"
#include "testutil.h"

static Diag d;

static void setup(void) { ir_diag_init(&d, NULL); }
static void teardown(void) {
  rt_cuda_close();
  ir_diag_free(&d);
}

static const char *msgs(void) { return d.buf ? d.buf : ""; }

#define ASSERT_MSG(needle)                                                  \
  ck_assert_msg(strstr(msgs(), (needle)) != NULL, "no \"%s\" in:\n%s",      \
                (needle), msgs())

static void no_driver(void) {
  setenv("GOP_CUDA_LIBRARY", "/nonexistent/libcuda.so", 1);
}

/* ---- opening ---- */

START_TEST(missing_library_is_no_driver) {
  no_driver();
  ck_assert_int_eq(rt_cuda_open(&d), RT_NO_DRIVER);
  ck_assert_int_eq(d.nerrors, 1);
  ASSERT_MSG("error: no CUDA driver: /nonexistent/libcuda.so: ");
  ASSERT_MSG("No such file"); /* dlerror's reason */
  ASSERT_MSG("GOP_CUDA_LIBRARY");
  ck_assert(!rt_cuda_available());
  ck_assert_ptr_null(rt_cuda_device());
  ck_assert_ptr_null(rt_cuda_api());
  ck_assert_str_eq(rt_cuda_device_name(), "no CUDA device");
  ck_assert_int_eq(rt_cuda_cc(), 0);
  ck_assert_uint_eq(rt_cuda_epoch(), 0);
}
END_TEST

START_TEST(failed_open_is_retried) {
  no_driver();
  ck_assert_int_eq(rt_cuda_open(&d), RT_NO_DRIVER);
  ck_assert_int_eq(rt_cuda_open(&d), RT_NO_DRIVER);
  ck_assert_int_eq(d.nerrors, 2); /* reported again, not silently cached */
  rt_cuda_close();                /* harmless when not open */
  ck_assert(!rt_cuda_available());
}
END_TEST

START_TEST(library_without_entry_points) {
  /* zlib loads fine but is not a driver */
  setenv("GOP_CUDA_LIBRARY", "libz.so.1", 1);
  ck_assert_int_eq(rt_cuda_open(&d), RT_NO_DRIVER);
  ck_assert_int_eq(d.nerrors, 1);
  ASSERT_MSG("no usable CUDA driver: libz.so.1 has no entry point "
             "cuGetErrorName (and ");
  ASSERT_MSG("more entry points)");
  ck_assert_ptr_null(rt_cuda_api());
}
END_TEST

START_TEST(toolkit_stub_is_no_driver) {
  /* The toolkit ships a libcuda.so stub for linking: every entry point
   * exists and answers CUDA_ERROR_STUB_LIBRARY. CI has the toolkit, but a
   * developer machine may not; then there is nothing to test. */
  const char *stub = "/usr/local/cuda/lib64/stubs/libcuda.so";
  if (access(stub, R_OK) != 0) return;
  setenv("GOP_CUDA_LIBRARY", stub, 1);
  ck_assert_int_eq(rt_cuda_open(&d), RT_NO_DRIVER);
  ASSERT_MSG("error: CUDA error in cuInit: CUDA_ERROR_STUB_LIBRARY");
  ASSERT_MSG("stub library, not a driver");
  ck_assert(!rt_cuda_available());
  ck_assert_ptr_null(rt_cuda_api()); /* the library was closed again */
}
END_TEST

START_TEST(bad_device_number) {
  /* checked before the library is even loaded */
  no_driver();
  setenv("GOP_CUDA_DEVICE", "two", 1);
  ck_assert_int_eq(rt_cuda_open(&d), RT_ERR);
  ck_assert_str_eq(msgs(), "error: GOP_CUDA_DEVICE=two is not a device "
                           "number\n");
  unsetenv("GOP_CUDA_DEVICE");
}
END_TEST

/* ---- everything that needs the GPU says why it cannot run ---- */

START_TEST(gpu_calls_without_driver) {
  no_driver();
  RtDevTensor t;
  ck_assert_int_eq(rt_tensor_alloc(&t, 12 << 20, "tensor Y", &d),
                   RT_NO_DRIVER);
  ASSERT_MSG("so tensor Y (12 MiB) cannot be allocated on the GPU");
  ck_assert_uint_eq(t.ptr, 0);
  ck_assert_uint_eq(t.bytes, 0);
  rt_tensor_free(&t);

  ck_assert_ptr_null(rt_module_load(".version 7.8\n", "test.ptx", &d));
  ck_assert_int_eq(rt_module_count(), 0);

  size_t f, tot;
  ck_assert_int_eq(rt_cuda_mem_info(&f, &tot, &d), RT_NO_DRIVER);
  ck_assert_int_eq(rt_cuda_sync(&d), RT_NO_DRIVER);
  double gbps = -1;
  ck_assert_int_eq(rt_measure_copy_bandwidth(1 << 20, 3, &gbps, &d),
                   RT_NO_DRIVER);
  ck_assert(gbps == 0);
  RtTiming tm;
  ck_assert_int_eq(rt_time_work(NULL, NULL, 1, 3, &tm, &d), RT_NO_DRIVER);
  float host[4];
  ck_assert_int_eq(rt_host_pin(host, sizeof host, &d), RT_NO_DRIVER);
  rt_host_unpin(host); /* nothing to undo, and no crash */

  RtMemStats ms = rt_mem_stats();
  ck_assert_uint_eq(ms.live_bytes, 0);
  ck_assert_int_eq(ms.live_tensors, 0);
  ck_assert_int_eq(ms.total_allocs, 0);
}
END_TEST

START_TEST(timing_argument_checks) {
  no_driver();
  RtTiming tm;
  ck_assert_int_eq(rt_time_work(NULL, NULL, 0, 0, &tm, &d), RT_ERR);
  ASSERT_MSG("need at least one repetition");
  double gbps;
  ck_assert_int_eq(rt_measure_copy_bandwidth(6, 3, &gbps, &d), RT_ERR);
  ASSERT_MSG("positive multiple of 4");
}
END_TEST

START_TEST(empty_tensor_needs_no_driver) {
  no_driver();
  RtDevTensor t;
  ck_assert_int_eq(rt_tensor_alloc(&t, 0, "tensor E", &d), RT_OK);
  ck_assert_str_eq(t.name, "tensor E");
  ck_assert_int_eq(rt_tensor_upload(&t, "", 0, &d), RT_OK);
  ck_assert_int_eq(rt_tensor_download(&t, NULL, 0, &d), RT_OK);
  ck_assert_int_eq(rt_tensor_fill32(&t, 0, &d), RT_OK);
  ck_assert_int_eq(d.nerrors, 0);
  /* a copy that does not fit is refused before the driver is asked */
  float x[3] = {0};
  ck_assert_int_eq(rt_tensor_upload(&t, x, sizeof x, &d), RT_ERR);
  ASSERT_MSG("error: cannot copy 12 B into tensor E, which holds 0 B");
  ck_assert_int_eq(rt_tensor_download(&t, x, sizeof x, &d), RT_ERR);
  ASSERT_MSG("cannot copy 12 B out of tensor E");
  rt_tensor_free(&t);
  rt_tensor_free(&t); /* twice is fine */
  ck_assert_int_eq(rt_mem_stats().live_tensors, 0);
}
END_TEST

START_TEST(device_graph_without_driver) {
  no_driver();
  int32_t src[] = {0, 1}, dst[] = {1, 2};
  int64_t in_ptr[] = {0, 0, 1, 2}, in_eid[] = {0, 1};
  int32_t in_src[] = {0, 1};
  int64_t out_ptr[] = {0, 1, 2, 2}, out_eid[] = {0, 1};
  int32_t out_dst[] = {1, 2};
  Graph g = {.name = "path3", .nv = 3, .ne = 2, .src = src, .dst = dst,
               .in_ptr = in_ptr, .in_eid = in_eid, .in_src = in_src,
               .out_ptr = out_ptr, .out_eid = out_eid, .out_dst = out_dst};
  RtDevGraph dg;
  rt_devgraph_init(&dg, &g);
  ck_assert_int_eq(dg.nv, 3);
  ck_assert_uint_eq(dg.loaded, 0);
  ck_assert_int_eq(rt_devgraph_load(&dg, RT_FMT_BIT(RT_FMT_CSR), &d),
                   RT_NO_DRIVER);
  ASSERT_MSG("while putting the csr format of graph path3 on the GPU");
  ck_assert_uint_eq(dg.loaded, 0);
  ck_assert_uint_eq(rt_devgraph_bytes(&dg, RT_FMT_CSR), 0);
  ck_assert_str_eq(rt_graph_format_name(RT_FMT_DEG), "deg");
  ck_assert_int_eq(rt_devgraph_load(&dg, 0, &d), RT_OK); /* nothing asked */
  rt_devgraph_free(&dg);
  ck_assert_int_eq(rt_mem_stats().live_tensors, 0);
}
END_TEST

/* ---- the checker ---- */

START_TEST(check_names_call_and_error) {
  ck_assert_int_eq(rt_cuda_check(0, "cuInit", NULL, &d), RT_OK);
  ck_assert_int_eq(d.nerrors, 0);
  ck_assert_int_eq(rt_cuda_check(2, "cuMemAlloc_v2",
                                 "while allocating 12.5 GiB for tensor Y", &d),
                   RT_OOM);
  ck_assert_str_eq(msgs(), "error: CUDA error in cuMemAlloc_v2: "
                           "CUDA_ERROR_OUT_OF_MEMORY while allocating 12.5 "
                           "GiB for tensor Y\n");
  ck_assert_int_eq(rt_cuda_check(100, "cuDeviceGet", NULL, &d), RT_NO_DEVICE);
  ASSERT_MSG("CUDA error in cuDeviceGet: CUDA_ERROR_NO_DEVICE\n");
  ck_assert_int_eq(rt_cuda_check(34, "cuInit", NULL, &d), RT_NO_DRIVER);
  ck_assert_int_eq(rt_cuda_check(12345, "cuFoo", NULL, &d), RT_ERR);
  ASSERT_MSG("CUDA error in cuFoo: error 12345\n");
  ck_assert_int_eq(d.nerrors, 4);
}
END_TEST

START_TEST(check_sticky_error_note) {
  ck_assert_int_eq(rt_cuda_check(700, "cuCtxSynchronize", NULL, &d), RT_ERR);
  ASSERT_MSG("CUDA_ERROR_ILLEGAL_ADDRESS");
  ASSERT_MSG("note: the CUDA context is now unusable");
  ck_assert_int_eq(rt_cuda_check(218, "cuModuleLoadDataEx", NULL, &d), RT_ERR);
  ck_assert_int_eq(d.nerrors, 2);
}
END_TEST

START_TEST(status_names) {
  ck_assert_str_eq(rt_status_name(RT_OK), "ok");
  ck_assert_str_eq(rt_status_name(RT_ERR), "error");
  ck_assert_str_eq(rt_status_name(RT_NO_DRIVER), "no CUDA driver");
  ck_assert_str_eq(rt_status_name(RT_NO_DEVICE), "no CUDA device");
  ck_assert_str_eq(rt_status_name(RT_OOM), "out of device memory");
  /* the values are exit codes that scripts rely on */
  ck_assert_int_eq(RT_NO_DRIVER, 3);
  ck_assert_int_eq(RT_NO_DEVICE, 4);
  ck_assert_int_eq(RT_OOM, 5);
}
END_TEST

START_TEST(format_bytes) {
  char b[32];
  ck_assert_str_eq(rt_format_bytes(0, b), "0 B");
  ck_assert_str_eq(rt_format_bytes(1023, b), "1023 B");
  ck_assert_str_eq(rt_format_bytes(1024, b), "1 KiB");
  ck_assert_str_eq(rt_format_bytes(1536, b), "1.5 KiB");
  ck_assert_str_eq(rt_format_bytes(48 << 10, b), "48 KiB");
  ck_assert_str_eq(rt_format_bytes(25ull << 29, b), "12.5 GiB");
  ck_assert_str_eq(rt_format_bytes(1ull << 50, b), "1 PiB");
  ck_assert_str_eq(rt_format_bytes(UINT64_MAX, b), "16 EiB");
}
END_TEST

START_TEST(fnv1a_vectors) {
  /* the published FNV-1a 64-bit test vectors */
  ck_assert_uint_eq(rt_fnv1a64("", 0), 0xcbf29ce484222325ull);
  ck_assert_uint_eq(rt_fnv1a64("a", 1), 0xaf63dc4c8601ec8cull);
  ck_assert_uint_eq(rt_fnv1a64("foobar", 6), 0x85944171f73967e8ull);
}
END_TEST

/* ---- launch validation ---- */

/* An H100's limits. */
static const RtDeviceLimits h100 = {
    .max_threads_per_block = 1024,
    .max_block = {1024, 1024, 64},
    .max_grid = {2147483647, 65535, 65535},
    .shared_per_block = 48 << 10,
    .shared_per_block_optin = 227 << 10,
};

static RtLaunchConfig cfg(uint32_t gx, uint32_t gy, uint32_t gz, uint32_t bx,
                          uint32_t by, uint32_t bz, uint32_t shared) {
  return (RtLaunchConfig){.grid = {gx, gy, gz}, .block = {bx, by, bz}, .shared_bytes = shared};
}

START_TEST(validate_accepts_legal) {
  RtLaunchConfig ok[] = {
      cfg(1, 1, 1, 1, 1, 1, 0),
      cfg(2147483647u, 65535, 65535, 1024, 1, 1, 0),
      cfg(100, 1, 1, 32, 32, 1, 100 << 10),
      cfg(1, 1, 1, 16, 1, 64, 227 << 10),
  };
  for (size_t i = 0; i < sizeof ok / sizeof ok[0]; i++)
    ck_assert_int_eq(rt_launch_validate(&ok[i], &h100, NULL, "k", &d), RT_OK);
  ck_assert_int_eq(d.nerrors, 0);
}
END_TEST

START_TEST(validate_too_many_threads) {
  RtLaunchConfig c = cfg(10, 1, 1, 32, 33, 1, 0);
  ck_assert_int_eq(rt_launch_validate(&c, &h100, NULL, "spmm", &d), RT_ERR);
  ck_assert_str_eq(msgs(), "error: launch of kernel 'spmm' refused: block "
                           "(32, 33, 1) has 1056 threads; a block holds at "
                           "most 1024\n");
}
END_TEST

START_TEST(validate_zero_and_axis_limits) {
  RtLaunchConfig c = cfg(0, 1, 1, 128, 1, 1, 0);
  ck_assert_int_eq(rt_launch_validate(&c, &h100, NULL, "k", &d), RT_ERR);
  ASSERT_MSG("grid (0, 1, 1) has a zero dimension");
  c = cfg(1, 1, 1, 32, 0, 1, 0);
  ck_assert_int_eq(rt_launch_validate(&c, &h100, NULL, "k", &d), RT_ERR);
  ASSERT_MSG("block (32, 0, 1) has a zero dimension");
  c = cfg(1, 65536, 1, 32, 1, 1, 0);
  ck_assert_int_eq(rt_launch_validate(&c, &h100, NULL, "k", &d), RT_ERR);
  ASSERT_MSG("grid.y = 65536 exceeds the device's limit of 65535");
  c = cfg(2147483648u, 1, 1, 32, 1, 1, 0);
  ck_assert_int_eq(rt_launch_validate(&c, &h100, NULL, "k", &d), RT_ERR);
  ASSERT_MSG("grid.x = 2147483648 exceeds the device's limit of 2147483647");
  c = cfg(1, 1, 1, 1, 1, 65, 0);
  ck_assert_int_eq(rt_launch_validate(&c, &h100, NULL, "k", &d), RT_ERR);
  ASSERT_MSG("block.z = 65 exceeds the device's limit of 64");
  /* every broken rule is reported, not just the first */
  int before = d.nerrors;
  c = cfg(1, 70000, 70000, 2048, 1, 1, 0);
  ck_assert_int_eq(rt_launch_validate(&c, &h100, NULL, "k", &d), RT_ERR);
  ck_assert_int_eq(d.nerrors - before, 4);
}
END_TEST

START_TEST(validate_shared_memory) {
  RtLaunchConfig c = cfg(1, 1, 1, 256, 1, 1, 228 << 10);
  ck_assert_int_eq(rt_launch_validate(&c, &h100, NULL, "k", &d), RT_ERR);
  ASSERT_MSG("a block asks for 228 KiB of shared memory; the device allows "
             "at most 227 KiB per block");
  RtKernelInfo k = {.max_threads = 1024, .static_shared = 8 << 10,
                    .num_regs = 32};
  c = cfg(1, 1, 1, 256, 1, 1, 220 << 10);
  ck_assert_int_eq(rt_launch_validate(&c, &h100, &k, "k", &d), RT_ERR);
  ASSERT_MSG("a block asks for 228 KiB of shared memory (220 KiB dynamic and "
             "8 KiB static); the device allows at most 227 KiB per block");
  c = cfg(1, 1, 1, 256, 1, 1, 219 << 10);
  ck_assert_int_eq(rt_launch_validate(&c, &h100, &k, "k", &d), RT_OK);
}
END_TEST

START_TEST(validate_kernel_register_limit) {
  RtKernelInfo k = {.max_threads = 512, .num_regs = 128};
  RtLaunchConfig c = cfg(1, 1, 1, 1024, 1, 1, 0);
  ck_assert_int_eq(rt_launch_validate(&c, &h100, &k, "gat", &d), RT_ERR);
  ASSERT_MSG("launch of kernel 'gat' refused: it uses 128 registers per "
             "thread, so a block holds at most 512 threads, not 1024");
  c = cfg(1, 1, 1, 512, 1, 1, 0);
  ck_assert_int_eq(rt_launch_validate(&c, &h100, &k, "gat", &d), RT_OK);
}
END_TEST

/* ---- failures mid-run, against the fake driver (issue 17) ---- */

static void fake_driver(void) {
  const char *fake = getenv("GOP_FAKE_CUDA");
  ck_assert_msg(fake != NULL, "GOP_FAKE_CUDA is not set (run through ctest)");
  setenv("GOP_CUDA_LIBRARY", fake, 1);
}

START_TEST(fake_driver_opens) {
  fake_driver();
  ck_assert_int_eq(rt_cuda_open(&d), RT_OK);
  ck_assert_str_eq(rt_cuda_device_name(), "gop fake GPU 0");
  ck_assert_int_eq(rt_cuda_cc(), 90);
}
END_TEST

/* The second allocation fails as if the device were full: the message
 * names the call, the error and the tensor; the next allocation works. */
START_TEST(injected_failure_names_call_and_passes) {
  fake_driver();
  setenv("GOP_CUDA_FAIL", "cuMemAlloc_v2:2:2", 1);
  ck_assert_int_eq(rt_cuda_open(&d), RT_OK);
  RtDevTensor a = {0}, b = {0}, c = {0};
  ck_assert_int_eq(rt_tensor_alloc(&a, 4096, "A", &d), RT_OK);
  ck_assert_int_eq(rt_tensor_alloc(&b, 4096, "B", &d), RT_OOM);
  ASSERT_MSG("CUDA error in cuMemAlloc_v2: CUDA_ERROR_OUT_OF_MEMORY (out of memory)");
  ASSERT_MSG("(injected by GOP_CUDA_FAIL)");
  ck_assert_int_eq(rt_tensor_alloc(&c, 4096, "C", &d), RT_OK);
  ck_assert(!rt_cuda_lost(NULL));
  rt_tensor_free(&a);
  rt_tensor_free(&c);
  unsetenv("GOP_CUDA_FAIL");
}
END_TEST

/* A sticky error (an illegal address, surfacing at a synchronisation):
 * said once, and every later request for the GPU is refused with the
 * reason, even after closing, without calling the driver again. */
START_TEST(sticky_error_refuses_further_gpu_work) {
  fake_driver();
  setenv("GOP_CUDA_FAIL", "cuCtxSynchronize:700", 1);
  ck_assert_int_eq(rt_cuda_open(&d), RT_OK);
  ck_assert_int_eq(rt_cuda_sync(&d), RT_ERR);
  ASSERT_MSG("CUDA error in cuCtxSynchronize: CUDA_ERROR_ILLEGAL_ADDRESS");
  ASSERT_MSG("the CUDA context is now unusable: gop refuses further GPU work");
  ck_assert(rt_cuda_lost(NULL));
  unsetenv("GOP_CUDA_FAIL");
  ir_diag_free(&d);
  ir_diag_init(&d, NULL);
  ck_assert_int_eq(rt_cuda_sync(&d), RT_ERR);
  ck_assert_str_eq(msgs(), "error: the GPU is unusable in this process: "
                           "CUDA_ERROR_ILLEGAL_ADDRESS (CUDA error 700) in cuCtxSynchronize "
                           "corrupted the CUDA context earlier; gop refuses further GPU work "
                           "(start a new process)\n");
  rt_cuda_close();
  ck_assert_int_eq(rt_cuda_open(&d), RT_ERR);
  RtDevTensor t = {0};
  ck_assert_int_ne(rt_tensor_alloc(&t, 16, "T", &d), RT_OK);
}
END_TEST

static Suite *suite(void) {
  Suite *s = suite_create("cuda");
  TCase *t = tcase_create("driver");
  tcase_add_checked_fixture(t, setup, teardown);
  tcase_add_test(t, missing_library_is_no_driver);
  tcase_add_test(t, failed_open_is_retried);
  tcase_add_test(t, library_without_entry_points);
  tcase_add_test(t, toolkit_stub_is_no_driver);
  tcase_add_test(t, bad_device_number);
  tcase_add_test(t, gpu_calls_without_driver);
  tcase_add_test(t, timing_argument_checks);
  tcase_add_test(t, empty_tensor_needs_no_driver);
  tcase_add_test(t, device_graph_without_driver);
  suite_add_tcase(s, t);

  t = tcase_create("pure");
  tcase_add_checked_fixture(t, setup, teardown);
  tcase_add_test(t, check_names_call_and_error);
  tcase_add_test(t, check_sticky_error_note);
  tcase_add_test(t, status_names);
  tcase_add_test(t, format_bytes);
  tcase_add_test(t, fnv1a_vectors);
  tcase_add_test(t, validate_accepts_legal);
  tcase_add_test(t, validate_too_many_threads);
  tcase_add_test(t, validate_zero_and_axis_limits);
  tcase_add_test(t, validate_shared_memory);
  tcase_add_test(t, validate_kernel_register_limit);
  tcase_add_test(t, fake_driver_opens);
  tcase_add_test(t, injected_failure_names_call_and_passes);
  tcase_add_test(t, sticky_error_refuses_further_gpu_work);
  suite_add_tcase(s, t);
  return s;
}

int main(void) { return tu_run(suite()); }
