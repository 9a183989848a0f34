/* ir/dtype.c: gop's floating-point types and the conversions between them.
 *
 * f16 (IEEE binary16) and bf16 (the top half of an f32) are storage types:
 * values are computed in the operator's accumulator type (f32 or f64) and
 * rounded to nearest even when stored, as PTX's cvt.rn.f16.f32 and
 * cvt.rn.bf16.f32 do. The interpreter, the .npy reader and writer and the
 * checks all convert through here, so the host and the GPU round alike.
 * f64 values are rounded to f32 first and then to 16 bits, as the GPU's
 * f64 -> f32 -> f16 path would (double rounding, which the checks'
 * tolerances cover).
 */
#include <math.h>
#include <string.h>

#include "ir.h"

int ir_fn_of_dtype(IrDType t) {
  switch (t) {
  case IR_DT_F16: return IR_FN_TO_F16;
  case IR_DT_BF16: return IR_FN_TO_BF16;
  case IR_DT_F32: return IR_FN_TO_F32;
  case IR_DT_F64: return IR_FN_TO_F64;
  case IR_DT_I32: case IR_DT_I64: case IR_DT_COUNT: break;
  }
  return -1;
}

int ir_dtype_of_fn(IrFn fn) {
  switch (fn) {
  case IR_FN_TO_F16: return IR_DT_F16;
  case IR_FN_TO_BF16: return IR_DT_BF16;
  case IR_FN_TO_F32: return IR_DT_F32;
  case IR_FN_TO_F64: return IR_DT_F64;
  default: break;
  }
  return -1;
}

static uint32_t bits_of(float x) {
  uint32_t u;
  memcpy(&u, &x, sizeof u);
  return u;
}

static float float_of(uint32_t u) {
  float x;
  memcpy(&x, &u, sizeof x);
  return x;
}

uint16_t ir_bf16_from_float(float x) {
  uint32_t u = bits_of(x);
  if (isnan(x)) return (uint16_t)((u >> 16) | 0x40); /* quiet, sign kept */
  /* round to nearest even on the 16 bits dropped; a carry into the
   * exponent is right (it rounds up to the next binade or to inf) */
  u += 0x7fffu + ((u >> 16) & 1);
  return (uint16_t)(u >> 16);
}

float ir_bf16_to_float(uint16_t h) { return float_of((uint32_t)h << 16); }

uint16_t ir_f16_from_float(float x) {
  uint32_t u = bits_of(x);
  uint16_t sign = (uint16_t)((u >> 16) & 0x8000);
  uint32_t a = u & 0x7fffffffu;
  if (a > 0x7f800000u) return sign | 0x7e00; /* NaN */
  if (a >= 0x477ff000u) return sign | 0x7c00; /* rounds to >= 65520: inf */
  if (a < 0x38800000u) {
    /* below 2^-14: a subnormal half, a multiple of 2^-24; rint rounds to
     * nearest even in the default rounding mode */
    float m = float_of(a) * 0x1p24f;
    return sign | (uint16_t)rintf(m);
  }
  /* normal: rebias the exponent (127 -> 15) and round the 13 bits dropped */
  uint32_t r = a - 0x38000000u;
  r += 0xfffu + ((r >> 13) & 1);
  return sign | (uint16_t)(r >> 13);
}

float ir_f16_to_float(uint16_t h) {
  uint32_t sign = (uint32_t)(h & 0x8000) << 16;
  uint32_t e = (h >> 10) & 0x1f, m = h & 0x3ff;
  if (e == 0) { /* zero or subnormal: m * 2^-24, exact in a float */
    float v = (float)m * 0x1p-24f;
    return float_of(bits_of(v) | sign);
  }
  if (e == 31) return float_of(sign | 0x7f800000u | (m << 13)); /* inf, NaN */
  return float_of(sign | ((e + 112) << 23) | (m << 13));
}

double ir_round_to(IrDType t, double x) {
  switch (t) {
  case IR_DT_F16: return ir_f16_to_float(ir_f16_from_float((float)x));
  case IR_DT_BF16: return ir_bf16_to_float(ir_bf16_from_float((float)x));
  case IR_DT_F32: return (float)x;
  default: return x;
  }
}

double ir_elem_get(IrDType t, const void *buf, int64_t i) {
  switch (t) {
  case IR_DT_F16: return ir_f16_to_float(((const uint16_t *)buf)[i]);
  case IR_DT_BF16: return ir_bf16_to_float(((const uint16_t *)buf)[i]);
  case IR_DT_F64: return ((const double *)buf)[i];
  default: return ((const float *)buf)[i];
  }
}

void ir_elem_put(IrDType t, void *buf, int64_t i, double x) {
  switch (t) {
  case IR_DT_F16: ((uint16_t *)buf)[i] = ir_f16_from_float((float)x); break;
  case IR_DT_BF16: ((uint16_t *)buf)[i] = ir_bf16_from_float((float)x); break;
  case IR_DT_F64: ((double *)buf)[i] = x; break;
  default: ((float *)buf)[i] = (float)x; break;
  }
}

double ir_check_limit(IrDType t) {
  switch (t) {
  case IR_DT_F16: return 2e-3;
  case IR_DT_BF16: return 1.5e-2;
  case IR_DT_F64: return 1e-12;
  default: return 1e-5;
  }
}

IrDType ir_op_default_acc(const IrOp *op) {
  for (int i = 0; i < op->ntensors; i++)
    if (op->tensors[i]->dtype == IR_DT_F64) return IR_DT_F64;
  return IR_DT_F32;
}

const char *ir_op_dtype_key(const IrOp *op) {
  int seen = -1;
  for (int i = 0; i < op->ntensors; i++) {
    IrDType t = op->tensors[i]->dtype;
    if (!ir_dtype_is_float(t)) continue;
    if (seen >= 0 && (int)t != seen) return "mixed";
    seen = (int)t;
  }
  return seen < 0 ? "f32" : ir_dtype_name((IrDType)seen);
}

void ir_op_retype(IrOp *op, IrDType t) {
  for (int i = 0; i < op->ntensors; i++)
    if (op->tensors[i]->dtype == IR_DT_F32) op->tensors[i]->dtype = t;
  if (t == IR_DT_F64) op->acc = IR_DT_F64;
}
