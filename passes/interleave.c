/* passes/interleave.c: interleave(loop, classes, distance [, threshold]),
 * MGG's interleaving of work classes across warps.
 *
 * Contract: requires a groups loop (neighbour groups: group(e, G) on the
 * in-edges of a vertex loop) not interleaved yet; marks it
 * `@interleave(distance)`, `@classes(K)` when K is not 2, and
 * `@threshold(t)` when the schedule gives the degree threshold of two
 * classes. Breaks nothing: the IR is the same loop nest, only the order of
 * the rows of the group table changes.
 *
 * The work items are the neighbour groups; their class is that of their
 * destination, by in-degree. With two classes (MGG's): heavy when the
 * in-degree exceeds the threshold (the schedule's, else the mean degree the
 * runtime computes), light otherwise. With K from 3 to 8: quantiles of the
 * groups' destination degrees, each class about 1/K of the groups, heaviest
 * first, a degree never split between two classes; a threshold has no
 * meaning there and is refused. graph/groups.c builds the table
 * with `distance` rows of one class, then `distance` of the next, round
 * robin, so that consecutive warps mix long-latency groups (a heavy
 * destination's, contending for its atomics) with short ones. Any order of
 * the groups is legal: every group is still done exactly once, and the
 * only writes two groups share are reductions into a destination (atomic,
 * or flushed from shared memory, or combined per destination in table
 * order by a segmented reduction), whose result does not depend on the
 * order beyond float rounding. A deterministic operator still reorders
 * nothing between runs: the permutation is a function of the graph and the
 * parameters.
 *
 * MGG's local and remote neighbours would be another source of classes,
 * once graphs span GPUs.
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
  if (classes < 2 || classes > IR_MAX_CLASSES) {
    ir_error(d, loc, "interleave: loop '%s' cannot be split into %lld class%s; "
             "the group table takes 2 to %d classes of destinations by "
             "in-degree", loop, (long long)classes, classes == 1 ? "" : "es",
             IR_MAX_CLASSES);
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
  if (threshold > 0 && classes > 2) {
    ir_error(d, loc, "interleave: loop '%s' is split into %lld classes by "
             "quantiles of the in-degrees; a degree threshold (%lld) splits "
             "two classes only: drop it, or use 2 classes", loop,
             (long long)classes, (long long)threshold);
    return -1;
  }
  if (l->loop.ilv) {
    ir_error(d, loc, "interleave: loop '%s' is already interleaved at distance "
             "%d", loop, l->loop.ilv);
    return -1;
  }
  l->loop.ilv = (int)distance;
  l->loop.ilv_cls = (int)classes;
  l->loop.ilv_thr = (int)threshold;
  return 0;
}
