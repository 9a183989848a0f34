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
 * A reduction inside a warp loop but in no lane loop would be repeated by
 * all 32 lanes (and inside a block loop but in no thread or warp loop, by
 * every thread of the block): atomics would not make that right, so it is
 * refused. A `deterministic` operator (schedule.c) refuses atomics.
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

static bool has_load(const IrNode *e) {
  if (!e) return false;
  switch (e->kind) {
  case IR_LOAD: return true;
  case IR_BIN: return has_load(e->bin.a) || has_load(e->bin.b);
  case IR_UN: return has_load(e->un.a);
  case IR_SRC: case IR_DST: return has_load(e->endpoint.e);
  default: return false;
  }
}

static bool computable(Known *k, const IrNode *e) {
  return !has_load(e) && pass_expr_vars_all(e, var_known, k);
}

static bool add(Known *k, const IrNode *e) {
  for (int i = 0; i < k->n; i++)
    if (pass_expr_equal(k->exprs[i], e)) return false;
  if (k->n == MAX_KNOWN) return false;
  k->exprs[k->n++] = e;
  return true;
}

/* Whether q is known to lie in [0, c). */
static bool below(const Known *k, const IrNode *q, const IrNode *c) {
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
  int depth;
} Ctx;

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
      visit(c, s->kind == IR_LOOP ? s->loop.body : s->ifs.then);
      c->depth--;
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
    const IrNode *why = NULL;
    bool conflict = pass_store_conflicts(c->path, c->depth, s, &why);
    if (s->acc.red == IR_RED_ASSIGN) {
      if (conflict) {
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
               "one worker (a vertex-parallel schedule)", name,
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
  visit(&c, op->body);
  return c.ok ? 0 : -1;
}
