/* codegen/context.c: the codegen context and the helpers every emitter uses.
 *
 * One CgCtx per compilation holds the LLVM context, module, builder and
 * target machine, with the types the emitters use cached once (as ponyc's
 * compile_t does). Each compilation has its own LLVMContext, so separate
 * compilations may run on separate threads. Everything created here is
 * disposed in cg_ctx_dispose, so LeakSanitizer sees no leak of ours.
 */
#define GOP_CODEGEN_INTERNAL
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "codegen.h"

void cg_ctx_init(CgCtx *cg, const IrOp *op, const char *target,
                 LLVMTargetMachineRef tm, Diag *d) {
  memset(cg, 0, sizeof *cg);
  cg->op = op;
  cg->target = target;
  cg->d = d;
  cg->tm = tm;
  cg->ctx = LLVMContextCreate();
  cg->mod = LLVMModuleCreateWithNameInContext(op->name, cg->ctx);
  cg->b = LLVMCreateBuilderInContext(cg->ctx);
  LLVMSetTarget(cg->mod, "nvptx64-nvidia-cuda");
  LLVMTargetDataRef layout = LLVMCreateTargetDataLayout(tm);
  LLVMSetModuleDataLayout(cg->mod, layout);
  LLVMDisposeTargetData(layout);

  cg->t_void = LLVMVoidTypeInContext(cg->ctx);
  cg->t_i1 = LLVMInt1TypeInContext(cg->ctx);
  cg->t_i32 = LLVMInt32TypeInContext(cg->ctx);
  cg->t_i64 = LLVMInt64TypeInContext(cg->ctx);
  cg->t_f32 = LLVMFloatTypeInContext(cg->ctx);
  cg->t_i16 = LLVMInt16TypeInContext(cg->ctx);
  cg->t_f16 = LLVMHalfTypeInContext(cg->ctx);
  cg->t_f64 = LLVMDoubleTypeInContext(cg->ctx);
  cg->t_val = op && op->acc == IR_DT_F64 ? cg->t_f64 : cg->t_f32;
  cg->t_idx = cg->t_i32; /* cg_compile_bits sets the width after this */
  cg->t_gptr = LLVMPointerTypeInContext(cg->ctx, 1); /* global memory */
  cg->md_invariant = LLVMGetMDKindIDInContext(cg->ctx, "invariant.load", 14);
  cg->md_loop = LLVMGetMDKindIDInContext(cg->ctx, "llvm.loop", 9);
}

void cg_ctx_dispose(CgCtx *cg) {
  if (cg->b) LLVMDisposeBuilder(cg->b);
  if (cg->mod) LLVMDisposeModule(cg->mod);
  if (cg->ctx) LLVMContextDispose(cg->ctx);
  if (cg->tm) LLVMDisposeTargetMachine(cg->tm);
  free(cg->tensor_arg);
  free(cg->written);
  free(cg->sym_arg);
  free(cg->vars);
  free(cg->staged);
  memset(cg, 0, sizeof *cg);
}

void cg_error(CgCtx *cg, Loc loc, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  ir_verror(cg->d, "error", loc, fmt, ap);
  va_end(ap);
  cg->errors++;
}

LLVMValueRef cg_intrinsic(CgCtx *cg, const char *name, LLVMTypeRef *over,
                          int nover, LLVMValueRef *args, int nargs) {
  unsigned id = LLVMLookupIntrinsicID(name, strlen(name));
  if (id == 0) unreachable("unknown LLVM intrinsic");
  /* overloading a plain intrinsic would name a function no backend knows */
  if (!LLVMIntrinsicIsOverloaded(id) && nover != 0)
    unreachable("types given for an intrinsic that is not overloaded");
  LLVMValueRef fn =
      LLVMGetIntrinsicDeclaration(cg->mod, id, over, (size_t)nover);
  LLVMTypeRef fty = LLVMIntrinsicGetType(cg->ctx, id, over, (size_t)nover);
  return LLVMBuildCall2(cg->b, fty, fn, args, (unsigned)nargs, "");
}

LLVMValueRef cg_sreg(CgCtx *cg, const char *which) {
  char name[64];
  snprintf(name, sizeof name, "llvm.nvvm.read.ptx.sreg.%s", which);
  return cg_intrinsic(cg, name, NULL, 0, NULL, 0);
}

LLVMBasicBlockRef cg_block(CgCtx *cg, const char *name) {
  return LLVMAppendBasicBlockInContext(cg->ctx, cg->fn, name);
}

LLVMValueRef cg_alloca(CgCtx *cg, LLVMTypeRef ty, const char *name) {
  /* Allocas at the top of the entry block are what SROA/mem2reg promote;
   * a separate builder keeps the main one where it is. */
  LLVMBuilderRef eb = LLVMCreateBuilderInContext(cg->ctx);
  LLVMValueRef first = LLVMGetFirstInstruction(cg->entry);
  if (first) LLVMPositionBuilderBefore(eb, first);
  else LLVMPositionBuilderAtEnd(eb, cg->entry);
  LLVMValueRef a = LLVMBuildAlloca(eb, ty, name);
  LLVMDisposeBuilder(eb);
  return a;
}

LLVMValueRef cg_load(CgCtx *cg, LLVMTypeRef ty, LLVMValueRef ptr,
                     bool invariant, const char *name) {
  LLVMValueRef v = LLVMBuildLoad2(cg->b, ty, ptr, name);
  /* a scalar's own size (2 for 16-bit elements); callers set vectors' */
  unsigned size = LLVMGetTypeKind(ty) == LLVMVectorTypeKind
                      ? 4
                      : (LLVMGetTypeKind(ty) == LLVMHalfTypeKind ||
                         ty == cg->t_i16)
                            ? 2
                            : LLVMGetTypeKind(ty) == LLVMDoubleTypeKind ? 8 : 4;
  LLVMSetAlignment(v, size);
  /* a staged copy in shared memory (address space 3) is written at the
   * kernel's start, so it is not invariant */
  if (invariant && LLVMGetPointerAddressSpace(LLVMTypeOf(ptr)) != 3)
    LLVMSetMetadata(v, cg->md_invariant,
                    LLVMMetadataAsValue(cg->ctx,
                                        LLVMMDNodeInContext2(cg->ctx, NULL, 0)));
  return v;
}

LLVMValueRef cg_i32(CgCtx *cg, int64_t v) {
  return LLVMConstInt(cg->t_i32, (unsigned long long)v, 1);
}

LLVMValueRef cg_i64(CgCtx *cg, int64_t v) {
  return LLVMConstInt(cg->t_i64, (unsigned long long)v, 1);
}

LLVMValueRef cg_idx(CgCtx *cg, int64_t v) {
  return LLVMConstInt(cg->t_idx, (unsigned long long)v, 1);
}

LLVMValueRef cg_to_idx(CgCtx *cg, LLVMValueRef v) {
  LLVMTypeRef t = LLVMTypeOf(v);
  if (t == cg->t_idx) return v;
  if (LLVMGetIntTypeWidth(t) < LLVMGetIntTypeWidth(cg->t_idx))
    return LLVMBuildSExt(cg->b, v, cg->t_idx, "");
  return LLVMBuildTrunc(cg->b, v, cg->t_idx, "");
}

LLVMValueRef cg_f32(CgCtx *cg, double v) {
  if (cg->t_val == cg->t_f64) return LLVMConstReal(cg->t_f64, v);
  return LLVMConstReal(cg->t_f32, (float)v);
}
