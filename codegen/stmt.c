/* codegen/stmt.c: statement lists, locals and guards.
 *
 * Locals (`var s = ...`) live in allocas of the entry block, which SROA and
 * mem2reg turn into registers, one copy per thread; their reductions
 * (`s += x`) combine like plain stores (store.c), and are refused from
 * inside a bound loop that the `var` is outside of (a cross-lane reduction). Guards (`if (f < F) { }`, made by split) are a
 * conditional branch around their body. Loops and stores have their own
 * files.
 */
#define GOP_CODEGEN_INTERNAL
#include "codegen.h"

static void emit_let(CgCtx *cg, const IrNode *s) {
  CgVar *v = &cg->vars[s->let.var->id];
  if (!v->slot) v->slot = cg_alloca(cg, cg->t_f32, s->let.var->name);
  v->bound = true;
  v->depth = cg->bound_depth;
  LLVMBuildStore(cg->b, cg_expr_float(cg, s->let.init, false), v->slot);
}

static void emit_set(CgCtx *cg, const IrNode *s) {
  const IrVar *var = s->set.var;
  CgVar *v = &cg->vars[var->id];
  if (var->kind != IR_VAR_LOCAL || !v->slot) {
    cg_error(cg, s->loc, "cannot assign to %s '%s': only locals declared "
             "with `var` are assignable", ir_varkind_name(var->kind),
             var->name);
    return;
  }
  if (s->set.red != IR_RED_ASSIGN && cg->bound_depth > v->depth) {
    /* Each worker of the inner bound loop would reduce into its own copy
     * and the partial results would never meet. */
    cg_error(cg, s->loc, "`%s %s ...` reduces into local '%s' from inside "
             "a bound loop that is not around its `var`: combining the "
             "workers' partial results needs a warp shuffle, not supported "
             "yet", var->name, ir_red_name(s->set.red), var->name);
    return;
  }
  if (s->set.red == IR_RED_MEAN) {
    cg_error(cg, s->loc, "`%s mean= ...` on a local cannot be compiled",
             var->name);
    return;
  }
  LLVMValueRef old = s->set.red == IR_RED_ASSIGN
                         ? NULL
                         : LLVMBuildLoad2(cg->b, cg->t_f32, v->slot, var->name);
  LLVMBuildStore(cg->b, cg_reduce(cg, s->set.red, old, s->set.value), v->slot);
}

static void emit_if(CgCtx *cg, const IrNode *s) {
  LLVMValueRef cond = cg_expr_as(cg, s->ifs.cond, IR_TY_BOOL);
  LLVMBasicBlockRef then = cg_block(cg, "then"), done = cg_block(cg, "endif");
  LLVMBuildCondBr(cg->b, cond, then, done);
  LLVMPositionBuilderAtEnd(cg->b, then);
  cg_stmts(cg, s->ifs.then);
  LLVMBuildBr(cg->b, done);
  LLVMPositionBuilderAtEnd(cg->b, done);
}

void cg_stmts(CgCtx *cg, const IrNode *list) {
  for (const IrNode *s = list; s; s = s->next) {
    switch (s->kind) {
    case IR_LOOP: cg_loop(cg, s); break;
    case IR_STORE: cg_store(cg, s); break;
    case IR_LET: emit_let(cg, s); break;
    case IR_SET: emit_set(cg, s); break;
    case IR_IF: emit_if(cg, s); break;
    case IR_FCONST: case IR_ICONST: case IR_VAR: case IR_SYM: case IR_LOAD:
    case IR_BIN: case IR_UN: case IR_CALL: case IR_SRC: case IR_DST:
    case IR_INDEG: case IR_OUTDEG: case IR_NV: case IR_NE:
      cg_error(cg, s->loc, "an expression (%s) where a statement belongs",
               ir_kind_name(s->kind));
      break;
    case IR_NODE_COUNT: unreachable("bad node kind");
    }
  }
}
