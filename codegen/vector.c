/* codegen/vector.c: @vec(n) loops as n-wide vector code.
 *
 * vectorize(fv, n) (passes/vectorize.c) marks a feature loop of n = 2 or 4
 * iterations whose accesses all use fv as `... + fv` in their last index.
 * Its body is emitted once, with fv = 0 and every float value an <n x f32>
 * (element i standing for fv = i):
 *
 *   - an access using fv is one 8- or 16-byte load or store, aligned to its
 *     size; a load of a tensor the kernel does not write carries
 *     !invariant.load (ld.global.nc.v4.f32);
 *   - other float values (W[e], constants, outer locals) are splatted;
 *   - a local declared inside is a vector (a vector accumulator: the body
 *     may hold sequential loops, so `var acc; for e { acc += ... }` keeps n
 *     sums in registers across the edges: outer-loop vectorisation);
 *   - a reduction into a local declared outside adds the n elements in the
 *     order fv = 0, 1, ... (as the scalar loop would);
 *   - a guard that uses fv is `a + fv < b` (or <=), true for every fv when
 *     it is true for fv = n - 1: it is tested once, before the body.
 *
 * The vector body runs only when a run-time test at the loop's entry
 * holds: every guard using fv holds for fv = n - 1, and every vector
 * access is aligned (its last index at fv = 0 and its row length are
 * multiples of n; tensors start 16-byte aligned). Otherwise the loop runs
 * as scalar code, unrolled: the tail of F, an F that is not a multiple of
 * n. An atomic store of a vector is n atomics, one per element (PTX's
 * vector reductions need ISA 8.1, past LLVM 16's 7.8). A body with
 * something this file does not handle (a store
 * not using fv, a bound or vectorised loop inside, a guard or index that
 * needs variables of the body to test) is emitted as scalar code only.
 */
#define GOP_CODEGEN_INTERNAL
#include <string.h>

#include "codegen.h"

enum { MAX_ACCESSES = 32, MAX_GUARDS = 16, MAX_INNER = 64 };

typedef struct Plan {
  const IrVar *fv;
  const IrVar *inner[MAX_INNER]; /* variables bound inside the loop */
  int ninner;
  const IrNode *acc[MAX_ACCESSES]; /* vector accesses */
  int nacc;
  const IrNode *guard[MAX_GUARDS]; /* conditions using fv */
  int nguard;
} Plan;

/* A load, or a graph array read (an edge's endpoint, a degree). */
static bool reads_memory(const IrNode *n, void *ctx) {
  (void)ctx;
  return n->kind == IR_LOAD || n->kind == IR_SRC || n->kind == IR_DST ||
         n->kind == IR_INDEG || n->kind == IR_OUTDEG;
}

/* Whether `e` uses no variable bound inside the loop and reads no memory,
 * so it can be evaluated at the loop's entry (a load there could read
 * what the guards inside the body keep the scalar code from reading). */
static bool outer_only(const Plan *p, const IrNode *e) {
  if (ir_any(e, reads_memory, NULL)) return false;
  for (int i = 0; i < p->ninner; i++)
    if (ir_uses_var(e, p->inner[i])) return false;
  return true;
}

static bool unit(const IrNode *e, const IrVar *v) {
  if (e->kind == IR_VAR) return e->var == v;
  if (e->kind != IR_BIN || e->bin.op != IR_OP_ADD) return false;
  bool a = ir_uses_var(e->bin.a, v), b = ir_uses_var(e->bin.b, v);
  return a != b && unit(a ? e->bin.a : e->bin.b, v);
}

static bool expr_ok(Plan *p, const IrNode *e);

static bool access_ok(Plan *p, const IrNode *acc) {
  int last = acc->acc.nidx - 1;
  for (int i = 0; i < last; i++)
    if (ir_uses_var(acc->acc.idx[i], p->fv) || !expr_ok(p, acc->acc.idx[i])) return false;
  if (last < 0) return acc->kind == IR_LOAD;
  const IrNode *ix = acc->acc.idx[last];
  if (!ir_uses_var(ix, p->fv)) return acc->kind == IR_LOAD && expr_ok(p, ix);
  if (!unit(ix, p->fv) || !outer_only(p, ix) || p->nacc == MAX_ACCESSES) return false;
  p->acc[p->nacc++] = acc;
  return true;
}

static bool expr_ok(Plan *p, const IrNode *e) {
  if (!e) return true;
  switch (e->kind) {
  case IR_LOAD: return access_ok(p, e);
  case IR_BIN: return expr_ok(p, e->bin.a) && expr_ok(p, e->bin.b);
  case IR_UN: return expr_ok(p, e->un.a);
  case IR_CALL:
    for (int i = 0; i < e->call.nargs; i++)
      if (!expr_ok(p, e->call.args[i])) return false;
    return true;
  case IR_SRC: case IR_DST: case IR_INDEG: case IR_OUTDEG: case IR_OWNS:
    return !ir_uses_var(e->endpoint.e, p->fv) && expr_ok(p, e->endpoint.e);
  case IR_VAR: return e->var != p->fv; /* fv outside an index */
  default: return true;
  }
}

/* Whether `e` reads a local declared inside the loop (a vector there). */
static bool uses_inner_local(const Plan *p, const IrNode *e) {
  for (int i = 0; i < p->ninner; i++)
    if (p->inner[i]->kind == IR_VAR_LOCAL && ir_uses_var(e, p->inner[i])) return true;
  return false;
}

static bool guard_ok(Plan *p, const IrNode *c) {
  /* a condition on a vector value would need a branch per element */
  if (uses_inner_local(p, c)) return false;
  if (!ir_uses_var(c, p->fv)) return expr_ok(p, c);
  if (c->kind != IR_BIN || (c->bin.op != IR_OP_LT && c->bin.op != IR_OP_LE) ||
      !unit(c->bin.a, p->fv) || ir_uses_var(c->bin.b, p->fv) || !outer_only(p, c) ||
      p->nguard == MAX_GUARDS)
    return false;
  p->guard[p->nguard++] = c;
  return true;
}

static bool stmts_ok(Plan *p, const IrNode *list) {
  for (const IrNode *s = list; s; s = s->next) {
    switch (s->kind) {
    case IR_LOOP:
      if (s->loop.bind != IR_BIND_NONE || s->loop.vec || ir_uses_var(s->loop.extent, p->fv) ||
          ir_uses_var(s->loop.of, p->fv) || !expr_ok(p, s->loop.extent) ||
          !expr_ok(p, s->loop.of) || !stmts_ok(p, s->loop.body))
        return false;
      break;
    case IR_IF:
      if (!guard_ok(p, s->ifs.cond) || !stmts_ok(p, s->ifs.then)) return false;
      break;
    case IR_STORE: {
      int last = s->acc.nidx - 1;
      if (s->acc.red == IR_RED_MEAN || last < 0 ||
          !ir_uses_var(s->acc.idx[last], p->fv) || !access_ok(p, s) ||
          !expr_ok(p, s->acc.value))
        return false;
      break;
    }
    case IR_LET:
      if (!expr_ok(p, s->let.init)) return false;
      break;
    case IR_SET:
      if (s->set.red == IR_RED_MEAN || !expr_ok(p, s->set.value)) return false;
      break;
    default: return false;
    }
  }
  return true;
}

static void collect_inner(Plan *p, const IrNode *list) {
  for (const IrNode *s = list; s; s = s->next) {
    if (s->kind == IR_LOOP && p->ninner < MAX_INNER) p->inner[p->ninner++] = s->loop.var;
    if (s->kind == IR_LET && p->ninner < MAX_INNER) p->inner[p->ninner++] = s->let.var;
    if (s->kind == IR_LOOP) collect_inner(p, s->loop.body);
    if (s->kind == IR_IF) collect_inner(p, s->ifs.then);
  }
}

bool cg_vec_access(const CgCtx *cg, const IrNode *acc) {
  return cg->vec && acc->acc.nidx > 0 && ir_uses_var(acc->acc.idx[acc->acc.nidx - 1], cg->vec_var);
}

bool cg_vec_guard(const CgCtx *cg, const IrNode *cond) {
  return cg->vec && ir_uses_var(cond, cg->vec_var);
}

LLVMValueRef cg_vec_splat(CgCtx *cg, LLVMValueRef v) {
  LLVMTypeRef ty = LLVMTypeOf(v);
  if (LLVMGetTypeKind(ty) == LLVMVectorTypeKind) return v;
  LLVMTypeRef vt = LLVMVectorType(ty, (unsigned)cg->vec);
  LLVMValueRef r = LLVMGetUndef(vt);
  for (int i = 0; i < cg->vec; i++)
    r = LLVMBuildInsertElement(cg->b, r, v, cg_i32(cg, i), "");
  return r;
}

/* The run-time test of the vector body: guards at fv = n - 1, alignment of
 * the accesses at fv = 0. */
static LLVMValueRef vector_test(CgCtx *cg, const Plan *p, int n, CgVar *fv) {
  LLVMBuilderRef b = cg->b;
  LLVMValueRef ok = LLVMConstInt(cg->t_i1, 1, 0);
  fv->value = cg_idx(cg, n - 1);
  for (int i = 0; i < p->nguard; i++)
    ok = LLVMBuildAnd(b, ok, cg_expr_as(cg, p->guard[i], IR_TY_BOOL), "");
  fv->value = cg_idx(cg, 0);
  LLVMValueRef mask = cg_idx(cg, n - 1);
  for (int i = 0; i < p->nacc; i++) {
    const IrNode *a = p->acc[i];
    const IrTensor *t = a->acc.tensor;
    LLVMValueRef last = cg_expr_as(cg, a->acc.idx[a->acc.nidx - 1], IR_TY_INT);
    LLVMValueRef bits = LLVMBuildAnd(b, last, mask, "");
    if (a->acc.nidx > 1 && t->ndims > 0) {
      const IrDim *d = &t->dims[t->ndims - 1];
      LLVMValueRef len = d->sym ? cg_param_idx(cg, CG_PARAM_SYM, d->sym->id)
                                : cg_idx(cg, d->value);
      bits = LLVMBuildOr(b, bits, LLVMBuildAnd(b, len, mask, ""), "");
    }
    ok = LLVMBuildAnd(b, ok, LLVMBuildICmp(b, LLVMIntEQ, bits, cg_idx(cg, 0), ""), "");
  }
  return ok;
}

bool cg_vec_loop(CgCtx *cg, const IrNode *l) {
  int n = l->loop.vec;
  Plan p = {.fv = l->loop.var};
  collect_inner(&p, l->loop.body);
  if (p.ninner == MAX_INNER || !stmts_ok(&p, l->loop.body) || p.nacc == 0) return false;

  CgVar *fv = &cg->vars[l->loop.var->id];
  CgVar saved = *fv;
  memset(fv, 0, sizeof *fv);
  fv->bound = true;
  LLVMValueRef ok = vector_test(cg, &p, n, fv);
  LLVMBasicBlockRef vbb = cg_block(cg, "vec"), sbb = cg_block(cg, "vec.scalar"),
                    done = cg_block(cg, "vec.done");
  LLVMBuildCondBr(cg->b, ok, vbb, sbb);

  LLVMPositionBuilderAtEnd(cg->b, vbb);
  cg->wide_vec |= n > 4;
  cg->vec = n;
  cg->vec_var = l->loop.var;
  cg_stmts(cg, l->loop.body);
  cg->vec = 0;
  cg->vec_var = NULL;
  for (int i = 0; i < cg->op->nvars; i++) cg->vars[i].in_vec = false;
  *fv = saved;
  LLVMBuildBr(cg->b, done);

  LLVMPositionBuilderAtEnd(cg->b, sbb);
  /* A body that is one guard `a + fv < b` does nothing at all where the
   * guard fails at fv = 0 (the lanes past F: at F = 64 under 128 features
   * a warp, half of them): those skip the scalar loop at once instead of
   * testing the guard n times on the way through it. guard_ok admitted
   * only that form (or <=) for a condition over fv, with b free of fv, so
   * failing at fv = 0 means failing for every fv. */
  const IrNode *only = l->loop.body;
  if (only && !only->next && only->kind == IR_IF && ir_uses_var(only->ifs.cond, l->loop.var)) {
    LLVMBasicBlockRef run = cg_block(cg, "vec.scalar.run");
    fv->bound = true;
    fv->value = cg_idx(cg, 0);
    LLVMBuildCondBr(cg->b, cg_expr_as(cg, only->ifs.cond, IR_TY_BOOL), run, done);
    *fv = saved;
    LLVMPositionBuilderAtEnd(cg->b, run);
  }
  const IrNode *outer = cg->vec_scalar;
  cg->vec_scalar = l;
  cg_loop(cg, l);
  cg->vec_scalar = outer;
  LLVMBuildBr(cg->b, done);
  LLVMPositionBuilderAtEnd(cg->b, done);
  return true;
}
