/* tune/tune.h: autotuning.
 *
 * The search space of an operator's schedules, the analytical cost model
 * that ranks it, the SQLite tuning database, the tuner that measures the
 * best points on the GPU and checks each against the interpreter, the
 * learned predictor (XGBoost, opened with runtime/'s loader) and the import
 * of a GPU suite's CSV. Sectioned by the file that implements each part.
 *
 * Uses: ir/, lang/ (parsing schedule text), passes/ (applying and lowering
 * a candidate), codegen/ (compiling it), graph/, interp/ (the reference),
 * runtime/ (measuring). The API (api/) is its only client; nothing below
 * the API may include this header.
 */
#ifndef GOP_TUNE_H
#define GOP_TUNE_H

#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "graph/graph.h"
#include "ir/ir.h"
#include "runtime/runtime.h"

/* ---------------------------------------------------------------------------
 * space.c, model.c, db.c: autotuning (issue 6, CPU half).
 *
 * The search space of an operator is the named schedules of
 * stdlib/schedules.gop with their knobs G (grouping) and T (feature
 * tiling); a point is legal when the schedule applies and lowers (the same
 * check the compiler makes). The cost model ranks points without running
 * them, from the graph's signature, F, the operator's shape and the lowered
 * IR's plain/atomic decisions (docs/autotuning.md gives the formula). The
 * tuning database keeps measured schedules in SQLite. Threads per block and
 * vectorisation are not knobs yet; nothing here needs a GPU.
 */
typedef enum TuneStrategy {
  TUNE_THREAD_VERTEX,
  TUNE_WARP_VERTEX,
  TUNE_THREAD_EDGE,
  TUNE_WARP_EDGE,
  TUNE_GAS,
  TUNE_GAR,
  TUNE_NAMED, /* another named schedule: its name and arguments are the text */
  TUNE_STRATEGY_COUNT
} TuneStrategy;

/* "thread_vertex" ... "gar": the named schedule of a strategy. */
const char *tune_strategy_name(TuneStrategy s);

/* What the cost model needs to know of an operator, independent of the
 * schedule: accesses per edge and per vertex, counted in the unscheduled
 * IR (a reduction store counts twice: it reads and writes). */
typedef struct TuneOpShape {
  int edge_rows;      /* feature-wide accesses inside edge loops, but */
  int edge_red_rows;  /* reductions into vertex rows inside edge loops:
                         per edge when edge-parallel, per vertex else */
  int edge_scalars;   /* scalar accesses inside edge loops (W[e], S[e]) */
  int vertex_rows;    /* feature-wide accesses outside edge loops */
  int vertex_scalars;
  bool feature_loop;  /* some stage has a feature loop (lanes can take it) */
  int edge_dst_rows;  /* of edge_rows, reads of destination rows (Y[v, f]
                         in in_edges(v)): once per edge when edge-parallel,
                         once per destination row or neighbour group when
                         a warp or team walks the row's edges (not stored
                         in the tuning database: 0 in a shape read back) */
  int order_reductions; /* max= and min= stores: reductions by comparison,
                           which the predictor keeps apart from sums (not
                           stored in the database either) */
} TuneOpShape;

/* One legal point of the space. */
typedef struct TunePoint {
  char text[64];         /* the schedule: "warp_edge(4, 2)", "gar()" */
  TuneStrategy strategy;
  int G, T;              /* 1 for gas and gar */
  int atomic_rows;       /* lowered stores decided atomic: feature-wide */
  int atomic_scalars;    /*   ... and scalar */
  int narrow_atomics;    /* atomic stores into 16-bit tensors: the point
                            cannot compile (codegen/store.c) */
  int kernels;           /* top-level stages of the lowered IR */
  bool warp, vertex;     /* a warp per worker; vertex-parallel (for
                            TUNE_NAMED read off the lowered IR) */
  /* The lane model's reading of a named schedule's lowered IR (one kernel
   * whose warps own destination rows or neighbour groups, their lanes on
   * features; tune/model.c): `lanes` when it applies. */
  bool lanes;
  int rows;   /* destinations per warp (0: a neighbour group per warp) */
  int egroup; /* the neighbour-group size G (0: whole rows) */
  int eflat;  /* edge-parallel: G consecutive edge ids a warp, in id order
                 (sddmm_vec4; 0: rows or groups) */
  int team;   /* lanes per group or row set (@team(T)); 0: the whole warp */
  int fpp;    /* features of a row a warp (or team) covers per pass */
  int vec;    /* features per lane per load (1 or the vector width) */
  int unroll; /* edges in flight per lane (the edge loop's unroll) */
  int occ;    /* threads per SM its stage asks for (@occupancy); 0: default */
  int elem;   /* bytes of an element of the rows the edges gather (2 for
                 f16/bf16, 4 for f32, 8 for f64) */
  bool all_atomic; /* every group's partial row is added atomically (no
                      owned store for a row whose group is its only one) */
  bool finalise;   /* a second kernel passes over Y once (mean's division,
                      max's empty rows) */
  bool prefetch;   /* an edge loop shuffles its indices (prefetch(e)) */
  bool filled;     /* the op's first stage fills only the rows its groups do
                      not own (passes/fill.c), instead of a fill of all Y */
  bool groups;     /* some loop runs over neighbour groups: not for kernels
                      of 64-bit indices (docs/index64.md) */
  bool shuffle;    /* a per-edge reduction over lanes (a dot product's
                      butterfly of shuffles, conflicts.c) */
  bool reversed;   /* transpose(): runs on the reversed graph, which a graph
                      built on the device does not have */
  bool panels;     /* panel(g, P) (passes/panel.c): tuned, not chosen
                      untuned (tune_space_choice), and only on graphs with
                      a host CSR to cut the panel table from */
} TunePoint;

/* Keeps the points of `pts` that can compile: none with an atomic store
 * into a 16-bit tensor (TunePoint.narrow_atomics; codegen/store.c refuses
 * it); returns how many, in their order. */
int tune_space_buildable(TunePoint *pts, int n);
/* The prefix of a named point asked without atomics (tune_space_choice
 * gives 16-bit outputs their group points back in this form). */
#define TUNE_DETERMINISTIC "deterministic(); "
/* The prefix of a named point on the reversed graph (passes/transpose.c;
 * tune_space_named gives an operator walking out-edges its forward-like
 * points in this form). */
#define TUNE_TRANSPOSE "transpose(); "
/* `text` past those prefixes: the named schedule and its arguments. */
const char *tune_point_core(const char *text);
/* The operator's shape (from its unscheduled IR). */
void tune_op_shape(const IrOp *op, TuneOpShape *out);
/* Makes a point from schedule text `text` ("name(G, T)" of a named
 * schedule): applies it to a copy of `op` with the named schedules of
 * `lib`, lowers it, and records the lowered IR's atomic stores. Returns 0,
 * 1 when the schedule is refused for this operator (the reason goes to
 * `why` when not NULL), or -1 after reporting text that names no known
 * strategy. `op` is never changed. */
int tune_point_make(const IrOp *op, const IrModule *lib, const char *text,
                    Arena *a, TunePoint *out, Diag *why);

/* The knobs the space spans. */
#define TUNE_NUM_G 5 /* G in {1, 2, 4, 8, 16} */
#define TUNE_NUM_T 4 /* T in {1, 2, 4, 8} */
/* Every legal point of `op`: the four uGrapher strategies (warp_edge,
 * thread_edge, warp_vertex, thread_vertex: the model's ties go to the
 * first) x G x T, then gas() and gar(). *out is malloc'ed (the caller frees it); returns the
 * number of points, or -1 after reporting. The default schedule is one of
 * these points (warp_edge(1, 1) or thread_edge(1, 1)), so it is not listed
 * again. */
int tune_space_enumerate(const IrOp *op, const IrModule *lib, Arena *a,
                         TunePoint **out, Diag *d);
/* The other named schedules of `lib` that apply to `op` (gnnadvisor(G, T),
 * spmm_vec4(U), ... : any but the strategies), each on a small grid of its
 * integer parameters, as points of strategy TUNE_NAMED. The cost model
 * costs them only roughly (as the strategy their lowered IR is nearest
 * to), so they are kept apart: the tuner measures them beside the
 * modelled points, and the model's and the predictor's choices come from
 * tune_space_enumerate's points only. Returns the count or -1. */
int tune_space_named(const IrOp *op, const IrModule *lib, Arena *a, TunePoint **out,
                     Diag *d);

/* The candidates of the default choice (gop_choose_schedule): the named
 * schedules the lane model costs (tune/model.c), where the operator has
 * any (its absolute estimates are fitted, the strategies' are not, so the
 * two are not mixed), else tune_space_enumerate's points; with
 * `no_groups` (kernels of 64-bit indices, docs/index64.md) none that runs
 * over neighbour groups, with `no_reversed` (a graph built on the device)
 * none on the reversed graph. Returns the count (*out malloc'ed) or -1 after
 * reporting. */
int tune_space_choice(const IrOp *op, const IrModule *lib, bool no_groups, bool no_reversed,
                      Arena *a, TunePoint **out, Diag *d);

/* The graph's signature, as the model and the database key see it. */
typedef struct TuneGraphSig {
  int64_t nv, ne;
  double deg_mean, deg_std; /* in-degree std */
  int64_t deg_max;          /* in-degree max */
  double aes;
} TuneGraphSig;

void tune_graph_sig(const Graph *g, TuneGraphSig *out);
/* The signature the cost model and the predictor read for `op` on `g`:
 * tune_graph_sig's, but for an operator whose edge loops all walk
 * out-edges (the derived gradient of an aggregation: dX[v] sums over v's
 * out-edges) the out-degree's spread and maximum, the rows its warps walk.
 * (The tuning database keys records by tune_graph_sig's, the graph's.) A
 * graph built on the device, with no host CSC, gives its out-degree
 * maximum and the in-degree's spread. */
void tune_graph_sig_for(const Graph *g, const IrOp *op, TuneGraphSig *out);
bool tune_op_walks_out_edges(const IrOp *op);

/* The model's estimate for one point, with the terms it is made of (all in
 * microseconds but `bytes`): time = launch + max(memory, issue, critical). */
typedef struct TuneCost {
  double time_us;
  double memory_us, issue_us, critical_us, launch_us;
  double bytes;          /* moved without reuse of source rows */
  double bytes_reuse;    /* each input row once, outputs once: the bound */
  double atomics;        /* scalar atomic updates */
  double occupancy;      /* resident warps / what the GPU can hold (<= 1) */
} TuneCost;

/* Estimates the time of `p` on a graph with signature `g` at feature width
 * `F` (F is ignored when the op has no feature loop). */
void tune_model_cost(const TuneOpShape *shape, const TunePoint *p,
                     const TuneGraphSig *g, int64_t F, TuneCost *out);
/* An operator of `passes` stages over each destination's in-edges that
 * fuse (fuse_stages): the estimated time of all of them in one kernel, a
 * team of T lanes per destination (softmax_rows(T); `csr_edges`: the
 * graph's edge ids are in CSR order, each step one load in order), and of
 * the default mapping's kernel per stage with atomics (tune/model.c). */
double tune_model_fused_us(const TuneGraphSig *g, int passes, int T, bool csr_edges);
double tune_model_unfused_us(const TuneGraphSig *g, int passes);
/* ... and over neighbour groups of at most G in-edges, a team of T lanes
 * a group (T = 1: a thread) and a kernel per stage (softmax_teams(G, T),
 * softmax_groups(G)). */
double tune_model_teams_us(const TuneGraphSig *g, int passes, int G, int T);
/* Sorts `pts` by the model's time, fastest first (stable for ties). */
void tune_model_rank(const TuneOpShape *shape, TunePoint *pts, int n,
                     const TuneGraphSig *g, int64_t F);

/* The tuning database: a SQLite file, WAL mode, with its own
 * application_id and a schema version in user_version. */
typedef struct TuneDb TuneDb;

/* What a measurement is stored under; strings are copied. */
typedef struct TuneKey {
  uint64_t op_hash;     /* FNV-1a of the operator's IR text (tune_op_hash) */
  int64_t F;            /* feature width(s): F, or 0 for none */
  const char *dtype;    /* "f32" */
  TuneGraphSig graph;
  const char *gpu;      /* "NVIDIA H100 80GB HBM3" */
  int cc;               /* compute capability, 10 * major + minor */
  const char *compiler; /* GOP_VERSION */
  /* Not part of the key: tune_db_put records the operator's shape under
   * its hash when `shape` is set; tune_db_list fills both when known. */
  const char *op_name;
  const TuneOpShape *shape;
} TuneKey;

typedef struct TuneRecord {
  char schedule[128];
  double time_ms, gbps, bound_fraction;
  int64_t measured_at; /* Unix seconds */
  /* The point's lowered facts (TunePoint's), when have_facts. */
  bool have_facts;
  int atomic_rows, atomic_scalars, kernels;
  bool warp, vertex;
} TuneRecord;

/* FNV-1a (64-bit) of the operator's IR text. */
uint64_t tune_op_hash(const IrOp *op);
/* Opens `path`, creating it when missing. Refuses, with a message naming
 * the file and changing nothing, a file that is not a SQLite database, a
 * SQLite database of another application, and one of a newer schema than
 * this build knows; migrates older ones. NULL after reporting. */
TuneDb *tune_db_open(const char *path, Diag *d);
void tune_db_close(TuneDb *db); /* NULL is fine */
/* Stores a measurement in one transaction: all of the row or nothing.
 * 0 or -1 after reporting. */
int tune_db_put(TuneDb *db, const TuneKey *k, const TuneRecord *r, Diag *d);
/* The fastest record stored under exactly `k`: 1 found, 0 none, -1 after
 * reporting. */
int tune_db_get_best(TuneDb *db, const TuneKey *k, TuneRecord *out, Diag *d);
/* A vertex order measured by `gopc tune --orders` (stored under the key of
 * the graph in its own order): the order's name as gop_graph_reorder takes
 * it ("none" for the graph's own), its best schedule and time. */
typedef struct TuneOrder {
  char order[32];
  char schedule[128];
  double time_ms;
} TuneOrder;
/* Stores one order's measurement under `k`. 0 or -1 after reporting. */
int tune_db_put_order(TuneDb *db, const TuneKey *k, const TuneOrder *o, Diag *d);
/* Each order measured under exactly `k`, its fastest row, fastest first,
 * up to `max` of them in `out`: returns how many orders there are (0:
 * none), or -1 after reporting. What the file says is not checked here
 * (the caller checks the names and times before it uses them). */
int tune_db_orders(TuneDb *db, const TuneKey *k, TuneOrder *out, int max, Diag *d);
/* Calls `fn` for every record, in insertion order; returns the count or
 * -1 after reporting. */
typedef void (*TuneListFn)(void *ctx, const TuneKey *k, const TuneRecord *r);
int tune_db_list(TuneDb *db, TuneListFn fn, void *ctx, Diag *d);
/* The schema version this build writes. */
int tune_db_schema_version(void);
/* The application_id that marks a gop tuning database ("gopt"). */
#define TUNE_DB_APPLICATION_ID 0x676f7074

/* Parses schedule text ("warp_edge(4, 2)", "gar()", or another named
 * schedule of `lib` with up to four positive integer arguments; any name
 * when `lib` is NULL) into a point's strategy and knobs, without lowering:
 * the lowered facts stay zero. 0, or -1 when the text is none of these. */
int tune_point_parse(const char *text, const IrModule *lib, TunePoint *out);

/* ---------------------------------------------------------------------------
 * tune.c: the tuner, measuring candidates on the GPU (docs/autotuning.md).
 */
typedef struct TuneProgress {
  const char *phase;   /* before measuring: what is being prepared, else NULL */
  int done, total;     /* candidates measured so far, and planned */
  double elapsed_s, budget_s;
  const char *current; /* the candidate about to be measured */
  double best_ms;      /* the best verified time so far (0: none yet) */
  const char *best;
} TuneProgress;

typedef struct TuneJob {
  const IrOp *op;          /* as written (the interpreter's reference) */
  const IrModule *lib;     /* the named schedules it may use */
  const Graph *g;
  IrExtents ext;           /* by symbol id, all set */
  int64_t F;               /* for the model and the database key */
  void *const *inputs;     /* by tensor id: every input's data, in its dtype */
  const char *target;      /* NULL: the GPU's */
  double budget_s;         /* measuring stops once this much time has passed */
  int max_candidates;      /* 0: every legal point, in the model's order */
  int warmup, reps;
  int64_t check_edges;     /* larger graphs: proxy graph + anchor check */
  TuneDb *db;              /* NULL: nothing is stored */
  const char *compiler;    /* the key's compiler version */
  volatile sig_atomic_t *stop; /* set (by a signal handler): stop after the
                              candidate being measured */
  void (*progress)(void *ctx, const TuneProgress *p);
  void *progress_ctx;
} TuneJob;

typedef enum { TUNE_OK, TUNE_WRONG, TUNE_FAILED } TuneOutcome;

typedef struct TuneResult {
  char schedule[128];
  TuneOutcome outcome;
  double median_ms, min_ms, gbps, bound_fraction;
  double model_us, compile_ms, worst_rel;
  bool stored;
  int order;               /* its place in the model's ranking */
  char why[400];           /* WRONG and FAILED: what happened */
} TuneResult;

typedef enum { TUNE_CHECK_INTERPRETER, TUNE_CHECK_PROXY_AND_ANCHOR } TuneCheck;

typedef struct TuneReport {
  TuneResult *results;     /* malloc'ed: verified by time, then wrong, failed */
  int n;                   /* candidates measured or tried */
  int candidates;          /* legal points of the space */
  int measured, wrong, failed, stored;
  bool interrupted, out_of_budget;
  TuneCheck check;
  char anchor[128];        /* TUNE_CHECK_PROXY_AND_ANCHOR: the first verified */
  char device[128];
  uint64_t fewest_bytes;
  double copy_gbps, seconds, reference_s;
} TuneReport;

/* Tunes `job->op` on the GPU. RT_OK (the report may hold no verified
 * candidate), RT_NO_DRIVER / RT_NO_DEVICE when there is no GPU, RT_ERR
 * after reporting (a database that cannot be written stops the run; what
 * was stored stays). The report is filled in every case. */
RtStatus tune_run(const TuneJob *job, TuneReport *rep, Diag *d);
void tune_report_free(TuneReport *rep);

/* The small graph on which tune_run first checks the candidates for a
 * graph past TuneJob.check_edges, laid out as `g` is (edge ids in CSR
 * order, index width) so that kernels compiled for `g` run on it. */
Graph *tune_proxy_graph(const Graph *g, Diag *d);

/* ---------------------------------------------------------------------------
 * xgb.c, predict.c, trees.c: the learned predictor (trained with XGBoost, optional;
 * evaluated by trees.c without it).
 */
/* Opens libxgboost (once). 0, or -1 after reporting why not. */
int tune_xgb_open(Diag *d);
bool tune_xgb_available(void);
void tune_xgb_version(int *major, int *minor, int *patch);
/* 0 when `result` is 0; else reports `call` and XGBGetLastError, -1. */
int tune_xgb_check(Diag *d, const char *call, int result);

#define TUNE_NFEATURES 36
/* The features of one candidate: the graph's signature, the operator's
 * shape, F, the point's knobs and lowered facts, the cost model's terms.
 * The last, the cost model's time over the least it gives a candidate of
 * the same case (log2), is 0 here: tune_features_relative sets it over
 * the rows of one case. */
void tune_features(const TuneGraphSig *g, const TuneOpShape *s, int64_t F,
                   const TunePoint *p, float out[TUNE_NFEATURES]);
/* Sets the relative feature of `n` feature rows `x` of one case (the
 * candidates of one graph, operator and F). */
void tune_features_relative(float *x, int n);
const char *tune_feature_name(int i);

/* The predictor's model (tune/trees.c): XGBoost's trees, kept and
 * evaluated by gop, so that ranking needs no libxgboost. */
typedef struct TunePredictor TunePredictor;
/* An operator's shape as the features see it, and its dtype key: the
 * model ranks only operators of a shape and dtype it was trained on. */
#define TUNE_SHAPE_COUNTS 7
typedef struct TuneShapeKey {
  int count[TUNE_SHAPE_COUNTS]; /* edge_rows, edge_red_rows, edge_scalars,
                                   vertex_rows, vertex_scalars, feature_loop,
                                   order_reductions */
  char dtype[16];               /* ir_op_dtype_key's ("f32") */
} TuneShapeKey;
void tune_shape_key(const TuneOpShape *s, const char *dtype, TuneShapeKey *out);
/* Trains on `n` rows of features `x` and labels `y` (log2 of time over the
 * case's best) with XGBoost, and keeps its trees; checks that they predict
 * what XGBoost does on every row. NULL after reporting (libxgboost missing
 * included). */
TunePredictor *tune_predictor_train(const float *x, const float *y, int n, Diag *d);
/* Predicted labels of `n` rows; needs nothing but the model. Returns 0. */
int tune_predictor_predict(const TunePredictor *p, const float *x, int n, float *out);
/* Saves through a temporary file; 0 or -1. */
int tune_predictor_save(const TunePredictor *p, const char *path, Diag *d);
/* Loads a model file, refusing (NULL, with the reason and line) one that
 * is not ours, damaged, or of another feature set. */
TunePredictor *tune_predictor_load(const char *path, Diag *d);
/* The same from memory: `text` holds `len` bytes and a NUL after them;
 * `where` names it in messages. */
TunePredictor *tune_predictor_parse(const char *text, size_t len, const char *where, Diag *d);
/* The model built into the library (tune/builtin.model), parsed once;
 * NULL after reporting if it does not parse (a model of other features
 * than the build's: tools/train-builtin-model.sh remakes it). */
const TunePredictor *tune_predictor_builtin(Diag *d);
void tune_predictor_free(TunePredictor *p); /* NULL is fine */
/* Building one (tune/predict.c's training): */
TunePredictor *tune_predictor_new(void);
/* Appends one tree of XGBoost's text dump; 0 or -1 after reporting. */
int tune_predictor_add_dump_tree(TunePredictor *p, const char *text, Diag *d);
void tune_predictor_set_base(TunePredictor *p, float base);
/* The sum of the trees' leaves for one row, without the base. */
float tune_predictor_leaves(const TunePredictor *p, const float *x);
int tune_predictor_trees(const TunePredictor *p);
/* 0, or -1 when out of memory or past 4,096 shapes. */
int tune_predictor_add_shape(TunePredictor *p, const TuneShapeKey *k);
bool tune_predictor_has_shape(const TunePredictor *p, const TuneShapeKey *k);
/* The points the training measured (their text, "spmm_groups(64, 4)",
 * without the deterministic() and transpose() prefixes: a point so asked
 * is the same schedule, read on the graph it runs on) and the number of
 * cases (graph, operator, F, GPU) each was measured in. The
 * chooser ranks by the trees only points measured in at least
 * TUNE_POINT_MIN_CASES cases and puts the others after them: of a point
 * the trees were not shown they know only what it shares with its
 * neighbours' features (tune_predictor_rank). */
#define TUNE_POINT_MIN_CASES 5
typedef struct TuneKnownPoint {
  char text[64];
  int cases;
} TuneKnownPoint;
/* Sets a point's count (added or replaced): 0, or -1 for a text of 64
 * characters or more, a negative count or past 4,096 points. Marks the
 * model as listing its points. */
int tune_predictor_add_point(TunePredictor *p, const char *text, int cases);
/* The cases point `text` was measured in (0 if never); -1 when the model
 * lists no points (trained before they were kept). */
int tune_predictor_point_cases(const TunePredictor *p, const char *text);
/* DB.xgb, malloc'ed. */
char *tune_predictor_path(const char *db_path);
/* Sorts `pts` by predicted time, best first, the points the model was
 * hardly trained on (tune_predictor_point_cases below
 * TUNE_POINT_MIN_CASES) after all others; `predicted` (may be NULL) gets
 * the sorted predictions. 0 or -1 (out of memory). */
int tune_predictor_rank(const TunePredictor *p, const TuneOpShape *shape, TunePoint *pts, int n,
                        const TuneGraphSig *g, int64_t F, float *predicted);

typedef struct TuneTrainInfo {
  int rows, graphs, cases;
  char model_path[1024];
} TuneTrainInfo;
/* Trains from every usable row of the database and saves DB.xgb. */
int tune_predictor_train_db(const char *db_path, const IrModule *lib, TuneTrainInfo *info,
                            Diag *d);

typedef struct TuneEvalInfo {
  int graphs, cases, default_cases, within_10pct;
  double geomean, model_geomean, default_geomean, median, worst;
} TuneEvalInfo;
/* Leave-one-graph-out over the database; a table per graph goes to `out`
 * (may be NULL). 0 or -1. */
int tune_predictor_evaluate(const char *db_path, const IrModule *lib, FILE *out,
                            TuneEvalInfo *info, Diag *d);

/* ---------------------------------------------------------------------------
 * import.c: a tuning database from a GPU suite's CSV.
 */
typedef struct TuneImportInfo {
  int imported, graphs;
  int skipped_default, skipped_wrong, skipped_no_time, skipped_refused, truncated;
} TuneImportInfo;
/* Stores every measured row of `csv` in `db`, under GPU `gpu` with compute
 * capability `cc` and compiler version `compiler`; graphs are read from
 * `datasets`, operators and schedules from `stdlib`. 0, or -1 after
 * reporting `csv:LINE: error: ...` (nothing is stored from a file with a
 * malformed line). */
int tune_import_csv(const char *csv, TuneDb *db, const IrModule *stdlib, const char *datasets,
                    const char *gpu, int cc, const char *compiler, Arena *a,
                    TuneImportInfo *info, Diag *d);

#endif
