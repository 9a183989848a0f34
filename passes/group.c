/* passes/group.c: group(loop, G) -> (outer, inner), V/E grouping.
 *
 * Contract: requires an unbound vertex loop or flat edge loop; gives G
 * consecutive vertices or edges to each iteration of the outer loop (the
 * one a schedule binds to workers), as uGrapher's vertex and edge grouping:
 * the same loops as split (split.c), with the legality of grouping. The
 * edges of one vertex (an in_edges loop) would need GNNAdvisor's neighbour
 * groups, equal-size groups that never cross a destination, listed in a
 * group table the runtime builds; the IR has no loop over such a table yet,
 * so that form is refused with a way out (fuse first, then group the flat
 * edges). Feature loops are tiled (tile.c) or split, not grouped.
 */
#include <string.h>

#include "passes/passes.h"

int pass_group(IrOp *op, const char *loop, int64_t g, const char *outer,
               const char *inner, Loc loc, Arena *a, Diag *d) {
  PassSite site;
  if (!pass_find_loop(op, "group", loop, &site, loc, a, d)) return -1;
  const IrNode *l = site.node;
  switch (l->loop.kind) {
  case IR_LOOP_DST_V:
  case IR_LOOP_SRC_V:
  case IR_LOOP_EDGES: break;
  case IR_LOOP_IN_EDGES:
  case IR_LOOP_OUT_EDGES:
    ir_error(d, loc, "group: loop '%s' runs over the %s of vertex '%s'; "
             "neighbour groups need a group table, which is not supported yet; "
             "fuse the two loops first to group the flat edges", loop,
             l->loop.kind == IR_LOOP_IN_EDGES ? "in-edges" : "out-edges",
             l->loop.of->kind == IR_VAR ? l->loop.of->var->name : "?");
    return -1;
  default:
    ir_error(d, loc, "group: loop '%s' is a range loop; group takes a vertex or "
             "edge loop (spread features with tile, or split)", loop);
    return -1;
  }
  if (g < 1) {
    ir_error(d, loc, "group: the group size of loop '%s' must be a positive "
             "integer, not %lld", loop, (long long)g);
    return -1;
  }
  if (l->loop.bind != IR_BIND_NONE) {
    ir_error(d, loc, "group: loop '%s' is already bound to %s; group it before "
             "binding it", loop, ir_bind_name(l->loop.bind));
    return -1;
  }
  if (l->loop.unroll || l->loop.vec) {
    ir_error(d, loc, "group: loop '%s' is marked @%s; group it before that", loop,
             l->loop.unroll ? "unroll" : "vec");
    return -1;
  }
  if (!outer) outer = ir_sprintf(a, "%so", loop);
  if (!inner) inner = ir_sprintf(a, "%si", loop);
  if (strcmp(outer, inner) == 0) {
    ir_error(d, loc, "group: the group loop and the loop inside a group of '%s' "
             "need two different names, not '%s' twice", loop, outer);
    return -1;
  }
  if (!pass_check_new_name(op, "group", outer, "group loop", loop, loc, d) ||
      !pass_check_new_name(op, "group", inner, "loop inside a group", loop, loc, d))
    return -1;
  /* Everything split checks has been checked: it cannot refuse now. */
  if (pass_split(op, loop, g, outer, inner, loc, a, d) != 0)
    unreachable("split refused a legal group");
  return 0;
}
