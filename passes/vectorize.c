/* passes/vectorize.c: vectorize(loop, 2 | 4), 8- or 16-byte feature accesses.
 *
 * Contract: requires an unbound innermost range loop of exactly 2 or 4
 * iterations (what split(f, 4) makes of a feature loop) whose variable is
 * used by every tensor access only as the last index plus one: `X[u, fo *
 * 4 + fv]` reads 4 consecutive floats for fv = 0..3. Marks it @vec(n),
 * which code generation turns into vector loads and stores; breaks
 * nothing. Alignment is the runtime's concern (rows of F floats with F a
 * multiple of n); a tail guard inside the loop makes code generation fall
 * back to scalar accesses for that trip.
 */
#include <string.h>

#include "passes/passes.h"

/* Whether `e` is `v`, or `x + v` / `v + x` with x free of v. */
static bool unit_stride(const IrNode *e, const IrVar *v) {
  if (e->kind == IR_VAR) return e->var == v;
  if (e->kind != IR_BIN || e->bin.op != IR_OP_ADD) return false;
  const IrNode *x = e->bin.a, *y = e->bin.b;
  if (y->kind == IR_VAR && y->var == v) return !pass_uses_var(x, v);
  if (x->kind == IR_VAR && x->var == v) return !pass_uses_var(y, v);
  return false;
}

/* The first access under `n` that reads `v` other than with unit stride in
 * its last index. */
static const IrNode *bad_access(const IrNode *n, const IrVar *v) {
  for (; n; n = n->next) {
    const IrNode *r = NULL;
    switch (n->kind) {
    case IR_STORE:
    case IR_LOAD:
      for (int i = 0; i < n->acc.nidx; i++) {
        const IrNode *ix = n->acc.idx[i];
        bool last = i == n->acc.nidx - 1;
        if (pass_uses_var(ix, v) && (!last || !unit_stride(ix, v))) return n;
        if ((r = bad_access(ix, v))) return r;
      }
      if (n->kind == IR_STORE && (r = bad_access(n->acc.value, v))) return r;
      break;
    case IR_LET: r = bad_access(n->let.init, v); break;
    case IR_SET: r = bad_access(n->set.value, v); break;
    case IR_IF: r = bad_access(n->ifs.then, v); break;
    case IR_BIN:
      if (!(r = bad_access(n->bin.a, v))) r = bad_access(n->bin.b, v);
      break;
    case IR_UN: r = bad_access(n->un.a, v); break;
    case IR_CALL:
      for (int i = 0; i < n->call.nargs && !r; i++) r = bad_access(n->call.args[i], v);
      break;
    default: break;
    }
    if (r) return r;
  }
  return NULL;
}

static bool holds_loop(const IrNode *list) {
  for (const IrNode *s = list; s; s = s->next) {
    if (s->kind == IR_LOOP) return true;
    if (s->kind == IR_IF && holds_loop(s->ifs.then)) return true;
  }
  return false;
}

int pass_vectorize(IrOp *op, const char *loop, int64_t width, Loc loc, Arena *a,
                   Diag *d) {
  PassSite site;
  if (!pass_find_loop(op, "vectorize", loop, &site, loc, a, d)) return -1;
  IrNode *l = site.node;
  if (width != 2 && width != 4) {
    ir_error(d, loc, "vectorize: loop '%s' can be vectorised by 2 or 4 (8 or 16 "
             "bytes of f32), not %lld", loop, (long long)width);
    return -1;
  }
  if (l->loop.bind != IR_BIND_NONE) {
    ir_error(d, loc, "vectorize: loop '%s' is bound to %s; only a sequential "
             "loop inside one worker is vectorised", loop, ir_bind_name(l->loop.bind));
    return -1;
  }
  if (l->loop.vec || l->loop.unroll) {
    ir_error(d, loc, "vectorize: loop '%s' is already marked @%s", loop,
             l->loop.vec ? "vec" : "unroll");
    return -1;
  }
  if (l->loop.kind != IR_LOOP_RANGE || l->loop.extent->kind != IR_ICONST ||
      l->loop.extent->i != width) {
    ir_error(d, loc, "vectorize: loop '%s' must run exactly %lld times; split the "
             "feature loop by %lld first (split(f, %lld) -> (fo, fv))", loop,
             (long long)width, (long long)width, (long long)width);
    return -1;
  }
  if (holds_loop(l->loop.body)) {
    ir_error(d, loc, "vectorize: loop '%s' holds other loops; only an innermost "
             "loop is vectorised", loop);
    return -1;
  }
  const IrNode *bad = bad_access(l->loop.body, l->loop.var);
  if (bad) {
    ir_error(d, loc, "vectorize: %s of '%s' does not use '%s' as a step of one in "
             "its last index, so its %lld elements are not consecutive",
             bad->kind == IR_STORE ? "the store" : "a load", bad->acc.tensor->name,
             loop, (long long)width);
    return -1;
  }
  l->loop.vec = (int)width;
  return 0;
}
