/* api/tune.c: choosing and tuning schedules: the tuning database, the cost model, the
 * learned predictor and the tuner (tune/), behind the API.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "codegen/codegen.h"
#include "graph/graph.h"
#include "passes/passes.h"
#include "runtime/runtime.h"
#include "tune/tune.h"

#include "api/api.h"

/* ---- tuning ---- */

const char *gop_schedule_source_name(GopScheduleSource s) {
  return s == GOP_SCHEDULE_FROM_DATABASE    ? "database"
         : s == GOP_SCHEDULE_FROM_PREDICTOR ? "predictor"
         : s == GOP_SCHEDULE_FROM_BUILTIN   ? "built-in predictor"
         : s == GOP_SCHEDULE_NONE           ? "default mapping"
                                            : "cost model";
}

/* The learned predictor's choice among `pts` (ranked by its trees): the
 * database's own model (DB.xgb beside it) when there is one, else the
 * model built into gop (tune/builtin.model) unless GOP_PREDICTOR is "off";
 * either only for an operator of a shape and dtype it was trained on. 1
 * when it chose (pts re-sorted; *builtin says whose model), 0 when
 * skipped (`note` says why: also a built-in model that does not parse,
 * which test_tune_predict refuses to ship), -1 after reporting a model
 * file that is refused or a GOP_PREDICTOR that is neither "builtin" nor
 * "off". No
 * libxgboost is needed: tune/trees.c evaluates the trees. */
static int predict_choice(GopContext *ctx, const char *db_path, const TuneShapeKey *key,
                          const TuneOpShape *shape, TunePoint *pts, int n,
                          const TuneGraphSig *sig, int64_t F, bool *builtin, char *note,
                          size_t size) {
  TunePredictor *own = NULL;
  const TunePredictor *p = NULL;
  char *path = db_path ? tune_predictor_path(db_path) : NULL;
  FILE *probe = path ? fopen(path, "rb") : NULL;
  *builtin = false;
  if (probe) {
    fclose(probe);
    own = tune_predictor_load(path, &ctx->diag);
    free(path);
    if (!own) return -1;
    p = own;
  } else {
    free(path);
    const char *env = getenv("GOP_PREDICTOR");
    if (env && *env && strcmp(env, "builtin") != 0 && strcmp(env, "off") != 0) {
      ir_error(&ctx->diag, (Loc){"GOP_PREDICTOR", 0, 0},
               "'%s' is neither 'builtin' (the default: the model built into gop) nor 'off' "
               "(the cost model alone)",
               env);
      return -1;
    }
    if (env && strcmp(env, "off") == 0) {
      snprintf(note, size, "predictor off (GOP_PREDICTOR=off)");
      return 0;
    }
    Diag why; /* a build whose model does not parse (tests catch it) */
    ir_diag_init(&why, NULL);
    p = tune_predictor_builtin(&why);
    if (!p) {
      const char *reason;
      int len = ir_diag_reason(&why, &reason);
      snprintf(note, size, "predictor skipped: %.*s", len, reason);
      ir_diag_free(&why);
      return 0;
    }
    ir_diag_free(&why);
    *builtin = true;
  }
  int rc;
  if (!tune_predictor_has_shape(p, key)) {
    snprintf(note, size,
             "predictor skipped: %s was not trained on an operator of this shape in %s",
             own ? "the database's model" : "the built-in model", key->dtype);
    rc = 0;
  } else {
    rc = tune_predictor_rank(p, shape, pts, n, sig, F, NULL) == 0 ? 1 : -1;
  }
  tune_predictor_free(own);
  return rc;
}

static int choose_schedule(const GopOp *op, const GopGraph *g, int64_t F, const char *db_path,
                           GopScheduleChoice *out, Arena *scratch);

/* The fused kernel only where the model sees a clear win: its step is one
 * measured constant, and near a tie the default mapping (what runs without
 * a schedule) is the safer side (soc-Slashdot0902: 0.91 of the default's
 * estimate, measured 1.09x slower). */
static const double FUSED_MARGIN = 0.8;

/* An operator of `stages` stages that fuse into one kernel (fuse_stages:
 * edge softmax) takes softmax_rows(T) at the T the model finds fastest
 * where that is clearly fastest; else, where a hub's team would serialise
 * the fused kernel, softmax_teams(32, 4) (hubs split over groups of 32
 * in-edges, each on a team of 4 lanes, a kernel per stage; `groups_ok`:
 * the graph's edge ids are in CSR order, `csr_edges`, which the fused
 * estimate reads too, and it has group tables) when its estimate is below
 * the default mapping's, else the default mapping (tune_model_fused_us,
 * tune_model_teams_us, tune_model_unfused_us). The group shape is fixed:
 * on 18 graphs in CSR order on an H200 (32, 4) was within 1.06x of the
 * best of eight shapes in geometric mean (worst 1.26x), where the model's
 * pick among them was 1.12x. The general model ranks this shape's
 * schedules backwards (Spearman -0.41 over the 14 shared graphs on an
 * H200, and its pick was 6.5x the best in geometric mean). Sets
 * out->schedule ("" for the default mapping), model_us and note; false
 * when the stages do not fuse. */
enum { TEAMS_G = 32, TEAMS_T = 4 };

static bool fused_choice(const GopOp *op, int stages, const TuneGraphSig *sig, bool csr_edges,
                         bool groups_ok, GopScheduleChoice *out, Arena *scratch) {
  const IrModule *lib = api_schedule_library(op->module->ctx, op->module);
  TunePoint p;
  if (tune_point_make(op->ir, lib, "softmax_rows(32)", scratch, &p, NULL) != 0) return false;
  int best = 32;
  double fused = tune_model_fused_us(sig, stages, best, csr_edges);
  for (int T = 1; T < 32; T *= 2) {
    double t = tune_model_fused_us(sig, stages, T, csr_edges);
    if (t < fused) best = T, fused = t;
  }
  double teams = INFINITY;
  char text[64];
  snprintf(text, sizeof text, "softmax_teams(%d, %d)", TEAMS_G, TEAMS_T);
  if (groups_ok && tune_point_make(op->ir, lib, text, scratch, &p, NULL) == 0)
    teams = tune_model_teams_us(sig, stages, TEAMS_G, TEAMS_T);
  double unfused = tune_model_unfused_us(sig, stages);
  if (fused < FUSED_MARGIN * fmin(unfused, teams)) {
    snprintf(out->schedule, sizeof out->schedule, "softmax_rows(%d)", best);
    out->model_us = fused;
    snprintf(out->note, sizeof out->note, "%d stages fused into one kernel (%.1f us against "
             "the default mapping's %.1f)", stages, fused, unfused);
  } else if (teams < unfused) {
    snprintf(out->schedule, sizeof out->schedule, "%s", text);
    out->model_us = teams;
    snprintf(out->note, sizeof out->note, "neighbour groups of %d in-edges on %d lanes each, a "
             "kernel a stage (%.1f us against fused %.1f, with the heaviest destination's %lld "
             "in-edges, and the default mapping's %.1f)", TEAMS_G, TEAMS_T, teams, fused,
             (long long)sig->deg_max, unfused);
  } else {
    out->schedule[0] = 0;
    out->model_us = unfused;
    snprintf(out->note, sizeof out->note, "the default mapping: fused, with the heaviest "
             "destination's %lld in-edges, %.1f us, not clearly below its %.1f; neighbour "
             "groups %.1f", (long long)sig->deg_max, fused, unfused, teams);
  }
  return true;
}

/* The candidates' scheduled copies go to a scratch arena freed on return:
 * in the context's arena they took about 58 MB a call for u_mul_e_sum's
 * 339 points, kept until the context was freed, so a framework choosing
 * per layer and step ran out of host memory (docs/reliability.md). */
int gop_choose_schedule(const GopOp *op, const GopGraph *g, int64_t F, const char *db_path,
                        GopScheduleChoice *out) {
  API_LOCK(op ? op->module->ctx : NULL);
  Arena *scratch = ir_arena_new();
  int rc = choose_schedule(op, g, F, db_path, out, scratch);
  ir_arena_free(scratch);
  return rc;
}

/* Whether there is a GPU (quietly: no GPU only means that no measurement
 * can match). */
static bool gpu_found(void) {
  Diag quiet;
  ir_diag_init(&quiet, NULL);
  bool gpu = rt_cuda_open(&quiet) == RT_OK;
  ir_diag_free(&quiet);
  return gpu;
}

/* The database key of `op` on a graph of signature `sig` at width F, on
 * the GPU found (or "none"). */
static void op_key(const GopOp *op, const TuneOpShape *shape, const TuneGraphSig *sig,
                   int64_t F, bool gpu, TuneKey *key) {
  *key = (TuneKey){.op_hash = tune_op_hash(op->ir),
                   .F = shape->feature_loop ? F : 0,
                   .dtype = ir_op_dtype_key(op->ir),
                   .graph = *sig,
                   .gpu = gpu ? rt_cuda_device_name() : "none",
                   .cc = gpu ? rt_cuda_cc() : 0,
                   .compiler = GOP_VERSION};
}

/* The key of `op` on `g` at width F on the GPU found (there is one). */
static void order_key(const GopOp *op, const GopGraph *g, int64_t F, TuneKey *key) {
  TuneGraphSig sig;
  tune_graph_sig(g->rt, &sig);
  TuneOpShape shape;
  tune_op_shape(op->ir, &shape);
  op_key(op, &shape, &sig, F, true, key);
}

static bool measured_ms(double ms) { return ms > 0 && isfinite(ms); }

const char *gop_vertex_order_problem(const char *order) {
  if (!order || !*order) return "an empty order";
  if (strcmp(order, "none") == 0) return NULL;
  if (strcmp(order, "auto") == 0)
    return "auto picks an order by a rule; name the orders to measure (none, degree, rcm, "
           "metis, community)";
  const char *why = gop_reorder_method_problem(order);
  return why && strstr(why, "unknown method")
             ? "unknown order: choose none, degree, rcm, metis[:PARTS] or community"
             : why;
}

int gop_tune_store_order(const GopOp *op, const GopGraph *g, int64_t F, const char *db_path,
                         const char *order, const char *schedule, double time_ms) {
  API_LOCK(op ? op->module->ctx : NULL);
  if (!op || !g || !db_path || !schedule) {
    if (op) ir_error(&op->module->ctx->diag, api_loc, "gop_tune_store_order: %s is NULL",
                     !g ? "the graph" : !db_path ? "the database path" : "the schedule");
    return -1;
  }
  GopContext *ctx = op->module->ctx;
  const char *why = gop_vertex_order_problem(order);
  if (why) {
    ir_error(&ctx->diag, api_loc, "vertex order '%s': %s", order ? order : "", why);
    return -1;
  }
  if (!measured_ms(time_ms)) {
    ir_error(&ctx->diag, api_loc, "vertex order %s: a time of %g ms is not a measurement",
             order, time_ms);
    return -1;
  }
  if (!gpu_found()) {
    ir_error(&ctx->diag, api_loc, "cannot store a measured vertex order without the GPU "
             "that measured it");
    return -1;
  }
  TuneKey key;
  order_key(op, g, F, &key);
  TuneOrder o = {.time_ms = time_ms};
  snprintf(o.order, sizeof o.order, "%s", order);
  snprintf(o.schedule, sizeof o.schedule, "%s", schedule);
  TuneDb *db = tune_db_open(db_path, &ctx->diag);
  int rc = db ? tune_db_put_order(db, &key, &o, &ctx->diag) : -1;
  tune_db_close(db);
  return rc;
}

int gop_choose_order(const GopOp *op, const GopGraph *g, int64_t F, const char *db_path,
                     GopOrderChoice *out) {
  API_LOCK(op ? op->module->ctx : NULL);
  if (out) memset(out, 0, sizeof *out);
  if (!op || !g || !db_path || !out) {
    if (op) ir_error(&op->module->ctx->diag, api_loc, "gop_choose_order: %s is NULL",
                     !g ? "the graph" : !db_path ? "the database path" : "out");
    return -1;
  }
  GopContext *ctx = op->module->ctx;
  TuneDb *db = tune_db_open(db_path, &ctx->diag);
  if (!db) return -1;
  if (!gpu_found()) { /* no GPU: no measurement can match */
    tune_db_close(db);
    return 0;
  }
  TuneKey key;
  order_key(op, g, F, &key);
  enum { MAX_ORDERS = 64 };
  TuneOrder orders[MAX_ORDERS];
  int n = tune_db_orders(db, &key, orders, MAX_ORDERS, &ctx->diag);
  tune_db_close(db);
  if (n <= 0) return n;
  int kept = n < MAX_ORDERS ? n : MAX_ORDERS;
  for (int i = 0; i < kept; i++) { /* the file is the user's: check what it says */
    const char *why = gop_vertex_order_problem(orders[i].order);
    if (!why && !measured_ms(orders[i].time_ms))
      why = "its time is not a positive number of milliseconds";
    if (why) {
      ir_error(&ctx->diag, (Loc){db_path, 0, 0},
               "tuning database: the vertex order '%s' stored for %s on this graph is not "
               "one gop takes: %s", orders[i].order, gop_op_name(op), why);
      return -1;
    }
    if (strcmp(orders[i].order, "none") == 0) out->own_ms = orders[i].time_ms;
  }
  snprintf(out->order, sizeof out->order, "%s", orders[0].order);
  snprintf(out->schedule, sizeof out->schedule, "%s", orders[0].schedule);
  out->time_ms = orders[0].time_ms;
  out->orders = n;
  return 1;
}

/* Whether `schedule` runs `op` on the reversed graph: transpose() written
 * in it or in a named schedule it calls (false where it does not apply). */
static bool runs_reversed(const GopOp *op, const char *schedule, Arena *a) {
  Diag quiet; /* a schedule that does not apply is no error here */
  ir_diag_init(&quiet, NULL);
  IrOp *c = pass_op_copy(op->ir, a);
  bool reversed = pass_schedule_text(c, api_schedule_library(op->module->ctx, op->module),
                                     schedule, a, &quiet) == 0 && c->transposed;
  ir_diag_free(&quiet);
  return reversed;
}

static int choose_schedule(const GopOp *op, const GopGraph *g, int64_t F, const char *db_path,
                           GopScheduleChoice *out, Arena *scratch) {
  GopContext *ctx = op->module->ctx;
  memset(out, 0, sizeof *out);
  /* sig keys the tuning database (the graph's); msig is what the model
   * and the predictor read (the out-degrees for an operator walking
   * out-edges: tune_graph_sig_for) */
  TuneGraphSig sig, msig;
  tune_graph_sig(g->rt, &sig);
  /* a graph built on the device has no host CSC to take the out-degrees'
   * spread from: its reversed graph's in-degrees are those
   * (gop_graph_set_reversed) */
  if (g->reversed && tune_op_walks_out_edges(op->ir))
    tune_graph_sig(g->reversed->rt, &msig);
  else
    tune_graph_sig_for(g->rt, op->ir, &msig);
  TuneOpShape shape;
  tune_op_shape(op->ir, &shape);
  TunePoint *pts = NULL;
  /* a graph built on the device without a builder of its group tables
   * takes no neighbour groups (gop_graph_set_group_builder: it has no host
   * CSR to build them from). Kernels of 64-bit indices do: at the 32-bit
   * kernels' occupancy they run within 1.04x of them (docs/index64.md). */
  bool no_groups = g->rt->device_only && !g->group_builder;
  /* a graph built on the device runs transposed schedules on the reversed
   * graph it was given (gop_graph_set_reversed), else on none */
  bool no_reversed = g->rt->device_only && !g->reversed;
  int n = tune_space_choice(op->ir, api_schedule_library(ctx, op->module), no_groups,
                            no_reversed, scratch, &pts, &ctx->diag);
  if (n < 0) return -1;
  if (n == 0) { /* not an error: the caller runs the default mapping */
    free(pts);
    out->source = GOP_SCHEDULE_NONE;
    return GOP_NO_SCHEDULE;
  }
  tune_model_rank(&shape, pts, n, &msig, F);
  out->source = GOP_SCHEDULE_FROM_MODEL;
  out->candidates = n;
  TuneShapeKey skey;
  tune_shape_key(&shape, ir_op_dtype_key(op->ir), &skey);
  bool builtin;
  int p = predict_choice(ctx, db_path, &skey, &shape, pts, n, &msig, F, &builtin, out->note,
                         sizeof out->note);
  if (p < 0) {
    free(pts);
    return -1;
  }
  if (p > 0) out->source = builtin ? GOP_SCHEDULE_FROM_BUILTIN : GOP_SCHEDULE_FROM_PREDICTOR;
  TuneCost cost;
  int stages = pass_stage_count(op->ir);
  /* neighbour groups per stage only where the graph has group tables and
   * its edge ids are in CSR order: in any other order a group's scores are
   * gathered and its outputs scattered by edge id, a sector per edge, and
   * on generated graphs of random edge order (R-MAT 18-20, power-law)
   * softmax_groups measured 1.3-2.6x the default mapping's time
   * (bench/results/2026-11-29-H200-edge-softmax-groups) */
  bool csr_edges = rt_csr_edges(g->rt);
  if (p == 0 && fused_choice(op, stages, &msig, csr_edges, csr_edges && !no_groups, out, scratch)) {
    if (!out->schedule[0]) out->source = GOP_SCHEDULE_NONE;
  } else if (p == 0 && stages > 1) {
    /* The general model is fitted on one-stage aggregations and sees no
     * extent but F: on GAT's attention (H, C) its picks (thread_vertex on
     * skewed graphs) measured 3.7-450x slower than the operator's named
     * schedule on an H200, a thread walking a hub's edges in each stage
     * (bench/results/2026-11-29-H200-gat-attention-pyg). The default
     * mapping, an edge or a warp per edge, has no such walk. */
    out->source = GOP_SCHEDULE_NONE;
    out->schedule[0] = 0;
    out->model_us = 0;
    snprintf(out->note, sizeof out->note, "the default mapping: the cost model is not "
             "calibrated for operators of %d stages (name a schedule, or tune)", stages);
  } else {
    tune_model_cost(&shape, &pts[0], &msig, F, &cost);
    snprintf(out->schedule, sizeof out->schedule, "%s", pts[0].text);
    out->model_us = cost.time_us;
  }
  free(pts);
  int none = out->source == GOP_SCHEDULE_NONE ? GOP_NO_SCHEDULE : 0;
  if (!db_path) return none;

  TuneDb *db = tune_db_open(db_path, &ctx->diag);
  if (!db) return -1;
  TuneKey key;
  op_key(op, &shape, &sig, F, gpu_found(), &key);
  TuneRecord best;
  int found = tune_db_get_best(db, &key, &best, &ctx->diag);
  tune_db_close(db);
  if (found < 0) return -1;
  /* a schedule on the reversed graph, tuned where there was one, cannot
   * run on a graph built on the device without it: the pick above stays */
  if (found > 0 && no_reversed && runs_reversed(op, best.schedule, scratch)) {
    snprintf(out->note, sizeof out->note, "the database's %.60s runs on the reversed graph, "
             "which this graph built on the device lacks", best.schedule);
    found = 0;
  }
  if (found) {
    snprintf(out->schedule, sizeof out->schedule, "%s", best.schedule);
    out->source = GOP_SCHEDULE_FROM_DATABASE;
    out->note[0] = 0;
    out->measured_ms = best.time_ms;
    none = 0;
    TunePoint p;
    if (tune_point_make(op->ir, api_schedule_library(ctx, op->module), best.schedule, scratch,
                        &p, NULL) == 0) {
      tune_model_cost(&shape, &p, &msig, F, &cost);
      out->model_us = cost.time_us;
    } else {
      out->model_us = 0; /* a schedule the model does not know */
    }
  }
  return none;
}

/* ---- the tuner ---- */

static void forward_progress(void *ctx, const TuneProgress *p) {
  const GopTuneOptions *o = ctx;
  GopTuneProgress q = {p->phase, p->done, p->total, p->elapsed_s, p->budget_s,
                       p->current, p->best_ms, p->best};
  o->progress(o->progress_ctx, &q);
}

/* splitmix64: gopc run's inputs (tools/gopc/run.c fill_random), so that the
 * tuner sees the data gopc run would. */
static void fill_uniform(IrDType dt, void *x, int64_t n, uint64_t seed) {
  uint64_t state = seed;
  for (int64_t i = 0; i < n; i++) {
    uint64_t z = (state += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    z ^= z >> 31;
    ir_elem_put(dt, x, i, (float)((double)(z >> 11) * 0x1.0p-53 * 2.0 - 1.0));
  }
}

int gop_tune(GopRun *r, const GopTuneOptions *o, GopTuneReport *report) {
  API_LOCK(r ? r->ctx : NULL);
  GopContext *ctx = r->ctx;
  const IrOp *ir = r->op->ir;
  GopTuneOptions opts = o ? *o : (GopTuneOptions){0};
  memset(report, 0, sizeof *report);
  if (!api_host_graph(ctx, r->graph, "gop_tune")) return -1;
  for (int i = 0; i < ir->nsyms; i++)
    if (!r->ext_set[i]) {
      ir_error(&ctx->diag, api_loc, "extent %s is not set (e.g. --%s 64)", ir->syms[i]->name,
               ir->syms[i]->name);
      return -1;
    }
  if (opts.budget_s < 0 || opts.max_candidates < 0 || opts.warmup < 0 || opts.reps < 0) {
    ir_error(&ctx->diag, api_loc, "gop_tune: a negative budget, count, warm-up or repeat");
    return -1;
  }
  if (opts.target && cg_target_check(opts.target, &ctx->diag) != 0) return -1;
  if (r->from_pack) {
    ir_error(&ctx->diag, api_loc, "a kernel pack is compiled already: there is nothing to tune");
    return -1;
  }
  /* The database is checked before the GPU, so that every argument is
   * validated on a machine without one too. */
  TuneDb *db = NULL;
  FILE *exists = opts.db_path ? fopen(opts.db_path, "rb") : NULL;
  if (exists) fclose(exists); /* a new one is created only once there is a GPU */
  if (exists && !(db = tune_db_open(opts.db_path, &ctx->diag))) return -1;
  /* No GPU: say so before anything slow (the reference). */
  Diag quiet;
  ir_diag_init(&quiet, NULL);
  RtStatus gs = rt_cuda_open(&quiet);
  if (gs != RT_OK) {
    const char *msg = rt_reason(&quiet, gs);
    ir_error(&ctx->diag, api_loc, "cannot tune without a GPU: %.*s", (int)strcspn(msg, "\n"),
             msg);
    ir_diag_free(&quiet);
    report->gpu_status = gs;
    tune_db_close(db);
    return -1;
  }
  ir_diag_free(&quiet);
  if (opts.db_path && !db && !(db = tune_db_open(opts.db_path, &ctx->diag))) return -1;

  int64_t F = 0;
  for (int i = 0; i < ir->nsyms; i++)
    if (strcmp(ir->syms[i]->name, "F") == 0) F = r->ext.value[i];
  void **inputs = IR_NEW_ARRAY(ctx->arena, void *, ir->ntensors + 1);
  void **owned = IR_NEW_ARRAY(ctx->arena, void *, ir->ntensors + 1);
  int rc = 0;
  for (int i = 0; i < ir->ntensors; i++) {
    const IrTensor *t = ir->tensors[i];
    if (t->role != IR_ROLE_IN) continue;
    int64_t n = graph_tensor_numel(t, r->graph->rt, &r->ext);
    if (r->data[i] && r->numel[i] == n) {
      inputs[i] = r->data[i];
      continue;
    }
    inputs[i] = owned[i] = malloc((size_t)ir_dtype_bytes(t->dtype) * (size_t)(n > 0 ? n : 1));
    if (!inputs[i]) {
      ir_error(&ctx->diag, api_loc, "out of memory for input %s", t->name);
      rc = -1;
      break;
    }
    fill_uniform(t->dtype, inputs[i], n, 1 * 1000003u + (uint64_t)i);
  }
  TuneReport rep = {0};
  if (rc == 0) {
    TuneJob job = {
        .op = ir,
        .lib = api_schedule_library(ctx, r->op->module),
        .g = r->graph->rt,
        .ext = r->ext,
        .F = F,
        .inputs = inputs,
        .target = opts.target,
        .budget_s = opts.budget_s > 0 ? opts.budget_s : 30,
        .max_candidates = opts.max_candidates,
        .warmup = opts.warmup || opts.reps ? opts.warmup : 3,
        .reps = opts.reps > 0 ? opts.reps : 20,
        .check_edges = opts.check_edges > 0    ? opts.check_edges
                       : opts.check_edges < 0 ? INT64_MAX
                                               : 2000000,
        .db = db,
        .compiler = GOP_VERSION,
        .stop = opts.stop,
        .progress = opts.progress ? forward_progress : NULL,
        .progress_ctx = &opts,
    };
    RtStatus s = tune_run(&job, &rep, &ctx->diag);
    if (s != RT_OK) {
      report->gpu_status = s == RT_NO_DRIVER || s == RT_NO_DEVICE ? (int)s : 0;
      rc = -1;
    }
    if (opts.progress) {
      GopTuneProgress fin = {.done = rep.n, .total = rep.n, .elapsed_s = rep.seconds,
                             .budget_s = job.budget_s,
                             .best_ms = rep.measured ? rep.results[0].median_ms : 0,
                             .best = rep.measured ? rep.results[0].schedule : NULL};
      opts.progress(opts.progress_ctx, &fin);
    }
  }
  tune_db_close(db);
  for (int i = 0; i < ir->ntensors; i++) free(owned[i]);
  GopTuneEntry *e = IR_NEW_ARRAY(ctx->arena, GopTuneEntry, rep.n + 1);
  for (int i = 0; i < rep.n; i++) {
    const TuneResult *t = &rep.results[i];
    e[i] = (GopTuneEntry){.status = (GopTuneStatus)t->outcome, .median_ms = t->median_ms,
                          .min_ms = t->min_ms, .gbps = t->gbps,
                          .bound_fraction = t->bound_fraction, .model_us = t->model_us,
                          .model_rank = t->order, .stored = t->stored};
    snprintf(e[i].schedule, sizeof e[i].schedule, "%s", t->schedule);
    snprintf(e[i].why, sizeof e[i].why, "%s", t->why);
  }
  snprintf(report->device, sizeof report->device, "%s", rep.device);
  report->candidates = rep.candidates;
  report->tried = rep.n;
  report->measured = rep.measured;
  report->wrong = rep.wrong;
  report->failed = rep.failed;
  report->stored = rep.stored;
  report->interrupted = rep.interrupted;
  report->out_of_budget = rep.out_of_budget;
  report->checked_on_interpreter = rep.check == TUNE_CHECK_INTERPRETER;
  snprintf(report->anchor, sizeof report->anchor, "%s", rep.anchor);
  report->seconds = rep.seconds;
  report->reference_s = rep.reference_s;
  report->copy_gbps = rep.copy_gbps;
  report->fewest_bytes = rep.fewest_bytes;
  report->entries = e;
  report->nentries = rep.n;
  tune_report_free(&rep);
  return rc;
}

void gop_tune_print(const GopTuneReport *rep, int top, FILE *out) {
  fprintf(out, "tuned on %s: %d of %d legal points tried in %.1f s (%s), %d verified, "
          "%d wrong, %d failed; %d stored\n",
          rep->device, rep->tried, rep->candidates, rep->seconds,
          rep->interrupted     ? "interrupted"
          : rep->out_of_budget ? "the budget ran out"
          : rep->tried < rep->candidates ? "the candidate limit"
                                         : "every point",
          rep->measured, rep->wrong, rep->failed, rep->stored);
  if (rep->checked_on_interpreter)
    fprintf(out, "checked: every output against the reference interpreter on this graph\n");
  else
    fprintf(out, "checked: every candidate against the interpreter on a proxy graph "
            "(rmat:12:8:7), and on this graph against the first verified one, %s, whose "
            "output on this graph was not checked by the interpreter (too large; "
            "--check-edges raises the limit)\n",
            *rep->anchor ? rep->anchor : "(none)");
  int shown = 0;
  for (int i = 0; i < rep->nentries; i++) {
    const GopTuneEntry *e = &rep->entries[i];
    if (e->status != GOP_TUNE_OK) continue;
    if (shown == 0)
      fprintf(out, "  %-4s %-28s %11s %10s %7s %11s\n", "rank", "schedule", "time (ms)",
              "GB/s", "bound", "model (us)");
    if (shown == top) break;
    fprintf(out, "  %-4d %-28s %11.4f %10.1f %6.1f%% %11.1f\n", shown + 1, e->schedule,
            e->median_ms, e->gbps, 100 * e->bound_fraction, e->model_us);
    shown++;
  }
  if (rep->measured == 0) fprintf(out, "  no candidate was verified\n");
  for (int i = 0; i < rep->nentries; i++) {
    const GopTuneEntry *e = &rep->entries[i];
    if (e->status == GOP_TUNE_WRONG)
      fprintf(out, "  WRONG  %s: %s (not stored)\n", e->schedule, e->why);
    else if (e->status == GOP_TUNE_FAILED)
      fprintf(out, "  failed %s: %s\n", e->schedule, e->why);
  }
  if (rep->fewest_bytes)
    fprintf(out, "bound: %.1f MB moved at least, at the measured copy bandwidth %.0f GB/s\n",
            (double)rep->fewest_bytes / 1e6, rep->copy_gbps);
}

void gop_tune_progress_print(void *ctx, const GopTuneProgress *p) {
  FILE *f = ctx ? ctx : stderr;
  bool tty = isatty(fileno(f));
  if (p->phase) {
    fprintf(f, "tune: %s...\n", p->phase);
    fflush(f);
    return;
  }
  char best[200] = "none verified yet";
  if (p->best) snprintf(best, sizeof best, "%.4f ms %s", p->best_ms, p->best);
  bool done = !p->current;
  if (tty) {
    enum { W = 24 };
    double frac = p->total ? (double)p->done / p->total : 1;
    double tfrac = p->budget_s > 0 ? p->elapsed_s / p->budget_s : 0;
    if (tfrac > frac) frac = tfrac; /* whichever ends the tune first */
    if (frac > 1 || done) frac = 1;
    int fill = (int)(frac * W);
    fprintf(f, "\r[%.*s%*s] %d/%d %4.1f/%.0f s  best %s%s%s\033[K", fill,
            "########################", W - fill, "", p->done, p->total, p->elapsed_s,
            p->budget_s, best, done ? "" : "  now ", done ? "" : p->current);
    if (done) fputc('\n', f);
  } else if (done) {
    fprintf(f, "tune: done, %d tried in %.1f s; best %s\n", p->done, p->elapsed_s, best);
  } else {
    fprintf(f, "tune: %d/%d %.1f/%.0f s: measuring %s (best %s)\n", p->done + 1, p->total,
            p->elapsed_s, p->budget_s, p->current, best);
  }
  fflush(f);
}

/* ---- the learned predictor ---- */

bool gop_predictor_available(char *why, size_t size) {
  Diag quiet;
  ir_diag_init(&quiet, NULL);
  bool ok = tune_xgb_open(&quiet) == 0;
  if (!ok && why && size) {
    const char *reason;
    int len = ir_diag_reason(&quiet, &reason);
    snprintf(why, size, "%.*s", len, reason);
  }
  ir_diag_free(&quiet);
  return ok;
}

int gop_predictor_train(GopContext *ctx, const char *db_path, GopTrainInfo *out) {
  API_LOCK(ctx);
  memset(out, 0, sizeof *out);
  GopModule *std = gop_stdlib(ctx);
  TuneTrainInfo t;
  if (!db_path || tune_predictor_train_db(db_path, std ? std->ir : NULL, &t, &ctx->diag) != 0) {
    if (!db_path) ir_error(&ctx->diag, api_loc, "gop_predictor_train: no database given");
    return -1;
  }
  *out = (GopTrainInfo){.rows = t.rows, .graphs = t.graphs, .cases = t.cases};
  snprintf(out->model_path, sizeof out->model_path, "%s", t.model_path);
  return 0;
}

int gop_predictor_evaluate(GopContext *ctx, const char *db_path, FILE *table, GopEvalInfo *out) {
  API_LOCK(ctx);
  memset(out, 0, sizeof *out);
  if (!db_path) {
    ir_error(&ctx->diag, api_loc, "gop_predictor_evaluate: no database given");
    return -1;
  }
  GopModule *std = gop_stdlib(ctx);
  TuneEvalInfo e;
  if (tune_predictor_evaluate(db_path, std ? std->ir : NULL, table, &e, &ctx->diag) != 0)
    return -1;
  *out = (GopEvalInfo){.graphs = e.graphs, .cases = e.cases, .default_cases = e.default_cases,
                       .within_10pct = e.within_10pct, .geomean = e.geomean,
                       .model_geomean = e.model_geomean, .default_geomean = e.default_geomean,
                       .median = e.median, .worst = e.worst};
  return 0;
}

int gop_tune_import_csv(GopContext *ctx, const char *csv, const char *db_path,
                        const char *datasets, const char *gpu, int cc, GopImportInfo *out) {
  API_LOCK(ctx);
  memset(out, 0, sizeof *out);
  if (!csv || !db_path || !datasets || !gpu || !*gpu || cc <= 0) {
    ir_error(&ctx->diag, api_loc, "gop_tune_import_csv: the CSV, the database, the datasets "
             "folder, the GPU's name and its compute capability are all needed");
    return -1;
  }
  GopModule *std = gop_stdlib(ctx);
  if (!std) return -1;
  TuneDb *db = tune_db_open(db_path, &ctx->diag);
  if (!db) return -1;
  TuneImportInfo t;
  int rc = tune_import_csv(csv, db, std->ir, datasets, gpu, cc, GOP_VERSION, ctx->arena, &t,
                           &ctx->diag);
  tune_db_close(db);
  *out = (GopImportInfo){t.imported,        t.graphs,          t.skipped_default,
                         t.skipped_wrong,   t.skipped_no_time, t.skipped_refused,
                         t.truncated};
  return rc;
}
