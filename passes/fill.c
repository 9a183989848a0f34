/* passes/fill.c: the op fills only the rows that need it.
 *
 * Contract: requires mean= lowered (lower_mean.c) and the stores of
 * neighbour groups decided (promote.c: t->owner_group); gives every such
 * tensor a stage before the first one that writes it,
 *
 *   for v_fin in dst @warp {
 *     if (in_degree(v_fin) == 0.0 || in_degree(v_fin) > G) {
 *       for fo { for fl @lane { Y[v_fin, ...] = IDENTITY } }
 *     }
 *   }
 *
 * and marks the tensor filled: the runtime then fills nothing before the
 * op (codegen/compile.c reports the tensor as written whole). Breaks
 * nothing.
 *
 * Why: a sum over neighbour groups (spmm_groups, gnnadvisor) writes the
 * rows with 1..G in-edges whole with a plain store from their one group,
 * and adds into the others with atomics, which need the identity there
 * first. Filling the whole tensor for them (a memset of |V| x F words)
 * cost as much as a sixth of the aggregation on the H100: 0.055 ms of
 * 0.355 on cnr-2000 at F = 128. Empty rows (no group writes them) and
 * heavy rows (atomics) are few on most graphs; this stage reads the
 * degrees and writes only those.
 */
#include "passes/passes.h"

int pass_fill(IrOp *op, Arena *a, Diag *d) {
  (void)d;
  for (int i = 0; i < op->ntensors; i++) {
    IrTensor *t = op->tensors[i];
    if (t->owner_group <= 0 || t->filled || t->role == IR_ROLE_IN) continue;
    /* The reduction the runtime would have filled for. */
    IrRed red = IR_RED_ASSIGN;
    IrNode **slot = NULL;
    for (IrNode **p = &op->body; *p && !slot; p = &(*p)->next)
      if (pass_stage_stores(*p, t)) slot = p;
    if (!slot) continue;
    red = pass_target_red(*slot, t);
    if (red == IR_RED_ASSIGN) continue; /* written whole by plain stores */
    t = pass_own_tensor(op, t, a);
    t->filled = true;
    IrNode *stage = pass_row_stage(op, t, NULL, red, true, a);
    stage->next = *slot;
    *slot = stage;
  }
  return 0;
}
