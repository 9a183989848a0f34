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

/* The finalisation stage of `t`, reduced with `red`; with `fill`, the
 * stage that gives the rows its groups do not own their initial value
 * instead (fill.c). A tensor whose rows with 1..G in-edges are owned by
 * their one neighbour group (t->owner_group, promote.c) is finished there;
 * this stage then visits only the others:
 *   for v @warp { if (in_degree(v) == 0.0 || in_degree(v) > G) { ... } } */
/* What a mean divides by: max(degree, 1.0), so an empty row stays 0. */
static IrNode *mean_count(Arena *a, Loc at, IrNode *deg) {
  IrNode *args[2] = {deg, ir_fconst(a, at, 1.0)};
  return ir_call(a, at, IR_FN_MAX, 2, args);
}

IrNode *pass_row_stage(IrOp *op, IrTensor *t, const IrTensor *from, IrRed red, bool fill,
                       Arena *a) {
  Loc at = t->loc;
  const char *names[IR_MAX_IDX];
  int nn = 0;
  IrNode *idx[IR_MAX_IDX];
  int nidx = 0;
  IrNode *row = NULL; /* the vertex or edge loop, if any */
  IrNode **hole;      /* where the innermost body goes */
  IrNode *deg = NULL;
  if (t->domain != IR_DOM_DENSE) {
    static const struct { IrDomain dom; IrLoopKind loop; IrVarKind var; const char *name; }
        rows[] = {{IR_DOM_DST, IR_LOOP_DST_V, IR_VAR_DST_V, "v_fin"},
                  {IR_DOM_SRC, IR_LOOP_SRC_V, IR_VAR_SRC_V, "u_fin"},
                  {IR_DOM_EDGE, IR_LOOP_EDGES, IR_VAR_EDGE, "e_fin"}};
    int r = t->domain == IR_DOM_DST ? 0 : t->domain == IR_DOM_SRC ? 1 : 2;
    names[nn] = stage_name(op, a, rows[r].name, names, nn);
    IrVar *v = pass_new_var(op, a, names[nn++], rows[r].var, at);
    idx[nidx++] = ir_var(a, at, v);
    row = ir_loop(a, at, v, rows[r].loop, NULL, NULL, NULL);
    /* a warp per row, lanes on its last dimension (coalesced), when it has
     * one; else a thread per row */
    row->loop.bind = t->ndims > 0 ? IR_BIND_WARP : IR_BIND_THREAD;
    if (t->domain != IR_DOM_EDGE)
      deg = ir_endpoint(a, at, t->domain == IR_DOM_DST ? IR_INDEG : IR_OUTDEG,
                        ir_var(a, at, v));
  }
  IrNode *top = row;
  hole = row ? &row->loop.body : &top;
  /* Where neighbour groups own their rows (fill.c), this stage visits the
   * few rows they do not own and skips the rest after reading a degree: a
   * team of 8 lanes per row (four rows a warp, 32-byte stores) instead of
   * a warp that would mostly test and leave. */
  int lanes = row && deg && t->owner_group > 0 && row->loop.bind == IR_BIND_WARP ? 8 : 32;
  if (lanes < 32) row->loop.team = lanes;
  if (row && deg && t->owner_group > 0) {
    IrNode *none = ir_bin(a, at, IR_OP_EQ, ir_clone(a, deg), ir_fconst(a, at, 0.0));
    IrNode *heavy = ir_bin(a, at, IR_OP_GT, ir_clone(a, deg),
                           ir_fconst(a, at, (double)t->owner_group));
    IrNode *g = ir_if(a, at, ir_bin(a, at, IR_OP_OR, none, heavy), NULL);
    *hole = g;
    hole = &g->ifs.then;
  }
  for (int k = 0; k < t->ndims; k++) {
    names[nn] = stage_name(op, a, ir_sprintf(a, "f%s_fin", k ? ir_sprintf(a, "%d", k) : ""),
                           names, nn);
    IrVar *f = pass_new_var(op, a, names[nn++], IR_VAR_INDEX, at);
    IrNode *ext = t->dims[k].sym ? ir_symref(a, at, t->dims[k].sym)
                                 : ir_iconst(a, at, t->dims[k].value);
    if (row && k == t->ndims - 1) {
      /* for fo in 0..(ext + L-1) / L { for fl in 0..L @lane { if (fo * L + fl < ext),
       * L the lanes of a row (32, or the team's 8) */
      names[nn] = stage_name(op, a, "fl_fin", names, nn);
      IrVar *fl = pass_new_var(op, a, names[nn++], IR_VAR_INDEX, at);
      IrNode *chunks = ir_bin(a, at, IR_OP_DIV,
                              ir_bin(a, at, IR_OP_ADD, ext, ir_iconst(a, at, lanes - 1)),
                              ir_iconst(a, at, lanes));
      IrNode *lo = ir_loop(a, at, f, IR_LOOP_RANGE, chunks, NULL, NULL);
      IrNode *li = ir_loop(a, at, fl, IR_LOOP_RANGE, ir_iconst(a, at, lanes), NULL, NULL);
      li->loop.bind = IR_BIND_LANE;
      IrNode *feat = ir_bin(a, at, IR_OP_ADD,
                            ir_bin(a, at, IR_OP_MUL, ir_var(a, at, f), ir_iconst(a, at, lanes)),
                            ir_var(a, at, fl));
      IrNode *in = ir_if(a, at, ir_bin(a, at, IR_OP_LT, feat, ir_clone(a, ext)), NULL);
      lo->loop.body = li;
      li->loop.body = in;
      *hole = lo;
      hole = &in->ifs.then;
      idx[nidx++] = ir_clone(a, feat);
      continue;
    }
    IrNode *l = ir_loop(a, at, f, IR_LOOP_RANGE, ext, NULL, NULL);
    if (!top) {
      top = l;
      l->loop.bind = IR_BIND_THREAD; /* a dense tensor: threads over rows */
    }
    *hole = l;
    hole = &l->loop.body;
    idx[nidx++] = ir_var(a, at, f);
  }
  IrNode *body;
  if (from) { /* t's rows finished from their wide twin (promote.c) */
    IrNode *fidx[IR_MAX_IDX], *tidx[IR_MAX_IDX];
    for (int i = 0; i < nidx; i++) {
      fidx[i] = ir_clone(a, idx[i]);
      tidx[i] = ir_clone(a, idx[i]);
    }
    IrNode *value = ir_load(a, at, (IrTensor *)from, nidx, fidx);
    if (red == IR_RED_MEAN) {
      value = ir_bin(a, at, IR_OP_DIV, value, mean_count(a, at, deg));
    }
    if (red != IR_RED_MAX && red != IR_RED_MIN) {
      body = ir_store(a, at, t, nidx, tidx, IR_RED_ASSIGN, value);
    } else { /* var w = from[...]; if (w == -inf) { w = 0.0 }; t[...] = w */
      names[nn] = stage_name(op, a, "w_fin", names, nn);
      IrVar *w = pass_new_var(op, a, names[nn++], IR_VAR_LOCAL, at);
      body = ir_let(a, at, w, value);
      IrNode *none = ir_fconst(a, at, red == IR_RED_MAX ? -INFINITY : INFINITY);
      body->next = ir_if(a, at, ir_bin(a, at, IR_OP_EQ, ir_var(a, at, w), none),
                         ir_set(a, at, w, IR_RED_ASSIGN, ir_fconst(a, at, 0.0)));
      body->next->next = ir_store(a, at, t, nidx, tidx, IR_RED_ASSIGN, ir_var(a, at, w));
    }
    *hole = body;
    return top ? top : body;
  }
  if (fill) {
    double id = red == IR_RED_MAX ? -INFINITY : red == IR_RED_MIN ? INFINITY : 0.0;
    body = ir_store(a, at, t, nidx, idx, IR_RED_ASSIGN, ir_fconst(a, at, id));
    *hole = body;
    return top ? top : body;
  }
  if (red == IR_RED_MEAN) {
    IrNode *count = mean_count(a, at, deg);
    body = ir_store(a, at, t, nidx, idx, IR_RED_ASSIGN,
                    ir_bin(a, at, IR_OP_DIV, ir_load(a, at, t, nidx, idx), count));
  } else {
    IrNode *none = ir_fconst(a, at, red == IR_RED_MAX ? -INFINITY : INFINITY);
    IrNode *cond = ir_bin(a, at, IR_OP_EQ, ir_load(a, at, t, nidx, idx), none);
    body = ir_if(a, at, cond,
                 ir_store(a, at, t, nidx, idx, IR_RED_ASSIGN, ir_fconst(a, at, 0.0)));
  }
  /* ir_load/ir_store keep the index nodes: give each its own copies. */
  IrNode *val = body->kind == IR_STORE ? body->acc.value->bin.a : body->ifs.cond->bin.a;
  for (int i = 0; i < nidx; i++) val->acc.idx[i] = ir_clone(a, idx[i]);
  IrNode *st = body->kind == IR_STORE ? body : body->ifs.then;
  for (int i = 0; i < nidx; i++) st->acc.idx[i] = ir_clone(a, idx[i]);
  *hole = body;
  return top ? top : body;
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
