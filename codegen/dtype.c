/* codegen/dtype.c: tensors' element types in memory, and conversions.
 *
 * Values are computed in the operator's accumulator type (t_val: f32, or
 * f64 in an op that accumulates in f64); an element is converted when it
 * is loaded and rounded to nearest even when it is stored:
 *
 *   f16   LLVM's half: fpext / fptrunc, which NVPTX lowers to
 *         cvt.f32.f16 / cvt.rn.f16.f32; a vector of n halves is one
 *         ld.global.nc.v2/v4 of 16-bit or packed 32-bit registers.
 *   bf16  handled as its bits (i16): LLVM 16's NVPTX backend has no
 *         lowering for bfloat fpext/fptrunc (bf16 arithmetic and
 *         conversions came with LLVM 17), so a load is a zero-extension
 *         and a shift into the top of an f32 (exact), and a store rounds
 *         in integer arithmetic as ir_bf16_from_float does (bits + 0x7fff
 *         + lsb, NaN made quiet): the same bits as cvt.rn.bf16.f32.
 *   f64   double; in an f32 op an f64 tensor cannot occur (the checker
 *         makes such an op accumulate in f64).
 *
 * f64 values go to 16 bits through f32, as the interpreter does.
 */
#define GOP_CODEGEN_INTERNAL
#include "codegen.h"

LLVMTypeRef cg_elem_type(CgCtx *cg, const IrTensor *t) {
  switch (t->dtype) {
  case IR_DT_F16: return cg->t_f16;
  case IR_DT_BF16: return cg->t_i16;
  case IR_DT_F64: return cg->t_f64;
  default: return cg->t_f32;
  }
}

/* `ty` as an n-wide vector when n > 0. */
static LLVMTypeRef wide(LLVMTypeRef ty, int n) {
  return n > 0 ? LLVMVectorType(ty, (unsigned)n) : ty;
}

/* Float value `v` (scalar or vector) converted to float type `to`. */
static LLVMValueRef fconv(CgCtx *cg, LLVMValueRef v, LLVMTypeRef to) {
  LLVMTypeRef from = LLVMTypeOf(v);
  bool vec = LLVMGetTypeKind(from) == LLVMVectorTypeKind;
  LLVMTypeRef fe = vec ? LLVMGetElementType(from) : from;
  if (fe == to) return v;
  LLVMTypeRef dst = vec ? LLVMVectorType(to, LLVMGetVectorSize(from)) : to;
  unsigned a = LLVMGetTypeKind(fe) == LLVMDoubleTypeKind ? 64 : fe == cg->t_f32 ? 32 : 16;
  unsigned b = to == cg->t_f64 ? 64 : to == cg->t_f32 ? 32 : 16;
  return a < b ? LLVMBuildFPExt(cg->b, v, dst, "") : LLVMBuildFPTrunc(cg->b, v, dst, "");
}

/* bf16 bits (i16 or <n x i16>) to f32, exactly. */
static LLVMValueRef bf16_to_f32(CgCtx *cg, LLVMValueRef bits, int n) {
  LLVMBuilderRef b = cg->b;
  LLVMValueRef x = LLVMBuildZExt(b, bits, wide(cg->t_i32, n), "");
  LLVMValueRef sh = cg_i32(cg, 16);
  if (n > 0) sh = LLVMConstVector((LLVMValueRef[]){sh, sh, sh, sh, sh, sh, sh, sh}, (unsigned)n);
  x = LLVMBuildShl(b, x, sh, "");
  return LLVMBuildBitCast(b, x, wide(cg->t_f32, n), "");
}

static LLVMValueRef splat_i32(CgCtx *cg, int64_t c, int n) {
  LLVMValueRef k = cg_i32(cg, c);
  if (n == 0) return k;
  LLVMValueRef e[8];
  for (int i = 0; i < n; i++) e[i] = k;
  return LLVMConstVector(e, (unsigned)n);
}

/* f32 (scalar or <n x f32>) to bf16 bits, rounded to nearest even. */
static LLVMValueRef f32_to_bf16(CgCtx *cg, LLVMValueRef x, int n) {
  LLVMBuilderRef b = cg->b;
  LLVMValueRef u = LLVMBuildBitCast(b, x, wide(cg->t_i32, n), "");
  LLVMValueRef hi = LLVMBuildLShr(b, u, splat_i32(cg, 16, n), "");
  LLVMValueRef lsb = LLVMBuildAnd(b, hi, splat_i32(cg, 1, n), "");
  LLVMValueRef r = LLVMBuildAdd(b, u, LLVMBuildAdd(b, lsb, splat_i32(cg, 0x7fff, n), ""), "");
  r = LLVMBuildLShr(b, r, splat_i32(cg, 16, n), "");
  LLVMValueRef nan = LLVMBuildFCmp(b, LLVMRealUNO, x, x, "");
  r = LLVMBuildSelect(b, nan, LLVMBuildOr(b, hi, splat_i32(cg, 0x40, n), ""), r, "");
  return LLVMBuildTrunc(b, r, wide(cg->t_i16, n), "bf16");
}

/* Eight 16-bit elements as one 16-byte access: <4 x i32>, each word two
 * elements (the first in its low half), decoded and encoded in integer
 * arithmetic on the words. An <8 x i16> or <8 x half> access would not
 * do: LLVM 16's NVPTX splits the first into two 8-byte accesses and fails
 * on the second ("Copy one register into another with a different
 * width"). f16 decodes exactly as (bits & 0x7fff) << 13 times 2^112 (the
 * rebias, subnormals included: the multiply keeps denormals), inf and NaN
 * by their pattern, the sign or'ed back. */
static LLVMValueRef half_to_f32_bits(CgCtx *cg, LLVMValueRef h16, bool bf) {
  LLVMBuilderRef b = cg->b;
  if (bf) return LLVMBuildBitCast(b, LLVMBuildShl(b, h16, cg_i32(cg, 16), ""), cg->t_f32, "");
  LLVMValueRef mag = LLVMBuildAnd(b, h16, cg_i32(cg, 0x7fff), "");
  LLVMValueRef f = LLVMBuildBitCast(b, LLVMBuildShl(b, mag, cg_i32(cg, 13), ""), cg->t_f32, "");
  f = LLVMBuildFMul(b, f, LLVMConstReal(cg->t_f32, 0x1p112), "");
  LLVMValueRef special = LLVMBuildICmp(b, LLVMIntUGE, mag, cg_i32(cg, 0x7c00), "");
  LLVMValueRef infnan = LLVMBuildOr(b, cg_i32(cg, 0x7f800000),
                                    LLVMBuildShl(b, LLVMBuildAnd(b, mag, cg_i32(cg, 0x3ff), ""),
                                                 cg_i32(cg, 13), ""), "");
  LLVMValueRef bits = LLVMBuildSelect(b, special, infnan, LLVMBuildBitCast(b, f, cg->t_i32, ""), "");
  LLVMValueRef sign = LLVMBuildShl(b, LLVMBuildAnd(b, h16, cg_i32(cg, 0x8000), ""), cg_i32(cg, 16), "");
  return LLVMBuildBitCast(b, LLVMBuildOr(b, bits, sign, ""), cg->t_f32, "");
}

static LLVMValueRef load8(CgCtx *cg, const IrTensor *t, LLVMValueRef ptr, bool invariant) {
  LLVMBuilderRef b = cg->b;
  LLVMValueRef w = cg_load(cg, LLVMVectorType(cg->t_i32, 4), ptr, invariant, t->name);
  LLVMSetAlignment(w, 16);
  bool bf = t->dtype == IR_DT_BF16;
  LLVMValueRef r = LLVMGetUndef(LLVMVectorType(cg->t_f32, 8));
  for (int k = 0; k < 4; k++) {
    LLVMValueRef x = LLVMBuildExtractElement(b, w, cg_i32(cg, k), "");
    LLVMValueRef lo = LLVMBuildAnd(b, x, cg_i32(cg, 0xffff), "");
    LLVMValueRef hi = LLVMBuildLShr(b, x, cg_i32(cg, 16), "");
    r = LLVMBuildInsertElement(b, r, half_to_f32_bits(cg, lo, bf), cg_i32(cg, 2 * k), "");
    r = LLVMBuildInsertElement(b, r, half_to_f32_bits(cg, hi, bf), cg_i32(cg, 2 * k + 1), "");
  }
  return r;
}

static LLVMValueRef f32_to_bf16(CgCtx *cg, LLVMValueRef x, int n);

/* <8 x f32> rounded to 16 bits, packed in <4 x i32> (scalar conversions:
 * cvt.rn.f16.f32 one by one). */
static LLVMValueRef pack8(CgCtx *cg, const IrTensor *t, LLVMValueRef v) {
  LLVMBuilderRef b = cg->b;
  LLVMValueRef w = LLVMGetUndef(LLVMVectorType(cg->t_i32, 4));
  for (int k = 0; k < 4; k++) {
    LLVMValueRef half[2];
    for (int j = 0; j < 2; j++) {
      LLVMValueRef x = LLVMBuildExtractElement(b, v, cg_i32(cg, 2 * k + j), "");
      LLVMValueRef h = t->dtype == IR_DT_BF16
                           ? f32_to_bf16(cg, x, 0)
                           : LLVMBuildBitCast(b, LLVMBuildFPTrunc(b, x, cg->t_f16, ""),
                                              cg->t_i16, "");
      half[j] = LLVMBuildZExt(b, h, cg->t_i32, "");
    }
    LLVMValueRef x = LLVMBuildOr(b, half[0], LLVMBuildShl(b, half[1], cg_i32(cg, 16), ""), "");
    w = LLVMBuildInsertElement(b, w, x, cg_i32(cg, k), "");
  }
  return w;
}

static int min_int(int a, int b) { return a < b ? a : b; }

LLVMValueRef cg_load_elems(CgCtx *cg, const IrTensor *t, LLVMValueRef ptr, int n,
                           bool invariant) {
  if (n == 8 && ir_dtype_bytes(t->dtype) == 2)
    return fconv(cg, load8(cg, t, ptr, invariant), cg->t_val);
  LLVMTypeRef et = cg_elem_type(cg, t);
  LLVMValueRef v = cg_load(cg, wide(et, n), ptr, invariant, t->name);
  /* 16 bytes at most: tensors start 16-byte aligned, and a wider vector (8
   * f32) is two 16-byte accesses */
  if (n > 0) LLVMSetAlignment(v, (unsigned)min_int(16, ir_dtype_bytes(t->dtype) * n));
  if (t->dtype == IR_DT_BF16) v = bf16_to_f32(cg, v, n);
  return fconv(cg, v, cg->t_val);
}

LLVMValueRef cg_store_elems(CgCtx *cg, const IrTensor *t, LLVMValueRef v,
                            LLVMValueRef ptr) {
  LLVMTypeRef ty = LLVMTypeOf(v);
  int n = LLVMGetTypeKind(ty) == LLVMVectorTypeKind ? (int)LLVMGetVectorSize(ty) : 0;
  if (n == 8 && ir_dtype_bytes(t->dtype) == 2) {
    LLVMValueRef st = LLVMBuildStore(cg->b, pack8(cg, t, fconv(cg, v, cg->t_f32)), ptr);
    LLVMSetAlignment(st, 16);
    return st;
  }
  switch (t->dtype) {
  case IR_DT_F16: v = fconv(cg, fconv(cg, v, cg->t_f32), cg->t_f16); break;
  case IR_DT_BF16: v = f32_to_bf16(cg, fconv(cg, v, cg->t_f32), n); break;
  case IR_DT_F64: v = fconv(cg, v, cg->t_f64); break;
  default: v = fconv(cg, v, cg->t_f32); break;
  }
  LLVMValueRef st = LLVMBuildStore(cg->b, v, ptr);
  LLVMSetAlignment(st, (unsigned)min_int(16, ir_dtype_bytes(t->dtype) * (n > 0 ? n : 1)));
  return st;
}

LLVMValueRef cg_round_to(CgCtx *cg, IrDType to, LLVMValueRef v) {
  LLVMTypeRef ty = LLVMTypeOf(v);
  int n = LLVMGetTypeKind(ty) == LLVMVectorTypeKind ? (int)LLVMGetVectorSize(ty) : 0;
  LLVMValueRef x;
  switch (to) {
  case IR_DT_F16: x = fconv(cg, fconv(cg, v, cg->t_f32), cg->t_f16); break;
  case IR_DT_BF16: x = bf16_to_f32(cg, f32_to_bf16(cg, fconv(cg, v, cg->t_f32), n), n); break;
  case IR_DT_F32: x = fconv(cg, v, cg->t_f32); break;
  default: return v;
  }
  return fconv(cg, x, cg->t_val);
}
