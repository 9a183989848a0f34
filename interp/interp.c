/* interp/interp.c: the reference interpreter, the oracle of every test.
 *
 * It executes an operator, scheduled or not, on the CPU by walking the tree,
 * with the semantics of docs/language.md: stages run in order; outputs and
 * temporaries start at the identity of the reduction that targets them;
 * `mean=` targets are divided by their contribution counts, and `max=` /
 * `min=` elements that received nothing become 0, at the end of each stage
 * that reduced into them. Loops bound to hardware by scheduling run as
 * plain sequential loops, so a scheduled operator must give the result of
 * the unscheduled one (up to the order of floating-point sums).
 *
 * Arithmetic is done in double. In native mode (INTERP_F32) every value is
 * rounded where the GPU would round it: a tensor element to its dtype, and
 * a local and the result of every operation (a constant, an integer
 * converted, each `+ - * /`, each function call) to the operator's
 * accumulator type (f32 unless it accumulates in f64). For `+ - * /` and
 * sqrt of floats, an operation in double rounded once to float is the IEEE
 * f32 operation itself (double has more than 2 * 24 + 2 bits), so the
 * interpreter computes what an f32 kernel without contraction computes,
 * bit for bit: a value recomputed by a gradient and compared with a saved
 * f32 output (max=, min=, docs/autodiff.md) meets it exactly on both.
 * A 16-bit tensor lives in a double shadow during the run (its input
 * converted in, its outputs converted out at the end): a reduction into it
 * accumulates in the accumulator type, and every element is rounded to the
 * tensor's dtype at the end of each stage, as a kernel that accumulates in
 * a register and stores once does; a plain store rounds at once. In F64
 * mode nothing is rounded but explicit conversions (`bf16(x)`), which makes
 * it an exact-enough reference for tests against independent computations
 * and for the checks of 16-bit runs.
 *
 * A cross-lane reduction (`shuffle s += x`, docs/gpu-ir.md) is run as the
 * GPU runs it: each lane of the @lane loop (iteration i of it is lane
 * i % 32) reduces into its own copy of the local, all copies starting at
 * the `var`'s value, and right after the statement that holds the sets
 * (in the list holding the `var`) the 32 copies are combined in the
 * butterfly order of the shuffles, f32-rounded at each step.
 *
 * Nothing a user can write crashes it: every tensor access, edge and vertex
 * id is bounds-checked, integer division by zero is reported, and the first
 * error stops the run with its location. Shapes and strides are computed
 * once per run, so the walk itself does no allocation.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "interp/interp.h"

/* What the interpreter knows about one tensor during a run. */
typedef struct TensorState {
  const IrTensor *t;
  int rank;
  int64_t shape[IR_MAX_IDX], stride[IR_MAX_IDX];
  int64_t numel;
  float *f32;      /* the buffer of an f32 tensor in native mode */
  double *f64;     /* otherwise: the buffer (F64 mode, f64 tensors) or the
                      shadow of a 16-bit tensor */
  IrDType half;    /* native mode, a 16-bit tensor: its dtype, the caller's
                      buffer in `user`; else IR_DT_F32 */
  void *user;
  bool owned;      /* f32 or f64 is a buffer the interpreter allocated */
  IrRed red;       /* the reduction targeting it (ASSIGN: plain stores only) */
  uint32_t *count; /* contributions per element: mean=, max=, min= targets */
  bool touched;    /* reduced into during the current stage */
  bool finalised;  /* at least once: see interp_run's last step */
  uint32_t *tn;    /* InterpArgs.terms: contributions, and their |sum| */
  double *tabs;
} TensorState;

typedef struct Interp {
  const IrOp *op;
  const Graph *g;
  const IrExtents *ext;
  Diag *d;
  bool f32;        /* native mode */
  bool acc32;      /* native mode and an f32 accumulator: locals and
                      operations are rounded to f32 */
  InterpTerms *terms; /* InterpArgs.terms */
  bool failed;     /* an error was reported: unwind */
  TensorState *ts; /* by tensor id */
  int64_t *ival;   /* loop variables, by var id */
  const struct GraphGroups **gtab; /* groups loops' variables: their table */
  const struct GraphPanels **ptab; /* @panel groups loops' and pairs loops'
                                      variables: their panel table */
  double *fval;    /* locals, by var id */
  /* cross-lane reductions */
  unsigned char *shuffled; /* by var id: 0, or the reduction of its `shuffle`
                              sets: 1 +=, 2 max=, 3 min= */
  const IrNode **decl;   /* by var id: the list holding the local's `var` */
  double *lanes;         /* 32 partials per shuffled local, at var id * 32 */
  int lane;              /* lane of the innermost running @lane loop */
  int dirty[16], ndirty; /* shuffled locals with partials not combined */
} Interp;

static void fail(Interp *in, Loc loc, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void fail(Interp *in, Loc loc, const char *fmt, ...) {
  if (in->failed) return; /* report the first error only */
  in->failed = true;
  va_list ap;
  va_start(ap, fmt);
  ir_verror(in->d, "error", loc, fmt, ap);
  va_end(ap);
}

/* ---- element access ---- */

static double get(const TensorState *s, int64_t off) {
  return s->f32 ? (double)s->f32[off] : s->f64[off];
}

static void put(TensorState *s, int64_t off, double v) {
  if (s->f32) s->f32[off] = (float)v;
  else s->f64[off] = v;
}

/* A local, or the result of an operation, holds what a register of the
 * accumulator type would (f32 in native mode, unless the op accumulates in
 * f64). */
static double local_value(const Interp *in, double v) {
  return in->acc32 ? (double)(float)v : v;
}

/* max and min that never hide a NaN, unlike fmax/fmin. */
static double max_nan(double a, double b) { return (a > b || isnan(a)) ? a : b; }
static double min_nan(double a, double b) { return (a < b || isnan(a)) ? a : b; }

static int64_t eval_int(Interp *in, const IrNode *e);
static double eval_float(Interp *in, const IrNode *e);
static bool eval_bool(Interp *in, const IrNode *e);

/* The row-major offset of an access, or -1 after reporting an index out of
 * range. */
static int64_t offset(Interp *in, const IrNode *n) {
  const TensorState *s = &in->ts[n->acc.tensor->id];
  int64_t off = 0;
  for (int i = 0; i < n->acc.nidx; i++) {
    /* Most indices are loop variables: read them without a call. */
    const IrNode *ix = n->acc.idx[i];
    int64_t x = ix->kind == IR_VAR ? in->ival[ix->var->id] : eval_int(in, ix);
    if (in->failed) return -1;
    if (x < 0 || x >= s->shape[i]) {
      fail(in, n->loc, "index %lld out of range [0, %lld) for dimension %d of %s",
           (long long)x, (long long)s->shape[i], i, s->t->name);
      return -1;
    }
    off += x * s->stride[i];
  }
  return off;
}

static int64_t check_edge(Interp *in, const IrNode *at, int64_t e, const char *what) {
  if (e < 0 || e >= in->g->ne) {
    fail(in, at->loc, "edge %lld out of range [0, %lld) in %s", (long long)e,
         (long long)in->g->ne, what);
    return -1;
  }
  return e;
}

static int64_t check_vertex(Interp *in, const IrNode *at, int64_t v, const char *what) {
  if (v < 0 || v >= in->g->nv) {
    fail(in, at->loc, "vertex %lld out of range [0, %lld) in %s", (long long)v,
         (long long)in->g->nv, what);
    return -1;
  }
  return v;
}

/* ---- expressions ---- */

/* Integer arithmetic wraps like the GPU's instead of being undefined. */
static int64_t wrap_add(int64_t a, int64_t b) { return (int64_t)((uint64_t)a + (uint64_t)b); }
static int64_t wrap_sub(int64_t a, int64_t b) { return (int64_t)((uint64_t)a - (uint64_t)b); }
static int64_t wrap_mul(int64_t a, int64_t b) { return (int64_t)((uint64_t)a * (uint64_t)b); }

static int64_t int_bin(Interp *in, const IrNode *e) {
  int64_t a = eval_int(in, e->bin.a);
  int64_t b = eval_int(in, e->bin.b);
  if (in->failed) return 0;
  switch (e->bin.op) {
  case IR_OP_ADD: return wrap_add(a, b);
  case IR_OP_SUB: return wrap_sub(a, b);
  case IR_OP_MUL: return wrap_mul(a, b);
  case IR_OP_DIV:
  case IR_OP_MOD:
    if (b == 0) {
      fail(in, e->loc, "integer %s by zero",
           e->bin.op == IR_OP_DIV ? "division" : "remainder");
      return 0;
    }
    /* INT64_MIN / -1 overflows in C; -a wraps to what the GPU gives. */
    if (b == -1) return e->bin.op == IR_OP_DIV ? wrap_sub(0, a) : 0;
    return e->bin.op == IR_OP_DIV ? a / b : a % b;
  case IR_OP_OR: case IR_OP_AND: case IR_OP_EQ: case IR_OP_NE: case IR_OP_LT:
  case IR_OP_LE: case IR_OP_GT: case IR_OP_GE: case IR_BINOP_COUNT:
    break;
  }
  fail(in, e->loc, "internal error: `%s` is not an integer operation",
       ir_binop_name(e->bin.op));
  return 0;
}

static int64_t eval_int(Interp *in, const IrNode *e) {
  switch (e->kind) {
  case IR_ICONST: return e->i;
  case IR_VAR: return in->ival[e->var->id];
  case IR_SYM: return in->ext->value[e->sym->id];
  case IR_NV: return in->g->nv;
  case IR_NE: return in->g->ne;
  case IR_SRC:
  case IR_DST: {
    int64_t x = eval_int(in, e->endpoint.e);
    if (in->failed) return 0;
    const IrNode *of = e->endpoint.e;
    const GraphGroups *t = of->kind == IR_VAR ? in->gtab[of->var->id] : NULL;
    if (t && e->kind == IR_DST && x >= 0 && x < t->n) /* a group row's destination */
      return t->dst[x];
    const GraphPanels *pt = of->kind == IR_VAR ? in->ptab[of->var->id] : NULL;
    if (pt && of->var->kind == IR_VAR_PAIR && e->kind == IR_SRC && x >= 0 && x < pt->npairs)
      return pt->src[x]; /* a pair's source */
    if (pt && of->var->kind != IR_VAR_PAIR && e->kind == IR_DST && x >= 0 && x < pt->n)
      return pt->dst[x]; /* a panel row's first destination */
    const char *what = e->kind == IR_SRC ? "src()" : "dst()";
    if (check_edge(in, e, x, what) < 0) return 0;
    return e->kind == IR_SRC ? in->g->src[x] : in->g->dst[x];
  }
  case IR_BIN: return int_bin(in, e);
  case IR_UN:
    if (e->un.op == IR_UN_NEG) return wrap_sub(0, eval_int(in, e->un.a));
    break;
  case IR_FCONST: case IR_LOAD: case IR_CALL: case IR_INDEG: case IR_OUTDEG:
  case IR_LOOP: case IR_STORE: case IR_LET: case IR_SET: case IR_IF: case IR_OWNS:
  case IR_NODE_COUNT:
    break;
  }
  fail(in, e->loc, "internal error: `%s` where an integer is expected",
       ir_kind_name(e->kind));
  return 0;
}

static double call(Interp *in, const IrNode *e) {
  double x = eval_float(in, e->call.args[0]);
  double y = e->call.nargs > 1 ? eval_float(in, e->call.args[1]) : 0;
  switch (e->call.fn) {
  case IR_FN_EXP: return exp(x);
  case IR_FN_LOG: return log(x);
  case IR_FN_SQRT: return sqrt(x);
  case IR_FN_ABS: return fabs(x);
  case IR_FN_RELU: return x > 0 ? x : 0;
  case IR_FN_SIGMOID: return 1 / (1 + exp(-x));
  case IR_FN_TANH: return tanh(x);
  case IR_FN_MAX: return max_nan(x, y);
  case IR_FN_MIN: return min_nan(x, y);
  case IR_FN_LEAKY_RELU: return x > 0 ? x : y * x;
  case IR_FN_TO_F16: return ir_round_to(IR_DT_F16, x);
  case IR_FN_TO_BF16: return ir_round_to(IR_DT_BF16, x);
  case IR_FN_TO_F32: return ir_round_to(IR_DT_F32, x);
  case IR_FN_TO_F64: return x;
  case IR_FN_COUNT: break;
  }
  fail(in, e->loc, "internal error: bad function");
  return 0;
}

static double float_bin(Interp *in, const IrNode *e) {
  double a = eval_float(in, e->bin.a);
  double b = eval_float(in, e->bin.b);
  switch (e->bin.op) {
  case IR_OP_ADD: return a + b;
  case IR_OP_SUB: return a - b;
  case IR_OP_MUL: return a * b;
  case IR_OP_DIV: return a / b;
  case IR_OP_MOD: return fmod(a, b);
  case IR_OP_OR: case IR_OP_AND: case IR_OP_EQ: case IR_OP_NE: case IR_OP_LT:
  case IR_OP_LE: case IR_OP_GT: case IR_OP_GE: case IR_BINOP_COUNT:
    break;
  }
  fail(in, e->loc, "internal error: `%s` is not an arithmetic operation",
       ir_binop_name(e->bin.op));
  return 0;
}

static double eval_float(Interp *in, const IrNode *e) {
  if (e->type == IR_TY_INT) return local_value(in, (double)eval_int(in, e));
  if (e->type == IR_TY_BOOL) return eval_bool(in, e) ? 1 : 0;
  switch (e->kind) {
  case IR_FCONST: return local_value(in, e->f);
  case IR_VAR: return in->fval[e->var->id];
  case IR_LOAD: {
    int64_t off = offset(in, e);
    return off < 0 ? 0 : get(&in->ts[e->acc.tensor->id], off);
  }
  case IR_BIN: return local_value(in, float_bin(in, e));
  case IR_UN: return -eval_float(in, e->un.a); /* NOT is BOOL-typed */
  case IR_CALL: return local_value(in, call(in, e));
  case IR_INDEG:
  case IR_OUTDEG: {
    int64_t v = eval_int(in, e->endpoint.e);
    if (in->failed) return 0;
    const char *what = e->kind == IR_INDEG ? "in_degree()" : "out_degree()";
    if (check_vertex(in, e, v, what) < 0) return 0;
    const int64_t *ptr = e->kind == IR_INDEG ? in->g->in_ptr : in->g->out_ptr;
    return local_value(in, (double)(ptr[v + 1] - ptr[v]));
  }
  case IR_ICONST: case IR_SYM: case IR_SRC: case IR_DST: case IR_NV: case IR_NE:
  case IR_OWNS:
  case IR_LOOP: case IR_STORE: case IR_LET: case IR_SET: case IR_IF:
  case IR_NODE_COUNT:
    break;
  }
  fail(in, e->loc, "internal error: `%s` where a number is expected",
       ir_kind_name(e->kind));
  return 0;
}

/* Compares as integers when both sides are, so large indices compare
 * exactly. */
static bool compare(Interp *in, const IrNode *e) {
  if (e->bin.a->type == IR_TY_INT && e->bin.b->type == IR_TY_INT) {
    int64_t x = eval_int(in, e->bin.a), y = eval_int(in, e->bin.b);
    switch (e->bin.op) {
    case IR_OP_EQ: return x == y;
    case IR_OP_NE: return x != y;
    case IR_OP_LT: return x < y;
    case IR_OP_LE: return x <= y;
    case IR_OP_GT: return x > y;
    case IR_OP_GE: return x >= y;
    default: break;
    }
  } else {
    double a = eval_float(in, e->bin.a), b = eval_float(in, e->bin.b);
    switch (e->bin.op) {
    case IR_OP_EQ: return a == b;
    case IR_OP_NE: return a != b;
    case IR_OP_LT: return a < b;
    case IR_OP_LE: return a <= b;
    case IR_OP_GT: return a > b;
    case IR_OP_GE: return a >= b;
    default: break;
    }
  }
  fail(in, e->loc, "internal error: `%s` is not a comparison", ir_binop_name(e->bin.op));
  return false;
}

static bool eval_bool(Interp *in, const IrNode *e) {
  switch (e->kind) {
  case IR_BIN:
    switch (e->bin.op) {
    case IR_OP_OR: return eval_bool(in, e->bin.a) || eval_bool(in, e->bin.b);
    case IR_OP_AND: return eval_bool(in, e->bin.a) && eval_bool(in, e->bin.b);
    case IR_OP_EQ: case IR_OP_NE: case IR_OP_LT: case IR_OP_LE: case IR_OP_GT:
    case IR_OP_GE:
      return compare(in, e);
    case IR_OP_ADD: case IR_OP_SUB: case IR_OP_MUL: case IR_OP_DIV: case IR_OP_MOD:
    case IR_BINOP_COUNT:
      break;
    }
    break;
  case IR_UN:
    if (e->un.op == IR_UN_NOT) return !eval_bool(in, e->un.a);
    break;
  case IR_OWNS: { /* passes/panel.c: the row is its panel's only one */
    const IrNode *of = e->endpoint.e;
    const GraphPanels *pt = of->kind == IR_VAR ? in->ptab[of->var->id] : NULL;
    int64_t r = of->kind == IR_VAR ? in->ival[of->var->id] : -1;
    if (!pt || r < 0 || r >= pt->n) break;
    return pt->own[r] != 0;
  }
  case IR_FCONST: case IR_ICONST: case IR_VAR: case IR_SYM: case IR_LOAD:
  case IR_CALL: case IR_SRC: case IR_DST: case IR_INDEG: case IR_OUTDEG:
  case IR_NV: case IR_NE: case IR_LOOP: case IR_STORE: case IR_LET: case IR_SET:
  case IR_IF: case IR_NODE_COUNT:
    break;
  }
  fail(in, e->loc, "internal error: `%s` where a condition is expected",
       ir_kind_name(e->kind));
  return false;
}

/* ---- statements ---- */

static void exec_list(Interp *in, const IrNode *list);

/* Runs `body` with loop variable `var` set to each id[k] for k in lo..hi-1
 * (id NULL: k itself). */
static void run_loop(Interp *in, const IrNode *s, int64_t lo, int64_t hi,
                     const int64_t *id, const int32_t *id32) {
  int64_t *slot = &in->ival[s->loop.var->id];
  bool lane = s->loop.bind == IR_BIND_LANE;
  int saved = in->lane;
  for (int64_t k = lo; k < hi && !in->failed; k++) {
    *slot = id ? id[k] : id32 ? id32[k] : k;
    if (lane) in->lane = (int)((k - lo) % 32);
    exec_list(in, s->loop.body);
  }
  in->lane = saved;
}

static void exec_loop(Interp *in, const IrNode *s) {
  const Graph *g = in->g;
  switch (s->loop.kind) {
  case IR_LOOP_SRC_V:
  case IR_LOOP_DST_V: run_loop(in, s, 0, g->nv, NULL, NULL); return;
  case IR_LOOP_EDGES: run_loop(in, s, 0, g->ne, NULL, NULL); return;
  case IR_LOOP_RANGE: {
    int64_t n = eval_int(in, s->loop.extent);
    if (!in->failed) run_loop(in, s, 0, n, NULL, NULL);
    return;
  }
  case IR_LOOP_IN_EDGES:
  case IR_LOOP_OUT_EDGES: {
    bool is_in = s->loop.kind == IR_LOOP_IN_EDGES;
    int64_t v = eval_int(in, s->loop.of);
    if (in->failed) return;
    if (check_vertex(in, s, v, is_in ? "in_edges()" : "out_edges()") < 0) return;
    const int64_t *ptr = is_in ? g->in_ptr : g->out_ptr;
    run_loop(in, s, ptr[v], ptr[v + 1], is_in ? g->in_eid : g->out_eid, NULL);
    return;
  }
  case IR_LOOP_GROUPS: {
    if (s->loop.panel) { /* the rows of the panel table (graph/panels.c) */
      const GraphPanels *pt = graph_panels(g, s->loop.group, s->loop.panel, in->d);
      if (!pt) {
        in->failed = true;
        return;
      }
      const GraphPanels *saved = in->ptab[s->loop.var->id];
      in->ptab[s->loop.var->id] = pt;
      run_loop(in, s, 0, pt->n, NULL, NULL);
      in->ptab[s->loop.var->id] = saved;
      return;
    }
    /* the rows of the table graph/groups.c builds (and caches) */
    const GraphGroups *t = graph_groups(g, s->loop.group, s->loop.ilv,
                                        s->loop.ilv_cls, s->loop.ilv_thr, in->d);
    if (!t) {
      in->failed = true;
      return;
    }
    const GraphGroups *saved = in->gtab[s->loop.var->id];
    in->gtab[s->loop.var->id] = t;
    run_loop(in, s, 0, t->n, NULL, NULL);
    in->gtab[s->loop.var->id] = saved;
    return;
  }
  case IR_LOOP_GROUP_EDGES: {
    const IrNode *of = s->loop.of;
    const GraphGroups *t = of->kind == IR_VAR ? in->gtab[of->var->id] : NULL;
    if (!t) break;
    int64_t r = in->ival[of->var->id];
    if (r < 0 || r >= t->n) {
      fail(in, s->loc, "group %lld is out of range: the table has %lld rows",
           (long long)r, (long long)t->n);
      return;
    }
    run_loop(in, s, t->first[r], t->end[r], g->in_eid, NULL);
    return;
  }
  case IR_LOOP_GROUP_ROWS: {
    /* passes/segment.c: the rows of destination v, in table order */
    const GraphGroups *t = graph_groups(g, s->loop.group, s->loop.ilv,
                                        s->loop.ilv_cls, s->loop.ilv_thr, in->d);
    if (!t) {
      in->failed = true;
      return;
    }
    int64_t v = eval_int(in, s->loop.of);
    if (in->failed || check_vertex(in, s, v, "group_rows()") < 0) return;
    run_loop(in, s, t->vptr[v], t->vptr[v + 1], t->vrow, NULL);
    return;
  }
  case IR_LOOP_PAIRS: { /* passes/panel.c: the pairs of a panel row */
    const IrNode *of = s->loop.of;
    const GraphPanels *pt = of->kind == IR_VAR ? in->ptab[of->var->id] : NULL;
    if (!pt) break;
    int64_t r = in->ival[of->var->id];
    if (r < 0 || r >= pt->n) {
      fail(in, s->loc, "panel row %lld is out of range: the table has %lld rows",
           (long long)r, (long long)pt->n);
      return;
    }
    const GraphPanels *saved = in->ptab[s->loop.var->id];
    in->ptab[s->loop.var->id] = pt;
    run_loop(in, s, pt->first[r], pt->end[r], NULL, NULL);
    in->ptab[s->loop.var->id] = saved;
    return;
  }
  case IR_LOOP_PAIR_EDGE: { /* the edge in slot `slot` of the pair, if any */
    const IrNode *of = s->loop.of;
    const GraphPanels *pt = of->kind == IR_VAR ? in->ptab[of->var->id] : NULL;
    if (!pt) break;
    int64_t q = in->ival[of->var->id];
    if (q < 0 || q >= pt->npairs || s->loop.slot < 0 || s->loop.slot >= pt->P) {
      fail(in, s->loc, "pair %lld slot %d is out of range: the table has %lld "
           "pairs of %d slots", (long long)q, s->loop.slot, (long long)pt->npairs, pt->P);
      return;
    }
    if (!(pt->mask[q] >> s->loop.slot & 1)) return;
    int64_t k = pt->pos[q * pt->P + s->loop.slot];
    run_loop(in, s, k, k + 1, g->in_eid, NULL);
    return;
  }
  case IR_LOOP_UNOWNED: {
    if (s->loop.panel) { /* the destinations of panels split over rows */
      const GraphPanels *pt = graph_panels(g, s->loop.group, s->loop.panel, in->d);
      if (!pt) {
        in->failed = true;
        return;
      }
      run_loop(in, s, 0, pt->nunowned, NULL, pt->unowned);
      return;
    }
    /* passes/lower_mean.c: the destinations no G-group owns, in order */
    const GraphGroups *t = graph_groups(g, s->loop.group, 0, 0, 0, in->d);
    if (!t) {
      in->failed = true;
      return;
    }
    run_loop(in, s, 0, t->nunowned, NULL, t->unowned);
    return;
  }
  case IR_LOOP_COUNT: break;
  }
  fail(in, s->loc, "internal error: bad loop kind");
}

static double combine(IrRed red, double old, double v) {
  switch (red) {
  case IR_RED_ASSIGN: return v;
  case IR_RED_ADD:
  case IR_RED_MEAN: return old + v;
  case IR_RED_MAX: return max_nan(old, v);
  case IR_RED_MIN: return min_nan(old, v);
  case IR_RED_COUNT: break;
  }
  return v;
}

static void exec_store(Interp *in, const IrNode *s) {
  int64_t off = offset(in, s);
  if (off < 0) return;
  double v = eval_float(in, s->acc.value);
  if (in->failed) return;
  TensorState *ts = &in->ts[s->acc.tensor->id];
  double x = combine(s->acc.red, get(ts, off), v);
  /* a 16-bit element: a plain store rounds now, a reduction accumulates in
   * the accumulator type until the stage ends (round_halves) */
  if (ts->half != IR_DT_F32)
    x = s->acc.red == IR_RED_ASSIGN ? ir_round_to(ts->half, x) : local_value(in, x);
  put(ts, off, x);
  if (ts->tn) {
    if (s->acc.red == IR_RED_ADD || s->acc.red == IR_RED_MEAN) {
      ts->tn[off]++;
      ts->tabs[off] += fabs(v);
    } else {
      ts->tn[off] = 1;
      ts->tabs[off] = fabs(get(ts, off));
    }
  }
  if (ts->count) {
    /* A plain store makes the element one defined value; a reduction adds
     * one contribution. */
    if (s->acc.red == IR_RED_ASSIGN) ts->count[off] = 1;
    else ts->count[off]++;
    ts->touched = true;
  }
}

static void exec_stmt(Interp *in, const IrNode *s) {
  switch (s->kind) {
  case IR_LOOP: exec_loop(in, s); return;
  case IR_STORE: exec_store(in, s); return;
  case IR_LET: {
    double v = local_value(in, eval_float(in, s->let.init));
    int id = s->let.var->id;
    in->fval[id] = v;
    if (in->shuffled[id])
      for (int l = 0; l < 32; l++) in->lanes[id * 32 + l] = v;
    return;
  }
  case IR_SET: {
    double v = eval_float(in, s->set.value);
    int id = s->set.var->id;
    double *slot = &in->fval[id];
    if (s->set.red == IR_RED_MEAN) {
      fail(in, s->loc, "mean= on the local %s: a local has no contribution count",
           s->set.var->name);
      return;
    }
    if (s->set.how == IR_HOW_SHUFFLE) {
      slot = &in->lanes[id * 32 + in->lane];
      bool listed = false;
      for (int i = 0; i < in->ndirty; i++) listed |= in->dirty[i] == id;
      if (!listed) {
        if (in->ndirty == (int)(sizeof in->dirty / sizeof in->dirty[0])) {
          fail(in, s->loc, "more than %d locals reduced across lanes at once",
               in->ndirty);
          return;
        }
        in->dirty[in->ndirty++] = id;
      }
    }
    *slot = local_value(in, combine(s->set.red, *slot, v));
    return;
  }
  case IR_IF:
    if (eval_bool(in, s->ifs.cond) && !in->failed) exec_list(in, s->ifs.then);
    return;
  case IR_FCONST: case IR_ICONST: case IR_VAR: case IR_SYM: case IR_LOAD:
  case IR_BIN: case IR_UN: case IR_CALL: case IR_SRC: case IR_DST:
  case IR_INDEG: case IR_OUTDEG: case IR_NV: case IR_NE: case IR_OWNS:
  case IR_NODE_COUNT:
    break;
  }
  fail(in, s->loc, "internal error: `%s` is not a statement", ir_kind_name(s->kind));
}

/* After a statement of `list`: the locals declared in `list` whose lanes
 * hold partials get the butterfly combination of them (lane l adds the
 * value of lane l ^ d for d = 16, 8, 4, 2, 1, as shfl.sync.bfly does). */
static void combine_lanes(Interp *in, const IrNode *list) {
  for (int i = 0; i < in->ndirty; i++) {
    int id = in->dirty[i];
    if (in->decl[id] != list) continue;
    double *l = &in->lanes[id * 32], t[32];
    IrRed red = in->shuffled[id] == 1 ? IR_RED_ADD : in->shuffled[id] == 2 ? IR_RED_MAX
                                                                    : IR_RED_MIN;
    for (int d = 16; d >= 1; d /= 2) {
      for (int k = 0; k < 32; k++) t[k] = local_value(in, combine(red, l[k], l[k ^ d]));
      memcpy(l, t, sizeof t);
    }
    in->fval[id] = l[0];
    in->dirty[i--] = in->dirty[--in->ndirty];
  }
}

static void exec_list(Interp *in, const IrNode *list) {
  for (const IrNode *s = list; s && !in->failed; s = s->next) {
    exec_stmt(in, s);
    if (in->ndirty) combine_lanes(in, list);
  }
}

/* Fills `shuffled` (1: +=, 2: max=, 3: min=) and `decl` under `list`. */
static void find_shuffles(Interp *in, const IrNode *list) {
  for (const IrNode *s = list; s; s = s->next) {
    switch (s->kind) {
    case IR_LOOP: find_shuffles(in, s->loop.body); break;
    case IR_IF: find_shuffles(in, s->ifs.then); break;
    case IR_LET: in->decl[s->let.var->id] = list; break;
    case IR_SET:
      if (s->set.how == IR_HOW_SHUFFLE)
        in->shuffled[s->set.var->id] = s->set.red == IR_RED_ADD   ? 1
                                       : s->set.red == IR_RED_MAX ? 2
                                                                  : 3;
      break;
    default: break;
    }
  }
}

/* The end of a stage: `mean=` elements become their average (the counts
 * restart, so a later stage averages afresh); `max=` / `min=` elements that
 * never received a contribution become 0 (counts are kept: an element
 * that got one in an earlier stage keeps its value). */
static void finalise(Interp *in) {
  for (int i = 0; i < in->op->ntensors; i++) {
    TensorState *s = &in->ts[i];
    if (!s->count || !s->touched) continue;
    s->touched = false;
    s->finalised = true;
    for (int64_t k = 0; k < s->numel; k++) {
      uint32_t c = s->count[k];
      if (s->red == IR_RED_MEAN) {
        if (c > 0) put(s, k, get(s, k) / c);
        if (c > 0 && s->tabs) s->tabs[k] /= c;
        s->count[k] = 0;
      } else if (c == 0) {
        put(s, k, 0);
      }
    }
  }
}

/* The end of a stage, after finalise: every element of a 16-bit output or
 * temporary is rounded to its dtype, as the kernel's store does. */
static void round_halves(Interp *in) {
  for (int i = 0; i < in->op->ntensors; i++) {
    TensorState *s = &in->ts[i];
    if (s->half == IR_DT_F32 || s->t->role == IR_ROLE_IN) continue;
    for (int64_t k = 0; k < s->numel; k++) s->f64[k] = ir_round_to(s->half, s->f64[k]);
  }
}

double interp_sum_allowance(uint32_t n, double abs) {
  return n < 2 ? 0 : 2 * sqrt((double)n) * 0x1p-24 * abs;
}

/* ---- setting up a run ---- */

/* The reduction that targets each tensor anywhere in `list`: the first one
 * that is not a plain store (the checker allows one kind per tensor). */
static void find_reductions(Interp *in, const IrNode *list) {
  for (const IrNode *s = list; s; s = s->next) {
    switch (s->kind) {
    case IR_LOOP: find_reductions(in, s->loop.body); break;
    case IR_IF: find_reductions(in, s->ifs.then); break;
    case IR_STORE: {
      TensorState *ts = &in->ts[s->acc.tensor->id];
      if (ts->red == IR_RED_ASSIGN) ts->red = s->acc.red;
      break;
    }
    case IR_LET: case IR_SET: case IR_FCONST: case IR_ICONST: case IR_VAR:
    case IR_SYM: case IR_LOAD: case IR_BIN: case IR_UN: case IR_CALL:
    case IR_SRC: case IR_DST: case IR_INDEG: case IR_OUTDEG: case IR_NV:
    case IR_NE: case IR_OWNS: case IR_NODE_COUNT:
      break;
    }
  }
}

static double identity(IrRed red) {
  switch (red) {
  case IR_RED_MAX: return -INFINITY;
  case IR_RED_MIN: return INFINITY;
  case IR_RED_ASSIGN: case IR_RED_ADD: case IR_RED_MEAN: case IR_RED_COUNT:
    break;
  }
  return 0;
}

static bool check_extents(Interp *in) {
  const IrOp *op = in->op;
  for (int i = 0; i < op->nsyms; i++) {
    const IrSym *s = op->syms[i];
    if (s->id >= in->ext->n || s->id >= (int)(sizeof in->ext->value / sizeof in->ext->value[0])) {
      fail(in, s->loc, "extent %s of op %s is not bound to a value", s->name, op->name);
      return false;
    }
    if (in->ext->value[s->id] <= 0) {
      fail(in, s->loc, "extent %s of op %s must be positive, got %lld", s->name,
           op->name, (long long)in->ext->value[s->id]);
      return false;
    }
  }
  return true;
}

static bool setup_tensor(Interp *in, TensorState *s, const IrTensor *t,
                         void *buffer) {
  s->t = t;
  s->rank = graph_tensor_shape(t, in->g, in->ext, s->shape);
  if (t->domain == IR_DOM_GROUPS && s->shape[0] < 0) {
    fail(in, t->loc, "tensor %s: no group table of size %d for the graph",
         t->name, t->group);
    return false;
  }
  s->numel = 1;
  for (int i = s->rank - 1; i >= 0; i--) {
    s->stride[i] = s->numel;
    if (__builtin_mul_overflow(s->numel, s->shape[i], &s->numel) ||
        s->numel > (int64_t)(SIZE_MAX / 16)) {
      fail(in, t->loc, "tensor %s is too large", t->name);
      return false;
    }
  }
  s->half = IR_DT_F32;
  if (in->f32 && ir_dtype_is_16bit(t->dtype)) {
    /* the caller's 16-bit buffer (if any) and a double shadow */
    s->half = t->dtype;
    s->user = buffer;
    buffer = NULL;
    if (!s->user && t->role != IR_ROLE_TEMP && s->numel > 0) {
      fail(in, t->loc, "no buffer given for tensor %s", t->name);
      return false;
    }
  }
  bool as_f32 = in->f32 && t->dtype == IR_DT_F32;
  if (!buffer && (t->role == IR_ROLE_TEMP || s->half != IR_DT_F32)) {
    size_t elem = as_f32 ? sizeof(float) : sizeof(double);
    buffer = malloc((size_t)(s->numel > 0 ? s->numel : 1) * elem);
    if (!buffer) {
      fail(in, t->loc, "out of memory for the temporary %s (%lld elements)", t->name,
           (long long)s->numel);
      return false;
    }
    s->owned = true;
  }
  if (!buffer && s->numel > 0) {
    fail(in, t->loc, "no buffer given for tensor %s", t->name);
    return false;
  }
  if (as_f32) s->f32 = buffer;
  else s->f64 = buffer;
  if (in->terms && in->terms[t->id].n && in->terms[t->id].abs) {
    s->tn = in->terms[t->id].n;
    s->tabs = in->terms[t->id].abs;
    memset(s->tn, 0, sizeof(uint32_t) * (size_t)s->numel);
    memset(s->tabs, 0, sizeof(double) * (size_t)s->numel);
  }
  if (t->role == IR_ROLE_IN) {
    if (s->half != IR_DT_F32)
      for (int64_t k = 0; k < s->numel; k++) s->f64[k] = ir_elem_get(s->half, s->user, k);
    return true;
  }
  /* A tensor the op fills itself (passes/fill.c) starts as NaN, so that a
   * row its stages forget shows in every check. */
  double id = t->filled ? NAN : identity(s->red);
  for (int64_t k = 0; k < s->numel; k++) put(s, k, id);
  if (s->red == IR_RED_MEAN || s->red == IR_RED_MAX || s->red == IR_RED_MIN) {
    s->count = calloc((size_t)(s->numel > 0 ? s->numel : 1), sizeof(uint32_t));
    if (!s->count) {
      fail(in, t->loc, "out of memory for the counts of %s", t->name);
      return false;
    }
  }
  return true;
}

static void release(Interp *in) {
  if (in->ts) {
    for (int i = 0; i < in->op->ntensors; i++) {
      TensorState *s = &in->ts[i];
      if (s->owned) free(s->f32 ? (void *)s->f32 : (void *)s->f64);
      free(s->count);
    }
  }
  free(in->ts);
  free(in->ival);
  free((void *)in->gtab);
  free((void *)in->ptab);
  free(in->fval);
  free(in->shuffled);
  free(in->decl);
  free(in->lanes);
}

int interp_run(const IrOp *op, const InterpArgs *args, Diag *d) {
  /* Walking a malformed tree could crash; the verifier makes sure it is not
   * one. */
  if (!ir_verify_op(op, d, "the interpreter's input check")) return -1;
  Interp in = {.op = op, .g = args->graph, .ext = &args->extents, .d = d,
               .f32 = args->mode == INTERP_F32,
               .acc32 = args->mode == INTERP_F32 && op->acc != IR_DT_F64,
               .terms = args->terms};
  if (!in.g) {
    fail(&in, op->loc, "no graph to run op %s on", op->name);
    return -1;
  }
  /* scheduled with transpose(): the same results on the reversed graph */
  if (op->transposed && !(in.g = graph_transposed(in.g, d, op->loc))) return -1;
  if (op->ntensors > 0 && !args->buffers) {
    fail(&in, op->loc, "no buffers given for op %s", op->name);
    return -1;
  }
  if (!check_extents(&in)) return -1;
  size_t nvars = op->nvars > 0 ? (size_t)op->nvars : 1;
  in.ts = calloc(op->ntensors > 0 ? (size_t)op->ntensors : 1, sizeof *in.ts);
  in.ival = calloc(nvars, sizeof *in.ival);
  in.gtab = calloc(nvars, sizeof *in.gtab);
  in.ptab = calloc(nvars, sizeof *in.ptab);
  in.fval = calloc(nvars, sizeof *in.fval);
  in.shuffled = calloc(nvars, sizeof *in.shuffled);
  in.decl = calloc(nvars, sizeof *in.decl);
  in.lanes = calloc(nvars * 32, sizeof *in.lanes);
  if (!in.ts || !in.ival || !in.gtab || !in.ptab || !in.fval || !in.shuffled || !in.decl || !in.lanes) {
    release(&in);
    fail(&in, op->loc, "out of memory running op %s", op->name);
    return -1;
  }
  find_reductions(&in, op->body);
  find_shuffles(&in, op->body);
  for (int i = 0; i < op->ntensors && !in.failed; i++)
    setup_tensor(&in, &in.ts[i], op->tensors[i], args->buffers[i]);
  /* Each top-level statement is a stage: run it to completion, then
   * finalise what it reduced into. */
  for (const IrNode *s = op->body; s && !in.failed; s = s->next) {
    exec_stmt(&in, s);
    if (in.ndirty) combine_lanes(&in, op->body);
    if (!in.failed) finalise(&in);
    if (!in.failed) round_halves(&in);
  }
  /* A target whose reductions never ran (a stage with no iterations) got
   * no contribution at all: it still holds the identity, ±inf for max= and
   * min=, which the empty-neighbourhood rule turns into 0. */
  if (!in.failed) {
    for (int i = 0; i < op->ntensors; i++)
      if (in.ts[i].count && !in.ts[i].finalised) in.ts[i].touched = true;
    finalise(&in);
    round_halves(&in);
    /* 16-bit outputs go back to the caller's buffers */
    for (int i = 0; i < op->ntensors; i++) {
      TensorState *s = &in.ts[i];
      if (s->half == IR_DT_F32 || op->tensors[i]->role != IR_ROLE_OUT) continue;
      for (int64_t k = 0; k < s->numel; k++) ir_elem_put(s->half, s->user, k, s->f64[k]);
    }
  }
  release(&in);
  return in.failed ? -1 : 0;
}
