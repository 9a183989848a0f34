/* interp/interp.h: the reference interpreter, the oracle of every test.
 *
 * Executes any operator, scheduled or not, on a host graph, in f32 or in
 * f64 (the reference mode of the checks). Every GPU result, every tuning
 * candidate and every schedule's semantics test is compared with it.
 *
 * Uses: ir/ (the operator), graph/ (the host graph, its group tables and
 * the tensors' shapes). Must not reach into passes/, codegen/ or the GPU
 * runtime: the oracle must not share code with what it checks beyond the
 * IR itself.
 */
#ifndef GOP_INTERP_H
#define GOP_INTERP_H

#include "graph/graph.h"
#include "ir/ir.h"

/* INTERP_F32 is the native mode: every tensor in its declared dtype, values
 * rounded as the GPU rounds them (for an all-f32 operator: f32). INTERP_F64
 * computes everything in double, the oracle. */
typedef enum { INTERP_F32, INTERP_F64, INTERP_NATIVE = INTERP_F32 } InterpMode;

/* One buffer per tensor of the op, by IrTensor.id, in row-major order with
 * the shape graph_tensor_shape gives. Element type: the tensor's dtype in
 * native mode (uint16_t bits for f16 and bf16), double in F64 mode. Inputs are read; outputs are written entirely
 * (initialised by the interpreter to the identity of their reduction);
 * temporaries may be NULL (the interpreter allocates them). */
/* What a check needs to know of the sums into one tensor, per element (in
 * its row-major order): `n` the number of contributions stored into it
 * (by `+=` and `mean=`; a plain store makes it 1, as do max= and min=),
 * `abs` the sum of their absolute values (divided by the count for
 * mean=). Both arrays are the caller's, numel long; the interpreter
 * zeroes them first. */
typedef struct InterpTerms {
  uint32_t *n;
  double *abs;
} InterpTerms;

typedef struct InterpArgs {
  const Graph *graph;
  IrExtents extents;
  InterpMode mode;
  void **buffers;
  /* Optional: by tensor id, the terms of each tensor whose entry has
   * arrays (NULL, or an entry with n == NULL: not wanted). Only stores
   * into the tensor count: a sum kept in a local and stored once is one
   * term. */
  InterpTerms *terms;
} InterpArgs;

/* The rounding error allowed between two f32 evaluations, in different
 * orders, of a sum of `n` terms whose absolute values sum to `abs`:
 * 2 sqrt(n) u abs with u = 2^-24 (the probabilistic bound sqrt(n) u
 * sum|x_i| of each evaluation, Higham and Mary 2019, which holds for any
 * order: atomics, trees, sequential), 0 for n < 2. */
double interp_sum_allowance(uint32_t n, double abs);

/* Runs `op`. Returns 0, or -1 after reporting (e.g. an index out of range,
 * an unbound extent) through `d`. */
int interp_run(const IrOp *op, const InterpArgs *args, Diag *d);

#endif
