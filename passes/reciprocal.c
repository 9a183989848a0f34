/* passes/reciprocal.c: a division by what the feature loop does not change
 * becomes a multiplication by its reciprocal.
 *
 * Contract: requires nothing; breaks nothing (an expression rewrite: no
 * loop, store or local is added, so nests stay as scheduling left them).
 *
 * Inside an edge loop (a vertex's edges, a neighbour group's, or a flat
 * range loop over num_edges()), a floating-point term of a sum (the value
 * of a `+=` store or of a register's `+=`) `a / b`, where `a` uses the
 * variable of an enclosing range loop (a feature loop, its lanes, its @vec
 * copies) and `b` does not, becomes `a * (1.0 / b)`. A local declared
 * inside a range loop counts as varying with it (a register holding one
 * feature's sum). The code generator emits an expression per @vec copy and
 * per unrolled feature; equal `1.0 / b` of those copies are one value to
 * LLVM, and a sequential feature loop around it is left with a reciprocal
 * LLVM can compute before the loop. The mean's gradient on the reversed
 * graph,
 *
 *   dX[v, f] += dY[src(e), f] / out_degree(src(e))
 *
 * becomes `dY[src(e), f] * (1.0 / out_degree(src(e)))`: one reciprocal per
 * edge for a lane's 4 or 8 features instead of a full-precision division
 * per feature (div.rn.f32 is a dozen instructions; on an H200 the
 * gradient got 1.13-1.87x faster, bench/NOTES.md).
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
 */
#include "passes/passes.h"

typedef struct Rcp {
  Arena *a;
  const IrVar *ranges[PASS_MAX_DEPTH * 2]; /* enclosing range loops' vars */
  int n;
  int *depth; /* by var id: a local's number of enclosing range loops */
  int nvars;
  int edges; /* enclosing edge loops */
} Rcp;

typedef struct Uses {
  const Rcp *r;
  int i;
} Uses;

/* A use of range loop i's variable, or of a local declared inside that
 * loop (a reduction's register holds one feature's value: it varies). */
static bool hit_range(const IrNode *n, void *ctx) {
  const Uses *u = ctx;
  if (n->kind != IR_VAR) return false;
  int id = n->var->id;
  return n->var == u->r->ranges[u->i] || (id >= 0 && id < u->r->nvars && u->r->depth[id] > u->i);
}

/* Whether some enclosing range loop varies x and not y. */
static bool varies_apart(const Rcp *r, const IrNode *x, const IrNode *y) {
  for (int i = 0; i < r->n; i++) {
    Uses u = {r, i};
    if (ir_any(x, hit_range, &u) && !ir_any(y, hit_range, &u)) return true;
  }
  return false;
}

/* A flat edge loop's extent: `for w in 0..num_edges()` (split or not). */
static bool is_num_edges(const IrNode *n, void *ctx) {
  (void)ctx;
  return n->kind == IR_NE;
}

static void rcp_expr(Rcp *r, IrNode **slot) {
  IrNode *e = *slot;
  if (!e) return;
  switch (e->kind) {
  case IR_LOAD:
    for (int i = 0; i < e->acc.nidx; i++) rcp_expr(r, &e->acc.idx[i]);
    return;
  case IR_BIN:
    rcp_expr(r, &e->bin.a);
    rcp_expr(r, &e->bin.b);
    if (e->bin.op == IR_OP_DIV && e->type == IR_TY_FLOAT && r->edges > 0 &&
        varies_apart(r, e->bin.a, e->bin.b)) {
      IrNode *inv = ir_bin(r->a, e->loc, IR_OP_DIV, ir_fconst(r->a, e->loc, 1.0), e->bin.b);
      *slot = ir_bin(r->a, e->loc, IR_OP_MUL, e->bin.a, inv);
    }
    return;
  case IR_UN: rcp_expr(r, &e->un.a); return;
  case IR_CALL:
    for (int i = 0; i < e->call.nargs; i++) rcp_expr(r, &e->call.args[i]);
    return;
  case IR_SRC: case IR_DST: case IR_INDEG: case IR_OUTDEG:
    rcp_expr(r, &e->endpoint.e);
    return;
  default: return;
  }
}

static void rcp_list(Rcp *r, IrNode *list) {
  for (IrNode *s = list; s; s = s->next) {
    switch (s->kind) {
    case IR_LOOP: {
      IrLoopKind k = s->loop.kind;
      bool range = k == IR_LOOP_RANGE && r->n < PASS_MAX_DEPTH * 2;
      bool edge = k == IR_LOOP_IN_EDGES || k == IR_LOOP_OUT_EDGES || k == IR_LOOP_EDGES ||
                  k == IR_LOOP_GROUP_EDGES || (range && ir_any(s->loop.extent, is_num_edges, NULL));
      if (range) r->ranges[r->n++] = s->loop.var;
      r->edges += edge;
      rcp_list(r, s->loop.body);
      r->edges -= edge;
      if (range) r->n--;
      break;
    }
    case IR_IF: rcp_list(r, s->ifs.then); break;
    case IR_STORE:
      if (s->acc.red == IR_RED_ADD) rcp_expr(r, &s->acc.value);
      break;
    case IR_LET:
      if (s->let.var->id >= 0 && s->let.var->id < r->nvars) r->depth[s->let.var->id] = r->n;
      break;
    case IR_SET:
      if (s->set.red == IR_RED_ADD) rcp_expr(r, &s->set.value);
      break;
    default: break;
    }
  }
}

int pass_reciprocal(IrOp *op, Arena *a, Diag *d) {
  (void)d;
  Rcp r = {.a = a, .nvars = op->nvars, .depth = ir_alloc(a, sizeof(int) * (size_t)(op->nvars + 1))};
  for (int i = 0; i < op->nvars; i++) r.depth[i] = 0;
  rcp_list(&r, op->body);
  return 0;
}
