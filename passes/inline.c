/* passes/inline.c: inline(T), locals replaced by their expressions.
 *
 * Contract: on one stage (as apply_stages calls it) that stores into T,
 * every local the stores into T read, directly or through other locals,
 * that is assigned once (a `var` never reduced into) and whose expression
 * would give the same value anywhere after it (it reads no local that is
 * reduced into, no tensor the stage stores to), is replaced by its
 * expression wherever the stage uses it, and its `var` removed;
 * returns 1 (and changes nothing) for a stage that does not store into T.
 * The values are the same, computed once per use instead of once: a
 * recomputation the schedule asks for, so that the loops a local stood
 * between (the derived backward's alpha, hoisted out of the feature loop
 * by grad/hoist.c) become a perfect nest that reorder, fuse and
 * promote(e, register) can act on:
 *
 *   for h in 0..H {                          for h in 0..H {
 *     var a4 = exp(..) / D[dst(e), h]   ->      for f in 0..C {
 *     for f in 0..C {                              dZ[v, h, f] += dY[..] * (exp(..) / D[dst(e), h])
 *       dZ[v, h, f] += dY[..] * a4               }
 *     }                                        }
 *   }
 *
 * fission(T) (passes/fission.c) inlines the same way in the part it moves.
 */
#include "passes/passes.h"

typedef struct Inline {
  int *sets;    /* by var id: reductions into the local */
  bool *want;   /* by var id: a local to inline */
  bool *stored; /* by tensor id: stored to in the stage */
  int nvars;
  bool more;    /* mark_local wanted a new one */
} Inline;

/* An expression that may be evaluated later in the stage with the same
 * value: it reads no local that is reduced into, nor a tensor the stage
 * stores to. */
static bool changes(const IrNode *n, void *ctx) {
  const Inline *in = ctx;
  if (n->kind == IR_VAR && n->var->kind == IR_VAR_LOCAL)
    return n->var->id >= in->nvars || in->sets[n->var->id] > 0;
  return n->kind == IR_LOAD && in->stored[n->acc.tensor->id];
}

static bool count_sets(const IrNode *n, void *ctx) {
  Inline *in = ctx;
  if (n->kind == IR_SET && n->set.var->id < in->nvars) in->sets[n->set.var->id]++;
  return false;
}

static bool mark_local(const IrNode *n, void *ctx) {
  Inline *in = ctx;
  if (n->kind == IR_VAR && n->var->kind == IR_VAR_LOCAL && n->var->id < in->nvars &&
      !in->want[n->var->id])
    in->want[n->var->id] = in->more = true;
  return false;
}

/* Marks the locals the stores into t read; returns whether there is one. */
static bool mark_stores(Inline *in, const IrNode *l, const IrTensor *t) {
  bool any = false;
  for (const IrNode *s = l; s; s = s->next) {
    if (s->kind == IR_STORE && s->acc.tensor == t) {
      any = true;
      ir_any(s->acc.value, mark_local, in);
      for (int i = 0; i < s->acc.nidx; i++) ir_any(s->acc.idx[i], mark_local, in);
    }
    if (s->kind == IR_LOOP) any |= mark_stores(in, s->loop.body, t);
    if (s->kind == IR_IF) any |= mark_stores(in, s->ifs.then, t);
  }
  return any;
}

/* The locals that wanted ones are defined from are wanted too (a `var`'s
 * expression is substituted into later uses, so what it reads must be
 * inlined or still in scope: inlining it as well keeps the rule simple). */
static void close_wants(Inline *in, const IrNode *l) {
  for (const IrNode *s = l; s; s = s->next) {
    if (s->kind == IR_LET && in->want[s->let.var->id]) ir_any(s->let.init, mark_local, in);
    if (s->kind == IR_LOOP) close_wants(in, s->loop.body);
    if (s->kind == IR_IF) close_wants(in, s->ifs.then);
  }
}

static bool inlinable(const Inline *in, const IrNode *let) {
  const IrVar *v = let->let.var;
  return v->id < in->nvars && in->want[v->id] && in->sets[v->id] == 0 &&
         !ir_any(let->let.init, changes, (void *)in);
}

/* Substitutes each inlinable `var` into the statements after it, and
 * drops it; returns the new list and counts them into *n. */
static IrNode *substitute(Arena *a, const Inline *in, IrNode *l, int *n) {
  IrNode *out = NULL;
  for (IrNode *s = l, *next; s; s = next) {
    next = s->next;
    if (s->kind == IR_LET && inlinable(in, s)) {
      pass_subst_stmts(a, s->next, s->let.var, s->let.init);
      (*n)++;
      continue;
    }
    s->next = NULL;
    if (s->kind == IR_LOOP) s->loop.body = substitute(a, in, s->loop.body, n);
    if (s->kind == IR_IF) s->ifs.then = substitute(a, in, s->ifs.then, n);
    ir_append(&out, s);
  }
  return out;
}

int pass_inline_locals(IrOp *op, IrNode **stage, const IrTensor *t, Arena *a) {
  Inline in = {.nvars = op->nvars};
  in.sets = IR_NEW_ARRAY(a, int, op->nvars + 1);
  in.want = IR_NEW_ARRAY(a, bool, op->nvars + 1);
  in.stored = IR_NEW_ARRAY(a, bool, op->ntensors + 1);
  IrNode one = **stage;
  one.next = NULL;
  ir_any(&one, count_sets, &in);
  pass_stored_tensors(*stage, in.stored);
  if (t) {
    mark_stores(&in, &one, t);
  } else {
    for (int i = 0; i < op->nvars; i++) in.want[i] = true;
  }
  do {
    in.more = false;
    close_wants(&in, &one);
  } while (in.more);
  IrNode *rest = (*stage)->next;
  (*stage)->next = NULL;
  int n = 0;
  *stage = substitute(a, &in, *stage, &n);
  (*stage)->next = rest;
  return n;
}

int pass_inline(IrOp *op, const char *tensor, Loc loc, Arena *a, Diag *d) {
  IrTensor *t;
  int rc = pass_tensor_stage(op, "inline", tensor, "inline its locals", &t, loc, d);
  if (rc != 0) return rc;
  return pass_inline_locals(op, &op->body, t, a) > 0 ? 0 : 1;
}
