/* grad/expr.c: the chain rule of expressions (grad/derive.h).
 *
 * A forward expression is copied into the gradient with its variables and
 * tensors mapped (grad_sx), and differentiated by passing an adjoint
 * coefficient down its tree (grad_chain): each active leaf, a load of a
 * tensor that depends on the inputs differentiated or an active local,
 * gets `dU[i] += coefficient`, under guards where the derivative is
 * piecewise (relu, max, leaky_relu, abs, the max= argmax).
 */
#include "grad/derive.h"

/* ---- cloning forward IR into the gradient ---- */


IrNode *grad_load_of(Grad *g, Loc loc, IrTensor *t, const IrNode *acc) {
  IrNode *idx[IR_MAX_IDX];
  for (int i = 0; i < acc->acc.nidx; i++) idx[i] = grad_sx(g, acc->acc.idx[i]);
  return ir_load(g->a, loc, t, acc->acc.nidx, idx);
}

/* A copy of forward expression `e` in the gradient: variables replaced by
 * their images, tensors by their forward values. */
IrNode *grad_sx(Grad *g, const IrNode *e) {
  Arena *a = g->a;
  switch (e->kind) {
  case IR_VAR:
    if (e->var->kind == IR_VAR_LOCAL) {
      IrVar *l = g->lmap[e->var->id];
      if (!l) unreachable("grad: a local read before its copy");
      return ir_var(a, e->loc, l);
    }
    if (!g->vmap[e->var->id]) unreachable("grad: a loop variable without image");
    return ir_clone(a, g->vmap[e->var->id]);
  case IR_LOAD: return grad_load_of(g, e->loc, grad_prim(g, e->acc.tensor), e);
  case IR_SRC:
    if (g->csc_e && e->endpoint.e->kind == IR_VAR && e->endpoint.e->var == g->csc_e)
      return ir_var(a, e->loc, g->csc_u);
    return ir_endpoint(a, e->loc, e->kind, grad_sx(g, e->endpoint.e));
  case IR_DST: case IR_INDEG: case IR_OUTDEG:
    return ir_endpoint(a, e->loc, e->kind, grad_sx(g, e->endpoint.e));
  case IR_SYM:
    return ir_symref(a, e->loc, ir_op_sym(a, g->bw, e->sym->name, e->sym->loc));
  case IR_BIN: return ir_bin(a, e->loc, e->bin.op, grad_sx(g, e->bin.a), grad_sx(g, e->bin.b));
  case IR_UN: return ir_un(a, e->loc, e->un.op, grad_sx(g, e->un.a));
  case IR_CALL: {
    IrNode *args[2] = {NULL, NULL};
    for (int i = 0; i < e->call.nargs; i++) args[i] = grad_sx(g, e->call.args[i]);
    return ir_call(a, e->loc, e->call.fn, e->call.nargs, args);
  }
  case IR_FCONST: case IR_ICONST: case IR_NV: case IR_NE: return ir_clone(a, e);
  default: break;
  }
  unreachable("grad: a statement where an expression was expected");
}

/* A new loop in the gradient for forward loop `s`, its variable mapped. */
IrNode *grad_clone_header(Grad *g, const IrNode *s) {
  IrVar *v = grad_new_var(g, s->loop.var, s->loop.var->name, s->loop.var->kind);
  IrNode *of = s->loop.of ? grad_sx(g, s->loop.of) : NULL;
  IrNode *ext = s->loop.extent ? grad_sx(g, s->loop.extent) : NULL;
  g->vmap[s->loop.var->id] = ir_var(g->a, s->loc, v);
  return ir_loop(g->a, s->loc, v, s->loop.kind, ext, of, NULL);
}

IrVar *grad_copy_local(Grad *g, const IrVar *v) {
  IrVar *l = grad_new_var(g, v, grad_fresh_name(g, v->name, true), IR_VAR_LOCAL);
  g->lmap[v->id] = l;
  return l;
}

/* ---- the chain rule ---- */

IrNode *grad_fc(Grad *g, Loc l, double v) { return ir_fconst(g->a, l, v); }
IrNode *grad_mul(Grad *g, Loc l, IrNode *x, IrNode *y) {
  return ir_bin(g->a, l, IR_OP_MUL, x, y);
}
static IrNode *neg(Grad *g, Loc l, IrNode *x) { return ir_un(g->a, l, IR_UN_NEG, x); }

/* Whether the adjoint of forward tensor `t` is emitted in this stage. */
static bool wanted(const Grad *g, const IrTensor *t) {
  if (!g->active[t->id] || g->absorbed[t->id]) return false;
  if (t->role == IR_ROLE_IN && !g->is_wrt[t->id]) return false;
  return (g->cls == CLS_CSC) == g->csc[t->id];
}

/* `dst += coef` for one leaf, under the guards. */
static void emit_leaf(Grad *g, const IrNode *leaf, IrNode *coef, const Guard *gd,
                      IrNode **out) {
  IrNode *st;
  if (leaf->kind == IR_VAR) {
    IrVar *dl = g->dlmap[leaf->var->id];
    if (!dl) unreachable("grad: an active local without adjoint");
    st = ir_set(g->a, leaf->loc, dl, IR_RED_ADD, coef);
  } else {
    if (!wanted(g, leaf->acc.tensor)) return;
    st = grad_load_of(g, leaf->loc, grad_adj(g, leaf->acc.tensor), leaf);
    st->kind = IR_STORE;
    st->type = IR_TY_VOID;
    st->acc.red = IR_RED_ADD;
    st->acc.value = coef;
  }
  IrNode *cond = NULL;
  for (; gd; gd = gd->next)
    cond = cond ? ir_bin(g->a, leaf->loc, IR_OP_AND, ir_clone(g->a, gd->cond), cond)
                : ir_clone(g->a, gd->cond);
  ir_append(out, cond ? ir_if(g->a, leaf->loc, cond, st) : st);
}

/* Passes adjoint `coef` down forward expression `e`. */
void grad_chain(Grad *g, const IrNode *e, IrNode *coef, const Guard *gd, IrNode **out) {
  if (!g->ok || !grad_active_expr(g, e)) return;
  Arena *a = g->a;
  Loc l = e->loc;
  switch (e->kind) {
  case IR_LOAD: case IR_VAR: emit_leaf(g, e, coef, gd, out); return;
  case IR_UN:
    if (e->un.op == IR_UN_NEG) {
      grad_chain(g, e->un.a, neg(g, l, coef), gd, out);
      return;
    }
    break;
  case IR_BIN: {
    const IrNode *x = e->bin.a, *y = e->bin.b;
    switch (e->bin.op) {
    case IR_OP_ADD:
      grad_chain(g, x, coef, gd, out);
      grad_chain(g, y, ir_clone(a, coef), gd, out);
      return;
    case IR_OP_SUB:
      grad_chain(g, x, coef, gd, out);
      grad_chain(g, y, neg(g, l, ir_clone(a, coef)), gd, out);
      return;
    case IR_OP_MUL:
      if (grad_active_expr(g, x)) grad_chain(g, x, grad_mul(g, l, ir_clone(a, coef), grad_sx(g, y)), gd, out);
      if (grad_active_expr(g, y)) grad_chain(g, y, grad_mul(g, l, ir_clone(a, coef), grad_sx(g, x)), gd, out);
      return;
    case IR_OP_DIV: {
      /* d(x/y) = dx/y - (x/y)/y dy; exp(s)/y passes (exp(s)/y) to s, the
       * value a saved softmax output stands for */
      if (x->kind == IR_CALL && x->call.fn == IR_FN_EXP && grad_active_expr(g, x))
        grad_chain(g, x->call.args[0], grad_mul(g, l, ir_clone(a, coef), grad_sx(g, e)), gd, out);
      else if (grad_active_expr(g, x))
        grad_chain(g, x, ir_bin(a, l, IR_OP_DIV, ir_clone(a, coef), grad_sx(g, y)), gd, out);
      if (grad_active_expr(g, y))
        grad_chain(g, y,
              ir_bin(a, l, IR_OP_DIV, neg(g, l, grad_mul(g, l, ir_clone(a, coef), grad_sx(g, e))),
                     grad_sx(g, y)),
              gd, out);
      return;
    }
    default: break;
    }
    break;
  }
  case IR_CALL: {
    const IrNode *x = e->call.args[0];
    IrNode *xv = grad_sx(g, x);
    switch (e->call.fn) {
    case IR_FN_EXP: grad_chain(g, x, grad_mul(g, l, coef, grad_sx(g, e)), gd, out); return;
    /* a rounding passes the gradient through (straight-through), as
     * PyTorch's .to(dtype) does */
    case IR_FN_TO_F16: case IR_FN_TO_BF16: case IR_FN_TO_F32: case IR_FN_TO_F64:
      grad_chain(g, x, coef, gd, out);
      return;
    case IR_FN_LOG: grad_chain(g, x, ir_bin(a, l, IR_OP_DIV, coef, xv), gd, out); return;
    case IR_FN_SQRT:
      grad_chain(g, x, ir_bin(a, l, IR_OP_DIV, coef, grad_mul(g, l, grad_fc(g, l, 2.0), grad_sx(g, e))), gd,
            out);
      return;
    case IR_FN_SIGMOID: {
      IrNode *s = grad_sx(g, e);
      IrNode *ds = grad_mul(g, l, s, ir_bin(a, l, IR_OP_SUB, grad_fc(g, l, 1.0), grad_sx(g, e)));
      grad_chain(g, x, grad_mul(g, l, coef, ds), gd, out);
      return;
    }
    case IR_FN_TANH: {
      IrNode *t2 = grad_mul(g, l, grad_sx(g, e), grad_sx(g, e));
      grad_chain(g, x, grad_mul(g, l, coef, ir_bin(a, l, IR_OP_SUB, grad_fc(g, l, 1.0), t2)), gd, out);
      return;
    }
    case IR_FN_RELU: {
      Guard pos = {ir_bin(a, l, IR_OP_GT, xv, grad_fc(g, l, 0.0)), gd};
      grad_chain(g, x, coef, &pos, out);
      return;
    }
    case IR_FN_ABS: {
      Guard pos = {ir_bin(a, l, IR_OP_GT, xv, grad_fc(g, l, 0.0)), gd};
      Guard negv = {ir_bin(a, l, IR_OP_LT, grad_sx(g, x), grad_fc(g, l, 0.0)), gd};
      grad_chain(g, x, coef, &pos, out);
      grad_chain(g, x, neg(g, l, ir_clone(a, coef)), &negv, out);
      return;
    }
    case IR_FN_LEAKY_RELU: {
      const IrNode *slope = e->call.args[1];
      Guard pos = {ir_bin(a, l, IR_OP_GT, xv, grad_fc(g, l, 0.0)), gd};
      Guard npos = {ir_bin(a, l, IR_OP_LE, grad_sx(g, x), grad_fc(g, l, 0.0)), gd};
      grad_chain(g, x, coef, &pos, out);
      grad_chain(g, x, grad_mul(g, l, ir_clone(a, coef), grad_sx(g, slope)), &npos, out);
      grad_chain(g, slope, grad_mul(g, l, ir_clone(a, coef), grad_sx(g, x)), &npos, out);
      return;
    }
    case IR_FN_MAX: case IR_FN_MIN: {
      /* ties go to the first argument */
      const IrNode *y = e->call.args[1];
      bool mx = e->call.fn == IR_FN_MAX;
      Guard first = {ir_bin(a, l, mx ? IR_OP_GE : IR_OP_LE, xv, grad_sx(g, y)), gd};
      Guard second = {ir_bin(a, l, mx ? IR_OP_LT : IR_OP_GT, grad_sx(g, x), grad_sx(g, y)), gd};
      grad_chain(g, x, coef, &first, out);
      grad_chain(g, y, ir_clone(a, coef), &second, out);
      return;
    }
    case IR_FN_COUNT: break;
    }
    break;
  }
  default: break;
  }
  grad_refuse(g, l, "`%s` has no derivative in the IR", ir_kind_name(e->kind));
}
