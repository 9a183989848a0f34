/* codegen/store.c: stores, plain and atomic reductions.
 *
 * How a reduction store is carried out was decided by the write-conflict
 * analysis (docs/gpu-ir.md): `plain` is load, combine, store (one worker
 * owns the element; LICM then keeps a sum over a sequential loop in a
 * register), `atomic` is one atomic read-modify-write on global memory.
 * A store whose strategy is still `auto` is refused: compiling it either
 * way could be wrong or slow, and only the analysis knows which.
 *
 * Atomic float add is `atomicrmw fadd` (atom.global.add.f32). Atomic float
 * max and min have no PTX instruction, so they use the integer atomics on
 * the float's bits, which order like the floats they encode:
 *   - for x >= +0 (sign bit clear), bits order as signed integers the same
 *     way as the floats, and every negative float is a negative integer:
 *     max = atom.max.s32, min = atom.min.s32;
 *   - for x <= -0 (sign bit set), bits order as unsigned integers the
 *     opposite way, and every positive float is a smaller unsigned integer:
 *     max = atom.min.u32, min = atom.max.u32.
 * One atomic per update, no CAS loop, and exact: the result is one of the
 * values, never a rounding of them. A NaN sticks, as in the interpreter
 * (and the plain path, math.c): it is stored as the NaN whose bits win
 * every later comparison, +NaN (0x7fc00000, the largest signed) for max
 * and -NaN (0xffc00000, larger unsigned than any negative number) for min.
 * +0 and -0 compare as in the integers (max(-0, +0) = +0), which the
 * interpreter's order-dependent choice between equal zeros may not match
 * in sign; they are equal as floats.
 */
#define GOP_CODEGEN_INTERNAL
#include "codegen.h"

LLVMValueRef cg_reduce(CgCtx *cg, IrRed red, LLVMValueRef old,
                       const IrNode *value) {
  switch (red) {
  case IR_RED_ASSIGN: return cg_expr_float(cg, value, false);
  case IR_RED_ADD:
    if (value->kind == IR_BIN && value->bin.op == IR_OP_MUL &&
        value->type == IR_TY_FLOAT) {
      /* old + a * b as one fma */
      LLVMValueRef args[3] = {cg_expr_float(cg, value->bin.a, true),
                              cg_expr_float(cg, value->bin.b, true), old};
      LLVMTypeRef ty = LLVMTypeOf(old); /* <n x f32> in a vector body */
      return cg_intrinsic(cg, "llvm.fmuladd", &ty, 1, args, 3);
    }
    return LLVMBuildFAdd(cg->b, old, cg_expr_float(cg, value, true), "");
  case IR_RED_MAX: return cg_max(cg, old, cg_expr_float(cg, value, false));
  case IR_RED_MIN: return cg_min(cg, old, cg_expr_float(cg, value, false));
  case IR_RED_MEAN: break; /* refused by the callers */
  case IR_RED_COUNT: break;
  }
  unreachable("no plain combination for this reduction");
}

static void atomic_minmax(CgCtx *cg, IrRed red, LLVMValueRef ptr,
                          LLVMValueRef val) {
  LLVMBuilderRef b = cg->b;
  LLVMBasicBlockRef pos = cg_block(cg, "atomic.pos");
  LLVMBasicBlockRef neg = cg_block(cg, "atomic.neg");
  LLVMBasicBlockRef done = cg_block(cg, "atomic.done");
  bool is_max = red == IR_RED_MAX;
  LLVMValueRef isnan = LLVMBuildFCmp(b, LLVMRealUNO, val, val, "");
  LLVMValueRef bits = LLVMBuildSelect(
      b, isnan, cg_i32(cg, is_max ? 0x7fc00000 : (int32_t)0xffc00000),
      LLVMBuildBitCast(b, val, cg->t_i32, ""), "bits");
  LLVMValueRef nonneg = LLVMBuildICmp(b, LLVMIntSGE, bits, cg_i32(cg, 0), "");
  LLVMBuildCondBr(b, nonneg, pos, neg);
  LLVMPositionBuilderAtEnd(b, pos);
  LLVMBuildAtomicRMW(b, is_max ? LLVMAtomicRMWBinOpMax : LLVMAtomicRMWBinOpMin,
                     ptr, bits, LLVMAtomicOrderingMonotonic, 0);
  LLVMBuildBr(b, done);
  LLVMPositionBuilderAtEnd(b, neg);
  LLVMBuildAtomicRMW(b, is_max ? LLVMAtomicRMWBinOpUMin : LLVMAtomicRMWBinOpUMax,
                     ptr, bits, LLVMAtomicOrderingMonotonic, 0);
  LLVMBuildBr(b, done);
  LLVMPositionBuilderAtEnd(b, done);
}

void cg_atomic(CgCtx *cg, IrRed red, LLVMValueRef ptr, LLVMValueRef val) {
  if (red == IR_RED_ADD)
    LLVMBuildAtomicRMW(cg->b, LLVMAtomicRMWBinOpFAdd, ptr, val,
                       LLVMAtomicOrderingMonotonic, 0);
  else
    atomic_minmax(cg, red, ptr, val);
}

void cg_store(CgCtx *cg, const IrNode *s) {
  const IrTensor *t = s->acc.tensor;
  IrRed red = s->acc.red;
  if (s->acc.how == IR_HOW_SHARED) { /* shared.c */
    cg_shared_store(cg, s);
    return;
  }
  if (red == IR_RED_MEAN) {
    cg_error(cg, s->loc, "`%s[...] mean= ...` reached code generation: "
             "lowering rewrites mean= as += and a division stage", t->name);
    return;
  }
  if (t->role == IR_ROLE_IN) {
    cg_error(cg, s->loc, "store to input '%s': inputs are read-only",
             t->name);
    return;
  }
  if (red != IR_RED_ASSIGN && s->acc.how == IR_HOW_AUTO) {
    cg_error(cg, s->loc, "reduction `%s[...] %s ...` is neither plain nor "
             "atomic (auto): the write-conflict analysis must run before "
             "code generation", t->name, ir_red_name(red));
    return;
  }
  if (red == IR_RED_ASSIGN && cg->in_warp && !cg->in_lane) {
    /* Inside a @warp loop but no @lane loop every lane holds the same value
     * (what lanes computed apart reaches here only through a `shuffle`
     * reduction, which leaves the total in every lane): lane 0 stores it. */
    LLVMBasicBlockRef then = cg_block(cg, "lane0"), done = cg_block(cg, "lane0.done");
    LLVMValueRef lane = LLVMBuildAnd(cg->b, cg_sreg(cg, "tid.x"), cg_i32(cg, 31), "lane");
    LLVMBuildCondBr(cg->b, LLVMBuildICmp(cg->b, LLVMIntEQ, lane, cg_i32(cg, 0), ""),
                    then, done);
    LLVMPositionBuilderAtEnd(cg->b, then);
    LLVMValueRef ptr = cg_address(cg, t, s->acc.nidx, s->acc.idx, s->loc);
    LLVMValueRef st = LLVMBuildStore(cg->b, cg_reduce(cg, red, NULL, s->acc.value), ptr);
    LLVMSetAlignment(st, 4);
    LLVMBuildBr(cg->b, done);
    LLVMPositionBuilderAtEnd(cg->b, done);
    return;
  }
  LLVMValueRef ptr = cg_address(cg, t, s->acc.nidx, s->acc.idx, s->loc);
  if (red == IR_RED_ASSIGN || s->acc.how == IR_HOW_PLAIN) {
    /* in a vector body (vector.c), n consecutive elements, aligned */
    bool vec = cg_vec_access(cg, s);
    LLVMTypeRef ty = vec ? LLVMVectorType(cg->t_f32, (unsigned)cg->vec) : cg->t_f32;
    unsigned align = vec ? (unsigned)(4 * cg->vec) : 4;
    LLVMValueRef old = NULL;
    if (red != IR_RED_ASSIGN) {
      old = cg_load(cg, ty, ptr, false, t->name);
      LLVMSetAlignment(old, align);
    }
    LLVMValueRef st = LLVMBuildStore(cg->b, cg_reduce(cg, red, old, s->acc.value), ptr);
    LLVMSetAlignment(st, align);
    return;
  }
  /* atomic */
  LLVMValueRef val = cg_expr_float(cg, s->acc.value, red == IR_RED_ADD);
  if (cg_vec_access(cg, s)) { /* a vector body (vector.c): one per element */
    val = cg_vec_splat(cg, val);
    for (int i = 0; i < cg->vec; i++) {
      LLVMValueRef at = LLVMBuildGEP2(cg->b, cg->t_f32, ptr, (LLVMValueRef[]){cg_i32(cg, i)}, 1, "");
      LLVMValueRef x = LLVMBuildExtractElement(cg->b, val, cg_i32(cg, i), "");
      if (red == IR_RED_ADD)
        LLVMBuildAtomicRMW(cg->b, LLVMAtomicRMWBinOpFAdd, at, x, LLVMAtomicOrderingMonotonic, 0);
      else
        atomic_minmax(cg, red, at, x);
    }
    return;
  }
  switch (red) {
  case IR_RED_ADD:
    LLVMBuildAtomicRMW(cg->b, LLVMAtomicRMWBinOpFAdd, ptr, val,
                       LLVMAtomicOrderingMonotonic, 0);
    return;
  case IR_RED_MAX:
  case IR_RED_MIN:
    atomic_minmax(cg, red, ptr, val);
    return;
  case IR_RED_ASSIGN: case IR_RED_MEAN: case IR_RED_COUNT: break;
  }
  unreachable("bad atomic reduction");
}
