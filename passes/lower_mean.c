/* passes/lower_mean.c: mean, max and min as the GPU does them.
 *
 * Contract: requires nothing; gives an operator with no `mean=` store, and
 * a finalisation stage after each stage that reduces into a `mean=`,
 * `max=` or `min=` target; breaks nothing (the new stages are bound, one
 * thread per row).
 *
 * A GPU cannot count the contributions to each element cheaply, so the
 * rules of docs/language.md are met with what is known:
 *
 *   mean=  becomes `+=`, followed by a stage
 *            Y[v, f] = Y[v, f] / max(in_degree(v), 1.0)
 *          The checker allows mean= only on vertex tensors inside an edge
 *          loop, one contribution per edge of the vertex: the count is the
 *          degree (in-degree for dst tensors, out-degree for src tensors);
 *          a vertex with no edges keeps its 0 (the sum's identity) / 1.
 *   max= / min=  keep their store and get a stage
 *            if (Y[v, f] == -inf) { Y[v, f] = 0.0 }      (+inf for min=)
 *          an element that received no contribution still holds the
 *          identity the runtime filled it with, and becomes 0 (DGL's rule).
 *
 * As in the interpreter, the finalisation follows every stage that reduces
 * into the tensor, so a later stage reads finished values.
 */
#include <math.h>
#include <string.h>

#include "passes/passes.h"

IrRed pass_target_red(const IrNode *list, const IrTensor *t) {
  for (const IrNode *s = list; s; s = s->next) {
    IrRed r = IR_RED_ASSIGN;
    if (s->kind == IR_STORE && s->acc.tensor == t) r = s->acc.red;
    else if (s->kind == IR_LOOP) r = pass_target_red(s->loop.body, t);
    else if (s->kind == IR_IF) r = pass_target_red(s->ifs.then, t);
    if (r != IR_RED_ASSIGN) return r;
  }
  return IR_RED_ASSIGN;
}

static void mean_to_add(IrNode *list, const IrTensor *t) {
  for (IrNode *s = list; s; s = s->next) {
    if (s->kind == IR_STORE && s->acc.tensor == t && s->acc.red == IR_RED_MEAN)
      s->acc.red = IR_RED_ADD;
    else if (s->kind == IR_LOOP) mean_to_add(s->loop.body, t);
    else if (s->kind == IR_IF) mean_to_add(s->ifs.then, t);
  }
}

/* A name for a loop of the new stage: not a tensor or an extent, and not
 * one of the stage's other loops. The `_fin` names keep directives that
 * name v or f (promote lowers a mean during scheduling) off these stages. */
static const char *stage_name(const IrOp *op, Arena *a, const char *base,
                              const char **taken, int ntaken) {
  for (int i = 0;; i++) {
    const char *name = i ? ir_sprintf(a, "%s%d", base, i) : base;
    bool clash = ir_op_find_tensor(op, name) != NULL;
    for (int k = 0; k < op->nsyms; k++) clash |= strcmp(op->syms[k]->name, name) == 0;
    for (int k = 0; k < ntaken; k++) clash |= strcmp(taken[k], name) == 0;
    if (!clash) return name;
  }
}

/* What a mean divides by: max(degree, 1.0), so an empty row stays 0. */
static IrNode *mean_count(Arena *a, Loc at, IrNode *deg) {
  IrNode *args[2] = {deg, ir_fconst(a, at, 1.0)};
  return ir_call(a, at, IR_FN_MAX, 2, args);
}

/* What a row stage writes into each element of t (pass_row_stage). */
typedef enum RowBody {
  ROW_FILL,   /* the reduction's identity (fill.c) */
  ROW_FINISH, /* a mean divided by its count; max/min's empty rows 0.0 */
  ROW_WIDE,   /* rounded from the wide twin, and finished so */
  ROW_ZERO,   /* 0.0: an empty row of a tensor with a wide twin */
} RowBody;

typedef struct RowStage {
  IrOp *op;
  IrTensor *t;
  const IrTensor *from;
  IrRed red;
  Arena *a;
  Loc at;
  const char *names[3 * IR_MAX_IDX];
  int nn;
  IrNode *rowidx; /* the row's index (its loop variable), or NULL: dense */
  IrNode *deg;    /* its degree, or NULL */
  int lanes;      /* lanes of a row: 32, or a team's 8; 0: no lane loop */
} RowStage;

static IrVar *row_var(RowStage *rs, const char *base, IrVarKind kind) {
  rs->names[rs->nn] = stage_name(rs->op, rs->a, base, rs->names, rs->nn);
  return pass_new_var(rs->op, rs->a, rs->names[rs->nn++], kind, rs->at);
}

/* Copies of `idx` into `out`: ir_load and ir_store keep the index nodes
 * they are given, so each access gets its own. */
static IrNode **clone_idx(Arena *a, IrNode *const *idx, int nidx, IrNode **out) {
  for (int i = 0; i < nidx; i++) out[i] = ir_clone(a, idx[i]);
  return out;
}

/* The element statement of `kind` at t[idx]. */
static IrNode *row_body(RowStage *rs, RowBody kind, IrNode **idx, int nidx) {
  Arena *a = rs->a;
  Loc at = rs->at;
  IrTensor *t = rs->t;
  IrRed red = rs->red;
  IrNode *ti[IR_MAX_IDX], *li[IR_MAX_IDX];
  clone_idx(a, idx, nidx, ti);
  switch (kind) {
  case ROW_FILL: {
    double id = red == IR_RED_MAX ? -INFINITY : red == IR_RED_MIN ? INFINITY : 0.0;
    return ir_store(a, at, t, nidx, ti, IR_RED_ASSIGN, ir_fconst(a, at, id));
  }
  case ROW_ZERO: return ir_store(a, at, t, nidx, ti, IR_RED_ASSIGN, ir_fconst(a, at, 0.0));
  case ROW_WIDE: {
    IrNode *value = ir_load(a, at, (IrTensor *)rs->from, nidx, clone_idx(a, idx, nidx, li));
    if (red == IR_RED_MEAN)
      value = ir_bin(a, at, IR_OP_DIV, value, mean_count(a, at, ir_clone(a, rs->deg)));
    if (red != IR_RED_MAX && red != IR_RED_MIN)
      return ir_store(a, at, t, nidx, ti, IR_RED_ASSIGN, value);
    /* var w = from[...]; if (w == -inf) { w = 0.0 }; t[...] = w */
    IrVar *w = row_var(rs, "w_fin", IR_VAR_LOCAL);
    IrNode *body = ir_let(a, at, w, value);
    IrNode *none = ir_fconst(a, at, red == IR_RED_MAX ? -INFINITY : INFINITY);
    body->next = ir_if(a, at, ir_bin(a, at, IR_OP_EQ, ir_var(a, at, w), none),
                       ir_set(a, at, w, IR_RED_ASSIGN, ir_fconst(a, at, 0.0)));
    body->next->next = ir_store(a, at, t, nidx, ti, IR_RED_ASSIGN, ir_var(a, at, w));
    return body;
  }
  case ROW_FINISH: {
    clone_idx(a, idx, nidx, li);
    if (red == IR_RED_MEAN)
      return ir_store(a, at, t, nidx, ti, IR_RED_ASSIGN,
                      ir_bin(a, at, IR_OP_DIV, ir_load(a, at, t, nidx, li),
                             mean_count(a, at, ir_clone(a, rs->deg))));
    IrNode *none = ir_fconst(a, at, red == IR_RED_MAX ? -INFINITY : INFINITY);
    return ir_if(a, at, ir_bin(a, at, IR_OP_EQ, ir_load(a, at, t, nidx, li), none),
                 ir_store(a, at, t, nidx, ti, IR_RED_ASSIGN, ir_fconst(a, at, 0.0)));
  }
  }
  unreachable("bad row body");
}

/* Elements a lane takes at once in a row stage: 16 bytes of t (and of its
 * twin when that is no wider than 4 bytes: two 16-byte loads of f32 for 8
 * bf16), so that a team of 8 lanes writes 128 bytes of a row per
 * instruction instead of 8 elements. 1 where t is not float. */
static int row_vec(const RowStage *rs) {
  int tb = ir_dtype_bytes(rs->t->dtype);
  if (!ir_dtype_is_float(rs->t->dtype) || tb > 8) return 1;
  int v = 16 / tb;
  if (v > 8) v = 8;
  if (rs->from && v * ir_dtype_bytes(rs->from->dtype) > 32) v = 32 / ir_dtype_bytes(rs->from->dtype);
  return v >= 2 ? v : 1;
}

/* The loops over t's feature dimensions around a `kind` body, outermost
 * first (a dense tensor's first loop is bound to threads). The
 * last dimension of a row runs on its lanes, V consecutive elements a lane
 * (row_vec, @vec(V)):
 *   for fo in 0..(ext + L V - 1) / (L V) { for fl in 0..L @lane {
 *     for fv in 0..V @vec(V) { if ((fo * L + fl) * V + fv < ext) { ... } } } } */
static IrNode *row_nest(RowStage *rs, RowBody kind) {
  Arena *a = rs->a;
  Loc at = rs->at;
  IrTensor *t = rs->t;
  IrNode *idx[IR_MAX_IDX];
  int nidx = 0;
  if (rs->rowidx) idx[nidx++] = ir_clone(a, rs->rowidx);
  IrNode *first = NULL, **hole = &first;
  for (int k = 0; k < t->ndims; k++) {
    IrVar *f = row_var(rs, ir_sprintf(a, "f%s_fin", k ? ir_sprintf(a, "%d", k) : ""),
                       IR_VAR_INDEX);
    IrNode *ext = t->dims[k].sym ? ir_symref(a, at, t->dims[k].sym)
                                 : ir_iconst(a, at, t->dims[k].value);
    if (rs->lanes && k == t->ndims - 1) {
      int L = rs->lanes, V = row_vec(rs);
      IrVar *fl = row_var(rs, "fl_fin", IR_VAR_INDEX);
      IrNode *chunks = ir_bin(a, at, IR_OP_DIV,
                              ir_bin(a, at, IR_OP_ADD, ext, ir_iconst(a, at, L * V - 1)),
                              ir_iconst(a, at, L * V));
      IrNode *lo = ir_loop(a, at, f, IR_LOOP_RANGE, chunks, NULL, NULL);
      IrNode *li = ir_loop(a, at, fl, IR_LOOP_RANGE, ir_iconst(a, at, L), NULL, NULL);
      li->loop.bind = IR_BIND_LANE;
      IrNode *lane = ir_bin(a, at, IR_OP_ADD,
                            ir_bin(a, at, IR_OP_MUL, ir_var(a, at, f), ir_iconst(a, at, L)),
                            ir_var(a, at, fl));
      IrNode *feat = lane;
      lo->loop.body = li;
      IrNode **inner = &li->loop.body;
      if (V > 1) {
        IrVar *fv = row_var(rs, "fv_fin", IR_VAR_INDEX);
        IrNode *lv = ir_loop(a, at, fv, IR_LOOP_RANGE, ir_iconst(a, at, V), NULL, NULL);
        lv->loop.vec = V;
        feat = ir_bin(a, at, IR_OP_ADD, ir_bin(a, at, IR_OP_MUL, lane, ir_iconst(a, at, V)),
                      ir_var(a, at, fv));
        *inner = lv;
        inner = &lv->loop.body;
      }
      IrNode *in = ir_if(a, at, ir_bin(a, at, IR_OP_LT, ir_clone(a, feat), ir_clone(a, ext)), NULL);
      *inner = in;
      *hole = lo;
      hole = &in->ifs.then;
      idx[nidx++] = feat;
      continue;
    }
    IrNode *l = ir_loop(a, at, f, IR_LOOP_RANGE, ext, NULL, NULL);
    if (!rs->rowidx && !first) l->loop.bind = IR_BIND_THREAD; /* dense: threads over rows */
    *hole = l;
    hole = &l->loop.body;
    idx[nidx++] = ir_var(a, at, f);
  }
  IrNode *body = row_body(rs, kind, idx, nidx);
  *hole = body;
  return first ? first : body;
}

/* The finalisation stage of `t`, reduced with `red`; with `fill`, the
 * stage that gives the rows its groups do not own their initial value
 * instead (fill.c); with `from`, the stage that rounds t's rows from their
 * wide twin (promote.c). A tensor whose rows with 1..G in-edges are owned
 * by their one neighbour group (t->owner_group, promote.c) is finished
 * there; this stage then visits only the others:
 *   for v @warp @team(8) { if (in_degree(v) == 0.0 || in_degree(v) > G) { ... } }
 * A 16-bit tensor with a wide twin takes only its heavy rows from the twin
 * and writes its empty rows 0.0 directly, so the twin is filled and read
 * on the heavy rows alone: filling and reading the twin's empty rows too
 * moved 10 bytes an element where 2 do (on ogbn-arxiv, 62,006 of 169,343
 * rows are empty). */
IrNode *pass_row_stage(IrOp *op, IrTensor *t, const IrTensor *from, IrRed red, bool fill,
                       Arena *a) {
  RowStage rs = {.op = op, .t = t, .from = from, .red = red, .a = a, .at = t->loc};
  Loc at = t->loc;
  IrNode *row = NULL; /* the vertex or edge loop, if any */
  if (t->domain != IR_DOM_DENSE) {
    static const struct { IrDomain dom; IrLoopKind loop; IrVarKind var; const char *name; }
        rows[] = {{IR_DOM_DST, IR_LOOP_DST_V, IR_VAR_DST_V, "v_fin"},
                  {IR_DOM_SRC, IR_LOOP_SRC_V, IR_VAR_SRC_V, "u_fin"},
                  {IR_DOM_EDGE, IR_LOOP_EDGES, IR_VAR_EDGE, "e_fin"}};
    int r = t->domain == IR_DOM_DST ? 0 : t->domain == IR_DOM_SRC ? 1 : 2;
    IrVar *v = row_var(&rs, rows[r].name, rows[r].var);
    rs.rowidx = ir_var(a, at, v);
    row = ir_loop(a, at, v, rows[r].loop, NULL, NULL, NULL);
    /* a warp per row, lanes on its last dimension (coalesced), when it has
     * one; else a thread per row */
    row->loop.bind = t->ndims > 0 ? IR_BIND_WARP : IR_BIND_THREAD;
    if (t->domain != IR_DOM_EDGE)
      rs.deg = ir_endpoint(a, at, t->domain == IR_DOM_DST ? IR_INDEG : IR_OUTDEG,
                           ir_var(a, at, v));
    if (t->ndims > 0) rs.lanes = 32;
  }
  RowBody kind = from ? ROW_WIDE : fill ? ROW_FILL : ROW_FINISH;
  if (!row) return row_nest(&rs, kind);
  /* Where neighbour groups own their rows (fill.c), this stage visits the
   * few rows they do not own and skips the rest after reading a degree: a
   * team of 8 lanes per row (four rows a warp) instead of a warp that would
   * mostly test and leave. */
  if (!(rs.deg && t->owner_group > 0)) {
    row->loop.body = row_nest(&rs, kind);
    return row;
  }
  if (rs.lanes) rs.lanes = row->loop.team = 8;
  /* Panels (passes/panel.c) own every destination but those of panels
   * split over rows, which their table lists: no degree to test. */
  if (t->owner_panel > 0 && t->domain == IR_DOM_DST && !from) {
    row->loop.kind = IR_LOOP_UNOWNED;
    row->loop.group = t->owner_group;
    row->loop.panel = t->owner_panel;
    row->loop.body = row_nest(&rs, kind);
    return row;
  }
  /* ... and walks only those: the destinations whose in-degree is 0 or
   * over G, listed once per graph with its group table (graph/groups.c).
   * Scanning every row cost about 10 us a stage on cnr-2000 (325,557
   * rows, 3,381 of them heavy) on the H100, mostly reading degrees. */
  if (t->domain == IR_DOM_DST) {
    row->loop.kind = IR_LOOP_UNOWNED;
    row->loop.group = t->owner_group;
  }
  IrNode *empty = ir_bin(a, at, IR_OP_EQ, ir_clone(a, rs.deg), ir_fconst(a, at, 0.0));
  IrNode *heavy = ir_bin(a, at, IR_OP_GT, ir_clone(a, rs.deg),
                         ir_fconst(a, at, (double)t->owner_group));
  if (fill && t->wide) { /* the twin: its heavy rows only */
    row->loop.body = ir_if(a, at, heavy, row_nest(&rs, kind));
  } else if (from) { /* if (heavy) { from the twin } if (empty) { 0.0 } */
    row->loop.body = ir_if(a, at, heavy, row_nest(&rs, ROW_WIDE));
    row->loop.body->next = ir_if(a, at, empty, row_nest(&rs, ROW_ZERO));
  } else {
    row->loop.body = ir_if(a, at, ir_bin(a, at, IR_OP_OR, empty, heavy),
                           row_nest(&rs, kind));
  }
  return row;
}

/* With `from`, every reduction (a sum too) gets the stage, which finishes
 * t's rows from `from` (pass_lower_wide). */
static int lower(IrOp *op, IrTensor *t, const IrTensor *from, Arena *a, Diag *d) {
  IrRed red = pass_target_red(op->body, t);
  bool finished = red == IR_RED_MEAN || red == IR_RED_MAX || red == IR_RED_MIN;
  if (!finished && !(from && red == IR_RED_ADD)) return 0;
  if (red == IR_RED_MEAN && t->domain != IR_DOM_DST && t->domain != IR_DOM_SRC) {
    ir_error(d, t->loc, "mean: '%s' is a mean= target but lives on %s; only "
             "vertex tensors are averaged over their edges", t->name,
             ir_domain_name(t->domain));
    return -1;
  }
  for (IrNode **p = &op->body; *p;) {
    IrNode *s = *p;
    IrNode *saved = s->next;
    s->next = NULL;
    bool reduces = pass_target_red(s, t) != IR_RED_ASSIGN;
    s->next = saved;
    if (!reduces) {
      p = &s->next;
      continue;
    }
    if (red == IR_RED_MEAN) {
      s->next = NULL;
      mean_to_add(s, t);
      s->next = saved;
    }
    IrNode *fin = pass_row_stage(op, t, from, red, false, a);
    fin->next = s->next;
    s->next = fin;
    p = &fin->next;
  }
  return 0;
}

int pass_lower_mean_tensor(IrOp *op, IrTensor *t, Arena *a, Diag *d) {
  return lower(op, t, NULL, a, d);
}

int pass_lower_wide(IrOp *op, IrTensor *t, const IrTensor *wide, Arena *a, Diag *d) {
  return lower(op, t, wide, a, d);
}

int pass_lower_mean(IrOp *op, Arena *a, Diag *d) {
  for (int i = 0; i < op->ntensors; i++)
    if (op->tensors[i]->role != IR_ROLE_IN && !op->tensors[i]->wide &&
        pass_lower_mean_tensor(op, op->tensors[i], a, d) != 0)
      return -1;
  return 0;
}
