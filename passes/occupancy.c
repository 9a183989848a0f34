/* passes/occupancy.c: occupancy(loop, N), the threads per SM a stage's
 * kernel asks ptxas to fit.
 *
 * Contract: requires any loop of a stage; marks the stage's top loop
 * `@occupancy(N)`, N a multiple of 32 from 32 to 2048 (what an SM of sm_80
 * or sm_90 holds), once. Breaks nothing: the IR is the same loop nest; only
 * the kernel's .minnctapersm changes (codegen/kernel.c: N / threads per
 * block, at least 1), and with it the registers ptxas may give a thread,
 * 65536 / N: 2048 leaves 32, 1024 (the default) 64, 512 (the default of
 * f64 and @vec(8) kernels) 128. Fewer registers mean more warps resident
 * but fewer loads in flight per warp, and perhaps spills.
 *
 * What pays off depends on the graph: on an H100 (bench/NOTES.md, session
 * 9), u_mul_e_sum under spmm_vec4(4) took 0.889 ms at the default and
 * 0.772 ms at 2048 on molhiv (2.2 in-edges a vertex: nothing to unroll,
 * so more warps hide the latency), but 0.049 -> 0.055 ms on deezer-HU
 * (9.4 a vertex) and 0.66 -> 1.19 ms for spmm_groups on cnr-2000 F = 256.
 * Named schedules spmm_vec4_full and spmm_rows_full carry it; the cost
 * model (tune/model.c) costs it.
 */
#include "passes/passes.h"

int pass_occupancy(IrOp *op, const char *loop, int64_t threads, Loc loc, Arena *a,
                   Diag *d) {
  PassSite site;
  if (!pass_find_loop(op, "occupancy", loop, &site, loc, a, d)) return -1;
  if (threads < IR_OCC_MIN || threads > IR_OCC_MAX || threads % 32 != 0) {
    ir_error(d, loc, "occupancy(%s, %lld): threads per SM must be a multiple of "
             "32 from %d to %d", loop, (long long)threads, IR_OCC_MIN, IR_OCC_MAX);
    return -1;
  }
  IrNode *top = site.depth > 0 ? site.path[0] : site.node;
  if (top->kind != IR_LOOP) {
    ir_error(d, loc, "occupancy(%s, %lld): the stage of loop '%s' does not start "
             "with a loop to carry it", loop, (long long)threads, loop);
    return -1;
  }
  if (top->loop.occ) {
    ir_error(d, loc, "occupancy(%s, %lld): the stage of loop '%s' already asks "
             "for %d threads per SM", loop, (long long)threads, loop, top->loop.occ);
    return -1;
  }
  top->loop.occ = (int)threads;
  return 0;
}
