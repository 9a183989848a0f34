/* tests/unit/test_threads.c: gop from 8 threads at once (docs/threads.md).
 *
 * On the interpreter: 8 threads share one context, two graphs and the
 * operators, each with runs of its own and inputs of its own, calling
 * gop_run_exec over and over, and gop_choose_schedule on a shared tuning
 * database; every output must equal, bit for bit, what one thread
 * computed alone before. Then 8 threads with a context each (the
 * process-wide parts: the driver, the module cache, packs, the parser).
 * On the stand-in driver: 8 threads share one context and its graphs'
 * device copies and group tables, each launching in a stream of its own;
 * every launch must succeed, each stream must receive exactly its
 * thread's launches, and the graph must be uploaded once, not per thread.
 *
 * GOP_THREAD_ITERS sets the iterations per thread (default 25), and
 * GOP_THREAD_DEVICE_ITERS the device case's launches per thread (default
 * 4x that); tools/tsan.sh runs the test under ThreadSanitizer.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "gop.h"
#include "tune/tune.h"
#include "testutil.h"

enum { THREADS = 8 };

static int iters(void) {
  const char *s = getenv("GOP_THREAD_ITERS");
  int n = s ? atoi(s) : 0;
  return n > 0 ? n : 25;
}

/* Launches per thread of the device case: cheap, so they may be many more
 * than the interpreter's runs (GOP_THREAD_DEVICE_ITERS; default 4x). */
static int device_iters(void) {
  const char *s = getenv("GOP_THREAD_DEVICE_ITERS");
  int n = s ? atoi(s) : 0;
  return n > 0 ? n : 4 * iters();
}

/* What each thread runs: an operator, a schedule, a graph. */
typedef struct Job {
  const char *op, *schedule, *graph;
  int64_t F;
} Job;

static const Job jobs[THREADS] = {
    {"u_mul_e_sum", NULL, "rmat:9:8", 8},
    {"u_mul_e_sum", "spmm_groups(4, 4)", "rmat:9:8", 8},
    {"copy_u_sum", "warp_vertex(1, 1)", "grid:16x16", 4},
    {"edge_softmax", NULL, "rmat:9:8", 0},
    {"u_mul_e_sum", "thread_edge(1, 1)", "grid:16x16", 16},
    {"copy_u_sum", NULL, "rmat:9:8", 8},
    {"u_mul_e_sum", "spmm_groups(4, 4)", "grid:16x16", 8},
    {"edge_softmax", NULL, "grid:16x16", 0},
};

typedef struct Shared {
  GopContext *ctx; /* NULL: each thread makes its own */
  GopGraph *graphs[2];
  const char *db_path;
} Shared;

/* Per thread: its run and its buffers. */
typedef struct Worker {
  int id;
  Shared *sh;
  GopContext *ctx;
  GopRun *run;
  int n;
  float *buf[8];
  int64_t numel[8];
  float *want[8]; /* the outputs one thread computed alone */
  char chosen[128];
  int errors;
  char why[512];
} Worker;

static GopGraph *graph_of(Shared *sh, GopContext *ctx, const Job *j) {
  if (sh->ctx) return sh->graphs[strcmp(j->graph, "rmat:9:8") == 0 ? 0 : 1];
  return gop_graph_open(ctx, j->graph);
}

/* Makes the thread's run and inputs (deterministic in its id). */
static void worker_init(Worker *w) {
  const Job *j = &jobs[w->id];
  GopGraph *g = graph_of(w->sh, w->ctx, j);
  w->run = gop_run_new(w->ctx, gop_module_find_op(gop_stdlib(w->ctx), j->op), g);
  ck_assert_ptr_nonnull(w->run);
  if (j->schedule)
    ck_assert_int_eq(gop_run_set_compile(w->run, &(GopCompileOptions){.schedule = j->schedule}),
                     0);
  if (j->F) ck_assert_int_eq(gop_run_set_extent(w->run, "F", j->F), 0);
  gop_run_set_device(w->run, GOP_DEVICE_INTERP);
  w->n = gop_run_num_tensors(w->run);
  uint64_t seed = 1000 + (uint64_t)w->id;
  for (int i = 0; i < w->n; i++) {
    int64_t shape[8], numel = 1;
    int rank = gop_run_tensor_shape(w->run, i, shape);
    for (int d = 0; d < rank; d++) numel *= shape[d];
    w->numel[i] = numel;
    w->buf[i] = calloc((size_t)numel + 1, sizeof(float));
    if (!gop_run_tensor_is_output(w->run, i))
      for (int64_t k = 0; k < numel; k++)
        w->buf[i][k] = (float)(tu_lcg(&seed) % 2000) / 1000.0f - 1.0f;
    ck_assert_int_eq(gop_run_bind(w->run, gop_run_tensor_name(w->run, i), w->buf[i], numel), 0);
  }
}

static int worker_step(Worker *w) {
  for (int i = 0; i < w->n; i++)
    if (gop_run_tensor_is_output(w->run, i)) memset(w->buf[i], 0xff, (size_t)w->numel[i] * 4);
  if (gop_run_exec(w->run) != 0) {
    snprintf(w->why, sizeof w->why, "exec: %s", gop_diagnostics(w->ctx));
    return -1;
  }
  return 0;
}

static void choose(Worker *w, char out[128]) {
  const Job *j = &jobs[w->id];
  GopScheduleChoice c;
  int rc = gop_choose_schedule(gop_run_op(w->run), gop_run_graph(w->run), j->F ? j->F : 1,
                               w->sh->db_path, &c);
  snprintf(out, 128, "%d %.100s", rc, rc >= 0 ? c.schedule : gop_diagnostics(w->ctx));
}

static void *worker_main(void *arg) {
  Worker *w = arg;
  if (!w->sh->ctx) { /* a context of its own: set up here, in the thread */
    w->ctx = gop_context_new();
    worker_init(w);
  }
  for (int it = 0; it < iters() && !w->errors; it++) {
    if (worker_step(w) != 0) {
      w->errors++;
      break;
    }
    for (int i = 0; i < w->n; i++)
      if (w->want[i] && memcmp(w->want[i], w->buf[i], (size_t)w->numel[i] * 4) != 0) {
        snprintf(w->why, sizeof w->why, "iteration %d: output %s differs from one thread's", it,
                 gop_run_tensor_name(w->run, i));
        w->errors++;
      }
    if (it % 5 == 0 && w->sh->db_path) {
      char got[128];
      choose(w, got);
      if (strcmp(got, w->chosen) != 0) {
        snprintf(w->why, sizeof w->why, "choice '%s', alone '%s'", got, w->chosen);
        w->errors++;
      }
    }
  }
  if (!w->sh->ctx) gop_context_free(w->ctx);
  return NULL;
}

/* A tuning database with one measured row for jobs[0]'s key, so that
 * gop_choose_schedule reads it (the rest fall back to the cost model). */
static const char *make_db(GopContext *ctx, GopRun *r) {
  static char path[512];
  snprintf(path, sizeof path, "%s/threads.db", tu_tmpdir());
  Diag d;
  ir_diag_init(&d, NULL);
  TuneDb *db = tune_db_open(path, &d);
  ck_assert_msg(db != NULL, "%s", d.buf);
  tune_db_close(db);
  ir_diag_free(&d);
  (void)ctx, (void)r;
  return path;
}

/* Runs jobs in `THREADS` threads on `sh`, after computing each worker's
 * outputs alone; fails with the first difference. */
static void run_interp(Shared *sh) {
  Worker w[THREADS];
  memset(w, 0, sizeof w);
  for (int t = 0; t < THREADS; t++) {
    w[t].id = t;
    w[t].sh = sh;
    w[t].ctx = sh->ctx ? sh->ctx : gop_context_new();
    worker_init(&w[t]);
    ck_assert_msg(worker_step(&w[t]) == 0, "%s", w[t].why);
    for (int i = 0; i < w[t].n; i++)
      if (gop_run_tensor_is_output(w[t].run, i)) {
        w[t].want[i] = malloc((size_t)w[t].numel[i] * 4);
        memcpy(w[t].want[i], w[t].buf[i], (size_t)w[t].numel[i] * 4);
      }
    if (sh->db_path) choose(&w[t], w[t].chosen);
    if (!sh->ctx) { /* the thread makes its own again, in the thread */
      gop_context_free(w[t].ctx);
      for (int i = 0; i < w[t].n; i++) free(w[t].buf[i]);
    }
  }
  pthread_t th[THREADS];
  for (int t = 0; t < THREADS; t++) ck_assert_int_eq(pthread_create(&th[t], NULL, worker_main, &w[t]), 0);
  for (int t = 0; t < THREADS; t++) pthread_join(th[t], NULL);
  for (int t = 0; t < THREADS; t++) {
    ck_assert_msg(w[t].errors == 0, "thread %d (%s): %s", t, jobs[t].op, w[t].why);
    for (int i = 0; i < w[t].n; i++) {
      free(w[t].want[i]);
      free(w[t].buf[i]);
    }
  }
}

START_TEST(interp_one_context) {
  setenv("GOP_CUDA_LIBRARY", "/nonexistent/libcuda.so", 1);
  Shared sh = {.ctx = gop_context_new()};
  sh.graphs[0] = gop_graph_open(sh.ctx, "rmat:9:8");
  sh.graphs[1] = gop_graph_open(sh.ctx, "grid:16x16");
  sh.db_path = make_db(sh.ctx, NULL);
  run_interp(&sh);
  gop_context_free(sh.ctx);
}
END_TEST

START_TEST(interp_context_per_thread) {
  setenv("GOP_CUDA_LIBRARY", "/nonexistent/libcuda.so", 1);
  Shared sh = {.db_path = make_db(NULL, NULL)};
  run_interp(&sh);
}
END_TEST

/* ---- the stand-in driver: device runs in a stream per thread ---- */

static uint64_t (*fake_alloc_on)(int, size_t);
static int (*fake_free)(uint64_t);
static long (*fake_stream_launches)(int);
static void (*fake_reset)(void);
static size_t (*fake_used)(int *);

static void use_fake_driver(void) {
  const char *path = getenv("GOP_FAKE_CUDA");
  ck_assert_msg(path != NULL, "GOP_FAKE_CUDA is not set (ctest sets it)");
  setenv("GOP_CUDA_LIBRARY", path, 1);
  void *fake = dlopen(path, RTLD_NOW);
  ck_assert_msg(fake != NULL, "%s", dlerror());
  *(void **)&fake_alloc_on = dlsym(fake, "fake_cuda_alloc_on");
  *(void **)&fake_free = dlsym(fake, "cuMemFree_v2");
  *(void **)&fake_stream_launches = dlsym(fake, "fake_cuda_stream_launches");
  *(void **)&fake_reset = dlsym(fake, "fake_cuda_reset_log");
  *(void **)&fake_used = dlsym(fake, "fake_cuda_used");
  ck_assert(fake_alloc_on && fake_free && fake_stream_launches && fake_reset && fake_used);
}

typedef struct DevWorker {
  int id;
  GopContext *ctx;
  GopRun *run;
  int n;
  GopDevicePtr ptr[8];
  long per_launch; /* kernels one launch queues, counted alone */
  int errors;
  char why[512];
} DevWorker;

static void *stream_of(int t) { return (void *)(uintptr_t)(0x1000 + 0x10 * t); }

static void *dev_main(void *arg) {
  DevWorker *w = arg;
  for (int it = 0; it < device_iters() && !w->errors; it++) {
    if (gop_run_launch_ptrs(w->run, w->ptr, w->n, stream_of(w->id)) != 0) {
      snprintf(w->why, sizeof w->why, "launch %d: %s", it, gop_diagnostics(w->ctx));
      w->errors++;
    }
    if (it % 10 == 9 && gop_run_sync(w->run) != 0) {
      snprintf(w->why, sizeof w->why, "sync %d: %s", it, gop_diagnostics(w->ctx));
      w->errors++;
    }
  }
  return NULL;
}

START_TEST(device_runs_stream_per_thread) {
  use_fake_driver();
  GopContext *ctx = gop_context_new();
  GopGraph *graphs[2] = {gop_graph_open(ctx, "rmat:9:8"), gop_graph_open(ctx, "grid:16x16")};
  GopModule *std_ = gop_stdlib(ctx);
  DevWorker w[THREADS];
  memset(w, 0, sizeof w);
  /* each alone first: what one launch queues, and everything uploaded */
  for (int t = 0; t < THREADS; t++) {
    const Job *j = &jobs[t];
    w[t].id = t;
    w[t].ctx = ctx;
    GopGraph *g = graphs[strcmp(j->graph, "rmat:9:8") == 0 ? 0 : 1];
    w[t].run = gop_run_new(ctx, gop_module_find_op(std_, j->op), g);
    if (j->schedule)
      ck_assert_int_eq(gop_run_set_compile(w[t].run, &(GopCompileOptions){.schedule = j->schedule}),
                       0);
    if (j->F) ck_assert_int_eq(gop_run_set_extent(w[t].run, "F", j->F), 0);
    w[t].n = gop_run_num_tensors(w[t].run);
    for (int i = 0; i < w[t].n; i++) {
      int64_t shape[8], numel = 1;
      int rank = gop_run_tensor_shape(w[t].run, i, shape);
      for (int d = 0; d < rank; d++) numel *= shape[d];
      w[t].ptr[i] = fake_alloc_on(0, (size_t)numel * 4);
    }
    fake_reset();
    ck_assert_msg(gop_run_launch_ptrs(w[t].run, w[t].ptr, w[t].n, stream_of(t)) == 0, "%s",
                  gop_diagnostics(ctx));
    w[t].per_launch = fake_stream_launches(t);
    ck_assert_int_gt(w[t].per_launch, 0);
  }
  int allocs_before;
  size_t used_before = fake_used(&allocs_before);
  fake_reset();
  pthread_t th[THREADS];
  for (int t = 0; t < THREADS; t++) ck_assert_int_eq(pthread_create(&th[t], NULL, dev_main, &w[t]), 0);
  for (int t = 0; t < THREADS; t++) pthread_join(th[t], NULL);
  long total = 0;
  for (int t = 0; t < THREADS; t++) {
    ck_assert_msg(w[t].errors == 0, "thread %d (%s): %s", t, jobs[t].op, w[t].why);
    ck_assert_int_eq(fake_stream_launches(t), w[t].per_launch * device_iters());
    total += w[t].per_launch * device_iters();
  }
  ck_assert_int_eq(fake_stream_launches(-1), total);
  /* nothing was uploaded or allocated again: the graphs' device copies,
   * their group tables and the runs' temporaries are shared or kept */
  int allocs_after;
  ck_assert_uint_eq(fake_used(&allocs_after), used_before);
  ck_assert_int_eq(allocs_after, allocs_before);
  gop_context_free(ctx);
  for (int t = 0; t < THREADS; t++)
    for (int i = 0; i < w[t].n; i++) fake_free(w[t].ptr[i]);
  ck_assert_uint_eq(fake_used(NULL), 0);
}
END_TEST

/* Host-copy runs (gop_run_exec on the GPU) from 8 threads, several
 * contexts: runtime/'s process-wide graph cache and module cache. */
static void *exec_main(void *arg) {
  DevWorker *w = arg;
  for (int it = 0; it < iters() / 5 + 1 && !w->errors; it++)
    if (gop_run_exec(w->run) != 0) {
      snprintf(w->why, sizeof w->why, "exec %d: %s", it, gop_diagnostics(w->ctx));
      w->errors++;
    }
  return NULL;
}

START_TEST(host_copy_runs_context_per_thread) {
  use_fake_driver();
  DevWorker w[THREADS];
  memset(w, 0, sizeof w);
  float *bufs[THREADS][8];
  for (int t = 0; t < THREADS; t++) {
    const Job *j = &jobs[t];
    w[t].id = t;
    w[t].ctx = gop_context_new();
    GopGraph *g = gop_graph_open(w[t].ctx, j->graph);
    w[t].run = gop_run_new(w[t].ctx, gop_module_find_op(gop_stdlib(w[t].ctx), j->op), g);
    if (j->schedule)
      ck_assert_int_eq(gop_run_set_compile(w[t].run, &(GopCompileOptions){.schedule = j->schedule}),
                       0);
    if (j->F) ck_assert_int_eq(gop_run_set_extent(w[t].run, "F", j->F), 0);
    gop_run_set_device(w[t].run, GOP_DEVICE_GPU);
    gop_run_set_timing(w[t].run, 0, 1);
    w[t].n = gop_run_num_tensors(w[t].run);
    for (int i = 0; i < w[t].n; i++) {
      int64_t shape[8], numel = 1;
      int rank = gop_run_tensor_shape(w[t].run, i, shape);
      for (int d = 0; d < rank; d++) numel *= shape[d];
      bufs[t][i] = calloc((size_t)numel, 4);
      gop_run_bind(w[t].run, gop_run_tensor_name(w[t].run, i), bufs[t][i], numel);
    }
  }
  pthread_t th[THREADS];
  for (int t = 0; t < THREADS; t++) ck_assert_int_eq(pthread_create(&th[t], NULL, exec_main, &w[t]), 0);
  for (int t = 0; t < THREADS; t++) pthread_join(th[t], NULL);
  for (int t = 0; t < THREADS; t++) {
    ck_assert_msg(w[t].errors == 0, "thread %d (%s): %s", t, jobs[t].op, w[t].why);
    gop_context_free(w[t].ctx);
    for (int i = 0; i < w[t].n; i++) free(bufs[t][i]);
  }
  ck_assert_uint_eq(fake_used(NULL), 0);
}
END_TEST

int main(void) {
  Suite *s = suite_create("threads");
  TCase *t = tcase_create("threads");
  tcase_set_timeout(t, 1200);
  tcase_add_test(t, interp_one_context);
  tcase_add_test(t, interp_context_per_thread);
  tcase_add_test(t, device_runs_stream_per_thread);
  tcase_add_test(t, host_copy_runs_context_per_thread);
  suite_add_tcase(s, t);
  return tu_run(s);
}
