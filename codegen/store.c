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
#include <string.h>

#include "codegen.h"

/* The NaN whose bits win every later max (min) comparison: +NaN, the
 * largest signed pattern, for max; -NaN, larger unsigned than any negative
 * number, for min. */
static int64_t is_max_nan(IrRed red, bool f64) {
  if (f64) return red == IR_RED_MAX ? 0x7ff8000000000000LL : (int64_t)0xfff8000000000000ULL;
  return red == IR_RED_MAX ? 0x7fc00000 : (int32_t)0xffc00000;
}

/* Whether `old += value` is one fma: value is a float product. */
static bool is_product(const IrNode *value) {
  return value->kind == IR_BIN && value->bin.op == IR_OP_MUL && value->type == IR_TY_FLOAT;
}

LLVMValueRef cg_reduce_if(CgCtx *cg, LLVMValueRef bit, LLVMValueRef old, const IrNode *value) {
  LLVMBuilderRef b = cg->b;
  bool fma = is_product(value);
  LLVMValueRef x = cg_expr_float(cg, fma ? value->bin.a : value, true);
  LLVMValueRef y = fma ? cg_expr_float(cg, value->bin.b, true) : NULL;
  LLVMTypeRef ty = LLVMTypeOf(old);
  bool vec = LLVMGetTypeKind(ty) == LLVMVectorTypeKind;
  LLVMTypeRef et = vec ? LLVMGetElementType(ty) : ty;
  bool f64 = et == cg->t_f64;
  int n = vec ? (int)LLVMGetVectorSize(ty) : 1;
  /* per element: @p add.rn (or fma.rn) $k, $k, x[, y]; the outputs tied
   * to the old values, so that a clear predicate leaves them */
  char text[1024], cons[256];
  int len = snprintf(text, sizeof text, "{ .reg .pred p; setp.ne.u32 p, $%d, 0; ", n);
  int clen = 0;
  for (int k = 0; k < n; k++) clen += snprintf(cons + clen, sizeof cons - (size_t)clen, "=%s,", f64 ? "d" : "f");
  clen += snprintf(cons + clen, sizeof cons - (size_t)clen, "r");
  for (int k = 0; k < n; k++) clen += snprintf(cons + clen, sizeof cons - (size_t)clen, ",%d", k);
  for (int k = 0; k < n * (fma ? 2 : 1); k++)
    clen += snprintf(cons + clen, sizeof cons - (size_t)clen, ",%s", f64 ? "d" : "f");
  for (int k = 0; k < n; k++) {
    int xa = 2 * n + 1 + k, ya = 3 * n + 1 + k;
    len += fma ? snprintf(text + len, sizeof text - (size_t)len, "@p fma.rn.%s $%d, $%d, $%d, $%d; ",
                          f64 ? "f64" : "f32", k, xa, ya, n + 1 + k)
               : snprintf(text + len, sizeof text - (size_t)len, "@p add.rn.%s $%d, $%d, $%d; ",
                          f64 ? "f64" : "f32", k, n + 1 + k, xa);
  }
  snprintf(text + len, sizeof text - (size_t)len, "}");
  LLVMTypeRef outs[8], ins[1 + 3 * 8];
  LLVMValueRef args[1 + 3 * 8];
  int na = 0;
  for (int k = 0; k < n; k++) outs[k] = et;
  ins[na] = cg->t_i32, args[na++] = LLVMBuildTrunc(b, bit, cg->t_i32, "");
  for (int k = 0; k < n; k++)
    ins[na] = et, args[na++] = vec ? LLVMBuildExtractElement(b, old, cg_i32(cg, k), "") : old;
  for (int k = 0; k < n; k++)
    ins[na] = et, args[na++] = vec ? LLVMBuildExtractElement(b, x, cg_i32(cg, k), "") : x;
  for (int k = 0; fma && k < n; k++)
    ins[na] = et, args[na++] = vec ? LLVMBuildExtractElement(b, y, cg_i32(cg, k), "") : y;
  LLVMTypeRef rt = n == 1 ? et : LLVMStructTypeInContext(cg->ctx, outs, (unsigned)n, 0);
  LLVMTypeRef fty = LLVMFunctionType(rt, ins, (unsigned)na, 0);
  LLVMValueRef asm_ = LLVMGetInlineAsm(fty, text, strlen(text), cons, strlen(cons), 0, 0,
                                       LLVMInlineAsmDialectATT, 0);
  LLVMValueRef r = LLVMBuildCall2(b, fty, asm_, args, (unsigned)na, "");
  if (n == 1) return r;
  LLVMValueRef v = LLVMGetUndef(ty);
  for (int k = 0; k < n; k++)
    v = LLVMBuildInsertElement(b, v, LLVMBuildExtractValue(b, r, (unsigned)k, ""), cg_i32(cg, k), "");
  return v;
}

LLVMValueRef cg_reduce(CgCtx *cg, IrRed red, LLVMValueRef old,
                       const IrNode *value) {
  switch (red) {
  case IR_RED_ASSIGN: return cg_expr_float(cg, value, false);
  case IR_RED_ADD:
    if (is_product(value)) {
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
  /* f64: the same rule on the 64-bit patterns (atom.max.s64 ...) */
  bool f64 = LLVMTypeOf(val) == cg->t_f64;
  LLVMTypeRef it = f64 ? cg->t_i64 : cg->t_i32;
  LLVMValueRef qnan = f64 ? cg_i64(cg, is_max_nan(red, true)) : cg_i32(cg, is_max_nan(red, false));
  LLVMBasicBlockRef pos = cg_block(cg, "atomic.pos");
  LLVMBasicBlockRef neg = cg_block(cg, "atomic.neg");
  LLVMBasicBlockRef done = cg_block(cg, "atomic.done");
  bool is_max = red == IR_RED_MAX;
  LLVMValueRef isnan = LLVMBuildFCmp(b, LLVMRealUNO, val, val, "");
  LLVMValueRef bits = LLVMBuildSelect(b, isnan, qnan, LLVMBuildBitCast(b, val, it, ""), "bits");
  LLVMValueRef nonneg = LLVMBuildICmp(b, LLVMIntSGE, bits, LLVMConstInt(it, 0, 0), "");
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
    /* (in teams, @team(T): lane 0 of each team) */
    int lanes = cg->team ? cg->team : 32;
    LLVMValueRef lane = LLVMBuildAnd(cg->b, cg_sreg(cg, "tid.x"), cg_i32(cg, lanes - 1), "lane");
    LLVMBuildCondBr(cg->b, LLVMBuildICmp(cg->b, LLVMIntEQ, lane, cg_i32(cg, 0), ""),
                    then, done);
    LLVMPositionBuilderAtEnd(cg->b, then);
    LLVMValueRef ptr = cg_address(cg, t, s->acc.nidx, s->acc.idx, s->loc);
    cg_store_elems(cg, t, cg_reduce(cg, red, NULL, s->acc.value), ptr);
    LLVMBuildBr(cg->b, done);
    LLVMPositionBuilderAtEnd(cg->b, done);
    return;
  }
  LLVMValueRef ptr = cg_address(cg, t, s->acc.nidx, s->acc.idx, s->loc);
  if (red == IR_RED_ASSIGN || s->acc.how == IR_HOW_PLAIN) {
    /* in a vector body (vector.c), n consecutive elements, aligned */
    int n = cg_vec_access(cg, s) ? cg->vec : 0;
    LLVMValueRef old = red != IR_RED_ASSIGN ? cg_load_elems(cg, t, ptr, n, false) : NULL;
    cg_store_elems(cg, t, cg_reduce(cg, red, old, s->acc.value), ptr);
    return;
  }
  /* atomic */
  if (ir_dtype_is_16bit(t->dtype)) {
    /* atom.add.noftz.bf16x2 exists (sm_90), but it rounds every addition
     * to 8 bits of mantissa where the operator's semantics accumulate in
     * f32 and round once: a sum over a few hundred edges would be off by
     * percents */
    cg_error(cg, s->loc, "atomic `%s[...] %s` into a %s tensor: a 16-bit atomic would "
             "round every addition (the op accumulates in %s and rounds once); use a "
             "schedule whose reductions are plain (e.g. vertex-parallel) or an f32 output",
             t->name, ir_red_name(red), ir_dtype_name(t->dtype), ir_dtype_name(cg->op->acc));
    return;
  }
  LLVMValueRef val = cg_expr_float(cg, s->acc.value, red == IR_RED_ADD);
  if (LLVMTypeOf(val) != cg_elem_type(cg, t) && !cg_vec_access(cg, s)) /* f32 in an f64 op */
    val = LLVMBuildFPTrunc(cg->b, val, cg_elem_type(cg, t), "");
  if (cg_vec_access(cg, s)) { /* a vector body (vector.c): one per element */
    val = cg_vec_splat(cg, val);
    for (int i = 0; i < cg->vec; i++) {
      LLVMValueRef at = LLVMBuildGEP2(cg->b, cg_elem_type(cg, t), ptr, (LLVMValueRef[]){cg_i32(cg, i)}, 1, "");
      LLVMValueRef x = LLVMBuildExtractElement(cg->b, val, cg_i32(cg, i), "");
      if (LLVMTypeOf(x) != cg_elem_type(cg, t)) /* f32 in an f64 op */
        x = LLVMBuildFPTrunc(cg->b, x, cg_elem_type(cg, t), "");
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
