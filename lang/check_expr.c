/* lang/check_expr.c: the checker's expressions (lang/check.h).
 *
 * Three kinds of expression, each with its own walk: indices (integers that
 * pick an element, bound a loop or guard, with the domain rules that say
 * which vertex or edge may index what), tensor accesses T[i, j], and values
 * (the f32 that statements compute, with the math and graph builtins); and
 * the conditions of IR text's `if` guards, which compare either.
 */
#include <inttypes.h>
#include <math.h>
#include <string.h>

#include "lang/check.h"

/* ===========================================================================
 * Index expressions: integers that pick an element, bound a loop or guard.
 *
 * Besides the IR, check_index_expr says what the expression is (an Ix, in
 * lang/check.h), which the domain rules need.
 */
#define KIND_BIT(k) (1u << (unsigned)(k))

static unsigned ix_kinds(const Ix *ix) {
  switch (ix->form) {
  case IX_VAR: return KIND_BIT(ix->var->kind);
  case IX_SRCOF: return KIND_BIT(IR_VAR_SRC_V);
  case IX_DSTOF: return KIND_BIT(IR_VAR_DST_V);
  case IX_EXPR: return ix->kinds;
  default: return 0;
  }
}

/* Whether an index of this form may stand where a `want` (a src vertex, a
 * dst vertex, an edge, or a feature index for IR_VAR_INDEX) is expected.
 * Bad ones fit: their error was reported already. */
static bool fits(const Checker *c, const Ix *ix, IrVarKind want) {
  switch (ix->form) {
  case IX_BAD: return true;
  case IX_CONST: return want == IR_VAR_INDEX;
  case IX_VAR:
    /* IR text: a vertex or edge loop split by scheduling leaves range
     * variables where the vertex or the edge was. */
    return ix->var->kind == want || (c->ir && ix->var->kind == IR_VAR_INDEX);
  case IX_SRCOF: return want == IR_VAR_SRC_V;
  case IX_DSTOF: return want == IR_VAR_DST_V;
  case IX_EXPR:
    return c->ir && (ix->kinds & ~(KIND_BIT(IR_VAR_INDEX) | KIND_BIT(want))) == 0;
  }
  return false;
}

static const char *ix_describe(Checker *c, const Ix *ix) {
  switch (ix->form) {
  case IX_CONST: return ir_sprintf(c->a, "the integer %" PRId64, ix->value);
  case IX_VAR:
    return ir_sprintf(c->a, "%s `%s`", ir_varkind_name(ix->var->kind),
                      ix->var->name);
  default: return ix->text;
  }
}


/* The graph builtins, by name; math functions come from IR_FN_LIST. */
typedef enum { BI_SRC, BI_DST, BI_INDEG, BI_OUTDEG, BI_NV, BI_NE } BuiltinId;
static const struct {
  const char *name;
  BuiltinId id;
  IrKind kind;
  int nargs;
  bool ir_only; /* refused in .gop source */
} builtins[] = {
    {"src", BI_SRC, IR_SRC, 1, false},
    {"dst", BI_DST, IR_DST, 1, false},
    {"in_degree", BI_INDEG, IR_INDEG, 1, false},
    {"out_degree", BI_OUTDEG, IR_OUTDEG, 1, false},
    {"num_vertices", BI_NV, IR_NV, 0, true},
    {"num_edges", BI_NE, IR_NE, 0, true},
};
enum { NBUILTINS = sizeof builtins / sizeof builtins[0] };

static int find_builtin(const char *name) {
  for (int i = 0; i < NBUILTINS; i++)
    if (strcmp(builtins[i].name, name) == 0) return i;
  return -1;
}

/* Checks the number of arguments of a call; false (reported) if wrong. */
static bool check_arity(Checker *c, const LangNode *call, int want) {
  int got = lang_list_len(call->call.args);
  if (got == want) return true;
  check_error(c, call->loc, "`%s` takes %d argument%s, not %d", call->call.name,
        want, want == 1 ? "" : "s", got);
  return false;
}

/* The vertex argument of in_degree(v), in_edges(v) ... : `want` is
 * IR_VAR_DST_V or IR_VAR_SRC_V. NULL if refused. */
IrNode *check_vertex_arg(Checker *c, const char *fn, const LangNode *e,
                          IrVarKind want) {
  Ix ix;
  IrNode *n = check_index_expr(c, e, &ix);
  if (ix.form == IX_BAD) return NULL;
  if (!fits(c, &ix, want)) {
    check_error(c, e->loc, "`%s` needs a %s, not %s", fn, ir_varkind_name(want),
          ix_describe(c, &ix));
    return NULL;
  }
  return n;
}

/* src(e), dst(e), num_vertices(), num_edges() where an index is wanted. */
static IrNode *index_call(Checker *c, const LangNode *e, Ix *ix) {
  ix->form = IX_BAD;
  int b = find_builtin(e->call.name);
  if (b < 0) {
    if (ir_fn_lookup(e->call.name) >= 0)
      check_error(c, e->loc, "`%s` gives a value, not an index", e->call.name);
    else
      check_error(c, e->loc, "unknown function `%s`", e->call.name);
    return NULL;
  }
  if (builtins[b].ir_only && !c->ir) {
    check_error(c, e->loc, "`%s()` is only allowed in IR text", e->call.name);
    return NULL;
  }
  if (!check_arity(c, e, builtins[b].nargs)) return NULL;
  switch (builtins[b].id) {
  case BI_SRC:
  case BI_DST: {
    Ix arg;
    IrNode *en = check_index_expr(c, e->call.args, &arg);
    if (arg.form == IX_BAD) return NULL;
    if (!fits(c, &arg, IR_VAR_EDGE)) {
      check_error(c, e->call.args->loc, "`%s` takes an edge, not %s",
                  e->call.name, ix_describe(c, &arg));
      return NULL;
    }
    bool is_src = builtins[b].id == BI_SRC;
    ix->form = is_src ? IX_SRCOF : IX_DSTOF;
    ix->var = arg.form == IX_VAR ? arg.var : NULL;
    ix->kinds = ix_kinds(&arg);
    ix->text = ir_sprintf(c->a, "%s vertex `%s(%s)`", is_src ? "src" : "dst",
                          e->call.name, arg.form == IX_VAR ? arg.var->name : "...");
    return ir_endpoint(c->a, e->loc, builtins[b].kind, en);
  }
  case BI_NV:
  case BI_NE:
    ix->form = IX_EXPR;
    ix->kinds = 0;
    ix->text = ir_sprintf(c->a, "`%s()`", e->call.name);
    return ir_graph_size(c->a, e->loc, builtins[b].kind);
  case BI_INDEG:
  case BI_OUTDEG:
    check_error(c, e->loc, "`%s` gives a value, not an index", e->call.name);
    return NULL;
  }
  return NULL;
}

IrNode *check_index_expr(Checker *c, const LangNode *e, Ix *ix) {
  *ix = (Ix){.form = IX_BAD};
  switch (e->kind) {
  case LANG_INT:
    ix->form = IX_CONST;
    ix->value = e->i;
    return ir_iconst(c->a, e->loc, e->i);
  case LANG_FLOAT:
    check_error(c, e->loc, "an index must be an integer, not %.9g", e->f);
    return NULL;
  case LANG_NAME: {
    Binding *b = check_lookup(c, e->name);
    if (b) {
      if (!b->var) return NULL; /* bad: reported at its declaration */
      if (b->var->kind == IR_VAR_LOCAL) {
        check_error(c, e->loc, "local `%s` is a value, not an index", e->name);
        return NULL;
      }
      ix->form = IX_VAR;
      ix->var = b->var;
      return ir_var(c->a, e->loc, b->var);
    }
    IrSym *s = check_find_sym(c->op, e->name);
    if (s) {
      if (!c->ir) {
        check_error(c, e->loc, "extent symbol `%s` cannot be an index; loop "
                    "over 0..%s", e->name, e->name);
        return NULL;
      }
      ix->form = IX_EXPR; /* IR text: extents appear in guards */
      ix->text = ir_sprintf(c->a, "extent `%s`", e->name);
      return ir_symref(c->a, e->loc, s);
    }
    if (ir_op_find_tensor(c->op, e->name))
      check_error(c, e->loc, "tensor `%s` cannot be an index", e->name);
    else
      check_unknown_name(c, e->name, e->loc);
    return NULL;
  }
  case LANG_ELEM:
    check_error(c, e->loc, "a tensor element cannot be an index (indirect "
                "indexing is not supported)");
    return NULL;
  case LANG_CALL: return index_call(c, e, ix);
  case LANG_UNARY:
    if (e->un.op == IR_UN_NEG && e->un.a->kind == LANG_INT) {
      ix->form = IX_CONST; /* fold: -3 is a constant, as the printer writes it */
      ix->value = -e->un.a->i;
      return ir_iconst(c->a, e->loc, -e->un.a->i);
    }
    if (!c->ir || e->un.op != IR_UN_NEG) break;
    {
      Ix a;
      IrNode *x = check_index_expr(c, e->un.a, &a);
      if (a.form == IX_BAD) return NULL;
      ix->form = IX_EXPR;
      ix->kinds = ix_kinds(&a);
      ix->text = "an index expression";
      return ir_un(c->a, e->loc, IR_UN_NEG, x);
    }
  case LANG_BINARY:
    switch (e->bin.op) {
    case IR_OP_ADD: case IR_OP_SUB: case IR_OP_MUL: case IR_OP_DIV:
    case IR_OP_MOD: {
      if (!c->ir) {
        check_error(c, e->loc, "index arithmetic is only allowed in IR text; "
                    "an index is a loop variable, src(e), dst(e) or an "
                    "integer");
        return NULL;
      }
      Ix a, b;
      IrNode *x = check_index_expr(c, e->bin.a, &a);
      IrNode *y = check_index_expr(c, e->bin.b, &b);
      if (a.form == IX_BAD || b.form == IX_BAD) return NULL;
      ix->form = IX_EXPR;
      ix->kinds = ix_kinds(&a) | ix_kinds(&b);
      ix->text = "an index expression";
      return ir_bin(c->a, e->loc, e->bin.op, x, y);
    }
    default: break;
    }
    break;
  default: break;
  }
  check_error(c, e->loc, "this is not an index: an index is a loop variable, "
              "src(e), dst(e) or an integer");
  return NULL;
}

/* ===========================================================================
 * Tensor accesses
 */

/* Checks T[idx...] and fills `out`; returns false if anything is wrong. */
bool check_access(Checker *c, IrTensor *t, const LangNode *at,
                         const LangNode *idx, IrNode **out) {
  int want = (t->domain != IR_DOM_DENSE) + t->ndims;
  int got = lang_list_len(idx);
  if (got != want) {
    check_error(c, at->loc, "`%s` is %s: it takes %d ind%s, not %d", t->name,
          check_type_string(c, t), want, want == 1 ? "ex" : "ices", got);
    return false;
  }
  if (t->domain != IR_DOM_DENSE && c->depth == 0) {
    check_error(c, at->loc, "`%s` lives on %s; outside loops only dense "
                "tensors can be used", t->name, check_domain_rows(t->domain));
    return false;
  }
  bool ok = true;
  int i = 0;
  for (const LangNode *e = idx; e; e = e->next, i++) {
    Ix ix;
    out[i] = check_index_expr(c, e, &ix);
    if (ix.form == IX_BAD) {
      ok = false;
      continue;
    }
    if (i == 0 && t->domain != IR_DOM_DENSE) {
      IrVarKind want_kind = t->domain == IR_DOM_SRC      ? IR_VAR_SRC_V
                            : t->domain == IR_DOM_DST    ? IR_VAR_DST_V
                            : t->domain == IR_DOM_GROUPS ? IR_VAR_INDEX
                                                         : IR_VAR_EDGE;
      if (!fits(c, &ix, want_kind)) {
        check_error(c, e->loc, "`%s` lives on %s but is indexed by %s", t->name,
              check_domain_rows(t->domain), ix_describe(c, &ix));
        ok = false;
      }
      continue;
    }
    int d = i - (t->domain != IR_DOM_DENSE);
    if (!fits(c, &ix, IR_VAR_INDEX)) {
      check_error(c, e->loc, "feature index %d of `%s` must be an index "
                  "variable or an integer, not %s", d + 1, t->name,
                  ix_describe(c, &ix));
      ok = false;
    } else if (ix.form == IX_CONST &&
               (ix.value < 0 ||
                (!t->dims[d].sym && ix.value >= t->dims[d].value))) {
      if (t->dims[d].sym)
        check_error(c, e->loc, "index %" PRId64 " is out of range for `%s`",
              ix.value, t->name);
      else
        check_error(c, e->loc, "index %" PRId64 " is out of range for "
                    "dimension %d of `%s` (size %" PRId64 ")", ix.value, d + 1,
                    t->name, t->dims[d].value);
      ok = false;
    }
  }
  return ok;
}

bool check_is_bad_tensor(const Checker *c, const char *name) {
  for (int i = 0; i < c->nbad; i++)
    if (!strcmp(c->bad_tensors[i], name)) return true;
  return false;
}

/* The tensor a read or write names; NULL (reported unless the name is bad)
 * if there is none. */
IrTensor *check_find_tensor(Checker *c, const char *name, Loc loc) {
  if (check_is_bad_tensor(c, name)) return NULL;
  IrTensor *t = ir_op_find_tensor(c->op, name);
  if (t) return t;
  Binding *b = check_lookup(c, name);
  if (b && !b->var) return NULL;
  if (b)
    check_error(c, loc, "%s `%s` is not a tensor", check_binding_kind(b), name);
  else if (check_find_sym(c->op, name))
    check_error(c, loc, "extent symbol `%s` is not a tensor", name);
  else
    check_error(c, loc, "unknown tensor `%s`", name);
  return NULL;
}

/* ===========================================================================
 * Value expressions: f32, what statements compute.
 */

static IrNode *value_name(Checker *c, const LangNode *e) {
  Binding *b = check_lookup(c, e->name);
  if (b) {
    if (!b->var) return NULL;
    switch (b->var->kind) {
    case IR_VAR_LOCAL: return ir_var(c->a, e->loc, b->var);
    case IR_VAR_DST_V:
      check_error(c, e->loc, "dst vertex `%s` is not a value; use "
                  "in_degree(%s) for its degree", e->name, e->name);
      return NULL;
    case IR_VAR_SRC_V:
      check_error(c, e->loc, "src vertex `%s` is not a value; use "
                  "out_degree(%s) for its degree", e->name, e->name);
      return NULL;
    case IR_VAR_EDGE:
      check_error(c, e->loc, "edge `%s` is not a value; read an edge tensor "
                  "such as W[%s]", e->name, e->name);
      return NULL;
    case IR_VAR_INDEX:
      check_error(c, e->loc, "index `%s` is not a value: values are f32, "
                  "indices are integers", e->name);
      return NULL;
    default: return NULL;
    }
  }
  if (check_is_bad_tensor(c, e->name)) return NULL;
  IrTensor *t = ir_op_find_tensor(c->op, e->name);
  if (t) {
    /* a scalar f32[] may be read by its bare name */
    if (t->domain == IR_DOM_DENSE && t->ndims == 0)
      return ir_load(c->a, e->loc, t, 0, NULL);
    check_error(c, e->loc, "`%s` is %s: read an element %s[...]", t->name,
          check_type_string(c, t), t->name);
    return NULL;
  }
  if (check_find_sym(c->op, e->name))
    check_error(c, e->loc, "extent symbol `%s` is not a value", e->name);
  else if (c->ir && !strcmp(e->name, "inf"))
    return ir_fconst(c->a, e->loc, INFINITY); /* the printer's infinity */
  else
    check_unknown_name(c, e->name, e->loc);
  return NULL;
}

static IrNode *value_call(Checker *c, const LangNode *e) {
  int fn = ir_fn_lookup(e->call.name);
  if (fn >= 0) {
    if (!check_arity(c, e, ir_fn_nargs((IrFn)fn))) return NULL;
    /* a conversion rounds to its type and computes on in the accumulator
     * type, so it cannot be wider than that */
    int to = ir_dtype_of_fn((IrFn)fn);
    if (to == IR_DT_F64 && c->op->acc != IR_DT_F64) {
      check_error(c, e->loc, "f64(...) in op `%s`, which accumulates in %s: the value "
                  "would be narrowed back at once (declare `acc f64` after the "
                  "results)", c->op->name, ir_dtype_name(c->op->acc));
      return NULL;
    }
    IrNode *args[2] = {0};
    bool ok = true;
    int i = 0;
    for (const LangNode *a = e->call.args; a; a = a->next, i++)
      ok &= (args[i] = check_value_expr(c, a)) != NULL;
    return ok ? ir_call(c->a, e->loc, (IrFn)fn, i, args) : NULL;
  }
  int b = find_builtin(e->call.name);
  if (b < 0) {
    if (ir_op_find_tensor(c->op, e->call.name))
      check_error(c, e->loc, "`%s` is a tensor, not a function: read an "
                  "element %s[...]", e->call.name, e->call.name);
    else
      check_error(c, e->loc, "unknown function `%s`", e->call.name);
    return NULL;
  }
  switch (builtins[b].id) {
  case BI_INDEG:
  case BI_OUTDEG: {
    if (!check_arity(c, e, 1)) return NULL;
    IrVarKind want = builtins[b].id == BI_INDEG ? IR_VAR_DST_V : IR_VAR_SRC_V;
    IrNode *v = check_vertex_arg(c, e->call.name, e->call.args, want);
    return v ? ir_endpoint(c->a, e->loc, builtins[b].kind, v) : NULL;
  }
  case BI_SRC:
  case BI_DST:
    check_error(c, e->loc, "`%s(...)` is a vertex, not a value; use it as an "
                "index", e->call.name);
    return NULL;
  case BI_NV:
  case BI_NE:
    if (!c->ir)
      check_error(c, e->loc, "`%s()` is only allowed in IR text", e->call.name);
    else
      check_error(c, e->loc, "`%s()` is an integer for extents and guards, not "
                  "a value", e->call.name);
    return NULL;
  }
  return NULL;
}

IrNode *check_value_expr(Checker *c, const LangNode *e) {
  switch (e->kind) {
  case LANG_INT: return ir_fconst(c->a, e->loc, (double)e->i);
  case LANG_FLOAT: return ir_fconst(c->a, e->loc, e->f);
  case LANG_NAME: return value_name(c, e);
  case LANG_ELEM: {
    IrTensor *t = check_find_tensor(c, e->elem.name, e->loc);
    if (!t) return NULL;
    IrNode *idx[IR_MAX_IDX];
    if (!check_access(c, t, e, e->elem.idx, idx)) return NULL;
    return ir_load(c->a, e->loc, t, lang_list_len(e->elem.idx), idx);
  }
  case LANG_CALL: return value_call(c, e);
  case LANG_UNARY:
    if (e->un.op == IR_UN_NEG) {
      /* fold a negative literal, as the printer writes it */
      if (e->un.a->kind == LANG_INT)
        return ir_fconst(c->a, e->loc, -(double)e->un.a->i);
      if (e->un.a->kind == LANG_FLOAT)
        return ir_fconst(c->a, e->loc, -e->un.a->f);
      IrNode *x = check_value_expr(c, e->un.a);
      if (x && x->kind == IR_FCONST && isinf(x->f)) { /* -inf */
        x->f = -x->f;
        x->loc = e->loc;
        return x;
      }
      return x ? ir_un(c->a, e->loc, IR_UN_NEG, x) : NULL;
    }
    check_error(c, e->loc, "`!` is only allowed in the condition of a guard");
    return NULL;
  case LANG_BINARY:
    switch (e->bin.op) {
    case IR_OP_ADD: case IR_OP_SUB: case IR_OP_MUL: case IR_OP_DIV: {
      IrNode *x = check_value_expr(c, e->bin.a);
      IrNode *y = check_value_expr(c, e->bin.b);
      return x && y ? ir_bin(c->a, e->loc, e->bin.op, x, y) : NULL;
    }
    case IR_OP_MOD:
      check_error(c, e->loc, "`%%` works on integer indices only, not on "
                  "values");
      return NULL;
    default:
      check_error(c, e->loc, "`%s` gives a boolean, which is only allowed in "
                  "the condition of a guard%s", ir_binop_name(e->bin.op),
                  c->ir ? "" : " (IR text)");
      return NULL;
    }
  default: break;
  }
  unreachable("not an expression");
}

/* Whether a comparison operand is an f32 value rather than an index: the
 * finalisation stages and promoted accumulators of passes/ compare values
 * (`if (Y[v, f] == -inf)`, `if (in_degree(v) > 0.0)`). IR text only. */
static bool is_value_operand(Checker *c, const LangNode *e) {
  switch (e->kind) {
  case LANG_FLOAT:
  case LANG_ELEM: return true;
  case LANG_CALL:
    return ir_fn_lookup(e->call.name) >= 0 || !strcmp(e->call.name, "in_degree") ||
           !strcmp(e->call.name, "out_degree");
  case LANG_NAME: {
    Binding *b = check_lookup(c, e->name);
    if (b) return b->var && b->var->kind == IR_VAR_LOCAL;
    return !strcmp(e->name, "inf");
  }
  case LANG_UNARY: return is_value_operand(c, e->un.a);
  case LANG_BINARY: return is_value_operand(c, e->bin.a) || is_value_operand(c, e->bin.b);
  default: return false;
  }
}

/* The condition of an `if` guard (IR text): comparisons of indices (or, in
 * IR text, of values) joined by && || !. */
IrNode *check_cond_expr(Checker *c, const LangNode *e) {
  if (e->kind == LANG_UNARY && e->un.op == IR_UN_NOT) {
    IrNode *x = check_cond_expr(c, e->un.a);
    return x ? ir_un(c->a, e->loc, IR_UN_NOT, x) : NULL;
  }
  if (e->kind == LANG_BINARY) {
    switch (e->bin.op) {
    case IR_OP_AND:
    case IR_OP_OR: {
      IrNode *x = check_cond_expr(c, e->bin.a);
      IrNode *y = check_cond_expr(c, e->bin.b);
      return x && y ? ir_bin(c->a, e->loc, e->bin.op, x, y) : NULL;
    }
    case IR_OP_EQ: case IR_OP_NE: case IR_OP_LT: case IR_OP_LE:
    case IR_OP_GT: case IR_OP_GE: {
      if (c->ir && (is_value_operand(c, e->bin.a) || is_value_operand(c, e->bin.b))) {
        IrNode *x = check_value_expr(c, e->bin.a);
        IrNode *y = check_value_expr(c, e->bin.b);
        return x && y ? ir_bin(c->a, e->loc, e->bin.op, x, y) : NULL;
      }
      Ix a, b;
      IrNode *x = check_index_expr(c, e->bin.a, &a);
      IrNode *y = check_index_expr(c, e->bin.b, &b);
      return x && y ? ir_bin(c->a, e->loc, e->bin.op, x, y) : NULL;
    }
    default: break;
    }
  }
  check_error(c, e->loc, "a guard's condition must be a comparison of indices");
  return NULL;
}
