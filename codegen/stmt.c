/* codegen/stmt.c: statement lists, locals and guards.
 *
 * Locals (`var s = ...`) live in allocas of the entry block, which SROA and
 * mem2reg turn into registers, one copy per thread; their reductions
 * (`s += x`) combine like plain stores (store.c). A reduction from inside a
 * bound loop that the `var` is outside of is refused unless the conflict
 * analysis made it `shuffle`: then each lane reduces into its own copy and,
 * right after the statement of the `var`'s list that holds the sets, the
 * copies are combined by a butterfly of shfl.sync.bfly (offsets 16, 8, 4,
 * 2, 1, full mask), which leaves the total in every lane. The `var` is
 * outside every @lane loop, so all 32 lanes of the warp reach the shuffles
 * together (in a @team(T) warp loop, the T lanes of the team: offsets T / 2
 * down to 1, the team's mask, since teams of one warp may run different
 * numbers of iterations); lanes that contributed nothing hold the identity (the analysis
 * made the local start at it). Guards (`if (f < F) { }`, made by split) are
 * a conditional branch around their body. Loops and stores have their own
 * files.
 */
#define GOP_CODEGEN_INTERNAL
#include "codegen.h"

static void cg_stmts_one(CgCtx *cg, const IrNode *s);

static void emit_let(CgCtx *cg, const IrNode *s) {
  CgVar *v = &cg->vars[s->let.var->id];
  v->bound = true;
  v->depth = cg->bound_depth;
  v->in_vec = cg->vec > 0;
  if (cg->vec) { /* a vector body (vector.c): one copy per element */
    if (!v->vslot)
      v->vslot = cg_alloca(cg, LLVMVectorType(cg->t_val, (unsigned)cg->vec),
                           s->let.var->name);
    LLVMBuildStore(cg->b, cg_expr_float(cg, s->let.init, false), v->vslot);
    return;
  }
  if (!v->slot) v->slot = cg_alloca(cg, cg->t_val, s->let.var->name);
  LLVMBuildStore(cg->b, cg_expr_float(cg, s->let.init, false), v->slot);
}

/* A vector body's reduction into a local declared outside it: the n
 * elements are combined into it one by one, in the scalar loop's order. */
static void emit_set_across(CgCtx *cg, const IrNode *s, CgVar *v) {
  LLVMValueRef val = cg_expr_float(cg, s->set.value, false);
  LLVMValueRef old = LLVMBuildLoad2(cg->b, cg->t_val, v->slot, s->set.var->name);
  for (int k = 0; k < cg->vec; k++) {
    LLVMValueRef x = LLVMBuildExtractElement(cg->b, val, cg_i32(cg, k), "");
    switch (s->set.red) {
    case IR_RED_ASSIGN: old = x; break;
    case IR_RED_ADD: old = LLVMBuildFAdd(cg->b, old, x, ""); break;
    case IR_RED_MAX: old = cg_max(cg, old, x); break;
    case IR_RED_MIN: old = cg_min(cg, old, x); break;
    case IR_RED_MEAN: case IR_RED_COUNT: unreachable("refused by the caller");
    }
  }
  LLVMBuildStore(cg->b, old, v->slot);
}

static void emit_set(CgCtx *cg, const IrNode *s) {
  const IrVar *var = s->set.var;
  CgVar *v = &cg->vars[var->id];
  if (var->kind != IR_VAR_LOCAL || !(v->slot || v->vslot)) {
    cg_error(cg, s->loc, "cannot assign to %s '%s': only locals declared "
             "with `var` are assignable", ir_varkind_name(var->kind),
             var->name);
    return;
  }
  if (s->set.red != IR_RED_ASSIGN && cg->bound_depth > v->depth &&
      !(s->set.how == IR_HOW_SHUFFLE && cg->in_lane)) {
    /* Each worker of the inner bound loop would reduce into its own copy
     * and the partial results would never meet. */
    cg_error(cg, s->loc, "`%s %s ...` reduces into local '%s' from inside "
             "a bound loop that is not around its `var`: combining the "
             "workers' partial results needs a warp shuffle, which only a "
             "`shuffle` reduction inside a @lane loop gets (the conflict "
             "analysis decides it)", var->name, ir_red_name(s->set.red), var->name);
    return;
  }
  if (s->set.red == IR_RED_MEAN) {
    cg_error(cg, s->loc, "`%s mean= ...` on a local cannot be compiled",
             var->name);
    return;
  }
  if (cg->vec && !v->in_vec) {
    emit_set_across(cg, s, v);
    return;
  }
  LLVMValueRef slot = cg->vec ? v->vslot : v->slot;
  LLVMTypeRef ty = cg->vec ? LLVMVectorType(cg->t_val, (unsigned)cg->vec) : cg->t_val;
  LLVMValueRef old = s->set.red == IR_RED_ASSIGN
                         ? NULL
                         : LLVMBuildLoad2(cg->b, ty, slot, var->name);
  LLVMBuildStore(cg->b, cg->slot_bit && s->set.red == IR_RED_ADD
                           ? cg_reduce_if(cg, cg->slot_bit, old, s->set.value)
                           : cg_reduce(cg, s->set.red, old, s->set.value),
                 slot);
}

static void emit_if(CgCtx *cg, const IrNode *s) {
  if (cg_vec_guard(cg, s->ifs.cond)) { /* tested at the vector loop's entry */
    cg_stmts(cg, s->ifs.then);
    return;
  }
  LLVMValueRef cond = cg_expr_as(cg, s->ifs.cond, IR_TY_BOOL);
  LLVMBasicBlockRef then = cg_block(cg, "then"), done = cg_block(cg, "endif");
  LLVMBuildCondBr(cg->b, cond, then, done);
  LLVMPositionBuilderAtEnd(cg->b, then);
  cg_stmts(cg, s->ifs.then);
  LLVMBuildBr(cg->b, done);
  LLVMPositionBuilderAtEnd(cg->b, done);
}

/* The reduction of the `shuffle` sets of local x in statement s, or
 * IR_RED_ASSIGN if it has none. */
static IrRed shuffled_in(const IrNode *s, const IrVar *x) {
  if (s->kind == IR_SET)
    return s->set.how == IR_HOW_SHUFFLE && s->set.var == x ? s->set.red : IR_RED_ASSIGN;
  const IrNode *body = s->kind == IR_LOOP ? s->loop.body
                       : s->kind == IR_IF ? s->ifs.then
                                          : NULL;
  for (const IrNode *c = body; c; c = c->next) {
    IrRed r = shuffled_in(c, x);
    if (r != IR_RED_ASSIGN) return r;
  }
  return IR_RED_ASSIGN;
}

/* Combines the lanes' partials of local `var` by a butterfly of shuffles. */
static void emit_butterfly(CgCtx *cg, const IrVar *var, IrRed red) {
  CgVar *v = &cg->vars[var->id];
  LLVMValueRef x = LLVMBuildLoad2(cg->b, cg->t_val, v->slot, var->name);
  bool f64 = cg->t_val == cg->t_f64;
  int lanes = cg->team ? cg->team : 32;
  LLVMValueRef mask = cg_i32(cg, -1);
  if (lanes < 32) { /* the team's lanes: (2^T - 1) << (lane & ~(T - 1)) */
    LLVMValueRef lane = LLVMBuildAnd(cg->b, cg_sreg(cg, "tid.x"), cg_i32(cg, 31 & ~(lanes - 1)), "");
    mask = LLVMBuildShl(cg->b, cg_i32(cg, (int)((1u << lanes) - 1)), lane, "team.mask");
  }
  for (int d = lanes / 2; d >= 1; d /= 2) {
    LLVMValueRef y;
    if (f64) { /* a double moves as its two 32-bit halves */
      LLVMTypeRef v2 = LLVMVectorType(cg->t_i32, 2);
      LLVMValueRef h = LLVMBuildBitCast(cg->b, x, v2, "");
      for (int k = 0; k < 2; k++) {
        LLVMValueRef part = LLVMBuildExtractElement(cg->b, h, cg_i32(cg, k), "");
        LLVMValueRef args[4] = {mask, part, cg_i32(cg, d), cg_i32(cg, 31)};
        part = cg_intrinsic(cg, "llvm.nvvm.shfl.sync.bfly.i32", NULL, 0, args, 4);
        h = LLVMBuildInsertElement(cg->b, h, part, cg_i32(cg, k), "");
      }
      y = LLVMBuildBitCast(cg->b, h, cg->t_f64, "");
    } else {
      LLVMValueRef args[4] = {mask, x, cg_i32(cg, d), cg_i32(cg, 31)};
      y = cg_intrinsic(cg, "llvm.nvvm.shfl.sync.bfly.f32", NULL, 0, args, 4);
    }
    x = red == IR_RED_ADD   ? LLVMBuildFAdd(cg->b, x, y, "")
        : red == IR_RED_MAX ? cg_max(cg, x, y)
                            : cg_min(cg, x, y);
  }
  LLVMBuildStore(cg->b, x, v->slot);
}

void cg_stmts(CgCtx *cg, const IrNode *list) {
  for (const IrNode *s = list; s; s = s->next) {
    cg_stmts_one(cg, s);
    if (s->kind != IR_LOOP && s->kind != IR_IF) continue;
    /* after the statement: the butterflies of the locals of this list
     * that it reduced across lanes */
    for (const IrNode *l = list; l != s; l = l->next) {
      if (l->kind != IR_LET) continue;
      IrRed red = shuffled_in(s, l->let.var);
      if (red != IR_RED_ASSIGN) emit_butterfly(cg, l->let.var, red);
    }
  }
}

static void cg_stmts_one(CgCtx *cg, const IrNode *s) {
  {
    switch (s->kind) {
    case IR_LOOP: cg_loop(cg, s); break;
    case IR_STORE: cg_store(cg, s); break;
    case IR_LET: emit_let(cg, s); break;
    case IR_SET: emit_set(cg, s); break;
    case IR_IF: emit_if(cg, s); break;
    case IR_FCONST: case IR_ICONST: case IR_VAR: case IR_SYM: case IR_LOAD:
    case IR_BIN: case IR_UN: case IR_CALL: case IR_SRC: case IR_DST:
    case IR_INDEG: case IR_OUTDEG: case IR_NV: case IR_NE: case IR_OWNS:
      cg_error(cg, s->loc, "an expression (%s) where a statement belongs",
               ir_kind_name(s->kind));
      break;
    case IR_NODE_COUNT: unreachable("bad node kind");
    }
  }
}
