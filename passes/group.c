/* passes/group.c: group(loop, G) -> (outer, inner), V/E grouping and
 * GNNAdvisor's neighbour groups.
 *
 * Contract: requires an unbound vertex loop or flat edge loop; gives G
 * consecutive vertices or edges to each iteration of the outer loop (the
 * one a schedule binds to workers), as uGrapher's vertex and edge grouping:
 * the same loops as split (split.c), with the legality of grouping.
 *
 * On the in-edge loop of a stage's vertex loop it makes neighbour groups
 * (GNNAdvisor): equal-size runs of at most G in-edges of one destination,
 * listed in a table the runtime builds once per graph and G
 * (graph/groups.c). The vertex loop and its edge loop become
 *
 *   for eo in groups(G) { for ei in group_edges(eo) { body } }
 *
 * with e replaced by ei and v by dst(ei), so a destination's groups are
 * separate workers and reductions into it become atomic (conflicts.c), or
 * go through shared memory after promote(eo, shared). That needs the vertex
 * loop to hold nothing but the edge loop (anything else would run once per
 * group), and both loops unbound and unannotated; out-edge loops are
 * refused (the table is built over the CSR by destination). Feature loops
 * are tiled (tile.c) or split, not grouped.
 */
#include <string.h>

#include "passes/passes.h"

/* The names of the group loop and the loop inside a group: given, or
 * LOOPo and LOOPi; two different names no loop of `op` has yet. 0, or -1
 * after reporting. */
static int new_names(const IrOp *op, const char *loop, const char **outer, const char **inner,
                     Loc loc, Arena *a, Diag *d) {
  static const char *const roles[2] = {"group loop", "loop inside a group"};
  return pass_new_loop_names(op, "group", loop, roles, "oi", outer, inner, loc, a, d) ? 0 : -1;
}

static int neighbour_groups(IrOp *op, PassSite *site, const char *loop,
                            int64_t g, const char *outer, const char *inner,
                            Loc loc, Arena *a, Diag *d) {
  IrNode *l = site->node;
  const IrNode *of = l->loop.of;
  IrNode *vl = site->depth == 1 ? site->path[0] : NULL;
  if (!vl || vl->kind != IR_LOOP || vl->loop.kind != IR_LOOP_DST_V ||
      of->kind != IR_VAR || of->var != vl->loop.var) {
    ir_error(d, loc, "group: loop '%s' is not directly inside the vertex loop "
             "of its stage; neighbour groups replace a stage's `for v in dst` "
             "and its in_edges(v) loop", loop);
    return -1;
  }
  const char *vn = vl->loop.var->name;
  if (vl->loop.body != l || l->next) {
    ir_error(d, loc, "group: vertex loop '%s' holds %s besides loop '%s'; "
             "with neighbour groups it would run once per group (move it "
             "to a stage of its own)", vn,
             pass_describe_stmts(a, vl->loop.body, l), loop);
    return -1;
  }
  if (g < 1 || g > 1 << 20) {
    ir_error(d, loc, "group: the group size of loop '%s' must be an integer "
             "from 1 to 1048576, not %lld", loop, (long long)g);
    return -1;
  }
  const IrNode *bad = vl->loop.bind != IR_BIND_NONE || vl->loop.unroll ||
                      vl->loop.vec ? vl
                      : l->loop.bind != IR_BIND_NONE || l->loop.unroll ||
                      l->loop.vec ? l : NULL;
  if (bad) {
    ir_error(d, loc, "group: loop '%s' is already %s; make neighbour groups "
             "before binding or annotating loops '%s' and '%s'",
             bad->loop.var->name,
             bad->loop.bind != IR_BIND_NONE ? "bound" : "annotated", vn, loop);
    return -1;
  }
  if (new_names(op, loop, &outer, &inner, loc, a, d) != 0) return -1;

  /* Legal: the groups loop takes the vertex loop's place. */
  PassSite vsite;
  if (!pass_find_node(op, vl, &vsite)) unreachable("vertex loop not found");
  IrVar *gv = pass_new_var(op, a, outer, IR_VAR_INDEX, vl->loc);
  IrVar *ev = pass_new_var(op, a, inner, IR_VAR_EDGE, l->loc);
  IrNode *body = l->loop.body;
  IrNode *eref = ir_var(a, l->loc, ev);
  pass_subst_stmts(a, body, l->loop.var, eref);
  pass_subst_stmts(a, body, vl->loop.var, ir_endpoint(a, l->loc, IR_DST, eref));
  IrNode *edges = ir_loop(a, l->loc, ev, IR_LOOP_GROUP_EDGES, NULL,
                          ir_var(a, l->loc, gv), body);
  IrNode *groups = ir_loop(a, vl->loc, gv, IR_LOOP_GROUPS, NULL, NULL, edges);
  groups->loop.group = (int)g;
  groups->loop.threads = vl->loop.threads;
  groups->loop.occ = vl->loop.occ;
  groups->next = vl->next;
  *vsite.slot = groups;
  return 0;
}

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
    return neighbour_groups(op, &site, loop, g, outer, inner, loc, a, d);
  case IR_LOOP_OUT_EDGES:
    ir_error(d, loc, "group: loop '%s' runs over the out-edges of vertex '%s'; "
             "neighbour groups are cut from the in-edges of a destination "
             "(CSR by destination); fuse the two loops first to group the "
             "flat edges, or transpose() the operator first (its out-edges then "
             "in-edges of the reversed graph)", loop,
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
  if (!pass_check_unscheduled(l, "group", loop, loc, d)) return -1;
  if (new_names(op, loop, &outer, &inner, loc, a, d) != 0) return -1;
  /* Everything split checks has been checked: it cannot refuse now. */
  if (pass_split(op, loop, g, outer, inner, loc, a, d) != 0)
    unreachable("split refused a legal group");
  return 0;
}
