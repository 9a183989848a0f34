/* tune/predict.c: the learned predictor of the autotuner.
 *
 * Gradient-boosted trees (XGBoost, through xgb.c's dlopen'ed C API), as
 * uGrapher uses LightGBM: from the features of a graph, an operator, F and
 * one candidate schedule, predict the candidate's log time; ranking the
 * legal points of the space by that prediction picks a schedule for a
 * graph never measured. The label is the log of the time over the best
 * time measured in the same case (graph, operator, F, GPU): only the order
 * within a case matters, and dividing by the case's best keeps the trees
 * from spending their splits on the size of the graph.
 *
 * Training reads the tuning database (tune/db.c): every row whose
 * operator shape and point facts are recorded, the fastest time per case
 * and schedule. XGBoost trains the trees; they are then read out of its
 * text dump into gop's own model (tune/trees.c), which is what is saved
 * beside the database (DB.xgb) and what ranks: choosing needs no
 * libxgboost, training does.
 *
 * The evaluation is leave-one-graph-out: for each graph, train on the
 * others' rows, and in each case of that graph take the measured schedule
 * the predictor ranks first; its time over the case's best, as a geometric
 * mean over cases, is the number reported (beside the cost model's and the
 * default schedule's on the same cases).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/runtime.h"
#include "tune/tune.h"
#include "tune/xgb.def"

static const char *const feature_names[TUNE_NFEATURES] = {
    "log2_nv",        "log2_ne",         "deg_mean",        "deg_cv",
    "log2_deg_max",   "log2_aes",        "edge_rows",       "edge_red_rows",
    "edge_scalars",   "vertex_rows",     "vertex_scalars",  "feature_loop",
    "log2_F",         "thread_vertex",   "warp_vertex",     "thread_edge",
    "warp_edge",      "gas",             "gar",             "named",
    "G",              "T",               "warp",            "vertex",
    "atomic_rows",    "atomic_scalars",  "kernels",         "model_log_us",
    "model_memory",   "model_issue",     "model_critical",  "occupancy",
    "model_rel_log",  "log2_unroll",     "log2_vec",        "log2_occupancy",
};
enum { F_MODEL_LOG = 27, F_MODEL_REL = 32 };

const char *tune_feature_name(int i) {
  return i >= 0 && i < TUNE_NFEATURES ? feature_names[i] : NULL;
}

static float lg(double x) { return (float)log2(x > 1e-9 ? x : 1e-9); }

void tune_features(const TuneGraphSig *g, const TuneOpShape *s, int64_t F, const TunePoint *p,
                   float out[TUNE_NFEATURES]) {
  TuneCost c;
  tune_model_cost(s, p, g, F, &c);
  double dm = g->deg_mean > 0 ? g->deg_mean : 1;
  float v[TUNE_NFEATURES] = {
      lg((double)g->nv),
      lg((double)g->ne),
      (float)g->deg_mean,
      (float)(g->deg_std / dm),
      lg((double)g->deg_max + 1),
      lg(g->aes + 1),
      (float)s->edge_rows,
      (float)s->edge_red_rows,
      (float)s->edge_scalars,
      (float)s->vertex_rows,
      (float)s->vertex_scalars,
      (float)s->feature_loop,
      s->feature_loop && F > 0 ? lg((double)F) : 0,
      p->strategy == TUNE_THREAD_VERTEX,
      p->strategy == TUNE_WARP_VERTEX,
      p->strategy == TUNE_THREAD_EDGE,
      p->strategy == TUNE_WARP_EDGE,
      p->strategy == TUNE_GAS,
      p->strategy == TUNE_GAR,
      p->strategy == TUNE_NAMED,
      (float)p->G,
      (float)p->T,
      p->warp,
      p->vertex,
      (float)p->atomic_rows,
      (float)p->atomic_scalars,
      (float)p->kernels,
      lg(c.time_us),
      lg(c.memory_us),
      lg(c.issue_us),
      lg(c.critical_us),
      (float)c.occupancy,
      0, /* model_rel_log: tune_features_relative */
      /* a named point's knobs the model reads only through its estimate:
       * edges in flight, features a lane loads, the threads per SM its
       * stage asks for (0: the default, 1024) */
      lg(p->unroll > 1 ? p->unroll : 1),
      lg(p->vec > 1 ? p->vec : 1),
      lg(p->occ > 0 ? p->occ : 1024),
  };
  memcpy(out, v, sizeof v);
}

/* The label is a time over the case's best, so what ranks candidates is
 * the cost model's time relative to the case's other candidates, which
 * the absolute terms above leave the trees to rediscover per graph. */
void tune_features_relative(float *x, int n) {
  float least = INFINITY;
  for (int i = 0; i < n; i++) least = fminf(least, x[(size_t)i * TUNE_NFEATURES + F_MODEL_LOG]);
  for (int i = 0; i < n; i++)
    x[(size_t)i * TUNE_NFEATURES + F_MODEL_REL] =
        x[(size_t)i * TUNE_NFEATURES + F_MODEL_LOG] - least;
}

/* ---- training ---- */

/* Training parameters: small trees, shrinkage, one thread so that a
 * model is the same on every run and machine. */
static const char *const params[][2] = {
    {"objective", "reg:squarederror"}, {"max_depth", "8"}, {"eta", "0.1"},
    {"min_child_weight", "1"},         {"subsample", "1"}, {"seed", "0"},
    {"nthread", "1"},                  {"verbosity", "0"},
};
enum { ROUNDS = 200 };

/* The booster's trees as ours (trees.c): its text dump read tree by tree,
 * the base taken as XGBoost's prediction of the first row less the sum of
 * its leaves, then every row predicted both ways: a dump that does not
 * reproduce XGBoost (a threshold printed short, a split of a kind we do
 * not read) is an error here, never a quietly different model. */
static TunePredictor *from_booster(XgbBooster b, XgbMatrix m, const float *x, int n, Diag *d) {
  XgbUlong ntrees = 0, len = 0;
  const char **dump = NULL;
  const float *want = NULL;
  if (RT_XGB(d, XGBoosterDumpModelEx, (b, "", 0, "text", &ntrees, &dump)) != 0) return NULL;
  TunePredictor *p = tune_predictor_new();
  int rc = p ? 0 : -1;
  for (XgbUlong t = 0; rc == 0 && t < ntrees; t++) rc = tune_predictor_add_dump_tree(p, dump[t], d);
  if (rc == 0) rc = RT_XGB(d, XGBoosterPredict, (b, m, 0, 0, 0, &len, &want));
  if (rc == 0 && len != (XgbUlong)n) {
    ir_error(d, (Loc){"predictor", 0, 0}, "XGBoosterPredict gave %" PRIu64 " values for %d rows",
             (uint64_t)len, n);
    rc = -1;
  }
  if (rc == 0) tune_predictor_set_base(p, want[0] - tune_predictor_leaves(p, x));
  for (int i = 0; rc == 0 && i < n; i++) {
    float got;
    tune_predictor_predict(p, x + (size_t)i * TUNE_NFEATURES, 1, &got);
    if (fabsf(got - want[i]) > 1e-4f * (1 + fabsf(want[i]))) {
      ir_error(d, (Loc){"predictor", 0, 0},
               "the trees read from XGBoost's dump predict %g for row %d where XGBoost "
               "predicts %g",
               got, i, want[i]);
      rc = -1;
    }
  }
  if (rc != 0) {
    tune_predictor_free(p);
    p = NULL;
  }
  return p;
}

TunePredictor *tune_predictor_train(const float *x, const float *y, int n, Diag *d) {
  if (n < 2) {
    ir_error(d, (Loc){"predictor", 0, 0},
             "too few measurements to train on (%d; at least 2 of cases with two or more "
             "schedules)",
             n);
    return NULL;
  }
  if (tune_xgb_open(d) != 0) return NULL;
  XgbMatrix m = NULL;
  XgbBooster b = NULL;
  int rc = RT_XGB(d, XGDMatrixCreateFromMat, (x, (XgbUlong)n, TUNE_NFEATURES, NAN, &m));
  if (rc == 0) rc = RT_XGB(d, XGDMatrixSetFloatInfo, (m, "label", y, (XgbUlong)n));
  if (rc == 0) rc = RT_XGB(d, XGBoosterCreate, (&m, 1, &b));
  for (size_t i = 0; rc == 0 && i < sizeof params / sizeof *params; i++)
    rc = RT_XGB(d, XGBoosterSetParam, (b, params[i][0], params[i][1]));
  for (int it = 0; rc == 0 && it < ROUNDS; it++)
    rc = RT_XGB(d, XGBoosterUpdateOneIter, (b, it, m));
  TunePredictor *p = rc == 0 ? from_booster(b, m, x, n, d) : NULL;
  if (b) tune_xgb_api()->XGBoosterFree(b);
  if (m) tune_xgb_api()->XGDMatrixFree(m);
  return p;
}

char *tune_predictor_path(const char *db_path) {
  char *p = NULL;
  return asprintf(&p, "%s.xgb", db_path) < 0 ? NULL : p;
}

/* ---- data sets from the database ---- */

typedef struct Row {
  TuneGraphSig g;
  TuneOpShape shape;
  uint64_t op_hash;
  int64_t F;
  char gpu[96], op[48], dtype[16];
  int cc;
  TunePoint p;
  double time_ms;
  int graph, kase; /* ids, filled after reading */
} Row;

/* A point made from its lowered IR (tune_point_make), kept per operator
 * and schedule: it does not depend on the graph. */
typedef struct MadePoint {
  uint64_t op_hash;
  char text[64];
  int made; /* 0: p holds the point; else the schedule did not lower */
  TunePoint p;
} MadePoint;

typedef struct Rows {
  Row *r;
  int n, cap;
  int skipped_shape, skipped_facts, skipped_text, skipped_time;
  const IrModule *lib;
  MadePoint *made;
  int nmade, capmade;
  Arena *arena;
} Rows;

/* The point of `text` on the library's operator `name` as the schedule
 * chooser makes it (lowered: the lane model's facts, team, groups, ...),
 * or NULL where the library has no such operator or the schedule does
 * not lower (then the row keeps the facts the database recorded). */
static const TunePoint *made_point(Rows *rs, const char *name, uint64_t op_hash,
                                   const char *text) {
  for (int i = 0; i < rs->nmade; i++)
    if (rs->made[i].op_hash == op_hash && !strcmp(rs->made[i].text, text))
      return rs->made[i].made == 0 ? &rs->made[i].p : NULL;
  const IrOp *op = rs->lib ? ir_module_find_op(rs->lib, name) : NULL;
  if (!op || tune_op_hash(op) != op_hash || strlen(text) >= sizeof rs->made[0].text) return NULL;
  if (!rs->arena && !(rs->arena = ir_arena_new())) return NULL;
  if (rs->nmade == rs->capmade) {
    int cap = rs->capmade ? 2 * rs->capmade : 64;
    MadePoint *more = realloc(rs->made, sizeof *more * (size_t)cap);
    if (!more) return NULL;
    rs->made = more;
    rs->capmade = cap;
  }
  MadePoint *m = &rs->made[rs->nmade++];
  m->op_hash = op_hash;
  snprintf(m->text, sizeof m->text, "%s", text);
  m->made = tune_point_make(op, rs->lib, text, rs->arena, &m->p, NULL);
  return m->made == 0 ? &m->p : NULL;
}

static void collect(void *ctx, const TuneKey *k, const TuneRecord *rec) {
  Rows *rs = ctx;
  if (!k->shape) {
    rs->skipped_shape++;
    return;
  }
  if (!rec->have_facts) {
    rs->skipped_facts++;
    return;
  }
  if (!(rec->time_ms > 0) || !isfinite(rec->time_ms)) {
    rs->skipped_time++;
    return;
  }
  Row row = {.g = k->graph, .shape = *k->shape, .op_hash = k->op_hash, .F = k->F,
             .cc = k->cc, .time_ms = rec->time_ms};
  snprintf(row.gpu, sizeof row.gpu, "%s", k->gpu ? k->gpu : "");
  snprintf(row.op, sizeof row.op, "%s", k->op_name ? k->op_name : "?");
  snprintf(row.dtype, sizeof row.dtype, "%s", k->dtype ? k->dtype : "f32");
  /* the point as the chooser sees it at run time (tune_space_choice
   * makes its candidates so), where this build can lower the schedule on
   * the library's operator of that name and hash; else the facts the
   * database recorded on the parsed point */
  const TunePoint *made = made_point(rs, row.op, row.op_hash, rec->schedule);
  if (made) {
    row.p = *made;
    /* and the operator's shape as this build reads it (the database does
     * not keep every count: edge_dst_rows) */
    tune_op_shape(ir_module_find_op(rs->lib, row.op), &row.shape);
  } else {
    if (tune_point_parse(rec->schedule, rs->lib, &row.p) != 0) {
      rs->skipped_text++;
      return;
    }
    row.p.atomic_rows = rec->atomic_rows;
    row.p.atomic_scalars = rec->atomic_scalars;
    row.p.kernels = rec->kernels;
    row.p.warp = rec->warp;
    row.p.vertex = rec->vertex;
  }
  /* One row per case and schedule: the fastest, as the database's look-up
   * takes it. */
  for (int i = 0; i < rs->n; i++) {
    Row *o = &rs->r[i];
    if (o->op_hash == row.op_hash && o->F == row.F && o->cc == row.cc &&
        memcmp(&o->g, &row.g, sizeof row.g) == 0 && strcmp(o->gpu, row.gpu) == 0 &&
        strcmp(o->p.text, row.p.text) == 0) {
      if (row.time_ms < o->time_ms) o->time_ms = row.time_ms;
      return;
    }
  }
  if (rs->n == rs->cap) {
    Row *more = realloc(rs->r, sizeof *more * (size_t)(rs->cap = rs->cap ? 2 * rs->cap : 256));
    if (!more) return;
    rs->r = more;
  }
  rs->r[rs->n++] = row;
}

/* Numbers graphs and cases. */
static void number(Rows *rs, int *ngraphs, int *ncases) {
  *ngraphs = *ncases = 0;
  for (int i = 0; i < rs->n; i++) {
    Row *a = &rs->r[i];
    a->graph = a->kase = -1;
    for (int j = 0; j < i && (a->graph < 0 || a->kase < 0); j++) {
      const Row *b = &rs->r[j];
      bool same_g = memcmp(&a->g, &b->g, sizeof a->g) == 0;
      if (same_g && a->graph < 0) a->graph = b->graph;
      if (same_g && a->kase < 0 && a->op_hash == b->op_hash && a->F == b->F && a->cc == b->cc &&
          strcmp(a->gpu, b->gpu) == 0)
        a->kase = b->kase;
    }
    if (a->graph < 0) a->graph = (*ngraphs)++;
    if (a->kase < 0) a->kase = (*ncases)++;
  }
}

static int read_rows(const char *db_path, const IrModule *lib, Rows *rs, int *ngraphs,
                     int *ncases, Diag *d) {
  memset(rs, 0, sizeof *rs);
  rs->lib = lib;
  TuneDb *db = tune_db_open(db_path, d);
  if (!db) return -1;
  int n = tune_db_list(db, collect, rs, d);
  tune_db_close(db);
  free(rs->made);
  if (rs->arena) ir_arena_free(rs->arena);
  rs->made = NULL;
  rs->arena = NULL;
  if (n < 0) {
    free(rs->r);
    return -1;
  }
  number(rs, ngraphs, ncases);
  return 0;
}

/* Features and labels of the rows `use` selects (NULL: all) whose case
 * has at least two schedules. Returns the count. */
static int training_set(const Rows *rs, int ncases, const bool *use, float **x, float **y) {
  double *best = malloc(sizeof *best * (size_t)(ncases + 1));
  int *count = calloc((size_t)ncases + 1, sizeof *count);
  *x = malloc(sizeof **x * TUNE_NFEATURES * (size_t)(rs->n + 1));
  *y = malloc(sizeof **y * (size_t)(rs->n + 1));
  int m = 0;
  if (best && count && *x && *y) {
    for (int c = 0; c < ncases; c++) best[c] = INFINITY;
    for (int i = 0; i < rs->n; i++) {
      const Row *r = &rs->r[i];
      if (use && !use[i]) continue;
      best[r->kase] = fmin(best[r->kase], r->time_ms);
      count[r->kase]++;
    }
    int *kase = malloc(sizeof *kase * (size_t)(rs->n + 1));
    double *least = malloc(sizeof *least * (size_t)(ncases + 1));
    if (kase && least) {
      for (int c = 0; c < ncases; c++) least[c] = INFINITY;
      for (int i = 0; i < rs->n; i++) {
        const Row *r = &rs->r[i];
        if ((use && !use[i]) || count[r->kase] < 2) continue;
        float *f = *x + (size_t)m * TUNE_NFEATURES;
        tune_features(&r->g, &r->shape, r->F, &r->p, f);
        least[r->kase] = fmin(least[r->kase], f[F_MODEL_LOG]);
        kase[m] = r->kase;
        (*y)[m++] = (float)log2(r->time_ms / best[r->kase]);
      }
      for (int i = 0; i < m; i++) {
        float *f = *x + (size_t)i * TUNE_NFEATURES;
        f[F_MODEL_REL] = f[F_MODEL_LOG] - (float)least[kase[i]];
      }
    }
    free(kase);
    free(least);
  }
  free(best);
  free(count);
  return m;
}

/* The points of the rows `use` selects (NULL: all) and the number of cases
 * each was measured in, added to `p`'s table of points. 0, or -1 when out
 * of memory. */
static int count_points(const Rows *rs, int ncases, const bool *use, TunePredictor *p) {
  const char **text = NULL;
  bool *seen = NULL; /* seen[t * ncases + case] */
  int nt = 0, rc = 0;
  for (int i = 0; i < rs->n && rc == 0; i++) {
    if (use && !use[i]) continue;
    const char *core = tune_point_core(rs->r[i].p.text);
    int t = 0;
    while (t < nt && strcmp(text[t], core) != 0) t++;
    if (t == nt) {
      const char **more = realloc(text, sizeof *text * (size_t)(nt + 1));
      bool *mseen = more ? realloc(seen, sizeof *seen * (size_t)(nt + 1) * (size_t)ncases) : NULL;
      if (more) text = more;
      if (!mseen) {
        rc = -1;
        break;
      }
      seen = mseen;
      text[nt] = core;
      memset(seen + (size_t)nt * (size_t)ncases, 0, sizeof *seen * (size_t)ncases);
      nt++;
    }
    seen[(size_t)t * (size_t)ncases + (size_t)rs->r[i].kase] = true;
  }
  for (int t = 0; t < nt && rc == 0; t++) {
    int cases = 0;
    for (int c = 0; c < ncases; c++) cases += seen[(size_t)t * (size_t)ncases + (size_t)c];
    rc = tune_predictor_add_point(p, text[t], cases);
  }
  free(text);
  free(seen);
  return rc;
}

/* Whether the chooser ranks a point of this text by the trees (measured in
 * enough cases, or a model listing no points). */
static bool point_known(const TunePredictor *p, const char *text) {
  int cases = tune_predictor_point_cases(p, text);
  return cases < 0 || cases >= TUNE_POINT_MIN_CASES;
}

/* The chooser's order: the points the trees know before the others, each
 * side by predicted time. */
static bool ranks_before(bool known_a, float ya, bool known_b, float yb) {
  return known_a != known_b ? known_a : ya < yb;
}

static void note_skipped(const Rows *rs, const char *db_path, Diag *d) {
  if (rs->skipped_shape + rs->skipped_facts + rs->skipped_text + rs->skipped_time == 0) return;
  ir_note(d, (Loc){db_path, 0, 0},
          "left out: %d rows of operators whose shape is not recorded, %d without the "
          "point's lowered facts (measured by an older gop), %d of schedules this build "
          "does not know, %d without a time",
          rs->skipped_shape, rs->skipped_facts, rs->skipped_text, rs->skipped_time);
}

int tune_predictor_train_db(const char *db_path, const IrModule *lib, TuneTrainInfo *info,
                            Diag *d) {
  memset(info, 0, sizeof *info);
  Rows rs;
  int ngraphs, ncases;
  if (read_rows(db_path, lib, &rs, &ngraphs, &ncases, d) != 0) return -1;
  note_skipped(&rs, db_path, d);
  float *x, *y;
  int m = training_set(&rs, ncases, NULL, &x, &y);
  info->rows = m;
  info->graphs = ngraphs;
  info->cases = ncases;
  int rc = -1;
  TunePredictor *p = tune_predictor_train(x, y, m, d);
  /* the points it knows, and the operators it may rank: the shapes and
   * dtypes it was trained on */
  if (p && count_points(&rs, ncases, NULL, p) != 0) {
    ir_error(d, (Loc){db_path, 0, 0}, "the predictor: too many schedule points");
    tune_predictor_free(p);
    p = NULL;
  }
  for (int i = 0; p && i < rs.n; i++) {
    TuneShapeKey k;
    tune_shape_key(&rs.r[i].shape, rs.r[i].dtype, &k);
    if (tune_predictor_add_shape(p, &k) != 0) {
      ir_error(d, (Loc){db_path, 0, 0}, "the predictor: too many operator shapes");
      tune_predictor_free(p);
      p = NULL;
    }
  }
  char *path = tune_predictor_path(db_path);
  if (p && path && tune_predictor_save(p, path, d) == 0) {
    snprintf(info->model_path, sizeof info->model_path, "%s", path);
    rc = 0;
  }
  tune_predictor_free(p);
  free(path);
  free(x);
  free(y);
  free(rs.r);
  return rc;
}

/* ---- choosing ---- */

int tune_predictor_rank(const TunePredictor *p, const TuneOpShape *shape, TunePoint *pts, int n,
                        const TuneGraphSig *g, int64_t F, float *predicted) {
  float *x = malloc(sizeof *x * TUNE_NFEATURES * (size_t)(n + 1));
  float *y = malloc(sizeof *y * (size_t)(n + 1));
  bool *known = malloc(sizeof *known * (size_t)(n + 1));
  int rc = -1;
  if (x && y && known) {
    for (int i = 0; i < n; i++) {
      tune_features(g, shape, F, &pts[i], x + (size_t)i * TUNE_NFEATURES);
      known[i] = point_known(p, pts[i].text);
    }
    tune_features_relative(x, n);
    rc = tune_predictor_predict(p, x, n, y);
  }
  if (rc == 0) {
    /* Insertion sort in the chooser's order, stable: ties keep the model's
     * order. */
    for (int i = 1; i < n; i++) {
      TunePoint tp = pts[i];
      float ty = y[i];
      bool tk = known[i];
      int j = i;
      for (; j > 0 && ranks_before(tk, ty, known[j - 1], y[j - 1]); j--) {
        pts[j] = pts[j - 1];
        y[j] = y[j - 1];
        known[j] = known[j - 1];
      }
      pts[j] = tp;
      y[j] = ty;
      known[j] = tk;
    }
    if (predicted) memcpy(predicted, y, sizeof *y * (size_t)n);
  }
  free(x);
  free(y);
  free(known);
  return rc;
}

/* ---- leave-one-graph-out ---- */

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

int tune_predictor_evaluate(const char *db_path, const IrModule *lib, FILE *out,
                            TuneEvalInfo *info, Diag *d) {
  memset(info, 0, sizeof *info);
  Rows rs;
  int ngraphs, ncases;
  if (read_rows(db_path, lib, &rs, &ngraphs, &ncases, d) != 0) return -1;
  note_skipped(&rs, db_path, d);
  info->graphs = ngraphs;
  int rc = 0;
  if (ngraphs < 2) {
    ir_error(d, (Loc){db_path, 0, 0},
             "leave-one-graph-out needs measurements on at least two graphs (the database "
             "has %d)",
             ngraphs);
    free(rs.r);
    return -1;
  }
  bool *use = malloc(sizeof *use * (size_t)(rs.n + 1));
  double *ratios = malloc(sizeof *ratios * (size_t)(ncases + 1));
  double log_pred = 0, log_model = 0, log_default = 0;
  int ndefault = 0;
  if (out)
    fprintf(out, "%-12s %6s %9s %9s %9s  %s\n", "graph |E|", "cases", "predictor", "model",
            "default", "worst case (predicted schedule / best)");
  for (int gi = 0; gi < ngraphs && rc == 0 && use && ratios; gi++) {
    for (int i = 0; i < rs.n; i++) use[i] = rs.r[i].graph != gi;
    float *x, *y;
    int m = training_set(&rs, ncases, use, &x, &y);
    Diag quiet; /* a graph whose peers give nothing to learn from is skipped */
    ir_diag_init(&quiet, NULL);
    TunePredictor *p = m >= 2 ? tune_predictor_train(x, y, m, d) : NULL;
    ir_diag_free(&quiet);
    free(x);
    free(y);
    if (p && count_points(&rs, ncases, use, p) != 0) {
      tune_predictor_free(p);
      p = NULL;
      ir_error(d, (Loc){db_path, 0, 0}, "the predictor: out of memory");
    }
    if (m >= 2 && !p) {
      rc = -1;
      break;
    }
    int64_t ne = 0;
    double gp = 0, gm = 0, gd = 0, worst = 1;
    int gcases = 0, gdef = 0;
    char worst_text[200] = "";
    for (int c = 0; c < ncases && p; c++) {
      int idx[512], k = 0;
      for (int i = 0; i < rs.n && k < 512; i++)
        if (rs.r[i].graph == gi && rs.r[i].kase == c) idx[k++] = i;
      if (k < 2) continue;
      float fx[512 * TUNE_NFEATURES], fy[512];
      double best = INFINITY, model_best = INFINITY;
      int model_pick = -1, def = -1;
      /* the picks are among what the schedule chooser would rank
       * (tune_space_choice): the lane model's points where the case has
       * any, else every point; the best is over everything measured */
      bool lanes = false;
      for (int j = 0; j < k; j++) lanes |= rs.r[idx[j]].p.lanes;
      for (int j = 0; j < k; j++) {
        const Row *r = &rs.r[idx[j]];
        ne = r->g.ne;
        tune_features(&r->g, &r->shape, r->F, &r->p, fx + (size_t)j * TUNE_NFEATURES);
        best = fmin(best, r->time_ms);
        if (lanes && !r->p.lanes) continue;
        TuneCost cost;
        tune_model_cost(&r->shape, &r->p, &r->g, r->F, &cost);
        if (cost.time_us < model_best) {
          model_best = cost.time_us;
          model_pick = idx[j];
        }
        if (strcmp(r->p.text, "warp_edge(1, 1)") == 0 ||
            (def < 0 && strcmp(r->p.text, "thread_edge(1, 1)") == 0))
          def = idx[j];
      }
      tune_features_relative(fx, k);
      tune_predictor_predict(p, fx, k, fy);
      /* ... and as tune_predictor_rank orders them: the points the trees
       * know first */
      int pick = -1;
      bool pick_known = false;
      for (int j = 0; j < k; j++) {
        if (lanes && !rs.r[idx[j]].p.lanes) continue;
        bool known = point_known(p, rs.r[idx[j]].p.text);
        if (pick < 0 || ranks_before(known, fy[j], pick_known, fy[pick])) {
          pick = j;
          pick_known = known;
        }
      }
      const Row *pr = &rs.r[idx[pick]];
      double ratio = pr->time_ms / best;
      ratios[info->cases++] = ratio;
      log_pred += log(ratio);
      log_model += log(rs.r[model_pick].time_ms / best);
      gp += log(ratio);
      gm += log(rs.r[model_pick].time_ms / best);
      gcases++;
      if (def >= 0) {
        log_default += log(rs.r[def].time_ms / best);
        gd += log(rs.r[def].time_ms / best);
        ndefault++;
        gdef++;
      }
      if (ratio > worst) {
        worst = ratio;
        snprintf(worst_text, sizeof worst_text, "%.2fx: %s F=%" PRId64 ", chose %s",
                 ratio, pr->op, pr->F, pr->p.text);
      }
    }
    tune_predictor_free(p);
    if (rc == 0 && out && gcases > 0) {
      char dcol[16] = "-";
      if (gdef) snprintf(dcol, sizeof dcol, "%.3fx", exp(gd / gdef));
      fprintf(out, "%-12" PRId64 " %6d %8.3fx %8.3fx %9s  %s\n", ne, gcases, exp(gp / gcases),
              exp(gm / gcases), dcol, worst_text);
    }
  }
  if (rc == 0 && info->cases == 0) {
    ir_error(d, (Loc){db_path, 0, 0},
             "no case (graph, operator, F) has two or more schedules measured: nothing to "
             "evaluate");
    rc = -1;
  }
  if (rc == 0) {
    info->geomean = exp(log_pred / info->cases);
    info->model_geomean = exp(log_model / info->cases);
    info->default_geomean = ndefault ? exp(log_default / ndefault) : 0;
    info->default_cases = ndefault;
    qsort(ratios, (size_t)info->cases, sizeof *ratios, cmp_double);
    info->worst = ratios[info->cases - 1];
    info->median = ratios[info->cases / 2];
    int within = 0;
    for (int i = 0; i < info->cases; i++) within += ratios[i] <= 1.10;
    info->within_10pct = within;
  }
  free(use);
  free(ratios);
  free(rs.r);
  return rc;
}
