/* grad/softmax.c: the edge softmax idiom, differentiated by its saved
 * output (grad/derive.h).
 *
 * grad_find_softmax recognises, among the forward stages, a per-destination
 * maximum M, a sum of exponentials D and one store of
 * alpha = exp(s - M) / D, either saved (edge_softmax) or multiplied into an
 * aggregation (GAT's fused attention). grad_softmax_reverse then passes the
 * score's adjoint from the softmax Jacobian instead of through M and D, which
 * get no adjoints at all (the Softmax struct in derive.h has the formulas).
 */
#include <string.h>

#include "grad/derive.h"

/* ---- edge softmax, by its saved output ---- */

/* The score s of alpha = exp(s - M[..]) / D[..]. */
static const IrNode *alpha_score(const IrNode *alpha) {
  return alpha->bin.a->call.args[0]->bin.a;
}

/* The store of the softmax's stage: the adjoint of its score passed to
 * the score's leaves, and, for SM_AGG, the adjoint of R as usual. */
void grad_softmax_reverse(Grad *g, Softmax *sm, IrNode *seed, IrNode **out) {
  Arena *a = g->a;
  const IrNode *st = sm->store;
  Loc l = st->loc;
  const IrNode *score = alpha_score(sm->alpha);
  if (sm->form == SM_SAVED) {
    /* ds = A (dA - G[v..]) */
    const IrNode *dload = sm->alpha->bin.b;
    IrNode *gv = grad_load_of(g, l, sm->gsum, dload);
    IrNode *coef = grad_mul(g, l, grad_load_of(g, l, grad_prim(g, st->acc.tensor), st),
                       ir_bin(a, l, IR_OP_SUB, seed, gv));
    grad_chain(g, score, coef, NULL, out);
    return;
  }
  /* ds = alpha dY (R - Y), summed over the loops of R */
  grad_chain(g, sm->r, grad_mul(g, l, ir_clone(a, seed), grad_sx(g, sm->alpha)), NULL, out);
  IrNode *diff = ir_bin(a, l, IR_OP_SUB, grad_sx(g, sm->r),
                        grad_load_of(g, l, grad_prim(g, st->acc.tensor), st));
  grad_chain(g, score, grad_mul(g, l, grad_mul(g, l, grad_sx(g, sm->alpha), seed), diff), NULL, out);
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
void grad_find_softmax(Grad *g, const IrNode **stages, int nstages) {
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
