/* api/dtype.c: operators instantiated in a float type, and typed arrays.
 *
 * A stdlib operator is written once, in f32; `gop_op_retype` gives the
 * same operator with its f32 tensors in f16, bf16 or f64 (the IR's
 * ir_op_retype on a fresh copy read back from the op's IR text, so the
 * original is untouched). Typed arrays carry .npy data in its stored type.
 */
#include <stdlib.h>
#include <string.h>

#include "graph/graph.h"
#include "lang/lang.h"

#include "api/api.h"

static int float_dtype(const char *name) {
  int t = name ? ir_dtype_lookup(name) : -1;
  return t >= 0 && ir_dtype_is_float((IrDType)t) ? t : -1;
}

GopOp *gop_op_retype(const GopOp *op, const char *dtype) {
  if (!op) return NULL;
  GopContext *ctx = op->module->ctx;
  int t = float_dtype(dtype);
  if (t < 0) {
    ir_error(&ctx->diag, api_loc, "unknown dtype '%s': an operator can be instantiated "
             "in f16, bf16, f32 or f64", dtype ? dtype : "(null)");
    return NULL;
  }
  char *text = ir_op_to_string(op->ir);
  if (!text) return NULL;
  char *kept = ir_strdup(ctx->arena, text);
  free(text);
  IrModule *m = lang_parse_ir(ctx->arena, &ctx->diag,
                              ir_sprintf(ctx->arena, "<%s as %s>", op->ir->name, dtype), kept);
  if (!m || m->nops != 1) return NULL;
  ir_op_retype(m->ops[0], (IrDType)t);
  /* the named schedules of the op's module apply to the instance too */
  for (int i = 0; i < op->module->ir->nscheds; i++)
    ir_module_add_sched(m, op->module->ir->scheds[i]);
  GopModule *gm = api_wrap_module(ctx, m, op->module->file, op->module->text);
  if (!gm) return NULL;
  gm->ops[0]->doc = op->doc;
  return gm->ops[0];
}

const char *gop_op_acc(const GopOp *op) { return ir_dtype_name(op->ir->acc); }

double gop_dtype_get(const char *dtype, const void *data, int64_t i) {
  int t = float_dtype(dtype);
  return ir_elem_get(t < 0 ? IR_DT_F32 : (IrDType)t, data, i);
}

void gop_dtype_put(const char *dtype, void *data, int64_t i, double x) {
  int t = float_dtype(dtype);
  ir_elem_put(t < 0 ? IR_DT_F32 : (IrDType)t, data, i, x);
}

int gop_dtype_bytes(const char *dtype) {
  int t = float_dtype(dtype);
  return t < 0 ? 0 : ir_dtype_bytes((IrDType)t);
}

int gop_typed_array_read(GopContext *ctx, const char *path, GopTypedArray *out) {
  memset(out, 0, sizeof *out);
  NpyArray a;
  if (npy_read(path, &a, &ctx->diag) != 0) return -1;
  if (!ir_dtype_is_float(a.dtype)) {
    ir_error(&ctx->diag, (Loc){path, 0, 0}, "tensor data must be floating-point "
             "(f16, bf16, f32 or f64), not %s", ir_dtype_name(a.dtype));
    npy_free(&a);
    return -1;
  }
  out->ndim = a.ndim;
  for (int d = 0; d < a.ndim; d++) out->shape[d] = a.shape[d];
  out->dtype = ir_dtype_name(a.dtype);
  out->data = a.data; /* npy_read's buffer is malloc'ed (npy_free frees it) */
  return 0;
}

int gop_typed_array_write(GopContext *ctx, const char *path, const GopTypedArray *a) {
  int t = float_dtype(a->dtype);
  if (t < 0) {
    ir_error(&ctx->diag, (Loc){path, 0, 0}, "cannot write an array of dtype '%s'",
             a->dtype ? a->dtype : "(null)");
    return -1;
  }
  NpyArray r = {.dtype = (IrDType)t, .ndim = a->ndim, .data = a->data};
  for (int d = 0; d < a->ndim; d++) r.shape[d] = a->shape[d];
  return npy_write(path, &r, &ctx->diag);
}

void gop_typed_array_free(GopTypedArray *a) {
  free(a->data);
  a->data = NULL;
}
