/* passes/transpose.c: transpose(), an operator run on the reversed graph.
 *
 * Contract: requires an operator whose loops are still as written (nothing
 * split, bound or annotated yet: transpose comes first in a schedule);
 * gives the same operator with the roles of sources and destinations
 * exchanged everywhere, marked IrOp.transposed:
 *
 *   for v in src { for e in out_edges(v) { dX[v, f] += dY[dst(e), f] * W[e] } }
 *
 * becomes
 *
 *   for v in dst { for e in in_edges(v) { dX[v, f] += dY[src(e), f] * W[e] } }
 *
 * (loops `src` <-> `dst` and `in_edges` <-> `out_edges`, endpoints src(e)
 * <-> dst(e), in_degree <-> out_degree, tensors on src rows <-> dst rows).
 * Edge ids are untouched. Run on the reversed graph G^T (every arc u -> v
 * of G as v -> u, with the same edge id: graph_transposed), it computes
 * exactly what the operator computes on G, since an in-edge of v in G^T
 * is an out-edge of v in G. The runtime and the interpreter read
 * IrOp.transposed (CgProgram.transposed for a compiled program) and run
 * on G^T; the user's tensors keep their meaning.
 *
 * What it is for: an operator that walks out-edges (the derived gradient
 * of a sum, dX[u] over u's out-edges) can take only row schedules, since
 * neighbour groups are cut from the in-edges of a destination
 * (group.c); transposed, its edge loop walks in-edges and every schedule
 * of a forward aggregation applies (spmm_teams, spmm_groups, ...), with
 * the group tables built over G^T, which is G's CSC by source.
 *
 * Edge ids of G^T are not its CSR positions (they are G's), so a
 * transposed program is compiled to load them (CgLayout.csr_edges off).
 * A graph built on the device (Graph.device_only) has no host arrays to
 * reverse: a transposed operator is refused there, by the runtime.
 */
#include "passes/passes.h"

static IrDomain swap_domain(IrDomain d) {
  return d == IR_DOM_SRC ? IR_DOM_DST : d == IR_DOM_DST ? IR_DOM_SRC : d;
}

/* Refuses (reported) anything a schedule has done to the loops. */
static bool unscheduled(const IrNode *n, Loc loc, Diag *d) {
  for (; n; n = n->next) {
    const IrNode *body = NULL;
    if (n->kind == IR_LOOP) {
      switch (n->loop.kind) {
      case IR_LOOP_RANGE: case IR_LOOP_SRC_V: case IR_LOOP_DST_V:
      case IR_LOOP_IN_EDGES: case IR_LOOP_OUT_EDGES: case IR_LOOP_EDGES: break;
      default:
        ir_error(d, loc, "transpose: loop '%s' is already a %s loop; transpose the "
                 "operator before any other directive", n->loop.var->name,
                 ir_loopkind_name(n->loop.kind));
        return false;
      }
      if (!pass_check_unscheduled(n, "transpose", n->loop.var->name, loc, d)) return false;
      if (n->loop.team || n->loop.threads || n->loop.occ || n->loop.prefetch) {
        ir_error(d, loc, "transpose: loop '%s' is already scheduled; transpose the "
                 "operator before any other directive", n->loop.var->name);
        return false;
      }
      body = n->loop.body;
    } else if (n->kind == IR_IF) {
      body = n->ifs.then;
    }
    if (body && !unscheduled(body, loc, d)) return false;
  }
  return true;
}

static void swap_expr(IrNode *e, IrVar *const *var_of);

static void swap_stmts(IrNode *n, IrVar *const *var_of) {
  for (; n; n = n->next) {
    switch (n->kind) {
    case IR_LOOP: {
      IrLoopKind k = n->loop.kind;
      n->loop.kind = k == IR_LOOP_SRC_V      ? IR_LOOP_DST_V
                     : k == IR_LOOP_DST_V    ? IR_LOOP_SRC_V
                     : k == IR_LOOP_IN_EDGES ? IR_LOOP_OUT_EDGES
                     : k == IR_LOOP_OUT_EDGES ? IR_LOOP_IN_EDGES
                                              : k;
      if (var_of[n->loop.var->id]) n->loop.var = var_of[n->loop.var->id];
      swap_expr(n->loop.extent, var_of);
      swap_expr(n->loop.of, var_of);
      swap_stmts(n->loop.body, var_of);
      break;
    }
    case IR_STORE:
      for (int i = 0; i < n->acc.nidx; i++) swap_expr(n->acc.idx[i], var_of);
      swap_expr(n->acc.value, var_of);
      break;
    case IR_LET: swap_expr(n->let.init, var_of); break;
    case IR_SET: swap_expr(n->set.value, var_of); break;
    case IR_IF:
      swap_expr(n->ifs.cond, var_of);
      swap_stmts(n->ifs.then, var_of);
      break;
    default: break;
    }
  }
}

static void swap_slot(IrNode **slot, void *var_of) {
  IrNode *e = *slot;
  if (!e) return;
  IrVar *const *vars = var_of;
  switch (e->kind) {
  case IR_VAR:
    if (vars[e->var->id]) e->var = vars[e->var->id];
    return;
  case IR_SRC: e->kind = IR_DST; break;
  case IR_DST: e->kind = IR_SRC; break;
  case IR_INDEG: e->kind = IR_OUTDEG; break;
  case IR_OUTDEG: e->kind = IR_INDEG; break;
  default: break;
  }
  ir_each_operand(e, swap_slot, var_of);
}

static void swap_expr(IrNode *e, IrVar *const *var_of) { swap_slot(&e, (void *)var_of); }

int pass_transpose(IrOp *op, Loc loc, Arena *a, Diag *d) {
  if (!unscheduled(op->body, loc, d)) return -1;
  for (int i = 0; i < op->ntensors; i++)
    if (op->tensors[i]->domain == IR_DOM_GROUPS) {
      ir_error(d, loc, "transpose: tensor '%s' has a row per neighbour group; transpose "
               "the operator before any other directive", op->tensors[i]->name);
      return -1;
    }
  /* Tensors and variables are shared with the operator's other copies
   * (pass_op_copy): those whose role changes get copies of their own. */
  for (int i = 0; i < op->ntensors; i++) {
    IrTensor *t = op->tensors[i];
    if (t->domain == IR_DOM_SRC || t->domain == IR_DOM_DST)
      pass_own_tensor(op, t, a)->domain = swap_domain(t->domain);
  }
  IrVar **var_of = IR_NEW_ARRAY(a, IrVar *, op->nvars + 1);
  for (int i = 0; i < op->nvars; i++) {
    IrVar *v = op->vars[i];
    var_of[i] = NULL;
    if (v->kind != IR_VAR_SRC_V && v->kind != IR_VAR_DST_V) continue;
    IrVar *c = IR_NEW(a, IrVar);
    *c = *v;
    c->kind = v->kind == IR_VAR_SRC_V ? IR_VAR_DST_V : IR_VAR_SRC_V;
    op->vars[i] = var_of[i] = c;
  }
  swap_stmts(op->body, var_of);
  op->transposed = !op->transposed;
  return 0;
}
