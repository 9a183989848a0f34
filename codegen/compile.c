/* codegen/compile.c: the code generation pipeline.
 *
 * A straight list of steps, each timed:
 *   1. check the target, make the NVPTX target machine   (target.c)
 *   2. one kernel per stage into one module              (kernel.c ...)
 *   3. LLVM's verifier: a failure here is a bug of codegen, not the user's
 *   4. default<O3> with the target machine               (target.c)
 *   5. NVPTX emits PTX text                              (target.c)
 * then the launch metadata is copied out into the LLVM-free CgProgram.
 */
#define GOP_CODEGEN_INTERNAL
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <llvm-c/Analysis.h>

#include "codegen.h"

static double now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

static char *xstrdup(const char *s) {
  char *c = strdup(s ? s : "");
  if (!c) unreachable("out of memory");
  return c;
}

/* Steps 1-3: the verified module of every stage in `cg`, the kernels' data
 * in `kernels` (nstages of them). Returns 0 or -1 after reporting. */
static int build(CgCtx *cg, const IrOp *op, const char *target, CgLayout layout,
                 CgKernel **kernels, int *nkernels, Diag *d) {
  int index_bits = layout.index_bits;
  if (index_bits != 32 && index_bits != 64) {
    ir_error(d, op->loc, "index width %d: gop compiles for 32- or 64-bit indices",
             index_bits);
    return -1;
  }
  LLVMTargetMachineRef tm = cg_target_machine(target, d);
  if (!tm) return -1;
  cg_ctx_init(cg, op, target, tm, d);
  cg->wide = index_bits == 64;
  /* the reversed graph's edge ids are the graph's, not its CSR positions */
  cg->csr_edges = layout.csr_edges && !op->transposed;
  cg->t_idx = cg->wide ? cg->t_i64 : cg->t_i32;
  int n = 0;
  for (const IrNode *s = op->body; s; s = s->next) n++;
  *kernels = calloc((size_t)n + 1, sizeof **kernels);
  if (!*kernels) unreachable("out of memory");
  *nkernels = n;
  if (n == 0) {
    ir_error(d, op->loc, "operator '%s' has no stage to compile", op->name);
    return -1;
  }
  int i = 0, rc = 0;
  for (const IrNode *s = op->body; s; s = s->next, i++)
    if (cg_kernel(cg, s, i, &(*kernels)[i]) != 0) rc = -1;
  if (rc != 0) return -1;
  char *msg = NULL;
  if (LLVMVerifyModule(cg->mod, LLVMReturnStatusAction, &msg)) {
    ir_error(d, op->loc, "internal error: codegen made invalid LLVM IR for "
             "'%s': %s", op->name, msg ? msg : "?");
    LLVMDisposeMessage(msg);
    return -1;
  }
  LLVMDisposeMessage(msg);
  return 0;
}

static void free_kernels(CgKernel *k, int n) {
  for (int i = 0; i < n; i++) {
    free(k[i].name);
    free(k[i].params);
  }
  free(k);
}

/* The reduction that targets each tensor, for the runtime's initial fill. */
static void find_reductions(const IrNode *list, CgTensorInfo *tensors) {
  for (const IrNode *s = list; s; s = s->next) {
    switch (s->kind) {
    case IR_LOOP: find_reductions(s->loop.body, tensors); break;
    case IR_IF: find_reductions(s->ifs.then, tensors); break;
    case IR_STORE:
      if (s->acc.red != IR_RED_ASSIGN) tensors[s->acc.tensor->id].red = s->acc.red;
      break;
    case IR_LET: case IR_SET: case IR_FCONST: case IR_ICONST: case IR_VAR:
    case IR_SYM: case IR_LOAD: case IR_BIN: case IR_UN: case IR_CALL:
    case IR_SRC: case IR_DST: case IR_INDEG: case IR_OUTDEG: case IR_NV:
    case IR_NE: case IR_OWNS:
      break;
    case IR_NODE_COUNT: unreachable("bad node kind");
    }
  }
}

static void describe(const IrOp *op, CgProgram *p) {
  p->op = xstrdup(op->name);
  p->nsyms = op->nsyms;
  p->syms = calloc((size_t)op->nsyms + 1, sizeof *p->syms);
  p->ntensors = op->ntensors;
  p->tensors = calloc((size_t)op->ntensors + 1, sizeof *p->tensors);
  if (!p->syms || !p->tensors) unreachable("out of memory");
  for (int i = 0; i < op->nsyms; i++) p->syms[i] = xstrdup(op->syms[i]->name);
  for (int i = 0; i < op->ntensors; i++) {
    const IrTensor *t = op->tensors[i];
    CgTensorInfo *ti = &p->tensors[i];
    ti->name = xstrdup(t->name);
    ti->role = t->role;
    ti->domain = t->domain;
    ti->group = t->group;
    ti->dtype = t->dtype;
    ti->ndims = t->ndims;
    ti->red = IR_RED_ASSIGN;
    ti->staged = t->shared;
    for (int j = 0; j < IR_MAX_DIMS; j++) {
      ti->sym_id[j] = j < t->ndims && t->dims[j].sym ? t->dims[j].sym->id : -1;
      ti->dims[j].value = j < t->ndims ? t->dims[j].value : 0;
    }
  }
  find_reductions(op->body, p->tensors);
  /* A tensor the op fills itself (passes/fill.c) is written whole by its
   * stages: the runtime fills nothing (a checked run poisons it). */
  for (int i = 0; i < op->ntensors; i++)
    if (op->tensors[i]->filled) {
      p->tensors[i].red = IR_RED_ASSIGN;
      p->tensors[i].filled = true;
    }
  p->ir = ir_op_to_string(op);
}

bool cg_available(void) { return true; }

int cg_compile(const IrOp *op, const char *target, CgProgram *out, Diag *d) {
  return cg_compile_bits(op, target, 32, out, d);
}

int cg_compile_bits(const IrOp *op, const char *target, int index_bits,
                    CgProgram *out, Diag *d) {
  return cg_compile_layout(op, target, (CgLayout){index_bits, false}, out, d);
}

int cg_compile_layout(const IrOp *op, const char *target, CgLayout layout,
                      CgProgram *out, Diag *d) {
  memset(out, 0, sizeof *out);
  if (!target) target = CG_DEFAULT_TARGET;
  CgCtx cg;
  memset(&cg, 0, sizeof cg);
  CgKernel *kernels = NULL;
  int nkernels = 0;
  double t0 = now_ms();
  if (build(&cg, op, target, layout, &kernels, &nkernels, d) != 0) {
    free_kernels(kernels, nkernels);
    cg_ctx_dispose(&cg);
    return -1;
  }
  double t1 = now_ms();
  if (cg_optimize(&cg) != 0) {
    free_kernels(kernels, nkernels);
    cg_ctx_dispose(&cg);
    return -1;
  }
  double t2 = now_ms();
  out->ptx = cg_emit_ptx(&cg, &out->ptx_len);
  double t3 = now_ms();
  bool csr_edges = cg.csr_edges; /* build()'s: never for a transposed op */
  cg_ctx_dispose(&cg);
  if (!out->ptx) {
    free_kernels(kernels, nkernels);
    return -1;
  }
  out->target = xstrdup(target);
  out->kernels = kernels;
  out->nkernels = nkernels;
  out->times = (CgTimes){t1 - t0, t2 - t1, t3 - t2};
  out->index_bits = layout.index_bits;
  out->csr_edges = csr_edges;
  out->transposed = op->transposed;
  describe(op, out);
  return 0;
}

char *cg_emit_llvm(const IrOp *op, const char *target, bool optimize,
                   Diag *d) {
  return cg_emit_llvm_bits(op, target, 32, optimize, d);
}

char *cg_emit_llvm_bits(const IrOp *op, const char *target, int index_bits,
                        bool optimize, Diag *d) {
  return cg_emit_llvm_layout(op, target, (CgLayout){index_bits, false}, optimize, d);
}

char *cg_emit_llvm_layout(const IrOp *op, const char *target, CgLayout layout,
                          bool optimize, Diag *d) {
  if (!target) target = CG_DEFAULT_TARGET;
  CgCtx cg;
  memset(&cg, 0, sizeof cg);
  CgKernel *kernels = NULL;
  int nkernels = 0;
  char *text = NULL;
  if (build(&cg, op, target, layout, &kernels, &nkernels, d) == 0 &&
      (!optimize || cg_optimize(&cg) == 0)) {
    char *s = LLVMPrintModuleToString(cg.mod);
    text = xstrdup(s);
    LLVMDisposeMessage(s);
  }
  free_kernels(kernels, nkernels);
  cg_ctx_dispose(&cg);
  return text;
}
