/* tests/gpu/cases.h: what the GPU suite (tests/gpu/suite.c) and the
 * benchmark driver (bench/gop_bench.c) share: kernel packs listed in a
 * folder, seeded random inputs, the reference interpreter's outputs, and
 * the comparison of two sets of outputs (f32: relative L2 < 1e-5; max and
 * min exact; NaN never passes).
 */
#ifndef GOP_TESTS_GPU_CASES_H
#define GOP_TESTS_GPU_CASES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "codegen/codegen.h"
#include "ir/ir.h"
#include "graph/graph.h"
#include "interp/interp.h"

/* One kernel pack: an operator compiled under one schedule. */
typedef struct Case {
  char op[64], sched[256], file[512];
  CgProgram prog;
  IrOp *ir; /* the pack's operator, parsed from its IR text */
} Case;

/* Reads PACKDIR/list.txt (op TAB schedule TAB file; refused lines are
 * skipped) into *out (malloc'ed). Returns the count or -1 after printing
 * why. The packs themselves are read by case_load. */
int case_list_read(const char *dir, Case **out);
/* Reads c->file and parses its operator into `a`. 0, or -1 after
 * reporting to `d`. */
int case_load(Case *c, Arena *a, Diag *d);

/* The extents of `op` at width F: F; an operator with heads has H = 4
 * heads of F / 4 features (a row F wide). */
void case_extents(const IrOp *op, int64_t F, IrExtents *ext);

/* Buffers by tensor id for `op` on `g` at width F: inputs filled with
 * uniform random numbers in [-1, 1) from `seed`, outputs allocated,
 * temporaries NULL. case_buffers_free frees them. */
float **case_buffers_new(const IrOp *op, const Graph *g, int64_t F, uint64_t seed);
void case_buffers_free(const IrOp *op, float **buf);
/* Output buffers only, by tensor id (inputs taken from `inputs`). */
float **case_outputs_new(const IrOp *op, const Graph *g, int64_t F, float *const *inputs);
void case_outputs_free(const IrOp *op, float **buf);

/* Runs the reference interpreter on `buf` (from case_buffers_new),
 * writing its outputs. 0, or -1 with the reason in `err`. */
int case_interpret(const IrOp *op, const Graph *g, int64_t F, float **buf, char *err,
                   size_t n);

/* Compares the outputs of `got` with those of `want`; the largest relative
 * L2 goes to *rel. False with the first difference in `why`. */
bool case_compare(const IrOp *op, const Graph *g, int64_t F, float *const *want,
                  float *const *got, double *rel, char *why, size_t n);

#endif
