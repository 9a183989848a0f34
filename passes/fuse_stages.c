/* passes/fuse_stages.c: fuse_stages(k, ...), consecutive stages in one
 * kernel.
 *
 * Contract: the stages named (consecutive, at least two) have outer loops
 * alike — the same kind, extent, vertex, binding, team, block size and
 * occupancy — so that one iteration of the fused loop is one iteration of
 * each, on the same worker, in stage order. Where every stage's whole
 * body is then a range loop mapped alike (a loop over heads, `for h in
 * 0..H @lane`), that loop is fused too, and so on inward; edge loops never
 * are (a stage's edges all come before the next stage's). What flows from
 * one fused stage to a later one must stay inside an iteration of the
 * fused loops: a tensor that one fused stage writes and another reads or
 * writes must be a temporary of one value per vertex (and head), reduced
 * (+=, max=, min=) and read only at the fused loops' variables, T[v] or
 * T[v, h], and used by no other stage. Each such temporary
 * becomes a local of the fused body (a register), started at its
 * reduction's identity; a max or min that met no edge is 0, as lowering
 * finalises a temporary (passes/lower_mean.c), so the fused body says so
 * after the stage that reduces it. The temporary leaves the operator: no
 * memory, no fill, no kernel of its own.
 *
 * Edge softmax under a warp per destination with lanes on its in-edges
 * (stdlib/schedules.gop softmax_rows) goes from three kernels and two
 * temporaries filled by the runtime to one kernel:
 *
 *   for v in dst @warp {                      for v in dst @warp {
 *     for e in in_edges(v) @lane {              var M = -inf
 *       M[v] max= S[e]                          var Z = 0.0
 *     } }                                       for e in in_edges(v) @lane {
 *   for v in dst @warp {                          M max= S[e]          (shuffle)
 *     for e in in_edges(v) @lane {              }
 *       Z[v] += exp(S[e] - M[v])      ==>       if (M == -inf) { M = 0.0 }
 *     } }                                       for e in in_edges(v) @lane {
 *   for v in dst @warp {                          Z += exp(S[e] - M)   (shuffle)
 *     for e in in_edges(v) @lane {              }
 *       A[e] = exp(S[e] - M[v]) / Z[v]          for e in in_edges(v) @lane {
 *     } }                                         A[e] = exp(S[e] - M) / Z
 *                                               } }
 *
 * Refused, with what stands in the way: stages that are not consecutive,
 * outer loops mapped differently, neighbour groups (a destination's edges
 * spread over workers: its per-vertex value is no one iteration's), a
 * value passed at another index or through an input or output, a
 * temporary other stages use, and one assigned or averaged rather than
 * reduced. Directives after it see the fused stage as one stage.
 */
#include <math.h>
#include <string.h>

#include "passes/passes.h"

enum { MAX_FUSED = 64 };

/* How the fused stages use one tensor. */
typedef struct Use {
  uint64_t reads, writes; /* bit i: fused stage i */
  bool elsewhere;         /* used by a stage outside the fused ones */
  IrRed red;              /* the reduction of its stores (ASSIGN: none yet) */
  bool mixed;             /* stores of different kinds, or a plain one */
  const IrNode *off;      /* its first access at another index */
} Use;

enum { MAX_CHAIN = 8 };

typedef struct Scan {
  Use *use;
  int stage; /* fused stage index, or -1 outside */
  const IrVar *const *chain; /* the fused loops' variables, outermost first */
  int depth;
} Scan;

/* Whether access n is at the fused loops' variables, T[v] (or T[v, h] with
 * the head loops fused too). */
static bool at_chain(const IrNode *n, const IrVar *const *chain, int depth) {
  if (n->acc.nidx != depth) return false;
  for (int i = 0; i < depth; i++)
    if (n->acc.idx[i]->kind != IR_VAR || n->acc.idx[i]->var != chain[i]) return false;
  return true;
}

static bool scan_node(const IrNode *n, void *ctx) {
  Scan *sc = ctx;
  if (n->kind != IR_LOAD && n->kind != IR_STORE) return false;
  Use *u = &sc->use[n->acc.tensor->id];
  if (sc->stage < 0) {
    u->elsewhere = true;
    return false;
  }
  uint64_t bit = (uint64_t)1 << sc->stage;
  if (!u->off && !at_chain(n, sc->chain, sc->depth)) u->off = n;
  if (n->kind == IR_LOAD) {
    u->reads |= bit;
    return false;
  }
  u->writes |= bit;
  IrRed r = n->acc.red;
  if (r == IR_RED_ASSIGN || r == IR_RED_MEAN || (u->red != IR_RED_ASSIGN && u->red != r))
    u->mixed = true;
  u->red = r;
  return false;
}

/* Replaces the accesses of converted temporaries by their locals, in place
 * (the operator is the caller's copy). */
typedef struct Local {
  const IrTensor *t; /* the temporary */
  IrRed red;         /* its reduction */
  uint64_t writes;   /* the fused stages reducing it */
  IrVar *x;          /* the local replacing it */
} Local;

typedef struct Rewrite {
  Local *l;
  int n;
} Rewrite;

static bool rewrite_node(const IrNode *cn, void *ctx) {
  Rewrite *rw = ctx;
  IrNode *n = (IrNode *)cn;
  if (n->kind != IR_LOAD && n->kind != IR_STORE) return false;
  IrVar *x = NULL;
  for (int i = 0; i < rw->n && !x; i++)
    if (rw->l[i].t == n->acc.tensor) x = rw->l[i].x;
  if (!x) return false;
  if (n->kind == IR_LOAD) {
    n->kind = IR_VAR;
    n->var = x;
    return false;
  }
  IrRed red = n->acc.red;
  IrNode *value = n->acc.value;
  n->kind = IR_SET;
  n->set.var = x;
  n->set.red = red;
  n->set.value = value;
  n->set.how = IR_HOW_AUTO;
  return false;
}

static bool same_outer(const IrNode *x, const IrNode *y) {
#define SAME(f) (x->loop.f == y->loop.f)
  return SAME(kind) && pass_expr_equal(x->loop.extent, y->loop.extent) &&
         pass_expr_equal(x->loop.of, y->loop.of) && SAME(bind) && SAME(threads) && SAME(occ) &&
         SAME(team) && SAME(unroll) && SAME(vec) && SAME(group) && SAME(ilv) &&
         SAME(ilv_cls) && SAME(ilv_thr) && SAME(shared) && SAME(prefetch);
#undef SAME
}

static const char *mapping(Arena *a, const IrNode *l) {
  const char *s = ir_sprintf(a, "%s loop", ir_loopkind_name(l->loop.kind));
  if (l->loop.bind != IR_BIND_NONE)
    s = ir_sprintf(a, "%s bound to %s", s, ir_bind_name(l->loop.bind));
  if (l->loop.team) s = ir_sprintf(a, "%s, teams of %d", s, l->loop.team);
  if (l->loop.threads) s = ir_sprintf(a, "%s, %d threads a block", s, l->loop.threads);
  if (l->loop.occ) s = ir_sprintf(a, "%s, occupancy %d", s, l->loop.occ);
  return s;
}

/* Removes temporary t, which nothing uses any more, from op's tensors;
 * the temporaries after it get copies with their new ids. */
static void drop_tensor(IrOp *op, const IrTensor *t, Arena *a) {
  for (int i = t->id + 1; i < op->ntensors; i++) {
    IrTensor *nt = pass_own_tensor(op, op->tensors[i], a);
    nt->id = i - 1;
    op->tensors[i - 1] = nt;
  }
  op->ntensors--;
}

static IrNode *list_tail(IrNode *list) {
  while (list && list->next) list = list->next;
  return list;
}

/* "[v, h]": the fused loops' variables as an index. */
static const char *chain_string(Arena *a, const IrVar *const *chain, int depth) {
  const char *s = "[";
  for (int i = 0; i < depth; i++) s = ir_sprintf(a, "%s%s%s", s, i ? ", " : "", chain[i]->name);
  return ir_sprintf(a, "%s]", s);
}

/* "[w + vi]": an access's index. */
static const char *access_string(Arena *a, const IrNode *n) {
  const char *s = "[";
  for (int i = 0; i < n->acc.nidx; i++)
    s = ir_sprintf(a, "%s%s%s", s, i ? ", " : "", pass_expr_string(a, n->acc.idx[i]));
  return ir_sprintf(a, "%s]", s);
}

int pass_fuse_stages(IrOp *op, uint64_t mask, Loc loc, Arena *a, Diag *d) {
  IrNode *stage[MAX_FUSED];
  int first = -1, n = 0, k = 0;
  for (IrNode *s = op->body; s; s = s->next, k++) {
    if (k >= 64 || !(mask >> k & 1)) continue;
    if (first >= 0 && k != first + n) {
      ir_error(d, loc, "fuse_stages: stages %d and %d of operator %s are not consecutive "
               "(stage %d lies between them)", first + n, k + 1, op->name, first + n + 1);
      return -1;
    }
    if (first < 0) first = k;
    stage[n++] = s;
  }
  if (n < 2) {
    ir_error(d, loc, "fuse_stages: name at least two stages to fuse (operator %s has %d)",
             op->name, k);
    return -1;
  }
  const IrNode *outer = stage[0];
  for (int i = 0; i < n; i++) {
    const IrNode *s = stage[i];
    if (s->kind != IR_LOOP) {
      ir_error(d, loc, "fuse_stages: stage %d of operator %s is not a loop", first + i + 1,
               op->name);
      return -1;
    }
    if (s->loop.kind == IR_LOOP_GROUPS || s->loop.kind == IR_LOOP_EDGES) {
      ir_error(d, loc, "fuse_stages: stage %d runs over %s, which spread a destination's "
               "in-edges over workers; fused stages pass per-vertex values inside one "
               "iteration, so their outer loop must be over vertices",
               first + i + 1, s->loop.kind == IR_LOOP_GROUPS ? "neighbour groups" : "edges");
      return -1;
    }
    if (i > 0 && !same_outer(outer, s)) {
      ir_error(d, loc, "fuse_stages: stage %d's outer loop '%s' (%s) is not mapped as "
               "stage %d's '%s' (%s); map them alike before fusing", first + i + 1,
               s->loop.var->name, mapping(a, s), first + 1, outer->loop.var->name,
               mapping(a, outer));
      return -1;
    }
  }
  /* The fused loops: the outer loops, then, while every stage's body is
   * one range loop mapped alike (a loop over heads: `for h in 0..H
   * @lane`), that loop too; each with one variable, stage 0's unless a
   * loop inside another stage has its name. Edge loops are never merged:
   * a stage's edges all come before the next stage's. */
  IrNode *cur[MAX_FUSED];
  const IrVar *chain[MAX_CHAIN];
  int depth = 0;
  for (int i = 0; i < n; i++) cur[i] = stage[i];
  for (;;) {
    IrVar *x = NULL;
    for (int i = 0; i < n && !x; i++) {
      bool clash = false;
      for (int j = 0; j < n && !clash; j++)
        clash = pass_binds_name(cur[j]->loop.body, cur[i]->loop.var->name);
      if (!clash) x = cur[i]->loop.var;
    }
    if (!x) x = pass_new_var(op, a, pass_fresh_name(op, a, cur[0]->loop.var->name),
                             cur[0]->loop.var->kind, cur[0]->loc);
    IrNode *ref = ir_var(a, cur[0]->loc, x);
    for (int i = 0; i < n; i++) {
      if (cur[i]->loop.var != x) pass_subst_stmts(a, cur[i]->loop.body, cur[i]->loop.var, ref);
      cur[i]->loop.var = x;
    }
    chain[depth++] = x;
    bool deeper = depth < MAX_CHAIN;
    for (int i = 0; i < n && deeper; i++) {
      const IrNode *b = cur[i]->loop.body;
      deeper = b && !b->next && b->kind == IR_LOOP && b->loop.kind == IR_LOOP_RANGE &&
               same_outer(cur[0]->loop.body, b);
    }
    if (!deeper) break;
    for (int i = 0; i < n; i++) cur[i] = cur[i]->loop.body;
  }

  Use *use = ir_alloc(a, sizeof *use * (size_t)(op->ntensors ? op->ntensors : 1));
  memset(use, 0, sizeof *use * (size_t)op->ntensors);
  Scan sc = {.use = use, .chain = chain, .depth = depth};
  k = 0;
  for (IrNode *s = op->body; s; s = s->next, k++) {
    IrNode one = *s;
    one.next = NULL;
    sc.stage = k >= first && k < first + n ? k - first : -1;
    ir_any(&one, scan_node, &sc);
  }
  Local *conv = ir_alloc(a, sizeof *conv * (size_t)(op->ntensors ? op->ntensors : 1));
  int nconv = 0;
  for (int i = 0; i < op->ntensors; i++) {
    const IrTensor *t = op->tensors[i];
    const Use *u = &use[i];
    uint64_t all = u->reads | u->writes;
    if (!u->writes || !(all & (all - 1))) continue; /* read only, or one stage's */
    int w = __builtin_ctzll(u->writes), o = __builtin_ctzll(all & ~((uint64_t)1 << w));
    const char *why = t->role != IR_ROLE_TEMP ? "it is an input or output of the operator"
                      : t->domain != IR_DOM_DST && t->domain != IR_DOM_SRC
                          ? "it is not a tensor of one value per vertex"
                      : u->off
                          ? ir_sprintf(a, "it is accessed at %s, not at the fused loops' %s",
                                       access_string(a, u->off), chain_string(a, chain, depth))
                      : u->elsewhere ? "a stage outside the fused ones uses it too"
                      : u->mixed ? "it is assigned or averaged, not reduced with +=, max= or min="
                                 : NULL;
    if (why) {
      ir_error(d, loc, "fuse_stages: stage %d %s tensor '%s', which stage %d writes, and "
               "%s: only a temporary of one value per vertex (and head), reduced and read "
               "at %s%s, can pass between fused stages",
               first + o + 1, u->writes >> o & 1 ? "writes" : "reads", t->name, first + w + 1,
               why, t->name, chain_string(a, chain, depth));
      return -1;
    }
    conv[nconv++] = (Local){.t = t, .red = u->red, .writes = u->writes};
  }
  /* The temporaries leave the operator (the last first: dropping one
   * renumbers only those after it), and their names go to the locals. */
  for (int i = nconv - 1; i >= 0; i--) drop_tensor(op, conv[i].t, a);
  for (int i = 0; i < nconv; i++)
    conv[i].x = pass_new_var(op, a, pass_fresh_name(op, a, conv[i].t->name), IR_VAR_LOCAL,
                             conv[i].t->loc);

  /* The fused body: the locals at their identities, then each stage's
   * body, a max or min of no edge made 0 after the stage reducing it. */
  Rewrite rw = {.l = conv, .n = nconv};
  IrNode *head = NULL, **tail = &head;
  for (int i = 0; i < nconv; i++) {
    IrRed r = conv[i].red;
    double id = r == IR_RED_MAX ? -INFINITY : r == IR_RED_MIN ? INFINITY : 0.0;
    Loc l = conv[i].t->loc;
    *tail = ir_let(a, l, conv[i].x, ir_fconst(a, l, id));
    tail = &(*tail)->next;
  }
  for (int s = 0; s < n; s++) {
    IrNode *body = cur[s]->loop.body;
    ir_any(body, rewrite_node, &rw);
    *tail = body;
    tail = body ? &list_tail(body)->next : tail;
    for (int i = 0; i < nconv; i++) {
      IrRed r = conv[i].red;
      if (!(conv[i].writes >> s & 1) || (r != IR_RED_MAX && r != IR_RED_MIN)) continue;
      Loc l = conv[i].t->loc;
      IrNode *cond = ir_bin(a, l, IR_OP_EQ, ir_var(a, l, conv[i].x),
                            ir_fconst(a, l, r == IR_RED_MAX ? -INFINITY : INFINITY));
      IrNode *zero = ir_set(a, l, conv[i].x, IR_RED_ASSIGN, ir_fconst(a, l, 0.0));
      *tail = ir_if(a, l, cond, zero);
      tail = &(*tail)->next;
    }
  }
  cur[0]->loop.body = head;
  stage[0]->next = stage[n - 1]->next;
  return 0;
}
