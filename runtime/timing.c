/* runtime/timing.c: measuring GPU work with CUDA events.
 *
 * The work to time is a closure, so the same loop times a kernel, a copy or
 * a whole operator. The repetitions are queued back to back with an event
 * between each two, and the host waits once at the end: the GPU never idles
 * waiting for the next launch, so the times are the GPU's, not the launch
 * latency's. The median summarises them, as one slow repetition (the first,
 * which may start on an idle GPU, or one that met a clock change) must not
 * move the result.
 */
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cuda.def"

static const Loc no_loc = {0};

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

/* Fills `out` from `n` times (sorted in place). */
static void summarise(double *ms, int n, RtTiming *out) {
  qsort(ms, (size_t)n, sizeof *ms, cmp_double);
  double sum = 0;
  for (int i = 0; i < n; i++) sum += ms[i];
  out->reps = n;
  out->min_ms = ms[0];
  out->max_ms = ms[n - 1];
  out->mean_ms = sum / n;
  out->median_ms = n % 2 ? ms[n / 2] : 0.5 * (ms[n / 2 - 1] + ms[n / 2]);
}

RtStatus rt_time_work(RtWorkFn fn, void *ctx, int warmup, int reps,
                      RtTiming *out, Diag *d) {
  memset(out, 0, sizeof *out);
  if (reps < 1 || warmup < 0) {
    ir_error(d, no_loc,
             "cannot time %d repetitions after %d warm-up runs: need at "
             "least one repetition and no negative count",
             reps, warmup);
    return RT_ERR;
  }
  RtStatus s = rt_cuda_open(d);
  if (s) return s;

  for (int i = 0; i < warmup && !s; i++) s = fn(ctx, d);
  /* A fault in the warm-up must be reported as such, not as a timing. */
  if (!s) s = rt_cuda_sync(d);
  if (s) return s;

  int nev = reps + 1;
  CUevent *ev = calloc((size_t)nev, sizeof *ev);
  double *ms = calloc((size_t)reps, sizeof *ms);
  if (!ev || !ms) {
    free(ev);
    free(ms);
    ir_error(d, no_loc, "out of host memory timing %d repetitions", reps);
    return RT_ERR;
  }
  int created = 0; /* events to destroy, whatever happens below */
  while (created < nev &&
         !(s = RT_CU(cuEventCreate, (&ev[created], CU_EVENT_DEFAULT))))
    created++;
  if (!s) s = RT_CU(cuEventRecord, (ev[0], NULL));
  for (int i = 0; i < reps && !s; i++) {
    s = fn(ctx, d);
    if (!s) s = RT_CU(cuEventRecord, (ev[i + 1], NULL));
  }
  if (!s)
    s = RT_CU_WHAT("while waiting for the timed work to finish",
                   cuEventSynchronize, (ev[reps]));
  for (int i = 0; i < reps && !s; i++) {
    float t = 0;
    s = RT_CU(cuEventElapsedTime_v2, (&t, ev[i], ev[i + 1]));
    ms[i] = t;
  }
  for (int i = 0; i < created; i++) rt_cuda_api()->cuEventDestroy_v2(ev[i]);
  if (!s) summarise(ms, reps, out);
  free(ev);
  free(ms);
  return s;
}

typedef struct LaunchWork {
  RtKernel *k;
  const RtLaunchConfig *c;
  void **args;
} LaunchWork;

static RtStatus launch_work(void *ctx, Diag *d) {
  LaunchWork *w = ctx;
  return rt_launch(w->k, w->c, w->args, d);
}

RtStatus rt_time_launch(RtKernel *k, const RtLaunchConfig *c, void **args,
                        int warmup, int reps, RtTiming *out, Diag *d) {
  LaunchWork w = {k, c, args};
  return rt_time_work(launch_work, &w, warmup, reps, out, d);
}

typedef struct CopyWork {
  RtDevTensor *dst, *src;
} CopyWork;

static RtStatus copy_work(void *ctx, Diag *d) {
  CopyWork *w = ctx;
  return RT_CU_WHAT("while measuring copy bandwidth", cuMemcpyDtoD_v2,
                    (w->dst->ptr, w->src->ptr, w->src->bytes));
}

RtStatus rt_measure_copy_bandwidth(size_t bytes, int reps, double *gbps,
                                   Diag *d) {
  *gbps = 0;
  if (bytes < 4 || bytes % 4) {
    ir_error(d, no_loc,
             "cannot measure copy bandwidth with %zu bytes: need a positive "
             "multiple of 4",
             bytes);
    return RT_ERR;
  }
  RtDevTensor src = {0}, dst = {0};
  RtStatus s = rt_tensor_alloc(&src, bytes, "bandwidth source", d);
  if (!s) s = rt_tensor_alloc(&dst, bytes, "bandwidth destination", d);
  /* Touching both buffers first keeps first-use page mapping out of the
   * measurement. */
  if (!s) s = rt_tensor_fill32(&src, 0x3f800000u, d);
  if (!s) s = rt_tensor_fill32(&dst, 0, d);
  RtTiming t;
  CopyWork w = {&dst, &src};
  if (!s) s = rt_time_work(copy_work, &w, 2, reps, &t, d);
  if (!s && t.median_ms > 0)
    *gbps = 2.0 * (double)bytes / (t.median_ms * 1e-3) / 1e9;
  rt_tensor_free(&dst);
  rt_tensor_free(&src);
  return s;
}

double rt_wall_seconds(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}
