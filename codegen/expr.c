/* codegen/expr.c: expressions, tensor addresses and graph accessors.
 *
 * Values are t_idx for IR_TY_INT (indices: i32, or i64 in a program of
 * 64-bit indices, docs/index64.md; docs/gpu-ir.md), f32 for
 * IR_TY_FLOAT and i1 for IR_TY_BOOL; operands are converted to the type the
 * IR builder gave the node. Element addresses are computed in i64, since
 * |E| * F alone can exceed 2^31: base + ((i0 * d1 + i1) * d2 + ...).
 *
 * `/` and `%` on integers are unsigned: the contract only applies them to
 * non-negative values, and the unsigned forms are cheaper on the GPU.
 * Float arithmetic is IEEE (div.rn, no flush to zero), matching the f32
 * interpreter operation for operation, except that inside sums `a * b + c`
 * becomes llvm.fmuladd (one rounding instead of two); values that feed
 * max= and min= are never contracted, so those stay exact.
 *
 * The endpoints of an edge loop's variable come from the loop (loop.c:
 * in_src[k] and v inside in_edges(v)). Graph arrays and tensors that the
 * kernel does not write are loaded with !invariant.load (ld.global.nc).
 */
#define GOP_CODEGEN_INTERNAL
#include <string.h>

#include "codegen.h"

static LLVMValueRef emit(CgCtx *cg, const IrNode *e, bool contract);

static LLVMTypeRef llvm_type(CgCtx *cg, IrType t) {
  switch (t) {
  case IR_TY_INT: return cg->t_idx;
  case IR_TY_FLOAT: return cg->t_val;
  case IR_TY_BOOL: return cg->t_i1;
  case IR_TY_VOID: break;
  }
  unreachable("no LLVM type for a statement");
}

static LLVMValueRef convert(CgCtx *cg, LLVMValueRef v, IrType from,
                            IrType to, Loc loc) {
  LLVMBuilderRef b = cg->b;
  if (from == to) return v;
  switch (to) {
  case IR_TY_FLOAT:
    if (from == IR_TY_INT) return LLVMBuildSIToFP(b, v, cg->t_val, "");
    if (from == IR_TY_BOOL) return LLVMBuildUIToFP(b, v, cg->t_val, "");
    break;
  case IR_TY_INT:
    if (from == IR_TY_BOOL) return LLVMBuildZExt(b, v, cg->t_idx, "");
    break; /* float to index: refused below */
  case IR_TY_BOOL:
    if (from == IR_TY_INT)
      return LLVMBuildICmp(b, LLVMIntNE, v, cg_idx(cg, 0), "");
    if (from == IR_TY_FLOAT)
      return LLVMBuildFCmp(b, LLVMRealUNE, v, cg_f32(cg, 0), "");
    break;
  case IR_TY_VOID: break;
  }
  cg_error(cg, loc, "a %s value where %s is needed",
           from == IR_TY_FLOAT ? "floating-point" : "statement",
           to == IR_TY_INT ? "an integer index" : "a value");
  return LLVMGetUndef(llvm_type(cg, to == IR_TY_VOID ? IR_TY_INT : to));
}

LLVMValueRef cg_expr(CgCtx *cg, const IrNode *e) { return emit(cg, e, false); }

LLVMValueRef cg_expr_as(CgCtx *cg, const IrNode *e, IrType want) {
  return convert(cg, emit(cg, e, false), e->type, want, e->loc);
}

LLVMValueRef cg_expr_float(CgCtx *cg, const IrNode *e, bool contract) {
  LLVMValueRef v = convert(cg, emit(cg, e, contract), e->type, IR_TY_FLOAT, e->loc);
  return cg->vec ? cg_vec_splat(cg, v) : v; /* vector.c: every float is n-wide */
}

LLVMValueRef cg_graph_at(CgCtx *cg, CgParamKind kind, LLVMValueRef idx,
                         const char *name) {
  LLVMTypeRef et = cg_param_wide(kind, cg->wide ? 64 : 32) ? cg->t_i64 : cg->t_i32;
  LLVMValueRef p =
      LLVMBuildInBoundsGEP2(cg->b, et, cg_param(cg, kind, 0), &idx, 1, "");
  return cg_to_idx(cg, cg_load(cg, et, p, true, name));
}

static LLVMValueRef dim_size(CgCtx *cg, const IrDim *d) {
  if (d->sym)
    return LLVMBuildZExt(cg->b, cg_param(cg, CG_PARAM_SYM, d->sym->id),
                         cg->t_i64, "");
  return cg_i64(cg, d->value);
}

LLVMValueRef cg_address(CgCtx *cg, const IrTensor *t, int nidx,
                        IrNode *const *idx, Loc loc) {
  LLVMBuilderRef b = cg->b;
  int hasdom = t->domain != IR_DOM_DENSE;
  int rank = hasdom + t->ndims;
  LLVMValueRef base = cg->staged && cg->staged[t->id]
                          ? cg->staged[t->id] /* its copy in shared memory */
                          : cg_param(cg, CG_PARAM_TENSOR, t->id);
  if (nidx != rank) {
    cg_error(cg, loc, "tensor '%s' has %d dimension%s but %d ind%s given",
             t->name, rank, rank == 1 ? "" : "s", nidx,
             nidx == 1 ? "ex is" : "ices are");
    return base;
  }
  if (!ir_dtype_is_float(t->dtype)) {
    cg_error(cg, loc, "tensor '%s' is %s: only float tensors compile to the "
             "GPU", t->name, ir_dtype_name(t->dtype));
    return base;
  }
  LLVMValueRef off = NULL;
  for (int j = 0; j < nidx; j++) {
    LLVMValueRef i =
        LLVMBuildZExt(b, cg_expr_as(cg, idx[j], IR_TY_INT), cg->t_i64, "");
    if (!off) {
      off = i;
      continue;
    }
    LLVMValueRef size = dim_size(cg, &t->dims[j - hasdom]);
    off = LLVMBuildNSWAdd(b, LLVMBuildNSWMul(b, off, size, ""), i, "");
  }
  if (!off) return base; /* a scalar: f32[] */
  return LLVMBuildInBoundsGEP2(b, cg_elem_type(cg, t), base, &off, 1, t->name);
}

/* The CgVar of loop variable `var`, or NULL after reporting. */
static CgVar *loop_var(CgCtx *cg, const IrVar *var, Loc loc) {
  CgVar *v = &cg->vars[var->id];
  if (!v->bound || !v->value) {
    cg_error(cg, loc, "'%s' is used outside the loop that binds it",
             var->name);
    return NULL;
  }
  return v;
}

const CgVar *cg_group_row(const CgCtx *cg, const IrNode *g) {
  if (!g || g->kind != IR_VAR) return NULL;
  const CgVar *v = &cg->vars[g->var->id];
  return v->bound && v->group_row ? v : NULL;
}

static LLVMValueRef emit_var(CgCtx *cg, const IrNode *e) {
  const IrVar *var = e->var;
  if (var->kind == IR_VAR_LOCAL) {
    CgVar *v = &cg->vars[var->id];
    if (cg->vec && v->in_vec && v->bound)
      return LLVMBuildLoad2(cg->b, LLVMVectorType(cg->t_val, (unsigned)cg->vec),
                            v->vslot, var->name);
    if (!v->slot || !v->bound) {
      cg_error(cg, e->loc, "local '%s' is used before its `var`", var->name);
      return LLVMGetUndef(cg->t_val);
    }
    return LLVMBuildLoad2(cg->b, cg->t_val, v->slot, var->name);
  }
  CgVar *v = loop_var(cg, var, e->loc);
  return v ? v->value : LLVMGetUndef(cg->t_idx);
}

/* src(e) or dst(e): an edge loop's variable has them loaded already (or
 * knows them: dst(e) of in_edges(v) is v); any other edge expression reads
 * the COO arrays. */
static LLVMValueRef emit_endpoint(CgCtx *cg, const IrNode *e) {
  bool is_src = e->kind == IR_SRC;
  const IrNode *edge = e->endpoint.e;
  if (edge->kind == IR_VAR && edge->var->kind == IR_VAR_EDGE) {
    CgVar *v = loop_var(cg, edge->var, edge->loc);
    if (!v) return LLVMGetUndef(cg->t_idx);
    if (v->src && v->dst) return is_src ? v->src : v->dst;
  }
  if (edge->kind == IR_VAR && edge->var->kind == IR_VAR_PAIR) { /* src(q) of a pairs loop */
    CgVar *v = loop_var(cg, edge->var, edge->loc);
    if (!v || !is_src || !v->src) {
      cg_error(cg, e->loc, "%s() of pair '%s': a pair has a source only",
               is_src ? "src" : "dst", edge->var->name);
      return LLVMGetUndef(cg->t_idx);
    }
    return v->src;
  }
  if (!is_src && edge->kind == IR_VAR) { /* dst(g): a group row's destination */
    CgVar *v = loop_var(cg, edge->var, edge->loc);
    if (v && v->group_row)
      return v->dst ? v->dst : cg_graph_at(cg, CG_PARAM_GRP_DST, v->value, "dst");
  }
  LLVMValueRef id = cg_expr_as(cg, edge, IR_TY_INT);
  return cg_graph_at(cg, is_src ? CG_PARAM_SRC : CG_PARAM_DST, id,
                     is_src ? "src" : "dst");
}

/* hi - lo where it is written, through inline assembly with side effects,
 * which LLVM moves nowhere: a group's degree is loaded at the top of its
 * group (loop.c, group_prologue) and used after its edge loop, and LLVM
 * would hoist the subtraction out of the feature loops around that use,
 * to the top again, where the warp would wait for the loads before it
 * starts on the edges. */
static LLVMValueRef sub_in_place(CgCtx *cg, LLVMValueRef hi, LLVMValueRef lo) {
  bool wide = LLVMTypeOf(hi) == cg->t_i64;
  const char *text = wide ? "sub.s64 $0, $1, $2;" : "sub.s32 $0, $1, $2;";
  const char *cons = wide ? "=l,l,l" : "=r,r,r";
  LLVMTypeRef args[2] = {LLVMTypeOf(hi), LLVMTypeOf(lo)};
  LLVMTypeRef fty = LLVMFunctionType(LLVMTypeOf(hi), args, 2, 0);
  LLVMValueRef asm_ = LLVMGetInlineAsm(fty, (char *)text, strlen(text), (char *)cons,
                                       strlen(cons), 1, 0, LLVMInlineAsmDialectATT, 0);
  LLVMValueRef ops[2] = {hi, lo};
  return LLVMBuildCall2(cg->b, fty, asm_, ops, 2, "deg");
}

/* in_degree(v) / out_degree(u), as f32. */
static LLVMValueRef emit_degree(CgCtx *cg, const IrNode *e) {
  CgParamKind pk = e->kind == IR_INDEG ? CG_PARAM_IN_PTR : CG_PARAM_OUT_PTR;
  const IrNode *at = e->endpoint.e;
  const CgVar *g = at->kind == IR_DST ? cg_group_row(cg, at->endpoint.e) : NULL;
  if (e->kind == IR_INDEG && g && g->deg[0]) /* loaded with the group's row */
    return LLVMBuildSIToFP(cg->b, sub_in_place(cg, g->deg[1], g->deg[0]), cg->t_val, "");
  LLVMValueRef v = cg_expr_as(cg, at, IR_TY_INT);
  LLVMValueRef v1 = LLVMBuildNSWAdd(cg->b, v, cg_idx(cg, 1), "");
  LLVMValueRef deg = LLVMBuildNSWSub(cg->b, cg_graph_at(cg, pk, v1, ""),
                                     cg_graph_at(cg, pk, v, ""), "deg");
  return LLVMBuildSIToFP(cg->b, deg, cg->t_val, "");
}

/* `a && b`, `a || b`, short-circuit: the right side may read memory that
 * only the left side makes safe to read. */
static LLVMValueRef emit_logic(CgCtx *cg, const IrNode *e) {
  LLVMBuilderRef b = cg->b;
  bool is_and = e->bin.op == IR_OP_AND;
  LLVMValueRef l = cg_expr_as(cg, e->bin.a, IR_TY_BOOL);
  LLVMBasicBlockRef lhs = LLVMGetInsertBlock(b);
  LLVMBasicBlockRef rhs_bb = cg_block(cg, is_and ? "and" : "or");
  LLVMBasicBlockRef done = cg_block(cg, is_and ? "and.end" : "or.end");
  if (is_and) LLVMBuildCondBr(b, l, rhs_bb, done);
  else LLVMBuildCondBr(b, l, done, rhs_bb);
  LLVMPositionBuilderAtEnd(b, rhs_bb);
  LLVMValueRef r = cg_expr_as(cg, e->bin.b, IR_TY_BOOL);
  LLVMBasicBlockRef rhs_end = LLVMGetInsertBlock(b);
  LLVMBuildBr(b, done);
  LLVMPositionBuilderAtEnd(b, done);
  LLVMValueRef phi = LLVMBuildPhi(b, cg->t_i1, "");
  LLVMValueRef vals[2] = {LLVMConstInt(cg->t_i1, !is_and, 0), r};
  LLVMBasicBlockRef bbs[2] = {lhs, rhs_end};
  LLVMAddIncoming(phi, vals, bbs, 2);
  return phi;
}

static LLVMValueRef emit_compare(CgCtx *cg, const IrNode *e) {
  LLVMBuilderRef b = cg->b;
  IrType ta = e->bin.a->type, tb = e->bin.b->type;
  IrType t = (ta == tb) ? ta : IR_TY_FLOAT;
  LLVMValueRef x = convert(cg, emit(cg, e->bin.a, false), ta, t, e->loc);
  LLVMValueRef y = convert(cg, emit(cg, e->bin.b, false), tb, t, e->loc);
  if (t == IR_TY_FLOAT) {
    /* ordered comparisons, and unordered `!=`, as C does */
    LLVMRealPredicate p;
    switch (e->bin.op) {
    case IR_OP_EQ: p = LLVMRealOEQ; break;
    case IR_OP_NE: p = LLVMRealUNE; break;
    case IR_OP_LT: p = LLVMRealOLT; break;
    case IR_OP_LE: p = LLVMRealOLE; break;
    case IR_OP_GT: p = LLVMRealOGT; break;
    case IR_OP_GE: p = LLVMRealOGE; break;
    default: unreachable("not a comparison");
    }
    return LLVMBuildFCmp(b, p, x, y, "");
  }
  LLVMIntPredicate p;
  switch (e->bin.op) {
  case IR_OP_EQ: p = LLVMIntEQ; break;
  case IR_OP_NE: p = LLVMIntNE; break;
  case IR_OP_LT: p = LLVMIntSLT; break;
  case IR_OP_LE: p = LLVMIntSLE; break;
  case IR_OP_GT: p = LLVMIntSGT; break;
  case IR_OP_GE: p = LLVMIntSGE; break;
  default: unreachable("not a comparison");
  }
  return LLVMBuildICmp(b, p, x, y, "");
}

static bool is_fmul(const IrNode *e) {
  return e->kind == IR_BIN && e->bin.op == IR_OP_MUL &&
         e->type == IR_TY_FLOAT;
}

static LLVMValueRef fmuladd(CgCtx *cg, LLVMValueRef a, LLVMValueRef b,
                            LLVMValueRef c) {
  LLVMValueRef args[3] = {a, b, c};
  LLVMTypeRef ty = LLVMTypeOf(c); /* f32, or <n x f32> in a vector body */
  return cg_intrinsic(cg, "llvm.fmuladd", &ty, 1, args, 3);
}

static LLVMValueRef emit_arith(CgCtx *cg, const IrNode *e, bool contract) {
  LLVMBuilderRef b = cg->b;
  const IrNode *a = e->bin.a, *c = e->bin.b;
  if (e->type == IR_TY_INT) {
    LLVMValueRef x = cg_expr_as(cg, a, IR_TY_INT);
    LLVMValueRef y = cg_expr_as(cg, c, IR_TY_INT);
    switch (e->bin.op) {
    case IR_OP_ADD: return LLVMBuildNSWAdd(b, x, y, "");
    case IR_OP_SUB: return LLVMBuildNSWSub(b, x, y, "");
    case IR_OP_MUL: return LLVMBuildNSWMul(b, x, y, "");
    case IR_OP_DIV: return LLVMBuildUDiv(b, x, y, "");
    case IR_OP_MOD: return LLVMBuildURem(b, x, y, "");
    default: unreachable("not arithmetic");
    }
  }
  if (contract && (e->bin.op == IR_OP_ADD || e->bin.op == IR_OP_SUB)) {
    /* a * b + c, c + a * b, a * b - c, c - a * b */
    const IrNode *mul = is_fmul(a) ? a : is_fmul(c) ? c : NULL;
    if (mul) {
      const IrNode *other = mul == a ? c : a;
      LLVMValueRef m0 = cg_expr_float(cg, mul->bin.a, true);
      LLVMValueRef m1 = cg_expr_float(cg, mul->bin.b, true);
      LLVMValueRef o = cg_expr_float(cg, other, true);
      if (e->bin.op == IR_OP_SUB) {
        if (mul == a) o = LLVMBuildFNeg(b, o, "");
        else m0 = LLVMBuildFNeg(b, m0, "");
      }
      return fmuladd(cg, m0, m1, o);
    }
  }
  LLVMValueRef x = cg_expr_float(cg, a, contract);
  LLVMValueRef y = cg_expr_float(cg, c, contract);
  switch (e->bin.op) {
  case IR_OP_ADD: return LLVMBuildFAdd(b, x, y, "");
  case IR_OP_SUB: return LLVMBuildFSub(b, x, y, "");
  case IR_OP_MUL: return LLVMBuildFMul(b, x, y, "");
  case IR_OP_DIV: return LLVMBuildFDiv(b, x, y, "");
  case IR_OP_MOD: return LLVMBuildFRem(b, x, y, "");
  default: unreachable("not arithmetic");
  }
}

static LLVMValueRef emit_bin(CgCtx *cg, const IrNode *e, bool contract) {
  switch (e->bin.op) {
  case IR_OP_OR: case IR_OP_AND: return emit_logic(cg, e);
  case IR_OP_EQ: case IR_OP_NE: case IR_OP_LT: case IR_OP_LE:
  case IR_OP_GT: case IR_OP_GE:
    return emit_compare(cg, e);
  case IR_OP_ADD: case IR_OP_SUB: case IR_OP_MUL: case IR_OP_DIV:
  case IR_OP_MOD:
    return emit_arith(cg, e, contract);
  case IR_BINOP_COUNT: break;
  }
  unreachable("bad binary operator");
}

static LLVMValueRef emit_un(CgCtx *cg, const IrNode *e, bool contract) {
  switch (e->un.op) {
  case IR_UN_NEG:
    if (e->type == IR_TY_INT)
      return LLVMBuildNSWSub(cg->b, cg_idx(cg, 0),
                             cg_expr_as(cg, e->un.a, IR_TY_INT), "");
    return LLVMBuildFNeg(cg->b, cg_expr_float(cg, e->un.a, contract), "");
  case IR_UN_NOT:
    return LLVMBuildNot(cg->b, cg_expr_as(cg, e->un.a, IR_TY_BOOL), "");
  case IR_UNOP_COUNT: break;
  }
  unreachable("bad unary operator");
}

static LLVMValueRef emit_call(CgCtx *cg, const IrNode *e) {
  LLVMValueRef args[2];
  if (e->call.nargs != ir_fn_nargs(e->call.fn)) {
    cg_error(cg, e->loc, "%s takes %d argument%s, not %d",
             ir_fn_name(e->call.fn), ir_fn_nargs(e->call.fn),
             ir_fn_nargs(e->call.fn) == 1 ? "" : "s", e->call.nargs);
    return LLVMGetUndef(cg->t_val);
  }
  for (int i = 0; i < e->call.nargs; i++)
    args[i] = cg_expr_float(cg, e->call.args[i], false);
  int to = ir_dtype_of_fn(e->call.fn);
  if (to >= 0) return cg_round_to(cg, (IrDType)to, args[0]); /* f16(x) ... */
  IrFn fn = e->call.fn;
  if (cg->t_val == cg->t_f64 &&
      (fn == IR_FN_EXP || fn == IR_FN_LOG || fn == IR_FN_TANH || fn == IR_FN_SIGMOID)) {
    cg_error(cg, e->loc, "%s in op '%s', which computes in f64: gop's GPU %s is "
             "f32 only (convert: %s(f32(x)))", ir_fn_name(fn), cg->op->name,
             ir_fn_name(fn), ir_fn_name(fn));
    return args[0];
  }
  if (!cg->vec) return cg_math(cg, e->call.fn, args, e->call.nargs);
  /* a vector body: the function element by element */
  LLVMValueRef r = LLVMGetUndef(LLVMTypeOf(args[0]));
  for (int k = 0; k < cg->vec; k++) {
    LLVMValueRef one[2];
    for (int i = 0; i < e->call.nargs; i++)
      one[i] = LLVMBuildExtractElement(cg->b, args[i], cg_i32(cg, k), "");
    r = LLVMBuildInsertElement(cg->b, r, cg_math(cg, e->call.fn, one, e->call.nargs),
                               cg_i32(cg, k), "");
  }
  return r;
}

static LLVMValueRef emit(CgCtx *cg, const IrNode *e, bool contract) {
  switch (e->kind) {
  case IR_FCONST: return cg_f32(cg, e->f);
  case IR_ICONST:
    if (!cg->wide && (e->i < INT32_MIN || e->i > INT32_MAX)) {
      cg_error(cg, e->loc, "integer %lld does not fit the GPU's 32-bit "
               "indices", (long long)e->i);
      return cg_idx(cg, 0);
    }
    return cg_idx(cg, e->i);
  case IR_VAR: return emit_var(cg, e);
  case IR_SYM: return cg_param_idx(cg, CG_PARAM_SYM, e->sym->id);
  case IR_LOAD: {
    const IrTensor *t = e->acc.tensor;
    /* T[e] in a @prefetch loop: the value a lane loaded for the warp */
    if (e->acc.nidx == 1 && e->acc.idx[0]->kind == IR_VAR)
      for (int j = cg->npf - 1; j >= 0; j--)
        if (cg->pf[j].tensor == t && cg->pf[j].var == e->acc.idx[0]->var)
          return cg->pf[j].value;
    LLVMValueRef p = cg_address(cg, t, e->acc.nidx, e->acc.idx, e->loc);
    /* in a vector body n elements at once: ld.global.nc.v4.f32 */
    return cg_load_elems(cg, t, p, cg_vec_access(cg, e) ? cg->vec : 0, !cg->written[t->id]);
  }
  case IR_BIN: return emit_bin(cg, e, contract);
  case IR_UN: return emit_un(cg, e, contract);
  case IR_CALL: return emit_call(cg, e);
  case IR_SRC: case IR_DST: return emit_endpoint(cg, e);
  case IR_INDEG: case IR_OUTDEG: return emit_degree(cg, e);
  case IR_NV: return cg_param_idx(cg, CG_PARAM_NV, 0);
  case IR_NE: return cg_param_idx(cg, CG_PARAM_NE, 0);
  case IR_OWNS: { /* passes/panel.c: the row is its panel's only one */
    const CgVar *g = cg_group_row(cg, e->endpoint.e);
    LLVMValueRef own = g && g->own ? g->own
                       : cg_graph_at(cg, CG_PARAM_GRP_OWN,
                                     cg_expr_as(cg, e->endpoint.e, IR_TY_INT), "own");
    return LLVMBuildICmp(cg->b, LLVMIntNE, own, cg_idx(cg, 0), "owns");
  }
  case IR_LOOP: case IR_STORE: case IR_LET: case IR_SET: case IR_IF:
    cg_error(cg, e->loc, "a statement (%s) where an expression belongs",
             ir_kind_name(e->kind));
    return LLVMGetUndef(cg->t_val);
  case IR_NODE_COUNT: break;
  }
  unreachable("bad node kind");
}
