/* passes/panel.c: panel(g, P), destinations summed P at a time, each
 * shared source row read once.
 *
 * Contract of the primitive: requires a groups loop g made by group(e, G)
 * (neighbour groups, group.c), not interleaved, not @shared; gives g's
 * rows from the panel table of (G, P) instead (graph/panels.c): a row is a
 * run of at most G pairs of one panel of P consecutive destinations, a
 * pair a source and the panel's in-edges from it (one per destination at
 * most). `for e in group_edges(g)` then visits the row's edges pair by
 * pair, and dst(g) is the panel's first destination. Nothing else changes
 * until lowering.
 *
 * Contract of the lowering (first in the pipeline, before accumulate):
 * requires every @panel groups loop to hold one group_edges loop whose
 * body is sums into its edges' destination rows, `Y[dst(e), ...] += x`
 * (Y an f32/f64 destination tensor written by no other stage, x reading
 * the edge, its source and what the loops around it bind); gives
 *
 *   var Y_0 = 0.0 ... var Y_(P-1) = 0.0
 *   for q in pairs(g) {
 *     var X_q = X[src(q), ...]                  (loads the slots share)
 *     for e_0 in pair_edge(q, 0) { Y_0 += x[e := e_0, dst(e) := dst(g)] }
 *     ...
 *   }
 *   if (dst(g) + s < num_vertices()) {           for each slot s
 *     if (owns(g)) { plain Y[dst(g) + s, ...] = Y_s }
 *     if (!owns(g)) { atomic Y[dst(g) + s, ...] += Y_s }
 *   }
 *
 * and marks Y owned by the panel table (IrTensor.owner_panel), so that the
 * fill pass gives the destinations of panels split over several rows their
 * zero in a first stage (an unowned(G) @panel(P) loop), the rest being
 * stored whole by their panel's one row. The loads that do not depend on
 * the slot (the source row: src(e) is src(q) for every slot) are read once
 * per pair, above the slots: that is the point. Sums add a destination's
 * terms in pair order (source order), not in CSR order, so results differ
 * from the default schedule's by rounding.
 *
 * Why: on a web crawl neighbouring pages link to the same pages; cnr-2000
 * has 0.65 distinct (panel, source) pairs per edge at P = 4, and a CUDA
 * probe of this scheme ran its aggregation at 46.5-48.6% of the
 * fewest-bytes bound where gop's neighbour groups reached 36.9-40.1%
 * (bench/results/2026-11-30-H200-panel-probe). Graphs whose neighbours
 * share few sources (ratio near 1) gain nothing: the chooser reads the
 * ratio (graph_panel_ratio).
 */
#include "passes/passes.h"

int pass_panel(IrOp *op, const char *loop, int64_t p, Loc loc, Arena *a, Diag *d) {
  PassSite site;
  if (!pass_find_loop(op, "panel", loop, &site, loc, a, d)) return -1;
  IrNode *l = site.node;
  if (l->loop.kind != IR_LOOP_GROUPS) {
    ir_error(d, loc, "panel: loop '%s' is a %s loop; panels are cut from a "
             "neighbour-groups loop (group(e, G) on a stage's in-edge loop first)",
             loop, ir_loopkind_name(l->loop.kind));
    return -1;
  }
  if (p < IR_PANEL_MIN || p > IR_PANEL_MAX) {
    ir_error(d, loc, "panel: the destinations per panel of loop '%s' must be an "
             "integer from %d to %d, not %lld", loop, IR_PANEL_MIN, IR_PANEL_MAX,
             (long long)p);
    return -1;
  }
  if (l->loop.panel) {
    ir_error(d, loc, "panel: loop '%s' already has panels of %d", loop, l->loop.panel);
    return -1;
  }
  if (l->loop.ilv || l->loop.shared) {
    ir_error(d, loc, "panel: groups loop '%s' is %s; a panel's rows come in "
             "destination order and sum in registers", loop,
             l->loop.ilv ? "interleaved" : "@shared (promote(g, shared))");
    return -1;
  }
  l->loop.panel = (int)p;
  return 0;
}

/* ---- lowering ---- */

typedef struct Lower {
  IrOp *op;
  Arena *a;
  Diag *d;
  IrNode *g;     /* the @panel groups loop */
  IrNode *edges; /* its group_edges loop */
  IrNode **slot; /* where `edges` hangs */
} Lower;

static bool find_edges(Lower *w, IrNode **slot) {
  for (IrNode **p = slot; *p; p = &(*p)->next) {
    IrNode *s = *p;
    if (s->kind == IR_LOOP && s->loop.kind == IR_LOOP_GROUP_EDGES) {
      if (w->edges) return false;
      w->edges = s;
      w->slot = p;
      continue;
    }
    IrNode **in = s->kind == IR_LOOP ? &s->loop.body : s->kind == IR_IF ? &s->ifs.then : NULL;
    if (!in) continue;
    if (!find_edges(w, in)) return false;
  }
  return true;
}

static bool is_var(const IrNode *e, const IrVar *v) {
  return e && e->kind == IR_VAR && e->var == v;
}

static bool reads_tensor(const IrNode *n, void *ctx) {
  return n->kind == IR_LOAD && n->acc.tensor == ctx;
}

/* Whether store `st` in the edge loop is one this lowering takes, else a
 * reason. */
static const char *bad_store(const Lower *w, const IrNode *st) {
  const IrVar *e = w->edges->loop.var;
  const IrTensor *t = st->acc.tensor;
  if (st->kind != IR_STORE) return "a statement other than a store";
  if (st->acc.red != IR_RED_ADD) return "a reduction other than +=";
  if (t->domain != IR_DOM_DST || st->acc.nidx < 1 || st->acc.idx[0]->kind != IR_DST ||
      !is_var(st->acc.idx[0]->endpoint.e, e))
    return "a store that is not into its edge's destination row (Y[dst(e), ...])";
  for (int i = 1; i < st->acc.nidx; i++)
    if (ir_uses_var(st->acc.idx[i], e)) return "a store whose feature index uses the edge";
  if (ir_dtype_is_16bit(t->dtype)) return "a sum into a 16-bit tensor";
  if (pass_store_stages(w->op, t) != 1) return "a tensor another stage writes too";
  if (ir_any(st->acc.value, reads_tensor, (void *)t)) return "a sum that reads its own target";
  for (const IrNode *o = w->edges->loop.body; o != st; o = o->next)
    if (o->acc.tensor == t) return "two sums into one tensor";
  return NULL;
}

/* src(e) -> src(q); dst(e) -> dst(g) + slot; e -> e_s. */
typedef struct Rewrite {
  Arena *a;
  const IrVar *e;
  const IrNode *src_q, *dst_s;
} Rewrite;

static void rewrite(IrNode **slot, void *ctx) {
  Rewrite *r = ctx;
  IrNode *x = *slot;
  if ((x->kind == IR_SRC || x->kind == IR_DST) && is_var(x->endpoint.e, r->e)) {
    *slot = ir_clone(r->a, x->kind == IR_SRC ? r->src_q : r->dst_s);
    return;
  }
  ir_each_operand(x, rewrite, ctx);
}

/* The loads of `x` from inputs that do not read the edge but the pair's
 * source: the same for every slot of a pair. */
typedef struct Hoist {
  Lower *w;
  const IrVar *e;
  const IrVar *q;
  IrNode *lets;
  IrNode *loads[32];
  IrVar *vars[32];
  int n;
} Hoist;

static void hoist(IrNode **slot, void *ctx) {
  Hoist *h = ctx;
  IrNode *x = *slot;
  if (x->kind == IR_LOAD && !ir_uses_var(x, h->e) && ir_uses_var(x, h->q) &&
      x->acc.tensor->role == IR_ROLE_IN) {
    for (int i = 0; i < h->n; i++)
      if (pass_expr_equal(h->loads[i], x)) {
        *slot = ir_var(h->w->a, x->loc, h->vars[i]);
        return;
      }
    if (h->n < 32) {
      IrVar *v = pass_new_var(h->w->op, h->w->a,
                              pass_fresh_name(h->w->op, h->w->a,
                                              ir_sprintf(h->w->a, "%s_q", x->acc.tensor->name)),
                              IR_VAR_LOCAL, x->loc);
      v->dtype = h->w->op->acc;
      ir_append(&h->lets, ir_let(h->w->a, x->loc, v, ir_clone(h->w->a, x)));
      h->loads[h->n] = x;
      h->vars[h->n++] = v;
      *slot = ir_var(h->w->a, x->loc, v);
      return;
    }
  }
  ir_each_operand(x, hoist, ctx);
}

static int lower_one(Lower *w) {
  IrOp *op = w->op;
  Arena *a = w->a;
  IrNode *g = w->g;
  const char *gn = g->loop.var->name;
  if (!find_edges(w, &g->loop.body) || !w->edges) {
    ir_error(w->d, g->loc, "panel: groups loop '%s' holds %s group_edges loop; a "
             "panel's rows are summed by one", gn, w->edges ? "more than one" : "no");
    return -1;
  }
  IrNode *l = w->edges;
  const char *en = l->loop.var->name;
  if (l->loop.bind != IR_BIND_NONE || l->loop.prefetch || l->loop.vec) {
    ir_error(w->d, l->loc, "panel: edge loop '%s' of panel loop '%s' is %s; a panel's "
             "pairs are walked by every lane of its warp or team, in order",
             en, gn, l->loop.bind != IR_BIND_NONE ? "bound" : l->loop.prefetch ? "prefetched" : "vectorised");
    return -1;
  }
  if (op->deterministic) {
    ir_error(w->d, l->loc, "panel: deterministic() needs a fixed order of additions "
             "per destination; a panel split over rows adds them with atomics");
    return -1;
  }
  int nst = 0;
  for (IrNode *s = l->loop.body; s; s = s->next, nst++) {
    const char *why = bad_store(w, s);
    if (why) {
      ir_error(w->d, s->loc, "panel: the edge loop '%s' of panel loop '%s' holds %s; "
               "panels take sums into the edge's destination row, "
               "`Y[dst(%s), ...] += x`, written by this stage alone, in f32 or f64",
               en, gn, why, en);
      return -1;
    }
  }
  if (nst == 0 || nst > 4) {
    ir_error(w->d, l->loc, "panel: the edge loop '%s' of panel loop '%s' holds %d "
             "sums; panels take 1 to 4", en, gn, nst);
    return -1;
  }
  int P = g->loop.panel;
  Loc at = l->loc;
  IrVar *qv = pass_new_var(op, a, pass_fresh_name(op, a, ir_sprintf(a, "%s_q", en)),
                           IR_VAR_PAIR, at);
  IrNode *src_q = ir_endpoint(a, at, IR_SRC, ir_var(a, at, qv));
  Hoist h = {.w = w, .e = l->loop.var, .q = qv};

  IrNode *before = NULL; /* the accumulators */
  IrNode *slots = NULL;  /* the pair's slots */
  IrNode *after = NULL;  /* the stores */
  IrVar *acc[4][IR_PANEL_MAX];
  int k = 0;
  for (IrNode *st = l->loop.body; st; st = st->next, k++) {
    IrTensor *t = st->acc.tensor;
    for (int s = 0; s < P; s++) {
      acc[k][s] = pass_new_var(op, a, pass_fresh_name(op, a, ir_sprintf(a, "%s_%d", t->name, s)),
                               IR_VAR_LOCAL, at);
      acc[k][s]->dtype = op->acc;
      ir_append(&before, ir_let(a, at, acc[k][s], ir_fconst(a, at, 0.0)));
    }
  }
  for (int s = 0; s < P; s++) {
    IrVar *es = pass_new_var(op, a, pass_fresh_name(op, a, ir_sprintf(a, "%s_%d", en, s)),
                             IR_VAR_EDGE, at);
    IrNode *dst_s = pass_add(a, at, ir_endpoint(a, at, IR_DST, ir_var(a, at, g->loop.var)),
                             ir_iconst(a, at, s));
    Rewrite r = {a, l->loop.var, src_q, dst_s};
    IrNode *sets = NULL;
    k = 0;
    for (IrNode *st = l->loop.body; st; st = st->next, k++) {
      IrNode *v = ir_clone(a, st->acc.value);
      rewrite(&v, &r);
      hoist(&v, &h);
      ir_append(&sets, ir_set(a, st->loc, acc[k][s], IR_RED_ADD, v));
    }
    pass_subst_stmts(a, sets, l->loop.var, ir_var(a, at, es));
    IrNode *pe = ir_loop(a, at, es, IR_LOOP_PAIR_EDGE, NULL, ir_var(a, at, qv), sets);
    pe->loop.slot = s;
    ir_append(&slots, pe);
    /* the stores of slot s */
    IrNode *own = ir_endpoint(a, at, IR_OWNS, ir_var(a, at, g->loop.var));
    own->type = IR_TY_BOOL;
    IrNode *stores = NULL;
    k = 0;
    for (IrNode *st = l->loop.body; st; st = st->next, k++) {
      IrNode *idx[IR_MAX_IDX];
      idx[0] = ir_clone(a, dst_s);
      for (int i = 1; i < st->acc.nidx; i++) idx[i] = ir_clone(a, st->acc.idx[i]);
      IrNode *only = ir_store(a, st->loc, st->acc.tensor, st->acc.nidx, idx,
                              IR_RED_ASSIGN, ir_var(a, at, acc[k][s]));
      only->acc.how = IR_HOW_PLAIN;
      IrNode *many = ir_store(a, st->loc, st->acc.tensor, st->acc.nidx, idx,
                              IR_RED_ADD, ir_var(a, at, acc[k][s]));
      many->acc.how = IR_HOW_ATOMIC;
      IrNode *one = ir_if(a, at, ir_clone(a, own), only);
      one->next = ir_if(a, at, ir_un(a, at, IR_UN_NOT, ir_clone(a, own)), many);
      ir_append(&stores, one);
    }
    ir_append(&after, ir_if(a, at, ir_bin(a, at, IR_OP_LT, ir_clone(a, dst_s),
                                          ir_graph_size(a, at, IR_NV)), stores));
  }
  /* the hoisted loads first in the pair's body, then its slots */
  ir_append(&h.lets, slots);
  IrNode *pairs = ir_loop(a, at, qv, IR_LOOP_PAIRS, NULL, ir_var(a, at, g->loop.var), h.lets);
  pairs->loop.unroll = l->loop.unroll;
  /* the accumulators, the pairs, the stores, then what followed the loop */
  ir_append(&after, l->next);
  pairs->next = after;
  ir_append(&before, pairs);
  *w->slot = before;
  for (IrNode *st = l->loop.body; st; st = st->next) {
    IrTensor *t = pass_own_tensor(op, op->tensors[st->acc.tensor->id], a);
    t->owner_group = g->loop.group;
    t->owner_panel = P;
  }
  return 0;
}

int pass_panel_lower(IrOp *op, Arena *a, Diag *d) {
  for (IrNode *s = op->body; s; s = s->next) {
    IrNode *g = s;
    /* a groups loop is a stage, or inside feature tiles (spmm_tiles) */
    while (g->kind == IR_LOOP && g->loop.kind == IR_LOOP_RANGE && g->loop.body &&
           !g->loop.body->next)
      g = g->loop.body;
    if (g->kind != IR_LOOP || g->loop.kind != IR_LOOP_GROUPS || !g->loop.panel) continue;
    Lower w = {.op = op, .a = a, .d = d, .g = g};
    if (lower_one(&w) != 0) return -1;
  }
  return 0;
}
