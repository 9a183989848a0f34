/* codegen/no_llvm.c: the code generator's entry points in a build without
 * LLVM (cmake -DGOP_WITH_LLVM=OFF).
 *
 * Such a build is the runner for GPU machines that have no LLVM: it reads
 * kernel packs made elsewhere with `gopc pack`, runs them and checks them
 * against the interpreter. Asking it to compile is a user error with a
 * clear way out, not a crash.
 */
#include "codegen.h"

static void refuse(const IrOp *op, Diag *d) {
  ir_error(d, op ? op->loc : (Loc){0},
           "this gop was built without LLVM (GOP_WITH_LLVM=OFF) and cannot compile "
           "to PTX: compile on a machine with LLVM with `gopc pack`, then run the "
           "pack here with `gopc run --pack`");
}

bool cg_available(void) { return false; }

int cg_compile(const IrOp *op, const char *target, CgProgram *out, Diag *d) {
  (void)target;
  *out = (CgProgram){0};
  refuse(op, d);
  return -1;
}

char *cg_emit_llvm(const IrOp *op, const char *target, bool optimize, Diag *d) {
  (void)target;
  (void)optimize;
  refuse(op, d);
  return NULL;
}

int cg_compile_bits(const IrOp *op, const char *target, int index_bits, CgProgram *out,
                    Diag *d) {
  (void)index_bits;
  return cg_compile(op, target, out, d);
}

char *cg_emit_llvm_bits(const IrOp *op, const char *target, int index_bits, bool optimize,
                        Diag *d) {
  (void)index_bits;
  return cg_emit_llvm(op, target, optimize, d);
}

int cg_compile_layout(const IrOp *op, const char *target, CgLayout layout, CgProgram *out,
                      Diag *d) {
  (void)layout;
  return cg_compile(op, target, out, d);
}

char *cg_emit_llvm_layout(const IrOp *op, const char *target, CgLayout layout,
                          bool optimize, Diag *d) {
  (void)layout;
  return cg_emit_llvm(op, target, optimize, d);
}
