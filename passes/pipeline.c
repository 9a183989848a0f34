/* passes/pipeline.c: the lowering pipeline and its pass table.
 *
 * Lowering is a straight list of passes, run in the order of the table
 * below on a copy of the operator; the IR is verified after each one
 * (naming the pass that broke it), and can be printed after any one
 * (`--dump-after=NAME`). To add a pass: write passes/NAME.c with one entry
 * point `int pass_NAME(IrOp *, Arena *, Diag *)` and its contract above it,
 * declare it in passes.h, and add a row here at the place it must run.
 */
#include <string.h>

#include "passes/passes.h"

static const PassInfo table[] = {
    {"panel", "a @panel groups loop sums its panel's destinations in "
              "registers, each pair's source row read once", pass_panel_lower},
    {"accumulate", "sequential edge loops reduce in registers and store once; "
                   "a vertex's mean/max/min is finished in that store",
     pass_accumulate},
    {"mean", "mean= becomes += and a division by the degree; max=/min= "
             "elements left empty become 0", pass_lower_mean},
    {"fill", "a sum over neighbour groups fills only the rows its groups do "
             "not own (empty and heavy ones), in a first stage", pass_fill},
    {"segment", "deterministic(): a reduction over neighbour groups becomes "
                "rows per group, then each destination adds its rows in "
                "table order", pass_segment},
    {"simplify", "fold index arithmetic, drop unit loops, true guards and "
                 "dead code", pass_simplify},
    {"reciprocal", "in a sum over edges, a float division by what a loop "
                   "does not change becomes a product with a reciprocal "
                   "computed once for the loop",
     pass_reciprocal},
    {"prefetch", "check each @prefetch edge loop: in a warp, lanes on a loop "
                 "around it, edges the same for every lane",
     pass_prefetch_check},
    {"conflicts", "decide plain or atomic for every reduction store; refuse "
                  "races and repeated reductions", pass_conflicts},
};
enum { NPASSES = sizeof table / sizeof table[0] };

const PassInfo *pass_table(int *n) {
  *n = NPASSES;
  return table;
}

int pass_lower(IrOp *op, Arena *a, Diag *d, const char *dump_after,
               FILE *dump) {
  if (dump_after) {
    bool known = false;
    const char *names = "";
    for (int i = 0; i < NPASSES; i++) {
      known |= strcmp(table[i].name, dump_after) == 0;
      names = ir_sprintf(a, "%s%s%s", names, i ? ", " : "", table[i].name);
    }
    if (!known) {
      ir_error(d, (Loc){0}, "unknown pass '%s' to dump after (passes: %s)",
               dump_after, names);
      return -1;
    }
  }
  IrOp *c = pass_op_copy(op, a);
  if (!ir_verify_op(c, d, "scheduling")) return -1;
  for (int i = 0; i < NPASSES; i++) {
    if (table[i].run(c, a, d) != 0) return -1;
    if (!ir_verify_op(c, d, table[i].name)) return -1;
    if (dump_after && dump && strcmp(dump_after, table[i].name) == 0)
      ir_print_op(dump, c);
  }
  *op = *c;
  return 0;
}
