/* passes/reorder.c: reorder(l1, l2, ...) puts the named loops in this order.
 *
 * Contract: requires the named loops to lie on one path of one loop nest,
 * unbound, and perfectly nested between the first and the last one that
 * changes place (each loop or guard in between holds nothing but the next);
 * breaks nothing. As in Halide, only the named loops move: they take each
 * other's places in the order given, and loops not named stay where they
 * are.
 *
 * Guards move with what they protect: a guard between the moved loops is put
 * right below the deepest loop, in the new order, whose variable its
 * condition reads (a guard and a loop that does not feed its condition
 * commute), so a tail guard still sits above every use of the index it
 * bounds and every edge loop it keeps in range.
 *
 * A named loop of one iteration (`for t in 0..1`, what tile(f, 1) leaves)
 * commutes with everything, perfectly nested or not: it is lifted out first
 * and put back at its new place, wrapping whatever is there. This keeps a
 * named schedule such as thread_vertex(G, 1) applicable to u_dot_v, whose
 * feature loop is a reduction into a local.
 *
 * Reordering changes only the order in which the innermost body runs for
 * different iterations, so it is refused when that order can matter: a
 * tensor both written and read inside the moved loops, or a plain `=` to a
 * local declared outside them. The order of floating-point sums into one
 * element may change (as with any parallel schedule).
 */
#include <string.h>

#include "passes/passes.h"

enum { MAX_LOOPS = 16, MAX_CHAIN = PASS_MAX_DEPTH };

static IrNode **body_of(IrNode *s) {
  return s->kind == IR_LOOP ? &s->loop.body : &s->ifs.then;
}

static bool is_unit(const IrNode *l) {
  return l->loop.kind == IR_LOOP_RANGE && l->loop.extent &&
         l->loop.extent->kind == IR_ICONST && l->loop.extent->i == 1;
}

static const char *describe(Arena *a, const IrNode *s) {
  return s->kind == IR_LOOP
             ? ir_sprintf(a, "loop '%s'", s->loop.var->name)
             : ir_sprintf(a, "the guard (%s)", pass_expr_string(a, s->ifs.cond));
}

/* Whether statement `s` itself (not the statements under it) reads `v`. */
static bool own_exprs_use(const IrNode *s, const IrVar *v) {
  switch (s->kind) {
  case IR_LOOP: return ir_uses_var(s->loop.extent, v) || ir_uses_var(s->loop.of, v);
  case IR_IF: return ir_uses_var(s->ifs.cond, v);
  case IR_STORE:
    for (int i = 0; i < s->acc.nidx; i++)
      if (ir_uses_var(s->acc.idx[i], v)) return true;
    return ir_uses_var(s->acc.value, v);
  case IR_LET: return ir_uses_var(s->let.init, v);
  case IR_SET: return ir_uses_var(s->set.value, v);
  default: return false;
  }
}

static bool used_outside(const IrNode *list, const IrNode *skip, const IrVar *v) {
  for (const IrNode *s = list; s; s = s->next) {
    if (s == skip) continue;
    if (own_exprs_use(s, v)) return true;
    if (s->kind == IR_LOOP && used_outside(s->loop.body, skip, v)) return true;
    if (s->kind == IR_IF && used_outside(s->ifs.then, skip, v)) return true;
  }
  return false;
}

/* ---- what the body does: the data rules ---- */

typedef struct Effects {
  const IrTensor *written[64], *read[64];
  int nw, nr;
  const IrVar *declared[64]; /* locals declared inside */
  int nd;
  const IrVar *assigned[64]; /* locals given a plain `=` */
  int na;
} Effects;

/* Adds `x` to a set of at most 64 pointers (an op has fewer tensors and
 * locals than that in practice; past it, the set stops growing). */
static void note(const void **set, int *n, const void *x) {
  for (int i = 0; i < *n; i++)
    if (set[i] == x) return;
  if (*n < 64) set[(*n)++] = x;
}

/* ir_any's question that is never answered: each load noted on the way. */
static bool note_load(const IrNode *n, void *ctx) {
  Effects *fx = ctx;
  if (n->kind == IR_LOAD) note((const void **)fx->read, &fx->nr, n->acc.tensor);
  return false;
}

static void note_reads(Effects *fx, const IrNode *e) { ir_any(e, note_load, fx); }

static void effects(Effects *fx, const IrNode *list) {
  for (const IrNode *s = list; s; s = s->next) {
    switch (s->kind) {
    case IR_LOOP:
      note_reads(fx, s->loop.extent);
      note_reads(fx, s->loop.of);
      effects(fx, s->loop.body);
      break;
    case IR_IF:
      note_reads(fx, s->ifs.cond);
      effects(fx, s->ifs.then);
      break;
    case IR_STORE:
      note((const void **)fx->written, &fx->nw, s->acc.tensor);
      for (int i = 0; i < s->acc.nidx; i++) note_reads(fx, s->acc.idx[i]);
      note_reads(fx, s->acc.value);
      break;
    case IR_LET:
      note((const void **)fx->declared, &fx->nd, s->let.var);
      note_reads(fx, s->let.init);
      break;
    case IR_SET:
      if (s->set.red == IR_RED_ASSIGN)
        note((const void **)fx->assigned, &fx->na, s->set.var);
      note_reads(fx, s->set.value);
      break;
    default: break;
    }
  }
}

/* The first tensor both written and read in `fx`, or NULL. */
static const IrTensor *read_and_written(const Effects *fx) {
  for (int i = 0; i < fx->nw; i++)
    for (int j = 0; j < fx->nr; j++)
      if (fx->written[i] == fx->read[j]) return fx->written[i];
  return NULL;
}

/* The first local given a plain `=` but declared outside, or NULL. */
static const IrVar *outer_assigned(const Effects *fx) {
  for (int i = 0; i < fx->na; i++) {
    bool inside = false;
    for (int j = 0; j < fx->nd; j++) inside |= fx->declared[j] == fx->assigned[i];
    if (!inside) return fx->assigned[i];
  }
  return NULL;
}

/* ---- the permutation ---- */

static IrNode *find(IrOp *op, const char *name, PassSite *site) {
  return pass_find_loops(op, name, site, 1) == 1 ? site->node : NULL;
}

/* Permutes the non-unit loops `cur` (current order, outer first) into `want`
 * in `c`. */
static int permute(IrOp *c, const char **cur, const char **want, int n,
                   Loc loc, Arena *a, Diag *d) {
  int i0 = 0, j0 = n - 1;
  while (i0 < n && strcmp(cur[i0], want[i0]) == 0) i0++;
  if (i0 == n) return 0; /* already in this order */
  while (strcmp(cur[j0], want[j0]) == 0) j0--;

  PassSite top, bottom;
  find(c, cur[i0], &top);
  IrNode *bot = find(c, cur[j0], &bottom);
  IrNode *chain[MAX_CHAIN];
  int m = 0;
  for (IrNode *x = top.node;; x = *body_of(x)) {
    if (m == MAX_CHAIN) {
      ir_error(d, loc, "reorder: the loops between '%s' and '%s' nest too deep",
               cur[i0], cur[j0]);
      return -1;
    }
    chain[m++] = x;
    if (x == bot) break;
    IrNode *inner = *body_of(x);
    /* the path to `bot` goes through `x`: its body is never empty */
    if (inner->next || (inner->kind != IR_LOOP && inner->kind != IR_IF)) {
      /* the statement of the path that should have been alone */
      const IrNode *next =
          top.depth + m < bottom.depth ? bottom.path[top.depth + m] : bot;
      ir_error(d, loc, "reorder: %s holds %s besides %s; only perfectly nested "
               "loops can be reordered", describe(a, x),
               pass_describe_stmts(a, inner, next), describe(a, next));
      return -1;
    }
  }
  /* Guards right below the last loop that moves are placed again too, so
   * that a tail guard can rise above an edge loop moved inside it. */
  while (m < MAX_CHAIN) {
    IrNode *inner = *body_of(chain[m - 1]);
    if (!inner || inner->next || inner->kind != IR_IF) break;
    chain[m++] = inner;
  }
  IrNode *innermost = *body_of(chain[m - 1]);

  Effects fx = {0};
  IrNode *after = top.node->next; /* only the top loop, not what follows */
  top.node->next = NULL;
  effects(&fx, top.node);
  top.node->next = after;
  const IrTensor *rw = read_and_written(&fx);
  if (rw) {
    ir_error(d, loc, "reorder: tensor '%s' is both written and read inside loop "
             "'%s'; reordering could change what is read", rw->name, cur[i0]);
    return -1;
  }
  const IrVar *local = outer_assigned(&fx);
  if (local) {
    ir_error(d, loc, "reorder: local '%s' is given a plain `=` inside loop '%s'; "
             "the last iteration to run decides its value", local->name, cur[i0]);
    return -1;
  }

  /* The new order: named loops take each other's places; unnamed loops
   * stay; guards are placed again below. */
  IrNode *seq[MAX_CHAIN], *guards[MAX_CHAIN];
  int ns = 0, ng = 0, k = i0;
  for (int x = 0; x < m; x++) {
    IrNode *s = chain[x];
    bool named = false;
    for (int i = i0; i <= j0; i++)
      named |= s->kind == IR_LOOP && strcmp(s->loop.var->name, cur[i]) == 0;
    if (named) {
      PassSite ws;
      seq[ns++] = find(c, want[k++], &ws);
    } else if (s->kind == IR_LOOP) {
      seq[ns++] = s;
    } else {
      guards[ng++] = s;
    }
  }
  /* Each loop's bounds may only read loops placed outside it. */
  for (int p = 0; p < ns; p++)
    for (int q = p + 1; q < ns; q++)
      if (ir_uses_var(seq[p]->loop.extent, seq[q]->loop.var) ||
          ir_uses_var(seq[p]->loop.of, seq[q]->loop.var)) {
        ir_error(d, loc, "reorder: the bounds of loop '%s' depend on loop '%s', "
                 "which this order puts inside it", seq[p]->loop.var->name,
                 seq[q]->loop.var->name);
        return -1;
      }
  IrNode *out[2 * MAX_CHAIN];
  int no = 0;
  int place[MAX_CHAIN]; /* the guard goes after seq[place] (-1: on top) */
  for (int g = 0; g < ng; g++) {
    place[g] = -1;
    for (int p = 0; p < ns; p++)
      if (ir_uses_var(guards[g]->ifs.cond, seq[p]->loop.var)) place[g] = p;
  }
  for (int g = 0; g < ng; g++)
    if (place[g] == -1) out[no++] = guards[g];
  for (int p = 0; p < ns; p++) {
    out[no++] = seq[p];
    for (int g = 0; g < ng; g++)
      if (place[g] == p) out[no++] = guards[g];
  }

  /* Relink: each holds the next; the last holds the old innermost body. */
  for (int x = 0; x + 1 < no; x++) {
    *body_of(out[x]) = out[x + 1];
    out[x + 1]->next = NULL;
  }
  *body_of(out[no - 1]) = innermost;
  out[0]->next = after;
  *top.slot = out[0];
  return 0;
}

int pass_reorder(IrOp *op, const char *const *loops, int n, Loc loc, Arena *a,
                 Diag *d) {
  if (n < 2 || n > MAX_LOOPS) {
    ir_error(d, loc, "reorder: give between 2 and %d loops, not %d", MAX_LOOPS, n);
    return -1;
  }
  for (int i = 0; i < n; i++)
    for (int j = 0; j < i; j++)
      if (strcmp(loops[i], loops[j]) == 0) {
        ir_error(d, loc, "reorder: loop '%s' is named twice", loops[i]);
        return -1;
      }
  /* Work on a copy: unit loops are lifted out before the rest is checked. */
  IrOp *c = pass_op_copy(op, a);
  PassSite sites[MAX_LOOPS];
  for (int i = 0; i < n; i++) {
    if (!pass_find_loop(c, "reorder", loops[i], &sites[i], loc, a, d)) return -1;
    const IrNode *l = sites[i].node;
    if (l->loop.bind != IR_BIND_NONE) {
      ir_error(d, loc, "reorder: loop '%s' is already bound to %s; reorder "
               "before binding", loops[i], ir_bind_name(l->loop.bind));
      return -1;
    }
  }
  int deep = 0;
  for (int i = 1; i < n; i++)
    if (sites[i].depth > sites[deep].depth) deep = i;
  for (int i = 0; i < n; i++) {
    if (i == deep) continue;
    if (sites[i].depth >= sites[deep].depth ||
        sites[deep].path[sites[i].depth] != sites[i].node) {
      ir_error(d, loc, "reorder: loops '%s' and '%s' are not nested one inside "
               "the other", loops[i], loops[deep]);
      return -1;
    }
  }
  int stage = sites[0].stage;
  IrNode *stage_top = c->body;
  for (int i = 0; i < stage; i++) stage_top = stage_top->next;
  int threads = stage_top->kind == IR_LOOP ? stage_top->loop.threads : 0;
  int occ = stage_top->kind == IR_LOOP ? stage_top->loop.occ : 0;

  /* Current order, outer first, and which loops run once. */
  const char *cur[MAX_LOOPS], *want[MAX_LOOPS];
  int order[MAX_LOOPS];
  for (int i = 0; i < n; i++) order[i] = i;
  for (int i = 1; i < n; i++)
    for (int j = i; j > 0 && sites[order[j]].depth < sites[order[j - 1]].depth; j--) {
      int t = order[j];
      order[j] = order[j - 1];
      order[j - 1] = t;
    }
  bool unit[MAX_LOOPS];
  int nunit = 0;
  for (int i = 0; i < n; i++) nunit += unit[i] = is_unit(sites[i].node);
  if (nunit == n) { /* all run once: nothing to lift */
    for (int i = 0; i < n; i++) unit[i] = false;
    nunit = 0;
  }
  IrNode *units[MAX_LOOPS];
  for (int i = 0; i < n; i++) {
    units[i] = NULL;
    if (!unit[i]) continue;
    PassSite s;
    IrNode *l = find(c, loops[i], &s);
    IrNode *body = l->loop.body;
    if (body) {
      ir_append(&body, l->next);
      *s.slot = body;
    } else {
      *s.slot = l->next;
    }
    l->next = NULL;
    l->loop.threads = 0;
    l->loop.occ = 0;
    units[i] = l;
  }
  int nc = 0, nw = 0;
  for (int i = 0; i < n; i++)
    if (!unit[order[i]]) cur[nc++] = loops[order[i]];
  for (int i = 0; i < n; i++)
    if (!unit[i]) want[nw++] = loops[i];
  if (permute(c, cur, want, nc, loc, a, d) != 0) return -1;

  /* Put the unit loops back: right inside the non-unit loop named before
   * them, or around the first non-unit loop when none is. */
  const char *prev = NULL;
  IrNode *run[MAX_LOOPS];
  int nrun = 0;
  for (int i = 0; i <= n; i++) {
    if (i < n && unit[i]) {
      run[nrun++] = units[i];
      continue;
    }
    if (nrun > 0) {
      for (int r = 0; r + 1 < nrun; r++) run[r]->loop.body = run[r + 1];
      PassSite s;
      if (prev) {
        IrNode *p = find(c, prev, &s);
        run[nrun - 1]->loop.body = p->loop.body;
        p->loop.body = run[0];
      } else {
        IrNode *first = find(c, want[0], &s);
        run[0]->next = first->next;
        first->next = NULL;
        run[nrun - 1]->loop.body = first;
        *s.slot = run[0];
      }
      nrun = 0;
    }
    if (i < n) prev = loops[i];
  }
  for (int i = 0; i < n; i++) {
    if (!unit[i]) continue;
    if (used_outside(c->body, units[i], units[i]->loop.var)) {
      ir_error(d, loc, "reorder: in this order loop '%s' no longer encloses "
               "every statement that uses it", loops[i]);
      return -1;
    }
  }
  /* The stage's block size and occupancy belong to whatever loop is now on
   * top. */
  if (threads || occ) {
    IrNode *s = c->body;
    for (int i = 0; i < stage; i++) s = s->next;
    for (IrNode *x = s; x && x->kind == IR_LOOP; x = x->loop.body)
      x->loop.threads = x->loop.occ = 0;
    if (s->kind == IR_LOOP) {
      s->loop.threads = threads;
      s->loop.occ = occ;
    }
  }
  *op = *c;
  return 0;
}
