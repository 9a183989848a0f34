/* codegen/kernel.c: one kernel per stage.
 *
 * A stage (a top-level statement of the op) becomes one `.entry`. Which
 * parameters a kernel needs (tensors, graph arrays, |V|, |E|, extent
 * symbols) depends on how each construct is lowered (src(e) inside an
 * in_edges loop reads in_src, not the COO src), so rather than predicting
 * that in a separate scan the body is first emitted into a function that
 * takes every possible parameter; the blocks are then moved into the real
 * kernel, whose parameters are exactly those the body used. The runtime
 * binds only those, and loads only the graph formats they imply.
 *
 * Pointer parameters are `ptr addrspace(1)`, noalias and 16-byte aligned;
 * those the kernel never stores to are also readonly, and their loads carry
 * !invariant.load, which is what makes NVPTX emit ld.global.nc. The kernel
 * is marked through nvvm.annotations: `kernel`; `maxntidx` from the stage's
 * @threads (.maxntid); and `minctasm` (.minnctapersm) asking for 1024
 * threads per SM, half of the maximum. With .maxntid alone, ptxas 13 aims
 * at full occupancy, 32 registers a thread, and spills to get there; with
 * this floor it may use up to 64. Measured on an H100 (rmat:17:16, F = 64):
 * thread_vertex(1, 1) of u_mul_e_sum 30.2 -> 12.3 ms, gar() 2.73 -> 1.98,
 * u_add_v gas() 2.82 -> 2.17, u_dot_v default 17.4 -> 11.1, warp_vertex
 * 5.28 -> 5.33; asking for 1536 threads (40 registers) was in between.
 * A stage marked @occupancy(N) (passes/occupancy.c) asks for N instead.
 */
#define GOP_CODEGEN_INTERNAL
#include <stdlib.h>
#include <string.h>

#include "codegen.h"

#define DEFAULT_THREADS 256
/* A stage over neighbour groups bound to warps (or teams) with nothing in
 * shared memory: its warps are independent, and registers, not threads,
 * limit how many an SM holds, in whole blocks. Blocks of 4 warps waste
 * less of that than blocks of 8: at 53 registers (u_mul_e_sum, groups of
 * 64) 9 blocks of 128 threads (36 warps) fit an SM against 4 of 256 (32).
 * Measured on an H100 (bench/results/2026-11-27-H100-aggregation-csr-edges,
 * experiments/threads.txt): u_mul_e_sum 2-6% faster on cnr-2000,
 * ogbn-arxiv and soc-Slashdot0902 at F = 16-256 under spmm_groups,
 * spmm_teams and spmm_teams8, copy_u_sum 0-4%, nothing slower; 64
 * threads the same as 128. */
#define GROUPS_THREADS 128
/* A stage with no bound loop runs on one thread; a warp is the smallest
 * block worth launching. */
#define SINGLE_THREADS 32

LLVMValueRef cg_param(CgCtx *cg, CgParamKind kind, int id) {
  switch (kind) {
  case CG_PARAM_TENSOR: return cg->tensor_arg[id];
  case CG_PARAM_SYM: return cg->sym_arg[id];
  case CG_PARAM_SRC: case CG_PARAM_DST: case CG_PARAM_IN_PTR:
  case CG_PARAM_IN_EID: case CG_PARAM_IN_SRC: case CG_PARAM_OUT_PTR:
  case CG_PARAM_OUT_EID: case CG_PARAM_OUT_DST: case CG_PARAM_NV:
  case CG_PARAM_NE: case CG_PARAM_GRP_DST: case CG_PARAM_GRP_FIRST:
  case CG_PARAM_GRP_END: case CG_PARAM_NGROUPS:
  case CG_PARAM_GRP_VPTR: case CG_PARAM_GRP_VROW:
  case CG_PARAM_GRP_UNOWNED: case CG_PARAM_NUNOWNED:
  case CG_PARAM_GRP_OWN: case CG_PARAM_PAIR_SRC: case CG_PARAM_PAIR_MASK:
  case CG_PARAM_PAIR_POS:
    return cg->graph_arg[kind];
  case CG_PARAM_COUNT: break;
  }
  unreachable("bad parameter kind");
}

LLVMValueRef cg_param_idx(CgCtx *cg, CgParamKind kind, int id) {
  return cg_to_idx(cg, cg_param(cg, kind, id));
}

/* Marks the tensors stored to anywhere in `list`, and whether any loop is
 * bound. Expressions hold no stores, so only statements are walked. */
static void scan(CgCtx *cg, const IrNode *list, bool *bound) {
  for (const IrNode *s = list; s; s = s->next) {
    switch (s->kind) {
    case IR_LOOP:
      if (s->loop.bind != IR_BIND_NONE) *bound = true;
      scan(cg, s->loop.body, bound);
      break;
    case IR_STORE: cg->written[s->acc.tensor->id] = true; break;
    case IR_IF: scan(cg, s->ifs.then, bound); break;
    case IR_LET: case IR_SET: break;
    case IR_FCONST: case IR_ICONST: case IR_VAR: case IR_SYM: case IR_LOAD:
    case IR_BIN: case IR_UN: case IR_CALL: case IR_SRC: case IR_DST:
    case IR_INDEG: case IR_OUTDEG: case IR_NV: case IR_NE: case IR_OWNS:
      break; /* an expression as a statement: verify.c refuses it */
    case IR_NODE_COUNT: unreachable("bad node kind");
    }
  }
}

typedef struct FullParam {
  CgParam p;
  LLVMValueRef arg;
} FullParam;

static void add_attr(CgCtx *cg, LLVMValueRef fn, unsigned idx,
                     const char *name, uint64_t value) {
  unsigned kind = LLVMGetEnumAttributeKindForName(name, strlen(name));
  if (kind == 0) unreachable("unknown LLVM attribute");
  LLVMAddAttributeAtIndex(fn, idx, LLVMCreateEnumAttribute(cg->ctx, kind, value));
}

static void annotate(CgCtx *cg, LLVMValueRef fn, const char *key, int value) {
  LLVMMetadataRef md[3] = {
      LLVMValueAsMetadata(fn),
      LLVMMDStringInContext2(cg->ctx, key, strlen(key)),
      LLVMValueAsMetadata(cg_i32(cg, value)),
  };
  LLVMAddNamedMetadataOperand(
      cg->mod, "nvvm.annotations",
      LLVMMetadataAsValue(cg->ctx, LLVMMDNodeInContext2(cg->ctx, md, 3)));
}

/* Moves the body of `full` into a new function `name` that takes only the
 * parameters used, and records them in `k`. */
static LLVMValueRef finish(CgCtx *cg, LLVMValueRef full, FullParam *fp,
                           int nfull, CgKernel *k) {
  LLVMTypeRef *types = calloc((size_t)nfull + 1, sizeof *types);
  int *which = calloc((size_t)nfull + 1, sizeof *which);
  k->params = calloc((size_t)nfull + 1, sizeof *k->params);
  if (!types || !which || !k->params) unreachable("out of memory");
  int n = 0;
  for (int i = 0; i < nfull; i++) {
    if (!LLVMGetFirstUse(fp[i].arg)) continue;
    types[n] = LLVMTypeOf(fp[i].arg);
    which[n] = i;
    k->params[n] = fp[i].p;
    n++;
  }
  k->nparams = n;
  LLVMValueRef fn = LLVMAddFunction(
      cg->mod, k->name, LLVMFunctionType(cg->t_void, types, (unsigned)n, 0));
  add_attr(cg, fn, LLVMAttributeFunctionIndex, "nounwind", 0);
  for (int j = 0; j < n; j++) {
    LLVMValueRef arg = LLVMGetParam(fn, (unsigned)j);
    const CgParam *p = &k->params[j];
    size_t len;
    const char *name = LLVMGetValueName2(fp[which[j]].arg, &len);
    LLVMSetValueName2(arg, name, len);
    LLVMReplaceAllUsesWith(fp[which[j]].arg, arg);
    if (cg_param_bytes(p->kind) == 8) {
      unsigned idx = (unsigned)j + 1;
      add_attr(cg, fn, idx, "noalias", 0);
      add_attr(cg, fn, idx, "align", 16);
      add_attr(cg, fn, idx, "nocapture", 0);
      if (p->kind != CG_PARAM_TENSOR || !cg->written[p->id])
        add_attr(cg, fn, idx, "readonly", 0);
    }
  }
  for (LLVMBasicBlockRef bb = LLVMGetFirstBasicBlock(full), next; bb; bb = next) {
    next = LLVMGetNextBasicBlock(bb);
    LLVMRemoveBasicBlockFromParent(bb);
    LLVMAppendExistingBasicBlock(fn, bb);
  }
  LLVMDeleteFunction(full);
  free(types);
  free(which);
  annotate(cg, fn, "kernel", 1);
  annotate(cg, fn, "maxntidx", k->threads);
  /* an f64 op's values take two registers each, and a @vec(8) loop keeps
   * 8 values a vector (spmm_teams8: 8 sums, 4 edges of 8 loaded values in
   * flight; max/min spilled at 64 registers): 512 threads per SM leaves
   * them up to 128. A neighbour-group kernel of 64-bit indices keeps its
   * table and edge positions in pairs of registers: with no floor to press
   * it ptxas gives copy_u_sum spmm_groups(32, 2) 46 registers (10 blocks of
   * 128 an SM), where the 32-bit kernel takes 38 (12 blocks); asked for
   * 1536 threads it fits in 40 without spilling, and runs at 1.01-1.04x the
   * 32-bit kernel instead of 1.10-1.16x at 512 (H200, bench/NOTES.md,
   * 2026-11-28). Kernels that spill at the floor asked for (those reading
   * edge rows: u_mul_e_sum_full spills at 1024) are compiled again with a
   * lower one when loaded (runtime/module.c, jit_unspilled). */
  bool wide_groups = false;
  for (int j = 0; j < n && cg->t_idx == cg->t_i64; j++)
    wide_groups |= k->params[j].kind == CG_PARAM_GRP_FIRST;
  int per_sm = cg->t_val == cg->t_f64 || cg->wide_vec ? 512 : wide_groups ? 1536 : 1024;
  if (k->occ > 0) per_sm = k->occ; /* occupancy(loop, N): passes/occupancy.c */
  annotate(cg, fn, "minctasm", per_sm / k->threads > 0 ? per_sm / k->threads : 1);
  return fn;
}

/* Whether `stage` is a warp loop over neighbour groups that keeps nothing
 * in shared memory (GROUPS_THREADS). */
static bool groups_stage(const IrOp *op, const IrNode *stage) {
  if (stage->kind != IR_LOOP || stage->loop.kind != IR_LOOP_GROUPS ||
      stage->loop.bind != IR_BIND_WARP || stage->loop.shared)
    return false;
  for (int i = 0; i < op->ntensors; i++)
    if (op->tensors[i]->shared) return false;
  return true;
}

/* An op's stages run as one kernel each, in order in one stream. On sm_90
 * a stage's kernel may be scheduled while the one before it still runs
 * (programmatic dependent launch): every stage after the first starts with
 * griddepcontrol.wait, which returns once the stage before has finished and
 * its writes are visible, and every stage before the last lets the next
 * one's blocks be scheduled from its start (griddepcontrol.launch_dependents).
 * Nothing is read before the wait, so the order of the stages' memory
 * accesses is what it was; what is saved is the gap between two kernels
 * (0.2-0.9 us a boundary on an H200, bench/NOTES.md). A kernel of one stage
 * gets neither instruction: each costs its blocks a few cycles (3.5% on
 * warp_edge's |E| / 4 blocks), for nothing there. Returns whether the wait
 * was emitted (CgKernel.waits). */
static bool grid_dependencies(CgCtx *cg, bool wait, bool trigger) {
  if (strcmp(cg->target, "sm_90") != 0) return false; /* PTX 7.8, sm_90 */
  LLVMTypeRef fty = LLVMFunctionType(LLVMVoidTypeInContext(cg->ctx), NULL, 0, 0);
  static const char *const text[] = {"griddepcontrol.wait;", "griddepcontrol.launch_dependents;"};
  bool want[] = {wait, trigger};
  for (int i = 0; i < 2; i++)
    if (want[i]) /* side effects, memory unknown: no load moves above it */
      LLVMBuildCall2(cg->b, fty,
                     LLVMGetInlineAsm(fty, (char *)text[i], strlen(text[i]), (char *)"", 0, 1, 0,
                                      LLVMInlineAsmDialectATT, 0),
                     NULL, 0, "");
  return wait;
}

int cg_kernel(CgCtx *cg, const IrNode *stage, int index, CgKernel *k) {
  const IrOp *op = cg->op;
  int errors0 = cg->errors;
  memset(k, 0, sizeof *k);
  k->stage = index;
  size_t nlen = strlen(op->name) + 16;
  k->name = malloc(nlen);
  if (!k->name) unreachable("out of memory");
  snprintf(k->name, nlen, "%s_s%d", op->name, index);

  free(cg->written);
  free(cg->tensor_arg);
  free(cg->sym_arg);
  free(cg->vars);
  free(cg->staged);
  cg->staged = calloc((size_t)op->ntensors + 1, sizeof *cg->staged);
  cg->staged_floats = NULL;
  cg->written = calloc((size_t)op->ntensors + 1, sizeof *cg->written);
  cg->tensor_arg = calloc((size_t)op->ntensors + 1, sizeof *cg->tensor_arg);
  cg->sym_arg = calloc((size_t)op->nsyms + 1, sizeof *cg->sym_arg);
  cg->vars = calloc((size_t)op->nvars + 1, sizeof *cg->vars);
  if (!cg->written || !cg->tensor_arg || !cg->sym_arg || !cg->vars || !cg->staged)
    unreachable("out of memory");
  /* The stage alone, without the stages that follow it. */
  IrNode one = *stage;
  one.next = NULL;
  bool bound = false;
  scan(cg, &one, &bound);

  int threads = stage->kind == IR_LOOP ? stage->loop.threads : 0;
  if (threads == 0) threads = !bound ? SINGLE_THREADS : groups_stage(op, stage) ? GROUPS_THREADS
                                                                                 : DEFAULT_THREADS;
  if (threads < 32 || threads > 1024 || threads % 32 != 0) {
    cg_error(cg, stage->loc,
             "@threads(%d): threads per block must be a multiple of 32 "
             "between 32 and 1024",
             threads);
    threads = DEFAULT_THREADS;
  }
  k->threads = threads;
  k->occ = stage->kind == IR_LOOP ? stage->loop.occ : 0;
  k->launch.kind = CG_LAUNCH_ONE;
  k->launch.per_block = 1;
  k->shared_tensor = -1;
  cg->kernel = k;
  cg->launch_set = false;
  cg->bound_depth = cg->seq_depth = 0;
  cg->in_block = cg->in_warp = cg->in_lane = cg->in_thread = false;

  /* The function with every parameter the body might use. */
  int nfull = op->ntensors + (CG_PARAM_NE - CG_PARAM_SRC + 1) + op->nsyms;
  FullParam *fp = calloc((size_t)nfull, sizeof *fp);
  LLVMTypeRef *types = calloc((size_t)nfull + 1, sizeof *types);
  if (!fp || !types) unreachable("out of memory");
  int n = 0;
  for (int i = 0; i < op->ntensors; i++)
    fp[n++].p = (CgParam){CG_PARAM_TENSOR, i};
  for (int kind = CG_PARAM_SRC; kind <= CG_PARAM_NE; kind++)
    fp[n++].p = (CgParam){(CgParamKind)kind, 0};
  for (int i = 0; i < op->nsyms; i++) fp[n++].p = (CgParam){CG_PARAM_SYM, i};
  for (int i = 0; i < n; i++)
    types[i] = cg_param_bytes(fp[i].p.kind) == 8    ? cg->t_gptr
               : cg->wide && (fp[i].p.kind == CG_PARAM_NE || fp[i].p.kind == CG_PARAM_NGROUPS)
                   ? cg->t_i64
                                                       : cg->t_i32;
  LLVMValueRef full = LLVMAddFunction(
      cg->mod, "gop.full", LLVMFunctionType(cg->t_void, types, (unsigned)n, 0));
  free(types);
  for (int i = 0; i < n; i++) {
    LLVMValueRef arg = fp[i].arg = LLVMGetParam(full, (unsigned)i);
    const CgParam *p = &fp[i].p;
    const char *name = p->kind == CG_PARAM_TENSOR ? op->tensors[p->id]->name
                       : p->kind == CG_PARAM_SYM  ? op->syms[p->id]->name
                                                  : cg_param_name(p->kind);
    LLVMSetValueName2(arg, name, strlen(name));
    if (p->kind == CG_PARAM_TENSOR) cg->tensor_arg[p->id] = arg;
    else if (p->kind == CG_PARAM_SYM) cg->sym_arg[p->id] = arg;
    else cg->graph_arg[p->kind] = arg;
  }

  cg->fn = full;
  cg->wide_vec = false;
  cg->entry = cg_block(cg, "entry");
  LLVMBasicBlockRef body = cg_block(cg, "body");
  LLVMPositionBuilderAtEnd(cg->b, body);
  k->waits = grid_dependencies(cg, index > 0, stage->next != NULL);
  cg_shared_stage(cg, &one); /* before any thread leaves: it has a barrier */
  if (!bound) {
    /* Nothing is bound, so every thread would run the whole stage: keep
     * it to thread 0 of block 0 (the launch is one block). */
    LLVMValueRef first = LLVMBuildAnd(
        cg->b,
        LLVMBuildICmp(cg->b, LLVMIntEQ, cg_sreg(cg, "tid.x"), cg_i32(cg, 0), ""),
        LLVMBuildICmp(cg->b, LLVMIntEQ, cg_sreg(cg, "ctaid.x"), cg_i32(cg, 0), ""),
        "first");
    LLVMBasicBlockRef run = cg_block(cg, "single"), done = cg_block(cg, "done");
    LLVMBuildCondBr(cg->b, first, run, done);
    LLVMPositionBuilderAtEnd(cg->b, run);
    cg_stmts(cg, &one);
    LLVMBuildBr(cg->b, done);
    LLVMPositionBuilderAtEnd(cg->b, done);
  } else {
    cg_stmts(cg, &one);
  }
  LLVMBuildRetVoid(cg->b);
  LLVMPositionBuilderAtEnd(cg->b, cg->entry);
  LLVMBuildBr(cg->b, body);

  cg->fn = finish(cg, full, fp, nfull, k);
  free(fp);
  cg->kernel = NULL;
  return cg->errors > errors0 ? -1 : 0;
}
