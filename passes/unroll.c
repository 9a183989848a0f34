/* passes/unroll.c: unroll(loop, n).
 *
 * Contract: requires a sequential (unbound) loop, or a loop bound to the
 * lanes of a warp (each lane strides it: lanes on a destination's in-edges);
 * marks it @unroll(n), which code generation honours by repeating the body
 * n times per trip with a remainder loop (a lane loop: LLVM's unroller, by
 * the count hint, so that n of a lane's iterations have their loads in
 * flight together). Changes no semantics, so nothing else is required.
 * unroll(x, 1) leaves the loop as it is (a named schedule may pass 1).
 */
#include "passes/passes.h"

int pass_unroll(IrOp *op, const char *loop, int64_t n, Loc loc, Arena *a,
                Diag *d) {
  PassSite site;
  if (!pass_find_loop(op, "unroll", loop, &site, loc, a, d)) return -1;
  IrNode *l = site.node;
  if (n < 1 || n > 1024) {
    ir_error(d, loc, "unroll: the factor of loop '%s' must be from 1 to 1024, "
             "not %lld", loop, (long long)n);
    return -1;
  }
  if (l->loop.bind != IR_BIND_NONE && l->loop.bind != IR_BIND_LANE) {
    ir_error(d, loc, "unroll: loop '%s' is bound to %s; only sequential loops "
             "and lane loops are unrolled", loop, ir_bind_name(l->loop.bind));
    return -1;
  }
  if (l->loop.unroll) {
    ir_error(d, loc, "unroll: loop '%s' is already unrolled by %d", loop,
             l->loop.unroll);
    return -1;
  }
  l->loop.unroll = n > 1 ? (int)n : 0;
  return 0;
}
