/* passes/split.c: split(loop, k) -> (outer, inner).
 *
 * Contract: requires an unbound, unannotated range, vertex or flat edge
 * loop; gives
 *
 *   for o in 0..ceil(N / k) { for i in 0..k { if (o * k + i < N) { body } } }
 *
 * with every use of the loop variable replaced by `o * k + i`: the split is
 * kept as the relation TACO keeps (`x = o * k + i`), written into the
 * indices themselves, so later passes (the conflict analysis above all) can
 * recover the original index from what a store writes. The guard covers the
 * tail when k does not divide N; it is left out only when N is a constant
 * multiple of k. Vertex and flat edge loops become range loops over
 * num_vertices() / num_edges(); the edges of one vertex (in_edges,
 * out_edges) have no position in the IR and cannot be split.
 */
#include <string.h>

#include "passes/passes.h"

int pass_split(IrOp *op, const char *loop, int64_t factor, const char *outer,
               const char *inner, Loc loc, Arena *a, Diag *d) {
  PassSite site;
  if (!pass_find_loop(op, "split", loop, &site, loc, a, d)) return -1;
  IrNode *l = site.node;
  if (factor < 1) {
    ir_error(d, loc, "split: the factor of loop '%s' must be a positive "
             "integer, not %lld", loop, (long long)factor);
    return -1;
  }
  if (!pass_check_unscheduled(l, "split", loop, loc, d)) return -1;
  if (l->loop.kind == IR_LOOP_IN_EDGES || l->loop.kind == IR_LOOP_OUT_EDGES) {
    ir_error(d, loc, "split: loop '%s' runs over the %s of one vertex, which "
             "have no positions to split by; fuse the vertex loop with it "
             "first (fuse(v, %s)) and split the flat edge loop", loop,
             l->loop.kind == IR_LOOP_IN_EDGES ? "in-edges" : "out-edges", loop);
    return -1;
  }
  if (l->loop.kind != IR_LOOP_RANGE && l->loop.kind != IR_LOOP_SRC_V &&
      l->loop.kind != IR_LOOP_DST_V && l->loop.kind != IR_LOOP_EDGES) {
    ir_error(d, loc, "split: loop '%s' runs over %s, whose positions are known "
             "only through a neighbour-group table at run time; split the "
             "loops before group(), or choose another G", loop,
             ir_loopkind_name(l->loop.kind));
    return -1;
  }
  static const char *const roles[2] = {"outer loop", "inner loop"};
  if (!pass_new_loop_names(op, "split", loop, roles, "oi", &outer, &inner, loc, a, d))
    return -1;

  /* Legal: build the two loops around the old body. */
  Loc at = l->loc;
  IrNode *n = pass_loop_extent(a, l);
  IrVar *vo = pass_new_var(op, a, outer, IR_VAR_INDEX, at);
  IrVar *vi = pass_new_var(op, a, inner, IR_VAR_INDEX, at);
  IrNode *k = ir_iconst(a, at, factor);
  IrNode *x = pass_add(a, at, pass_mul(a, at, ir_var(a, at, vo), k),
                       ir_var(a, at, vi));
  IrNode *body = l->loop.body;
  pass_subst_stmts(a, body, l->loop.var, x);
  bool exact = n->kind == IR_ICONST && n->i % factor == 0;
  if (!exact)
    body = ir_if(a, at, ir_bin(a, at, IR_OP_LT, ir_clone(a, x), ir_clone(a, n)),
                 body);
  IrNode *li = ir_loop(a, at, vi, IR_LOOP_RANGE, ir_iconst(a, at, factor), NULL,
                       body);
  IrNode *lo = ir_loop(a, at, vo, IR_LOOP_RANGE, pass_ceildiv(a, at, n, factor),
                       NULL, li);
  lo->loop.threads = l->loop.threads; /* the stage's block size stays on top */
  lo->loop.occ = l->loop.occ;         /* and its occupancy */
  lo->next = l->next;
  *site.slot = lo;
  return 0;
}
