/* passes/tile.c: tile(f, T) -> (worker, inner), feature tiling.
 *
 * Contract: requires an unbound range loop; spreads its iterations over T
 * workers, each taking every T-th one (GNNAdvisor's dimension workers):
 *
 *   for t in 0..T { for s in 0..ceil(N / T) { if (s * T + t < N) { body } } }
 *
 * with f replaced by s * T + t. The worker loop `t` is outermost so that a
 * schedule can move it out (reorder) and fuse it with a parallel loop; when
 * it is bound, neighbouring workers read neighbouring features, so loads
 * coalesce. T need not divide N: the guard covers the tail.
 */
#include <string.h>

#include "passes/passes.h"

int pass_tile(IrOp *op, const char *loop, int64_t t, const char *outer,
              const char *inner, Loc loc, Arena *a, Diag *d) {
  PassSite site;
  if (!pass_find_loop(op, "tile", loop, &site, loc, a, d)) return -1;
  IrNode *l = site.node;
  if (l->loop.kind != IR_LOOP_RANGE) {
    bool vertex = l->loop.kind == IR_LOOP_DST_V || l->loop.kind == IR_LOOP_SRC_V;
    ir_error(d, loc, "tile: loop '%s' is %s; tile spreads a feature (range) loop "
             "over workers (group spreads vertices and edges)", loop,
             vertex ? "a vertex loop" : "an edge loop");
    return -1;
  }
  if (t < 1) {
    ir_error(d, loc, "tile: the number of workers for loop '%s' must be a "
             "positive integer, not %lld", loop, (long long)t);
    return -1;
  }
  static const char *const roles[2] = {"worker loop", "inner loop"};
  if (!pass_check_unscheduled(l, "tile", loop, loc, d) ||
      !pass_new_loop_names(op, "tile", loop, roles, "ts", &outer, &inner, loc, a, d))
    return -1;

  Loc at = l->loc;
  IrNode *n = l->loop.extent;
  IrVar *vt = pass_new_var(op, a, outer, IR_VAR_INDEX, at);
  IrVar *vs = pass_new_var(op, a, inner, IR_VAR_INDEX, at);
  IrNode *x = pass_add(a, at, pass_mul(a, at, ir_var(a, at, vs), ir_iconst(a, at, t)),
                       ir_var(a, at, vt));
  IrNode *body = l->loop.body;
  pass_subst_stmts(a, body, l->loop.var, x);
  if (!(n->kind == IR_ICONST && n->i % t == 0))
    body = ir_if(a, at, ir_bin(a, at, IR_OP_LT, ir_clone(a, x), ir_clone(a, n)),
                 body);
  IrNode *ls = ir_loop(a, at, vs, IR_LOOP_RANGE, pass_ceildiv(a, at, ir_clone(a, n), t),
                       NULL, body);
  IrNode *lt = ir_loop(a, at, vt, IR_LOOP_RANGE, ir_iconst(a, at, t), NULL, ls);
  lt->loop.threads = l->loop.threads;
  lt->loop.occ = l->loop.occ;
  lt->next = l->next;
  *site.slot = lt;
  return 0;
}
