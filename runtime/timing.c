/* runtime/timing.c: measuring GPU work with CUDA events.
 *
 * The work to time is a closure, so the same loop times a kernel, a copy or
 * a whole operator. The repetitions are queued back to back with an event
 * between each two, and the host waits once at the end: the GPU never idles
 * waiting for the next launch, so the times are the GPU's, not the launch
 * latency's. The median summarises them, as one slow repetition (the first,
 * which may start on an idle GPU, or one that met a clock change) must not
 * move the result.
 *
 * That holds while a call takes the GPU longer than the host takes to queue
 * it. A call of a few microseconds (a small graph) is shorter than its own
 * launch, so the queue runs dry and the events time the host; its times
 * then moved by 15% between identical runs. rt_time_graph captures many
 * calls into one CUDA graph and times replays of it instead: one launch
 * for all of them, so the GPU runs them back to back whatever the host
 * does (bench/README.md, Timing).
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cuda.def"

static const Loc no_loc = {0};

static RtStatus event_loop(RtWorkFn step, void *ctx, CUstream stream, int reps, double per,
                           RtTiming *out, Diag *d);

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

  return event_loop(fn, ctx, NULL, reps, 1, out, d);
}

/* The event loop of both methods: `reps` calls of `step` (each a whole
 * repetition), an event between each two, recorded in `stream`; each time
 * divided by `per`, then summarised into `out`. */
static RtStatus event_loop(RtWorkFn step, void *ctx, CUstream stream, int reps, double per,
                           RtTiming *out, Diag *d) {
  int nev = reps + 1;
  CUevent *ev = calloc((size_t)nev, sizeof *ev);
  double *ms = calloc((size_t)reps, sizeof *ms);
  if (!ev || !ms) {
    free(ev);
    free(ms);
    ir_error(d, no_loc, "out of host memory timing %d repetitions", reps);
    return RT_ERR;
  }
  RtStatus s = RT_OK;
  int created = 0; /* events to destroy, whatever happens below */
  while (created < nev &&
         !(s = RT_CU(cuEventCreate, (&ev[created], CU_EVENT_DEFAULT))))
    created++;
  if (!s) s = RT_CU(cuEventRecord, (ev[0], stream));
  for (int i = 0; i < reps && !s; i++) {
    s = step(ctx, d);
    if (!s) s = RT_CU(cuEventRecord, (ev[i + 1], stream));
  }
  if (!s)
    s = RT_CU_WHAT("while waiting for the timed work to finish",
                   cuEventSynchronize, (ev[reps]));
  for (int i = 0; i < reps && !s; i++) {
    float t = 0;
    s = RT_CU(cuEventElapsedTime_v2, (&t, ev[i], ev[i + 1]));
    ms[i] = t / per;
  }
  for (int i = 0; i < created; i++) rt_cuda_api()->cuEventDestroy_v2(ev[i]);
  if (!s) summarise(ms, reps, out);
  free(ev);
  free(ms);
  return s;
}

/* ---- graph replay ---- */

typedef struct GraphRun {
  RtStreamWorkFn fn;
  void *ctx;
  CUstream stream;
  CUgraphExec exec;
} GraphRun;

static RtStatus replay(void *ctx, Diag *d) {
  GraphRun *g = ctx;
  return RT_CU_WHAT("while replaying the captured CUDA graph", cuGraphLaunch,
                    (g->exec, g->stream));
}

static RtStatus eager(void *ctx, Diag *d) {
  GraphRun *g = ctx;
  return g->fn(g->ctx, g->stream, d);
}

/* Calls of `g` to capture so that one replay lasts about RT_GRAPH_TARGET_MS
 * (at most `max_calls`), from the time of `n` eager calls queued back to
 * back in its stream (the warm-up). */
static RtStatus choose_calls(GraphRun *g, int n, int max_calls, int *calls, Diag *d) {
  RtTiming t;
  RtStatus s = event_loop(eager, g, g->stream, n, 1, &t, d);
  if (s) return s;
  /* (less a millionth: event times are floats, and a quotient just over a
   * whole number must not take one more call) */
  double c = t.median_ms > 0 ? ceil(RT_GRAPH_TARGET_MS / t.median_ms * (1 - 1e-6)) : max_calls;
  *calls = c < 1 ? 1 : c > max_calls ? max_calls : (int)c;
  return RT_OK;
}

RtStatus rt_time_graph(RtStreamWorkFn fn, void *ctx, int calls, int max_calls, int warmup,
                       int reps, RtTiming *out, Diag *d) {
  memset(out, 0, sizeof *out);
  if (reps < 1 || warmup < 0 || calls < 0 || (calls == 0 && max_calls < 1)) {
    ir_error(d, no_loc,
             "cannot time %d replays of a graph of %d calls (at most %d) after %d warm-up "
             "runs: need at least one replay, a positive number of calls (or 0 and a "
             "positive limit) and no negative count",
             reps, calls, max_calls, warmup);
    return RT_ERR;
  }
  RtStatus s = rt_cuda_open(d);
  if (s) return s;
  GraphRun g = {fn, ctx, NULL, NULL};
  CUgraph graph = NULL;
  /* captures need a stream of their own: the legacy stream cannot be
   * captured, and a blocking stream would wait for it */
  if ((s = RT_CU_WHAT("while making a stream to capture a CUDA graph in", cuStreamCreate,
                      (&g.stream, CU_STREAM_NON_BLOCKING))))
    return s;
  /* Eager runs first, in the same stream: module loads and first-touch
   * costs stay out of the capture, and where the calls are to be counted,
   * they give the time one takes. */
  for (int i = 0; i < (warmup > 1 ? warmup : 1) && !s; i++) s = fn(ctx, g.stream, d);
  if (!s && calls == 0) s = choose_calls(&g, 3, max_calls, &calls, d);
  if (!s)
    s = RT_CU_WHAT("while waiting for the warm-up runs before a capture", cuStreamSynchronize,
                   (g.stream));
  if (!s)
    s = RT_CU_WHAT("while starting to capture the timed calls into a CUDA graph",
                   cuStreamBeginCapture_v2, (g.stream, CU_STREAM_CAPTURE_MODE_THREAD_LOCAL));
  if (!s) {
    for (int i = 0; i < calls && !s; i++) s = fn(ctx, g.stream, d);
    /* The capture ends whatever happened, or the stream stays capturing.
     * A call that cannot be captured (it waits for the host, or allocates)
     * fails itself or invalidates the capture, which ending it reports. */
    char what[160];
    snprintf(what, sizeof what,
             "while ending the capture of %d calls into a CUDA graph (a call that cannot be "
             "captured invalidates it)",
             calls);
    CUresult r = rt_cuda_inject("cuStreamEndCapture")
                     ?: rt_cuda_api()->cuStreamEndCapture(g.stream, &graph);
    if (!s)
      s = rt_cuda_check(r, "cuStreamEndCapture", what, d);
    else /* the call's own failure came first: say where it happened */
      ir_note(d, no_loc, "the call failed while being captured into a CUDA graph for timing");
    if (s && graph) {
      rt_cuda_api()->cuGraphDestroy(graph);
      graph = NULL;
    }
  }
  if (!s)
    s = RT_CU_WHAT("while instantiating the captured CUDA graph", cuGraphInstantiateWithFlags,
                   (&g.exec, graph, 0));
  /* one replay uploads the graph; then the timed ones, back to back */
  if (!s) s = replay(&g, d);
  if (!s) s = event_loop(replay, &g, g.stream, reps, calls, out, d);
  if (!s) out->calls = calls;
  if (g.exec) rt_cuda_api()->cuGraphExecDestroy(g.exec);
  if (graph) rt_cuda_api()->cuGraphDestroy(graph);
  /* work may still be queued after a failure: destroying the stream lets
   * it finish first */
  rt_cuda_api()->cuStreamDestroy_v2(g.stream);
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
