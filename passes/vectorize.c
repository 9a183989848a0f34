/* passes/vectorize.c: vectorize(loop, 2 | 4 | 8), 8- to 32-byte feature accesses.
 *
 * Contract: requires an unbound range loop of exactly 2, 4 or 8 iterations
 * (8 when every tensor it indexes has elements of at most 4 bytes: 16 bytes
 * of f16 or bf16, or 32 bytes of f32, two 16-byte accesses)
 * (what split(f, 4) makes of a feature loop) whose variable is used by
 * every tensor access only as the last index plus one: `X[u, fo * 4 + fv]`
 * reads 4 consecutive floats for fv = 0..3. Sequential loops inside it are
 * allowed when their bounds do not use it (`for e in in_edges(v)` around a
 * promoted accumulator: code generation then keeps n sums in a vector
 * register across the edges). Marks it @vec(n), which code generation
 * (codegen/vector.c) turns into 8- or 16-byte loads and stores behind a
 * run-time test (aligned rows: F a multiple of n; tail guards true for the
 * whole vector), with the scalar loop as fallback; breaks nothing.
 */
#include <string.h>

#include "passes/passes.h"

/* Whether `e` is `v`, or `x + w` / `w + x` with x free of v and w such an
 * expression (`fo * 128 + (fl * 4 + fv)`, what two splits write). */
static bool unit_stride(const IrNode *e, const IrVar *v) {
  if (e->kind == IR_VAR) return e->var == v;
  if (e->kind != IR_BIN || e->bin.op != IR_OP_ADD) return false;
  const IrNode *x = e->bin.a, *y = e->bin.b;
  bool in_x = ir_uses_var(x, v), in_y = ir_uses_var(y, v);
  return in_x != in_y && unit_stride(in_x ? x : y, v);
}

/* The first access under `n` that reads `v` other than with unit stride in
 * its last index (and, when `half`, one of a tensor whose elements are
 * wider than 4 bytes). */
static const IrNode *bad_access(const IrNode *n, const IrVar *v, bool half) {
  for (; n; n = n->next) {
    const IrNode *r = NULL;
    switch (n->kind) {
    case IR_STORE:
    case IR_LOAD:
      for (int i = 0; i < n->acc.nidx; i++) {
        const IrNode *ix = n->acc.idx[i];
        bool last = i == n->acc.nidx - 1;
        if (ir_uses_var(ix, v) && (!last || !unit_stride(ix, v))) return n;
        if (half && last && ir_uses_var(ix, v) && ir_dtype_bytes(n->acc.tensor->dtype) > 4)
          return n;
        if ((r = bad_access(ix, v, half))) return r;
      }
      if (n->kind == IR_STORE && (r = bad_access(n->acc.value, v, half))) return r;
      break;
    case IR_LET: r = bad_access(n->let.init, v, half); break;
    case IR_SET: r = bad_access(n->set.value, v, half); break;
    case IR_IF: r = bad_access(n->ifs.then, v, half); break;
    case IR_LOOP: r = bad_access(n->loop.body, v, half); break;
    case IR_BIN:
      if (!(r = bad_access(n->bin.a, v, half))) r = bad_access(n->bin.b, v, half);
      break;
    case IR_UN: r = bad_access(n->un.a, v, half); break;
    case IR_CALL:
      for (int i = 0; i < n->call.nargs && !r; i++) r = bad_access(n->call.args[i], v, half);
      break;
    default: break;
    }
    if (r) return r;
  }
  return NULL;
}

/* A loop under `list` that is bound or vectorised, or whose bounds use v. */
static const IrNode *bad_loop(const IrNode *list, const IrVar *v) {
  for (const IrNode *s = list; s; s = s->next) {
    const IrNode *r = NULL;
    if (s->kind == IR_LOOP) {
      if (s->loop.bind != IR_BIND_NONE || s->loop.vec ||
          (s->loop.extent && ir_uses_var(s->loop.extent, v)) ||
          (s->loop.of && ir_uses_var(s->loop.of, v)))
        return s;
      r = bad_loop(s->loop.body, v);
    }
    if (s->kind == IR_IF) r = bad_loop(s->ifs.then, v);
    if (r) return r;
  }
  return NULL;
}

int pass_vectorize(IrOp *op, const char *loop, int64_t width, Loc loc, Arena *a,
                   Diag *d) {
  PassSite site;
  if (!pass_find_loop(op, "vectorize", loop, &site, loc, a, d)) return -1;
  IrNode *l = site.node;
  if (width != 2 && width != 4 && width != 8) {
    ir_error(d, loc, "vectorize: loop '%s' can be vectorised by 2, 4 or 8 (8, 16 "
             "or 32 bytes of f32), not %lld", loop, (long long)width);
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
  const IrNode *inner = bad_loop(l->loop.body, l->loop.var);
  if (inner) {
    ir_error(d, loc, "vectorize: loop '%s' holds loop '%s', which is %s; only "
             "sequential loops whose bounds do not use '%s' may be inside a "
             "vectorised loop", loop, inner->loop.var->name,
             inner->loop.bind != IR_BIND_NONE ? "bound to the hardware"
             : inner->loop.vec                ? "vectorised itself"
                                              : "bounded by it",
             loop);
    return -1;
  }
  const IrNode *bad = bad_access(l->loop.body, l->loop.var, false);
  if (!bad && width == 8 && (bad = bad_access(l->loop.body, l->loop.var, true))) {
    ir_error(d, loc, "vectorize: loop '%s' by 8 takes tensors of at most 4-byte "
             "elements (8 of them: 16 or 32 bytes), and '%s' is %s: vectorise it by 4",
             loop, bad->acc.tensor->name,
             ir_dtype_name(bad->acc.tensor->dtype));
    return -1;
  }
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
