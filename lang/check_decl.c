/* lang/check_decl.c: the checker's definitions (lang/check.h).
 *
 * An op: its parameters, results and temporaries (dtype, domain, extents),
 * then its body through check_stmt.c, then whether every result was
 * written. A schedule: its parameters and directives, kept as data for
 * passes/, of which only the names are checked.
 */
#include <inttypes.h>
#include <string.h>

#include "lang/check.h"

/* ===========================================================================
 * Operators
 */

static bool is_domain_word(const char *s) {
  return !strcmp(s, "src") || !strcmp(s, "dst") || !strcmp(s, "edge");
}

/* Declares a parameter, result or temporary. */
static void declare_tensor(Checker *c, const LangNode *decl, IrRole role) {
  const char *name = decl->decl.name;
  IrTensor *prev = ir_op_find_tensor(c->op, name);
  if (prev) {
    check_error(c, decl->loc, "duplicate tensor `%s`; the first is at %d:%d",
                name, prev->loc.line, prev->loc.col);
    c->bad_tensors = check_grow(c->a, c->bad_tensors, c->nbad, &c->capbad,
                          sizeof(const char *));
    c->bad_tensors[c->nbad++] = name;
    return;
  }
  const LangNode *type = decl->decl.type;
  int dt = ir_dtype_lookup(type->type.dtype);
  if (dt < 0) {
    check_error(c, type->loc, "unknown dtype `%s`; expected f32, f16, bf16 or f64",
                type->type.dtype);
    dt = IR_DT_F32;
  } else if (!ir_dtype_is_float((IrDType)dt)) {
    check_error(c, type->loc, "%s tensors are not supported yet: gop's tensors are "
                "f16, bf16, f32 or f64", type->type.dtype);
    dt = IR_DT_F32;
  }
  IrTensor *t = ir_op_add_tensor(c->a, c->op, name, decl->loc, (IrDType)dt,
                                 IR_DOM_DENSE, role);
  /* IR text: `@shared`, an input staged in shared memory by promote(t,
   * shared); verify.c checks that it is a dense input */
  for (const LangNode *an = decl->decl.annots; an; an = an->next) {
    if (!c->ir)
      check_error(c, an->loc, "`@%s` annotations are only allowed in IR text; "
                  "use a schedule (promote(%s, shared))", an->annot.name, name);
    else if (strcmp(an->annot.name, "shared") != 0 || an->annot.has_value)
      check_error(c, an->loc, "unknown tensor annotation `@%s`; a tensor takes "
                  "only `@shared`", an->annot.name);
    else if (t->shared)
      check_error(c, an->loc, "`@shared` is given twice on `%s`", name);
    else
      t->shared = true;
  }
  int i = 0;
  for (const LangNode *d = type->type.dims; d; d = d->next, i++) {
    if (d->kind == LANG_CALL && !strcmp(d->call.name, "groups")) {
      /* IR text: a row per row of a group table (passes/segment.c) */
      int64_t G = d->call.args ? d->call.args->i : 0;
      if (!c->ir || i > 0 || G < 1 || G > 1 << 20)
        check_error(c, d->loc, "`groups(G)` (1 <= G <= 1048576) is a domain of "
                    "IR text only, the first dimension of `%s`", name);
      t->domain = IR_DOM_GROUPS;
      t->group = G >= 1 && G <= 1 << 20 ? (int)G : 1;
      continue;
    }
    if (d->kind == LANG_NAME && is_domain_word(d->name)) {
      /* misplaced, it is still taken as the domain: its uses then agree */
      if (i > 0)
        check_error(c, d->loc, "domain `%s` must be the first dimension of "
                    "`%s`", d->name, name);
      if (t->domain != IR_DOM_DENSE) continue;
      t->domain = d->name[0] == 's' ? IR_DOM_SRC
                  : d->name[1] == 's' ? IR_DOM_DST : IR_DOM_EDGE;
      continue;
    }
    if (t->ndims == IR_MAX_DIMS) {
      check_error(c, d->loc, "`%s` has more than %d feature dimensions", name,
            IR_MAX_DIMS);
      break;
    }
    IrDim *dim = &t->dims[t->ndims++];
    if (d->kind == LANG_NAME) {
      dim->sym = ir_op_sym(c->a, c->op, d->name, d->loc);
    } else {
      if (d->i <= 0)
        check_error(c, d->loc, "a dimension must be positive, not %" PRId64,
                    d->i);
      dim->value = d->i > 0 ? d->i : 1;
    }
  }
}

/* Temporaries are declared at the top of the op body, before its first
 * loop; a misplaced one is refused but still declared, so that its uses do
 * not cause more errors. */
static void declare_temps(Checker *c, const LangNode *list, int depth,
                          const LangNode *first_loop) {
  for (const LangNode *s = list; s; s = s->next) {
    if (s->kind == LANG_TENSOR) {
      if (depth > 0)
        check_error(c, s->loc, "temporary `%s` is declared inside a loop; "
                    "declare it at the top of the op body", s->decl.name);
      else if (first_loop)
        check_error(c, s->loc, "temporary `%s` must be declared before the "
                    "op's first loop (at %d:%d)", s->decl.name,
                    first_loop->loc.line, first_loop->loc.col);
      declare_tensor(c, s, IR_ROLE_TEMP);
    } else if (s->kind == LANG_FOR) {
      declare_temps(c, s->loop.body, depth + 1, first_loop);
      if (depth == 0 && !first_loop) first_loop = s;
    } else if (s->kind == LANG_IF) {
      declare_temps(c, s->ifs.then, depth + 1, first_loop);
    }
  }
}

/* The accumulator type: `acc f32` or `acc f64` after the results, else f64
 * when a tensor is f64 and f32 otherwise. A declared f32 with an f64 tensor
 * would narrow its values: refused, as a 16-bit accumulator is. */
static void declare_acc(Checker *c, const LangNode *n) {
  IrOp *op = c->op;
  op->acc = ir_op_default_acc(op);
  const LangNode *acc = NULL;
  for (const LangNode *w = n->op.acc; w; w = w->next) {
    const char *key = w->call.name, *val = w->call.args->name;
    if (strcmp(key, "graph") == 0 && c->ir && !op->transposed &&
        strcmp(val, "reversed") == 0) {
      op->transposed = true; /* IR text of transpose() (passes/transpose.c) */
    } else if (strcmp(key, "acc") == 0 && !acc) {
      acc = w;
    } else if (strcmp(key, "graph") == 0 && !c->ir) {
      check_error(c, w->loc, "`graph %s` after the results of op `%s` is IR text (what a "
                  "schedule's transpose() prints); in a .gop source, schedule the "
                  "operator with transpose() instead", val, op->name);
      return;
    } else {
      check_error(c, w->loc, "expected `{`%s after the results of op `%s`, found "
                  "`%s %s`", acc ? "" : " or `acc TYPE`", op->name, key, val);
      return;
    }
  }
  if (!acc) return;
  const LangNode *ty = acc->call.args;
  int dt = ir_dtype_lookup(ty->name);
  if (dt != IR_DT_F32 && dt != IR_DT_F64) {
    check_error(c, ty->loc, "accumulator type `%s`: an operator accumulates in f32 "
                "or f64", ty->name);
    return;
  }
  for (int i = 0; i < op->ntensors; i++)
    if (op->tensors[i]->dtype == IR_DT_F64 && dt == IR_DT_F32) {
      check_error(c, ty->loc, "op `%s` accumulates in f32 but tensor `%s` is f64: "
                  "its values would be narrowed (use `acc f64`)", op->name,
                  op->tensors[i]->name);
      return;
    }
  op->acc = (IrDType)dt;
}

void check_op(Checker *c, const LangNode *n) {
  int errors = c->d->nerrors;
  c->op = ir_op_new(c->a, n->op.name, n->loc);
  c->nbinds = c->nloops = c->depth = c->ndecls = c->nbad = 0;
  c->pending = NULL;
  IrOp *prev = ir_module_find_op(c->m, n->op.name);
  if (prev)
    check_error(c, n->loc, "duplicate op `%s`; the first is at %s:%d:%d",
          n->op.name, prev->loc.file, prev->loc.line, prev->loc.col);

  for (const LangNode *p = n->op.params; p; p = p->next)
    declare_tensor(c, p, IR_ROLE_IN);
  if (!n->op.results)
    check_error(c, n->loc, "op `%s` has no results: add `-> NAME: TYPE`",
                n->op.name);
  for (const LangNode *r = n->op.results; r; r = r->next)
    declare_tensor(c, r, IR_ROLE_OUT);
  declare_temps(c, n->op.body, 0, NULL);
  declare_acc(c, n);
  for (int i = 0; i < c->op->nsyms; i++) {
    IrSym *s = c->op->syms[i];
    if (ir_op_find_tensor(c->op, s->name))
      check_error(c, s->loc, "`%s` names both a tensor and an extent symbol",
            s->name);
  }

  c->nts = c->op->ntensors;
  c->ts = IR_NEW_ARRAY(c->a, TensorState, c->nts + 1);
  check_collect_decls(c, n->op.body);
  c->op->body = check_block(c, n->op.body);

  for (int i = 0; i < c->op->ntensors; i++) {
    IrTensor *t = c->op->tensors[i];
    if (t->role == IR_ROLE_OUT && !c->ts[t->id].written)
      check_error(c, t->loc, "result `%s` of op `%s` is never written", t->name,
            c->op->name);
  }
  if (c->d->nerrors == errors && !prev) ir_module_add_op(c->m, c->op);
  c->op = NULL;
}

/* ===========================================================================
 * Schedules: directives kept as data for passes/; only names are checked.
 */

/* An integer expression over the parameters `s`. NULL if refused. */
static IrNode *sched_expr(Checker *c, const IrSchedDef *s, const LangNode *e) {
  switch (e->kind) {
  case LANG_INT: return ir_iconst(c->a, e->loc, e->i);
  case LANG_NAME:
    for (int i = 0; i < s->nparams; i++)
      if (!strcmp(s->params[i]->name, e->name))
        return ir_var(c->a, e->loc, s->params[i]);
    check_error(c, e->loc, "unknown schedule parameter `%s` in an argument of "
          "schedule `%s`", e->name, s->name);
    return NULL;
  case LANG_UNARY:
    if (e->un.op != IR_UN_NEG) break;
    if (e->un.a->kind == LANG_INT) return ir_iconst(c->a, e->loc, -e->un.a->i);
    {
      IrNode *x = sched_expr(c, s, e->un.a);
      return x ? ir_un(c->a, e->loc, IR_UN_NEG, x) : NULL;
    }
  case LANG_BINARY:
    switch (e->bin.op) {
    case IR_OP_ADD: case IR_OP_SUB: case IR_OP_MUL: case IR_OP_DIV:
    case IR_OP_MOD: {
      IrNode *x = sched_expr(c, s, e->bin.a);
      IrNode *y = sched_expr(c, s, e->bin.b);
      return x && y ? ir_bin(c->a, e->loc, e->bin.op, x, y) : NULL;
    }
    default: break;
    }
    break;
  default: break;
  }
  check_error(c, e->loc, "a directive's argument is a name or an integer "
              "expression over the schedule's parameters");
  return NULL;
}

void check_sched(Checker *c, const LangNode *n) {
  int errors = c->d->nerrors;
  IrSchedDef *prev = ir_module_find_sched(c->m, n->sched.name);
  if (prev)
    check_error(c, n->loc, "duplicate schedule `%s`; the first is at %s:%d:%d",
          n->sched.name, prev->loc.file, prev->loc.line, prev->loc.col);
  IrSchedDef *s = IR_NEW(c->a, IrSchedDef);
  s->name = n->sched.name;
  s->loc = n->loc;
  s->params = IR_NEW_ARRAY(c->a, IrVar *, lang_list_len(n->sched.params) + 1);
  for (const LangNode *p = n->sched.params; p; p = p->next) {
    bool dup = false;
    for (int i = 0; i < s->nparams; i++)
      if (!strcmp(s->params[i]->name, p->name)) {
        check_error(c, p->loc, "duplicate parameter `%s` of schedule `%s`",
                    p->name, s->name);
        dup = true;
      }
    if (dup) continue;
    IrVar *v = IR_NEW(c->a, IrVar);
    v->name = p->name;
    v->loc = p->loc;
    v->kind = IR_VAR_INDEX;
    v->dtype = IR_DT_I32;
    v->id = s->nparams;
    s->params[s->nparams++] = v;
  }
  IrDirective **tail = &s->directives;
  for (const LangNode *d = n->sched.body; d; d = d->next) {
    IrDirective *dir = IR_NEW(c->a, IrDirective);
    dir->prim = d->dir.name;
    dir->loc = d->loc;
    dir->args = IR_NEW_ARRAY(c->a, IrSchedArg, lang_list_len(d->dir.args) + 1);
    for (const LangNode *a = d->dir.args; a; a = a->next) {
      IrSchedArg *arg = &dir->args[dir->nargs++];
      arg->loc = a->loc;
      bool is_param = false;
      if (a->kind == LANG_NAME)
        for (int i = 0; i < s->nparams; i++)
          is_param |= !strcmp(s->params[i]->name, a->name);
      /* a bare name is a loop, tensor or keyword unless it is a parameter */
      if (a->kind == LANG_NAME && !is_param)
        arg->name = a->name;
      else
        arg->expr = sched_expr(c, s, a);
    }
    dir->results = IR_NEW_ARRAY(c->a, const char *,
                                lang_list_len(d->dir.results) + 1);
    for (const LangNode *r = d->dir.results; r; r = r->next)
      dir->results[dir->nresults++] = r->name;
    *tail = dir;
    tail = &dir->next;
  }
  if (c->d->nerrors == errors && !prev) ir_module_add_sched(c->m, s);
}
