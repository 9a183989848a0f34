/* tune/space.c: the search space of an operator, for the autotuner.
 *
 * A point is a named schedule of stdlib/schedules.gop with its knobs: G
 * (vertices or edges per worker) and T (feature workers). Legality is not
 * guessed: each candidate is applied to a copy of the operator and lowered,
 * exactly as the compiler would (api/compile.c's api_schedule_op), and only the
 * ones that survive are points. Lowering also gives what the cost model
 * needs from the schedule: which reduction stores became atomic. The
 * operator's shape (accesses per edge and per vertex) is read from the
 * unscheduled IR, where edge loops are still recognisable.
 */
#define _GNU_SOURCE
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "passes/passes.h"
#include "graph/graph.h"
#include "runtime/runtime.h"
#include "tune/tune.h"

static const char *const strategy_names[TUNE_STRATEGY_COUNT] = {
    "thread_vertex", "warp_vertex", "thread_edge", "warp_edge", "gas", "gar", "named"};

const char *tune_strategy_name(TuneStrategy s) {
  return s >= 0 && s < TUNE_STRATEGY_COUNT ? strategy_names[s] : "?";
}

static bool is_edge_loop(const IrNode *n) {
  return n->kind == IR_LOOP && (n->loop.kind == IR_LOOP_IN_EDGES ||
                                n->loop.kind == IR_LOOP_OUT_EDGES ||
                                n->loop.kind == IR_LOOP_EDGES);
}

/* Counts the accesses of the expression or statement list `n`. */
static void shape_walk(const IrNode *n, bool in_edge, TuneOpShape *s);

static void shape_access(const IrNode *n, bool in_edge, TuneOpShape *s) {
  const IrTensor *t = n->acc.tensor;
  /* A reduction reads and writes its element; a plain `=` only writes. */
  int k = n->kind == IR_STORE && n->acc.red != IR_RED_ASSIGN ? 2 : 1;
  bool row = t->ndims > 0;
  if (n->kind == IR_STORE && (n->acc.red == IR_RED_MAX || n->acc.red == IR_RED_MIN))
    s->order_reductions++;
  if (in_edge && row && k == 2 && t->domain != IR_DOM_EDGE) {
    s->edge_red_rows++;
  } else if (in_edge) {
    if (row) s->edge_rows += k;
    else s->edge_scalars += k;
    if (row && k == 1 && t->domain == IR_DOM_DST) s->edge_dst_rows++;
  } else {
    if (row) s->vertex_rows += k;
    else s->vertex_scalars += k;
  }
}

static void shape_node(const IrNode *n, bool in_edge, TuneOpShape *s) {
  switch (n->kind) {
  case IR_LOOP:
    if (n->loop.kind == IR_LOOP_RANGE && strcmp(n->loop.var->name, "f") == 0)
      s->feature_loop = true;
    shape_walk(n->loop.body, in_edge || is_edge_loop(n), s);
    return;
  case IR_IF:
    shape_node(n->ifs.cond, in_edge, s);
    shape_walk(n->ifs.then, in_edge, s);
    return;
  case IR_STORE:
    shape_access(n, in_edge, s);
    for (int i = 0; i < n->acc.nidx; i++) shape_node(n->acc.idx[i], in_edge, s);
    shape_node(n->acc.value, in_edge, s);
    return;
  case IR_LOAD:
    shape_access(n, in_edge, s);
    for (int i = 0; i < n->acc.nidx; i++) shape_node(n->acc.idx[i], in_edge, s);
    return;
  case IR_LET:
    if (n->let.init) shape_node(n->let.init, in_edge, s);
    return;
  case IR_SET:
    shape_node(n->set.value, in_edge, s);
    return;
  case IR_BIN:
    shape_node(n->bin.a, in_edge, s);
    shape_node(n->bin.b, in_edge, s);
    return;
  case IR_UN:
    shape_node(n->un.a, in_edge, s);
    return;
  case IR_CALL:
    for (int i = 0; i < n->call.nargs; i++) shape_node(n->call.args[i], in_edge, s);
    return;
  default:
    return; /* constants, variables, endpoints and degrees: registers */
  }
}

static void shape_walk(const IrNode *n, bool in_edge, TuneOpShape *s) {
  for (; n; n = n->next) shape_node(n, in_edge, s);
}

void tune_op_shape(const IrOp *op, TuneOpShape *out) {
  memset(out, 0, sizeof *out);
  shape_walk(op->body, false, out);
}

/* Counts the atomic stores of lowered IR. */
static void count_atomics(const IrNode *n, TunePoint *p) {
  for (; n; n = n->next) {
    if (n->kind == IR_STORE && n->acc.how == IR_HOW_ATOMIC) {
      if (n->acc.tensor->ndims > 0) p->atomic_rows++;
      else p->atomic_scalars++;
    }
    /* atomics into a 16-bit tensor (a @shared group's flush is one too) */
    if (n->kind == IR_STORE && (n->acc.how == IR_HOW_ATOMIC || n->acc.how == IR_HOW_SHARED) &&
        ir_dtype_is_16bit(n->acc.tensor->dtype))
      p->narrow_atomics++;
    if (n->kind == IR_LOOP) count_atomics(n->loop.body, p);
    if (n->kind == IR_IF) count_atomics(n->ifs.then, p);
  }
}

/* Reads "name(A, B, ...)" of a named schedule of `lib` other than the
 * strategies: up to four positive integer arguments; G and T are the
 * first two (1 when absent), as the cost model reads them. */
static bool parse_named(const char *text, const IrModule *lib, TunePoint *p) {
  size_t n = strcspn(text, "(");
  if (!text[n] || n == 0 || n >= 64) return false;
  char name[64];
  snprintf(name, sizeof name, "%.*s", (int)n, text);
  if (lib && !ir_module_find_sched(lib, name)) return false;
  for (size_t i = 0; i < n; i++)
    if (!(name[i] == '_' || (name[i] >= 'a' && name[i] <= 'z') ||
          (name[i] >= 'A' && name[i] <= 'Z') || (i > 0 && name[i] >= '0' && name[i] <= '9')))
      return false;
  int v[4] = {1, 1, 1, 1}, k = 0;
  const char *q = text + n + 1;
  while (*q == ' ') q++;
  if (*q == ')') return q[1] == 0 && (p->strategy = TUNE_NAMED, p->G = p->T = 1, true);
  for (;;) {
    char *end;
    long x = strtol(q, &end, 10);
    if (end == q || x < 1 || x > 1 << 20 || k == 4) return false;
    v[k++] = (int)x;
    for (q = end; *q == ' '; q++) {}
    if (*q == ')') break;
    if (*q != ',') return false;
    q++;
  }
  if (q[1] != 0) return false;
  p->strategy = TUNE_NAMED;
  p->G = v[0];
  p->T = v[1];
  return true;
}

/* How a named schedule maps work, read off its lowered IR: a warp when
 * some loop is bound to a warp or its lanes; vertex-parallel when the
 * outermost bound loop of the first stage runs over vertices. */
static bool any_warp(const IrNode *n) {
  for (; n; n = n->next) {
    if (n->kind == IR_LOOP &&
        (n->loop.bind == IR_BIND_WARP || n->loop.bind == IR_BIND_LANE || any_warp(n->loop.body)))
      return true;
    if (n->kind == IR_IF && any_warp(n->ifs.then)) return true;
  }
  return false;
}

static int outer_bound_kind(const IrNode *n) {
  for (; n; n = n->next) {
    if (n->kind == IR_LOOP && n->loop.bind != IR_BIND_NONE) return (int)n->loop.kind;
    const IrNode *in = n->kind == IR_LOOP ? n->loop.body : n->kind == IR_IF ? n->ifs.then : NULL;
    int k = in ? outer_bound_kind(in) : -1;
    if (k >= 0) return k;
  }
  return -1;
}

/* ---- the lane model's reading of lowered IR ----
 *
 * A named schedule's kernel is costed by the lane model (tune/model.c)
 * when its lowered IR has this shape, whatever directives made it:
 *
 *   for W @warp [@team(T)]      W: `v in dst` (rows = 1), a range of
 *     ...                          (num_vertices() + R - 1) / R (rows = R),
 *                                  `g in groups(G)` (egroup = G), or a
 *                                  range of (num_edges() + G - 1) / G with
 *                                  `for ei in 0..G` inside (eflat = G: G
 *                                  consecutive edges a warp, sddmm_vec4)
 *     for fo in 0..(F + K - 1) / K
 *       for l in 0..n @lane     fpp = K (else n x vec)
 *         for fv @vec(w) ...    vec = w
 *           for e in in_edges(..) / group_edges(g) @unroll(U)
 *
 * or that warp loop alone inside `for fo in 0..(F + K - 1) / K` (feature
 * tiles outside the warps, spmm_tiles: fpp = K), with no atomic store
 * unless the warp holds a neighbour group (the partial sums of heavy
 * rows), and at most a second stage that passes over the rows once (a
 * warp per vertex, no edges: mean's division). */

/* K of `(A + (K - 1)) / K` when `A` satisfies `is_a`, else 0. */
static int ceil_div_by(const IrNode *n, bool (*is_a)(const IrNode *)) {
  if (!n || n->kind != IR_BIN || n->bin.op != IR_OP_DIV || n->bin.b->kind != IR_ICONST) return 0;
  const IrNode *num = n->bin.a;
  int64_t k = n->bin.b->i;
  if (k < 1 || k > 1 << 16 || num->kind != IR_BIN || num->bin.op != IR_OP_ADD ||
      num->bin.b->kind != IR_ICONST || num->bin.b->i != k - 1 || !is_a(num->bin.a))
    return 0;
  return (int)k;
}

static bool is_nv(const IrNode *n) { return n->kind == IR_NV; }
static bool is_ne(const IrNode *n) { return n->kind == IR_NE; }
static bool is_sym(const IrNode *n) { return n->kind == IR_SYM; }

static void lane_walk(const IrNode *n, TunePoint *p) {
  for (; n; n = n->next) {
    if (n->kind == IR_IF) lane_walk(n->ifs.then, p);
    if (n->kind != IR_LOOP) continue;
    const IrNode *l = n;
    int k = l->loop.kind == IR_LOOP_RANGE ? ceil_div_by(l->loop.extent, is_sym) : 0;
    if (k && l->loop.bind == IR_BIND_NONE && !p->fpp) p->fpp = k;
    if (l->loop.bind == IR_BIND_LANE && l->loop.extent && l->loop.extent->kind == IR_ICONST)
      p->lanes = true, p->unroll = p->unroll ? p->unroll : 1;
    if (l->loop.vec > 1) p->vec = l->loop.vec;
    if ((l->loop.kind == IR_LOOP_IN_EDGES || l->loop.kind == IR_LOOP_GROUP_EDGES) &&
        l->loop.unroll > 1)
      p->unroll = l->loop.unroll;
    /* Shuffled indices (prefetch(e)) measured slower than their baselines
     * on the H100 (bench/NOTES.md, 2026-11-25): not modelled, so not chosen
     * untuned; the tuner still measures them. */
    if (l->loop.prefetch) p->prefetch = true;
    lane_walk(l->loop.body, p);
  }
}

static int lane_extent(const IrNode *n) {
  for (; n; n = n->next) {
    if (n->kind == IR_LOOP && n->loop.bind == IR_BIND_LANE && n->loop.extent &&
        n->loop.extent->kind == IR_ICONST)
      return (int)n->loop.extent->i;
    const IrNode *in = n->kind == IR_LOOP ? n->loop.body : n->kind == IR_IF ? n->ifs.then : NULL;
    int e = in ? lane_extent(in) : 0;
    if (e) return e;
  }
  return 0;
}

/* Whether `n` (statements) holds an edge loop; whether it stores a row of
 * a tensor other than atomically. */
static bool has_edge_loop(const IrNode *n) {
  for (; n; n = n->next) {
    if (n->kind == IR_LOOP && (is_edge_loop(n) || n->loop.kind == IR_LOOP_GROUP_EDGES ||
                               has_edge_loop(n->loop.body)))
      return true;
    if (n->kind == IR_IF && has_edge_loop(n->ifs.then)) return true;
  }
  return false;
}

static bool owned_row_store(const IrNode *n) {
  for (; n; n = n->next) {
    if (n->kind == IR_STORE && n->acc.how != IR_HOW_ATOMIC && n->acc.tensor->ndims > 0)
      return true;
    const IrNode *in = n->kind == IR_LOOP ? n->loop.body : n->kind == IR_IF ? n->ifs.then : NULL;
    if (in && owned_row_store(in)) return true;
  }
  return false;
}

/* A stage over rows with no edge loop: the finalisation of a mean, max or
 * min (lower_mean.c), or the fill of the rows neighbour groups do not own
 * (fill.c), over every destination or only those (unowned(G)). */
static bool row_stage(const IrNode *s) {
  return s->kind == IR_LOOP && s->loop.bind == IR_BIND_WARP &&
         (s->loop.kind == IR_LOOP_DST_V || s->loop.kind == IR_LOOP_UNOWNED) &&
         !has_edge_loop(s->loop.body);
}

/* The op's first stage that is not the fill of the rows its neighbour
 * groups do not own (passes/fill.c). */
static const IrNode *main_stage(const IrNode *body) {
  return body && body->next && row_stage(body) ? body->next : body;
}

static void read_lanes(const IrNode *body, TunePoint *p) {
  p->lanes = false;
  bool filled = main_stage(body) != body;
  body = main_stage(body);
  /* Feature tiles outside the warps (spmm_tiles): a sequential loop over
   * tiles of fpp features whose body is the warp loop. The lane model
   * costs the warps' passes as it would with the tile loop inside them
   * (the same loads, the edges read once per tile either way); what the
   * order changes, where X's rows sit in L2, it does not model. Read so,
   * spmm_tiles stops looking like the general model's slow points to the
   * predictor (leave one graph out 1.067x -> 1.061x, bench/NOTES.md). */
  int tile_fpp = 0;
  if (body && body->kind == IR_LOOP && body->loop.kind == IR_LOOP_RANGE &&
      body->loop.bind == IR_BIND_NONE && body->loop.body && !body->loop.body->next &&
      body->loop.body->kind == IR_LOOP && body->loop.body->loop.bind == IR_BIND_WARP &&
      (tile_fpp = ceil_div_by(body->loop.extent, is_sym)) > 0) {
    if (body->next) return; /* a finalising stage after tiles: not read */
    body = body->loop.body;
  }
  /* Shared-memory accumulators (promote(g, shared)) are not modelled. */
  if (!body || body->kind != IR_LOOP || body->loop.bind != IR_BIND_WARP || body->loop.shared)
    return;
  /* A second stage may only finalise rows: a warp per vertex, no edges. */
  const IrNode *fin = body->next;
  if (fin && (fin->next || !row_stage(fin))) return;
  const IrNode *w = body;
  int rows = 0, egroup = 0, eflat = 0;
  if (w->loop.kind == IR_LOOP_DST_V) rows = 1;
  else if (w->loop.kind == IR_LOOP_GROUPS && w->loop.group > 0) egroup = w->loop.group;
  else if (w->loop.kind == IR_LOOP_RANGE) {
    rows = ceil_div_by(w->loop.extent, is_nv);
    /* G consecutive edges a warp: a range of ceil(E / G) whose body is
     * `for ei in 0..G` (its bound's guard inside) */
    const IrNode *in = w->loop.body;
    int g = rows ? 0 : ceil_div_by(w->loop.extent, is_ne);
    if (g && in && !in->next && in->kind == IR_LOOP && in->loop.kind == IR_LOOP_RANGE &&
        in->loop.bind == IR_BIND_NONE && in->loop.extent && in->loop.extent->kind == IR_ICONST &&
        in->loop.extent->i == g && !fin && !tile_fpp)
      eflat = g;
  }
  if (!rows && !egroup && !eflat) return;
  if ((rows || eflat) && p->atomic_rows + p->atomic_scalars > 0) return;
  TunePoint q = *p;
  q.lanes = false;
  q.fpp = tile_fpp;
  q.vec = q.unroll = 0;
  lane_walk(w->loop.body, &q);
  if (!q.lanes || q.prefetch) return;
  q.vec = q.vec > 1 ? q.vec : 1;
  if (!q.fpp) q.fpp = lane_extent(w->loop.body) * q.vec;
  if (q.fpp < 1) return;
  q.rows = rows;
  q.egroup = egroup;
  q.eflat = eflat;
  if (eflat) q.unroll = eflat; /* a constant trip count: unrolled whole */
  q.team = w->loop.team;
  q.occ = w->loop.occ;
  q.finalise = fin != NULL;
  q.filled = filled;
  q.all_atomic = egroup > 0 && p->atomic_rows > 0 && !owned_row_store(w->loop.body);
  *p = q;
}

/* Reads "name(G, T)" or "name()"; false if the text is not one of the
 * named strategies in that form. */
static bool parse_point(const char *text, TunePoint *p) {
  for (int s = 0; s < TUNE_STRATEGY_COUNT; s++) {
    if (s == TUNE_NAMED) continue;
    size_t n = strlen(strategy_names[s]);
    if (strncmp(text, strategy_names[s], n) != 0 || text[n] != '(') continue;
    p->strategy = (TuneStrategy)s;
    p->G = p->T = 1;
    char tail;
    if (s == TUNE_GAS || s == TUNE_GAR)
      return sscanf(text + n, "( %c", &tail) == 1 && tail == ')';
    return sscanf(text + n, "( %d , %d %c", &p->G, &p->T, &tail) == 3 && tail == ')' &&
           p->G >= 1 && p->T >= 1;
  }
  return false;
}

int tune_point_parse(const char *text, const IrModule *lib, TunePoint *out) {
  memset(out, 0, sizeof *out);
  if ((!parse_point(text, out) && !parse_named(text, lib, out)) ||
      strlen(text) >= sizeof out->text)
    return -1;
  snprintf(out->text, sizeof out->text, "%s", text);
  return 0;
}

static bool is_shuffle(const IrNode *n, void *ctx) {
  (void)ctx;
  return n->kind == IR_SET && n->set.how == IR_HOW_SHUFFLE;
}

static bool is_panel_loop(const IrNode *n, void *ctx) {
  (void)ctx;
  return n->kind == IR_LOOP && n->loop.panel > 0;
}

static bool is_group_loop(const IrNode *n, void *ctx) {
  (void)ctx;
  return n->kind == IR_LOOP &&
         (n->loop.kind == IR_LOOP_GROUPS || n->loop.kind == IR_LOOP_GROUP_EDGES ||
          n->loop.kind == IR_LOOP_GROUP_ROWS);
}

const char *tune_point_core(const char *text) {
  const char *core = text;
  for (bool more = true; more;) {
    more = false;
    static const char *const prefixes[] = {TUNE_DETERMINISTIC, TUNE_TRANSPOSE};
    for (int i = 0; i < 2; i++)
      if (strncmp(core, prefixes[i], strlen(prefixes[i])) == 0) {
        core += strlen(prefixes[i]);
        more = true;
      }
  }
  return core;
}

int tune_point_make(const IrOp *op, const IrModule *lib, const char *text, Arena *a,
                    TunePoint *out, Diag *why) {
  memset(out, 0, sizeof *out);
  /* a named point may be asked deterministic (tune_space_choice), or on
   * the reversed graph (tune_space_named) */
  const char *core = tune_point_core(text);
  if ((!parse_point(core, out) && !parse_named(core, lib, out)) ||
      strlen(text) >= sizeof out->text) {
    if (why)
      ir_error(why, (Loc){"tune", 0, 0},
               "'%s' is not a named strategy the cost model knows "
               "(thread_vertex, warp_vertex, thread_edge, warp_edge with (G, T); gas(); gar(); "
               "or another named schedule with up to four positive integer arguments)",
               text);
    return -1;
  }
  snprintf(out->text, sizeof out->text, "%s", text);
  Diag quiet; /* a refusal is an answer here, not an error */
  ir_diag_init(&quiet, NULL);
  Diag *d = why ? why : &quiet;
  IrOp *c = pass_op_copy(op, a);
  int rc = pass_schedule_text(c, lib, text, a, d);
  if (rc == 0) rc = pass_lower(c, a, d, NULL, NULL);
  ir_diag_free(&quiet);
  if (rc != 0) return 1;
  out->reversed = c->transposed;
  count_atomics(c->body, out);
  out->elem = 0;
  for (int i = 0; i < c->ntensors; i++) {
    const IrTensor *t = c->tensors[i];
    if (t->role == IR_ROLE_IN && t->ndims > 0 && (t->domain == IR_DOM_SRC || t->domain == IR_DOM_DST))
      out->elem = ir_dtype_bytes(t->dtype) > out->elem ? ir_dtype_bytes(t->dtype) : out->elem;
  }
  if (out->elem == 0) out->elem = 4;
  out->groups = ir_any(c->body, is_group_loop, NULL);
  out->panels = ir_any(c->body, is_panel_loop, NULL);
  out->shuffle = ir_any(c->body, is_shuffle, NULL);
  for (const IrNode *n = c->body; n; n = n->next) out->kernels++;
  if (out->strategy == TUNE_NAMED) {
    int k = outer_bound_kind(main_stage(c->body));
    out->warp = any_warp(c->body);
    out->vertex = k == IR_LOOP_DST_V || k == IR_LOOP_SRC_V;
    read_lanes(c->body, out);
  } else {
    TuneStrategy s = out->strategy;
    out->warp = s == TUNE_WARP_VERTEX || s == TUNE_WARP_EDGE || s == TUNE_GAR;
    out->vertex = s == TUNE_THREAD_VERTEX || s == TUNE_WARP_VERTEX || s == TUNE_GAR;
  }
  return 0;
}

int tune_space_enumerate(const IrOp *op, const IrModule *lib, Arena *a, TunePoint **out,
                         Diag *d) {
  static const int gs[TUNE_NUM_G] = {1, 2, 4, 8, 16}, ts[TUNE_NUM_T] = {1, 2, 4, 8};
  int cap = 4 * TUNE_NUM_G * TUNE_NUM_T + 2, n = 0;
  TunePoint *pts = calloc((size_t)cap, sizeof *pts);
  if (!pts) {
    ir_error(d, op->loc, "out of memory for the search space of %s", op->name);
    return -1;
  }
  /* The order breaks the cost model's ties (tune_model_rank is stable):
   * the API's default, warp_edge(1, 1), the fastest in the measured suite,
   * comes first, and smaller knobs before larger. */
  static const TuneStrategy order[] = {TUNE_WARP_EDGE, TUNE_THREAD_EDGE, TUNE_WARP_VERTEX,
                                       TUNE_THREAD_VERTEX};
  char text[64];
  for (int k = 0; k < 4; k++)
    for (int i = 0; i < TUNE_NUM_G; i++)
      for (int j = 0; j < TUNE_NUM_T; j++) {
        snprintf(text, sizeof text, "%s(%d, %d)", strategy_names[order[k]], gs[i], ts[j]);
        if (tune_point_make(op, lib, text, a, &pts[n], NULL) == 0) n++;
      }
  if (tune_point_make(op, lib, "gas()", a, &pts[n], NULL) == 0) n++;
  if (tune_point_make(op, lib, "gar()", a, &pts[n], NULL) == 0) n++;
  *out = pts;
  return n;
}

/* Room for point n in *pts (of *cap): false, with *pts freed and the
 * error reported, when there is no memory for more. */
static bool room(TunePoint **pts, int *cap, int n, const IrOp *op, Diag *d) {
  if (n < *cap) return true;
  TunePoint *more = realloc(*pts, sizeof **pts * (size_t)(*cap * 2));
  if (!more) {
    free(*pts);
    *pts = NULL;
    ir_error(d, op->loc, "out of memory for the search space of %s", op->name);
    return false;
  }
  *pts = more;
  *cap *= 2;
  return true;
}

/* Appends to *pts (n of *cap) every named schedule of `lib` but the
 * strategies, after `prefix`, on its grid (tune_space_named); false when
 * out of memory (*pts freed, reported). */
static bool named_grid(const IrOp *op, const IrModule *lib, const char *prefix, Arena *a,
                       TunePoint **pts_, int *cap, int *n_, Diag *d) {
  TunePoint *pts = *pts_;
  int n = *n_;
  char text[64];
  /* Every other named schedule of `lib` (the operator's file's and the
   * stdlib's, e.g. spmm_vec4(U), gnnadvisor(G, T)), on a small grid of
   * its integer parameters: {1, 2, 4, 8, 16, 32} each while that makes at
   * most 36 points, else {1, 4, 32} (three parameters), else {1, 32}. */
  for (int i = 0; lib && i < lib->nscheds; i++) {
    const IrSchedDef *sd = lib->scheds[i];
    bool strategy = false;
    for (int s = 0; s < TUNE_NAMED; s++) strategy |= strcmp(sd->name, strategy_names[s]) == 0;
    if (strategy || sd->nparams > 4) continue;
    static const int wide[] = {1, 2, 4, 8, 16, 32}, mid[] = {1, 4, 32}, two[] = {1, 32};
    const int *vals = sd->nparams <= 2 ? wide : sd->nparams == 3 ? mid : two;
    int nv = sd->nparams <= 2 ? 6 : sd->nparams == 3 ? 3 : 2, combos = 1;
    for (int k = 0; k < sd->nparams; k++) combos *= nv;
    for (int c = 0; c < combos; c++) {
      if (!room(pts_, cap, n, op, d)) return false;
      pts = *pts_;
      int len = snprintf(text, sizeof text, "%s%s(", prefix, sd->name);
      for (int k = 0, rest = c; k < sd->nparams; k++, rest /= nv)
        len += snprintf(text + len, sizeof text - (size_t)len, "%s%d", k ? ", " : "",
                        vals[rest % nv]);
      snprintf(text + len, sizeof text - (size_t)len, ")");
      if (tune_point_make(op, lib, text, a, &pts[n], NULL) == 0) n++;
    }
    /* panels (passes/panel.c) beyond the grid: rows of 64 and 128 pairs,
     * P = 2 and 4, 4 pairs in flight (or teams of 4 lanes), where the
     * point is a panel schedule: on cnr-2000 at F = 128 spmm_panels(128,
     * 2, 4) was the fastest, rows of 32 pairs 1.3-1.5x slower
     * (bench/results/2026-11-30-H200-panels) */
    if (sd->nparams == 3)
      for (int k = 0; k < 4; k++) {
        if (!room(pts_, cap, n, op, d)) return false;
        pts = *pts_;
        snprintf(text, sizeof text, "%s%s(%d, %d, 4)", prefix, sd->name, k & 1 ? 128 : 64,
                 k & 2 ? 4 : 2);
        if (tune_point_make(op, lib, text, a, &pts[n], NULL) == 0 && pts[n].panels) n++;
      }
    /* neighbour groups of 64 edges, beyond the grid: the measured best
     * group size at F >= 128 on the skewed graphs (bench/NOTES.md, the
     * groups-of-64 run of 2026-11-27), kept only where the first
     * parameter is the group size */
    if (sd->nparams == 2)
      for (int u = 0; u < 6; u++) {
        if (!room(pts_, cap, n, op, d)) return false;
        pts = *pts_;
        snprintf(text, sizeof text, "%s%s(64, %d)", prefix, sd->name, wide[u]);
        if (tune_point_make(op, lib, text, a, &pts[n], NULL) == 0 && pts[n].egroup == 64) n++;
      }
  }
  *n_ = n;
  return true;
}

int tune_space_named(const IrOp *op, const IrModule *lib, Arena *a, TunePoint **out, Diag *d) {
  int cap = 64, n = 0;
  TunePoint *pts = calloc((size_t)cap, sizeof *pts);
  if (!pts) {
    ir_error(d, op->loc, "out of memory for the search space of %s", op->name);
    return -1;
  }
  if (!named_grid(op, lib, "", a, &pts, &cap, &n, d)) return -1;
  /* An operator walking out-edges only (a sum's gradient) takes the
   * forward's schedules on the reversed graph (passes/transpose.c), where
   * those edges are in-edges: neighbour groups, teams. */
  if (tune_op_walks_out_edges(op) && !named_grid(op, lib, TUNE_TRANSPOSE, a, &pts, &cap, &n, d))
    return -1;
  *out = pts;
  return n;
}

void tune_graph_sig(const Graph *g, TuneGraphSig *out) {
  *out = (TuneGraphSig){
      .nv = g->nv,
      .ne = g->ne,
      .deg_mean = g->stats.deg_mean,
      .deg_std = g->stats.in_deg_std,
      .deg_max = g->stats.in_deg_max,
      .aes = g->stats.aes,
  };
}

/* Counts the loops over in-edges and over out-edges in a statement list. */
static void count_edge_loops(const IrNode *n, int *in, int *out) {
  for (; n; n = n->next) {
    if (n->kind == IR_LOOP) {
      *in += n->loop.kind == IR_LOOP_IN_EDGES;
      *out += n->loop.kind == IR_LOOP_OUT_EDGES;
      count_edge_loops(n->loop.body, in, out);
    }
    if (n->kind == IR_IF) count_edge_loops(n->ifs.then, in, out);
  }
}

bool tune_op_walks_out_edges(const IrOp *op) {
  int in = 0, out = 0;
  count_edge_loops(op->body, &in, &out);
  return out > 0 && in == 0;
}

void tune_graph_sig_for(const Graph *g, const IrOp *op, TuneGraphSig *out) {
  tune_graph_sig(g, out);
  if (!tune_op_walks_out_edges(op)) return;
  out->deg_max = g->stats.out_deg_max;
  if (!g->out_ptr || g->nv == 0) return; /* built on the device: no host CSC */
  double mean = (double)g->ne / g->nv, ss = 0;
  for (int32_t v = 0; v < g->nv; v++) {
    double d = (double)(g->out_ptr[v + 1] - g->out_ptr[v]) - mean;
    ss += d * d;
  }
  out->deg_std = sqrt(ss / g->nv);
}

uint64_t tune_op_hash(const IrOp *op) {
  char *text = ir_op_to_string(op);
  uint64_t h = text ? rt_fnv1a64(text, strlen(text)) : 0;
  free(text);
  return h;
}

/* A 16-bit output or temporary refuses atomic reductions (codegen/store.c:
 * a 16-bit atomic rounds every addition): such points cannot compile. (The
 * heavy rows of a 16-bit output its neighbour groups own add into an f32
 * twin, promote.c: those atomics compile.) */
int tune_space_buildable(TunePoint *pts, int n) {
  int k = 0;
  for (int i = 0; i < n; i++)
    if (pts[i].narrow_atomics == 0) pts[k++] = pts[i];
  return k;
}

/* Keeps the points that run over no neighbour groups (`groups`) or not on
 * the reversed graph (`reversed`), and no panel points: neither the cost
 * model nor the predictor has measured them yet (the pair ratio they
 * depend on is not a feature), so they are for tuning (gopc tune,
 * gop_bench) until they have been. */
static int drop_points(TunePoint *pts, int n, bool groups, bool reversed) {
  int k = 0;
  for (int i = 0; i < n; i++)
    if (!(groups && pts[i].groups) && !(reversed && pts[i].reversed) && !pts[i].panels)
      pts[k++] = pts[i];
  return k;
}

int tune_space_choice(const IrOp *op, const IrModule *lib, bool no_groups, bool no_reversed,
                      Arena *a, TunePoint **out, Diag *d) {
  TuneOpShape shape;
  tune_op_shape(op, &shape);
  TunePoint *named = NULL;
  /* An operator with no edge loop (a per-vertex map: bias, twice) takes
   * the default mapping: a graph schedule has nothing to lay out there
   * (the row-based SDDMM schedules would apply, each row a warp) */
  int m = shape.feature_loop && has_edge_loop(op->body)
              ? tune_space_named(op, lib, a, &named, d) : 0;
  if (m < 0) return -1;
  int lanes = 0;
  for (int i = 0; i < m; i++)
    if (named[i].lanes) named[lanes++] = named[i];
  int all = lanes;
  /* A 16-bit output refuses atomics, so the buildable filter drops every
   * point over neighbour groups whose partial rows all add atomically into
   * it (those whose groups own their rows add the heavy rows' into an f32
   * twin, promote.c, and stay); under deterministic() the same groups split
   * heavy rows without atomics (passes/segment.c: f32 partial rows, one
   * rounding), and those points come back in that form. The lane model
   * costs their second stage as a finishing pass over the rows. */
  TunePoint *orig = all > 0 ? malloc(sizeof *orig * (size_t)all) : NULL;
  if (orig) memcpy(orig, named, sizeof *orig * (size_t)all);
  lanes = tune_space_buildable(named, lanes);
  TunePoint *more = orig && lanes < all && !no_groups
                        ? realloc(named, sizeof *named * (size_t)(lanes + all + 1)) : NULL;
  if (more) {
    named = more;
    int n2 = lanes;
    for (int i = 0; i < all; i++) {
      bool kept = false;
      for (int k = 0; k < lanes && !kept; k++) kept = !strcmp(named[k].text, orig[i].text);
      char text[sizeof orig[0].text];
      if (kept || orig[i].egroup <= 0 ||
          snprintf(text, sizeof text, TUNE_DETERMINISTIC "%s", orig[i].text) >= (int)sizeof text)
        continue;
      TunePoint q;
      if (tune_point_make(op, lib, text, a, &q, NULL) == 0 && q.lanes) named[n2++] = q;
    }
    lanes = tune_space_buildable(named, n2);
  }
  free(orig);
  lanes = drop_points(named, lanes, no_groups, no_reversed);
  if (lanes > 0) {
    *out = named;
    return lanes;
  }
  free(named);
  int n = tune_space_enumerate(op, lib, a, out, d);
  if (n > 0) n = drop_points(*out, n, no_groups, no_reversed);
  return n < 0 ? n : tune_space_buildable(*out, n);
}
