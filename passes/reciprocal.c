/* passes/reciprocal.c: a division by what a loop does not change becomes
 * a multiplication by its reciprocal, computed once for the loop.
 *
 * Contract: requires nothing; breaks nothing (an expression rewrite: no
 * loop, store or local is added, so nests stay as scheduling left them).
 *
 * Inside an edge loop (a vertex's edges, a neighbour group's, or a flat
 * range loop over num_edges()), a floating-point term of a sum (the value
 * of a `+=` store or of a register's `+=`) `a / b` becomes `a * (1.0 / b)`
 * when some loop one thread runs (sequential, @vec or @unroll: not one
 * bound to threads or lanes, whose workers would each compute it anyway)
 * changes `a` and not `b`. Changing means using the loop's variable or
 * something declared inside the loop (an inner loop's variable, a
 * register), except: the endpoint an edge loop fixes (dst(e) of in_edges
 * and of a neighbour group's edges, src(e) of out_edges) does not change
 * along it, and a @vec loop's copies run its inner loops in step (only
 * its variable and its locals change between copies). Then equal
 * `1.0 / b` of a @vec loop's copies are one value to LLVM, and a
 * sequential loop's is computed before the loop (LLVM hoists it). Two
 * cases this is for:
 *
 *   the mean's gradient on the reversed graph, a lane's 4 or 8 features:
 *     dX_acc += dY[src(e), .. fv] / out_degree(src(e))
 *       -> dY[src(e), .. fv] * (1.0 / out_degree(src(e)))
 *     one rcp.rn.f32 per edge for the copies, not a div.rn.f32 each;
 *   GAT's weighted sum over a neighbour group's edges:
 *     Y_acc += exp(..) / D[dst(ei), h] * Z[src(ei), h, f]
 *       -> exp(..) * (1.0 / D[dst(ei), h]) * Z[..]
 *     one reciprocal for the group before its edge loop.
 *
 * Precision: the quotient is rounded twice (the reciprocal, then the
 * product): within 1.5 units in the last place of the exact quotient,
 * where a division is within 0.5; a divisor so small that its reciprocal
 * overflows (below 2^-126 in f32) gives an infinity where the quotient
 * might have been finite. Zero, infinite and NaN divisors give what the
 * division gives. Left exact: a value that is assigned, compared (a
 * guard) or reduced by max=/min= (it may be compared for equality with
 * the same expression elsewhere: a max's gradient recomputes the forward's
 * quotient to find the argmax), divisions outside edge loops (the mean's
 * finalisation, once per element of Y, not per edge), integer division.
 * Whether a reciprocal is shared decides only whether to rewrite: the
 * rewritten value is the same wherever it is computed.
 */
#include "passes/passes.h"

typedef struct Rcp {
  Arena *a;
  const IrNode *loops[PASS_MAX_DEPTH * 2]; /* the enclosing loops */
  int n;
  int *depth; /* by var id: 1 + the index in loops of the innermost loop a
                 local or loop variable is declared in (0: outside all) */
  int nvars;
  int edges; /* enclosing edge loops */
} Rcp;

/* The endpoint an edge loop fixes: dst(e) of `in_edges(v)` and of a
 * neighbour group's edges (all its in-edges share one destination),
 * src(e) of `out_edges(u)`. */
static bool fixed_end(const IrNode *loop, IrKind end) {
  IrLoopKind k = loop->loop.kind;
  return end == IR_DST ? k == IR_LOOP_IN_EDGES || k == IR_LOOP_GROUP_EDGES
                       : k == IR_LOOP_OUT_EDGES;
}

typedef struct Vary {
  const Rcp *r;
  int i;
  bool hit;
} Vary;

static bool varies(const Rcp *r, const IrNode *x, int i);

static void vary_operand(IrNode **slot, void *ctx) {
  Vary *v = ctx;
  v->hit = v->hit || varies(v->r, *slot, v->i);
}

/* Whether x may change from one iteration of loop i to the next: it uses
 * the loop's variable or something declared inside the loop (a register
 * holding one feature's value, an inner loop's variable), except the
 * endpoint the loop fixes. */
static bool varies(const Rcp *r, const IrNode *x, int i) {
  if (!x) return false;
  switch (x->kind) {
  case IR_VAR: {
    int id = x->var->id;
    if (x->var == r->loops[i]->loop.var) return true;
    if (id < 0 || id >= r->nvars || r->depth[id] <= i) return false;
    /* a @vec loop's copies run its inner loops in step: an inner loop's
       variable is the same in every copy, a local is each copy's own */
    return !r->loops[i]->loop.vec || x->var->kind == IR_VAR_LOCAL;
  }
  case IR_SRC: case IR_DST: {
    const IrNode *e = x->endpoint.e;
    if (e->kind == IR_VAR && e->var == r->loops[i]->loop.var && fixed_end(r->loops[i], x->kind))
      return false;
    break;
  }
  default: break;
  }
  Vary v = {r, i, false};
  ir_each_operand((IrNode *)x, vary_operand, &v);
  return v.hit;
}

/* Whether some enclosing loop that one thread runs (sequential, @vec or
 * @unroll; not one bound to threads or lanes, whose workers would each
 * compute the reciprocal anyway) varies x and not y: then the reciprocal
 * of y is one value for its iterations or copies. */
static bool varies_apart(const Rcp *r, const IrNode *x, const IrNode *y) {
  for (int i = 0; i < r->n; i++)
    if (r->loops[i]->loop.bind == IR_BIND_NONE && varies(r, x, i) && !varies(r, y, i))
      return true;
  return false;
}

/* A flat edge loop's extent: `for w in 0..num_edges()` (split or not). */
static bool is_num_edges(const IrNode *n, void *ctx) {
  (void)ctx;
  return n->kind == IR_NE;
}

static void rcp_expr(IrNode **slot, void *ctx) {
  Rcp *r = ctx;
  IrNode *e = *slot;
  if (!e) return;
  ir_each_operand(e, rcp_expr, r);
  if (e->kind == IR_BIN && e->bin.op == IR_OP_DIV && e->type == IR_TY_FLOAT && r->edges > 0 &&
      varies_apart(r, e->bin.a, e->bin.b)) {
    IrNode *inv = ir_bin(r->a, e->loc, IR_OP_DIV, ir_fconst(r->a, e->loc, 1.0), e->bin.b);
    *slot = ir_bin(r->a, e->loc, IR_OP_MUL, e->bin.a, inv);
  }
}

static void rcp_list(Rcp *r, IrNode *list) {
  for (IrNode *s = list; s; s = s->next) {
    switch (s->kind) {
    case IR_LOOP: {
      IrLoopKind k = s->loop.kind;
      bool edge = k == IR_LOOP_IN_EDGES || k == IR_LOOP_OUT_EDGES || k == IR_LOOP_EDGES ||
                  k == IR_LOOP_GROUP_EDGES ||
                  (k == IR_LOOP_RANGE && ir_any(s->loop.extent, is_num_edges, NULL));
      bool kept = r->n < PASS_MAX_DEPTH * 2;
      int id = s->loop.var->id;
      if (kept) {
        r->loops[r->n++] = s;
        if (id >= 0 && id < r->nvars) r->depth[id] = r->n;
      }
      r->edges += edge;
      rcp_list(r, s->loop.body);
      r->edges -= edge;
      if (kept) r->n--;
      break;
    }
    case IR_IF: rcp_list(r, s->ifs.then); break;
    case IR_STORE:
      if (s->acc.red == IR_RED_ADD) rcp_expr(&s->acc.value, r);
      break;
    case IR_LET:
      if (s->let.var->id >= 0 && s->let.var->id < r->nvars) r->depth[s->let.var->id] = r->n;
      break;
    case IR_SET:
      if (s->set.red == IR_RED_ADD) rcp_expr(&s->set.value, r);
      break;
    default: break;
    }
  }
}

int pass_reciprocal(IrOp *op, Arena *a, Diag *d) {
  (void)d;
  /* ir_alloc zeroes: every variable starts outside all loops */
  Rcp r = {.a = a, .nvars = op->nvars, .depth = ir_alloc(a, sizeof(int) * (size_t)(op->nvars + 1))};
  rcp_list(&r, op->body);
  return 0;
}
