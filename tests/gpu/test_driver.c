/* tests/gpu/test_driver.c: the CUDA driver layer of runtime/ on a real GPU.
 *
 * A standalone program, built by build_driver_test.sh with gcc alone (the
 * GPU machines have no LLVM, flex or bison, so the library as a whole does
 * not build there): it compiles runtime/'s driver files and ir/diag.c. It
 * opens the driver, JIT-loads a hand-written PTX module through the cache,
 * launches, checks results, times (with events, and by replaying a captured
 * CUDA graph), measures copy bandwidth, and checks that
 * every failure the runtime promises to explain (a broken PTX, an
 * impossible allocation, an illegal launch, a fault inside a kernel) is
 * explained. It prints one line per check and exits non-zero if any failed.
 */
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "graph/graph.h"
#include "runtime/runtime.h"

/* y[i] = 2 x[i] + 1, and a probe of dynamic shared memory. Written for
 * sm_80 and PTX 7.8, the newest LLVM 16 writes (DESIGN.md). */
static const char *ptx =
    ".version 7.8\n"
    ".target sm_80\n"
    ".address_size 64\n"
    "\n"
    ".visible .entry affine(\n"
    "  .param .u64 x_param,\n"
    "  .param .u64 y_param,\n"
    "  .param .u32 n_param\n"
    ")\n"
    "{\n"
    "  .reg .pred %p<2>;\n"
    "  .reg .b32 %r<6>;\n"
    "  .reg .f32 %f<3>;\n"
    "  .reg .b64 %rd<8>;\n"
    "\n"
    "  ld.param.u64 %rd1, [x_param];\n"
    "  ld.param.u64 %rd2, [y_param];\n"
    "  ld.param.u32 %r1, [n_param];\n"
    "  mov.u32 %r2, %ctaid.x;\n"
    "  mov.u32 %r3, %ntid.x;\n"
    "  mov.u32 %r4, %tid.x;\n"
    "  mad.lo.s32 %r5, %r2, %r3, %r4;\n"
    "  setp.ge.u32 %p1, %r5, %r1;\n"
    "  @%p1 bra DONE;\n"
    "  cvta.to.global.u64 %rd3, %rd1;\n"
    "  cvta.to.global.u64 %rd4, %rd2;\n"
    "  mul.wide.u32 %rd5, %r5, 4;\n"
    "  add.s64 %rd6, %rd3, %rd5;\n"
    "  ld.global.f32 %f1, [%rd6];\n"
    "  fma.rn.f32 %f2, %f1, 0f40000000, 0f3F800000;\n"
    "  add.s64 %rd7, %rd4, %rd5;\n"
    "  st.global.f32 [%rd7], %f2;\n"
    "DONE:\n"
    "  ret;\n"
    "}\n"
    "\n"
    ".extern .shared .align 4 .b8 dyn_smem[];\n"
    "\n"
    "// Thread 0 writes `v` into the last word of `bytes` of dynamic shared\n"
    "// memory, reads it back and stores it to y[0]: it only works when the\n"
    "// launch really got that much shared memory.\n"
    ".visible .entry smem_probe(\n"
    "  .param .u64 y_param,\n"
    "  .param .u32 bytes_param,\n"
    "  .param .f32 v_param\n"
    ")\n"
    "{\n"
    "  .reg .pred %p<2>;\n"
    "  .reg .b32 %r<6>;\n"
    "  .reg .f32 %f<3>;\n"
    "  .reg .b64 %rd<3>;\n"
    "\n"
    "  mov.u32 %r1, %tid.x;\n"
    "  setp.ne.u32 %p1, %r1, 0;\n"
    "  @%p1 bra END;\n"
    "  ld.param.u64 %rd1, [y_param];\n"
    "  ld.param.u32 %r2, [bytes_param];\n"
    "  ld.param.f32 %f1, [v_param];\n"
    "  mov.u32 %r3, dyn_smem;\n"
    "  add.u32 %r4, %r3, %r2;\n"
    "  sub.u32 %r5, %r4, 4;\n"
    "  st.shared.f32 [%r5], %f1;\n"
    "  ld.volatile.shared.f32 %f2, [%r5];\n"
    "  cvta.to.global.u64 %rd2, %rd1;\n"
    "  st.global.f32 [%rd2], %f2;\n"
    "END:\n"
    "  ret;\n"
    "}\n";

/* Not PTX: the JIT must refuse it and its log must say where. */
static const char *broken_ptx =
    ".version 7.8\n"
    ".target sm_80\n"
    ".address_size 64\n"
    ".visible .entry broken()\n"
    "{\n"
    "  frobnicate.u32 %r1, 42;\n"
    "  ret;\n"
    "}\n";

static int failures, checks;
static Diag d;

static void reset(void) {
  ir_diag_free(&d);
  ir_diag_init(&d, NULL);
}

static const char *msgs(void) { return d.buf ? d.buf : ""; }

static bool check(bool ok, const char *name, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static bool check(bool ok, const char *name, const char *fmt, ...) {
  checks++;
  if (ok) {
    printf("PASS %s\n", name);
  } else {
    failures++;
    printf("FAIL %s: ", name);
    va_list ap;
    va_start(ap, fmt);
    vprintf(fmt, ap);
    va_end(ap);
    printf("\n");
    if (d.buf && *d.buf) printf("  diagnostics:\n%s", d.buf);
  }
  fflush(stdout);
  return ok;
}

static bool has(const char *needle) { return strstr(msgs(), needle) != NULL; }

/* Launches affine on n elements of x into y. */
static RtStatus affine(RtKernel *k, RtDevTensor *x, RtDevTensor *y,
                       uint32_t n) {
  void *args[] = {&x->ptr, &y->ptr, &n};
  RtLaunchConfig c = {.grid = {(n + 255) / 256, 1, 1}, .block = {256, 1, 1}};
  return rt_launch(k, &c, args, &d);
}

static void test_affine(RtModule *m) {
  reset();
  RtKernel *k = rt_kernel_get(m, "affine", &d);
  if (!check(k != NULL, "kernel lookup", "affine not found")) return;
  printf("  affine: %d registers, max %d threads per block, PTX %d, SASS %d\n",
         k->info.num_regs, k->info.max_threads, k->info.ptx_version,
         k->info.binary_version);
  check(rt_kernel_get(m, "affine", &d) == k, "kernel lookup cached",
        "a second lookup gave another kernel");

  reset();
  check(rt_kernel_get(m, "nope", &d) == NULL &&
            has("has no kernel named 'nope'") &&
            has("its kernels are: affine, smem_probe"),
        "missing kernel named", "unexpected result");

  reset();
  const uint32_t n = (1u << 20) + 3; /* not a multiple of the block */
  float *hx = malloc(sizeof(float) * n), *hy = malloc(sizeof(float) * n);
  for (uint32_t i = 0; i < n; i++) hx[i] = (float)(i % 1000) - 500.0f;
  RtDevTensor x, y;
  RtStatus s = rt_tensor_alloc(&x, sizeof(float) * n, "tensor x", &d);
  if (!s) s = rt_tensor_alloc(&y, sizeof(float) * n, "tensor y", &d);
  if (!s) s = rt_tensor_upload(&x, hx, sizeof(float) * n, &d);
  if (!s) s = rt_tensor_fill32(&y, 0x7fc00000u, &d); /* NaN: must be overwritten */
  if (!s) s = affine(k, &x, &y, n);
  if (!s) s = rt_cuda_sync(&d);
  if (!s) s = rt_tensor_download(&y, hy, sizeof(float) * n, &d);
  uint32_t bad = 0;
  for (uint32_t i = 0; !s && i < n; i++)
    if (hy[i] != 2.0f * hx[i] + 1.0f) bad++;
  check(s == RT_OK && bad == 0, "affine result", "status %d, %u wrong", s, bad);

  RtMemStats ms = rt_mem_stats();
  check(ms.live_tensors == 2 && ms.live_bytes == 2ull * 4 * n,
        "memory accounting", "live %lld tensors, %llu bytes",
        (long long)ms.live_tensors, (unsigned long long)ms.live_bytes);

  reset();
  RtTiming t;
  RtLaunchConfig c = {.grid = {(n + 255) / 256, 1, 1}, .block = {256, 1, 1}};
  void *args[] = {&x.ptr, &y.ptr, (void *)&n};
  s = rt_time_launch(k, &c, args, 5, 21, &t, &d);
  if (check(s == RT_OK && t.reps == 21 && t.median_ms > 0 &&
                t.min_ms <= t.median_ms && t.median_ms <= t.max_ms,
            "timing", "status %d, median %g", s, t.median_ms))
    printf("  affine on %u floats: median %.4f ms (min %.4f, max %.4f) = "
           "%.0f GB/s\n",
           n, t.median_ms, t.min_ms, t.max_ms,
           8.0 * n / (t.median_ms * 1e-3) / 1e9);

  reset();
  RtLaunchConfig big = {.grid = {1, 1, 1}, .block = {2048, 1, 1}, .shared_bytes = 0};
  check(rt_launch(k, &big, args, &d) == RT_ERR &&
            has("launch of kernel 'affine' refused: block (2048, 1, 1)") &&
            has("exceeds the device's limit of 1024"),
        "illegal block refused", "not refused as expected");
  reset();
  RtLaunchConfig shm = {.grid = {1, 1, 1}, .block = {32, 1, 1}, .shared_bytes = 4u << 20};
  check(rt_launch(k, &shm, args, &d) == RT_ERR &&
            has("a block asks for 4 MiB of shared memory"),
        "too much shared memory refused", "not refused as expected");
  reset();
  RtLaunchConfig zero = {.grid = {0, 1, 1}, .block = {32, 1, 1}, .shared_bytes = 0};
  check(rt_launch(k, &zero, args, &d) == RT_ERR &&
            has("has a zero dimension"),
        "empty grid refused", "not refused as expected");
  /* the refusals never reached the driver: the context is still fine */
  reset();
  check(rt_cuda_sync(&d) == RT_OK, "context intact after refusals", "sync");

  rt_tensor_free(&x);
  rt_tensor_free(&y);
  free(hx);
  free(hy);
}

/* Graph replay (rt_time_graph): affine on a small vector, a launch of a few
 * microseconds, in the capture's stream. */
typedef struct Affine {
  RtKernel *k;
  RtLaunchConfig c;
  void **args;
  bool wait; /* also a wait for the context, which no capture takes (a
                synchronous fill is taken on a non-blocking stream: the H200's
                driver 580 captured it) */
} Affine;

static RtStatus affine_in(void *ctx, void *stream, Diag *dd) {
  Affine *a = ctx;
  RtStatus s = rt_launch_stream(a->k, &a->c, a->args, stream, dd);
  if (!s && a->wait) s = rt_cuda_sync(dd);
  return s;
}

static void test_graph_replay(RtModule *m) {
  reset();
  RtKernel *k = rt_kernel_get(m, "affine", &d);
  if (!check(k != NULL, "graph replay: kernel", "affine not found")) return;
  const uint32_t n = 4096; /* 16 blocks: the launch, not the work, costs */
  float hx[4096], hy[4096];
  for (uint32_t i = 0; i < n; i++) hx[i] = (float)i;
  RtDevTensor x, y;
  RtStatus s = rt_tensor_alloc(&x, sizeof hx, "tensor x", &d);
  if (!s) s = rt_tensor_alloc(&y, sizeof hy, "tensor y", &d);
  if (!s) s = rt_tensor_upload(&x, hx, sizeof hx, &d);
  if (!s) s = rt_tensor_fill32(&y, 0x7fc00000u, &d);
  uint32_t nn = n;
  void *args[] = {&x.ptr, &y.ptr, &nn};
  Affine a = {k, {.grid = {(n + 255) / 256, 1, 1}, .block = {256, 1, 1}}, args, false};
  RtTiming ev = {0}, gr = {0};
  if (!s) s = rt_time_launch(k, &a.c, args, 5, 21, &ev, &d);
  if (!s) s = rt_time_graph(affine_in, &a, 0, 1024, 5, 21, &gr, &d);
  if (!s) s = rt_tensor_download(&y, hy, sizeof hy, &d);
  uint32_t bad = 0;
  for (uint32_t i = 0; !s && i < n; i++) bad += hy[i] != 2.0f * hx[i] + 1.0f;
  if (check(s == RT_OK && bad == 0 && gr.calls >= 1 && gr.reps == 21 && gr.median_ms > 0 &&
                gr.min_ms <= gr.median_ms && gr.median_ms <= gr.max_ms,
            "graph replay", "status %d, %u wrong, %d calls, median %g", s, bad, gr.calls,
            gr.median_ms))
    printf("  affine on %u floats: events %.4f ms (min %.4f, max %.4f, spread %.0f%%); "
           "graph replay of %d calls %.4f ms a call (min %.4f, max %.4f, spread %.0f%%)\n",
           n, ev.median_ms, ev.min_ms, ev.max_ms, 100 * (ev.max_ms / ev.min_ms - 1), gr.calls,
           gr.median_ms, gr.min_ms, gr.max_ms, 100 * (gr.max_ms / gr.min_ms - 1));
  /* a launch of a few microseconds: replay removes the gaps between them */
  check(s == RT_OK && gr.median_ms <= ev.median_ms * 1.05, "graph replay no slower than events",
        "graph %g ms, events %g ms", gr.median_ms, ev.median_ms);

  /* a wait for the context inside the capture: refused by the driver, named,
   * and the context fine afterwards */
  reset();
  a.wait = true;
  s = rt_time_graph(affine_in, &a, 4, 4, 1, 3, &gr, &d);
  printf("  %s", msgs());
  check(s != RT_OK && has("CUDA_ERROR_STREAM_CAPTURE") &&
            has("failed while being captured into a CUDA graph"),
        "uncapturable call refused", "status %d", s);
  reset();
  a.wait = false;
  s = rt_time_graph(affine_in, &a, 4, 4, 1, 3, &gr, &d);
  check(s == RT_OK && gr.calls == 4 && rt_cuda_sync(&d) == RT_OK,
        "graph replay after a refused capture", "status %d", s);
  rt_tensor_free(&x);
  rt_tensor_free(&y);
}

static void test_shared(RtModule *m) {
  reset();
  RtKernel *k = rt_kernel_get(m, "smem_probe", &d);
  if (!check(k != NULL, "smem_probe lookup", "not found")) return;
  const RtDeviceInfo *dev = rt_cuda_device();
  /* The most the device allows, well above the 48 KiB that needs opting in. */
  uint32_t bytes = (uint32_t)dev->limits.shared_per_block_optin;
  bytes -= bytes % 4;
  float v = 42.5f, out = 0;
  RtDevTensor y;
  RtStatus s = rt_tensor_alloc(&y, sizeof(float), "tensor probe", &d);
  void *args[] = {&y.ptr, &bytes, &v};
  RtLaunchConfig c = {.grid = {1, 1, 1}, .block = {32, 1, 1}, .shared_bytes = bytes};
  if (!s) s = rt_launch(k, &c, args, &d);
  if (!s) s = rt_tensor_download(&y, &out, sizeof out, &d);
  check(s == RT_OK && out == v && k->dyn_shared_max >= (int)bytes,
        "dynamic shared memory above 48 KiB", "status %d, read %g (%u bytes)",
        s, out, bytes);
  rt_tensor_free(&y);
}

static void test_graph(void) {
  /* 0 -> 1, 0 -> 2, 2 -> 1, 1 -> 3 (edge ids in this order) */
  int32_t src[] = {0, 0, 2, 1}, dst[] = {1, 2, 1, 3};
  int64_t in_ptr[] = {0, 0, 2, 3, 4}, in_eid[] = {0, 2, 1, 3};
  int32_t in_src[] = {0, 2, 0, 1};
  int64_t out_ptr[] = {0, 2, 3, 4, 4}, out_eid[] = {0, 1, 3, 2};
  int32_t out_dst[] = {1, 2, 3, 1};
  Graph g = {.name = "tiny", .nv = 4, .ne = 4, .src = src, .dst = dst,
               .in_ptr = in_ptr, .in_eid = in_eid, .in_src = in_src,
               .out_ptr = out_ptr, .out_eid = out_eid, .out_dst = out_dst};
  reset();
  RtDevGraph dg;
  rt_devgraph_init(&dg, &g);
  RtStatus s = rt_devgraph_load(&dg, RT_FMT_BIT(RT_FMT_CSR), &d);
  check(s == RT_OK && dg.loaded == RT_FMT_BIT(RT_FMT_CSR) &&
            rt_devgraph_bytes(&dg, RT_FMT_CSR) == 4 * (5 + 4 + 4) &&
            rt_devgraph_bytes(&dg, RT_FMT_COO) == 0,
        "device graph: only CSR", "status %d, loaded %#x", s, dg.loaded);
  RtDevPtr before = dg.in_src.ptr;
  s = rt_devgraph_load(&dg, RT_FMT_ALL, &d);
  check(s == RT_OK && dg.loaded == RT_FMT_ALL && dg.in_src.ptr == before,
        "device graph: all formats, CSR kept", "status %d", s);
  int32_t back[5], in_deg[4], out_deg[4];
  if (!s) s = rt_tensor_download(&dg.out_dst, back, sizeof(int32_t) * 4, &d);
  if (!s) s = rt_tensor_download(&dg.in_deg, in_deg, sizeof in_deg, &d);
  if (!s) s = rt_tensor_download(&dg.out_deg, out_deg, sizeof out_deg, &d);
  check(s == RT_OK && memcmp(back, out_dst, sizeof(int32_t) * 4) == 0 &&
            in_deg[0] == 0 && in_deg[1] == 2 && in_deg[3] == 1 &&
            out_deg[0] == 2 && out_deg[3] == 0,
        "device graph contents", "status %d", s);
  rt_devgraph_print(stdout, &dg);
  rt_devgraph_free(&dg);
  check(dg.loaded == 0 && rt_mem_stats().live_tensors == 0,
        "device graph freed", "%lld tensors live",
        (long long)rt_mem_stats().live_tensors);
}

static void test_failures(void) {
  reset();
  RtModule *m = rt_module_load(broken_ptx, "broken.ptx", &d);
  check(m == NULL && has("CUDA error in cuModuleLoadDataEx: ") &&
            has("while loading broken.ptx") && has("note: JIT: "),
        "broken PTX shows the JIT log", "no module expected");
  printf("  %s", msgs());

  reset();
  RtDevTensor t;
  RtStatus s = rt_tensor_alloc(&t, 1ull << 50, "tensor huge", &d);
  check(s == RT_OOM && has("CUDA_ERROR_OUT_OF_MEMORY") &&
            has("while allocating 1 PiB for tensor huge") &&
            has("note: the GPU has "),
        "1 PiB allocation is a clear OOM", "status %d", s);
  printf("  %s", msgs());
  check(t.ptr == 0 && t.bytes == 0 && rt_mem_stats().live_tensors == 0,
        "failed allocation holds nothing", "ptr %#llx",
        (unsigned long long)t.ptr);

  reset();
  RtDevTensor small;
  float host[8] = {0};
  s = rt_tensor_alloc(&small, 16, "tensor small", &d);
  check(s == RT_OK && rt_tensor_upload(&small, host, sizeof host, &d) ==
                          RT_ERR && has("cannot copy 32 B into tensor small"),
        "oversized upload refused", "status %d", s);
  rt_tensor_free(&small);
}

/* Pinned host memory: copies through it give back what went in, and a
 * buffer pinned twice is an error that names the call. */
static void test_pinned(void) {
  reset();
  size_t n = 1 << 20;
  float *h = malloc(n * sizeof *h), *back = malloc(n * sizeof *back);
  for (size_t i = 0; i < n; i++) h[i] = (float)i;
  RtDevTensor t;
  RtStatus s = rt_host_pin(h, n * sizeof *h, &d);
  if (s == RT_OK) s = rt_host_pin(back, n * sizeof *back, &d);
  if (s == RT_OK) s = rt_tensor_alloc(&t, n * sizeof *h, "tensor pinned", &d);
  if (s == RT_OK) s = rt_tensor_upload(&t, h, n * sizeof *h, &d);
  if (s == RT_OK) s = rt_tensor_download(&t, back, n * sizeof *back, &d);
  check(s == RT_OK && memcmp(h, back, n * sizeof *h) == 0, "pinned copies round-trip",
        "status %d: %s", s, msgs());
  reset();
  check(rt_host_pin(h, n * sizeof *h, &d) != RT_OK && has("cuMemHostRegister_v2"),
        "pinning twice names the call", "%s", msgs());
  rt_host_unpin(h);
  rt_host_unpin(back);
  rt_tensor_free(&t);
  free(h);
  free(back);
}

static void test_reopen(void) {
  reset();
  RtDevTensor t;
  RtStatus s = rt_tensor_alloc(&t, 1024, "tensor kept", &d);
  uint32_t e1 = rt_cuda_epoch();
  rt_cuda_close();
  check(s == RT_OK && !rt_cuda_available() && rt_module_count() == 0,
        "close", "status %d", s);
  s = rt_cuda_open(&d);
  check(s == RT_OK && rt_cuda_epoch() != e1 &&
            rt_tensor_upload(&t, "abcd", 4, &d) == RT_ERR &&
            has("belongs to a CUDA session that was closed"),
        "reopen; stale tensor refused", "status %d", s);
  rt_tensor_free(&t); /* a no-op on the driver */
  reset();
  RtModule *m = rt_module_load(ptx, "test_driver.ptx", &d);
  check(m != NULL && rt_module_count() == 1, "module loads again", "none");
}

static void test_unload(void) {
  reset();
  /* a different text (one more comment) is a different module */
  size_t n = strlen(ptx);
  char *other = malloc(n + 32);
  memcpy(other, ptx, n);
  strcpy(other + n, "// another module\n");
  int before = rt_module_count();
  RtModule *m = rt_module_load(other, "other.ptx", &d);
  RtKernel *k = m ? rt_kernel_get(m, "affine", &d) : NULL;
  bool loaded = k != NULL && rt_module_count() == before + 1;
  rt_module_unload(m);
  check(loaded && rt_module_count() == before, "second module, unloaded",
        "%d modules before, %d after", before, rt_module_count());
  free(other);
}

/* Last: a fault inside a kernel ruins the context for the whole process. */
static void test_fault(void) {
  reset();
  RtModule *m = rt_module_load(ptx, "test_driver.ptx", &d);
  RtKernel *k = m ? rt_kernel_get(m, "affine", &d) : NULL;
  if (!check(k != NULL, "fault: kernel", "none")) return;
  RtDevTensor bogus = {.ptr = 0x10, .bytes = 4096};
  RtStatus s = affine(k, &bogus, &bogus, 1024);
  if (!s) s = rt_cuda_sync(&d);
  check(s == RT_ERR && has("CUDA_ERROR_ILLEGAL_ADDRESS") &&
            has("while waiting for the GPU") &&
            has("the CUDA context is now unusable"),
        "kernel fault reported at sync", "status %d", s);
  printf("  %s", msgs());
}

/* GOP_SPILL_PTX=FILE:KERNEL: a kernel that spills at the occupancy floor
 * its PTX asks for (made by tools/gpu-prepare.sh: copy_e_sum under
 * spmm_groups(1, 1) at 64-bit indices) loads spilling through
 * rt_module_load, and without local memory through rt_module_load_floors,
 * which lowers the floor until the JIT stops spilling (runtime/module.c). */
static void test_spill_floor(void) {
  const char *spec = getenv("GOP_SPILL_PTX");
  if (!spec) {
    printf("  skip spill floor: GOP_SPILL_PTX not set\n");
    return;
  }
  char path[512];
  const char *colon = strrchr(spec, ':');
  if (!check(colon && colon - spec < (long)sizeof path, "spill floor", "GOP_SPILL_PTX=FILE:KERNEL"))
    return;
  snprintf(path, sizeof path, "%.*s", (int)(colon - spec), spec);
  const char *name = colon + 1;
  FILE *f = fopen(path, "rb");
  if (!check(f != NULL, "spill floor", "cannot open %s", path)) return;
  static char text[1 << 20];
  size_t n = fread(text, 1, sizeof text - 1, f);
  fclose(f);
  text[n] = 0;
  reset();
  RtModule *m = rt_module_load(text, "spill.ptx", &d);
  RtKernel *k = m ? rt_kernel_get(m, name, &d) : NULL;
  int before = k ? k->info.local_bytes : -1, regs0 = k ? k->info.num_regs : 0;
  if (m) {
    rt_module_release(m);
    rt_module_unload(m);
  }
  const char *lower[] = {name};
  m = rt_module_load_floors(text, "spill.ptx", lower, 1, &d);
  k = m ? rt_kernel_get(m, name, &d) : NULL;
  int after = k ? k->info.local_bytes : -1, regs1 = k ? k->info.num_regs : 0;
  check(before > 0 && after == 0, "spill floor lowered",
        "%s: %d bytes local at its floor (%d registers), %d lowered (%d registers)", name,
        before, regs0, after, regs1);
  printf("  %s: %d bytes of local memory and %d registers at the floor asked for, %d and %d "
         "with it lowered\n", name, before, regs0, after, regs1);
  if (m) {
    rt_module_release(m);
    rt_module_unload(m);
  }
}

int main(void) {
  ir_diag_init(&d, NULL);
  RtStatus s = rt_cuda_open(&d);
  if (!check(s == RT_OK, "open", "%s", rt_status_name(s))) return s;
  const RtDeviceInfo *dev = rt_cuda_device();
  char mem[32], l2[32], shm[32];
  printf("  device: %s, compute capability %d.%d, %d SMs, %s, L2 %s, "
         "shared memory per block up to %s, driver %d.%d\n",
         dev->name, dev->cc / 10, dev->cc % 10, dev->sm_count,
         rt_format_bytes(dev->mem_total, mem),
         rt_format_bytes((uint64_t)dev->l2_bytes, l2),
         rt_format_bytes((uint64_t)dev->limits.shared_per_block_optin, shm),
         dev->driver_version / 1000, dev->driver_version % 1000 / 10);
  check(rt_cuda_cc() >= 80 && strcmp(rt_cuda_device_name(), dev->name) == 0,
        "device info", "cc %d", rt_cuda_cc());
  check(rt_cuda_open(&d) == RT_OK && d.nerrors == 0, "open is idempotent",
        "second open failed");

  reset();
  RtModule *m = rt_module_load(ptx, "test_driver.ptx", &d);
  if (!check(m != NULL, "load PTX", "JIT failed")) return 1;
  check(rt_module_load(ptx, "again", &d) == m && rt_module_count() == 1,
        "module cache hit", "%d modules", rt_module_count());

  test_affine(m);
  test_graph_replay(m);
  test_shared(m);
  test_graph();
  test_spill_floor();

  reset();
  double gbps = 0;
  s = rt_measure_copy_bandwidth(256u << 20, 11, &gbps, &d);
  if (check(s == RT_OK && gbps > 10, "copy bandwidth", "status %d, %g GB/s", s,
            gbps))
    printf("  device-to-device copy of 256 MiB: %.0f GB/s (read + write)\n",
           gbps);

  test_failures();
  test_pinned();
  check(rt_mem_stats().live_tensors == 0, "no leaked device memory",
        "%lld tensors live", (long long)rt_mem_stats().live_tensors);
  test_reopen();
  test_unload();
  test_fault();

  printf("%d of %d checks passed\n", checks - failures, checks);
  rt_cuda_close();
  ir_diag_free(&d);
  return failures ? 1 : 0;
}
