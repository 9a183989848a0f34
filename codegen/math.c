/* codegen/math.c: element-wise math without libdevice.
 *
 * LLVM 16's NVPTX backend lowers llvm.sqrt (sqrt.rn), llvm.fabs, llvm.fma,
 * llvm.maxnum/minnum and llvm.copysign to single PTX instructions, but has
 * no lowering for llvm.exp/llvm.log (those need libdevice, which gop does
 * not ship). So:
 *
 *   exp(x)  = 2^(x log2 e) through ex2.approx.f32 (about 2 ulp), with the
 *             rounding error of the product x * log2(e) recovered by an fma
 *             and applied as 2^h (1 + l ln 2): a plain ex2(x * 1.4427f)
 *             would lose |x| * 2^-24 relative, 1e-6 at |x| = 16. About
 *             3 ulp over the whole range; denormal results are kept.
 *   log(x)  = the FreeBSD/musl logf: reduction to [sqrt(2)/2, sqrt(2)),
 *             log(1 + f) = f - f^2/2 + s (f^2/2 + R(s^2)), s = f / (2 + f);
 *             under 1 ulp. lg2.approx is not used: its absolute error
 *             (2^-22) is a large relative error near x = 1.
 *   tanh(x) = the Taylor series to x^17 below |x| = 0.55 (truncation under
 *             3e-9 relative), 1 - 2 / (exp(2|x|) + 1) above, where the
 *             result is at least 0.5 so no cancellation; sign restored.
 *   sigmoid(x) = 1 / (1 + exp(-x)).
 *
 * All stay well within the 1e-5 relative L2 that GPU results are checked
 * against (issue 4); tests/unit/test_codegen.c holds the reference values.
 * max and min follow the interpreter: (a > b || isnan(a)) ? a : b, so NaN
 * propagates (llvm.maxnum, C's fmaxf, would drop it).
 */
#define GOP_CODEGEN_INTERNAL
#include "codegen.h"

static LLVMValueRef call1(CgCtx *cg, const char *name, LLVMValueRef x) {
  LLVMTypeRef ty = LLVMTypeOf(x);
  return cg_intrinsic(cg, name, &ty, 1, &x, 1);
}

static LLVMValueRef call2(CgCtx *cg, const char *name, LLVMValueRef x,
                          LLVMValueRef y) {
  LLVMValueRef args[2] = {x, y};
  LLVMTypeRef ty = LLVMTypeOf(x);
  return cg_intrinsic(cg, name, &ty, 1, args, 2);
}

static LLVMValueRef fma3(CgCtx *cg, LLVMValueRef a, LLVMValueRef b,
                         LLVMValueRef c) {
  LLVMValueRef args[3] = {a, b, c};
  LLVMTypeRef ty = LLVMTypeOf(a);
  return cg_intrinsic(cg, "llvm.fma", &ty, 1, args, 3);
}

static LLVMValueRef fmul(CgCtx *cg, LLVMValueRef a, LLVMValueRef b) {
  return LLVMBuildFMul(cg->b, a, b, "");
}

static LLVMValueRef fadd(CgCtx *cg, LLVMValueRef a, LLVMValueRef b) {
  return LLVMBuildFAdd(cg->b, a, b, "");
}

static LLVMValueRef fsub(CgCtx *cg, LLVMValueRef a, LLVMValueRef b) {
  return LLVMBuildFSub(cg->b, a, b, "");
}

static LLVMValueRef fcmp(CgCtx *cg, LLVMRealPredicate p, LLVMValueRef a,
                         LLVMValueRef b) {
  return LLVMBuildFCmp(cg->b, p, a, b, "");
}

static LLVMValueRef sel(CgCtx *cg, LLVMValueRef c, LLVMValueRef a,
                        LLVMValueRef b) {
  return LLVMBuildSelect(cg->b, c, a, b, "");
}

static LLVMValueRef math_exp(CgCtx *cg, LLVMValueRef x) {
  const float l2e = 0x1.715476p+0f, l2e_lo = 0x1.4ae0cp-26f;
  const float ln2 = 0x1.62e43p-1f;
  LLVMValueRef h = fmul(cg, x, cg_f32(cg, l2e));
  /* l: what rounding dropped from x * log2(e) (exact product error by fma,
   * plus the error of log2(e)'s f32 representation) */
  LLVMValueRef l = fma3(cg, x, cg_f32(cg, l2e), LLVMBuildFNeg(cg->b, h, ""));
  l = fma3(cg, x, cg_f32(cg, l2e_lo), l);
  LLVMValueRef e = cg_intrinsic(cg, "llvm.nvvm.ex2.approx.f", NULL, 0, &h, 1);
  LLVMValueRef r = fma3(cg, e, fmul(cg, l, cg_f32(cg, ln2)), e);
  /* Outside |h| < 128 the result is 0, a denormal or inf, where the
   * correction is meaningless (and inf * 0 or -inf + inf would be NaN). */
  LLVMValueRef small = fcmp(cg, LLVMRealOLT, call1(cg, "llvm.fabs", h),
                            cg_f32(cg, 128.0));
  return sel(cg, small, r, e);
}

static LLVMValueRef math_log(CgCtx *cg, LLVMValueRef x) {
  LLVMBuilderRef b = cg->b;
  LLVMTypeRef i32 = cg->t_i32;
  const float ln2_hi = 6.9313812256e-01f, ln2_lo = 9.0580006145e-06f;
  const float lg1 = 0xaaaaaa.0p-24f, lg2 = 0xccce13.0p-25f,
              lg3 = 0x91e9ee.0p-25f, lg4 = 0xf89e26.0p-26f;
  LLVMValueRef ix0 = LLVMBuildBitCast(b, x, i32, "");
  /* denormals: scale by 2^25 and take 25 off the exponent */
  LLVMValueRef sub = LLVMBuildICmp(b, LLVMIntULT, ix0, cg_i32(cg, 0x00800000), "");
  LLVMValueRef xs = sel(cg, sub, fmul(cg, x, cg_f32(cg, 0x1p25)), x);
  LLVMValueRef kadj = sel(cg, sub, cg_i32(cg, -25), cg_i32(cg, 0));
  LLVMValueRef ix = LLVMBuildBitCast(b, xs, i32, "");
  /* reduce x into [sqrt(2)/2, sqrt(2)] */
  ix = LLVMBuildAdd(b, ix, cg_i32(cg, 0x3f800000 - 0x3f3504f3), "");
  LLVMValueRef k = LLVMBuildSub(
      b, LLVMBuildLShr(b, ix, cg_i32(cg, 23), ""), cg_i32(cg, 0x7f), "");
  k = LLVMBuildAdd(b, k, kadj, "k");
  ix = LLVMBuildAdd(b, LLVMBuildAnd(b, ix, cg_i32(cg, 0x007fffff), ""),
                    cg_i32(cg, 0x3f3504f3), "");
  LLVMValueRef m = LLVMBuildBitCast(b, ix, cg->t_f32, "");
  LLVMValueRef f = fsub(cg, m, cg_f32(cg, 1.0));
  LLVMValueRef s = LLVMBuildFDiv(b, f, fadd(cg, cg_f32(cg, 2.0), f), "");
  LLVMValueRef z = fmul(cg, s, s), w = fmul(cg, z, z);
  LLVMValueRef t1 = fmul(cg, w, fadd(cg, cg_f32(cg, lg2),
                                     fmul(cg, w, cg_f32(cg, lg4))));
  LLVMValueRef t2 = fmul(cg, z, fadd(cg, cg_f32(cg, lg1),
                                     fmul(cg, w, cg_f32(cg, lg3))));
  LLVMValueRef R = fadd(cg, t2, t1);
  LLVMValueRef hfsq = fmul(cg, fmul(cg, cg_f32(cg, 0.5), f), f);
  LLVMValueRef dk = LLVMBuildSIToFP(b, k, cg->t_f32, "");
  LLVMValueRef r = fadd(cg, fmul(cg, s, fadd(cg, hfsq, R)),
                        fmul(cg, dk, cg_f32(cg, ln2_lo)));
  r = fsub(cg, r, hfsq);
  r = fadd(cg, r, f);
  r = fadd(cg, r, fmul(cg, dk, cg_f32(cg, ln2_hi)));
  /* +inf and NaN give themselves, negatives NaN, +-0 -inf */
  LLVMValueRef big = LLVMBuildICmp(b, LLVMIntUGE, ix0, cg_i32(cg, 0x7f800000), "");
  LLVMValueRef neg = LLVMBuildICmp(b, LLVMIntSLT, ix0, cg_i32(cg, 0), "");
  LLVMValueRef zero = LLVMBuildICmp(
      b, LLVMIntEQ, LLVMBuildShl(b, ix0, cg_i32(cg, 1), ""), cg_i32(cg, 0), "");
  r = sel(cg, big, x, r);
  r = sel(cg, neg, LLVMConstReal(cg->t_f32, __builtin_nanf("")), r);
  return sel(cg, zero, LLVMConstReal(cg->t_f32, -__builtin_inff()), r);
}

static LLVMValueRef math_tanh(CgCtx *cg, LLVMValueRef x) {
  /* tanh x = sum of 2^2n (2^2n - 1) B_2n x^(2n-1) / (2n)! */
  static const double taylor[] = {
      6404582.0 / 10854718875.0, -929569.0 / 638512875.0,
      21844.0 / 6081075.0,       -1382.0 / 155925.0,
      62.0 / 2835.0,             -17.0 / 315.0,
      2.0 / 15.0,                -1.0 / 3.0,
  };
  LLVMValueRef a = call1(cg, "llvm.fabs", x);
  LLVMValueRef z = fmul(cg, a, a);
  LLVMValueRef p = cg_f32(cg, taylor[0]);
  for (size_t i = 1; i < sizeof taylor / sizeof taylor[0]; i++)
    p = fma3(cg, p, z, cg_f32(cg, taylor[i]));
  LLVMValueRef small = fma3(cg, fmul(cg, a, z), p, a);
  LLVMValueRef e = math_exp(cg, fadd(cg, a, a));
  LLVMValueRef big = fsub(
      cg, cg_f32(cg, 1.0),
      LLVMBuildFDiv(cg->b, cg_f32(cg, 2.0), fadd(cg, e, cg_f32(cg, 1.0)), ""));
  LLVMValueRef r =
      sel(cg, fcmp(cg, LLVMRealOLT, a, cg_f32(cg, 0.55)), small, big);
  return call2(cg, "llvm.copysign", r, x);
}

/* max(a, b) = (a > b || isnan(a)) ? a : b, the interpreter's rule: a NaN
 * operand wins, so a NaN is never hidden (llvm.maxnum would drop it). */
LLVMValueRef cg_max(CgCtx *cg, LLVMValueRef a, LLVMValueRef b) {
  LLVMValueRef take_a = LLVMBuildOr(cg->b, fcmp(cg, LLVMRealOGT, a, b),
                                    fcmp(cg, LLVMRealUNO, a, a), "");
  return sel(cg, take_a, a, b);
}

LLVMValueRef cg_min(CgCtx *cg, LLVMValueRef a, LLVMValueRef b) {
  LLVMValueRef take_a = LLVMBuildOr(cg->b, fcmp(cg, LLVMRealOLT, a, b),
                                    fcmp(cg, LLVMRealUNO, a, a), "");
  return sel(cg, take_a, a, b);
}

LLVMValueRef cg_math(CgCtx *cg, IrFn fn, LLVMValueRef *args, int nargs) {
  LLVMValueRef x = args[0];
  LLVMValueRef zero = cg_f32(cg, 0.0);
  (void)nargs; /* checked by the caller against ir_fn_nargs */
  switch (fn) {
  case IR_FN_EXP: return math_exp(cg, x);
  case IR_FN_LOG: return math_log(cg, x);
  case IR_FN_SQRT: return call1(cg, "llvm.sqrt", x);
  case IR_FN_ABS: return call1(cg, "llvm.fabs", x);
  case IR_FN_RELU: /* x > 0 ? x : 0, as the interpreter: NaN gives 0 */
    return sel(cg, fcmp(cg, LLVMRealOGT, x, zero), x, zero);
  case IR_FN_SIGMOID:
    return LLVMBuildFDiv(
        cg->b, cg_f32(cg, 1.0),
        fadd(cg, cg_f32(cg, 1.0), math_exp(cg, LLVMBuildFNeg(cg->b, x, ""))),
        "");
  case IR_FN_TANH: return math_tanh(cg, x);
  case IR_FN_MAX: return cg_max(cg, x, args[1]);
  case IR_FN_MIN: return cg_min(cg, x, args[1]);
  case IR_FN_LEAKY_RELU: /* x > 0 ? x : slope * x */
    return sel(cg, fcmp(cg, LLVMRealOGT, x, zero), x, fmul(cg, args[1], x));
  case IR_FN_TO_F16: case IR_FN_TO_BF16: case IR_FN_TO_F32: case IR_FN_TO_F64:
    return cg_round_to(cg, (IrDType)ir_dtype_of_fn(fn), x);
  case IR_FN_COUNT: break;
  }
  unreachable("bad math function");
}
