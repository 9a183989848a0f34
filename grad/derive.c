/* grad/derive.c: reverse-mode differentiation of an operator (grad/grad.h):
 * the entry points, the analysis of the forward operator, the gradient
 * operator's names and tensors, its stages and their assembly. The rest of
 * the derivation is split by what it differentiates: stmt.c (statements and
 * blocks, recomputed and reversed), expr.c (the chain rule of expressions)
 * and softmax.c (the edge softmax idiom); derive.h holds their shared state.
 *
 * The forward operator is a list of stages (top-level loop nests). The
 * gradient operator for input X is built in three parts:
 *
 *   1. recomputation: copies of the forward stages that write the
 *      temporaries the gradient reads (their stores to outputs dropped: the
 *      outputs are inputs of the gradient, saved by the forward);
 *   2. counts: for every active max=/min= target T, a stage counting the
 *      contributions equal to T (the argmax, recomputed against the saved
 *      result rather than stored by the forward: no change to the forward,
 *      no index tensor, and an even split of the adjoint between ties, the
 *      subgradient torch's amax uses; duplicate edges tie exactly);
 *   3. the reverse sweep: forward stages in reverse order; each becomes at
 *      most two gradient stages with its loop structure, one for the
 *      adjoints its own loops own (destination rows, edges, dense tensors by
 *      accumulation) and, for inputs gathered as X[src(e)] under
 *      `for v in dst { for e in in_edges(v) }`, one iterated by source over
 *      out-edges (v becomes dst(e), src(e) becomes u): the scatter becomes
 *      an owned accumulation.
 *
 * Inside a stage, a block is reversed by first recomputing its locals (the
 * `var`s and their reductions), then declaring one adjoint local per active
 * local, then walking its statements backwards: a store T[i] op= e passes
 * the adjoint dT[i] (divided by the count for mean= and max=) down the
 * expression e by the chain rule; a local's `var` and `+=` pass the local's
 * adjoint. Each leaf reached (a load of an active tensor, an active local)
 * gets `dU[i] += coefficient`, under guards where the derivative is
 * piecewise (relu, max, leaky_relu, abs, the max= argmax).
 *
 * Unused recomputation is dropped afterwards (dead locals, empty loops).
 *
 * An edge softmax (grad_find_softmax, softmax.c) is differentiated by its
 * saved output instead of through its maximum and sum. Several inputs at
 * once (grad_derive_joint) share all of this: one activity, one recomputation,
 * one set of adjoints, an output per input.
 */
#include <stdlib.h>
#include <string.h>

#include "grad/derive.h"

/* ---- names and tensors of the gradient operator ---- */

static bool name_taken(const Grad *g, const char *n) {
  for (int i = 0; i < g->nnames; i++)
    if (!strcmp(g->names[i], n)) return true;
  for (int i = 0; i < g->fw->ntensors; i++)
    if (!strcmp(g->fw->tensors[i]->name, n)) return true;
  for (int i = 0; i < g->fw->nsyms; i++)
    if (!strcmp(g->fw->syms[i]->name, n)) return true;
  for (int i = 0; i < g->fw->nvars; i++) /* loop variables keep their names */
    if (!strcmp(g->fw->vars[i]->name, n)) return true;
  return false;
}

static void take_name(Grad *g, const char *n) {
  if (g->nnames == g->capnames) {
    g->capnames = g->capnames ? g->capnames * 2 : 32;
    const char **bigger = IR_NEW_ARRAY(g->a, const char *, g->capnames);
    if (g->nnames) memcpy(bigger, g->names, sizeof(char *) * (size_t)g->nnames);
    g->names = bigger;
  }
  g->names[g->nnames++] = n;
}

/* `base`, or base_1, base_2 ... if taken; `own` allows the forward's own
 * name (a forward tensor or local copied under its name). */
const char *grad_fresh_name(Grad *g, const char *base, bool own) {
  bool taken = false;
  for (int i = 0; i < g->nnames && !taken; i++) taken = !strcmp(g->names[i], base);
  if (!own && !taken) taken = name_taken(g, base);
  const char *n = base;
  for (int k = 1; taken; k++) {
    n = ir_sprintf(g->a, "%s_%d", base, k);
    taken = name_taken(g, n);
  }
  take_name(g, n);
  return n;
}

static IrTensor *new_tensor(Grad *g, const IrTensor *like, const char *name,
                            IrRole role) {
  /* tensor names stay taken: keep them before the stage's locals */
  if (g->nnames > g->nstage_names) {
    int last = g->nnames - 1;
    const char *tmp = g->names[last];
    for (int i = last; i > g->nstage_names; i--) g->names[i] = g->names[i - 1];
    g->names[g->nstage_names] = tmp;
  }
  g->nstage_names++;
  IrTensor *t = IR_NEW(g->a, IrTensor);
  t->name = name;
  t->loc = like->loc;
  t->dtype = like->dtype;
  t->domain = like->domain;
  t->role = role;
  t->ndims = like->ndims;
  for (int i = 0; i < like->ndims; i++) {
    t->dims[i] = like->dims[i];
    if (like->dims[i].sym)
      t->dims[i].sym = ir_op_sym(g->a, g->bw, like->dims[i].sym->name, like->dims[i].sym->loc);
  }
  t->id = -1;
  if (g->nbwt == g->capbwt) {
    g->capbwt = g->capbwt ? g->capbwt * 2 : 16;
    IrTensor **bigger = IR_NEW_ARRAY(g->a, IrTensor *, g->capbwt);
    if (g->nbwt) memcpy(bigger, g->bwt, sizeof(IrTensor *) * (size_t)g->nbwt);
    g->bwt = bigger;
  }
  g->bwt[g->nbwt++] = t;
  return t;
}

/* The forward value of `t` in the gradient: an input (inputs and saved
 * outputs) or a recomputed temporary, under its own name. */
IrTensor *grad_prim(Grad *g, const IrTensor *t) {
  if (!g->prim[t->id]) {
    take_name(g, t->name);
    g->prim[t->id] =
        new_tensor(g, t, t->name, t->role == IR_ROLE_TEMP ? IR_ROLE_TEMP : IR_ROLE_IN);
  }
  return g->prim[t->id];
}

IrTensor *grad_adj(Grad *g, const IrTensor *t) {
  if (!g->adj[t->id]) {
    IrRole role = g->is_wrt[t->id]            ? IR_ROLE_OUT
                  : t->role == IR_ROLE_OUT ? IR_ROLE_IN
                                           : IR_ROLE_TEMP;
    const char *n = grad_fresh_name(g, ir_sprintf(g->a, "d%s", t->name), false);
    g->adj[t->id] = new_tensor(g, t, n, role);
  }
  return g->adj[t->id];
}

IrTensor *grad_cnt(Grad *g, const IrTensor *t) {
  if (!g->cnt[t->id]) {
    const char *n = grad_fresh_name(g, ir_sprintf(g->a, "n%s", t->name), false);
    g->cnt[t->id] = new_tensor(g, t, n, IR_ROLE_TEMP);
    g->cnt[t->id]->dtype = ir_dtype_is_float(t->dtype) ? t->dtype : IR_DT_F32;
  }
  return g->cnt[t->id];
}

IrVar *grad_new_var(Grad *g, const IrVar *like, const char *name, IrVarKind kind) {
  return ir_op_add_var(g->a, g->bw, name, like->loc, kind);
}

/* ---- refusals ---- */

void grad_refuse(Grad *g, Loc loc, const char *fmt, ...) {
  char msg[512];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  if (g->ok)
    ir_error(g->d, loc, "cannot differentiate op %s with respect to %s: %s",
             g->fw->name, g->wrt_names, msg);
  g->ok = false;
}

/* ---- analysis of the forward operator ---- */

/* ir_any on statement `s` alone, not the statements after it. */
static bool any1(const IrNode *s, bool (*hit)(const IrNode *, void *), void *ctx) {
  IrNode one = *s;
  one.next = NULL;
  return ir_any(&one, hit, ctx);
}

static bool is_load_of(const IrNode *n, void *t) {
  return n->kind == IR_LOAD && n->acc.tensor == t;
}

static bool reads1(const IrNode *s, const IrTensor *t) {
  return any1(s, is_load_of, (void *)t);
}

static bool hit_load_active(const IrNode *n, void *ctx) {
  const Grad *g = ctx;
  return (n->kind == IR_LOAD && g->active[n->acc.tensor->id]) ||
         (n->kind == IR_VAR && n->var->kind == IR_VAR_LOCAL && g->lactive[n->var->id]);
}

/* Whether expression `e` depends on wrt. */
bool grad_active_expr(const Grad *g, const IrNode *e) {
  return e && ir_any(e, hit_load_active, (void *)g);
}

/* Records the stores of stage `si` and checks the forms the derivation
 * supports. */
static void scan_stores(Grad *g, const IrNode *list, int si, bool under_if) {
  for (const IrNode *s = list; s; s = s->next) {
    switch (s->kind) {
    case IR_LOOP:
      if (s->loop.kind == IR_LOOP_GROUPS || s->loop.kind == IR_LOOP_GROUP_EDGES ||
          s->loop.kind == IR_LOOP_GROUP_ROWS || s->loop.kind == IR_LOOP_UNOWNED ||
          s->loop.bind != IR_BIND_NONE)
        grad_refuse(g, s->loc, "loop `%s` is scheduled (%s); derive the gradient of "
               "the operator as written, then schedule it",
               s->loop.var->name, ir_loopkind_name(s->loop.kind));
      scan_stores(g, s->loop.body, si, under_if);
      break;
    case IR_IF: scan_stores(g, s->ifs.then, si, true); break;
    case IR_STORE: {
      Written *w = &g->wr[s->acc.tensor->id];
      if (s->acc.how != IR_HOW_AUTO)
        grad_refuse(g, s->loc, "the store to %s is scheduled (%s)", s->acc.tensor->name,
               ir_how_name(s->acc.how));
      if (w->stage >= 0 && w->stage != si)
        grad_refuse(g, s->loc, "%s is written by two stages; the derivation needs "
               "each tensor written by one stage", s->acc.tensor->name);
      if (w->nstores && w->red != s->acc.red)
        grad_refuse(g, s->loc, "%s is written with both `%s` and `%s`", s->acc.tensor->name,
               ir_red_name(w->red), ir_red_name(s->acc.red));
      if (w->nstores && s->acc.red != IR_RED_ADD)
        grad_refuse(g, s->loc, "%s is written by more than one `%s` statement; only "
               "`+=` contributions may come from several statements",
               s->acc.tensor->name, ir_red_name(s->acc.red));
      if (under_if && s->acc.red == IR_RED_MEAN)
        grad_refuse(g, s->loc, "mean= into %s under a condition: its count of "
               "contributions is not known", s->acc.tensor->name);
      w->stage = si;
      w->red = s->acc.red;
      w->nstores++;
      break;
    }
    default: break;
    }
  }
}

typedef struct ReadCtx {
  const Grad *g;
  int stage; /* a tensor written by this stage or a later one is a hit */
  const IrNode *at; /* the load found */
} ReadCtx;

static bool hit_read_late(const IrNode *n, void *p) {
  ReadCtx *c = p;
  if (n->kind != IR_LOAD) return false;
  int w = c->g->wr[n->acc.tensor->id].stage;
  if (w < c->stage) return false;
  c->at = n;
  return true;
}

static bool hit_set_of(const IrNode *n, void *p) {
  return n->kind == IR_SET && n->set.var == p;
}

static bool hit_read_of(const IrNode *n, void *p) {
  if (n->kind == IR_SET && n->set.var == p) return false; /* its own target */
  return n->kind == IR_VAR && n->var == p;
}

/* Whether statement `s` reads local `v` other than as a set's target:
 * ir_any visits the set's value, so a read there is found too. */
static bool reads_local(const IrNode *s, const IrVar *v) {
  return any1(s, hit_read_of, (void *)v);
}

/* Locals are defined, then reduced (`+=`), then read: a read sees the
 * final value, which is what the reverse sweep recomputes. */
static void check_locals(Grad *g, const IrNode *list) {
  for (const IrNode *s = list; s; s = s->next) {
    if (s->kind == IR_LOOP) check_locals(g, s->loop.body);
    else if (s->kind == IR_IF) check_locals(g, s->ifs.then);
    if (s->kind == IR_SET) {
      if (s->set.red != IR_RED_ADD)
        grad_refuse(g, s->loc, "`%s %s ...` on a local: only `+=` reductions of a "
               "local are differentiated; reduce into a tensor instead",
               s->set.var->name, ir_red_name(s->set.red));
      continue;
    }
    if (s->kind != IR_LET) continue;
    const IrVar *v = s->let.var;
    bool read = false;
    for (const IrNode *t = s->next; t; t = t->next) {
      bool sets = any1(t, hit_set_of, (void *)v);
      if (sets && (read || reads_local(t, v))) {
        grad_refuse(g, t->loc, "local %s is reduced after it is read; the reverse "
               "sweep recomputes only its final value", v->name);
        break;
      }
      read |= reads_local(t, v);
    }
  }
}

/* Marks active locals and tensors written by stage `s`; returns whether
 * anything changed. */
static bool propagate(Grad *g, const IrNode *list) {
  bool changed = false;
  for (const IrNode *s = list; s; s = s->next) {
    switch (s->kind) {
    case IR_LOOP: changed |= propagate(g, s->loop.body); break;
    case IR_IF: changed |= propagate(g, s->ifs.then); break;
    case IR_LET:
      if (!g->lactive[s->let.var->id] && grad_active_expr(g, s->let.init))
        changed = g->lactive[s->let.var->id] = true;
      break;
    case IR_SET:
      if (!g->lactive[s->set.var->id] && grad_active_expr(g, s->set.value))
        changed = g->lactive[s->set.var->id] = true;
      break;
    case IR_STORE:
      if (!g->active[s->acc.tensor->id] && grad_active_expr(g, s->acc.value))
        changed = g->active[s->acc.tensor->id] = true;
      break;
    default: break;
    }
  }
  return changed;
}

/* ---- dead code in the gradient ---- */

typedef struct Live {
  bool *live; /* by bw var id */
  bool changed;
} Live;

static bool mark_read(const IrNode *n, void *p) {
  Live *lv = p;
  if (n->kind == IR_VAR && n->var->kind == IR_VAR_LOCAL && !lv->live[n->var->id])
    lv->changed = lv->live[n->var->id] = true;
  return false;
}

/* Marks the locals that stores, guards, loop headers and live locals'
 * definitions read. */
static void mark_live(Live *lv, const IrNode *list) {
  for (const IrNode *s = list; s; s = s->next) {
    switch (s->kind) {
    case IR_LOOP:
      if (s->loop.of) ir_any(s->loop.of, mark_read, lv);
      if (s->loop.extent) ir_any(s->loop.extent, mark_read, lv);
      mark_live(lv, s->loop.body);
      break;
    case IR_IF:
      ir_any(s->ifs.cond, mark_read, lv);
      mark_live(lv, s->ifs.then);
      break;
    case IR_STORE: any1(s, mark_read, lv); break;
    case IR_LET:
      if (lv->live[s->let.var->id]) ir_any(s->let.init, mark_read, lv);
      break;
    case IR_SET:
      if (lv->live[s->set.var->id]) ir_any(s->set.value, mark_read, lv);
      break;
    default: break;
    }
  }
}

static IrNode *sweep(Live *lv, IrNode *list) {
  IrNode *head = NULL, **tail = &head;
  for (IrNode *s = list, *next; s; s = next) {
    next = s->next;
    s->next = NULL;
    bool keep = true;
    switch (s->kind) {
    case IR_LOOP:
      s->loop.body = sweep(lv, s->loop.body);
      keep = s->loop.body != NULL;
      break;
    case IR_IF:
      s->ifs.then = sweep(lv, s->ifs.then);
      keep = s->ifs.then != NULL;
      break;
    case IR_LET: keep = lv->live[s->let.var->id]; break;
    case IR_SET: keep = lv->live[s->set.var->id]; break;
    default: break;
    }
    if (keep) {
      *tail = s;
      tail = &s->next;
    }
  }
  return head;
}

static IrNode *dead_code(Grad *g, IrNode *stage) {
  Live lv = {.live = calloc((size_t)g->bw->nvars + 1, sizeof(bool))};
  if (!lv.live) unreachable("out of memory");
  do {
    lv.changed = false;
    mark_live(&lv, stage);
  } while (lv.changed);
  IrNode *r = sweep(&lv, stage);
  free(lv.live);
  if (r && !ir_any(r, grad_has_store_or_set, NULL)) return NULL;
  return r;
}

/* ---- stages ---- */

/* `for v in dst { for e in in_edges(v) { ... } }` and nothing else at the
 * vertex level: the stage can be iterated by source instead. */
static const IrNode *csc_edge_loop(const IrNode *stage) {
  if (stage->kind != IR_LOOP || stage->loop.kind != IR_LOOP_DST_V) return NULL;
  const IrNode *in = stage->loop.body;
  if (!in || in->next || in->kind != IR_LOOP || in->loop.kind != IR_LOOP_IN_EDGES ||
      !in->loop.of || in->loop.of->kind != IR_VAR || in->loop.of->var != stage->loop.var)
    return NULL;
  return in;
}

typedef struct SrcCtx {
  const IrTensor *t;
  const IrVar *e;
  bool all_src;
} SrcCtx;

static bool hit_non_src_load(const IrNode *n, void *p) {
  SrcCtx *c = p;
  if (n->kind != IR_LOAD || n->acc.tensor != c->t) return false;
  const IrNode *i0 = n->acc.nidx ? n->acc.idx[0] : NULL;
  bool src = i0 && i0->kind == IR_SRC && i0->endpoint.e->kind == IR_VAR &&
             i0->endpoint.e->var == c->e;
  if (!src) c->all_src = false;
  return false;
}

/* Which adjoints of stage `stage` are gathered by source: source-vertex
 * tensors every load of which is at src(e) of the in-edge loop. Where
 * several are and the stage has a pass over the in-edges anyway (an
 * adjoint of a destination or edge tensor), only the widest (the most
 * dimensions: GAT's per-channel Z beside its per-head As) are: a narrower
 * one's adjoint is one scattered add per edge and row element from that
 * pass, whose per-edge work (alpha, the dot product) it shares with the
 * destination's adjoints there, where gathering it would redo that work in
 * the pass by source, which the wide rows' mapping (features on lanes, the
 * edges innermost) cannot share
 * (bench/results/2026-11-29-H200-gat-backward-scatter). */
static bool mark_csc(Grad *g, const IrNode *stage) {
  memset(g->csc, 0, sizeof(bool) * (size_t)g->fw->ntensors);
  const IrNode *in = csc_edge_loop(stage);
  if (!in) return false;
  int widest = -1;
  bool in_pass = false; /* an adjoint that the pass over the in-edges owns */
  for (int i = 0; i < g->fw->ntensors; i++) {
    const IrTensor *t = g->fw->tensors[i];
    if (!g->active[i] || !reads1(stage, t)) continue;
    in_pass |= t->role == IR_ROLE_IN && (t->domain == IR_DOM_DST || t->domain == IR_DOM_EDGE);
    if (t->domain != IR_DOM_SRC) continue;
    SrcCtx c = {t, in->loop.var, true};
    any1(stage, hit_non_src_load, &c);
    g->csc[i] = c.all_src;
    if (c.all_src && t->ndims > widest) widest = t->ndims;
  }
  bool any = false;
  for (int i = 0; i < g->fw->ntensors; i++) {
    if (g->csc[i] && in_pass && g->fw->tensors[i]->ndims < widest) g->csc[i] = false;
    any |= g->csc[i];
  }
  return any;
}

static void reset_maps(Grad *g) {
  size_t nv = (size_t)g->fw->nvars;
  g->nnames = g->nstage_names;
  memset(g->vmap, 0, sizeof(IrNode *) * nv);
  memset(g->lmap, 0, sizeof(IrVar *) * nv);
  memset(g->dlmap, 0, sizeof(IrVar *) * nv);
  g->csc_e = NULL;
  g->csc_u = NULL;
}

/* The reverse of forward stage `stage` for the adjoints of class `cls`. */
static IrNode *rev_stage(Grad *g, const IrNode *stage, StageClass cls) {
  reset_maps(g);
  g->cls = cls;
  const IrNode *loops[MAX_DEPTH];
  Scope sc = {loops, 0};
  IrNode *r;
  if (cls == CLS_CSC) {
    const IrNode *in = csc_edge_loop(stage);
    const IrVar *v = stage->loop.var, *e = in->loop.var;
    /* the source vertex keeps the stage's vertex loop name (v), so that the
     * named schedules, which group and bind `v`, apply to it too */
    IrVar *u = grad_new_var(g, v, v->name, IR_VAR_SRC_V);
    IrVar *e2 = grad_new_var(g, e, e->name, IR_VAR_EDGE);
    g->csc_e = e;
    g->csc_u = u;
    g->vmap[e->id] = ir_var(g->a, in->loc, e2);
    g->vmap[v->id] = ir_endpoint(g->a, in->loc, IR_DST, ir_var(g->a, in->loc, e2));
    loops[sc.nloops++] = stage;
    loops[sc.nloops++] = in;
    IrNode *body = grad_rev_list(g, in->loop.body, &sc);
    if (!body) return NULL;
    IrNode *inner = ir_loop(g->a, in->loc, e2, IR_LOOP_OUT_EDGES, NULL,
                            ir_var(g->a, in->loc, u), body);
    r = ir_loop(g->a, stage->loc, u, IR_LOOP_SRC_V, NULL, NULL, inner);
  } else {
    r = NULL;
    grad_rev_stmt(g, stage, &sc, &r);
  }
  return r ? dead_code(g, r) : NULL;
}

static IrNode *fwd_stage(Grad *g, const IrNode *stage, const Fwd *f) {
  reset_maps(g);
  IrNode *r = grad_fwd_stmt(g, stage, f);
  return r ? dead_code(g, r) : NULL;
}

static IrNode *softmax_sum_stage(Grad *g, Softmax *sm, const IrNode *stage) {
  if (!sm->gsum) {
    const char *n = grad_fresh_name(g, ir_sprintf(g->a, "G%s", sm->d->name), false);
    sm->gsum = new_tensor(g, sm->d, n, IR_ROLE_TEMP);
  }
  Fwd f = {.mode = FWD_SOFTMAX, .sm = sm};
  return fwd_stage(g, stage, &f);
}

/* ---- assembling the operator ---- */

static bool hit_tensor(const IrNode *n, void *p) {
  return (n->kind == IR_LOAD || n->kind == IR_STORE) && n->acc.tensor == p;
}

static bool body_uses(const IrOp *op, const IrTensor *t) {
  return ir_any(op->body, hit_tensor, (void *)t);
}

/* Inputs (forward inputs, saved outputs, adjoints of outputs), the
 * output, then temporaries; only the tensors the body uses. */
static void assemble(Grad *g) {
  IrOp *bw = g->bw;
  const IrOp *fw = g->fw;
  /* a power-of-two capacity, as ir_op_add_tensor's growth assumes (the
   * hoist pass adds temporaries to the assembled op) */
  int cap = 1;
  while (cap < g->nbwt + 1) cap *= 2;
  bw->tensors = IR_NEW_ARRAY(g->a, IrTensor *, cap);
  bw->ntensors = bw->ninputs = bw->noutputs = 0;
  IrTensor *order[3][64 * 3];
  int n[3] = {0, 0, 0};
  for (int pass = 0; pass < 3; pass++)
    for (int i = 0; i < fw->ntensors; i++) {
      IrTensor *t = pass == 0 && fw->tensors[i]->role == IR_ROLE_IN    ? g->prim[i]
                    : pass == 1 && fw->tensors[i]->role == IR_ROLE_OUT ? g->prim[i]
                    : pass == 2 && fw->tensors[i]->role == IR_ROLE_OUT ? g->adj[i]
                                                                       : NULL;
      if (t && body_uses(bw, t)) order[0][n[0]++] = t;
    }
  for (int i = 0; i < fw->ninputs; i++) /* in wrt order: see grad_derive_joint */
    if (g->wrt_order[i] >= 0) order[1][n[1]++] = g->adj[g->wrt_order[i]];
  for (int i = 0; i < g->nbwt; i++) {
    IrTensor *t = g->bwt[i];
    if (t->role == IR_ROLE_TEMP && body_uses(bw, t)) order[2][n[2]++] = t;
  }
  for (int r = 0; r < 3; r++)
    for (int i = 0; i < n[r]; i++) {
      IrTensor *t = order[r][i];
      t->id = bw->ntensors;
      bw->tensors[bw->ntensors++] = t;
      bw->ninputs += r == 0;
      bw->noutputs += r == 1;
    }
}

bool grad_differentiable(const IrTensor *t) {
  return t->role == IR_ROLE_IN && ir_dtype_is_float(t->dtype);
}

IrOp *grad_derive(Arena *a, const IrOp *op, const char *wrt, Diag *d) {
  return grad_derive_named(a, op, wrt, NULL, d);
}

IrOp *grad_derive_named(Arena *a, const IrOp *op, const char *wrt,
                        const char **adjoints, Diag *d) {
  return grad_derive_joint(a, op, &wrt, 1, adjoints, d);
}

/* The input named `name`, or NULL after reporting why it cannot be one. */
static const IrTensor *wrt_input(const IrOp *op, const char *name, Diag *d) {
  const IrTensor *x = ir_op_find_tensor(op, name);
  if (!x || x->role != IR_ROLE_IN) {
    char list[512] = "";
    size_t len = 0;
    for (int i = 0; i < op->ninputs; i++)
      len += (size_t)snprintf(list + len, len < sizeof list ? sizeof list - len : 0,
                              "%s%s", i ? ", " : "", op->tensors[i]->name);
    ir_error(d, op->loc, "op %s has no input named %s%s; its inputs are %s", op->name,
             name, x ? " (it is an output or a temporary)" : "", op->ninputs ? list : "none");
    return NULL;
  }
  if (!grad_differentiable(x)) {
    ir_error(d, x->loc, "input %s of op %s is %s, not floating point: it has no "
             "gradient", x->name, op->name, ir_dtype_name(x->dtype));
    return NULL;
  }
  return x;
}

IrOp *grad_derive_joint(Arena *a, const IrOp *op, const char *const *wrt, int nwrt,
                        const char **adjoints, Diag *d) {
  if (nwrt < 1) {
    ir_error(d, op->loc, "op %s: no input to differentiate against", op->name);
    return NULL;
  }
  bool *is_wrt = IR_NEW_ARRAY(a, bool, op->ntensors + 1);
  int *order = IR_NEW_ARRAY(a, int, op->ninputs + 1);
  const char *names = "", *suffix = "";
  for (int i = 0; i < op->ninputs; i++) order[i] = -1;
  for (int i = 0; i < nwrt; i++) {
    const IrTensor *t = wrt_input(op, wrt[i], d);
    if (!t) return NULL;
    /* a name twice is caught before there can be more than the inputs */
    if (is_wrt[t->id]) {
      ir_error(d, op->loc, "input %s is named twice in the inputs to differentiate "
               "against", t->name);
      return NULL;
    }
    is_wrt[t->id] = true;
    order[i] = t->id;
    names = ir_sprintf(a, "%s%s%s", names, i ? ", " : "", t->name);
    suffix = ir_sprintf(a, "%s_%s", suffix, t->name);
  }
  const IrTensor *x = op->tensors[order[0]];
  if (op->ntensors > 64 * 3 || op->ntensors == 0) {
    ir_error(d, op->loc, "op %s has too many tensors to differentiate", op->name);
    return NULL;
  }
  size_t nt = (size_t)op->ntensors, nv = (size_t)op->nvars + 1;
  Grad g = {.a = a, .d = d, .fw = op, .wrt = x, .is_wrt = is_wrt, .wrt_names = names,
            .wrt_order = order, .ok = true};
  g.bw = ir_op_new(a, ir_sprintf(a, "%s_grad%s", op->name, suffix), op->loc);
  g.bw->acc = op->acc; /* the gradient computes in the forward op's type */
  g.wr = IR_NEW_ARRAY(a, Written, nt);
  g.active = IR_NEW_ARRAY(a, bool, nt);
  g.prim = IR_NEW_ARRAY(a, IrTensor *, nt);
  g.adj = IR_NEW_ARRAY(a, IrTensor *, nt);
  g.cnt = IR_NEW_ARRAY(a, IrTensor *, nt);
  g.csc = IR_NEW_ARRAY(a, bool, nt);
  g.absorbed = IR_NEW_ARRAY(a, bool, nt);
  g.lactive = IR_NEW_ARRAY(a, bool, nv);
  g.vmap = IR_NEW_ARRAY(a, IrNode *, nv);
  g.lmap = IR_NEW_ARRAY(a, IrVar *, nv);
  g.dlmap = IR_NEW_ARRAY(a, IrVar *, nv);
  for (size_t i = 0; i < nt; i++) g.wr[i].stage = -1;

  /* the stages, and what each writes */
  int nstages = 0;
  for (const IrNode *s = op->body; s; s = s->next) nstages++;
  const IrNode **stages = IR_NEW_ARRAY(a, const IrNode *, nstages + 1);
  nstages = 0;
  for (const IrNode *s = op->body; s; s = s->next) {
    if (s->kind != IR_LOOP) grad_refuse(&g, s->loc, "a stage that is not a loop");
    stages[nstages] = s;
    IrNode one = *s; /* the stage alone, not those after it */
    one.next = NULL;
    scan_stores(&g, &one, nstages, false);
    check_locals(&g, &one);
    nstages++;
  }
  for (int i = 0; i < nstages && g.ok; i++) {
    ReadCtx rc = {&g, i, NULL};
    /* a stage reads what earlier stages wrote, never its own or later
     * results: a stage's reverse needs its inputs final */
    if (any1(stages[i], hit_read_late, &rc))
      grad_refuse(&g, rc.at->loc, "%s is read %s; a stage may read only what "
             "earlier stages wrote", rc.at->acc.tensor->name,
             g.wr[rc.at->acc.tensor->id].stage == i ? "by the stage that writes it"
                                                    : "before the stage that writes it");
  }
  if (!g.ok) return NULL;

  /* what depends on each input asked for (each must reach an output), then
   * on all of them */
  for (int w = 0; w <= nwrt; w++) {
    memset(g.active, 0, sizeof(bool) * nt);
    memset(g.lactive, 0, sizeof(bool) * nv);
    for (int k = 0; k < nwrt; k++)
      if (w == nwrt || k == w) g.active[order[k]] = true;
    while (true) {
      bool changed = false;
      for (int i = 0; i < nstages; i++) changed |= propagate(&g, stages[i]);
      if (!changed) break;
    }
    bool reaches = false;
    for (int i = 0; i < op->ntensors; i++)
      reaches |= op->tensors[i]->role == IR_ROLE_OUT && g.active[i];
    if (w < nwrt && !reaches) {
      const IrTensor *t = op->tensors[order[w]];
      ir_error(d, t->loc, "no output of op %s depends on input %s: its gradient is "
               "zero", op->name, t->name);
      return NULL;
    }
  }
  grad_find_softmax(&g, stages, nstages);
  for (int k = 0; k < nwrt; k++) grad_adj(&g, op->tensors[order[k]]);

  /* the reverse sweep; counts for the max=/min= targets it meets */
  IrNode *rev = NULL;
  for (int i = nstages - 1; i >= 0 && g.ok; i--) {
    for (int k = 0; k < g.nsm; k++) {
      Softmax *sm = &g.sm[k];
      if (sm->sk != i || sm->form != SM_SAVED || !g.active[sm->store->acc.tensor->id])
        continue;
      /* G[v..] = sum over the in-edges of A dA, before the edges need it */
      IrNode *gs = softmax_sum_stage(&g, sm, stages[i]);
      if (gs) ir_append(&rev, gs);
    }
    bool by_source = mark_csc(&g, stages[i]);
    IrNode *owned = rev_stage(&g, stages[i], CLS_OWNED);
    if (owned) ir_append(&rev, owned);
    if (by_source) {
      IrNode *by_src = rev_stage(&g, stages[i], CLS_CSC);
      if (by_src) ir_append(&rev, by_src);
    }
  }
  if (!g.ok) return NULL;
  IrNode *counts = NULL;
  Fwd cf = {.mode = FWD_COUNT};
  for (int i = 0; i < nstages; i++) {
    bool has = false;
    for (int t = 0; t < op->ntensors; t++) has |= g.cnt[t] && g.wr[t].stage == i;
    if (!has) continue;
    IrNode *c = fwd_stage(&g, stages[i], &cf);
    if (c) ir_append(&counts, c);
  }

  /* recomputation of the temporaries read so far, and of those they read */
  bool *keep = IR_NEW_ARRAY(a, bool, nt);
  for (int i = 0; i < op->ntensors; i++)
    keep[i] = op->tensors[i]->role == IR_ROLE_TEMP && g.prim[i];
  for (int i = nstages - 1; i >= 0; i--) {
    bool writes = false;
    for (int t = 0; t < op->ntensors; t++) writes |= keep[t] && g.wr[t].stage == i;
    if (!writes) continue;
    for (int t = 0; t < op->ntensors; t++)
      if (op->tensors[t]->role == IR_ROLE_TEMP && reads1(stages[i], op->tensors[t]))
        keep[t] = true;
  }
  IrNode *body = NULL;
  Fwd rf = {.mode = FWD_RECOMPUTE, .keep = keep};
  for (int i = 0; i < nstages; i++) {
    bool writes = false;
    for (int t = 0; t < op->ntensors; t++) writes |= keep[t] && g.wr[t].stage == i;
    if (!writes) continue;
    IrNode *c = fwd_stage(&g, stages[i], &rf);
    if (c) ir_append(&body, c);
  }
  if (counts) ir_append(&body, counts);
  if (rev) ir_append(&body, rev);
  g.bw->body = body;
  if (!g.ok) return NULL;
  assemble(&g);
  grad_fuse_stages(g.bw, a);
  grad_hoist_features(g.bw, a);
  if (!ir_verify_op(g.bw, d, "grad")) return NULL;
  for (int i = 0; adjoints && i < op->ntensors; i++) {
    const IrTensor *t = g.adj[i];
    adjoints[i] = t && t->id >= 0 && t->role != IR_ROLE_TEMP ? t->name : NULL;
  }
  return g.bw;
}
