/* passes/fuse.c: fuse(outer, inner) -> (result).
 *
 * Contract: requires `inner` to be the only statement of `outer`, both
 * unbound; gives one loop. Two forms, told apart by the loops' kinds:
 *
 *   A vertex loop and its edge loop, the step from vertex-parallel to
 *   edge-parallel (uGrapher's thread/warp-edge, fuseGNN's GAS):
 *     for v in dst { for e in in_edges(v) { body } }
 *       => for e in edges { body[v := dst(e)] }
 *   (and `for u in src { for e in out_edges(u) }` with u := src(e)). Every
 *   edge is visited once either way and in edge-id order for a given vertex,
 *   so the sum into one element adds the same terms in the same order. Any
 *   use of v can become dst(e): inside in_edges(v) they are the same vertex.
 *
 *   Two loops with fixed bounds (range, vertex or flat edge loops; the inner
 *   one a range whose extent does not read the outer variable), as TVM's
 *   fuse: for o in 0..A { for i in 0..B { body } }
 *       => for w in 0..A * B { body[o := w / B, i := w % B] }
 *   so that neighbouring workers of a bound `w` take neighbouring `i`.
 *   A guard between the two (`for o { if (c) { for i ... } }`, the guard
 *   group leaves on a vertex group) moves inside i first: c does not use i.
 */
#include <string.h>

#include "passes/passes.h"

static bool fixed_bounds(const IrNode *l) {
  return l->loop.kind == IR_LOOP_RANGE || l->loop.kind == IR_LOOP_DST_V ||
         l->loop.kind == IR_LOOP_SRC_V || l->loop.kind == IR_LOOP_EDGES;
}

static bool vertex_and_edges(const IrNode *o, const IrNode *i) {
  if (!i->loop.of || i->loop.of->kind != IR_VAR || i->loop.of->var != o->loop.var)
    return false;
  return (o->loop.kind == IR_LOOP_DST_V && i->loop.kind == IR_LOOP_IN_EDGES) ||
         (o->loop.kind == IR_LOOP_SRC_V && i->loop.kind == IR_LOOP_OUT_EDGES);
}

int pass_fuse(IrOp *op, const char *outer, const char *inner,
              const char *result, Loc loc, Arena *a, Diag *d) {
  PassSite so, si;
  if (!pass_find_loop(op, "fuse", outer, &so, loc, a, d) ||
      !pass_find_loop(op, "fuse", inner, &si, loc, a, d))
    return -1;
  IrNode *o = so.node, *i = si.node;
  if (o == i) {
    ir_error(d, loc, "fuse: loop '%s' cannot be fused with itself", outer);
    return -1;
  }
  if (!pass_check_unscheduled(o, "fuse", outer, loc, d) ||
      !pass_check_unscheduled(i, "fuse", inner, loc, d))
    return -1;
  bool edges = vertex_and_edges(o, i);
  bool in_body = false; /* one of the statements of `outer` */
  for (const IrNode *s = o->loop.body; s; s = s->next) in_body |= s == i;
  bool direct = o->loop.body == i && !i->next;
  /* for o { if (c) { for i { body } } }: c cannot use i, so it moves into
   * i's body and the two loops become adjacent (group's guard on a vertex
   * group, before the vertices of a warp are fused with its lanes). */
  IrNode *guard = o->loop.body;
  bool guarded = !edges && guard && guard->kind == IR_IF && !guard->next &&
                 guard->ifs.then == i && !i->next;
  direct |= guarded;
  if (edges && !direct) {
    if (!in_body)
      ir_error(d, loc, "fuse: '%s' is not the edge loop directly inside vertex "
               "loop '%s'", inner, outer);
    else
      ir_error(d, loc, "fuse: vertex loop '%s' holds %s besides its edge loop "
               "'%s'", outer, pass_describe_stmts(a, o->loop.body, i), inner);
    return -1;
  }
  if (!edges) {
    bool pair = fixed_bounds(o) && i->loop.kind == IR_LOOP_RANGE;
    if (!pair) {
      if (i->loop.kind == IR_LOOP_IN_EDGES || i->loop.kind == IR_LOOP_OUT_EDGES)
        ir_error(d, loc, "fuse: '%s' is not the edge loop of vertex loop '%s' "
                 "(it runs over the edges of another vertex)", inner, outer);
      else
        ir_error(d, loc, "fuse: '%s' and '%s' are neither a vertex loop and its "
                 "edge loop nor two loops with fixed bounds (a range, vertex or "
                 "flat edge loop holding a range loop)", outer, inner);
      return -1;
    }
    if (!direct) {
      if (in_body)
        ir_error(d, loc, "fuse: loop '%s' holds %s besides loop '%s'", outer,
                 pass_describe_stmts(a, o->loop.body, i), inner);
      else
        ir_error(d, loc, "fuse: loop '%s' is not directly inside loop '%s'",
                 inner, outer);
      return -1;
    }
    if (ir_uses_var(i->loop.extent, o->loop.var)) {
      ir_error(d, loc, "fuse: the extent of loop '%s' depends on loop '%s'",
               inner, outer);
      return -1;
    }
  }

  Loc at = o->loc;
  if (guarded) {
    guard->ifs.then = i->loop.body;
    i->loop.body = guard;
    o->loop.body = i;
  }
  IrNode *fused;
  if (edges) {
    /* The edge loop keeps its variable unless renamed. */
    IrVar *e = i->loop.var;
    if (result && strcmp(result, inner) != 0) {
      if (!pass_check_new_name(op, "fuse", result, "fused loop", outer, loc, d))
        return -1;
      e = pass_new_var(op, a, result, IR_VAR_EDGE, at);
      pass_subst_stmts(a, i->loop.body, i->loop.var, ir_var(a, at, e));
    }
    IrKind end = o->loop.kind == IR_LOOP_DST_V ? IR_DST : IR_SRC;
    pass_subst_stmts(a, i->loop.body, o->loop.var,
                     ir_endpoint(a, at, end, ir_var(a, at, e)));
    fused = ir_loop(a, at, e, IR_LOOP_EDGES, NULL, NULL, i->loop.body);
  } else {
    if (!result) result = ir_sprintf(a, "%s%s", outer, inner);
    /* the fused loop may keep either loop's name: fuse(h, f) -> (f) */
    if (strcmp(result, inner) != 0 &&
        !pass_check_new_name(op, "fuse", result, "fused loop", outer, loc, d))
      return -1;
    IrVar *w = pass_new_var(op, a, result, IR_VAR_INDEX, at);
    IrNode *b = i->loop.extent;
    IrNode *ext = pass_mul(a, at, pass_loop_extent(a, o), ir_clone(a, b));
    pass_subst_stmts(a, i->loop.body, o->loop.var,
                     pass_div(a, at, ir_var(a, at, w), ir_clone(a, b)));
    pass_subst_stmts(a, i->loop.body, i->loop.var,
                     pass_mod(a, at, ir_var(a, at, w), ir_clone(a, b)));
    fused = ir_loop(a, at, w, IR_LOOP_RANGE, ext, NULL, i->loop.body);
  }
  fused->loop.threads = o->loop.threads;
  fused->loop.occ = o->loop.occ;
  fused->next = o->next;
  *so.slot = fused;
  return 0;
}
