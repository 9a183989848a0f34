/* codegen/shared.c: neighbour groups through shared memory (GNNAdvisor).
 *
 * A `@shared` groups loop (promote(g, shared), passes/promote.c) is not a
 * grid-stride warp loop like the others (loop.c): its warps must meet at
 * block barriers, so the whole block walks the group table together. With
 * W warps per block, block b takes rows base = b*W, b*W + W*gridDim, ...;
 * warp w of the block takes row base + w (idle, but still at the barriers,
 * past the end). For each step:
 *
 *   1. each warp fills its row of the dynamic shared memory (W rows of the
 *      tensor's features, `rowlen` floats each) with the reduction's
 *      identity, and syncs its lanes;
 *   2. the body runs for the warp's group; `shared Y[dst(e), f] op= x`
 *      becomes a plain update of element f of the warp's row (the lanes own
 *      distinct elements: promote checked it);
 *   3. barrier; the first warp of each run of consecutive rows with the same
 *      destination (its leader: warp 0, or a destination other than the row
 *      before) adds up the run's rows, lanes over the features, and adds
 *      the sums to the destination with one atomic per feature (other blocks
 *      may flush into the same destination);
 *   4. barrier, so that the rows can be refilled.
 *
 * A destination with k groups in one block thus costs one atomic per
 * feature instead of k, which is the point of GNNAdvisor's leader flush.
 * The runtime sizes the dynamic shared memory as W * rowlen * 4 bytes
 * (CgKernel.shared_tensor, runtime/exec.c).
 *
 * Staged inputs (promote(X, shared) on a dense input: `X: f32[H, C]
 * @shared`): at the start of every kernel that reads X, before any thread
 * can leave, the block's threads copy X whole into dynamic shared memory
 * (thread t takes elements t, t + blockDim, ...: consecutive threads read
 * consecutive floats, so the copy is coalesced), meet at one barrier, and
 * every load of X in the kernel then reads the copy (ld.shared). The copies
 * come first in the dynamic shared memory, in tensor order, each rounded up
 * to 16 bytes (so @vec(4) loads of them stay aligned); the accumulator rows
 * of a @shared groups loop follow them. runtime/exec.c
 * (rt_kernel_shared_bytes) computes the same layout from the extents at
 * launch: a kernel stages X exactly when it takes X as a parameter.
 */
#include <math.h>
#include <string.h>

#define GOP_CODEGEN_INTERNAL
#include "codegen.h"

/* The f32 array in shared memory (address space 3) every such kernel uses:
 * `.extern .shared .align 16 .b8 gop_smem[]`. */
static LLVMValueRef smem(CgCtx *cg) {
  LLVMValueRef g = LLVMGetNamedGlobal(cg->mod, "gop_smem");
  if (g) return g;
  g = LLVMAddGlobalInAddressSpace(cg->mod, LLVMArrayType(cg->t_f32, 0), "gop_smem", 3);
  LLVMSetLinkage(g, LLVMExternalLinkage);
  LLVMSetAlignment(g, 16);
  return g;
}

static LLVMValueRef row_at(CgCtx *cg, LLVMValueRef base, LLVMValueRef i) {
  return LLVMBuildGEP2(cg->b, cg->t_f32, base, &i, 1, "");
}

/* Where the accumulator rows start: after the staged inputs. */
static LLVMValueRef acc_base(CgCtx *cg) {
  return cg->staged_floats ? row_at(cg, smem(cg), cg->staged_floats) : smem(cg);
}

/* The number of floats of one vertex's row of `t`: its feature dims. */
static LLVMValueRef row_length(CgCtx *cg, const IrTensor *t) {
  LLVMValueRef n = cg_i32(cg, 1);
  for (int i = 0; i < t->ndims; i++) {
    LLVMValueRef dim = t->dims[i].sym ? cg_param(cg, CG_PARAM_SYM, t->dims[i].sym->id)
                                      : cg_i32(cg, t->dims[i].value);
    n = LLVMBuildNSWMul(cg->b, n, dim, "rowlen");
  }
  return n;
}

static const IrNode *first_shared_store(const IrNode *list) {
  for (const IrNode *s = list; s; s = s->next) {
    const IrNode *x = NULL;
    if (s->kind == IR_STORE && s->acc.how == IR_HOW_SHARED) return s;
    if (s->kind == IR_LOOP) x = first_shared_store(s->loop.body);
    if (s->kind == IR_IF) x = first_shared_store(s->ifs.then);
    if (x) return x;
  }
  return NULL;
}

static double identity(IrRed red) {
  return red == IR_RED_MAX ? -INFINITY : red == IR_RED_MIN ? INFINITY : 0.0;
}

/* A counted loop `for (i = start; i < end; i += step)` around what `body`
 * emits; the builder is left after it. */
typedef void (*LoopBody)(CgCtx *cg, LLVMValueRef i, void *ctx);
static void counted(CgCtx *cg, LLVMValueRef start, LLVMValueRef end,
                    LLVMValueRef step, const char *name, LoopBody body,
                    void *ctx) {
  LLVMBuilderRef b = cg->b;
  LLVMBasicBlockRef pre = LLVMGetInsertBlock(b);
  LLVMBasicBlockRef head = cg_block(cg, name), exit = cg_block(cg, "end");
  LLVMBuildCondBr(b, LLVMBuildICmp(b, LLVMIntSLT, start, end, ""), head, exit);
  LLVMPositionBuilderAtEnd(b, head);
  LLVMValueRef i = LLVMBuildPhi(b, cg->t_i32, name);
  body(cg, i, ctx);
  LLVMValueRef next = LLVMBuildNSWAdd(b, i, step, "");
  LLVMBasicBlockRef latch = LLVMGetInsertBlock(b);
  LLVMBuildCondBr(b, LLVMBuildICmp(b, LLVMIntSLT, next, end, ""), head, exit);
  LLVMValueRef vals[2] = {start, next};
  LLVMBasicBlockRef bbs[2] = {pre, latch};
  LLVMAddIncoming(i, vals, bbs, 2);
  LLVMPositionBuilderAtEnd(b, exit);
}

typedef struct Flush {
  IrRed red;
  const IrTensor *t;
  LLVMValueRef rowlen, w, run_end, dst;
} Flush;

static void fill_row(CgCtx *cg, LLVMValueRef k, void *ctx) {
  const Flush *f = ctx;
  LLVMValueRef st = LLVMBuildStore(cg->b, cg_f32(cg, identity(f->red)),
                                   row_at(cg, cg->sh_row, k));
  LLVMSetAlignment(st, 4);
}

/* Lane's feature k: the run's rows added up, then one atomic. */
static void flush_feature(CgCtx *cg, LLVMValueRef k, void *ctx) {
  const Flush *f = ctx;
  LLVMBuilderRef b = cg->b;
  LLVMValueRef base = acc_base(cg);
  LLVMBasicBlockRef pre = LLVMGetInsertBlock(b);
  LLVMValueRef first = LLVMBuildNUWAdd(b, f->w, cg_i32(cg, 1), "");
  LLVMValueRef acc0 = LLVMBuildLoad2(
      b, cg->t_f32, row_at(cg, base, LLVMBuildNSWAdd(b, LLVMBuildNSWMul(b, f->w, f->rowlen, ""), k, "")), "acc");
  LLVMSetAlignment(acc0, 4);
  LLVMBasicBlockRef head = cg_block(cg, "run"), body = cg_block(cg, "run.add"),
                    done = cg_block(cg, "run.done");
  LLVMBuildBr(b, head);
  LLVMPositionBuilderAtEnd(b, head);
  LLVMValueRef j = LLVMBuildPhi(b, cg->t_i32, "j");
  LLVMValueRef acc = LLVMBuildPhi(b, cg->t_f32, "acc");
  LLVMBuildCondBr(b, LLVMBuildICmp(b, LLVMIntSLT, j, f->run_end, ""), body, done);
  LLVMPositionBuilderAtEnd(b, body);
  LLVMValueRef x = LLVMBuildLoad2(
      b, cg->t_f32, row_at(cg, base, LLVMBuildNSWAdd(b, LLVMBuildNSWMul(b, j, f->rowlen, ""), k, "")), "");
  LLVMSetAlignment(x, 4);
  LLVMValueRef sum = f->red == IR_RED_MAX ? cg_max(cg, acc, x)
                     : f->red == IR_RED_MIN ? cg_min(cg, acc, x)
                                            : LLVMBuildFAdd(b, acc, x, "");
  LLVMValueRef jn = LLVMBuildNUWAdd(b, j, cg_i32(cg, 1), "");
  LLVMBasicBlockRef latch = LLVMGetInsertBlock(b);
  LLVMBuildBr(b, head);
  LLVMValueRef jv[2] = {first, jn}, av[2] = {acc0, sum};
  LLVMBasicBlockRef jb[2] = {pre, latch};
  LLVMAddIncoming(j, jv, jb, 2);
  LLVMAddIncoming(acc, av, jb, 2);
  LLVMPositionBuilderAtEnd(b, done);
  LLVMValueRef off = LLVMBuildNSWAdd(
      b, LLVMBuildNSWMul(b, LLVMBuildSExt(b, f->dst, cg->t_i64, ""),
                         LLVMBuildSExt(b, f->rowlen, cg->t_i64, ""), ""),
      LLVMBuildSExt(b, k, cg->t_i64, ""), "");
  LLVMValueRef ptr = LLVMBuildGEP2(b, cg->t_f32, cg_param(cg, CG_PARAM_TENSOR, f->t->id),
                                   &off, 1, "");
  cg_atomic(cg, f->red, ptr, acc);
}

void cg_shared_groups(CgCtx *cg, const IrNode *l) {
  LLVMBuilderRef b = cg->b;
  CgKernel *k = cg->kernel;
  const IrNode *st = first_shared_store(l->loop.body);
  if (l->loop.bind != IR_BIND_WARP || cg->bound_depth > 0 || !st) {
    cg_error(cg, l->loc, "@shared groups loop '%s' must be a stage's outermost "
             "loop, bound to warp, holding `shared` stores", l->loop.var->name);
    return;
  }
  if (st->acc.tensor->dtype != IR_DT_F32 || cg->t_val != cg->t_f32) {
    cg_error(cg, l->loc, "@shared groups loop '%s': its rows accumulate in f32 shared "
             "memory, and '%s' is %s in an op computing in %s (use another schedule)",
             l->loop.var->name, st->acc.tensor->name, ir_dtype_name(st->acc.tensor->dtype),
             ir_dtype_name(cg->op->acc));
    return;
  }
  Flush f = {.red = st->acc.red, .t = st->acc.tensor};
  cg->launch_set = true;
  memset(&k->launch, 0, sizeof k->launch);
  k->launch.kind = CG_LAUNCH_FILL;
  k->launch.bind = IR_BIND_WARP;
  k->launch.per_block = k->threads / 32;
  k->group = l->loop.group;
  k->group_ilv = l->loop.ilv;
  k->group_cls = l->loop.ilv_cls;
  k->group_thr = l->loop.ilv_thr;
  k->shared_tensor = f.t->id;

  int W = k->threads / 32;
  LLVMValueRef tid = cg_sreg(cg, "tid.x");
  LLVMValueRef w = f.w = LLVMBuildLShr(b, tid, cg_i32(cg, 5), "warp");
  LLVMValueRef lane = LLVMBuildAnd(b, tid, cg_i32(cg, 31), "lane");
  /* rows are numbered in the index type (i64 with 64-bit indices: a
   * table may pass 2^31 rows); warps and lanes stay i32 */
  LLVMValueRef ngroups = cg_param_idx(cg, CG_PARAM_NGROUPS, 0);
  f.rowlen = row_length(cg, f.t);
  LLVMValueRef start = LLVMBuildNSWMul(b, cg_to_idx(cg, cg_sreg(cg, "ctaid.x")), cg_idx(cg, W), "");
  LLVMValueRef step = LLVMBuildNSWMul(b, cg_to_idx(cg, cg_sreg(cg, "nctaid.x")), cg_idx(cg, W), "");

  /* the block's walk over the table, one row per warp and step */
  LLVMBasicBlockRef pre = LLVMGetInsertBlock(b);
  LLVMBasicBlockRef head = cg_block(cg, l->loop.var->name), exit = cg_block(cg, "endgroups");
  LLVMBuildCondBr(b, LLVMBuildICmp(b, LLVMIntSLT, start, ngroups, ""), head, exit);
  LLVMPositionBuilderAtEnd(b, head);
  LLVMValueRef base = LLVMBuildPhi(b, cg->t_idx, "base");
  LLVMValueRef g = LLVMBuildNSWAdd(b, base, cg_to_idx(cg, w), l->loop.var->name);
  LLVMValueRef active = LLVMBuildICmp(b, LLVMIntSLT, g, ngroups, "active");
  LLVMValueRef saved_row = cg->sh_row;
  LLVMValueRef woff = LLVMBuildNSWMul(b, w, f.rowlen, "");
  cg->sh_row = row_at(cg, acc_base(cg), woff);

  /* 1. the warp's row starts at the identity */
  counted(cg, lane, f.rowlen, cg_i32(cg, 32), "fill", fill_row, &f);
  LLVMValueRef all = cg_i32(cg, -1);
  cg_intrinsic(cg, "llvm.nvvm.bar.warp.sync", NULL, 0, &all, 1);

  /* 2. the body, for a warp with a row */
  LLVMBasicBlockRef body = cg_block(cg, "group"), joined = cg_block(cg, "group.done");
  LLVMBuildCondBr(b, active, body, joined);
  LLVMPositionBuilderAtEnd(b, body);
  CgVar *v = &cg->vars[l->loop.var->id];
  CgVar saved_var = *v;
  memset(v, 0, sizeof *v);
  v->bound = true;
  v->value = g;
  bool saved_warp = cg->in_warp;
  cg->bound_depth++;
  cg->in_warp = true;
  cg_stmts(cg, l->loop.body);
  cg->bound_depth--;
  cg->in_warp = saved_warp;
  *v = saved_var;
  LLVMBuildBr(b, joined);
  LLVMPositionBuilderAtEnd(b, joined);

  /* 3. barrier, then the leaders flush their runs */
  cg_intrinsic(cg, "llvm.nvvm.barrier0", NULL, 0, NULL, 0);
  LLVMBasicBlockRef chk = cg_block(cg, "leader.chk"), flush = cg_block(cg, "leader"),
                    flushed = cg_block(cg, "leader.done");
  LLVMBuildCondBr(b, active, chk, flushed);
  LLVMPositionBuilderAtEnd(b, chk);
  f.dst = cg_graph_at(cg, CG_PARAM_GRP_DST, g, "gdst");
  LLVMValueRef first_warp = LLVMBuildICmp(b, LLVMIntEQ, w, cg_i32(cg, 0), "");
  LLVMValueRef prev = LLVMBuildSelect(b, first_warp, g,
                                      LLVMBuildNSWSub(b, g, cg_idx(cg, 1), ""), "");
  LLVMValueRef pdst = cg_graph_at(cg, CG_PARAM_GRP_DST, prev, "pdst");
  LLVMValueRef leader = LLVMBuildOr(b, first_warp,
                                    LLVMBuildICmp(b, LLVMIntNE, pdst, f.dst, ""), "");
  LLVMBuildCondBr(b, leader, flush, flushed);
  LLVMPositionBuilderAtEnd(b, flush);
  {
    /* the run: rows w+1.. of this block with the same destination */
    LLVMBasicBlockRef rpre = LLVMGetInsertBlock(b);
    LLVMBasicBlockRef rhead = cg_block(cg, "runend"), rnext = cg_block(cg, "runend.next"),
                      rstep = cg_block(cg, "runend.step"), rdone = cg_block(cg, "runend.done");
    LLVMValueRef first = LLVMBuildNUWAdd(b, w, cg_i32(cg, 1), "");
    LLVMBuildBr(b, rhead);
    LLVMPositionBuilderAtEnd(b, rhead);
    LLVMValueRef j = LLVMBuildPhi(b, cg->t_i32, "r");
    LLVMValueRef in_block = LLVMBuildICmp(b, LLVMIntSLT, j, cg_i32(cg, W), "");
    LLVMValueRef row = LLVMBuildNSWAdd(b, base, cg_to_idx(cg, j), "");
    LLVMValueRef in_table = LLVMBuildICmp(b, LLVMIntSLT, row, ngroups, "");
    LLVMBuildCondBr(b, LLVMBuildAnd(b, in_block, in_table, ""), rnext, rdone);
    LLVMPositionBuilderAtEnd(b, rnext);
    LLVMValueRef jd = cg_graph_at(cg, CG_PARAM_GRP_DST, row, "rdst");
    LLVMBuildCondBr(b, LLVMBuildICmp(b, LLVMIntEQ, jd, f.dst, ""), rstep, rdone);
    LLVMPositionBuilderAtEnd(b, rstep);
    LLVMValueRef jn = LLVMBuildNUWAdd(b, j, cg_i32(cg, 1), "");
    LLVMBuildBr(b, rhead);
    LLVMValueRef jv[2] = {first, jn};
    LLVMBasicBlockRef jb[2] = {rpre, rstep};
    LLVMAddIncoming(j, jv, jb, 2);
    LLVMPositionBuilderAtEnd(b, rdone);
    f.run_end = j;
  }
  counted(cg, lane, f.rowlen, cg_i32(cg, 32), "flush", flush_feature, &f);
  LLVMBuildBr(b, flushed);
  LLVMPositionBuilderAtEnd(b, flushed);

  /* 4. barrier before the rows are refilled */
  cg_intrinsic(cg, "llvm.nvvm.barrier0", NULL, 0, NULL, 0);
  cg->sh_row = saved_row;
  LLVMValueRef next = LLVMBuildNSWAdd(b, base, step, "");
  LLVMBasicBlockRef latch = LLVMGetInsertBlock(b);
  LLVMBuildCondBr(b, LLVMBuildICmp(b, LLVMIntSLT, next, ngroups, ""), head, exit);
  LLVMValueRef bv[2] = {start, next};
  LLVMBasicBlockRef bb[2] = {pre, latch};
  LLVMAddIncoming(base, bv, bb, 2);
  LLVMPositionBuilderAtEnd(b, exit);
}

/* A feature offset inside a shared-memory row, as i32: the row is at most
 * the shared memory's size, whatever the index width (64-bit kernels give
 * their integer expressions and extents as i64). */
static LLVMValueRef row_i32(CgCtx *cg, LLVMValueRef v) {
  return LLVMTypeOf(v) == cg->t_i32 ? v : LLVMBuildTrunc(cg->b, v, cg->t_i32, "");
}

void cg_shared_store(CgCtx *cg, const IrNode *s) {
  LLVMBuilderRef b = cg->b;
  const IrTensor *t = s->acc.tensor;
  if (!cg->sh_row) {
    cg_error(cg, s->loc, "`shared` store to '%s' outside a @shared groups loop",
             t->name);
    return;
  }
  /* the row-major offset of the feature indices */
  LLVMValueRef off = cg_i32(cg, 0);
  for (int i = 1; i < s->acc.nidx; i++) {
    const IrDim *dim = &t->dims[i - 1];
    LLVMValueRef n = dim->sym ? cg_param(cg, CG_PARAM_SYM, dim->sym->id)
                              : cg_i32(cg, dim->value);
    off = LLVMBuildNSWAdd(b, LLVMBuildNSWMul(b, off, row_i32(cg, n), ""),
                          row_i32(cg, cg_expr_as(cg, s->acc.idx[i], IR_TY_INT)), "");
  }
  LLVMValueRef ptr = row_at(cg, cg->sh_row, off);
  LLVMValueRef old = LLVMBuildLoad2(b, cg->t_f32, ptr, t->name);
  LLVMSetAlignment(old, 4);
  LLVMValueRef st = LLVMBuildStore(b, cg_reduce(cg, s->acc.red, old, s->acc.value), ptr);
  LLVMSetAlignment(st, 4);
}

/* ---- promote(X, shared): inputs staged at the kernel's start ---- */

typedef struct Copy {
  LLVMValueRef from, to; /* the tensor in global memory, its copy */
} Copy;

static void copy_elem(CgCtx *cg, LLVMValueRef i, void *ctx) {
  const Copy *c = ctx;
  LLVMValueRef i64 = LLVMBuildSExt(cg->b, i, cg->t_i64, "");
  LLVMValueRef src = LLVMBuildInBoundsGEP2(cg->b, cg->t_f32, c->from, &i64, 1, "");
  LLVMValueRef x = cg_load(cg, cg->t_f32, src, true, "stage");
  LLVMValueRef st = LLVMBuildStore(cg->b, x, row_at(cg, c->to, i));
  LLVMSetAlignment(st, 4);
}

void cg_shared_stage(CgCtx *cg, const IrNode *stage) {
  const IrOp *op = cg->op;
  LLVMBuilderRef b = cg->b;
  LLVMValueRef at = NULL; /* floats of the copies so far */
  for (int i = 0; i < op->ntensors; i++) {
    const IrTensor *t = op->tensors[i];
    if (!t->shared || !ir_reads_tensor(stage, t)) continue;
    if (t->role != IR_ROLE_IN || t->domain != IR_DOM_DENSE || t->dtype != IR_DT_F32) {
      cg_error(cg, t->loc, "tensor '%s' is @shared but is not a dense f32 "
               "input", t->name);
      continue;
    }
    LLVMValueRef n = row_length(cg, t); /* a dense tensor is one row */
    LLVMValueRef off = at ? at : cg_i32(cg, 0);
    Copy c = {cg_param(cg, CG_PARAM_TENSOR, t->id), row_at(cg, smem(cg), off)};
    counted(cg, cg_sreg(cg, "tid.x"), n, cg_sreg(cg, "ntid.x"), "stage",
            copy_elem, &c);
    cg->staged[i] = c.to;
    /* the next copy starts 16-byte aligned */
    at = LLVMBuildAnd(b, LLVMBuildNSWAdd(b, LLVMBuildNSWAdd(b, off, n, ""),
                                         cg_i32(cg, 3), ""),
                      cg_i32(cg, -4), "staged");
  }
  if (!at) return;
  /* every copy is complete before any thread reads one */
  cg_intrinsic(cg, "llvm.nvvm.barrier0", NULL, 0, NULL, 0);
  cg->staged_floats = at;
}
