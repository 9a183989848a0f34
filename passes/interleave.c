/* passes/interleave.c: interleave(loop, classes, distance [, threshold]),
 * MGG's interleaving of work classes across warps.
 *
 * Contract: requires a groups loop (neighbour groups: group(e, G) on the
 * in-edges of a vertex loop) not interleaved yet; marks it
 * `@interleave(distance)` (and `@threshold(t)` when the schedule gives the
 * degree threshold). Breaks nothing: the IR is the same loop nest, only the
 * order of the rows of the group table changes.
 *
 * The work items are the neighbour groups; their class is that of their
 * destination: heavy when its in-degree exceeds the threshold (the
 * schedule's, else the mean degree the runtime computes), light otherwise.
 * runtime/graph_groups.c builds the table with `distance` rows of one class,
 * then `distance` of the other, and so on, so that consecutive warps
 * alternate between long-latency groups (a heavy destination's, contending
 * for its atomics) and short ones. Any order of the groups is legal: every
 * group is still done exactly once, and the only writes two groups share
 * are reductions into a destination (atomic, or flushed from shared
 * memory), whose result does not depend on the order beyond float rounding.
 * A deterministic operator still reorders nothing between runs: the
 * permutation is a function of the graph and the parameters.
 *
 * Two classes are what the table knows (MGG's local and remote neighbours
 * would be a third source of classes, once graphs span GPUs).
 */
#include "passes/passes.h"

int pass_interleave(IrOp *op, const char *loop, int64_t classes,
                    int64_t distance, int64_t threshold, Loc loc, Arena *a,
                    Diag *d) {
  PassSite site;
  if (!pass_find_loop(op, "interleave", loop, &site, loc, a, d)) return -1;
  IrNode *l = site.node;
  if (l->loop.kind != IR_LOOP_GROUPS) {
    ir_error(d, loc, "interleave: loop '%s' is %s loop; interleaving reorders "
             "neighbour groups, whose classes come from the group table: make "
             "them first with group(e, G) on the in-edge loop of a vertex loop",
             loop, l->loop.kind == IR_LOOP_RANGE ? "a range"
                   : l->loop.kind == IR_LOOP_DST_V || l->loop.kind == IR_LOOP_SRC_V
                   ? "a vertex" : "an edge");
    return -1;
  }
  if (classes != 2) {
    ir_error(d, loc, "interleave: loop '%s' cannot be split into %lld classes; "
             "the group table knows two (groups of heavy and of light "
             "destinations, by in-degree)", loop, (long long)classes);
    return -1;
  }
  if (distance < 1 || distance > 1 << 20) {
    ir_error(d, loc, "interleave: the distance of loop '%s' must be an integer "
             "from 1 to 1048576 (groups of one class in a row), not %lld", loop,
             (long long)distance);
    return -1;
  }
  if (threshold < 0 || threshold > INT32_MAX) {
    ir_error(d, loc, "interleave: the degree threshold of loop '%s' must be a "
             "positive integer (0 or none: the mean degree), not %lld", loop,
             (long long)threshold);
    return -1;
  }
  if (l->loop.ilv) {
    ir_error(d, loc, "interleave: loop '%s' is already interleaved at distance "
             "%d", loop, l->loop.ilv);
    return -1;
  }
  l->loop.ilv = (int)distance;
  l->loop.ilv_thr = (int)threshold;
  return 0;
}
