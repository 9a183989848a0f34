/* grad/stmt.c: statements and blocks of the forward operator, recomputed
 * and reversed (grad/derive.h).
 *
 * The forward copy (grad_fwd_stmt) keeps what a mode asks for: the stores
 * of temporaries the gradient reads, the max=/min= contributions counted,
 * a block's locals, the softmax's sum. The reverse (grad_rev_list) first
 * recomputes a block's locals, declares an adjoint per active local, then
 * walks the statements backwards: a store T[i] op= e passes dT[i] (divided
 * by the count for mean= and max=) down e by the chain rule (expr.c).
 */
#include <stdlib.h>

#include "grad/derive.h"

static IrNode *fwd_list(Grad *g, const IrNode *list, const Fwd *f);


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

IrNode *grad_fwd_stmt(Grad *g, const IrNode *s, const Fwd *f) {
  Arena *a = g->a;
  if (f->mode == FWD_LOCALS && (s->kind == IR_LOOP || s->kind == IR_IF) &&
      !sets_outer(g, s, f->decl))
    return NULL;
  switch (s->kind) {
  case IR_LOOP: {
    IrNode *l = grad_clone_header(g, s);
    l->loop.body = fwd_list(g, s->loop.body, f);
    return l->loop.body ? l : NULL;
  }
  case IR_IF: {
    IrNode *then = fwd_list(g, s->ifs.then, f);
    return then ? ir_if(a, s->loc, grad_sx(g, s->ifs.cond), then) : NULL;
  }
  case IR_LET: {
    IrNode *init = grad_sx(g, s->let.init);
    return ir_let(a, s->loc, grad_copy_local(g, s->let.var), init);
  }
  case IR_SET:
    if (f->mode == FWD_LOCALS && !f->decl[s->set.var->id]) return NULL;
    return ir_set(a, s->loc, g->lmap[s->set.var->id], s->set.red, grad_sx(g, s->set.value));
  case IR_STORE: {
    const IrTensor *t = s->acc.tensor;
    if (f->mode == FWD_RECOMPUTE && f->keep[t->id]) {
      IrNode *st = grad_load_of(g, s->loc, grad_prim(g, t), s);
      st->kind = IR_STORE;
      st->type = IR_TY_VOID;
      st->acc.red = s->acc.red;
      st->acc.value = grad_sx(g, s->acc.value);
      return st;
    }
    if (f->mode == FWD_SOFTMAX && s == f->sm->store) {
      IrTensor *gs = f->sm->gsum;
      IrNode *st = grad_load_of(g, s->loc, gs, f->sm->alpha->bin.b);
      st->kind = IR_STORE;
      st->type = IR_TY_VOID;
      st->acc.red = IR_RED_ADD;
      st->acc.value = grad_mul(g, s->loc, grad_load_of(g, s->loc, grad_prim(g, t), s),
                          grad_load_of(g, s->loc, grad_adj(g, t), s));
      return st;
    }
    if (f->mode == FWD_COUNT && g->cnt[t->id] &&
        (s->acc.red == IR_RED_MAX || s->acc.red == IR_RED_MIN)) {
      IrNode *st = grad_load_of(g, s->loc, g->cnt[t->id], s);
      st->kind = IR_STORE;
      st->type = IR_TY_VOID;
      st->acc.red = IR_RED_ADD;
      st->acc.value = ir_fconst(a, s->loc, 1.0);
      IrNode *cond = ir_bin(a, s->loc, IR_OP_EQ, grad_sx(g, s->acc.value),
                            grad_load_of(g, s->loc, grad_prim(g, t), s));
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
    IrNode *c = grad_fwd_stmt(g, s, f);
    if (c) ir_append(&head, c);
  }
  return head;
}

/* ---- reversing a block ---- */

bool grad_has_store_or_set(const IrNode *n, void *p) {
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
    case IR_LOOP_IN_EDGES: c = ir_endpoint(g->a, l, IR_INDEG, grad_sx(g, lp->loop.of)); break;
    case IR_LOOP_OUT_EDGES: c = ir_endpoint(g->a, l, IR_OUTDEG, grad_sx(g, lp->loop.of)); break;
    case IR_LOOP_RANGE: c = grad_mul(g, l, grad_fc(g, l, 1.0), grad_sx(g, lp->loop.extent)); break;
    case IR_LOOP_SRC_V: case IR_LOOP_DST_V:
      c = grad_mul(g, l, grad_fc(g, l, 1.0), ir_graph_size(g->a, l, IR_NV));
      break;
    case IR_LOOP_EDGES: c = grad_mul(g, l, grad_fc(g, l, 1.0), ir_graph_size(g->a, l, IR_NE)); break;
    default:
      grad_refuse(g, store->loc, "mean= inside a %s loop", ir_loopkind_name(lp->loop.kind));
      return grad_fc(g, l, 1.0);
    }
    n = n ? grad_mul(g, l, n, c) : c;
  }
  return n;
}



void grad_rev_stmt(Grad *g, const IrNode *s, Scope *sc, IrNode **out) {
  Arena *a = g->a;
  switch (s->kind) {
  case IR_LOOP: {
    if (sc->nloops == MAX_DEPTH) {
      grad_refuse(g, s->loc, "loops nested more than %d deep", MAX_DEPTH);
      return;
    }
    IrNode *l = grad_clone_header(g, s);
    sc->loops[sc->nloops++] = s;
    l->loop.body = grad_rev_list(g, s->loop.body, sc);
    sc->nloops--;
    if (l->loop.body) ir_append(out, l);
    return;
  }
  case IR_IF: {
    IrNode *cond = grad_sx(g, s->ifs.cond);
    IrNode *then = grad_rev_list(g, s->ifs.then, sc);
    if (then) ir_append(out, ir_if(a, s->loc, cond, then));
    return;
  }
  case IR_LET:
    if (g->lactive[s->let.var->id])
      grad_chain(g, s->let.init, ir_var(a, s->loc, g->dlmap[s->let.var->id]), NULL, out);
    return;
  case IR_SET:
    if (g->lactive[s->set.var->id])
      grad_chain(g, s->set.value, ir_var(a, s->loc, g->dlmap[s->set.var->id]), NULL, out);
    return;
  case IR_STORE: {
    const IrTensor *t = s->acc.tensor;
    if (!g->active[t->id] || g->absorbed[t->id] || !grad_active_expr(g, s->acc.value)) return;
    IrNode *seed = grad_load_of(g, s->loc, grad_adj(g, t), s);
    for (int i = 0; i < g->nsm; i++)
      if (g->sm[i].store == s) {
        grad_softmax_reverse(g, &g->sm[i], seed, out);
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
      seed = ir_bin(a, s->loc, IR_OP_DIV, seed, grad_load_of(g, s->loc, grad_cnt(g, t), s));
      arg.cond = ir_bin(a, s->loc, IR_OP_EQ, grad_sx(g, s->acc.value),
                        grad_load_of(g, s->loc, grad_prim(g, t), s));
      break;
    default: break;
    }
    grad_chain(g, s->acc.value, seed, arg.cond ? &arg : NULL, out);
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

IrNode *grad_rev_list(Grad *g, const IrNode *list, Scope *sc) {
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
      IrVar *dl = grad_new_var(g, v, grad_fresh_name(g, ir_sprintf(g->a, "d%s", v->name), false),
                          IR_VAR_LOCAL);
      g->dlmap[v->id] = dl;
      ir_append(&head, ir_let(g->a, s->loc, dl, grad_fc(g, s->loc, 0.0)));
    }
  int n = 0;
  for (const IrNode *s = list; s; s = s->next) n++;
  const IrNode **stmts = calloc((size_t)n + 1, sizeof *stmts);
  if (!stmts) unreachable("out of memory");
  n = 0;
  for (const IrNode *s = list; s; s = s->next) stmts[n++] = s;
  IrNode *rev = NULL;
  for (int i = n - 1; i >= 0; i--) grad_rev_stmt(g, stmts[i], sc, &rev);
  free(stmts);
  if (!rev) return NULL; /* nothing to pass back: the recomputation is dead */
  ir_append(&head, rev);
  return head;
}
