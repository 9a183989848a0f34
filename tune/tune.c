/* tune/tune.c: the autotuner: measure the best candidates on the GPU.
 *
 * The legal points of the operator's space (tune/space.c) are ranked by
 * the cost model (tune/model.c) and measured in that order until the
 * budget is spent, the list ends, or the caller's stop flag is set (by a
 * SIGINT handler: the candidate being measured is finished, and what was
 * found is kept). A thread compiles candidates ahead (schedule, lower,
 * LLVM, PTX: a kernel pack in memory) while the GPU measures the previous
 * one; it has its own arena and diagnostics, and only reads the operator.
 *
 * Every candidate's output is checked before it may win, and a wrong one
 * is reported and never stored, however fast:
 *  - on graphs of at most `check_edges` edges, against the reference
 *    interpreter's output on the same graph and inputs;
 *  - on larger graphs, where the interpreter takes minutes, each candidate
 *    is first run on a proxy graph (R-MAT, 2^12 vertices, 32K edges,
 *    skewed; its edges numbered in CSR order when the graph's are, since
 *    the candidates are compiled for the graph's edge order) and checked
 *    against the interpreter there, then its output
 *    on the real graph is compared with the anchor's: the first candidate
 *    that passed both. The anchor itself is checked on the proxy graph
 *    only, so a bug that shows only at scale and hits every candidate the
 *    same way would go unseen; the report says which check was made.
 * The rules are gop_run_check's: sums within 1e-5 relative L2 (an f16, bf16
 * or f64 output: ir_check_limit of its dtype), max and min
 * exactly, NaN never equal; against the interpreter, an element that is a
 * sum of n stored terms may first differ by 2 sqrt(n) 2^-24 sum|terms| (a
 * summation in another order; interp_sum_allowance). Against the anchor,
 * which has no interpreter's count of terms, there is no such allowance.
 *
 * Each verified measurement is stored at once, in its own transaction, so
 * an interrupted or killed run keeps every completed candidate.
 */
#define _GNU_SOURCE
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "codegen/codegen.h"
#include "passes/passes.h"
#include "graph/graph.h"
#include "interp/interp.h"
#include "runtime/runtime.h"
#include "tune/tune.h"

static const Loc tune_loc = {"tune", 0, 0};

/* ---- compiling ahead ---- */

enum { AHEAD = 3 }; /* kernel packs compiled ahead of the measurement */

typedef struct Slot {
  CgProgram prog;
  int rc;          /* 0 compiled; else `why` says why not */
  char why[300];
  double compile_ms;
} Slot;

typedef struct Compiler {
  const IrOp *op;
  const IrModule *lib;
  const char *target;
  CgLayout layout;  /* the graph's (rt_index_bits, rt_csr_edges) */
  const TunePoint *pts;
  int n;
  Slot *slots;      /* one per candidate */
  int produced;     /* slots [0, produced) are ready */
  int consumed;     /* the measurer has taken [0, consumed) */
  bool quit;
  pthread_mutex_t lock;
  pthread_cond_t cond;
} Compiler;

/* The first line of an error in `d`, without its location. */
static void first_error(const Diag *d, char *out, size_t size) {
  const char *reason;
  int len = ir_diag_reason(d, &reason);
  snprintf(out, size, "%.*s", len, reason);
}

static void compile_one(Compiler *c, int i, Slot *out) {
  Arena *a = ir_arena_new();
  Diag d;
  ir_diag_init(&d, NULL);
  double t0 = rt_wall_seconds();
  IrOp *op = pass_op_copy(c->op, a);
  out->rc = pass_schedule_text(op, c->lib, c->pts[i].text, a, &d);
  if (out->rc == 0) out->rc = pass_lower(op, a, &d, NULL, NULL);
  if (out->rc == 0) out->rc = cg_compile_layout(op, c->target, c->layout, &out->prog, &d);
  out->compile_ms = (rt_wall_seconds() - t0) * 1e3;
  if (out->rc != 0) first_error(&d, out->why, sizeof out->why);
  ir_diag_free(&d);
  ir_arena_free(a);
}

static void *compiler_main(void *arg) {
  Compiler *c = arg;
  for (int i = 0; i < c->n; i++) {
    pthread_mutex_lock(&c->lock);
    while (!c->quit && i - c->consumed >= AHEAD) pthread_cond_wait(&c->cond, &c->lock);
    bool quit = c->quit;
    pthread_mutex_unlock(&c->lock);
    if (quit) break;
    Slot s = {0};
    compile_one(c, i, &s);
    pthread_mutex_lock(&c->lock);
    c->slots[i] = s;
    c->produced = i + 1;
    pthread_cond_broadcast(&c->cond);
    pthread_mutex_unlock(&c->lock);
  }
  return NULL;
}

/* Waits for candidate i's pack; hands it over (the slot is emptied). */
static Slot take(Compiler *c, int i) {
  pthread_mutex_lock(&c->lock);
  while (c->produced <= i) pthread_cond_wait(&c->cond, &c->lock);
  Slot s = c->slots[i];
  memset(&c->slots[i], 0, sizeof c->slots[i]);
  c->consumed = i + 1;
  pthread_cond_broadcast(&c->cond);
  pthread_mutex_unlock(&c->lock);
  return s;
}

/* ---- checking ---- */

/* Compares each output of `got` with `ref` (gop_run_check's rules; `allow`,
 * if not NULL, the allowance of each element by tensor id). Returns 0 when
 * all agree, else 1 with the reason in `why`. */
static int compare(const CgProgram *p, const IrOp *op, const Graph *g, const IrExtents *ext,
                   void *const *got, void *const *ref, float *const *allow, double *worst,
                   char *why, size_t size) {
  *worst = 0;
  for (int i = 0; i < op->ntensors; i++) {
    const IrTensor *t = op->tensors[i];
    if (t->role != IR_ROLE_OUT) continue;
    int64_t n = graph_tensor_numel(t, g, ext);
    bool exact = i < p->ntensors && (p->tensors[i].red == IR_RED_MAX ||
                                     p->tensors[i].red == IR_RED_MIN);
    double limit = ir_check_limit(t->dtype);
    double diff2 = 0, ref2 = 0, worst_abs = -1;
    int64_t at = -1;
    for (int64_t k = 0; k < n; k++) {
      double a = ir_elem_get(t->dtype, got[i], k), b = ir_elem_get(t->dtype, ref[i], k);
      if (isnan(a) || isnan(b)) {
        snprintf(why, size, "%s[%lld] is NaN (got %g, reference %g)", t->name, (long long)k,
                 a, b);
        return 1;
      }
      double dd = fabs(a - b);
      if (!exact && allow && allow[i]) dd = fmax(0, dd - allow[i][k]);
      diff2 += dd * dd;
      ref2 += b * b;
      if (dd > worst_abs) {
        worst_abs = dd;
        at = k;
      }
    }
    double rel = ref2 > 0 ? sqrt(diff2 / ref2) : sqrt(diff2);
    if (rel > *worst) *worst = rel;
    if (at >= 0 && (exact ? worst_abs > 0 : rel >= limit)) {
      snprintf(why, size, "%s differs (relative L2 %.3g%s%s%g); worst at element %lld: got %.9g, "
               "reference %.9g", t->name, rel, allow ? " beyond the summation allowance" : "",
               exact ? ", max/min must match exactly" : ", limit ", exact ? 0.0 : limit,
               (long long)at, ir_elem_get(t->dtype, got[i], at),
               ir_elem_get(t->dtype, ref[i], at));
      return 1;
    }
  }
  return 0;
}

/* Buffers by tensor id: the given inputs, fresh outputs; NULL elsewhere. */
static void **make_buffers(const IrOp *op, const Graph *g, const IrExtents *ext,
                           void *const *inputs, int ntensors) {
  void **b = calloc((size_t)ntensors + 1, sizeof *b);
  if (!b) return NULL;
  for (int i = 0; i < op->ntensors && i < ntensors; i++) {
    const IrTensor *t = op->tensors[i];
    if (t->role == IR_ROLE_IN) {
      b[i] = inputs[i];
    } else if (t->role == IR_ROLE_OUT) {
      int64_t n = graph_tensor_numel(t, g, ext);
      b[i] = malloc((size_t)ir_dtype_bytes(t->dtype) * (size_t)(n > 0 ? n : 1));
      if (!b[i]) return NULL; /* leaks little; the caller gives up */
    }
  }
  return b;
}

static void free_outputs(const IrOp *op, void **b) {
  if (!b) return;
  for (int i = 0; i < op->ntensors; i++)
    if (op->tensors[i]->role == IR_ROLE_OUT) free(b[i]);
  free(b);
}

/* f32 arrays of each output's size, by tensor id (the allowances). */
static float **allow_buffers(const IrOp *op, const Graph *g, const IrExtents *ext) {
  float **b = calloc((size_t)op->ntensors + 1, sizeof *b);
  if (!b) return NULL;
  for (int i = 0; i < op->ntensors; i++) {
    if (op->tensors[i]->role != IR_ROLE_OUT) continue;
    int64_t n = graph_tensor_numel(op->tensors[i], g, ext);
    b[i] = malloc(sizeof(float) * (size_t)(n > 0 ? n : 1));
    if (!b[i]) return NULL; /* leaks little; the caller gives up */
  }
  return b;
}

/* The interpreter's outputs for `inputs` on `g` (native mode: each tensor in
 * its dtype), and in *allow the allowance of each of their elements
 * (interp_sum_allowance; f32's unit roundoff, scaled to f64's when the op
 * accumulates in f64); NULL after reporting. */
static void **reference(const IrOp *op, const Graph *g, const IrExtents *ext,
                        void *const *inputs, float ***allow, Diag *d) {
  void **b = make_buffers(op, g, ext, inputs, op->ntensors);
  float **al = allow_buffers(op, g, ext);
  InterpTerms *terms = calloc((size_t)op->ntensors + 1, sizeof *terms);
  bool ok = b && al && terms;
  for (int i = 0; ok && i < op->ntensors; i++) {
    if (op->tensors[i]->role != IR_ROLE_OUT) continue;
    int64_t n = graph_tensor_numel(op->tensors[i], g, ext);
    terms[i].n = malloc(sizeof(uint32_t) * (size_t)(n > 0 ? n : 1));
    terms[i].abs = malloc(sizeof(double) * (size_t)(n > 0 ? n : 1));
    ok = terms[i].n && terms[i].abs;
  }
  if (!ok) ir_error(d, tune_loc, "out of memory for the reference outputs");
  InterpArgs args = {.graph = g, .extents = *ext, .mode = INTERP_NATIVE,
                     .buffers = b, .terms = terms};
  if (ok && interp_run(op, &args, d) != 0) ok = false;
  double scale = op->acc == IR_DT_F64 ? 0x1p-29 : 1;
  for (int i = 0; terms && i < op->ntensors; i++) {
    if (ok && op->tensors[i]->role == IR_ROLE_OUT) {
      int64_t n = graph_tensor_numel(op->tensors[i], g, ext);
      for (int64_t k = 0; k < n; k++)
        al[i][k] = (float)(scale * interp_sum_allowance(terms[i].n[k], terms[i].abs[k]));
    }
    free(terms[i].n);
    free(terms[i].abs);
  }
  free(terms);
  if (!ok) {
    free_outputs(op, b);
    free_outputs(op, (void **)al);
    return NULL;
  }
  *allow = al;
  return b;
}

/* splitmix64, as gopc run fills its inputs */
static float next_uniform(uint64_t *state) {
  uint64_t z = (*state += 0x9e3779b97f4a7c15ULL);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  z ^= z >> 31;
  return (float)((double)(z >> 11) * 0x1.0p-53 * 2.0 - 1.0);
}

/* ---- the tuner ---- */

static int by_outcome_then_time(const void *a, const void *b) {
  const TuneResult *x = a, *y = b;
  if (x->outcome != y->outcome) return (int)x->outcome - (int)y->outcome;
  if (x->outcome == TUNE_OK && x->median_ms != y->median_ms)
    return x->median_ms < y->median_ms ? -1 : 1;
  return x->order - y->order;
}

static bool stop_requested(const TuneJob *job) { return job->stop && *job->stop; }

/* The proxy graph a large graph's candidates are first checked on: R-MAT
 * 12/8 laid out as g is, since the candidates are compiled for g's layout
 * and a kernel refuses a graph of another: its edges renumbered in CSR
 * order when g's are, and run with 64-bit indices when g's need them. */
Graph *tune_proxy_graph(const Graph *g, Diag *d) {
  Graph *p = graph_open("rmat:12:8:7", d);
  if (p && rt_csr_edges(g) && !p->csr_edges) {
    Graph *q = graph_reorder(p, "none", d);
    graph_free(p);
    p = q;
  }
  if (p) p->index64 = rt_index_bits(g) == 64;
  return p;
}

RtStatus tune_run(const TuneJob *job, TuneReport *rep, Diag *d) {
  memset(rep, 0, sizeof *rep);
  double t_start = rt_wall_seconds();
  RtStatus s = rt_cuda_open(d);
  if (s != RT_OK) return s;
  snprintf(rep->device, sizeof rep->device, "%s", rt_cuda_device_name());
  const IrOp *op = job->op;

  /* The space, in the model's order. */
  Arena *arena = ir_arena_new();
  TuneOpShape shape;
  tune_op_shape(op, &shape);
  /* sig keys the database; msig is what the model reads (tune.h) */
  TuneGraphSig sig, msig;
  tune_graph_sig(job->g, &sig);
  tune_graph_sig_for(job->g, op, &msig);
  TunePoint *pts = NULL;
  int n = tune_space_enumerate(op, job->lib, arena, &pts, d);
  if (n < 0) {
    ir_arena_free(arena);
    return RT_ERR;
  }
  n = tune_space_buildable(pts, n);
  if (n == 0) {
    ir_error(d, op->loc, "no named schedule applies to operator %s: nothing to tune", op->name);
    free(pts);
    ir_arena_free(arena);
    return RT_ERR;
  }
  tune_model_rank(&shape, pts, n, &msig, job->F);
  /* The other named schedules: the lane model's (tune/model.c), ranked
   * by it, and then the rest, ranked among themselves. The lane model's
   * best eight come first (the default choice is its first: the tuner
   * starts from what gop would run untuned); then the others take every
   * other place with the strategies, which the model costs on another
   * scale. */
  TunePoint *named = NULL;
  int nn = tune_space_named(op, job->lib, arena, &named, d);
  if (nn > 0) nn = tune_space_buildable(named, nn);
  if (nn > 0) {
    tune_model_rank(&shape, named, nn, &msig, job->F);
    int nl = 0; /* stable partition: lane-model points first */
    for (int i = 0; i < nn; i++)
      if (named[i].lanes && shape.feature_loop) {
        TunePoint t = named[i];
        memmove(&named[nl + 1], &named[nl], sizeof *named * (size_t)(i - nl));
        named[nl++] = t;
      }
    TunePoint *all = malloc(sizeof *all * (size_t)(n + nn));
    if (all) {
      int k = 0, j = 0;
      while (j < nl && j < 8) all[k++] = named[j++];
      for (int i = 0; i < n || j < nn;) {
        if (i < n) all[k++] = pts[i++];
        if (j < nn) all[k++] = named[j++];
      }
      free(pts);
      pts = all;
      n += nn;
    }
  }
  free(named);
  rep->candidates = n;
  if (job->max_candidates > 0 && n > job->max_candidates) n = job->max_candidates;
  rep->results = calloc((size_t)n, sizeof *rep->results);
  if (!rep->results) {
    free(pts);
    ir_arena_free(arena);
    ir_error(d, tune_loc, "out of memory");
    return RT_ERR;
  }

  /* The target: as asked, else the GPU's. */
  char target[16];
  snprintf(target, sizeof target, "sm_%d", rt_cuda_cc());
  if (job->target) snprintf(target, sizeof target, "%s", job->target);
  else if (!cg_target_known(target)) snprintf(target, sizeof target, "%s", CG_DEFAULT_TARGET);

  /* The reference, and the proxy graph on large graphs. */
  RtStatus status = RT_OK;
  void **ref = NULL, **proxy_ref = NULL, **proxy_in = NULL, **anchor = NULL;
  float **ref_allow = NULL, **proxy_allow = NULL;
  Graph *proxy = NULL;
  bool full = job->g->ne <= job->check_edges;
  rep->check = full ? TUNE_CHECK_INTERPRETER : TUNE_CHECK_PROXY_AND_ANCHOR;
  if (job->progress) {
    TuneProgress pr = {.phase = full ? "computing the reference on the interpreter"
                                     : "computing the proxy graph's reference",
                       .total = n, .budget_s = job->budget_s};
    job->progress(job->progress_ctx, &pr);
  }
  if (full) {
    ref = reference(op, job->g, &job->ext, job->inputs, &ref_allow, d);
    if (!ref) status = RT_ERR;
  } else {
    proxy = tune_proxy_graph(job->g, d);
    proxy_in = proxy ? calloc((size_t)op->ntensors + 1, sizeof *proxy_in) : NULL;
    uint64_t state = 12345;
    for (int i = 0; proxy_in && i < op->ntensors; i++) {
      if (op->tensors[i]->role != IR_ROLE_IN) continue;
      int64_t k = graph_tensor_numel(op->tensors[i], proxy, &job->ext);
      IrDType dt = op->tensors[i]->dtype;
      proxy_in[i] = malloc((size_t)ir_dtype_bytes(dt) * (size_t)(k > 0 ? k : 1));
      if (!proxy_in[i]) break;
      for (int64_t j = 0; j < k; j++) ir_elem_put(dt, proxy_in[i], j, next_uniform(&state));
    }
    proxy_ref = proxy_in ? reference(op, proxy, &job->ext, proxy_in, &proxy_allow, d) : NULL;
    if (!proxy_ref) status = RT_ERR;
  }
  double t_measure = rt_wall_seconds();
  rep->reference_s = t_measure - t_start;

  Compiler c = {.op = op, .lib = job->lib, .target = target,
                .layout = {rt_index_bits(job->g), rt_csr_edges(job->g)}, .pts = pts, .n = n};
  c.slots = calloc((size_t)n, sizeof *c.slots);
  pthread_mutex_init(&c.lock, NULL);
  pthread_cond_init(&c.cond, NULL);
  pthread_t thread;
  bool started = status == RT_OK && c.slots &&
                 pthread_create(&thread, NULL, compiler_main, &c) == 0;
  if (status == RT_OK && !started) {
    ir_error(d, tune_loc, "cannot start the compiling thread");
    status = RT_ERR;
  }

  TuneKey key = {.op_hash = tune_op_hash(op),
                 .F = shape.feature_loop ? job->F : 0,
                 .dtype = ir_op_dtype_key(op),
                 .graph = sig,
                 .gpu = rep->device,
                 .cc = rt_cuda_cc(),
                 .compiler = job->compiler,
                 .op_name = op->name,
                 .shape = &shape};
  double best_ms = INFINITY;
  int best = -1, fails_in_row = 0;
  for (int i = 0; i < n && status == RT_OK; i++) {
    double elapsed = rt_wall_seconds() - t_measure;
    if (stop_requested(job)) {
      rep->interrupted = true;
      break;
    }
    if (elapsed >= job->budget_s) {
      rep->out_of_budget = true;
      break;
    }
    TuneResult *r = &rep->results[rep->n++];
    r->order = i;
    snprintf(r->schedule, sizeof r->schedule, "%s", pts[i].text);
    TuneCost cost;
    tune_model_cost(&shape, &pts[i], &msig, job->F, &cost);
    r->model_us = cost.time_us;
    if (job->progress) {
      TuneProgress pr = {.done = i, .total = n, .elapsed_s = elapsed, .budget_s = job->budget_s,
                         .current = r->schedule, .best_ms = best >= 0 ? best_ms : 0,
                         .best = best >= 0 ? rep->results[best].schedule : NULL};
      job->progress(job->progress_ctx, &pr);
    }
    Slot slot = take(&c, i);
    r->compile_ms = slot.compile_ms;
    if (slot.rc != 0) {
      r->outcome = TUNE_FAILED;
      snprintf(r->why, sizeof r->why, "does not compile: %s", slot.why);
      rep->failed++;
      continue;
    }
    Diag rd; /* a failing candidate is a result, not the tuner's error */
    ir_diag_init(&rd, NULL);
    void **out = make_buffers(op, job->g, &job->ext, job->inputs, slot.prog.ntensors);
    void **pout = proxy ? make_buffers(op, proxy, &job->ext, proxy_in, slot.prog.ntensors)
                         : NULL;
    RtExecResult res = {0};
    RtStatus rs = out && (!proxy || pout) ? RT_OK : RT_ERR;
    if (rs != RT_OK) ir_error(&rd, tune_loc, "out of host memory for the outputs");
    double worst = 0;
    char why[300] = "";
    int wrong = 0;
    if (rs == RT_OK && proxy) { /* the proxy check comes first: it is cheap */
      RtExecOptions once = {0};
      RtExecResult pres = {0};
      rs = rt_exec_program(&slot.prog, proxy, job->ext.value, pout, &once, &pres, &rd);
      if (rs == RT_OK &&
          (wrong = compare(&slot.prog, op, proxy, &job->ext, pout, proxy_ref, proxy_allow,
                           &worst, why, sizeof why)) != 0) {
        char tmp[300];
        snprintf(tmp, sizeof tmp, "on the proxy graph rmat:12:8:7, against the interpreter: %.240s",
                 why);
        snprintf(why, sizeof why, "%s", tmp);
      }
    }
    if (rs == RT_OK && !wrong) {
      /* replays of a captured CUDA graph: a call of a few microseconds is
       * timed without the launch gaps that made events move by 15% */
      RtExecOptions opt = {.warmup = job->warmup, .reps = job->reps, .slow_ms = 200,
                           .timing = RT_TIME_GRAPH, .events_fallback = true};
      rs = rt_exec_program(&slot.prog, job->g, job->ext.value, out, &opt, &res, &rd);
    }
    if (rs == RT_OK && !wrong) {
      double w2 = 0;
      void *const *against = full ? ref : anchor;
      if (against)
        wrong = compare(&slot.prog, op, job->g, &job->ext, out, against,
                        full ? ref_allow : NULL, &w2, why, sizeof why);
      if (wrong && !full) {
        char tmp[300];
        snprintf(tmp, sizeof tmp, "against the anchor %.60s: %.200s", rep->anchor, why);
        snprintf(why, sizeof why, "%s", tmp);
      }
      if (w2 > worst) worst = w2;
    }
    if (rs != RT_OK) {
      r->outcome = TUNE_FAILED;
      first_error(&rd, why, sizeof why);
      snprintf(r->why, sizeof r->why, "failed on the GPU: %s", why);
      rep->failed++;
      fails_in_row++;
    } else if (wrong) {
      r->outcome = TUNE_WRONG;
      snprintf(r->why, sizeof r->why, "%s", why);
      rep->wrong++;
      fails_in_row = 0;
    } else {
      fails_in_row = 0;
      r->outcome = TUNE_OK;
      r->worst_rel = worst;
      r->median_ms = res.timing.median_ms;
      r->min_ms = res.timing.min_ms;
      r->gbps = res.gbps;
      r->bound_fraction = res.copy_gbps > 0 ? res.gbps / res.copy_gbps : 0;
      rep->fewest_bytes = res.fewest_bytes;
      rep->copy_gbps = res.copy_gbps;
      rep->measured++;
      if (!full && !anchor) { /* the first verified candidate anchors the rest */
        anchor = out;
        out = NULL;
        snprintf(rep->anchor, sizeof rep->anchor, "%s", r->schedule);
      }
      if (r->median_ms < best_ms) {
        best_ms = r->median_ms;
        best = rep->n - 1;
      }
      if (job->db) {
        TuneRecord rec = {.time_ms = r->median_ms, .gbps = r->gbps,
                          .bound_fraction = r->bound_fraction, .have_facts = true,
                          .atomic_rows = pts[i].atomic_rows,
                          .atomic_scalars = pts[i].atomic_scalars, .kernels = pts[i].kernels,
                          .warp = pts[i].warp, .vertex = pts[i].vertex};
        snprintf(rec.schedule, sizeof rec.schedule, "%s", r->schedule);
        if (tune_db_put(job->db, &key, &rec, d) == 0) {
          r->stored = true;
          rep->stored++;
        } else {
          status = RT_ERR; /* the database is the point: stop, keep what is stored */
        }
      }
    }
    ir_diag_free(&rd);
    free_outputs(op, out);
    free_outputs(op, pout);
    cg_program_free(&slot.prog);
    /* After a sticky error every later launch fails too: stop early. */
    if (fails_in_row >= 3) {
      ir_error(d, tune_loc, "three candidates in a row failed on the GPU (the last: %s); "
               "stopping", r->why);
      status = RT_ERR;
    }
  }
  if (started) {
    pthread_mutex_lock(&c.lock);
    c.quit = true;
    pthread_cond_broadcast(&c.cond);
    pthread_mutex_unlock(&c.lock);
    pthread_join(thread, NULL);
  }
  for (int i = 0; c.slots && i < n; i++) cg_program_free(&c.slots[i].prog);
  free(c.slots);
  pthread_mutex_destroy(&c.lock);
  pthread_cond_destroy(&c.cond);
  if (status == RT_OK && !rep->interrupted && stop_requested(job)) rep->interrupted = true;
  qsort(rep->results, (size_t)rep->n, sizeof *rep->results, by_outcome_then_time);
  rep->seconds = rt_wall_seconds() - t_start;
  free_outputs(op, ref);
  free_outputs(op, proxy_ref);
  free_outputs(op, (void **)ref_allow);
  free_outputs(op, (void **)proxy_allow);
  free_outputs(op, anchor);
  for (int i = 0; proxy_in && i < op->ntensors; i++)
    if (op->tensors[i]->role == IR_ROLE_IN) free(proxy_in[i]);
  free(proxy_in);
  graph_free(proxy);
  free(pts);
  ir_arena_free(arena);
  return status;
}

void tune_report_free(TuneReport *rep) {
  free(rep->results);
  memset(rep, 0, sizeof *rep);
}
