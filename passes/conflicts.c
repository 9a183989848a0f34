/* passes/conflicts.c: write-conflict analysis, plain or atomic reductions.
 *
 * Contract: requires mean= lowered (lower_mean.c); sets IrNode.acc.how of
 * every reduction store (+=, max=, min=) to PLAIN or ATOMIC; breaks
 * nothing. Plain `=` stores keep AUTO: they need no choice, but one that
 * two workers could write is refused.
 *
 * Two workers differ in at least one bound loop around the store. The
 * store is conflict-free when the element it writes determines every bound
 * loop variable around it: then two different workers always write two
 * different elements, whatever their sequential loops are doing. This is
 * sharper than "the index uses the variable" (it refuses `Y[w + i]` with a
 * sequential i, which two workers can both reach) and is computed by
 * recovering variables from the index expressions, the inverse of what
 * split, tile and fuse wrote into them:
 *
 *   p * c + q with q in [0, c)   gives p and q    (split, tile)
 *   p / c and p % c              give p           (fuse of ranges)
 *   p * c, c a nonzero constant  gives p
 *   a + b, a - b                 give one side when the other is known
 *   dst(e) of `in_edges(x)`      gives x          (and e gives x too)
 *
 * A variable is known when the index holds it after these steps. An edge
 * variable is never recovered from its endpoint (dst(e) is shared by every
 * in-edge of a vertex), which is why edge-parallel aggregation is atomic.
 *
 * Reductions into locals (`s += x`) need no choice while the local is the
 * worker's own. When a @lane loop lies between a local's `var` and its
 * reduction (a dot product over features with lanes on the features), each
 * lane holds a partial: the set becomes `shuffle s += x`, and code
 * generation combines the 32 partials with a butterfly of warp shuffles
 * right after the statement (of the list holding the `var`) that contains
 * the sets, leaving the total in every lane (docs/gpu-ir.md). That is
 * correct only if: no other bound loop lies between (the partials must stay
 * in one warp); a lane that contributes nothing holds the identity (a `+=`
 * local starts at 0); the partials are not read before they are combined,
 * nor reduced in two statements (each combine would count the earlier
 * total 32 times); and every lane reaches the shuffle, which holds because
 * the `var` is outside every @lane loop, where control is the same for all
 * lanes of a warp. Anything else is refused.
 *
 * A reduction inside a warp loop but in no lane loop would be repeated by
 * all 32 lanes (and inside a block loop but in no thread or warp loop, by
 * every thread of the block): atomics would not make that right, so it is
 * refused. A `deterministic` operator (schedule.c) refuses atomics; its
 * reductions over neighbour groups arrive here already segmented
 * (segment.c), as plain stores.
 */
#include <string.h>

#include "passes/passes.h"

enum { MAX_KNOWN = 128 };

typedef struct Known {
  IrNode *const *path;
  int depth;
  const IrNode *exprs[MAX_KNOWN];
  int n;
  const IrVar *vars[MAX_KNOWN];
  int nvars;
} Known;

static const IrNode *loop_of(const Known *k, const IrVar *v) {
  for (int i = 0; i < k->depth; i++)
    if (k->path[i]->kind == IR_LOOP && k->path[i]->loop.var == v) return k->path[i];
  return NULL;
}

static bool var_known(const IrVar *v, void *ctx) {
  const Known *k = ctx;
  for (int i = 0; i < k->nvars; i++)
    if (k->vars[i] == v) return true;
  const IrNode *l = loop_of(k, v);
  /* a loop of one iteration has nothing to tell apart */
  return l && l->loop.kind == IR_LOOP_RANGE && l->loop.extent->kind == IR_ICONST &&
         l->loop.extent->i == 1;
}

static bool computable(Known *k, const IrNode *e) {
  return !ir_has_load(e) && pass_expr_vars_all(e, var_known, k);
}

static bool add(Known *k, const IrNode *e) {
  for (int i = 0; i < k->n; i++)
    if (pass_expr_equal(k->exprs[i], e)) return false;
  if (k->n == MAX_KNOWN) return false;
  k->exprs[k->n++] = e;
  return true;
}

/* An exclusive upper bound of non-negative integer expression q made of
 * constants and range loops of constant extent (`fl * 4 + fv` < 128 for
 * fl < 32, fv < 4: what two splits of a feature loop write; `ln / 8` < 4
 * for ln < 32: what fusing a vertex group with lanes writes), or -1. */
static int64_t upper(const Known *k, const IrNode *q) {
  switch (q->kind) {
  case IR_ICONST: return q->i >= 0 && q->i < INT32_MAX ? q->i + 1 : -1;
  case IR_VAR: {
    const IrNode *l = loop_of(k, q->var);
    if (!l || l->loop.kind != IR_LOOP_RANGE || l->loop.extent->kind != IR_ICONST)
      return -1;
    return l->loop.extent->i >= 1 && l->loop.extent->i < INT32_MAX ? l->loop.extent->i : -1;
  }
  case IR_BIN: {
    int64_t a = upper(k, q->bin.a);
    if (q->bin.op == IR_OP_MOD && q->bin.b->kind == IR_ICONST && q->bin.b->i > 0)
      return q->bin.b->i;
    /* p / c < (max p) / c + 1: `ln / 8` of a lane loop of 32 is below 4 */
    if (q->bin.op == IR_OP_DIV && q->bin.b->kind == IR_ICONST && q->bin.b->i > 0)
      return a < 0 ? -1 : (a - 1) / q->bin.b->i + 1;
    int64_t b = upper(k, q->bin.b);
    if (a < 0 || b < 0) return -1;
    if (q->bin.op == IR_OP_ADD) return a + b - 1;
    if (q->bin.op == IR_OP_MUL) return (a - 1) * (b - 1) + 1;
    return -1;
  }
  default: return -1;
  }
}

/* Whether q is known to lie in [0, c). */
static bool below(const Known *k, const IrNode *q, const IrNode *c) {
  if (c->kind == IR_ICONST) {
    int64_t u = upper(k, q);
    if (u > 0 && u <= c->i) return true;
  }
  if (q->kind == IR_ICONST) return c->kind == IR_ICONST && q->i >= 0 && q->i < c->i;
  if (q->kind == IR_VAR) {
    const IrNode *l = loop_of(k, q->var);
    if (!l || l->loop.kind != IR_LOOP_RANGE) return false;
    const IrNode *ext = l->loop.extent;
    return pass_expr_equal(ext, c) ||
           (ext->kind == IR_ICONST && c->kind == IR_ICONST && ext->i <= c->i);
  }
  return q->kind == IR_BIN && q->bin.op == IR_OP_MOD && pass_expr_equal(q->bin.b, c);
}

/* One step of recovery from known expression e; true if anything new. */
static bool step(Known *k, const IrNode *e) {
  bool changed = false;
  switch (e->kind) {
  case IR_VAR: {
    if (!var_known(e->var, k) && k->nvars < MAX_KNOWN) {
      k->vars[k->nvars++] = e->var;
      changed = true;
    }
    const IrNode *l = loop_of(k, e->var);
    if (l && l->loop.of) changed |= add(k, l->loop.of); /* e gives dst(e) */
    return changed;
  }
  case IR_SRC:
  case IR_DST: {
    const IrNode *x = e->endpoint.e;
    const IrNode *l = x->kind == IR_VAR ? loop_of(k, x->var) : NULL;
    if (l && ((e->kind == IR_DST && l->loop.kind == IR_LOOP_IN_EDGES) ||
              (e->kind == IR_SRC && l->loop.kind == IR_LOOP_OUT_EDGES)))
      changed |= add(k, l->loop.of);
    return changed;
  }
  case IR_BIN: {
    const IrNode *x = e->bin.a, *y = e->bin.b;
    switch (e->bin.op) {
    case IR_OP_ADD:
      for (int side = 0; side < 2; side++) {
        const IrNode *m = side ? y : x, *r = side ? x : y;
        if (m->kind == IR_BIN && m->bin.op == IR_OP_MUL && below(k, r, m->bin.b)) {
          changed |= add(k, m->bin.a);
          changed |= add(k, r);
        }
      }
      /* a side is also known when the other is, as for `-` */
      if (computable(k, x)) changed |= add(k, y);
      if (computable(k, y)) changed |= add(k, x);
      return changed;
    case IR_OP_SUB:
      if (computable(k, x)) changed |= add(k, y);
      if (computable(k, y)) changed |= add(k, x);
      return changed;
    case IR_OP_MUL:
      if ((y->kind == IR_ICONST && y->i != 0) || y->kind == IR_SYM) changed |= add(k, x);
      if ((x->kind == IR_ICONST && x->i != 0) || x->kind == IR_SYM) changed |= add(k, y);
      return changed;
    case IR_OP_DIV:
    case IR_OP_MOD:
      /* p / c and p % c together give p */
      for (int i = 0; i < k->n; i++) {
        const IrNode *o = k->exprs[i];
        if (o->kind == IR_BIN && o->bin.op != e->bin.op &&
            (o->bin.op == IR_OP_DIV || o->bin.op == IR_OP_MOD) &&
            pass_expr_equal(o->bin.a, x) && pass_expr_equal(o->bin.b, y))
          changed |= add(k, x);
      }
      return changed;
    default: return false;
    }
  }
  default: return false;
  }
}

bool pass_store_conflicts(IrNode *const *path, int depth, const IrNode *store,
                          const IrNode **why) {
  Known k = {.path = path, .depth = depth};
  for (int i = 0; i < store->acc.nidx; i++) add(&k, store->acc.idx[i]);
  for (bool changed = true; changed;) {
    changed = false;
    for (int i = 0; i < k.n; i++) changed |= step(&k, k.exprs[i]);
  }
  for (int i = 0; i < depth; i++) {
    const IrNode *l = path[i];
    if (l->kind == IR_LOOP && l->loop.bind != IR_BIND_NONE &&
        !var_known(l->loop.var, &k)) {
      if (why) *why = l;
      return true;
    }
  }
  return false;
}

typedef struct Ctx {
  IrOp *op;
  Diag *d;
  bool ok;
  IrNode *path[PASS_MAX_DEPTH * 2];
  IrNode *lists[PASS_MAX_DEPTH * 2 + 1]; /* lists[i]: the list path[i] is in */
  int depth;
} Ctx;

/* ---- cross-lane reductions into locals ---- */

static bool expr_uses(const IrNode *e, const IrVar *x) {
  return e && ir_uses_var(e, x); /* expressions have no `next` */
}

/* The first node in statement `s` (not its successors) that reads local x
 * or reduces into it other than by `red` from inside a @lane loop. */
static const IrNode *bad_partial_use(const IrNode *s, const IrVar *x, IrRed red,
                                     bool in_lane) {
  switch (s->kind) {
  case IR_LOOP:
    if (expr_uses(s->loop.extent, x) || expr_uses(s->loop.of, x)) return s;
    for (const IrNode *c = s->loop.body; c; c = c->next) {
      const IrNode *r =
          bad_partial_use(c, x, red, in_lane || s->loop.bind == IR_BIND_LANE);
      if (r) return r;
    }
    return NULL;
  case IR_IF:
    if (expr_uses(s->ifs.cond, x)) return s;
    for (const IrNode *c = s->ifs.then; c; c = c->next) {
      const IrNode *r = bad_partial_use(c, x, red, in_lane);
      if (r) return r;
    }
    return NULL;
  case IR_STORE:
    for (int i = 0; i < s->acc.nidx; i++)
      if (expr_uses(s->acc.idx[i], x)) return s;
    return expr_uses(s->acc.value, x) ? s : NULL;
  case IR_LET: return expr_uses(s->let.init, x) ? s : NULL;
  case IR_SET:
    if (expr_uses(s->set.value, x)) return s;
    if (s->set.var == x && (s->set.red != red || !in_lane)) return s;
    return NULL;
  default: return NULL;
  }
}

/* Whether statement `s` reduces into local x from inside a @lane loop. */
static bool has_lane_set(const IrNode *s, const IrVar *x, bool in_lane) {
  const IrNode *body = s->kind == IR_LOOP ? s->loop.body
                       : s->kind == IR_IF ? s->ifs.then
                                          : NULL;
  if (s->kind == IR_SET)
    return in_lane && s->set.var == x && s->set.red != IR_RED_ASSIGN;
  in_lane |= s->kind == IR_LOOP && s->loop.bind == IR_BIND_LANE;
  for (const IrNode *c = body; c; c = c->next)
    if (has_lane_set(c, x, in_lane)) return true;
  return false;
}

/* The `var` of local x in `list`, or NULL. */
static const IrNode *let_in(const IrNode *list, const IrVar *x) {
  for (const IrNode *s = list; s; s = s->next)
    if (s->kind == IR_LET && s->let.var == x) return s;
  return NULL;
}

/* Decides the set `s` of a local: the worker's own copy (AUTO), or a
 * cross-lane reduction (SHUFFLE); refuses what neither can do. */
static void decide_set(Ctx *c, IrNode *s) {
  const IrVar *x = s->set.var;
  s->set.how = IR_HOW_AUTO;
  if (s->set.red == IR_RED_ASSIGN) return;
  int k = c->depth;
  const IrNode *let = NULL;
  while (k >= 0 && !(let = let_in(c->lists[k], x))) k--;
  if (!let) return; /* the verifier reports a set out of scope */
  const IrNode *lane = NULL;
  for (int i = k; i < c->depth; i++) {
    const IrNode *l = c->path[i];
    if (l->kind != IR_LOOP || l->loop.bind == IR_BIND_NONE) continue;
    if (l->loop.bind != IR_BIND_LANE || lane) {
      ir_error(c->d, s->loc, "the reduction into local '%s' crosses loop '%s' "
               "(bound to %s): only the lanes of one warp can combine partial "
               "results (with a warp shuffle); declare '%s' inside it", x->name,
               l->loop.var->name, ir_bind_name(l->loop.bind), x->name);
      c->ok = false;
      return;
    }
    lane = l;
  }
  if (!lane) return;
  const char *ln = lane->loop.var->name;
  if (s->set.red == IR_RED_ADD &&
      !(let->let.init->kind == IR_FCONST && let->let.init->f == 0.0)) {
    ir_error(c->d, s->loc, "the cross-lane reduction into local '%s' (over "
             "lane loop '%s') needs it to start at 0: every lane starts from "
             "its `var`, so the start would be counted 32 times", x->name, ln);
    c->ok = false;
    return;
  }
  const IrNode *stmt = c->path[k];
  const IrNode *bad = bad_partial_use(stmt, x, s->set.red, false);
  for (const IrNode *o = let->next; o && o != stmt && !bad; o = o->next)
    if (has_lane_set(o, x, false)) bad = s;
  if (bad) {
    ir_error(c->d, bad->loc, "local '%s' is reduced across the lanes of loop "
             "'%s', so each lane holds a partial until the statement at %d:%d "
             "ends; it cannot be read, assigned or reduced another way before "
             "then, nor reduced across lanes again after", x->name, ln,
             stmt->loc.line, stmt->loc.col);
    c->ok = false;
    return;
  }
  s->set.how = IR_HOW_SHUFFLE;
}

/* A reduction repeated by workers that no bound loop tells apart: a block
 * loop needs a thread or warp loop inside it, a warp loop a lane loop. */
static const IrNode *repeated_by(const Ctx *c, const char **who) {
  const IrNode *need = NULL;
  for (int i = 0; i < c->depth; i++) {
    const IrNode *l = c->path[i];
    if (l->kind != IR_LOOP || l->loop.bind == IR_BIND_NONE) continue;
    bool splits = l->loop.bind == IR_BIND_BLOCK || l->loop.bind == IR_BIND_WARP;
    need = splits ? l : NULL;
  }
  if (need)
    *who = need->loop.bind == IR_BIND_WARP
               ? "each of its 32 lanes would repeat it; bind a loop around it "
                 "to lane"
               : "every thread of the block would repeat it; bind a loop "
                 "around it to thread or warp";
  return need;
}

static void visit(Ctx *c, IrNode *list) {
  for (IrNode *s = list; s; s = s->next) {
    if (s->kind == IR_LOOP || s->kind == IR_IF) {
      if (c->depth == PASS_MAX_DEPTH * 2) {
        ir_error(c->d, s->loc, "conflicts: the loop nest is too deep");
        c->ok = false;
        return;
      }
      c->path[c->depth++] = s;
      IrNode *body = s->kind == IR_LOOP ? s->loop.body : s->ifs.then;
      c->lists[c->depth] = body;
      visit(c, body);
      c->depth--;
      continue;
    }
    if (s->kind == IR_SET) {
      decide_set(c, s);
      continue;
    }
    if (s->kind != IR_STORE) continue;
    const char *name = s->acc.tensor->name;
    if (s->acc.red == IR_RED_MEAN) {
      ir_error(c->d, s->loc, "conflicts: the mean= into '%s' was not lowered "
               "(run the mean pass first)", name);
      c->ok = false;
      continue;
    }
    const char *who;
    const IrNode *rep = s->acc.red != IR_RED_ASSIGN ? repeated_by(c, &who) : NULL;
    if (rep) {
      ir_error(c->d, s->loc, "the reduction into '%s' is inside %s loop '%s' but "
               "in no loop that tells its workers apart: %s", name,
               ir_bind_name(rep->loop.bind), rep->loop.var->name, who);
      c->ok = false;
      continue;
    }
    /* promote(g, shared) decided it (promote.c): the flush is atomic */
    if (s->acc.how == IR_HOW_SHARED) {
      if (c->op->deterministic) {
        ir_error(c->d, s->loc, "deterministic: the reduction into '%s' goes "
                 "through shared memory, whose leader flush adds to it with "
                 "atomics across blocks; leave out promote(g, shared): "
                 "deterministic() gives neighbour groups a segmented "
                 "reduction instead (gnnadvisor)", name);
        c->ok = false;
      }
      continue;
    }
    const IrNode *why = NULL;
    bool conflict = pass_store_conflicts(c->path, c->depth, s, &why);
    if (s->acc.red == IR_RED_ASSIGN) {
      /* promote.c marks the store of a group that is its destination's
       * only one, under a guard this analysis cannot read */
      if (conflict && s->acc.how != IR_HOW_PLAIN) {
        ir_error(c->d, s->loc, "the plain store to '%s' may be written by two "
                 "workers of loop '%s' (bound to %s) at once", name,
                 why->loop.var->name, ir_bind_name(why->loop.bind));
        c->ok = false;
      }
      continue;
    }
    if (conflict && c->op->deterministic) {
      ir_error(c->d, s->loc, "deterministic: the reduction into '%s' would need "
               "atomics: the element it writes does not determine loop '%s' "
               "(bound to %s), so several workers add to it; give each element "
               "one worker (a vertex-parallel schedule), or use neighbour "
               "groups (`deterministic(); gnnadvisor(G, T)`), which "
               "deterministic() makes a segmented reduction", name,
               why->loop.var->name, ir_bind_name(why->loop.bind));
      c->ok = false;
      continue;
    }
    s->acc.how = conflict ? IR_HOW_ATOMIC : IR_HOW_PLAIN;
  }
}

int pass_conflicts(IrOp *op, Arena *a, Diag *d) {
  (void)a;
  Ctx c = {.op = op, .d = d, .ok = true};
  c.lists[0] = op->body;
  visit(&c, op->body);
  return c.ok ? 0 : -1;
}
