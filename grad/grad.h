/* grad/grad.h: reverse-mode differentiation of operators, in the IR.
 *
 * The one header of grad/, sectioned by the file that implements each part.
 * Given an operator as lang/ lowers it (unscheduled IR) and one of its
 * inputs X, grad_derive builds a new, ordinary operator that computes dX,
 * the gradient of <dY, Y> with respect to X for the adjoints dY of the
 * outputs: printable, verifiable, schedulable by passes/, runnable by
 * interp/ and the code generator like any other. docs/autodiff.md gives
 * the rules with examples; in short:
 *
 *   - stages are differentiated in reverse order; temporaries the gradient
 *     needs are recomputed by copies of the forward stages that write them,
 *     and get adjoint temporaries of their own shape;
 *   - the adjoint of a gather over in-edges (X[src(e)] under
 *     `for v in dst { for e in in_edges(v) }`) is a scatter over out-edges,
 *     iterated by source (`for u in src { for e in out_edges(u) }`), so the
 *     worker of u owns dX[u] and no atomics are needed;
 *   - edge-tensor gradients are per-edge expressions (SDDMM), reduced over
 *     feature loops in place;
 *   - max= and min= compare the recomputed contribution with the saved
 *     output and split the adjoint evenly between the contributions that
 *     reach it (a count temporary), mean= divides by the count of
 *     contributions (the degree); element-wise math follows the chain rule,
 *     piecewise functions under guards;
 *   - an edge softmax is differentiated by its saved output (dS = A (dA -
 *     sum A dA)), and inside an aggregation (GAT) by the saved aggregate,
 *     with no per-edge tensor;
 *   - stages of the gradient that iterate the same edges and do not depend
 *     on each other are fused into one pass (fuse.c); traffic.c counts the
 *     per-edge tensors an operator (derived or not) reads and writes.
 *
 * What the IR cannot express is refused through the Diag at the construct,
 * never approximated.
 *
 * Uses: ir/ only.
 */
#ifndef GOP_GRAD_H
#define GOP_GRAD_H

#include "ir/ir.h"

/* ---------------------------------------------------------------------------
 * derive.c: the derivation (with stmt.c, expr.c and softmax.c, which share
 * its state through the private grad/derive.h).
 */

/* The gradient operator of `op` with respect to its input `wrt`, named
 * `OP_grad_WRT`, allocated in `a`. Its inputs are those of `op` it reads,
 * then the outputs of `op` it reads (saved forward results, e.g. for max=
 * and edge softmax), then the adjoints `dY` of the outputs; its one output
 * is `dWRT`, shaped like `wrt`. NULL after reporting why through `d`
 * (unknown or integer input, a construct with no derivative in the IR). */
IrOp *grad_derive(Arena *a, const IrOp *op, const char *wrt, Diag *d);
/* The same; `adjoints` (if not NULL, one slot per tensor of `op`) gets the
 * name in the gradient of each forward tensor's adjoint it has: dY for the
 * outputs it reads, dWRT for `wrt`, NULL for the others. */
IrOp *grad_derive_named(Arena *a, const IrOp *op, const char *wrt,
                        const char **adjoints, Diag *d);
/* One operator `OP_grad_X_W` for several inputs at once, with one output
 * dX, dW ... per input in the order given: the recomputation of the
 * temporaries and the adjoints of the outputs and temporaries are shared,
 * and stages over the same edges fused across the inputs. */
IrOp *grad_derive_joint(Arena *a, const IrOp *op, const char *const *wrt, int nwrt,
                        const char **adjoints, Diag *d);

/* Whether `t` may be differentiated against: a floating-point input. */
bool grad_differentiable(const IrTensor *t);

/* ---------------------------------------------------------------------------
 * fuse.c: one pass over the edges where the gradient's stages allow it.
 */

/* Merges stages of `op` that iterate the same vertex and edge loops
 * (`for u in src { for e in out_edges(u) }`, or the in-edge form) into one,
 * where no stage between them, and neither of the two, reads what the
 * other writes (accumulations `+=` into the same tensor commute). Never
 * fails; returns the number of merges. */
int grad_fuse_stages(IrOp *op, Arena *a);

/* ---------------------------------------------------------------------------
 * traffic.c: the per-edge intermediates an operator moves.
 */

/* A tensor on the edges (domain edge) and the stages of the operator that
 * read it and that write it: each such stage is one pass over the whole
 * tensor, |E| x its other extents elements. */
typedef struct GradEdgeTraffic {
  const IrTensor *t;
  int reads, writes;
} GradEdgeTraffic;

/* The edge tensors `op` reads or writes, in tensor order, up to `max` into
 * `out`; returns how many there are (0: nothing on the edges moves). */
int grad_edge_traffic(const IrOp *op, GradEdgeTraffic *out, int max);

/* ---------------------------------------------------------------------------
 * hoist.c: what a feature loop of a derived operator computes the same on
 * every iteration is moved out of it: costly invariant expressions into
 * locals before the loop, and sums into an element the loop does not
 * index into a local, stored once after it (GAT's dAs and dAd, an edge
 * weight's SDDMM). Run by grad_derive on every derived operator.
 */
void grad_hoist_features(IrOp *op, Arena *a);

#endif
