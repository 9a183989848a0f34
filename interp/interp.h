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
typedef struct InterpArgs {
  const Graph *graph;
  IrExtents extents;
  InterpMode mode;
  void **buffers;
} InterpArgs;

/* Runs `op`. Returns 0, or -1 after reporting (e.g. an index out of range,
 * an unbound extent) through `d`. */
int interp_run(const IrOp *op, const InterpArgs *args, Diag *d);

#endif
