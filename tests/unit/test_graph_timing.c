/* tests/unit/test_graph_timing.c: timing by replaying a captured CUDA graph
 * (runtime/timing.c rt_time_graph, and rt_exec_program's RT_TIME_GRAPH, as
 * bench/gop_bench.c asks for it) on the stand-in driver (fake_cuda.c): what
 * is captured (every run of every rotated set, fills and launches, in a
 * stream of its own), how many replays and calls, the time per call, the
 * choice of calls, and each failure -- a capture the driver refuses, one a
 * call invalidates, an instantiation that fails -- reported with the call
 * and the error, nothing left behind (stream, graph, instance), and the
 * driver usable afterwards. The same on a real GPU: tests/gpu/test_driver.c.
 */
#include <check.h>
#include <dlfcn.h>
#include <stdlib.h>
#include <string.h>

#include "codegen/codegen.h"
#include "graph/graph.h"
#include "lang/lang.h"
#include "runtime/runtime.h"
#include "testutil.h"

static void (*graph_stats)(long *replays, long *nodes, int *streams, int *graphs, int *execs);
static void (*fake_reset)(void);
static const char *(*fake_trace)(void);

static Arena *arena;
static Diag d;
static CgProgram prog;
static Graph *g;
static float *x, *w, *y;
static void *host[3];
static const int64_t F = 8;

static void setup(void) {
  const char *path = getenv("GOP_FAKE_CUDA");
  ck_assert_msg(path != NULL, "GOP_FAKE_CUDA is not set (ctest sets it)");
  setenv("GOP_CUDA_LIBRARY", path, 1);
  void *fake = dlopen(path, RTLD_NOW);
  ck_assert_msg(fake != NULL, "%s", dlerror());
  *(void **)&graph_stats = dlsym(fake, "fake_cuda_graph_stats");
  *(void **)&fake_reset = dlsym(fake, "fake_cuda_reset_log");
  *(void **)&fake_trace = dlsym(fake, "fake_cuda_trace");
  ck_assert(graph_stats && fake_reset && fake_trace);
  arena = ir_arena_new();
  ir_diag_init(&d, NULL);
  IrModule *lib = lang_stdlib(arena, &d);
  ck_assert_ptr_nonnull(lib);
  /* copy_u_sum's Y is a sum in memory: each run fills it, then launches */
  IrOp *op = tu_lowered(lib, ir_module_find_op(lib, "u_mul_e_sum"), "thread_edge(1, 1)", arena,
                        &d);
  ck_assert_msg(op != NULL, "%s", d.buf ? d.buf : "");
  ck_assert_msg(cg_compile(op, "sm_90", &prog, &d) == 0, "%s", d.buf ? d.buf : "");
  g = graph_generate("grid:4x3", &d);
  ck_assert_ptr_nonnull(g);
  x = calloc((size_t)(g->nv * F), sizeof *x);
  w = calloc((size_t)g->ne, sizeof *w);
  y = calloc((size_t)(g->nv * F), sizeof *y);
  for (int i = 0; i < prog.ntensors; i++)
    host[i] = !strcmp(prog.tensors[i].name, "X")   ? (void *)x
              : !strcmp(prog.tensors[i].name, "W") ? (void *)w
                                                   : (void *)y;
}

static void teardown(void) {
  unsetenv("GOP_CUDA_FAIL");
  free(x), free(w), free(y);
  graph_free(g);
  cg_program_free(&prog);
  ir_diag_free(&d);
  ir_arena_free(arena);
  rt_cuda_close();
}

#define HAS(text) \
  ck_assert_msg(d.buf && strstr(d.buf, (text)) != NULL, "no '%s' in:\n%s", (text), \
                d.buf ? d.buf : "")

/* Nothing of a capture is left: no stream, graph or instance. */
static void nothing_left(void) {
  long replays, nodes;
  int streams, graphs, execs;
  graph_stats(&replays, &nodes, &streams, &graphs, &execs);
  ck_assert_int_eq(streams, 0);
  ck_assert_int_eq(graphs, 0);
  ck_assert_int_eq(execs, 0);
}

static RtStatus exec(int sets, int calls, RtExecResult *res) {
  int64_t syms[1] = {F};
  RtExecOptions opt = {.warmup = 2, .reps = 3, .sets = sets, .timing = RT_TIME_GRAPH,
                       .graph_calls = calls};
  ir_diag_free(&d);
  ir_diag_init(&d, NULL);
  fake_reset();
  return rt_exec_program(&prog, g, syms, host, &opt, res, &d);
}

/* Work per run of the op: the fills of its outputs and temporaries that a
 * timed run makes, and its launches. */
static int nodes_per_run(void) {
  int n = prog.nkernels;
  for (int i = 0; i < prog.ntensors; i++)
    if (prog.tensors[i].role != IR_ROLE_IN &&
        !(prog.tensors[i].red == IR_RED_ASSIGN &&
          (prog.tensors[i].role == IR_ROLE_OUT || prog.tensors[i].filled)))
      n++;
  return n;
}

START_TEST(replays_a_graph_of_every_set) {
  RtExecResult res;
  ck_assert_msg(exec(3, 4, &res) == RT_OK, "%s", d.buf ? d.buf : "");
  ck_assert_int_eq(res.sets, 3);
  ck_assert_int_eq(res.timing.calls, 4);
  ck_assert_int_eq(res.timing.reps, 3);
  ck_assert(!res.graph_failed);
  /* the stand-in's 0.01 ms a replay, over 4 rounds of 3 sets */
  ck_assert_double_eq_tol(res.timing.median_ms, 0.01 / 4 / 3, 1e-9);
  long replays, nodes;
  int streams, graphs, execs;
  graph_stats(&replays, &nodes, &streams, &graphs, &execs);
  /* one replay to upload, then the timed ones; each runs 4 x 3 runs */
  ck_assert_int_eq(replays, 1 + 3);
  ck_assert_int_eq(nodes, (1 + 3) * 4 * 3 * nodes_per_run());
  nothing_left();
  /* the checked run's synchronous work, then in the stream: warm-ups,
   * the capture (b ... n) and the replays, nothing synchronous inside */
  const char *t = fake_trace();
  const char *b = strchr(t, 'b'), *n = strchr(t, 'n');
  ck_assert_msg(b && n && b < n, "trace %s", t);
  for (const char *c = b; c < n; c++)
    ck_assert_msg(*c == 'k' || *c == 'm' || *c == 'b', "a '%c' inside the capture: %s", *c, t);
  int r = 0;
  for (const char *c = n; *c; c++) r += *c == 'r';
  ck_assert_msg(r == 4, "trace %s", t);
}
END_TEST

/* calls 0: enough for about RT_GRAPH_TARGET_MS from the warm-up's time
 * (0.01 ms a round here: 100 rounds), and never more than RT_GRAPH_MAX_RUNS
 * runs of the op in one graph. */
START_TEST(chooses_and_caps_the_calls) {
  RtExecResult res;
  ck_assert_msg(exec(3, 0, &res) == RT_OK, "%s", d.buf ? d.buf : "");
  ck_assert_int_eq(res.timing.calls, (int)(RT_GRAPH_TARGET_MS / 0.01 + 0.5));
  ck_assert_msg(exec(3, 5000, &res) == RT_OK, "%s", d.buf ? d.buf : "");
  ck_assert_int_eq(res.timing.calls, RT_GRAPH_MAX_RUNS / 3);
  ck_assert_msg(exec(RT_GRAPH_MAX_RUNS / 2 + 1, 0, &res) == RT_OK, "%s", d.buf ? d.buf : "");
  ck_assert_int_eq(res.timing.calls, 1);
  nothing_left();
}
END_TEST

/* The legacy way is unchanged: events, no capture, calls 0. */
START_TEST(events_by_default) {
  int64_t syms[1] = {F};
  RtExecOptions opt = {.warmup = 1, .reps = 2, .sets = 2};
  RtExecResult res;
  fake_reset();
  ck_assert_msg(rt_exec_program(&prog, g, syms, host, &opt, &res, &d) == RT_OK, "%s",
                d.buf ? d.buf : "");
  ck_assert_int_eq(res.timing.calls, 0);
  ck_assert_ptr_null(strchr(fake_trace(), 'b'));
  ck_assert_ptr_null(strchr(fake_trace(), 'r'));
}
END_TEST

/* Each failure of the capture names the call and the error, says so in
 * the result (graph_failed: the caller may time with events instead), and
 * leaves nothing behind; the next run works. */
static void refused(const char *fail, const char *call, const char *what) {
  setenv("GOP_CUDA_FAIL", fail, 1);
  RtExecResult res;
  ck_assert_int_ne(exec(2, 3, &res), RT_OK);
  HAS(call);
  HAS(what);
  ck_assert(res.graph_failed);
  nothing_left();
  unsetenv("GOP_CUDA_FAIL");
  ck_assert_msg(exec(2, 3, &res) == RT_OK, "%s", d.buf ? d.buf : "");
  ck_assert_int_eq(res.timing.calls, 3);
  nothing_left();
}

START_TEST(begin_capture_refused) {
  refused("cuStreamBeginCapture_v2:900",
          "CUDA error in cuStreamBeginCapture_v2: CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED",
          "while starting to capture");
}
END_TEST

START_TEST(capture_invalidated) {
  refused("cuStreamEndCapture:901",
          "CUDA error in cuStreamEndCapture: CUDA_ERROR_STREAM_CAPTURE_INVALIDATED",
          "while ending the capture of 3 calls");
}
END_TEST

START_TEST(instantiate_refused) {
  refused("cuGraphInstantiateWithFlags:2", "CUDA error in cuGraphInstantiateWithFlags",
          "while instantiating the captured CUDA graph");
}
END_TEST

START_TEST(replay_refused) {
  refused("cuGraphLaunch:999", "CUDA error in cuGraphLaunch",
          "while replaying the captured CUDA graph");
}
END_TEST

START_TEST(no_stream) {
  refused("cuStreamCreate:2", "CUDA error in cuStreamCreate",
          "while making a stream to capture a CUDA graph in");
}
END_TEST

/* With events_fallback (gopc run, gopc tune, gop_bench), a failed capture
 * is not the run's failure: the runs are timed with events, the result
 * says why in graph_note, and no error is reported. A lost context is
 * still the error. */
static RtStatus exec_fallback(RtExecResult *res) {
  int64_t syms[1] = {F};
  RtExecOptions opt = {.warmup = 2, .reps = 3, .timing = RT_TIME_GRAPH, .graph_calls = 3,
                       .events_fallback = true};
  ir_diag_free(&d);
  ir_diag_init(&d, NULL);
  fake_reset();
  return rt_exec_program(&prog, g, syms, host, &opt, res, &d);
}

static void fallback(const char *fail, const char *call) {
  setenv("GOP_CUDA_FAIL", fail, 1);
  RtExecResult res;
  ck_assert_msg(exec_fallback(&res) == RT_OK, "%s: %s", fail, d.buf ? d.buf : "");
  ck_assert_int_eq(d.nerrors, 0);
  ck_assert(res.graph_failed);
  ck_assert_msg(strstr(res.graph_note, call) != NULL, "note: %s", res.graph_note);
  ck_assert_ptr_null(strchr(res.graph_note, '\n'));
  ck_assert_int_eq(res.timing.calls, 0); /* events */
  ck_assert_int_eq(res.timing.reps, 3);
  nothing_left();
  unsetenv("GOP_CUDA_FAIL");
  ck_assert_msg(exec_fallback(&res) == RT_OK, "%s", d.buf ? d.buf : "");
  ck_assert(!res.graph_failed);
  ck_assert_int_eq(res.timing.calls, 3);
}

START_TEST(events_where_begin_capture_fails) {
  fallback("cuStreamBeginCapture_v2:900", "cuStreamBeginCapture_v2");
}
END_TEST

START_TEST(events_where_end_capture_fails) {
  fallback("cuStreamEndCapture:901", "cuStreamEndCapture");
}
END_TEST

START_TEST(events_where_instantiate_fails) {
  fallback("cuGraphInstantiateWithFlags:2", "cuGraphInstantiateWithFlags");
}
END_TEST

START_TEST(no_fallback_once_the_context_is_lost) {
  setenv("GOP_CUDA_FAIL", "cuGraphLaunch:700", 1); /* an illegal address: sticky */
  RtExecResult res;
  ck_assert_int_ne(exec_fallback(&res), RT_OK);
  HAS("CUDA error in cuGraphLaunch: CUDA_ERROR_ILLEGAL_ADDRESS");
  ck_assert(!res.graph_failed);
  ck_assert_int_eq(res.timing.reps, 0);
}
END_TEST

/* A call that cannot be captured (a synchronous fill) fails inside the
 * capture with the driver's error, the note says where, the capture is
 * ended and dropped, and the stream is given back. */
typedef struct Sync {
  RtDevTensor t;
  int runs;
} Sync;

static RtStatus sync_fill(void *ctx, void *stream, Diag *dd) {
  Sync *s = ctx;
  s->runs++;
  return rt_tensor_fill32(&s->t, 0, dd);
}

START_TEST(uncapturable_call) {
  Sync s = {.runs = 0};
  ck_assert_int_eq(rt_tensor_alloc(&s.t, 64, "tensor probe", &d), RT_OK);
  RtTiming t;
  ck_assert_int_eq(rt_time_graph(sync_fill, &s, 5, 5, 2, 3, &t, &d), RT_ERR);
  HAS("CUDA error in cuMemsetD32_v2: CUDA_ERROR_STREAM_CAPTURE_IMPLICIT");
  HAS("the call failed while being captured into a CUDA graph for timing");
  ck_assert_int_eq(s.runs, 2 + 1); /* two warm-ups, the first captured call */
  nothing_left();
  /* the driver is fine: the same fill outside a capture works */
  ck_assert_int_eq(rt_tensor_fill32(&s.t, 1, &d), RT_OK);
  rt_tensor_free(&s.t);
}
END_TEST

START_TEST(argument_checks) {
  RtTiming t;
  ck_assert_int_eq(rt_time_graph(sync_fill, NULL, 1, 1, 0, 0, &t, &d), RT_ERR);
  HAS("cannot time 0 replays of a graph of 1 calls");
  ck_assert_int_eq(rt_time_graph(sync_fill, NULL, 0, 0, 0, 1, &t, &d), RT_ERR);
  ck_assert_int_eq(rt_time_graph(sync_fill, NULL, -1, 4, 0, 1, &t, &d), RT_ERR);
}
END_TEST

int main(void) {
  Suite *s = suite_create("graph_timing");
  TCase *t = tcase_create("replay");
  tcase_add_checked_fixture(t, setup, teardown);
  tcase_add_test(t, replays_a_graph_of_every_set);
  tcase_add_test(t, chooses_and_caps_the_calls);
  tcase_add_test(t, events_by_default);
  tcase_add_test(t, begin_capture_refused);
  tcase_add_test(t, capture_invalidated);
  tcase_add_test(t, instantiate_refused);
  tcase_add_test(t, replay_refused);
  tcase_add_test(t, no_stream);
  tcase_add_test(t, events_where_begin_capture_fails);
  tcase_add_test(t, events_where_end_capture_fails);
  tcase_add_test(t, events_where_instantiate_fails);
  tcase_add_test(t, no_fallback_once_the_context_is_lost);
  tcase_add_test(t, uncapturable_call);
  tcase_add_test(t, argument_checks);
  suite_add_tcase(s, t);
  return tu_run(s);
}
