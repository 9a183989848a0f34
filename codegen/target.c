/* codegen/target.c: LLVM's NVPTX backend: target machines, O3, PTX.
 *
 * Targets are checked against gop's list (program.c) before LLVM sees
 * them: LLVM accepts any sm_NN it knows and silently picks another PTX
 * version, so a typo would otherwise surface only at load time on the GPU.
 * LLVM 16 gives sm_80 PTX 7.0, sm_86 7.1 and sm_89/sm_90 7.8 (DESIGN.md,
 * "Facts measured here"), which ptxas 12 and 13 accept.
 *
 * LLVM's target registry is process-global; it is initialised once, under
 * pthread_once.
 */
#define GOP_CODEGEN_INTERNAL
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include <llvm-c/Target.h>
#include <llvm-c/Transforms/PassBuilder.h>

#include "codegen.h"

static pthread_once_t nvptx_once = PTHREAD_ONCE_INIT;

static void init_nvptx(void) {
  LLVMInitializeNVPTXTargetInfo();
  LLVMInitializeNVPTXTarget();
  LLVMInitializeNVPTXTargetMC();
  LLVMInitializeNVPTXAsmPrinter();
}

LLVMTargetMachineRef cg_target_machine(const char *target, Diag *d) {
  if (cg_target_check(target, d) != 0) return NULL;
  pthread_once(&nvptx_once, init_nvptx);
  const char *triple = "nvptx64-nvidia-cuda";
  LLVMTargetRef t;
  char *err = NULL;
  if (LLVMGetTargetFromTriple(triple, &t, &err)) {
    ir_error(d, (Loc){0}, "LLVM has no NVPTX target: %s", err ? err : "?");
    LLVMDisposeMessage(err);
    return NULL;
  }
  return LLVMCreateTargetMachine(t, triple, target, "", LLVMCodeGenLevelAggressive,
                                 LLVMRelocDefault, LLVMCodeModelDefault);
}

int cg_optimize(CgCtx *cg) {
  LLVMPassBuilderOptionsRef opts = LLVMCreatePassBuilderOptions();
  LLVMErrorRef err = LLVMRunPasses(cg->mod, "default<O3>", cg->tm, opts);
  LLVMDisposePassBuilderOptions(opts);
  if (err) {
    char *msg = LLVMGetErrorMessage(err);
    ir_error(cg->d, cg->op->loc, "LLVM's O3 pipeline failed: %s", msg);
    LLVMDisposeErrorMessage(msg);
    return -1;
  }
  return 0;
}

char *cg_emit_ptx(CgCtx *cg, size_t *len) {
  LLVMMemoryBufferRef buf = NULL;
  char *err = NULL;
  if (LLVMTargetMachineEmitToMemoryBuffer(cg->tm, cg->mod, LLVMAssemblyFile,
                                          &err, &buf)) {
    ir_error(cg->d, cg->op->loc, "NVPTX code generation failed: %s",
             err ? err : "?");
    LLVMDisposeMessage(err);
    return NULL;
  }
  size_t n = LLVMGetBufferSize(buf);
  const char *start = LLVMGetBufferStart(buf);
  /* The buffer may or may not count a trailing NUL; PTX text has none. */
  while (n > 0 && start[n - 1] == 0) n--;
  char *ptx = malloc(n + 1);
  if (ptx) {
    memcpy(ptx, start, n);
    ptx[n] = 0;
    *len = n;
  } else {
    ir_error(cg->d, (Loc){0}, "out of memory");
  }
  LLVMDisposeMemoryBuffer(buf);
  return ptx;
}
