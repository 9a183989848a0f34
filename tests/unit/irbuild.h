/* tests/unit/irbuild.h: terse IR construction for tests that build
 * operators by hand (test_ir.c, test_interp.c), and the fixture operators
 * they share.
 *
 * The including file defines, before including this header, the arena
 * `A` every node goes into and the location `L` every node carries:
 *   static Arena *A;
 *   static const Loc L = {"t.gop", 1, 1};
 * The helpers are static inline so that a test using a few of them does
 * not warn about the rest.
 */
#ifndef GOP_TEST_IRBUILD_H
#define GOP_TEST_IRBUILD_H

#include <stdarg.h>

#include "ir/ir.h"

static inline IrNode *vr(IrVar *v) { return ir_var(A, L, v); }
static inline IrNode *sym(IrSym *s) { return ir_symref(A, L, s); }
static inline IrNode *ic(int64_t i) { return ir_iconst(A, L, i); }
static inline IrNode *fc(double f) { return ir_fconst(A, L, f); }
static inline IrNode *bin(IrBinOp op, IrNode *x, IrNode *y) { return ir_bin(A, L, op, x, y); }
static inline IrNode *neg(IrNode *x) { return ir_un(A, L, IR_UN_NEG, x); }
static inline IrNode *src_of(IrNode *e) { return ir_endpoint(A, L, IR_SRC, e); }
static inline IrNode *dst_of(IrNode *e) { return ir_endpoint(A, L, IR_DST, e); }
static inline IrNode *call1(IrFn fn, IrNode *x) { return ir_call(A, L, fn, 1, &x); }
static inline IrNode *call2(IrFn fn, IrNode *x, IrNode *y) {
  IrNode *args[2] = {x, y};
  return ir_call(A, L, fn, 2, args);
}

/* Element `t[i0, i1, ...]` of `n` indices. */
static inline IrNode *ld(IrTensor *t, int n, ...) {
  IrNode *idx[IR_MAX_IDX];
  va_list ap;
  va_start(ap, n);
  for (int i = 0; i < n; i++) idx[i] = va_arg(ap, IrNode *);
  va_end(ap);
  return ir_load(A, L, t, n, idx);
}

/* `t[i0, ...] RED value` with `n` indices. */
static inline IrNode *st(IrTensor *t, IrRed red, IrNode *value, int n, ...) {
  IrNode *idx[IR_MAX_IDX];
  va_list ap;
  va_start(ap, n);
  for (int i = 0; i < n; i++) idx[i] = va_arg(ap, IrNode *);
  va_end(ap);
  return ir_store(A, L, t, n, idx, red, value);
}

/* A loop; `arg` is the extent of a range loop or the vertex of an edge
 * loop. */
static inline IrNode *loop(IrVar *v, IrLoopKind k, IrNode *arg, IrNode *body) {
  bool range = k == IR_LOOP_RANGE;
  bool edges = k == IR_LOOP_IN_EDGES || k == IR_LOOP_OUT_EDGES;
  return ir_loop(A, L, v, k, range ? arg : NULL, edges ? arg : NULL, body);
}

/* Chains statements (NULL-terminated) into one list. */
static inline IrNode *seq(IrNode *first, ...) {
  IrNode *list = NULL;
  va_list ap;
  va_start(ap, first);
  for (IrNode *s = first; s; s = va_arg(ap, IrNode *)) ir_append(&list, s);
  va_end(ap);
  return list;
}

/* An f32 tensor with one feature dimension `dim`, or none when NULL. */
static inline IrTensor *tensor(IrOp *op, const char *name, IrDomain dom, IrRole role,
                               IrSym *dim) {
  IrTensor *t = ir_op_add_tensor(A, op, name, L, IR_DT_F32, dom, role);
  if (dim) t->dims[t->ndims++].sym = dim;
  return t;
}

static inline IrVar *var(IrOp *op, const char *name, IrVarKind k) {
  return ir_op_add_var(A, op, name, L, k);
}

/* S[e] = sum_f X[src(e), f] * Y[v, f], through a local s.
 * Tensors: X (0), Y (1), S (2). */
static inline IrOp *make_u_dot_v(void) {
  IrOp *op = ir_op_new(A, "u_dot_v", L);
  IrSym *F = ir_op_sym(A, op, "F", L);
  IrTensor *X = tensor(op, "X", IR_DOM_SRC, IR_ROLE_IN, F);
  IrTensor *Y = tensor(op, "Y", IR_DOM_DST, IR_ROLE_IN, F);
  IrTensor *S = tensor(op, "S", IR_DOM_EDGE, IR_ROLE_OUT, NULL);
  IrVar *v = var(op, "v", IR_VAR_DST_V), *e = var(op, "e", IR_VAR_EDGE);
  IrVar *f = var(op, "f", IR_VAR_INDEX), *s = var(op, "s", IR_VAR_LOCAL);
  IrNode *acc = ir_set(A, L, s, IR_RED_ADD,
                       bin(IR_OP_MUL, ld(X, 2, src_of(vr(e)), vr(f)), ld(Y, 2, vr(v), vr(f))));
  IrNode *inner = seq(ir_let(A, L, s, fc(0.0)), loop(f, IR_LOOP_RANGE, sym(F), acc),
                      st(S, IR_RED_ASSIGN, vr(s), 1, vr(e)), NULL);
  op->body = loop(v, IR_LOOP_DST_V, NULL, loop(e, IR_LOOP_IN_EDGES, vr(v), inner));
  return op;
}

/* Edge softmax over in-edges in three stages with two temporaries:
 * M = max S, Z = sum exp(S - M), A = exp(S - M) / Z.
 * Tensors: S (0), A (1), M (2), Z (3). */
static inline IrOp *make_softmax(void) {
  IrOp *op = ir_op_new(A, "edge_softmax", L);
  IrTensor *S = tensor(op, "S", IR_DOM_EDGE, IR_ROLE_IN, NULL);
  IrTensor *Out = tensor(op, "A", IR_DOM_EDGE, IR_ROLE_OUT, NULL);
  IrTensor *M = tensor(op, "M", IR_DOM_DST, IR_ROLE_TEMP, NULL);
  IrTensor *Z = tensor(op, "Z", IR_DOM_DST, IR_ROLE_TEMP, NULL);
  IrVar *v1 = var(op, "v", IR_VAR_DST_V), *e1 = var(op, "e", IR_VAR_EDGE);
  IrVar *v2 = var(op, "v2", IR_VAR_DST_V), *e2 = var(op, "e2", IR_VAR_EDGE);
  IrVar *e3 = var(op, "e3", IR_VAR_EDGE);
  IrNode *s1 = loop(v1, IR_LOOP_DST_V, NULL,
                    loop(e1, IR_LOOP_IN_EDGES, vr(v1),
                         st(M, IR_RED_MAX, ld(S, 1, vr(e1)), 1, vr(v1))));
  IrNode *s2 = loop(
      v2, IR_LOOP_DST_V, NULL,
      loop(e2, IR_LOOP_IN_EDGES, vr(v2),
           st(Z, IR_RED_ADD,
              call1(IR_FN_EXP, bin(IR_OP_SUB, ld(S, 1, vr(e2)), ld(M, 1, vr(v2)))), 1,
              vr(v2))));
  IrNode *ex = call1(IR_FN_EXP, bin(IR_OP_SUB, ld(S, 1, vr(e3)), ld(M, 1, dst_of(vr(e3)))));
  IrNode *s3 = loop(e3, IR_LOOP_EDGES, NULL,
                    st(Out, IR_RED_ASSIGN, bin(IR_OP_DIV, ex, ld(Z, 1, dst_of(vr(e3)))), 1,
                       vr(e3)));
  op->body = seq(s1, s2, s3, NULL);
  return op;
}

#endif
