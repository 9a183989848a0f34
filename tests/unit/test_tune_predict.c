/* tests/unit/test_tune_predict.c: the learned predictor
 * (tune/predict.c, tune/xgb.c), the CSV import
 * (tune/import.c), and `gopc tune`'s arguments.
 *
 * The predictor's round trip runs on a small database whose "measured"
 * times follow a rule the cost model does not know (vertex-parallel
 * schedules pay for the degree skew, edge-parallel ones a fixed 1.3x):
 * trained on four graphs, the predictor must find the best schedule of
 * the fifth (leave-one-graph-out within 1.10x), and do better there than
 * the cost model. Then: a saved model predicts what the trained one did;
 * damaged, truncated, foreign, older and other-feature model files, and
 * payloads whose trees are malformed, are refused with a reason (and the
 * line); a failed training leaves the model that was there;
 * gop_choose_schedule says predictor. The model built into gop parses,
 * ranks the operators it was trained on and skips others with a note,
 * and is used with libxgboost missing (training then fails with the
 * reason); GOP_PREDICTOR=off turns it off. The tests that train are
 * skipped, saying so, only when libxgboost cannot be loaded
 * (tools/setup.sh installs it).
 */
#define _GNU_SOURCE
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "gop.h"
#include "lang/lang.h"
#include "graph/graph.h"
#include "runtime/runtime.h"
#include "tune/tune.h"
#include "testutil.h"

static Arena *arena;
static Diag diag;
static IrModule *lib;

static void setup(void) {
  arena = ir_arena_new();
  ir_diag_init(&diag, NULL);
  lib = lang_stdlib(arena, &diag);
  ck_assert_ptr_nonnull(lib);
}

static void teardown(void) {
  ir_diag_free(&diag);
  ir_arena_free(arena);
}

#define ASSERT_DIAG_HAS(s) \
  ck_assert_msg(diag.buf && strstr(diag.buf, (s)), "expected '%s' in: %s", (s), diag.buf)

static bool have_xgboost(void) {
  char why[300];
  if (gop_predictor_available(why, sizeof why)) return true;
  fprintf(stderr, "SKIPPED: libxgboost cannot be loaded (%s); apt-get install "
          "libxgboost-dev (tools/setup.sh does)\n", why);
  return false;
}

/* The rule the synthetic measurements follow: the cost model's estimate,
 * times what it does not know: one feature worker (T = 1) costs 3x, and
 * a warp costs 2x on skewed graphs (R-MAT) where threads do on meshes. */
static double true_time(const TuneOpShape *s, const TunePoint *p, const TuneGraphSig *g,
                        int64_t F) {
  TuneCost c;
  tune_model_cost(s, p, g, F, &c);
  double skew = g->deg_std / (g->deg_mean > 0 ? g->deg_mean : 1);
  double f = p->T == 1 ? 3 : 1;
  f *= skew > 0.5 ? (p->warp ? 2 : 1) : (p->warp ? 1 : 2);
  return c.time_us * 1e-3 * f;
}

static const char *const graphs[] = {"rmat:9:8:1",  "grid:24x24", "rmat:10:4:2", "grid:40x10",
                                     "rmat:8:16:3", "grid:30x20", "rmat:9:6:4"};
enum { NGRAPHS = 7 };

/* Fills `path` with every fourth point of two aggregations at F 16 and 64
 * on each graph. Returns the number of rows. */
static int build_db(const char *path, int ngraphs) {
  TuneDb *db = tune_db_open(path, &diag);
  ck_assert_ptr_nonnull(db);
  const char *ops[] = {"copy_u_sum", "u_mul_e_sum"};
  int rows = 0;
  for (int o = 0; o < 2; o++) {
    const IrOp *op = ir_module_find_op(lib, ops[o]);
    ck_assert_ptr_nonnull(op);
    TuneOpShape shape;
    tune_op_shape(op, &shape);
    TunePoint *pts;
    int n = tune_space_enumerate(op, lib, arena, &pts, &diag);
    ck_assert_int_gt(n, 8);
    for (int gi = 0; gi < ngraphs; gi++) {
      Graph *g = graph_open(graphs[gi], &diag);
      ck_assert_ptr_nonnull(g);
      TuneGraphSig sig;
      tune_graph_sig(g, &sig);
      for (int64_t F = 16; F <= 64; F *= 4)
        for (int i = 0; i < n; i += 4) {
          if (pts[i].strategy == TUNE_NAMED) continue;
          TuneKey k = {.op_hash = tune_op_hash(op), .F = F, .dtype = "f32", .graph = sig,
                       .gpu = "test GPU", .cc = 90, .compiler = "test",
                       .op_name = op->name, .shape = &shape};
          TuneRecord r = {.time_ms = true_time(&shape, &pts[i], &sig, F), .have_facts = true,
                          .atomic_rows = pts[i].atomic_rows,
                          .atomic_scalars = pts[i].atomic_scalars, .kernels = pts[i].kernels,
                          .warp = pts[i].warp, .vertex = pts[i].vertex};
          snprintf(r.schedule, sizeof r.schedule, "%s", pts[i].text);
          ck_assert_int_eq(tune_db_put(db, &k, &r, &diag), 0);
          rows++;
        }
      graph_free(g);
    }
    free(pts);
  }
  tune_db_close(db);
  return rows;
}

/* A fresh path in the test's folder (kept for the whole process). */
static const char *tmp(const char *name) {
  static char buf[32][512];
  static int next;
  next = (next + 1) % 32;
  snprintf(buf[next], sizeof buf[next], "%s/%s", tu_tmpdir(), name);
  unlink(buf[next]);
  return buf[next];
}

START_TEST(features_named) {
  for (int i = 0; i < TUNE_NFEATURES; i++) ck_assert_ptr_nonnull(tune_feature_name(i));
  ck_assert_ptr_null(tune_feature_name(TUNE_NFEATURES));
  /* The features tell strategies and graphs apart. */
  const IrOp *op = ir_module_find_op(lib, "copy_u_sum");
  TuneOpShape s;
  tune_op_shape(op, &s);
  TunePoint a, b;
  ck_assert_int_eq(tune_point_make(op, lib, "warp_edge(2, 2)", arena, &a, &diag), 0);
  ck_assert_int_eq(tune_point_make(op, lib, "thread_vertex(2, 2)", arena, &b, &diag), 0);
  TuneGraphSig g = {1000, 10000, 10, 5, 100, 30};
  float fa[TUNE_NFEATURES], fb[TUNE_NFEATURES];
  tune_features(&g, &s, 64, &a, fa);
  tune_features(&g, &s, 64, &b, fb);
  ck_assert(memcmp(fa, fb, sizeof fa) != 0);
  ck_assert_float_eq(fa[0], (float)log2(1000.0));
  ck_assert_float_eq(fa[12], 6.0f); /* log2 F */
}
END_TEST

START_TEST(train_predict_evaluate) {
  if (!have_xgboost()) return;
  const char *db = tmp("pred.db");
  int rows = build_db(db, NGRAPHS);
  GopContext *ctx = gop_context_new();
  GopEvalInfo e;
  ck_assert_msg(gop_predictor_evaluate(ctx, db, stderr, &e) == 0, "%s", gop_diagnostics(ctx));
  fprintf(stderr, "evaluate: %d rows, %d cases on %d graphs: predictor %.3fx, model %.3fx\n",
          rows, e.cases, e.graphs, e.geomean, e.model_geomean);
  ck_assert_int_eq(e.graphs, NGRAPHS);
  ck_assert_int_eq(e.cases, NGRAPHS * 2 * 2);
  ck_assert_msg(e.geomean <= 1.10, "leave-one-graph-out %.3fx", e.geomean);
  ck_assert_msg(e.geomean < e.model_geomean, "predictor %.3fx, cost model %.3fx", e.geomean,
                e.model_geomean);
  ck_assert(e.worst >= e.median && e.median >= 1.0);

  GopTrainInfo t;
  ck_assert_msg(gop_predictor_train(ctx, db, &t) == 0, "%s", gop_diagnostics(ctx));
  ck_assert_int_eq(t.graphs, NGRAPHS);
  char want[600];
  snprintf(want, sizeof want, "%s.xgb", db);
  ck_assert_str_eq(t.model_path, want);

  /* A saved model predicts as the trained one did. */
  float x[3 * TUNE_NFEATURES], y1[3], y2[3];
  const IrOp *op = ir_module_find_op(lib, "u_mul_e_sum");
  TuneOpShape s;
  tune_op_shape(op, &s);
  const char *pts[] = {"warp_edge(1, 1)", "warp_vertex(2, 2)", "thread_edge(4, 4)"};
  TuneGraphSig g = {5000, 80000, 16, 40, 2000, 900};
  for (int i = 0; i < 3; i++) {
    TunePoint p;
    ck_assert_int_eq(tune_point_make(op, lib, pts[i], arena, &p, &diag), 0);
    tune_features(&g, &s, 32, &p, x + i * TUNE_NFEATURES);
  }
  TunePredictor *loaded = tune_predictor_load(want, &diag);
  ck_assert_msg(loaded != NULL, "%s", diag.buf);
  /* with its points: every case measured warp_edge(1, 1) (the first of
   * every fourth point), none a named schedule */
  ck_assert_int_eq(tune_predictor_point_cases(loaded, "warp_edge(1, 1)"), NGRAPHS * 2 * 2);
  ck_assert_int_eq(tune_predictor_point_cases(loaded, "spmm_groups(32, 4)"), 0);
  ck_assert_int_eq(tune_predictor_predict(loaded, x, 3, y1), 0);
  const char *again = tmp("again.xgb");
  ck_assert_int_eq(tune_predictor_save(loaded, again, &diag), 0);
  TunePredictor *reloaded = tune_predictor_load(again, &diag);
  ck_assert_ptr_nonnull(reloaded);
  ck_assert_int_eq(tune_predictor_predict(reloaded, x, 3, y2), 0);
  for (int i = 0; i < 3; i++) ck_assert_float_eq(y1[i], y2[i]);
  /* The rule: one feature worker is slow. */
  ck_assert_msg(y1[0] > y1[2], "predicted %g for warp_edge(1, 1), %g for thread_edge(4, 4)",
                y1[0], y1[2]);
  tune_predictor_free(loaded);
  tune_predictor_free(reloaded);

  /* gop_choose_schedule: no measurement for this graph, so the predictor. */
  GopGraph *gg = gop_graph_open(ctx, "rmat:9:6:9");
  GopModule *std = gop_stdlib(ctx);
  GopScheduleChoice c;
  ck_assert_int_eq(gop_choose_schedule(gop_module_find_op(std, "u_mul_e_sum"), gg, 32, db, &c),
                   0);
  ck_assert_int_eq(c.source, GOP_SCHEDULE_FROM_PREDICTOR);
  ck_assert_str_eq(gop_schedule_source_name(c.source), "predictor");
  ck_assert_str_eq(c.note, "");
  TunePoint cp;
  ck_assert_int_eq(tune_point_parse(c.schedule, lib, &cp), 0);
  gop_context_free(ctx);
}
END_TEST

/* A model file with `edit` applied must be refused with `msg`. */
static void refused(const char *good, const char *name, void (*edit)(char *buf, size_t *len),
                    const char *msg) {
  size_t len;
  char *buf = tu_read_file(good, &len);
  ck_assert_ptr_nonnull(buf);
  buf = realloc(buf, len + 64);
  edit(buf, &len);
  const char *path = tmp(name);
  FILE *f = fopen(path, "wb");
  fwrite(buf, 1, len, f);
  fclose(f);
  ir_diag_free(&diag);
  ir_diag_init(&diag, NULL);
  ck_assert_ptr_null(tune_predictor_load(path, &diag));
  ASSERT_DIAG_HAS("predictor model refused");
  ASSERT_DIAG_HAS(msg);
  ASSERT_DIAG_HAS(path);
  free(buf);
}

static void flip_payload(char *b, size_t *len) { b[*len - 10] ^= 0x20; }
static void cut(char *b, size_t *len) { *len -= 100; }
static void foreign(char *b, size_t *len) { memcpy(b, "{\"learner\"", 10); }
static void older(char *b, size_t *len) { b[14] = '1'; }
static void features(char *b, size_t *len) {
  char *p = strstr(b, "features ");
  p[9] = p[9] == '9' ? '8' : '9'; /* another count */
}
static void header(char *b, size_t *len) {
  char *p = strstr(b, "bytes ");
  p[0] = 'B';
}

START_TEST(bad_models_refused) {
  if (!have_xgboost()) return;
  const char *db = tmp("bad.db");
  build_db(db, 2);
  GopContext *ctx = gop_context_new();
  GopTrainInfo t;
  ck_assert_msg(gop_predictor_train(ctx, db, &t) == 0, "%s", gop_diagnostics(ctx));
  refused(t.model_path, "flip.xgb", flip_payload, "checksum");
  refused(t.model_path, "cut.xgb", cut, "truncated");
  refused(t.model_path, "json.xgb", foreign, "not a gop predictor model");
  refused(t.model_path, "v1.xgb", older, "older gop");
  refused(t.model_path, "features.xgb", features, "other features");
  refused(t.model_path, "header.xgb", header, "header is damaged");
  /* Random bytes, and a missing file. */
  const char *rnd = tmp("random.xgb");
  FILE *f = fopen(rnd, "wb");
  for (int i = 0; i < 4096; i++) fputc((i * 7919) & 0xff, f);
  fclose(f);
  ck_assert_ptr_null(tune_predictor_load(rnd, &diag));
  ASSERT_DIAG_HAS("not a gop predictor model");
  ck_assert_ptr_null(tune_predictor_load(tmp("none.xgb"), &diag));
  ASSERT_DIAG_HAS("cannot open");

  /* A refused model is an error for gop_choose_schedule, never skipped. */
  char model[1100];
  snprintf(model, sizeof model, "%s", t.model_path);
  size_t len;
  char *good = tu_read_file(model, &len);
  f = fopen(model, "r+b");
  fseek(f, -5, SEEK_END);
  fputc('!', f);
  fclose(f);
  GopGraph *g = gop_graph_open(ctx, "grid:8x8");
  GopScheduleChoice c;
  gop_clear_diagnostics(ctx);
  ck_assert_int_eq(gop_choose_schedule(gop_module_find_op(gop_stdlib(ctx), "copy_u_sum"), g,
                                       16, db, &c), -1);
  ck_assert_msg(strstr(gop_diagnostics(ctx), "checksum"), "%s", gop_diagnostics(ctx));

  /* A failed training (an empty database) leaves the model that was there. */
  const char *empty = tmp("empty.db");
  char emodel[600];
  snprintf(emodel, sizeof emodel, "%s.xgb", empty);
  f = fopen(emodel, "wb");
  fwrite(good, 1, len, f);
  fclose(f);
  gop_clear_diagnostics(ctx);
  ck_assert_int_eq(gop_predictor_train(ctx, empty, &t), -1);
  ck_assert_ptr_nonnull(strstr(gop_diagnostics(ctx), "too few measurements"));
  size_t after_len;
  char *after = tu_read_file(emodel, &after_len);
  ck_assert_uint_eq(after_len, len);
  ck_assert(memcmp(after, good, len) == 0);
  /* Evaluating needs two graphs. */
  ck_assert_int_eq(gop_predictor_evaluate(ctx, empty, NULL, &(GopEvalInfo){0}), -1);
  ck_assert_ptr_nonnull(strstr(gop_diagnostics(ctx), "at least two graphs"));
  free(good);
  free(after);
  gop_context_free(ctx);
}
END_TEST

START_TEST(missing_library_falls_back) {
  /* Runs in its own process (Check forks): libxgboost is not open yet. */
  const char *db = tmp("fallback.db");
  build_db(db, 1);
  setenv("GOP_XGBOOST_LIBRARY", "/nonexistent/libxgboost.so", 1);
  GopContext *ctx = gop_context_new();
  char why[300];
  ck_assert(!gop_predictor_available(why, sizeof why));
  ck_assert_ptr_nonnull(strstr(why, "cannot load libxgboost"));
  /* choosing needs no libxgboost: with no model beside the database, the
   * built-in one ranks */
  GopGraph *g = gop_graph_open(ctx, "grid:8x8");
  GopScheduleChoice c;
  ck_assert_int_eq(gop_choose_schedule(gop_module_find_op(gop_stdlib(ctx), "copy_u_sum"), g,
                                       16, db, &c), 0);
  ck_assert_int_eq(c.source, GOP_SCHEDULE_FROM_BUILTIN);
  ck_assert_str_eq(gop_schedule_source_name(c.source), "built-in predictor");
  ck_assert_str_eq(c.note, "");
  GopTrainInfo t;
  ck_assert_int_eq(gop_predictor_train(ctx, db, &t), -1);
  ck_assert_ptr_nonnull(strstr(gop_diagnostics(ctx), "cannot load libxgboost"));
  /* an XGBoost model of an older gop beside the database is refused */
  char model[600];
  snprintf(model, sizeof model, "%s.xgb", db);
  FILE *f = fopen(model, "wb");
  fputs("gop-predictor 1\nfeatures 33 0\n", f);
  fclose(f);
  gop_clear_diagnostics(ctx);
  ck_assert_int_eq(gop_choose_schedule(gop_module_find_op(gop_stdlib(ctx), "copy_u_sum"), g,
                                       16, db, &c), -1);
  ck_assert_msg(strstr(gop_diagnostics(ctx), "older gop"), "%s", gop_diagnostics(ctx));
  gop_context_free(ctx);
}
END_TEST

/* An envelope around `payload` (the header as tune/trees.c writes it: the
 * features line copied from the built-in model); parsed, it must be
 * refused with `msg` at line `line`, or, with msg NULL, accepted. */
static TunePredictor *with_payload(const char *payload, const char *msg, int line) {
  extern const char tune_builtin_model[];
  const char *feat = strstr(tune_builtin_model, "features ");
  int flen = (int)strcspn(feat, "\n");
  char text[4096];
  size_t plen = strlen(payload);
  snprintf(text, sizeof text, "gop-predictor 2\n%.*s\nbytes %zu %016llx\n\n%s", flen, feat,
           plen, (unsigned long long)rt_fnv1a64(payload, plen), payload);
  ir_diag_free(&diag);
  ir_diag_init(&diag, NULL);
  TunePredictor *p = tune_predictor_parse(text, strlen(text), "m.xgb", &diag);
  if (!msg) {
    ck_assert_msg(p != NULL, "%s", diag.buf);
    return p;
  }
  ck_assert_ptr_null(p);
  ASSERT_DIAG_HAS(msg);
  char at[32];
  snprintf(at, sizeof at, "m.xgb:%d:", line);
  ASSERT_DIAG_HAS(at);
  return NULL;
}

START_TEST(trees_evaluated) {
  /* x[12] < 5 goes to the leaf 0.5, else 2; a missing value to 0.5; a
   * second tree adds 0.25; the base is 1 */
  TunePredictor *p = with_payload("base 1\nshape 1 1 0 0 0 1 0 f32\ntrees 2\ntree 3\n"
                                  "12 5 1 2 1\nleaf 0.5\nleaf 2\ntree 1\nleaf 0.25\n",
                                  NULL, 0);
  float x[3 * TUNE_NFEATURES] = {0}, y[3];
  x[12] = 4;
  x[TUNE_NFEATURES + 12] = 6;
  x[2 * TUNE_NFEATURES + 12] = NAN;
  ck_assert_int_eq(tune_predictor_predict(p, x, 3, y), 0);
  ck_assert_float_eq(y[0], 1.75f);
  ck_assert_float_eq(y[1], 3.25f);
  ck_assert_float_eq(y[2], 1.75f);
  TuneShapeKey k = {{1, 1, 0, 0, 0, 1, 0}, "f32"};
  ck_assert(tune_predictor_has_shape(p, &k));
  snprintf(k.dtype, sizeof k.dtype, "bf16");
  ck_assert(!tune_predictor_has_shape(p, &k));
  /* saved and read back, it predicts the same */
  const char *path = tmp("hand.xgb");
  ck_assert_int_eq(tune_predictor_save(p, path, &diag), 0);
  TunePredictor *q = tune_predictor_load(path, &diag);
  ck_assert_ptr_nonnull(q);
  float z[3];
  tune_predictor_predict(q, x, 3, z);
  ck_assert(memcmp(y, z, sizeof y) == 0);
  tune_predictor_free(p);
  tune_predictor_free(q);

  /* malformed payloads, each refused at its line (the payload starts at
   * line 5) */
  with_payload("trees 0\n", "expected 'base VALUE'", 5);
  with_payload("base 0\nshape 1 2 3\ntrees 0\n", "not 'shape N N N N N N N DTYPE'", 6);
  with_payload("base 0\n", "no 'trees N' line", 5);
  with_payload("base 0\ntrees 1\ntree 2\n0 1 0 1 1\nleaf 1\n", "not a later node", 8);
  with_payload("base 0\ntrees 1\ntree 3\n0 1 2 1 5\nleaf 1\nleaf 2\n", "not a later node",
               8);
  with_payload("base 0\ntrees 1\ntree 3\n36 1 1 2 1\nleaf 1\nleaf 2\n",
               "feature is out of range", 8);
  with_payload("base 0\ntrees 1\ntree 3\n3 nan 1 2 1\nleaf 1\nleaf 2\n", "not a number", 8);
  with_payload("base 0\ntrees 1\ntree 2\nleaf inf\nleaf 1\n", "finite value", 8);
  with_payload("base 0\ntrees 1\ntree 3\n3 1 1 2 1\nleaf 1\n", "ends inside a tree", 9);
  with_payload("base 0\ntrees 1\ntree 1\nleaf 1\nleaf 2\n", "lines after the last tree",
               9);
  with_payload("base 0\ntrees 1\ntree 0\n", "expected 'tree NODES'", 7);
  with_payload("base 0\ntrees -1\n", "expected 'trees N'", 6);
}
END_TEST

/* Points the model was hardly trained on rank after the others: a tree
 * that prefers spmm_groups_full(32, 4) (split on the cost model's time,
 * which prices it 1.15x spmm_groups's) ranks it first without point
 * lines, and second when the model says it was measured in 3 cases. */
START_TEST(points_ranked) {
  const IrOp *op = ir_module_find_op(lib, "copy_u_sum");
  TuneOpShape s;
  tune_op_shape(op, &s);
  TunePoint pts[2];
  ck_assert_int_eq(tune_point_make(op, lib, "spmm_groups(32, 4)", arena, &pts[0], &diag), 0);
  ck_assert_int_eq(tune_point_make(op, lib, "spmm_groups_full(32, 4)", arena, &pts[1], &diag), 0);
  TuneGraphSig g = {7115, 103689, 14.6, 30, 457, 900};
  float f[2][TUNE_NFEATURES];
  tune_features(&g, &s, 64, &pts[0], f[0]);
  tune_features(&g, &s, 64, &pts[1], f[1]);
  ck_assert_float_lt(f[0][27], f[1][27]);
  char payload[512];
  const char *tail = "trees 1\ntree 3\n27 %.9g 1 2 1\nleaf 1\nleaf 0\n";
  char trees[128];
  snprintf(trees, sizeof trees, tail, (f[0][27] + f[1][27]) / 2);
  for (int listed = 0; listed < 2; listed++) {
    snprintf(payload, sizeof payload, "base 0\nshape 1 1 0 0 0 1 0 f32\n%s%s",
             listed ? "point 30 spmm_groups(32, 4)\npoint 3 spmm_groups_full(32, 4)\n" : "",
             trees);
    TunePredictor *p = with_payload(payload, NULL, 0);
    ck_assert_int_eq(tune_predictor_point_cases(p, "spmm_groups_full(32, 4)"), listed ? 3 : -1);
    ck_assert_int_eq(tune_predictor_point_cases(p, "spmm_groups(32, 8)"), listed ? 0 : -1);
    /* a point asked on the reversed graph, or without atomics, is known
     * as the schedule it prefixes */
    ck_assert_int_eq(tune_predictor_point_cases(p, TUNE_TRANSPOSE "spmm_groups(32, 4)"),
                     listed ? 30 : -1);
    ck_assert_int_eq(tune_predictor_point_cases(p, TUNE_DETERMINISTIC "spmm_groups(32, 4)"),
                     listed ? 30 : -1);
    TunePoint r[2] = {pts[0], pts[1]};
    float y[2];
    ck_assert_int_eq(tune_predictor_rank(p, &s, r, 2, &g, 64, y), 0);
    ck_assert_str_eq(r[0].text, listed ? "spmm_groups(32, 4)" : "spmm_groups_full(32, 4)");
    ck_assert_float_eq(y[0], listed ? 1.0f : 0.0f);
    if (listed) { /* saved and read back, the points stay */
      const char *path = tmp("points.xgb");
      ck_assert_int_eq(tune_predictor_save(p, path, &diag), 0);
      TunePredictor *q = tune_predictor_load(path, &diag);
      ck_assert_ptr_nonnull(q);
      ck_assert_int_eq(tune_predictor_point_cases(q, "spmm_groups(32, 4)"), 30);
      tune_predictor_free(q);
    }
    tune_predictor_free(p);
  }
  with_payload("base 0\npoint spmm_groups(32, 4)\ntrees 0\n", "not 'point CASES TEXT'", 6);
  with_payload("base 0\npoint -2 gar()\ntrees 0\n", "not 'point CASES TEXT'", 6);
  with_payload("base 0\npoint 4 \ntrees 0\n", "not 'point CASES TEXT'", 6);
  with_payload("base 0\npoint 1 a_point_text_of_more_than_sixty_four_characters_which_is_too_long(1)"
               "\ntrees 0\n",
               "not 'point CASES TEXT'", 6);
}
END_TEST

START_TEST(builtin_model) {
  const TunePredictor *b = tune_predictor_builtin(&diag);
  ck_assert_msg(b != NULL, "%s", diag.buf);
  ck_assert_int_gt(tune_predictor_trees(b), 0);
  GopContext *ctx = gop_context_new();
  GopModule *std = gop_stdlib(ctx);
  GopGraph *g = gop_graph_open(ctx, "rmat:12:8:5");
  /* the operators it was trained on: a legal point of each, no note */
  const char *trained[] = {"copy_u_sum", "u_mul_e_sum", "u_dot_v", "u_add_v"};
  for (int i = 0; i < 4; i++) {
    GopScheduleChoice c;
    ck_assert_int_eq(gop_choose_schedule(gop_module_find_op(std, trained[i]), g, 64, NULL, &c),
                     0);
    ck_assert_msg(c.source == GOP_SCHEDULE_FROM_BUILTIN, "%s: %s (%s)", trained[i],
                  gop_schedule_source_name(c.source), c.note);
    TunePoint p;
    ck_assert_int_eq(tune_point_parse(c.schedule, lib, &p), 0);
  }
  /* a reduction by comparison (max=) has another shape: the cost model */
  GopScheduleChoice cmax;
  ck_assert_int_eq(gop_choose_schedule(gop_module_find_op(std, "copy_u_max"), g, 64, NULL, &cmax),
                   0);
  ck_assert_int_eq(cmax.source, GOP_SCHEDULE_FROM_MODEL);
  ck_assert_msg(strstr(cmax.note, "not trained on an operator of this shape in f32"), "%s",
                cmax.note);
  /* another dtype: the cost model, saying why */
  GopOp *bf = gop_op_retype(gop_module_find_op(std, "copy_u_sum"), "bf16");
  ck_assert_ptr_nonnull(bf);
  GopScheduleChoice c;
  ck_assert_int_eq(gop_choose_schedule(bf, g, 64, NULL, &c), 0);
  ck_assert_int_eq(c.source, GOP_SCHEDULE_FROM_MODEL);
  ck_assert_msg(strstr(c.note, "not trained on an operator of this shape in bf16"), "%s",
                c.note);
  /* GOP_PREDICTOR=off: the cost model; another value: an error naming it */
  setenv("GOP_PREDICTOR", "off", 1);
  ck_assert_int_eq(gop_choose_schedule(gop_module_find_op(std, "copy_u_sum"), g, 64, NULL, &c),
                   0);
  ck_assert_int_eq(c.source, GOP_SCHEDULE_FROM_MODEL);
  ck_assert_ptr_nonnull(strstr(c.note, "GOP_PREDICTOR=off"));
  setenv("GOP_PREDICTOR", "xgb", 1);
  gop_clear_diagnostics(ctx);
  ck_assert_int_eq(gop_choose_schedule(gop_module_find_op(std, "copy_u_sum"), g, 64, NULL, &c),
                   -1);
  ck_assert_msg(strstr(gop_diagnostics(ctx), "GOP_PREDICTOR: error: 'xgb' is neither"), "%s",
                gop_diagnostics(ctx));
  unsetenv("GOP_PREDICTOR");
  gop_context_free(ctx);
}
END_TEST

/* ---- the CSV import ---- */

static const char *csv_header =
    "graph,V,E,op,schedule,F,ok,rel_l2,median_ms,gbps,bound_fraction\n";

START_TEST(import_csv) {
  const char *data = tu_source("tests/data");
  char text[2048];
  snprintf(text, sizeof text,
           "%s"
           "tiny.mtx,4,5,copy_u_sum,\"default\",16,1,0,0.01,1,0.001\n"
           "tiny.mtx,4,5,copy_u_sum,\"warp_edge(1, 1)\",16,1,0,0.01,1,0.001\n"
           "tiny.mtx,4,5,copy_u_sum,\"gar()\",16,1,0,0.02,1,0.001\n"
           "tiny.mtx,4,5,copy_u_sum,\"thread_edge(2, 2)\",16,0,0.5,0.005,1,0.001\n"
           "tiny.mtx,4,5,copy_u_sum,\"warp_vertex(1, 1)\",16,1,0,0.00000,0,0\n"
           "tiny.mtx,4,5,copy_u_sum,\"warp_vertex(1, 2)\",16,1,0,0.03,1,0.001\n"
           "tiny.mtx,4,5,u_mul",
           csv_header);
  const char *csv = tu_write("suite.csv", text);
  const char *db = tmp("import.db");
  GopContext *ctx = gop_context_new();
  GopImportInfo info;
  ck_assert_msg(gop_tune_import_csv(ctx, csv, db, data, "NVIDIA H100 80GB HBM3", 90, &info) == 0,
                "%s", gop_diagnostics(ctx));
  ck_assert_int_eq(info.imported, 2);
  ck_assert_int_eq(info.graphs, 1);
  ck_assert_int_eq(info.skipped_default, 1);
  ck_assert_int_eq(info.skipped_wrong, 1);
  ck_assert_int_eq(info.skipped_no_time, 1);
  ck_assert_int_eq(info.skipped_refused, 1); /* G = 1 with T > 1 is refused today */
  ck_assert_int_eq(info.truncated, 1);
  ck_assert_ptr_nonnull(strstr(gop_diagnostics(ctx), "suite.csv:8:"));
  ck_assert_ptr_nonnull(strstr(gop_diagnostics(ctx), "cut off"));
  TuneDb *t = tune_db_open(db, &diag);
  ck_assert_ptr_nonnull(t);
  ck_assert_int_eq(tune_db_list(t, NULL, NULL, &diag), 2);
  tune_db_close(t);

  /* Errors name the line, and nothing is stored. */
  const char *bad[][2] = {
      {"tiny.mtx,4,6,copy_u_sum,\"gar()\",16,1,0,0.02,1,0.001\n", "has |V| 4 and |E| 5"},
      {"tiny.mtx,4,5,no_such_op,\"gar()\",16,1,0,0.02,1,0.001\n", "no stdlib operator"},
      {"tiny.mtx,4,5,copy_u_sum,\"gar()\",16,1,0,fast,1,0.001\n", "must be a number"},
      {"tiny.mtx,4,5,copy_u_sum,\"gar()\",16,1\n", "expected 11 comma-separated fields"},
      {"nosuch.mtx,4,5,copy_u_sum,\"gar()\",16,1,0,0.02,1,0.001\n", "cannot read graph"},
  };
  for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
    snprintf(text, sizeof text, "%s%s", csv_header, bad[i][0]);
    csv = tu_write("bad.csv", text);
    const char *bdb = tmp("badimport.db");
    gop_clear_diagnostics(ctx);
    ck_assert_int_eq(gop_tune_import_csv(ctx, csv, bdb, data, "G", 90, &info), -1);
    ck_assert_msg(strstr(gop_diagnostics(ctx), bad[i][1]), "expected '%s' in %s", bad[i][1],
                  gop_diagnostics(ctx));
    ck_assert_msg(strstr(gop_diagnostics(ctx), "bad.csv:2:"), "%s", gop_diagnostics(ctx));
    ck_assert_int_eq(info.imported, 0);
  }
  csv = tu_write("nohead.csv", "a,b\n");
  gop_clear_diagnostics(ctx);
  ck_assert_int_eq(gop_tune_import_csv(ctx, csv, tmp("x.db"), data, "G", 90, &info), -1);
  ck_assert_ptr_nonnull(strstr(gop_diagnostics(ctx), "not a GPU suite CSV"));
  /* a header of the right first column without a column the import needs */
  csv = tu_write("nofrac.csv", "graph,V,E,op,schedule,F,ok,median_ms,gbps\n");
  gop_clear_diagnostics(ctx);
  ck_assert_int_eq(gop_tune_import_csv(ctx, csv, tmp("y.db"), data, "G", 90, &info), -1);
  ck_assert_ptr_nonnull(strstr(gop_diagnostics(ctx), "no column 'bound_fraction'"));

  /* gop_bench's CSV: the same columns among others, in its order, the
   * graph named without its file's extension (tiny for tiny.mtx) */
  csv = tu_write("bench.csv",
                 "# gpu=NVIDIA H200 sm=90\n"
                 "graph,V,E,op,F,role,rank,model_us,schedule,ok,checked_against,rel_l2,"
                 "median_ms,gbps,bound_fraction,sets,timing,graph_calls\n"
                 "tiny,4,5,copy_u_sum,16,default,0,0.00,\"default\",1,interpreter,0,0.01,1,"
                 "0.001,1,graph,64\n"
                 "tiny,4,5,copy_u_sum,16,named,0,3.0,\"gar()\",1,interpreter,0,0.02,1,0.001,1,"
                 "graph,64\n"
                 "tiny,4,5,copy_u_sum,16,named,0,3.0,\"warp_edge(1, 1)\",1,interpreter,0,0.01,"
                 "1,0.001,1,graph,64\n");
  const char *bdb = tmp("benchimport.db");
  data = tu_source("tests/data"); /* testutil's path buffers rotate: fetched again */
  gop_clear_diagnostics(ctx);
  ck_assert_msg(gop_tune_import_csv(ctx, csv, bdb, data, "NVIDIA H200", 90, &info) == 0, "%s",
                gop_diagnostics(ctx));
  ck_assert_int_eq(info.imported, 2);
  ck_assert_int_eq(info.graphs, 1);
  ck_assert_int_eq(info.skipped_default, 1);
  gop_context_free(ctx);
}
END_TEST

/* ---- gopc tune's arguments ---- */

/* Runs gopc with `args` (a shell word list); returns its exit status and
 * the start of its output in `out`. */
static int gopc(const char *args, char *out, size_t size) {
  return tu_gopc("GOP_TUNE_DB=", args, out, size);
}

START_TEST(gopc_tune_arguments) {
  char out[8192];
  ck_assert_int_eq(gopc("tune --help", out, sizeof out), 0);
  ck_assert_ptr_nonnull(strstr(out, "usage: gopc tune"));
  struct {
    const char *args, *msg;
    int status;
  } cases[] = {
      {"tune", "tune needs a file", 2},
      {"tune stdlib:copy_u_sum", "needs --graph", 2},
      {"tune stdlib:copy_u_sum --graph grid:4x4 --F 16 --budget-s -1", "--budget-s -1", 2},
      {"tune stdlib:copy_u_sum --graph grid:4x4 --F 16 --top 0", "--top 0", 2},
      {"tune stdlib:copy_u_sum --graph grid:4x4 --F 16 --bogus 1", "no extent named 'bogus'", 2},
      {"tune stdlib:copy_u_sum --graph grid:4x4 --F x", "not an integer", 2},
      {"tune stdlib:copy_u_sum --graph grid:4x4 --train --db x.db", "take no FILE", 2},
      {"tune --train --evaluate --db x.db", "exclude each other", 2},
      {"tune --train", "needs the database", 2},
      {"tune --import-csv a.csv --db x.db", "--gpu NAME --cc N", 2},
      {"tune --evaluate --db x.db --cc 90", "go with --import-csv", 2},
      {"tune stdlib:no_such_op --graph grid:4x4 --F 16", "no operator named 'no_such_op'", 1},
      {"tune stdlib:copy_u_sum --graph nosuch.mtx --F 16", "nosuch.mtx", 1},
      {"tune stdlib:copy_u_sum --graph grid:4x4", "extent F is not set", 1},
      {"tune stdlib:copy_u_sum --graph grid:4x4 --F 16 --target sm_12", "sm_12", 1},
      {"tune stdlib:copy_u_sum --graph grid:4x4 --F 16 --db notadb.db", "not a database", 1},
  };
  tu_write("notadb.db", "this is not SQLite, and must stay as it is\n");
  for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
    int st = gopc(cases[i].args, out, sizeof out);
    ck_assert_msg(strstr(out, cases[i].msg), "gopc %s: expected '%s' in:\n%s", cases[i].args,
                  cases[i].msg, out);
    ck_assert_msg(st == cases[i].status, "gopc %s: exit %d, expected %d", cases[i].args, st,
                  cases[i].status);
  }
  size_t len;
  char *kept = tu_read_file(tu_write("probe", ""), &len);
  free(kept);
  kept = tu_read_file(tu_source("tests/unit/test_tune_predict.c"), &len);
  ck_assert_ptr_nonnull(kept);
  free(kept);
  /* The refused database is left as it was. */
  char path[600];
  snprintf(path, sizeof path, "%s/notadb.db", tu_tmpdir());
  kept = tu_read_file(path, &len);
  ck_assert_str_eq(kept, "this is not SQLite, and must stay as it is\n");
  free(kept);
  /* Valid arguments on a machine without a GPU: gopc's no-driver or
   * no-device status, with a clear message. */
  int st = gopc("tune stdlib:copy_u_sum --graph grid:4x4 --F 16 --budget-s 5 --db new.db", out,
                 sizeof out);
  if (st == 3 || st == 4) {
    ck_assert_msg(strstr(out, "cannot tune without a GPU"), "%s", out);
    snprintf(path, sizeof path, "%s/new.db", tu_tmpdir());
    ck_assert_msg(access(path, F_OK) != 0, "a database was created with no GPU to fill it");
  } else {
    fprintf(stderr, "note: a GPU is present (exit %d); the no-GPU path was not exercised\n", st);
    ck_assert_int_eq(st, 0);
  }
}
END_TEST

START_TEST(gopc_train_evaluate) {
  if (!have_xgboost()) return;
  const char *db = tmp("cli.db");
  build_db(db, 3);
  char out[16384], args[1024];
  snprintf(args, sizeof args, "tune --train --db %s", db);
  ck_assert_msg(gopc(args, out, sizeof out) == 0, "%s", out);
  ck_assert_ptr_nonnull(strstr(out, "model written to"));
  snprintf(args, sizeof args, "tune --evaluate --db %s", db);
  ck_assert_msg(gopc(args, out, sizeof out) == 0, "%s", out);
  ck_assert_ptr_nonnull(strstr(out, "leave-one-graph-out"));
  ck_assert_ptr_nonnull(strstr(out, "cases on 3 graphs: predictor"));
  /* gopc run without --schedule: the predictor, and it says so. */
  snprintf(args, sizeof args, "run stdlib:u_mul_e_sum --graph rmat:7:4:5 --F 16 --db %s", db);
  ck_assert_msg(gopc(args, out, sizeof out) == 0, "%s", out);
  ck_assert_msg(strstr(out, "(from the predictor)"), "%s", out);
}
END_TEST

int main(void) {
  Suite *s = suite_create("tune_predict");
  TCase *tc = tcase_create("predict");
  tcase_add_checked_fixture(tc, setup, teardown);
  tcase_set_timeout(tc, 300);
  tcase_add_test(tc, features_named);
  tcase_add_test(tc, train_predict_evaluate);
  tcase_add_test(tc, bad_models_refused);
  tcase_add_test(tc, missing_library_falls_back);
  tcase_add_test(tc, trees_evaluated);
  tcase_add_test(tc, points_ranked);
  tcase_add_test(tc, builtin_model);
  tcase_add_test(tc, import_csv);
  tcase_add_test(tc, gopc_tune_arguments);
  tcase_add_test(tc, gopc_train_evaluate);
  suite_add_tcase(s, tc);
  return tu_run(s);
}
