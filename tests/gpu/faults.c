/* tests/gpu/faults.c: GPU faults on a real GPU (issue 17), run by
 * tests/gpu/faults.sh on the GPU machine, from a kernel pack of copy_u_sum
 * made where LLVM is (tools/gpu-prepare.sh), so that it needs no LLVM.
 *
 * Each case breaks something on purpose and checks that gop reports the
 * failing CUDA call and its reason, and then what it does next:
 *
 *   oom       device memory is filled first (through the runtime), then an
 *             operator runs: cuMemAlloc fails with CUDA_ERROR_OUT_OF_MEMORY;
 *             once the memory is given back, the same run succeeds and
 *             agrees with the interpreter
 *   launch    a kernel pack edited to launch 1024 threads a block, its
 *             kernels compiled for 256: refused (by gop's launch check or
 *             the driver, naming the call), then a good run works
 *   inject    GOP_CUDA_FAIL makes a copy to the device fail mid-run, then a
 *             good run works
 *   fault     a graph whose edge table is corrupted (a source far out of
 *             range; the pack is edge-parallel) makes the kernel fault: CUDA_ERROR_ILLEGAL_ADDRESS,
 *             a sticky error; later runs that require the GPU are refused
 *             with the reason, runs that may fall back use the interpreter.
 *             Last, since the context does not survive it.
 *
 * Prints one line per check and "N of M checks passed"; exits 1 if any
 * failed, 3 or 4 when there is no driver or GPU.
 */
#define _GNU_SOURCE
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gop.h"
#include "graph/graph.h"
#include "runtime/runtime.h"

static int checks, failures;

static bool check(bool ok, const char *what, const char *fmt, ...) {
  checks++;
  printf("%s %s", ok ? "PASS" : "FAIL", what);
  if (!ok) {
    failures++;
    va_list ap;
    va_start(ap, fmt);
    printf(": ");
    vprintf(fmt, ap);
    va_end(ap);
  }
  printf("\n");
  return ok;
}

static bool has(GopContext *ctx, const char *s) { return strstr(gop_diagnostics(ctx), s) != NULL; }

/* The first two lines of the diagnostics, indented, for the log. */
static void show(GopContext *ctx) {
  const char *p = gop_diagnostics(ctx);
  for (int i = 0; i < 3 && *p; i++) {
    size_t n = strcspn(p, "\n");
    printf("    | %.*s\n", (int)n, p);
    p += n + (p[n] == '\n');
  }
}

typedef struct Run {
  GopRun *r;
  float *x, *y;
} Run;

static const char *pack_path; /* copy_u_sum's kernel pack (argv[1]) */

/* copy_u_sum from `pack` (default: the good one) on `g`, F = 64. */
static Run make_run(GopContext *ctx, GopGraph *g, GopDevice dev, const char *pack) {
  Run k = {0};
  k.r = gop_run_from_pack(ctx, pack ? pack : pack_path, g);
  if (!k.r) return k;
  gop_run_set_device(k.r, dev);
  gop_run_set_timing(k.r, 0, 1);
  gop_run_set_extent(k.r, "F", 64);
  GopGraphInfo info;
  gop_graph_info(g, &info);
  size_t n = (size_t)info.num_vertices * 64;
  k.x = malloc(n * sizeof(float));
  k.y = malloc(n * sizeof(float));
  for (size_t i = 0; i < n; i++) k.x[i] = (float)(i % 13) - 6.0f;
  gop_run_bind(k.r, "X", k.x, (int64_t)n);
  gop_run_bind(k.r, "Y", k.y, (int64_t)n);
  return k;
}

static void free_run(Run *k) {
  free(k->x);
  free(k->y);
}

/* A good run after a failure: on the GPU, and right. */
static void good_run(GopContext *ctx, GopGraph *g, const char *after) {
  gop_clear_diagnostics(ctx);
  Run k = make_run(ctx, g, GOP_DEVICE_GPU, NULL);
  double worst = -1;
  int rc = k.r ? gop_run_exec(k.r) : -1;
  int chk = rc == 0 ? gop_run_check(k.r, &worst) : -1;
  char what[128];
  snprintf(what, sizeof what, "%s: the next run works on the GPU and agrees", after);
  check(rc == 0 && chk == 0 && gop_run_stats(k.r)->on_gpu, what, "exec %d, check %d: %s", rc,
        chk, gop_diagnostics(ctx));
  free_run(&k);
}

static void case_oom(GopContext *ctx, GopGraph *g) {
  Diag quiet;
  ir_diag_init(&quiet, NULL);
  enum { MAX_HOG = 4096 };
  static RtDevTensor hog[MAX_HOG];
  int n = 0;
  for (size_t chunk = (size_t)1 << 30; chunk >= ((size_t)1 << 16) && n < MAX_HOG; chunk /= 4)
    while (n < MAX_HOG && rt_tensor_alloc(&hog[n], chunk, "hog", &quiet) == RT_OK) n++;
  ir_diag_free(&quiet);
  size_t free_b = 0, total = 0;
  Diag q2;
  ir_diag_init(&q2, NULL);
  rt_cuda_mem_info(&free_b, &total, &q2);
  ir_diag_free(&q2);
  printf("  oom: device memory filled (%d allocations, %zu KiB left of %zu MiB)\n", n,
         free_b >> 10, total >> 20);
  gop_clear_diagnostics(ctx);
  Run k = make_run(ctx, g, GOP_DEVICE_GPU, NULL);
  int rc = k.r ? gop_run_exec(k.r) : 0;
  show(ctx);
  check(rc != 0 && has(ctx, "cuMemAlloc") && has(ctx, "CUDA_ERROR_OUT_OF_MEMORY"),
        "oom: reported with the call and the reason", "exec %d: %s", rc, gop_diagnostics(ctx));
  free_run(&k);
  for (int i = 0; i < n; i++) rt_tensor_free(&hog[i]);
  good_run(ctx, g, "oom");
}

/* Copies pack `from` to `to` with the threads a block of every kernel and
 * launch line (their fourth field) set to 1024: more than the 256 its
 * kernels were compiled for (.maxntid), so the device refuses the launch
 * unless gop's launch check refuses it first. */
static bool edit_pack(const char *from, const char *to) {
  FILE *f = fopen(from, "rb"), *out = fopen(to, "wb");
  if (!f || !out) {
    if (f) fclose(f);
    if (out) fclose(out);
    return false;
  }
  char *line = NULL;
  size_t lcap = 0;
  ssize_t got;
  int edits = 0;
  long skip = 0;
  while ((got = getline(&line, &lcap, f)) > 0) {
    long blen;
    if (skip > 0) { /* inside the ptx or ir block: copied as is */
      skip -= got;
    } else if (sscanf(line, "ptx %ld", &blen) == 1 || sscanf(line, "ir %ld", &blen) == 1) {
      skip = blen + 1;
    } else if (!strncmp(line, "kernel ", 7) || !strncmp(line, "launch ", 7)) {
      char *p = line;
      for (int i = 0; i < 3 && p; i++) p = strchr(p + 1, ' ');
      char *end = p ? p + 1 + strcspn(p + 1, " \n") : NULL;
      if (p) {
        fprintf(out, "%.*s 1024%s", (int)(p - line), line, end);
        edits++;
        continue;
      }
    }
    fputs(line, out);
  }
  fclose(f);
  bool ok = fclose(out) == 0 && edits > 0;
  free(line);
  return ok;
}

static void case_launch(GopContext *ctx, GopGraph *g) {
  const char *path = "/tmp/gop-faults-launch.pack";
  if (!check(edit_pack(pack_path, path), "launch: a pack with 1024 threads a block, compiled for 256",
             "cannot write %s", path))
    return;
  gop_clear_diagnostics(ctx);
  Run k = make_run(ctx, g, GOP_DEVICE_GPU, path);
  int rc = k.r ? gop_run_exec(k.r) : -1;
  show(ctx);
  check(rc != 0 && (has(ctx, "1024") || has(ctx, "cuLaunchKernel")),
        "launch: refused with the reason", "exec %d: %s", rc, gop_diagnostics(ctx));
  free_run(&k);
  good_run(ctx, g, "launch");
}

static void case_inject(GopContext *ctx, GopGraph *g) {
  setenv("GOP_CUDA_FAIL", "cuMemcpyHtoD_v2:999:1", 1);
  gop_clear_diagnostics(ctx);
  Run k = make_run(ctx, g, GOP_DEVICE_GPU, NULL);
  int rc = k.r ? gop_run_exec(k.r) : 0;
  unsetenv("GOP_CUDA_FAIL");
  show(ctx);
  check(rc != 0 && has(ctx, "CUDA error in cuMemcpyHtoD_v2") && has(ctx, "injected"),
        "inject: a failed copy mid-run is reported with the call", "exec %d: %s", rc,
        gop_diagnostics(ctx));
  free_run(&k);
  good_run(ctx, g, "inject");
}

static void case_fault(GopContext *ctx, const char *spec) {
  GopGraph *bad = gop_graph_open(ctx, spec);
  /* The arcs the graph holds (and copies to the device at its first run),
   * overwritten where the API hands them out read-only, on purpose: a
   * source vertex 2^31-1 on every 7th edge, read as X[src * F + f]. */
  const int32_t *src, *dst;
  long ne = gop_graph_arcs(bad, &src, &dst);
  for (long e = 0; e < ne; e += 7) ((int32_t *)src)[e] = INT32_MAX;
  gop_clear_diagnostics(ctx);
  Run k = make_run(ctx, bad, GOP_DEVICE_GPU, NULL);
  int rc = k.r ? gop_run_exec(k.r) : 0;
  show(ctx);
  check(rc != 0 && has(ctx, "CUDA error in") &&
            (has(ctx, "CUDA_ERROR_ILLEGAL_ADDRESS") || has(ctx, "CUDA_ERROR_LAUNCH_FAILED")) &&
            has(ctx, "refuses further GPU work"),
        "fault: kernel fault reported, the context declared lost", "exec %d: %s", rc,
        gop_diagnostics(ctx));
  free_run(&k);
  GopGraph *g = gop_graph_open(ctx, spec);
  gop_clear_diagnostics(ctx);
  k = make_run(ctx, g, GOP_DEVICE_GPU, NULL);
  rc = k.r ? gop_run_exec(k.r) : 0;
  show(ctx);
  check(rc != 0 && has(ctx, "the GPU is unusable in this process"),
        "fault: the next GPU run is refused with the reason", "exec %d: %s", rc,
        gop_diagnostics(ctx));
  free_run(&k);
  gop_clear_diagnostics(ctx);
  k = make_run(ctx, g, GOP_DEVICE_AUTO, NULL);
  double worst = -1;
  rc = k.r ? gop_run_exec(k.r) : -1;
  int chk = rc == 0 ? gop_run_check(k.r, &worst) : -1;
  printf("  note: %s\n", k.r ? gop_run_stats(k.r)->note : "");
  check(rc == 0 && chk == 0 && !gop_run_stats(k.r)->on_gpu &&
            strstr(gop_run_stats(k.r)->note, "unusable"),
        "fault: a run that may fall back uses the interpreter, with a note", "exec %d: %s", rc,
        gop_diagnostics(ctx));
  free_run(&k);
}

int main(int argc, char **argv) {
  if (argc < 2) {
    fprintf(stderr, "usage: %s COPY_U_SUM.pack [GRAPH]\n", argv[0]);
    return 2;
  }
  pack_path = argv[1];
  const char *spec = argc > 2 ? argv[2] : "rmat:14:8";
  GopContext *ctx = gop_context_new();
  Diag d;
  ir_diag_init(&d, NULL);
  RtStatus s = rt_cuda_open(&d);
  if (s != RT_OK) {
    printf("no GPU: %s", d.buf ? d.buf : rt_status_name(s));
    return s;
  }
  printf("  device: %s\n", rt_cuda_device_name());
  GopGraph *g = gop_graph_open(ctx, spec);
  if (!g) {
    printf("cannot open %s: %s", spec, gop_diagnostics(ctx));
    return 1;
  }
  good_run(ctx, g, "baseline");
  case_oom(ctx, g);
  case_launch(ctx, g);
  case_inject(ctx, g);
  case_fault(ctx, spec); /* last: the context does not survive it */
  printf("%d of %d checks passed\n", checks - failures, checks);
  gop_context_free(ctx);
  ir_diag_free(&d);
  return failures ? 1 : 0;
}
