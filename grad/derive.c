/* grad/derive.c: reverse-mode differentiation of an operator (grad/grad.h).
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
 * An edge softmax (find_softmax) is differentiated by its saved output
 * instead of through its maximum and sum. Several inputs at once
 * (grad_derive_joint) share all of this: one activity, one recomputation,
 * one set of adjoints, an output per input.
 */
#include <stdlib.h>
#include <string.h>

#include "grad/grad.h"

/* How a tensor is written in the forward operator. */
typedef struct Written {
  int stage;   /* index of the stage writing it, -1 if none */
  IrRed red;   /* the reduction of its stores */
  int nstores; /* number of store statements */
} Written;

/* A condition the derivative holds under, as a list (ANDed). */
typedef struct Guard {
  IrNode *cond;
  const struct Guard *next;
} Guard;

typedef enum { CLS_OWNED, CLS_CSC } StageClass;

/* An edge softmax found in the forward (softmax.c-style three stages):
 * M[v..] max= s1 (stage si), D[v..] += exp(s - M[v..]) (stage sj), and in
 * stage sk one store of alpha = exp(s - M[v..]) / D[v..] into an output:
 *   SM_SAVED:  A[e..] = alpha                    (edge_softmax)
 *   SM_AGG:    Y[v.., f..] += alpha * R          (GAT's fused attention)
 * Its backward uses the saved output instead of passing adjoints through M
 * and D: the softmax Jacobian gives, per edge,
 *   SAVED:  ds = A (dA - G),  G[v..] = sum over in-edges of A dA;
 *   AGG:    ds = alpha * sum over f of dY (R - Y)   (sum of alpha R is Y),
 * and M has no gradient at all (a softmax does not change under a shift).
 * M and D are then "absorbed": no adjoints, no count, no reverse stages. */
typedef enum { SM_SAVED, SM_AGG } SoftmaxForm;

typedef struct Softmax {
  const IrTensor *m, *d;
  int sk;
  const IrNode *store; /* the store of stage sk */
  const IrNode *alpha; /* its alpha = exp(s - M) / D */
  const IrNode *r;     /* SM_AGG: the other factor */
  SoftmaxForm form;
  IrTensor *gsum;      /* SM_SAVED: G, made when first needed */
} Softmax;

enum { MAX_SOFTMAX = 8 };

typedef struct Grad {
  Arena *a;
  Diag *d;
  const IrOp *fw;
  IrOp *bw;
  const IrTensor *wrt;   /* the first input differentiated against */
  const bool *is_wrt;    /* by forward tensor id: every one of them */
  const char *wrt_names; /* "X" or "X, W", for messages */
  const int *wrt_order;  /* their tensor ids in the order asked, -1 after */
  bool ok;

  /* by forward tensor id */
  Written *wr;
  bool *active;     /* depends on wrt */
  IrTensor **prim;  /* the forward value in bw (input or recomputed temp) */
  IrTensor **adj;   /* its adjoint in bw */
  IrTensor **cnt;   /* max=/min= contribution counts */
  bool *csc;        /* in the stage being emitted: gathered by source */
  bool *absorbed;   /* M and D of a recognised softmax */
  Softmax sm[MAX_SOFTMAX];
  int nsm;

  /* by forward variable id */
  bool *lactive;    /* active locals */
  IrNode **vmap;    /* loop variable -> its replacement (cloned per use) */
  IrVar **lmap;     /* local -> its recomputed copy */
  IrVar **dlmap;    /* local -> its adjoint */

  /* the source-ordered rewrite of the stage being emitted */
  const IrVar *csc_e; /* the forward in-edge variable */
  IrVar *csc_u;       /* src(csc_e) becomes this source vertex */
  StageClass cls;

  /* names given out in bw; those from `nstage_names` on are the locals of
   * the stage being emitted (locals of different stages may share names) */
  const char **names;
  int nnames, capnames, nstage_names;
  /* bw tensors in creation order */
  IrTensor **bwt;
  int nbwt, capbwt;
} Grad;

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
static const char *fresh_name(Grad *g, const char *base, bool own) {
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
static IrTensor *prim(Grad *g, const IrTensor *t) {
  if (!g->prim[t->id]) {
    take_name(g, t->name);
    g->prim[t->id] =
        new_tensor(g, t, t->name, t->role == IR_ROLE_TEMP ? IR_ROLE_TEMP : IR_ROLE_IN);
  }
  return g->prim[t->id];
}

static IrTensor *adj(Grad *g, const IrTensor *t) {
  if (!g->adj[t->id]) {
    IrRole role = g->is_wrt[t->id]            ? IR_ROLE_OUT
                  : t->role == IR_ROLE_OUT ? IR_ROLE_IN
                                           : IR_ROLE_TEMP;
    const char *n = fresh_name(g, ir_sprintf(g->a, "d%s", t->name), false);
    g->adj[t->id] = new_tensor(g, t, n, role);
  }
  return g->adj[t->id];
}

static IrTensor *cnt(Grad *g, const IrTensor *t) {
  if (!g->cnt[t->id]) {
    const char *n = fresh_name(g, ir_sprintf(g->a, "n%s", t->name), false);
    g->cnt[t->id] = new_tensor(g, t, n, IR_ROLE_TEMP);
    g->cnt[t->id]->dtype = ir_dtype_is_float(t->dtype) ? t->dtype : IR_DT_F32;
  }
  return g->cnt[t->id];
}

static IrVar *new_var(Grad *g, const IrVar *like, const char *name, IrVarKind kind) {
  return ir_op_add_var(g->a, g->bw, name, like->loc, kind);
}

/* ---- refusals ---- */

static void refuse(Grad *g, Loc loc, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void refuse(Grad *g, Loc loc, const char *fmt, ...) {
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
static bool active_expr(const Grad *g, const IrNode *e) {
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
        refuse(g, s->loc, "loop `%s` is scheduled (%s); derive the gradient of "
               "the operator as written, then schedule it",
               s->loop.var->name, ir_loopkind_name(s->loop.kind));
      scan_stores(g, s->loop.body, si, under_if);
      break;
    case IR_IF: scan_stores(g, s->ifs.then, si, true); break;
    case IR_STORE: {
      Written *w = &g->wr[s->acc.tensor->id];
      if (s->acc.how != IR_HOW_AUTO)
        refuse(g, s->loc, "the store to %s is scheduled (%s)", s->acc.tensor->name,
               ir_how_name(s->acc.how));
      if (w->stage >= 0 && w->stage != si)
        refuse(g, s->loc, "%s is written by two stages; the derivation needs "
               "each tensor written by one stage", s->acc.tensor->name);
      if (w->nstores && w->red != s->acc.red)
        refuse(g, s->loc, "%s is written with both `%s` and `%s`", s->acc.tensor->name,
               ir_red_name(w->red), ir_red_name(s->acc.red));
      if (w->nstores && s->acc.red != IR_RED_ADD)
        refuse(g, s->loc, "%s is written by more than one `%s` statement; only "
               "`+=` contributions may come from several statements",
               s->acc.tensor->name, ir_red_name(s->acc.red));
      if (under_if && s->acc.red == IR_RED_MEAN)
        refuse(g, s->loc, "mean= into %s under a condition: its count of "
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
        refuse(g, s->loc, "`%s %s ...` on a local: only `+=` reductions of a "
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
        refuse(g, t->loc, "local %s is reduced after it is read; the reverse "
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
      if (!g->lactive[s->let.var->id] && active_expr(g, s->let.init))
        changed = g->lactive[s->let.var->id] = true;
      break;
    case IR_SET:
      if (!g->lactive[s->set.var->id] && active_expr(g, s->set.value))
        changed = g->lactive[s->set.var->id] = true;
      break;
    case IR_STORE:
      if (!g->active[s->acc.tensor->id] && active_expr(g, s->acc.value))
        changed = g->active[s->acc.tensor->id] = true;
      break;
    default: break;
    }
  }
  return changed;
}

/* ---- cloning forward IR into the gradient ---- */

static IrNode *sx(Grad *g, const IrNode *e);

static IrNode *load_of(Grad *g, Loc loc, IrTensor *t, const IrNode *acc) {
  IrNode *idx[IR_MAX_IDX];
  for (int i = 0; i < acc->acc.nidx; i++) idx[i] = sx(g, acc->acc.idx[i]);
  return ir_load(g->a, loc, t, acc->acc.nidx, idx);
}

/* A copy of forward expression `e` in the gradient: variables replaced by
 * their images, tensors by their forward values. */
static IrNode *sx(Grad *g, const IrNode *e) {
  Arena *a = g->a;
  switch (e->kind) {
  case IR_VAR:
    if (e->var->kind == IR_VAR_LOCAL) {
      IrVar *l = g->lmap[e->var->id];
      if (!l) unreachable("grad: a local read before its copy");
      return ir_var(a, e->loc, l);
    }
    if (!g->vmap[e->var->id]) unreachable("grad: a loop variable without image");
    return ir_clone(a, g->vmap[e->var->id]);
  case IR_LOAD: return load_of(g, e->loc, prim(g, e->acc.tensor), e);
  case IR_SRC:
    if (g->csc_e && e->endpoint.e->kind == IR_VAR && e->endpoint.e->var == g->csc_e)
      return ir_var(a, e->loc, g->csc_u);
    return ir_endpoint(a, e->loc, e->kind, sx(g, e->endpoint.e));
  case IR_DST: case IR_INDEG: case IR_OUTDEG:
    return ir_endpoint(a, e->loc, e->kind, sx(g, e->endpoint.e));
  case IR_SYM:
    return ir_symref(a, e->loc, ir_op_sym(a, g->bw, e->sym->name, e->sym->loc));
  case IR_BIN: return ir_bin(a, e->loc, e->bin.op, sx(g, e->bin.a), sx(g, e->bin.b));
  case IR_UN: return ir_un(a, e->loc, e->un.op, sx(g, e->un.a));
  case IR_CALL: {
    IrNode *args[2] = {NULL, NULL};
    for (int i = 0; i < e->call.nargs; i++) args[i] = sx(g, e->call.args[i]);
    return ir_call(a, e->loc, e->call.fn, e->call.nargs, args);
  }
  case IR_FCONST: case IR_ICONST: case IR_NV: case IR_NE: return ir_clone(a, e);
  default: break;
  }
  unreachable("grad: a statement where an expression was expected");
}

/* A new loop in the gradient for forward loop `s`, its variable mapped. */
static IrNode *clone_header(Grad *g, const IrNode *s) {
  IrVar *v = new_var(g, s->loop.var, s->loop.var->name, s->loop.var->kind);
  IrNode *of = s->loop.of ? sx(g, s->loop.of) : NULL;
  IrNode *ext = s->loop.extent ? sx(g, s->loop.extent) : NULL;
  g->vmap[s->loop.var->id] = ir_var(g->a, s->loc, v);
  return ir_loop(g->a, s->loc, v, s->loop.kind, ext, of, NULL);
}

static IrVar *copy_local(Grad *g, const IrVar *v) {
  IrVar *l = new_var(g, v, fresh_name(g, v->name, true), IR_VAR_LOCAL);
  g->lmap[v->id] = l;
  return l;
}

typedef enum {
  FWD_SOFTMAX,   /* the softmax store becomes G += A dA */
  FWD_RECOMPUTE, /* stores to needed temporaries kept */
  FWD_COUNT,     /* max=/min= stores of active targets become counts */
  FWD_LOCALS,    /* only the locals (a block's recomputation) */
} FwdMode;

typedef struct Fwd {
  FwdMode mode;
  const struct Softmax *sm; /* FWD_SOFTMAX */
  const bool *keep; /* FWD_RECOMPUTE: by forward tensor id */
  const bool *decl; /* FWD_LOCALS: locals declared in the block, by var id */
} Fwd;

static IrNode *fwd_list(Grad *g, const IrNode *list, const Fwd *f);

static IrNode *mul(Grad *g, Loc l, IrNode *x, IrNode *y);

typedef struct SetsOuter {
  const bool *decl; /* locals of the block being recomputed */
  bool *inner;      /* locals declared inside the statement */
  bool hit;
} SetsOuter;

static bool mark_inner(const IrNode *n, void *p) {
  if (n->kind == IR_LET) ((SetsOuter *)p)->inner[n->let.var->id] = true;
  return false;
}

static bool hit_outer_set(const IrNode *n, void *p) {
  SetsOuter *so = p;
  return n->kind == IR_SET && so->decl[n->set.var->id] && !so->inner[n->set.var->id];
}

/* FWD_LOCALS: whether loop or guard `s` reduces into a local of the block
 * declared outside it; if not, its own locals are recomputed by its own
 * reverse, not here. */
static bool sets_outer(Grad *g, const IrNode *s, const bool *decl) {
  SetsOuter so = {decl, IR_NEW_ARRAY(g->a, bool, g->fw->nvars + 1), false};
  IrNode one = *s;
  one.next = NULL;
  ir_any(&one, mark_inner, &so);
  return ir_any(&one, hit_outer_set, &so);
}

static IrNode *fwd_stmt(Grad *g, const IrNode *s, const Fwd *f) {
  Arena *a = g->a;
  if (f->mode == FWD_LOCALS && (s->kind == IR_LOOP || s->kind == IR_IF) &&
      !sets_outer(g, s, f->decl))
    return NULL;
  switch (s->kind) {
  case IR_LOOP: {
    IrNode *l = clone_header(g, s);
    l->loop.body = fwd_list(g, s->loop.body, f);
    return l->loop.body ? l : NULL;
  }
  case IR_IF: {
    IrNode *then = fwd_list(g, s->ifs.then, f);
    return then ? ir_if(a, s->loc, sx(g, s->ifs.cond), then) : NULL;
  }
  case IR_LET: {
    IrNode *init = sx(g, s->let.init);
    return ir_let(a, s->loc, copy_local(g, s->let.var), init);
  }
  case IR_SET:
    if (f->mode == FWD_LOCALS && !f->decl[s->set.var->id]) return NULL;
    return ir_set(a, s->loc, g->lmap[s->set.var->id], s->set.red, sx(g, s->set.value));
  case IR_STORE: {
    const IrTensor *t = s->acc.tensor;
    if (f->mode == FWD_RECOMPUTE && f->keep[t->id]) {
      IrNode *st = load_of(g, s->loc, prim(g, t), s);
      st->kind = IR_STORE;
      st->type = IR_TY_VOID;
      st->acc.red = s->acc.red;
      st->acc.value = sx(g, s->acc.value);
      return st;
    }
    if (f->mode == FWD_SOFTMAX && s == f->sm->store) {
      IrTensor *gs = f->sm->gsum;
      IrNode *st = load_of(g, s->loc, gs, f->sm->alpha->bin.b);
      st->kind = IR_STORE;
      st->type = IR_TY_VOID;
      st->acc.red = IR_RED_ADD;
      st->acc.value = mul(g, s->loc, load_of(g, s->loc, prim(g, t), s),
                          load_of(g, s->loc, adj(g, t), s));
      return st;
    }
    if (f->mode == FWD_COUNT && g->cnt[t->id] &&
        (s->acc.red == IR_RED_MAX || s->acc.red == IR_RED_MIN)) {
      IrNode *st = load_of(g, s->loc, g->cnt[t->id], s);
      st->kind = IR_STORE;
      st->type = IR_TY_VOID;
      st->acc.red = IR_RED_ADD;
      st->acc.value = ir_fconst(a, s->loc, 1.0);
      IrNode *cond = ir_bin(a, s->loc, IR_OP_EQ, sx(g, s->acc.value),
                            load_of(g, s->loc, prim(g, t), s));
      return ir_if(a, s->loc, cond, st);
    }
    return NULL;
  }
  default: break;
  }
  unreachable("grad: not a statement");
}

static IrNode *fwd_list(Grad *g, const IrNode *list, const Fwd *f) {
  IrNode *head = NULL;
  for (const IrNode *s = list; s; s = s->next) {
    IrNode *c = fwd_stmt(g, s, f);
    if (c) ir_append(&head, c);
  }
  return head;
}

/* ---- the chain rule ---- */

static IrNode *fc(Grad *g, Loc l, double v) { return ir_fconst(g->a, l, v); }
static IrNode *mul(Grad *g, Loc l, IrNode *x, IrNode *y) {
  return ir_bin(g->a, l, IR_OP_MUL, x, y);
}
static IrNode *neg(Grad *g, Loc l, IrNode *x) { return ir_un(g->a, l, IR_UN_NEG, x); }

/* Whether the adjoint of forward tensor `t` is emitted in this stage. */
static bool wanted(const Grad *g, const IrTensor *t) {
  if (!g->active[t->id] || g->absorbed[t->id]) return false;
  if (t->role == IR_ROLE_IN && !g->is_wrt[t->id]) return false;
  return (g->cls == CLS_CSC) == g->csc[t->id];
}

/* `dst += coef` for one leaf, under the guards. */
static void emit_leaf(Grad *g, const IrNode *leaf, IrNode *coef, const Guard *gd,
                      IrNode **out) {
  IrNode *st;
  if (leaf->kind == IR_VAR) {
    IrVar *dl = g->dlmap[leaf->var->id];
    if (!dl) unreachable("grad: an active local without adjoint");
    st = ir_set(g->a, leaf->loc, dl, IR_RED_ADD, coef);
  } else {
    if (!wanted(g, leaf->acc.tensor)) return;
    st = load_of(g, leaf->loc, adj(g, leaf->acc.tensor), leaf);
    st->kind = IR_STORE;
    st->type = IR_TY_VOID;
    st->acc.red = IR_RED_ADD;
    st->acc.value = coef;
  }
  IrNode *cond = NULL;
  for (; gd; gd = gd->next)
    cond = cond ? ir_bin(g->a, leaf->loc, IR_OP_AND, ir_clone(g->a, gd->cond), cond)
                : ir_clone(g->a, gd->cond);
  ir_append(out, cond ? ir_if(g->a, leaf->loc, cond, st) : st);
}

/* Passes adjoint `coef` down forward expression `e`. */
static void chain(Grad *g, const IrNode *e, IrNode *coef, const Guard *gd, IrNode **out) {
  if (!g->ok || !active_expr(g, e)) return;
  Arena *a = g->a;
  Loc l = e->loc;
  switch (e->kind) {
  case IR_LOAD: case IR_VAR: emit_leaf(g, e, coef, gd, out); return;
  case IR_UN:
    if (e->un.op == IR_UN_NEG) {
      chain(g, e->un.a, neg(g, l, coef), gd, out);
      return;
    }
    break;
  case IR_BIN: {
    const IrNode *x = e->bin.a, *y = e->bin.b;
    switch (e->bin.op) {
    case IR_OP_ADD:
      chain(g, x, coef, gd, out);
      chain(g, y, ir_clone(a, coef), gd, out);
      return;
    case IR_OP_SUB:
      chain(g, x, coef, gd, out);
      chain(g, y, neg(g, l, ir_clone(a, coef)), gd, out);
      return;
    case IR_OP_MUL:
      if (active_expr(g, x)) chain(g, x, mul(g, l, ir_clone(a, coef), sx(g, y)), gd, out);
      if (active_expr(g, y)) chain(g, y, mul(g, l, ir_clone(a, coef), sx(g, x)), gd, out);
      return;
    case IR_OP_DIV: {
      /* d(x/y) = dx/y - (x/y)/y dy; exp(s)/y passes (exp(s)/y) to s, the
       * value a saved softmax output stands for */
      if (x->kind == IR_CALL && x->call.fn == IR_FN_EXP && active_expr(g, x))
        chain(g, x->call.args[0], mul(g, l, ir_clone(a, coef), sx(g, e)), gd, out);
      else if (active_expr(g, x))
        chain(g, x, ir_bin(a, l, IR_OP_DIV, ir_clone(a, coef), sx(g, y)), gd, out);
      if (active_expr(g, y))
        chain(g, y,
              ir_bin(a, l, IR_OP_DIV, neg(g, l, mul(g, l, ir_clone(a, coef), sx(g, e))),
                     sx(g, y)),
              gd, out);
      return;
    }
    default: break;
    }
    break;
  }
  case IR_CALL: {
    const IrNode *x = e->call.args[0];
    IrNode *xv = sx(g, x);
    switch (e->call.fn) {
    case IR_FN_EXP: chain(g, x, mul(g, l, coef, sx(g, e)), gd, out); return;
    /* a rounding passes the gradient through (straight-through), as
     * PyTorch's .to(dtype) does */
    case IR_FN_TO_F16: case IR_FN_TO_BF16: case IR_FN_TO_F32: case IR_FN_TO_F64:
      chain(g, x, coef, gd, out);
      return;
    case IR_FN_LOG: chain(g, x, ir_bin(a, l, IR_OP_DIV, coef, xv), gd, out); return;
    case IR_FN_SQRT:
      chain(g, x, ir_bin(a, l, IR_OP_DIV, coef, mul(g, l, fc(g, l, 2.0), sx(g, e))), gd,
            out);
      return;
    case IR_FN_SIGMOID: {
      IrNode *s = sx(g, e);
      IrNode *ds = mul(g, l, s, ir_bin(a, l, IR_OP_SUB, fc(g, l, 1.0), sx(g, e)));
      chain(g, x, mul(g, l, coef, ds), gd, out);
      return;
    }
    case IR_FN_TANH: {
      IrNode *t2 = mul(g, l, sx(g, e), sx(g, e));
      chain(g, x, mul(g, l, coef, ir_bin(a, l, IR_OP_SUB, fc(g, l, 1.0), t2)), gd, out);
      return;
    }
    case IR_FN_RELU: {
      Guard pos = {ir_bin(a, l, IR_OP_GT, xv, fc(g, l, 0.0)), gd};
      chain(g, x, coef, &pos, out);
      return;
    }
    case IR_FN_ABS: {
      Guard pos = {ir_bin(a, l, IR_OP_GT, xv, fc(g, l, 0.0)), gd};
      Guard negv = {ir_bin(a, l, IR_OP_LT, sx(g, x), fc(g, l, 0.0)), gd};
      chain(g, x, coef, &pos, out);
      chain(g, x, neg(g, l, ir_clone(a, coef)), &negv, out);
      return;
    }
    case IR_FN_LEAKY_RELU: {
      const IrNode *slope = e->call.args[1];
      Guard pos = {ir_bin(a, l, IR_OP_GT, xv, fc(g, l, 0.0)), gd};
      Guard npos = {ir_bin(a, l, IR_OP_LE, sx(g, x), fc(g, l, 0.0)), gd};
      chain(g, x, coef, &pos, out);
      chain(g, x, mul(g, l, ir_clone(a, coef), sx(g, slope)), &npos, out);
      chain(g, slope, mul(g, l, ir_clone(a, coef), sx(g, x)), &npos, out);
      return;
    }
    case IR_FN_MAX: case IR_FN_MIN: {
      /* ties go to the first argument */
      const IrNode *y = e->call.args[1];
      bool mx = e->call.fn == IR_FN_MAX;
      Guard first = {ir_bin(a, l, mx ? IR_OP_GE : IR_OP_LE, xv, sx(g, y)), gd};
      Guard second = {ir_bin(a, l, mx ? IR_OP_LT : IR_OP_GT, sx(g, x), sx(g, y)), gd};
      chain(g, x, coef, &first, out);
      chain(g, y, ir_clone(a, coef), &second, out);
      return;
    }
    case IR_FN_COUNT: break;
    }
    break;
  }
  default: break;
  }
  refuse(g, l, "`%s` has no derivative in the IR", ir_kind_name(e->kind));
}

/* ---- reversing a block ---- */

static bool has_store_or_set(const IrNode *n, void *p) {
  (void)p;
  return n->kind == IR_STORE || n->kind == IR_SET;
}

/* The number of contributions a mean= store gets per element: the loops
 * around it whose variable its index does not use. */
static IrNode *mean_count(Grad *g, const IrNode *store, const IrNode **loops, int nloops) {
  IrNode *n = NULL;
  for (int i = 0; i < nloops; i++) {
    const IrNode *lp = loops[i];
    bool used = false;
    for (int k = 0; k < store->acc.nidx && !used; k++)
      used = ir_uses_var(store->acc.idx[k], lp->loop.var);
    if (used) continue;
    IrNode *c;
    Loc l = lp->loc;
    switch (lp->loop.kind) {
    case IR_LOOP_IN_EDGES: c = ir_endpoint(g->a, l, IR_INDEG, sx(g, lp->loop.of)); break;
    case IR_LOOP_OUT_EDGES: c = ir_endpoint(g->a, l, IR_OUTDEG, sx(g, lp->loop.of)); break;
    case IR_LOOP_RANGE: c = mul(g, l, fc(g, l, 1.0), sx(g, lp->loop.extent)); break;
    case IR_LOOP_SRC_V: case IR_LOOP_DST_V:
      c = mul(g, l, fc(g, l, 1.0), ir_graph_size(g->a, l, IR_NV));
      break;
    case IR_LOOP_EDGES: c = mul(g, l, fc(g, l, 1.0), ir_graph_size(g->a, l, IR_NE)); break;
    default:
      refuse(g, store->loc, "mean= inside a %s loop", ir_loopkind_name(lp->loop.kind));
      return fc(g, l, 1.0);
    }
    n = n ? mul(g, l, n, c) : c;
  }
  return n;
}

/* ---- edge softmax, by its saved output ---- */

/* The score s of alpha = exp(s - M[..]) / D[..]. */
static const IrNode *alpha_score(const IrNode *alpha) {
  return alpha->bin.a->call.args[0]->bin.a;
}

/* The store of the softmax's stage: the adjoint of its score passed to
 * the score's leaves, and, for SM_AGG, the adjoint of R as usual. */
static void softmax_reverse(Grad *g, Softmax *sm, IrNode *seed, IrNode **out) {
  Arena *a = g->a;
  const IrNode *st = sm->store;
  Loc l = st->loc;
  const IrNode *score = alpha_score(sm->alpha);
  if (sm->form == SM_SAVED) {
    /* ds = A (dA - G[v..]) */
    const IrNode *dload = sm->alpha->bin.b;
    IrNode *gv = load_of(g, l, sm->gsum, dload);
    IrNode *coef = mul(g, l, load_of(g, l, prim(g, st->acc.tensor), st),
                       ir_bin(a, l, IR_OP_SUB, seed, gv));
    chain(g, score, coef, NULL, out);
    return;
  }
  /* ds = alpha dY (R - Y), summed over the loops of R */
  chain(g, sm->r, mul(g, l, ir_clone(a, seed), sx(g, sm->alpha)), NULL, out);
  IrNode *diff = ir_bin(a, l, IR_OP_SUB, sx(g, sm->r),
                        load_of(g, l, prim(g, st->acc.tensor), st));
  chain(g, score, mul(g, l, mul(g, l, sx(g, sm->alpha), seed), diff), NULL, out);
}

/* Structural equality of two forward expressions of different stages, a
 * loop variable of one matching one of the same depth and kind in the
 * other (depth: the number of loops around it). */
typedef struct Depths {
  int *a, *b; /* by var id: the loop depth, -1 for none */
} Depths;

static bool same_expr(const IrNode *x, const IrNode *y, const Depths *dp) {
  if (!x || !y) return x == y;
  if (x->kind != y->kind) return false;
  switch (x->kind) {
  case IR_FCONST: return x->f == y->f;
  case IR_ICONST: return x->i == y->i;
  case IR_VAR:
    if (x->var->kind != y->var->kind || x->var->kind == IR_VAR_LOCAL) return false;
    return dp->a[x->var->id] >= 0 && dp->a[x->var->id] == dp->b[y->var->id];
  case IR_SYM: return !strcmp(x->sym->name, y->sym->name);
  case IR_LOAD:
    if (x->acc.tensor != y->acc.tensor || x->acc.nidx != y->acc.nidx) return false;
    for (int i = 0; i < x->acc.nidx; i++)
      if (!same_expr(x->acc.idx[i], y->acc.idx[i], dp)) return false;
    return true;
  case IR_BIN:
    return x->bin.op == y->bin.op && same_expr(x->bin.a, y->bin.a, dp) &&
           same_expr(x->bin.b, y->bin.b, dp);
  case IR_UN: return x->un.op == y->un.op && same_expr(x->un.a, y->un.a, dp);
  case IR_CALL:
    if (x->call.fn != y->call.fn) return false;
    for (int i = 0; i < x->call.nargs; i++)
      if (!same_expr(x->call.args[i], y->call.args[i], dp)) return false;
    return true;
  case IR_SRC: case IR_DST: case IR_INDEG: case IR_OUTDEG:
    return same_expr(x->endpoint.e, y->endpoint.e, dp);
  case IR_NV: case IR_NE: return true;
  default: return false;
  }
}

/* Loop depths of stage `s`'s variables into d (by var id), and the store
 * of the stage when it has exactly one (and no locals), with the loops
 * around it. */
typedef struct OneStore {
  const IrNode *store;
  const IrNode *loops[IR_MAX_IDX + 4];
  int nloops, nstores;
  bool other; /* a local or a guard */
} OneStore;

static void walk_stage(const IrNode *list, int depth, int *d, OneStore *o,
                       const IrNode **path) {
  for (const IrNode *s = list; s; s = s->next) {
    if (s->kind == IR_LOOP) {
      d[s->loop.var->id] = depth;
      if (depth < IR_MAX_IDX + 4) path[depth] = s;
      walk_stage(s->loop.body, depth + 1, d, o, path);
    } else if (s->kind == IR_STORE) {
      if (o->nstores++ == 0 && depth <= IR_MAX_IDX + 4) {
        o->store = s;
        o->nloops = depth;
        for (int i = 0; i < depth; i++) o->loops[i] = path[i];
      }
    } else {
      o->other = true;
    }
  }
}

/* The one loop around store `o` whose variable its index `idx` (of nidx)
 * does not use, when that is an in-edge loop of the outermost (vertex)
 * loop; NULL otherwise. */
static const IrNode *summed_edges(const OneStore *o, IrNode *const *idx, int nidx) {
  const IrNode *only = NULL;
  for (int i = 0; i < o->nloops; i++) {
    bool used = false;
    for (int k = 0; k < nidx && !used; k++) used = ir_uses_var(idx[k], o->loops[i]->loop.var);
    if (used) continue;
    if (only) return NULL;
    only = o->loops[i];
  }
  if (!only || only->loop.kind != IR_LOOP_IN_EDGES || o->nloops < 2 ||
      o->loops[0]->loop.kind != IR_LOOP_DST_V || only->loop.of->kind != IR_VAR ||
      only->loop.of->var != o->loops[0]->loop.var)
    return NULL;
  return only;
}

static bool is_load_of_t(const IrNode *n, const IrTensor *t) {
  return n && n->kind == IR_LOAD && n->acc.tensor == t;
}

/* exp(s - M[..]) / D[..] */
static bool is_alpha(const IrNode *n, const IrTensor *m, const IrTensor *d) {
  if (!n || n->kind != IR_BIN || n->bin.op != IR_OP_DIV || !is_load_of_t(n->bin.b, d))
    return false;
  const IrNode *ex = n->bin.a;
  if (ex->kind != IR_CALL || ex->call.fn != IR_FN_EXP) return false;
  const IrNode *sub = ex->call.args[0];
  return sub->kind == IR_BIN && sub->bin.op == IR_OP_SUB && is_load_of_t(sub->bin.b, m);
}

static int count_loads(const IrNode *n, const IrTensor *t) {
  int k = 0;
  for (; n; n = n->kind <= IR_IF ? n->next : NULL) {
    switch (n->kind) {
    case IR_LOOP: k += count_loads(n->loop.body, t); break;
    case IR_IF: k += count_loads(n->ifs.cond, t) + count_loads(n->ifs.then, t); break;
    case IR_STORE: case IR_LOAD:
      k += n->kind == IR_LOAD && n->acc.tensor == t;
      for (int i = 0; i < n->acc.nidx; i++) k += count_loads(n->acc.idx[i], t);
      if (n->kind == IR_STORE) k += count_loads(n->acc.value, t);
      break;
    case IR_LET: k += count_loads(n->let.init, t); break;
    case IR_SET: k += count_loads(n->set.value, t); break;
    case IR_BIN: k += count_loads(n->bin.a, t) + count_loads(n->bin.b, t); break;
    case IR_UN: k += count_loads(n->un.a, t); break;
    case IR_CALL:
      for (int i = 0; i < n->call.nargs; i++) k += count_loads(n->call.args[i], t);
      break;
    default: break;
    }
  }
  return k;
}

/* Finds the edge softmaxes of the forward: the conditions of the rule
 * above, each checked, else the stages are differentiated as written. */
static void find_softmax(Grad *g, const IrNode **stages, int nstages) {
  const IrOp *op = g->fw;
  int nv = op->nvars + 1;
  int *da = IR_NEW_ARRAY(g->a, int, nv), *db = IR_NEW_ARRAY(g->a, int, nv);
  for (int di = 0; di < op->ntensors && g->nsm < MAX_SOFTMAX; di++) {
    const IrTensor *d = op->tensors[di];
    Written *wd = &g->wr[di];
    if (d->role != IR_ROLE_TEMP || wd->red != IR_RED_ADD || wd->nstores != 1) continue;
    const IrNode *path[IR_MAX_IDX + 8];
    OneStore oj = {0};
    for (int i = 0; i < nv; i++) da[i] = -1;
    IrNode sj = *stages[wd->stage];
    sj.next = NULL;
    walk_stage(&sj, 0, da, &oj, path);
    const IrNode *vj = oj.store ? oj.store->acc.value : NULL;
    if (oj.nstores != 1 || oj.other || !vj || vj->kind != IR_CALL || vj->call.fn != IR_FN_EXP)
      continue;
    const IrNode *sub = vj->call.args[0];
    if (sub->kind != IR_BIN || sub->bin.op != IR_OP_SUB || sub->bin.b->kind != IR_LOAD)
      continue;
    const IrTensor *m = sub->bin.b->acc.tensor;
    const Written *wm = &g->wr[m->id];
    if (m->role != IR_ROLE_TEMP || wm->red != IR_RED_MAX || wm->nstores != 1 ||
        wm->stage >= wd->stage)
      continue;
    /* D sums over the in-edges of v, M read at D's own index */
    if (!summed_edges(&oj, oj.store->acc.idx, oj.store->acc.nidx)) continue;
    Depths same_j = {da, da};
    bool idx_ok = sub->bin.b->acc.nidx == oj.store->acc.nidx;
    for (int k = 0; idx_ok && k < oj.store->acc.nidx; k++)
      idx_ok = same_expr(sub->bin.b->acc.idx[k], oj.store->acc.idx[k], &same_j);
    if (!idx_ok) continue;
    /* the stage that uses alpha */
    for (int k = wd->stage + 1; k < nstages; k++) {
      OneStore ok = {0};
      for (int i = 0; i < nv; i++) db[i] = -1;
      IrNode sk = *stages[k];
      sk.next = NULL;
      walk_stage(&sk, 0, db, &ok, path);
      if (ok.nstores != 1 || ok.other || !ok.store) continue;
      const IrNode *st = ok.store, *v = st->acc.value, *alpha = NULL, *r = NULL;
      SoftmaxForm form;
      if (st->acc.tensor->role != IR_ROLE_OUT) continue;
      if (st->acc.red == IR_RED_ASSIGN && is_alpha(v, m, d)) {
        alpha = v;
        form = SM_SAVED;
      } else if (st->acc.red == IR_RED_ADD && v->kind == IR_BIN && v->bin.op == IR_OP_MUL) {
        form = SM_AGG;
        if (is_alpha(v->bin.a, m, d)) alpha = v->bin.a, r = v->bin.b;
        else if (is_alpha(v->bin.b, m, d)) alpha = v->bin.b, r = v->bin.a;
      }
      if (!alpha) continue;
      /* alpha's D and M at one index, the score as in D's stage */
      const IrNode *dl = alpha->bin.b, *ml = alpha->bin.a->call.args[0]->bin.b;
      Depths same_k = {db, db}, across = {da, db};
      const IrNode *edges = ok.nloops >= 2 ? ok.loops[1] : NULL;
      bool good = dl->acc.nidx == ml->acc.nidx && edges &&
                  edges->loop.kind == IR_LOOP_IN_EDGES &&
                  ok.loops[0]->loop.kind == IR_LOOP_DST_V &&
                  edges->loop.of->kind == IR_VAR &&
                  edges->loop.of->var == ok.loops[0]->loop.var &&
                  same_expr(sub->bin.a, alpha_score(alpha), &across);
      /* alpha is normalised per vertex (and head): D's index not per edge */
      for (int i = 0; good && i < dl->acc.nidx; i++)
        good = !ir_uses_var(dl->acc.idx[i], edges->loop.var);
      for (int i = 0; good && i < dl->acc.nidx; i++)
        good = same_expr(dl->acc.idx[i], ml->acc.idx[i], &same_k);
      /* M and D read nowhere else; R free of them and of the output */
      good = good && count_loads(op->body, m) == 2 && count_loads(op->body, d) == 1;
      if (good && form == SM_AGG) {
        good = count_loads(r, st->acc.tensor) == 0 && count_loads(r, m) == 0 &&
               count_loads(r, d) == 0 &&
               summed_edges(&ok, st->acc.idx, st->acc.nidx) != NULL &&
               g->wr[st->acc.tensor->id].nstores == 1;
      } else if (good) {
        /* A on the edge of the in-edge loop (every loop inside the vertex
         * loop indexes it) */
        for (int i = 1; good && i < ok.nloops; i++) {
          bool used = false;
          for (int q = 0; q < st->acc.nidx && !used; q++)
            used = ir_uses_var(st->acc.idx[q], ok.loops[i]->loop.var);
          good = used;
        }
      }
      if (!good) break;
      Softmax *sm = &g->sm[g->nsm++];
      *sm = (Softmax){.m = m, .d = d, .sk = k, .store = st, .alpha = alpha, .r = r,
                      .form = form};
      g->absorbed[m->id] = g->absorbed[d->id] = true;
      break;
    }
  }
}

enum { MAX_DEPTH = 64 };

typedef struct Scope {
  const IrNode **loops; /* forward loops around the block */
  int nloops;
} Scope;

static IrNode *rev_list(Grad *g, const IrNode *list, Scope *sc);

static void rev_stmt(Grad *g, const IrNode *s, Scope *sc, IrNode **out) {
  Arena *a = g->a;
  switch (s->kind) {
  case IR_LOOP: {
    if (sc->nloops == MAX_DEPTH) {
      refuse(g, s->loc, "loops nested more than %d deep", MAX_DEPTH);
      return;
    }
    IrNode *l = clone_header(g, s);
    sc->loops[sc->nloops++] = s;
    l->loop.body = rev_list(g, s->loop.body, sc);
    sc->nloops--;
    if (l->loop.body) ir_append(out, l);
    return;
  }
  case IR_IF: {
    IrNode *cond = sx(g, s->ifs.cond);
    IrNode *then = rev_list(g, s->ifs.then, sc);
    if (then) ir_append(out, ir_if(a, s->loc, cond, then));
    return;
  }
  case IR_LET:
    if (g->lactive[s->let.var->id])
      chain(g, s->let.init, ir_var(a, s->loc, g->dlmap[s->let.var->id]), NULL, out);
    return;
  case IR_SET:
    if (g->lactive[s->set.var->id])
      chain(g, s->set.value, ir_var(a, s->loc, g->dlmap[s->set.var->id]), NULL, out);
    return;
  case IR_STORE: {
    const IrTensor *t = s->acc.tensor;
    if (!g->active[t->id] || g->absorbed[t->id] || !active_expr(g, s->acc.value)) return;
    IrNode *seed = load_of(g, s->loc, adj(g, t), s);
    for (int i = 0; i < g->nsm; i++)
      if (g->sm[i].store == s) {
        softmax_reverse(g, &g->sm[i], seed, out);
        return;
      }
    Guard arg = {NULL, NULL};
    switch (s->acc.red) {
    case IR_RED_MEAN: {
      IrNode *n = mean_count(g, s, sc->loops, sc->nloops);
      if (n) seed = ir_bin(a, s->loc, IR_OP_DIV, seed, n);
      break;
    }
    case IR_RED_MAX: case IR_RED_MIN:
      seed = ir_bin(a, s->loc, IR_OP_DIV, seed, load_of(g, s->loc, cnt(g, t), s));
      arg.cond = ir_bin(a, s->loc, IR_OP_EQ, sx(g, s->acc.value),
                        load_of(g, s->loc, prim(g, t), s));
      break;
    default: break;
    }
    chain(g, s->acc.value, seed, arg.cond ? &arg : NULL, out);
    return;
  }
  default: break;
  }
  unreachable("grad: not a statement");
}

static bool mark_decl(const IrNode *n, void *p) {
  if (n->kind == IR_LET) ((bool *)p)[n->let.var->id] = true;
  return false;
}

static IrNode *rev_list(Grad *g, const IrNode *list, Scope *sc) {
  /* the block's locals, recomputed: their `var`s and reductions, not those
   * of locals of enclosing blocks */
  bool *decl = IR_NEW_ARRAY(g->a, bool, g->fw->nvars + 1);
  ir_any(list, mark_decl, decl);
  Fwd locals = {.mode = FWD_LOCALS, .decl = decl};
  IrNode *head = fwd_list(g, list, &locals);
  /* an adjoint per active local declared here */
  for (const IrNode *s = list; s; s = s->next)
    if (s->kind == IR_LET && g->lactive[s->let.var->id]) {
      const IrVar *v = s->let.var;
      IrVar *dl = new_var(g, v, fresh_name(g, ir_sprintf(g->a, "d%s", v->name), false),
                          IR_VAR_LOCAL);
      g->dlmap[v->id] = dl;
      ir_append(&head, ir_let(g->a, s->loc, dl, fc(g, s->loc, 0.0)));
    }
  int n = 0;
  for (const IrNode *s = list; s; s = s->next) n++;
  const IrNode **stmts = calloc((size_t)n + 1, sizeof *stmts);
  if (!stmts) unreachable("out of memory");
  n = 0;
  for (const IrNode *s = list; s; s = s->next) stmts[n++] = s;
  IrNode *rev = NULL;
  for (int i = n - 1; i >= 0; i--) rev_stmt(g, stmts[i], sc, &rev);
  free(stmts);
  if (!rev) return NULL; /* nothing to pass back: the recomputation is dead */
  ir_append(&head, rev);
  return head;
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
  if (r && !ir_any(r, has_store_or_set, NULL)) return NULL;
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
 * tensors every load of which is at src(e) of the in-edge loop. */
static bool mark_csc(Grad *g, const IrNode *stage) {
  memset(g->csc, 0, sizeof(bool) * (size_t)g->fw->ntensors);
  const IrNode *in = csc_edge_loop(stage);
  if (!in) return false;
  bool any = false;
  for (int i = 0; i < g->fw->ntensors; i++) {
    const IrTensor *t = g->fw->tensors[i];
    if (t->domain != IR_DOM_SRC || !g->active[i] || !reads1(stage, t)) continue;
    SrcCtx c = {t, in->loop.var, true};
    any1(stage, hit_non_src_load, &c);
    g->csc[i] = c.all_src;
    any |= c.all_src;
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
    IrVar *u = new_var(g, v, v->name, IR_VAR_SRC_V);
    IrVar *e2 = new_var(g, e, e->name, IR_VAR_EDGE);
    g->csc_e = e;
    g->csc_u = u;
    g->vmap[e->id] = ir_var(g->a, in->loc, e2);
    g->vmap[v->id] = ir_endpoint(g->a, in->loc, IR_DST, ir_var(g->a, in->loc, e2));
    loops[sc.nloops++] = stage;
    loops[sc.nloops++] = in;
    IrNode *body = rev_list(g, in->loop.body, &sc);
    if (!body) return NULL;
    IrNode *inner = ir_loop(g->a, in->loc, e2, IR_LOOP_OUT_EDGES, NULL,
                            ir_var(g->a, in->loc, u), body);
    r = ir_loop(g->a, stage->loc, u, IR_LOOP_SRC_V, NULL, NULL, inner);
  } else {
    r = NULL;
    rev_stmt(g, stage, &sc, &r);
  }
  return r ? dead_code(g, r) : NULL;
}

static IrNode *fwd_stage(Grad *g, const IrNode *stage, const Fwd *f) {
  reset_maps(g);
  IrNode *r = fwd_stmt(g, stage, f);
  return r ? dead_code(g, r) : NULL;
}

static IrNode *softmax_sum_stage(Grad *g, Softmax *sm, const IrNode *stage) {
  if (!sm->gsum) {
    const char *n = fresh_name(g, ir_sprintf(g->a, "G%s", sm->d->name), false);
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
  bw->tensors = IR_NEW_ARRAY(g->a, IrTensor *, g->nbwt + 1);
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
    if (s->kind != IR_LOOP) refuse(&g, s->loc, "a stage that is not a loop");
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
      refuse(&g, rc.at->loc, "%s is read %s; a stage may read only what "
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
  find_softmax(&g, stages, nstages);
  for (int k = 0; k < nwrt; k++) adj(&g, op->tensors[order[k]]);

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
