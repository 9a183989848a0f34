/* lang/check.c: the rules of docs/language.md, and the IR they allow.
 *
 * One walk over the AST of each definition resolves every name, checks
 * every rule and builds the IR (ir/ir.h) as it goes: a rule needs the same
 * facts (which loop binds `e`, what `X` lives on) that building needs, so
 * doing both at once keeps them from disagreeing. The walk never stops at
 * the first error: it reports, builds a stand-in or NULL, and goes on, so
 * one run shows as many mistakes as possible. A definition with errors is
 * not added to the module; the caller throws the module away anyway.
 *
 * To keep one mistake from causing a cascade, a name that failed to resolve
 * or a loop whose header was wrong is "bad": its uses are accepted
 * silently.
 *
 * IR mode (the IR text that ir/print.c writes) relaxes a few rules for what
 * scheduling produces; each place says so with "IR text:" and
 * docs/language.md lists them.
 *
 * To add a builtin function: a math function is one line in IR_FN_LIST
 * (ir/nodes.def) and needs nothing here; a graph builtin (like in_degree) is
 * one row of `builtins` below plus a case in value_call or index_call.
 * To add a statement: an AST kind in LANG_AST_LIST (lang.h), a rule in
 * parser.y that builds it, a case in ast.c's dump and one in check_stmt
 * below that checks it and returns its IR.
 */
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <string.h>

#include "lang/lang.h"

/* A name visible where the walk is: a loop variable or a local. */
typedef struct Binding {
  const char *name;
  IrVar *var;      /* NULL: bad (its declaration was refused) */
  Loc loc;
  int nloops;      /* locals: how many loops enclosed the declaration */
} Binding;

/* A loop enclosing the walk's position. */
typedef struct LoopCtx {
  IrVar *var;
  IrLoopKind kind;
  IrNode *of; /* IN_EDGES / OUT_EDGES: the vertex */
} LoopCtx;

/* What the op's statements did to a tensor so far. */
typedef struct TensorState {
  bool written;
  IrRed red; /* the reduction kind that targets it, once one does */
  Loc red_loc;
} TensorState;

/* A declaration anywhere in the op, for "used before its declaration". */
typedef struct Decl {
  const char *name;
  Loc loc;
  bool is_loop;
} Decl;

typedef struct Checker {
  Arena *a;
  Diag *d;
  bool ir;          /* IR text mode */
  IrModule *m;
  IrOp *op;         /* the op being checked */
  TensorState *ts;  /* by IrTensor.id */
  int nts;
  Binding *binds;
  int nbinds, capbinds;
  LoopCtx *loops;   /* the enclosing loops whose header was right */
  int nloops, caploops;
  int depth;        /* every enclosing loop, bad ones included */
  const char **bad_tensors; /* names declared twice: their uses are not checked */
  int nbad, capbad;
  Decl *decls;
  int ndecls, capdecls;
  const char *pending; /* the local whose initialiser is being checked */
} Checker;

static void error(Checker *c, Loc loc, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void error(Checker *c, Loc loc, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  ir_verror(c->d, "error", loc, fmt, ap);
  va_end(ap);
}

/* Arena-backed growable arrays: the old storage stays in the arena. */
static void *grow(Arena *a, void *items, int n, int *cap, size_t size) {
  if (n < *cap) return items;
  int ncap = *cap ? *cap * 2 : 16;
  void *bigger = ir_alloc(a, size * (size_t)ncap);
  if (items) memcpy(bigger, items, size * (size_t)n);
  *cap = ncap;
  return bigger;
}

/* ===========================================================================
 * Names
 */

static const char *domain_rows(IrDomain d) {
  switch (d) {
  case IR_DOM_SRC: return "src vertices";
  case IR_DOM_DST: return "dst vertices";
  case IR_DOM_EDGE: return "edges";
  case IR_DOM_GROUPS: return "the rows of a group table";
  default: return "nothing (it is dense)";
  }
}

/* "f32[src, F]" */
static const char *type_string(Checker *c, const IrTensor *t) {
  const char *s = ir_sprintf(c->a, "%s[", ir_dtype_name(t->dtype));
  const char *sep = "";
  if (t->domain != IR_DOM_DENSE) {
    s = ir_sprintf(c->a, "%s%s", s, ir_domain_name(t->domain));
    if (t->domain == IR_DOM_GROUPS) s = ir_sprintf(c->a, "%s(%d)", s, t->group);
    sep = ", ";
  }
  for (int i = 0; i < t->ndims; i++) {
    if (t->dims[i].sym)
      s = ir_sprintf(c->a, "%s%s%s", s, sep, t->dims[i].sym->name);
    else
      s = ir_sprintf(c->a, "%s%s%" PRId64, s, sep, t->dims[i].value);
    sep = ", ";
  }
  return ir_sprintf(c->a, "%s]", s);
}

static Binding *lookup(Checker *c, const char *name) {
  for (int i = c->nbinds - 1; i >= 0; i--)
    if (strcmp(c->binds[i].name, name) == 0) return &c->binds[i];
  return NULL;
}

static IrSym *find_sym(const IrOp *op, const char *name) {
  for (int i = 0; i < op->nsyms; i++)
    if (strcmp(op->syms[i]->name, name) == 0) return op->syms[i];
  return NULL;
}

static void bind(Checker *c, const char *name, IrVar *var, Loc loc) {
  c->binds = grow(c->a, c->binds, c->nbinds, &c->capbinds, sizeof(Binding));
  c->binds[c->nbinds++] = (Binding){name, var, loc, c->nloops};
}

static const char *binding_kind(const Binding *b) {
  return b->var && b->var->kind == IR_VAR_LOCAL ? "local" : "loop variable";
}

/* Refuses a loop variable or local `name` that would hide another name.
 * `what` is "loop variable" or "local". Returns false if refused. */
static bool check_new_name(Checker *c, const char *name, Loc loc,
                           const char *what) {
  Binding *b = lookup(c, name);
  if (b) {
    if (strcmp(what, "local") == 0 && strcmp(binding_kind(b), "local") == 0)
      error(c, loc, "local `%s` is already declared at %d:%d", name,
            b->loc.line, b->loc.col);
    else
      error(c, loc, "%s `%s` shadows the %s declared at %d:%d", what, name,
            binding_kind(b), b->loc.line, b->loc.col);
    return false;
  }
  if (ir_op_find_tensor(c->op, name)) {
    error(c, loc, "`%s` is a tensor of op `%s`; give this %s another name",
          name, c->op->name, what);
    return false;
  }
  if (find_sym(c->op, name)) {
    error(c, loc, "`%s` is an extent symbol of op `%s`; give this %s another "
          "name", name, c->op->name, what);
    return false;
  }
  return true;
}

/* A name that resolved to nothing: say the most useful thing. */
static void unknown_name(Checker *c, const char *name, Loc loc) {
  if (c->pending && strcmp(c->pending, name) == 0) {
    error(c, loc, "local `%s` is used in its own initialiser", name);
    return;
  }
  const Decl *best = NULL;
  for (int i = 0; i < c->ndecls; i++)
    if (strcmp(c->decls[i].name, name) == 0) {
      best = &c->decls[i];
      break;
    }
  if (!best) {
    error(c, loc, "unknown name `%s`", name);
    return;
  }
  bool later = best->loc.line > loc.line ||
               (best->loc.line == loc.line && best->loc.col > loc.col);
  if (later && !best->is_loop)
    error(c, loc, "local `%s` is used before its declaration at %d:%d", name,
          best->loc.line, best->loc.col);
  else if (best->is_loop)
    error(c, loc, "loop variable `%s` is not visible here: it lives in its "
          "loop at %d:%d", name, best->loc.line, best->loc.col);
  else
    error(c, loc, "local `%s` (declared at %d:%d) is not visible here: a local "
          "lives to the end of its block", name, best->loc.line, best->loc.col);
}

/* Collects every loop variable and local of an op body, for unknown_name. */
static void collect_decls(Checker *c, const LangNode *list) {
  for (const LangNode *n = list; n; n = n->next) {
    const char *name = NULL;
    Loc loc = n->loc;
    bool is_loop = false;
    if (n->kind == LANG_VAR) {
      name = n->var.name;
    } else if (n->kind == LANG_FOR) {
      name = n->loop.var;
      loc = n->loop.var_loc;
      is_loop = true;
    }
    if (name) {
      c->decls = grow(c->a, c->decls, c->ndecls, &c->capdecls, sizeof(Decl));
      c->decls[c->ndecls++] = (Decl){name, loc, is_loop};
    }
    if (n->kind == LANG_FOR) collect_decls(c, n->loop.body);
    if (n->kind == LANG_IF) collect_decls(c, n->ifs.then);
  }
}

/* ===========================================================================
 * Index expressions: integers that pick an element, bound a loop or guard.
 *
 * Besides the IR, index_expr says what the expression is (an Ix), which the
 * domain rules need: a lone loop variable, src(e)/dst(e), a constant, or
 * (IR text only) arithmetic, with the kinds of the variables it uses.
 */
typedef enum { IX_BAD, IX_CONST, IX_VAR, IX_SRCOF, IX_DSTOF, IX_EXPR } IxForm;

typedef struct Ix {
  IxForm form;
  IrVar *var;     /* IX_VAR: the variable; IX_SRCOF/IX_DSTOF: the edge */
  int64_t value;  /* IX_CONST */
  unsigned kinds; /* IX_EXPR: 1 << IrVarKind of every variable used */
  const char *text; /* for messages: "dst vertex `v`" */
} Ix;

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

static IrNode *index_expr(Checker *c, const LangNode *e, Ix *ix);

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
  error(c, call->loc, "`%s` takes %d argument%s, not %d", call->call.name,
        want, want == 1 ? "" : "s", got);
  return false;
}

/* The vertex argument of in_degree(v), in_edges(v) ... : `want` is
 * IR_VAR_DST_V or IR_VAR_SRC_V. NULL if refused. */
static IrNode *vertex_arg(Checker *c, const char *fn, const LangNode *e,
                          IrVarKind want) {
  Ix ix;
  IrNode *n = index_expr(c, e, &ix);
  if (ix.form == IX_BAD) return NULL;
  if (!fits(c, &ix, want)) {
    error(c, e->loc, "`%s` needs a %s, not %s", fn, ir_varkind_name(want),
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
      error(c, e->loc, "`%s` gives a value, not an index", e->call.name);
    else
      error(c, e->loc, "unknown function `%s`", e->call.name);
    return NULL;
  }
  if (builtins[b].ir_only && !c->ir) {
    error(c, e->loc, "`%s()` is only allowed in IR text", e->call.name);
    return NULL;
  }
  if (!check_arity(c, e, builtins[b].nargs)) return NULL;
  switch (builtins[b].id) {
  case BI_SRC:
  case BI_DST: {
    Ix arg;
    IrNode *en = index_expr(c, e->call.args, &arg);
    if (arg.form == IX_BAD) return NULL;
    if (!fits(c, &arg, IR_VAR_EDGE)) {
      error(c, e->call.args->loc, "`%s` takes an edge, not %s", e->call.name,
            ix_describe(c, &arg));
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
    error(c, e->loc, "`%s` gives a value, not an index", e->call.name);
    return NULL;
  }
  return NULL;
}

static IrNode *index_expr(Checker *c, const LangNode *e, Ix *ix) {
  *ix = (Ix){.form = IX_BAD};
  switch (e->kind) {
  case LANG_INT:
    ix->form = IX_CONST;
    ix->value = e->i;
    return ir_iconst(c->a, e->loc, e->i);
  case LANG_FLOAT:
    error(c, e->loc, "an index must be an integer, not %.9g", e->f);
    return NULL;
  case LANG_NAME: {
    Binding *b = lookup(c, e->name);
    if (b) {
      if (!b->var) return NULL; /* bad: reported at its declaration */
      if (b->var->kind == IR_VAR_LOCAL) {
        error(c, e->loc, "local `%s` is a value, not an index", e->name);
        return NULL;
      }
      ix->form = IX_VAR;
      ix->var = b->var;
      return ir_var(c->a, e->loc, b->var);
    }
    IrSym *s = find_sym(c->op, e->name);
    if (s) {
      if (!c->ir) {
        error(c, e->loc, "extent symbol `%s` cannot be an index; loop over "
              "0..%s", e->name, e->name);
        return NULL;
      }
      ix->form = IX_EXPR; /* IR text: extents appear in guards */
      ix->text = ir_sprintf(c->a, "extent `%s`", e->name);
      return ir_symref(c->a, e->loc, s);
    }
    if (ir_op_find_tensor(c->op, e->name))
      error(c, e->loc, "tensor `%s` cannot be an index", e->name);
    else
      unknown_name(c, e->name, e->loc);
    return NULL;
  }
  case LANG_ELEM:
    error(c, e->loc, "a tensor element cannot be an index (indirect indexing "
          "is not supported)");
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
      IrNode *x = index_expr(c, e->un.a, &a);
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
        error(c, e->loc, "index arithmetic is only allowed in IR text; an index "
              "is a loop variable, src(e), dst(e) or an integer");
        return NULL;
      }
      Ix a, b;
      IrNode *x = index_expr(c, e->bin.a, &a);
      IrNode *y = index_expr(c, e->bin.b, &b);
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
  error(c, e->loc, "this is not an index: an index is a loop variable, src(e), "
        "dst(e) or an integer");
  return NULL;
}

/* ===========================================================================
 * Tensor accesses
 */

/* Checks T[idx...] and fills `out`; returns false if anything is wrong. */
static bool check_access(Checker *c, IrTensor *t, const LangNode *at,
                         const LangNode *idx, IrNode **out) {
  int want = (t->domain != IR_DOM_DENSE) + t->ndims;
  int got = lang_list_len(idx);
  if (got != want) {
    error(c, at->loc, "`%s` is %s: it takes %d ind%s, not %d", t->name,
          type_string(c, t), want, want == 1 ? "ex" : "ices", got);
    return false;
  }
  if (t->domain != IR_DOM_DENSE && c->depth == 0) {
    error(c, at->loc, "`%s` lives on %s; outside loops only dense tensors can "
          "be used", t->name, domain_rows(t->domain));
    return false;
  }
  bool ok = true;
  int i = 0;
  for (const LangNode *e = idx; e; e = e->next, i++) {
    Ix ix;
    out[i] = index_expr(c, e, &ix);
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
        error(c, e->loc, "`%s` lives on %s but is indexed by %s", t->name,
              domain_rows(t->domain), ix_describe(c, &ix));
        ok = false;
      }
      continue;
    }
    int d = i - (t->domain != IR_DOM_DENSE);
    if (!fits(c, &ix, IR_VAR_INDEX)) {
      error(c, e->loc, "feature index %d of `%s` must be an index variable or "
            "an integer, not %s", d + 1, t->name, ix_describe(c, &ix));
      ok = false;
    } else if (ix.form == IX_CONST &&
               (ix.value < 0 ||
                (!t->dims[d].sym && ix.value >= t->dims[d].value))) {
      if (t->dims[d].sym)
        error(c, e->loc, "index %" PRId64 " is out of range for `%s`",
              ix.value, t->name);
      else
        error(c, e->loc, "index %" PRId64 " is out of range for dimension %d "
              "of `%s` (size %" PRId64 ")", ix.value, d + 1, t->name,
              t->dims[d].value);
      ok = false;
    }
  }
  return ok;
}

static bool is_bad_tensor(const Checker *c, const char *name) {
  for (int i = 0; i < c->nbad; i++)
    if (!strcmp(c->bad_tensors[i], name)) return true;
  return false;
}

/* The tensor a read or write names; NULL (reported unless the name is bad)
 * if there is none. */
static IrTensor *find_tensor(Checker *c, const char *name, Loc loc) {
  if (is_bad_tensor(c, name)) return NULL;
  IrTensor *t = ir_op_find_tensor(c->op, name);
  if (t) return t;
  Binding *b = lookup(c, name);
  if (b && !b->var) return NULL;
  if (b)
    error(c, loc, "%s `%s` is not a tensor", binding_kind(b), name);
  else if (find_sym(c->op, name))
    error(c, loc, "extent symbol `%s` is not a tensor", name);
  else
    error(c, loc, "unknown tensor `%s`", name);
  return NULL;
}

/* ===========================================================================
 * Value expressions: f32, what statements compute.
 */
static IrNode *value_expr(Checker *c, const LangNode *e);

static IrNode *value_name(Checker *c, const LangNode *e) {
  Binding *b = lookup(c, e->name);
  if (b) {
    if (!b->var) return NULL;
    switch (b->var->kind) {
    case IR_VAR_LOCAL: return ir_var(c->a, e->loc, b->var);
    case IR_VAR_DST_V:
      error(c, e->loc, "dst vertex `%s` is not a value; use in_degree(%s) for "
            "its degree", e->name, e->name);
      return NULL;
    case IR_VAR_SRC_V:
      error(c, e->loc, "src vertex `%s` is not a value; use out_degree(%s) for "
            "its degree", e->name, e->name);
      return NULL;
    case IR_VAR_EDGE:
      error(c, e->loc, "edge `%s` is not a value; read an edge tensor such as "
            "W[%s]", e->name, e->name);
      return NULL;
    case IR_VAR_INDEX:
      error(c, e->loc, "index `%s` is not a value: values are f32, indices "
            "are integers", e->name);
      return NULL;
    default: return NULL;
    }
  }
  if (is_bad_tensor(c, e->name)) return NULL;
  IrTensor *t = ir_op_find_tensor(c->op, e->name);
  if (t) {
    /* a scalar f32[] may be read by its bare name */
    if (t->domain == IR_DOM_DENSE && t->ndims == 0)
      return ir_load(c->a, e->loc, t, 0, NULL);
    error(c, e->loc, "`%s` is %s: read an element %s[...]", t->name,
          type_string(c, t), t->name);
    return NULL;
  }
  if (find_sym(c->op, e->name))
    error(c, e->loc, "extent symbol `%s` is not a value", e->name);
  else if (c->ir && !strcmp(e->name, "inf"))
    return ir_fconst(c->a, e->loc, INFINITY); /* the printer's infinity */
  else
    unknown_name(c, e->name, e->loc);
  return NULL;
}

static IrNode *value_call(Checker *c, const LangNode *e) {
  int fn = ir_fn_lookup(e->call.name);
  if (fn >= 0) {
    if (!check_arity(c, e, ir_fn_nargs((IrFn)fn))) return NULL;
    IrNode *args[2] = {0};
    bool ok = true;
    int i = 0;
    for (const LangNode *a = e->call.args; a; a = a->next, i++)
      ok &= (args[i] = value_expr(c, a)) != NULL;
    return ok ? ir_call(c->a, e->loc, (IrFn)fn, i, args) : NULL;
  }
  int b = find_builtin(e->call.name);
  if (b < 0) {
    if (ir_op_find_tensor(c->op, e->call.name))
      error(c, e->loc, "`%s` is a tensor, not a function: read an element "
            "%s[...]", e->call.name, e->call.name);
    else
      error(c, e->loc, "unknown function `%s`", e->call.name);
    return NULL;
  }
  switch (builtins[b].id) {
  case BI_INDEG:
  case BI_OUTDEG: {
    if (!check_arity(c, e, 1)) return NULL;
    IrVarKind want = builtins[b].id == BI_INDEG ? IR_VAR_DST_V : IR_VAR_SRC_V;
    IrNode *v = vertex_arg(c, e->call.name, e->call.args, want);
    return v ? ir_endpoint(c->a, e->loc, builtins[b].kind, v) : NULL;
  }
  case BI_SRC:
  case BI_DST:
    error(c, e->loc, "`%s(...)` is a vertex, not a value; use it as an index",
          e->call.name);
    return NULL;
  case BI_NV:
  case BI_NE:
    if (!c->ir)
      error(c, e->loc, "`%s()` is only allowed in IR text", e->call.name);
    else
      error(c, e->loc, "`%s()` is an integer for extents and guards, not a "
            "value", e->call.name);
    return NULL;
  }
  return NULL;
}

static IrNode *value_expr(Checker *c, const LangNode *e) {
  switch (e->kind) {
  case LANG_INT: return ir_fconst(c->a, e->loc, (double)e->i);
  case LANG_FLOAT: return ir_fconst(c->a, e->loc, e->f);
  case LANG_NAME: return value_name(c, e);
  case LANG_ELEM: {
    IrTensor *t = find_tensor(c, e->elem.name, e->loc);
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
      IrNode *x = value_expr(c, e->un.a);
      if (x && x->kind == IR_FCONST && isinf(x->f)) { /* -inf */
        x->f = -x->f;
        x->loc = e->loc;
        return x;
      }
      return x ? ir_un(c->a, e->loc, IR_UN_NEG, x) : NULL;
    }
    error(c, e->loc, "`!` is only allowed in the condition of a guard");
    return NULL;
  case LANG_BINARY:
    switch (e->bin.op) {
    case IR_OP_ADD: case IR_OP_SUB: case IR_OP_MUL: case IR_OP_DIV: {
      IrNode *x = value_expr(c, e->bin.a);
      IrNode *y = value_expr(c, e->bin.b);
      return x && y ? ir_bin(c->a, e->loc, e->bin.op, x, y) : NULL;
    }
    case IR_OP_MOD:
      error(c, e->loc, "`%%` works on integer indices only, not on values");
      return NULL;
    default:
      error(c, e->loc, "`%s` gives a boolean, which is only allowed in the "
            "condition of a guard%s", ir_binop_name(e->bin.op),
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
    Binding *b = lookup(c, e->name);
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
static IrNode *cond_expr(Checker *c, const LangNode *e) {
  if (e->kind == LANG_UNARY && e->un.op == IR_UN_NOT) {
    IrNode *x = cond_expr(c, e->un.a);
    return x ? ir_un(c->a, e->loc, IR_UN_NOT, x) : NULL;
  }
  if (e->kind == LANG_BINARY) {
    switch (e->bin.op) {
    case IR_OP_AND:
    case IR_OP_OR: {
      IrNode *x = cond_expr(c, e->bin.a);
      IrNode *y = cond_expr(c, e->bin.b);
      return x && y ? ir_bin(c->a, e->loc, e->bin.op, x, y) : NULL;
    }
    case IR_OP_EQ: case IR_OP_NE: case IR_OP_LT: case IR_OP_LE:
    case IR_OP_GT: case IR_OP_GE: {
      if (c->ir && (is_value_operand(c, e->bin.a) || is_value_operand(c, e->bin.b))) {
        IrNode *x = value_expr(c, e->bin.a);
        IrNode *y = value_expr(c, e->bin.b);
        return x && y ? ir_bin(c->a, e->loc, e->bin.op, x, y) : NULL;
      }
      Ix a, b;
      IrNode *x = index_expr(c, e->bin.a, &a);
      IrNode *y = index_expr(c, e->bin.b, &b);
      return x && y ? ir_bin(c->a, e->loc, e->bin.op, x, y) : NULL;
    }
    default: break;
    }
  }
  error(c, e->loc, "a guard's condition must be a comparison of indices");
  return NULL;
}

/* ===========================================================================
 * Statements
 */
static IrNode *check_block(Checker *c, const LangNode *list);

/* Marks the variables that `e` pins down in `covered` (by IrVar.id): a
 * variable used anywhere in the index; an edge variable also pins the vertex
 * its loop runs over, and dst(e) of `in_edges(v)` (src(e) of
 * `out_edges(u)`) pins that vertex, not the edge. */
static const LoopCtx *loop_of(const Checker *c, const IrVar *v) {
  for (int i = 0; i < c->nloops; i++)
    if (c->loops[i].var == v) return &c->loops[i];
  return NULL;
}

static void cover(const Checker *c, const IrNode *e, bool *covered) {
  if (!e) return;
  switch (e->kind) {
  case IR_VAR: {
    covered[e->var->id] = true;
    const LoopCtx *l = loop_of(c, e->var);
    if (l && l->of) cover(c, l->of, covered);
    return;
  }
  case IR_SRC:
  case IR_DST: {
    const IrNode *edge = e->endpoint.e;
    const LoopCtx *l = edge->kind == IR_VAR ? loop_of(c, edge->var) : NULL;
    if (l && l->of &&
        ((e->kind == IR_DST && l->kind == IR_LOOP_IN_EDGES) ||
         (e->kind == IR_SRC && l->kind == IR_LOOP_OUT_EDGES)))
      cover(c, l->of, covered);
    return;
  }
  case IR_BIN:
    cover(c, e->bin.a, covered);
    cover(c, e->bin.b, covered);
    return;
  case IR_UN: cover(c, e->un.a, covered); return;
  default: return;
  }
}

static const char *loop_word(IrLoopKind k) {
  return k == IR_LOOP_SRC_V || k == IR_LOOP_DST_V ? "vertex loop"
         : k == IR_LOOP_RANGE                     ? "range loop"
         : k == IR_LOOP_GROUPS                    ? "groups loop"
                                                  : "edge loop";
}

/* A plain `=` store must write a different element on every iteration of
 * every loop around it, or the iterations race. */
static void check_race(Checker *c, const IrTensor *t, IrNode **idx, int nidx,
                       Loc loc) {
  bool *covered = IR_NEW_ARRAY(c->a, bool, c->op->nvars + 1);
  for (int i = 0; i < nidx; i++) cover(c, idx[i], covered);
  for (int i = 0; i < c->nloops; i++) {
    const IrVar *v = c->loops[i].var;
    if (!covered[v->id]) {
      error(c, loc, "plain `=` to `%s` races: the iterations of loop `%s` "
            "write the same element (its index does not use `%s`); use a "
            "reduction such as `+=`", t->name, v->name, v->name);
      return;
    }
  }
}

static bool in_edge_loop(const Checker *c) {
  for (int i = 0; i < c->nloops; i++) {
    IrLoopKind k = c->loops[i].kind;
    if (k == IR_LOOP_IN_EDGES || k == IR_LOOP_OUT_EDGES || k == IR_LOOP_EDGES)
      return true;
  }
  return false;
}

/* IR text: `plain` or `atomic` before a store (docs/gpu-ir.md). Returns
 * false if refused. */
static bool check_how(Checker *c, const LangNode *s, IrHow *how) {
  *how = IR_HOW_AUTO;
  const char *name = s->assign.how;
  if (!name) return true;
  if (!c->ir) {
    error(c, s->loc, "`%s` stores are only allowed in IR text; the conflict "
          "analysis decides how a reduction is done", name);
    return false;
  }
  for (int h = 0; h < IR_HOW_COUNT; h++)
    if (!strcmp(ir_how_name((IrHow)h), name)) {
      *how = (IrHow)h;
      return true;
    }
  error(c, s->loc, "unknown store kind `%s`; expected plain or atomic", name);
  return false;
}

/* T[idx] op= value */
static IrNode *check_store(Checker *c, const LangNode *s, IrTensor *t,
                           const LangNode *idx) {
  IrRed red = s->assign.red;
  const LangNode *target = s->assign.target;
  IrHow how;
  bool ok = check_how(c, s, &how);
  if (t->role == IR_ROLE_IN) {
    error(c, target->loc, "cannot write to `%s`: it is an input of op `%s`",
          t->name, c->op->name);
    ok = false;
  }
  IrNode *ix[IR_MAX_IDX];
  int nidx = lang_list_len(idx);
  ok &= check_access(c, t, target, idx, ix);
  IrNode *value = value_expr(c, s->assign.value);
  TensorState *ts = &c->ts[t->id];
  ts->written = true;
  if (red != IR_RED_ASSIGN) {
    if (ts->red != IR_RED_ASSIGN && ts->red != red) {
      error(c, s->loc, "`%s` is the target of both `%s` (at %d:%d) and `%s`; a "
            "tensor has one kind of reduction", t->name, ir_red_name(ts->red),
            ts->red_loc.line, ts->red_loc.col, ir_red_name(red));
      ok = false;
    } else if (ts->red == IR_RED_ASSIGN) {
      ts->red = red;
      ts->red_loc = s->loc;
    }
  }
  if (red == IR_RED_MEAN) {
    if (t->domain != IR_DOM_SRC && t->domain != IR_DOM_DST) {
      error(c, s->loc, "mean= target `%s` must live on src or dst vertices, "
            "not on %s", t->name, domain_rows(t->domain));
      ok = false;
    } else if (!in_edge_loop(c)) {
      error(c, s->loc, "mean= must be inside an edge loop: it averages over "
            "the edges of a vertex");
      ok = false;
    }
  }
  if (!ok || !value) return NULL;
  if (red == IR_RED_ASSIGN) check_race(c, t, ix, nidx, s->loc);
  IrNode *store = ir_store(c->a, s->loc, t, nidx, ix, red, value);
  store->acc.how = how;
  return store;
}

/* NAME op= value: a local, or a scalar tensor by its bare name. */
static IrNode *check_set(Checker *c, const LangNode *s) {
  const LangNode *target = s->assign.target;
  const char *name = target->name;
  Binding *b = lookup(c, name);
  if (!b) {
    if (is_bad_tensor(c, name)) return NULL;
    IrTensor *t = ir_op_find_tensor(c->op, name);
    if (t && t->domain == IR_DOM_DENSE && t->ndims == 0)
      return check_store(c, s, t, NULL);
    IrNode *value = value_expr(c, s->assign.value);
    (void)value;
    if (t)
      error(c, target->loc, "`%s` is %s: write to an element %s[...]", name,
            type_string(c, t), name);
    else if (find_sym(c->op, name))
      error(c, target->loc, "cannot assign to extent symbol `%s`", name);
    else
      unknown_name(c, name, target->loc);
    return NULL;
  }
  IrNode *value = value_expr(c, s->assign.value);
  if (!b->var) return NULL;
  if (b->var->kind != IR_VAR_LOCAL) {
    error(c, target->loc, "cannot assign to %s `%s`: loop variables are read "
          "only", ir_varkind_name(b->var->kind), name);
    return NULL;
  }
  if (s->assign.red == IR_RED_MEAN) {
    error(c, s->loc, "mean= needs a tensor element as target");
    return NULL;
  }
  /* IR text: `shuffle s += x`, a cross-lane reduction (docs/gpu-ir.md) */
  IrHow how = IR_HOW_AUTO;
  if (s->assign.how && c->ir && !strcmp(s->assign.how, ir_how_name(IR_HOW_SHUFFLE)) &&
      s->assign.red != IR_RED_ASSIGN) {
    how = IR_HOW_SHUFFLE;
  } else if (s->assign.how) {
    error(c, s->loc, "`%s` applies to tensor stores, not to local `%s`%s",
          s->assign.how, name,
          c->ir ? " (a local's reduction may only be `shuffle`)" : "");
    return NULL;
  }
  /* IR text: scheduling may move accumulators; races are its concern */
  for (int i = b->nloops; i < c->nloops && !c->ir; i++) {
    IrLoopKind k = c->loops[i].kind;
    if (k == IR_LOOP_DST_V || k == IR_LOOP_SRC_V || k == IR_LOOP_EDGES) {
      error(c, s->loc, "local `%s` is declared outside %s `%s` and cannot be "
            "written inside it: each iteration of a stage has its own locals; "
            "reduce into a tensor instead", name, loop_word(k),
            c->loops[i].var->name);
      return NULL;
    }
  }
  if (s->assign.red == IR_RED_ASSIGN && !c->ir && b->nloops < c->nloops) {
    error(c, s->loc, "plain `=` to local `%s` races: it is declared outside "
          "loop `%s`, whose iterations all write it; declare it inside the "
          "loop or use a reduction", name, c->loops[b->nloops].var->name);
    return NULL;
  }
  if (!value) return NULL;
  IrNode *set = ir_set(c->a, s->loc, b->var, s->assign.red, value);
  set->set.how = how;
  return set;
}

/* Loop annotations (IR text): @warp @block @lane @thread, @unroll(N),
 * @vec(N), @threads(N) on a stage's loop, and on a groups loop @shared and
 * @interleave(D) @classes(K) @threshold(N), into ilv[0..2] (docs/gpu-ir.md). */
static bool check_annots(Checker *c, const LangNode *loop, IrBind *bind_,
                         int *unroll, int *vec, int *threads, int ilv[3],
                         bool *shared) {
  const LangNode *annots = loop->loop.annots;
  if (!annots) return true;
  if (!c->ir) {
    error(c, annots->loc, "`@%s` annotations are only allowed in IR text; use "
          "a schedule", annots->annot.name);
    return false;
  }
  bool ok = true;
  for (const LangNode *a = annots; a; a = a->next) {
    const char *name = a->annot.name;
    int b = ir_bind_lookup(name);
    bool counted = strcmp(name, "unroll") == 0 || strcmp(name, "vec") == 0 ||
                   strcmp(name, "interleave") == 0 || strcmp(name, "threshold") == 0 ||
                   strcmp(name, "classes") == 0;
    if (b > IR_BIND_NONE) {
      if (a->annot.has_value) {
        error(c, a->loc, "`@%s` takes no argument", name);
        ok = false;
      } else if (*bind_ != IR_BIND_NONE) {
        error(c, a->loc, "loop `%s` has two hardware bindings", loop->loop.var);
        ok = false;
      }
      *bind_ = (IrBind)b;
    } else if (!strcmp(name, "shared")) {
      /* IR text: promote(g, shared) on a groups loop; verify.c checks it */
      if (a->annot.has_value || *shared) {
        error(c, a->loc, "`@shared` takes no argument and is given once");
        ok = false;
      }
      *shared = true;
    } else if (!strcmp(name, "threads")) {
      int64_t n = a->annot.has_value ? a->annot.value : 0;
      if (c->depth > 0) {
        error(c, a->loc, "`@threads` belongs on a stage's loop, at the top of "
              "the op body");
        ok = false;
      } else if (n <= 0 || n > 1024 || n % 32 != 0) {
        error(c, a->loc, "`@threads(N)` needs a multiple of 32 up to 1024");
        ok = false;
      } else if (*threads) {
        error(c, a->loc, "`@threads` is given twice");
        ok = false;
      } else {
        *threads = (int)n;
      }
    } else if (counted) {
      int *slot = name[0] == 'u' ? unroll : name[0] == 'v' ? vec
                  : name[0] == 'i' ? &ilv[0] : name[0] == 't' ? &ilv[1] : &ilv[2];
      if (!a->annot.has_value || a->annot.value <= 0 ||
          a->annot.value > 1 << 20) {
        error(c, a->loc, "`@%s` needs a positive count: @%s(4)", name, name);
        ok = false;
      } else if (*slot) {
        error(c, a->loc, "`@%s` is given twice", name);
        ok = false;
      } else {
        *slot = (int)a->annot.value;
      }
    } else {
      error(c, a->loc, "unknown annotation `@%s`", name);
      ok = false;
    }
  }
  return ok;
}

/* The bound of `for f in 0..BOUND`: an extent symbol or a positive integer
 * (IR text: any integer expression). NULL if refused. */
static IrNode *check_extent(Checker *c, const LangNode *loop) {
  const LangNode *lo = loop->loop.lo, *hi = loop->loop.hi;
  if (lo->i != 0) {
    error(c, lo->loc, "a range loop starts at 0: write 0..N, not %" PRId64
          "..N", lo->i);
    return NULL;
  }
  if (hi->kind == LANG_INT && hi->i <= 0) {
    error(c, hi->loc, "range loop `%s` has no iterations (its bound is %" PRId64
          ")", loop->loop.var, hi->i);
    return NULL;
  }
  if (hi->kind == LANG_NAME && !lookup(c, hi->name) &&
      !find_sym(c->op, hi->name) && !ir_op_find_tensor(c->op, hi->name)) {
    error(c, hi->loc, "unknown extent symbol `%s`: extents are named in the "
          "types of tensors", hi->name);
    return NULL;
  }
  if (c->ir) {
    Ix ix;
    return index_expr(c, hi, &ix);
  }
  if (hi->kind == LANG_INT) return ir_iconst(c->a, hi->loc, hi->i);
  if (hi->kind == LANG_NAME && find_sym(c->op, hi->name))
    return ir_symref(c->a, hi->loc, find_sym(c->op, hi->name));
  if (hi->kind != LANG_NAME) {
    /* arithmetic, num_vertices() ...: index_expr says what is wrong */
    Ix ix;
    if (!index_expr(c, hi, &ix)) return NULL;
  }
  error(c, hi->loc, "the bound of a range loop must be an extent symbol or a "
        "positive integer");
  return NULL;
}

/* Vertex loops are stages: never nested in a vertex or an edge loop; an
 * edge loop is never nested in another; `edges` visits every edge, so it
 * is never nested in a vertex or an edge loop either. */
static bool check_nesting(Checker *c, const LangNode *n, IrLoopKind kind) {
  if (kind == IR_LOOP_RANGE) return true;
  for (int i = c->nloops - 1; i >= 0; i--) {
    IrLoopKind outer = c->loops[i].kind;
    if (outer == IR_LOOP_RANGE) continue;
    /* a groups loop is a stage, as a vertex loop (IR text) */
    bool outer_edge = outer != IR_LOOP_SRC_V && outer != IR_LOOP_DST_V &&
                      outer != IR_LOOP_GROUPS;
    bool inner_edge = kind != IR_LOOP_SRC_V && kind != IR_LOOP_DST_V &&
                      kind != IR_LOOP_GROUPS;
    if (kind == IR_LOOP_EDGES) {
      error(c, n->loc, "`for %s in edges` visits every edge and cannot be "
            "nested inside %s `%s`%s", n->loop.var, loop_word(outer),
            c->loops[i].var->name,
            outer == IR_LOOP_DST_V ? "; use in_edges(...)" : "");
      return false;
    }
    if (!inner_edge || outer_edge) {
      error(c, n->loc, "%s `%s` is nested inside %s `%s`%s", loop_word(kind),
            n->loop.var, loop_word(outer), c->loops[i].var->name,
            inner_edge ? "" : "; a vertex loop is a stage of its own");
      return false;
    }
  }
  return true;
}

static IrNode *check_loop(Checker *c, const LangNode *n) {
  IrLoopKind kind = IR_LOOP_RANGE;
  IrVarKind vkind = IR_VAR_INDEX;
  IrNode *extent = NULL, *of = NULL;
  int group = 0;
  const char *dom = n->loop.dom;
  bool header_ok = true;
  if (!dom) {
    extent = check_extent(c, n);
    header_ok = extent != NULL;
  } else if (!strcmp(dom, "dst") || !strcmp(dom, "src") ||
             !strcmp(dom, "edges")) {
    kind = dom[0] == 'd' ? IR_LOOP_DST_V : dom[0] == 's' ? IR_LOOP_SRC_V
                                                         : IR_LOOP_EDGES;
    vkind = kind == IR_LOOP_DST_V ? IR_VAR_DST_V
            : kind == IR_LOOP_SRC_V ? IR_VAR_SRC_V : IR_VAR_EDGE;
    if (n->loop.of) {
      error(c, n->loop.of->loc, "`for ... in %s` takes no argument", dom);
      header_ok = false;
    }
  } else if (!strcmp(dom, "in_edges") || !strcmp(dom, "out_edges")) {
    bool in = dom[0] == 'i';
    kind = in ? IR_LOOP_IN_EDGES : IR_LOOP_OUT_EDGES;
    vkind = IR_VAR_EDGE;
    if (!n->loop.of) {
      error(c, n->loc, "`%s` needs a vertex: %s", dom,
            in ? "in_edges(v) of a `for v in dst`" : "out_edges(u) of a `for u in src`");
      header_ok = false;
    } else {
      of = vertex_arg(c, dom, n->loop.of, in ? IR_VAR_DST_V : IR_VAR_SRC_V);
      header_ok = of != NULL;
    }
  } else if (c->ir && !strcmp(dom, "groups")) {
    /* IR text: GNNAdvisor's neighbour groups (passes/group.c) */
    kind = IR_LOOP_GROUPS;
    if (!n->loop.of || n->loop.of->kind != LANG_INT || n->loop.of->i < 1 ||
        n->loop.of->i > 1 << 20) {
      error(c, n->loc, "`groups` needs a group size: groups(4)");
      header_ok = false;
    } else {
      group = (int)n->loop.of->i;
    }
  } else if (c->ir && !strcmp(dom, "group_edges")) {
    kind = IR_LOOP_GROUP_EDGES;
    vkind = IR_VAR_EDGE;
    const LangNode *g = n->loop.of;
    const Binding *gb = g && g->kind == LANG_NAME ? lookup(c, g->name) : NULL;
    const IrVar *gv = gb ? gb->var : NULL;
    bool in_groups = false;
    for (int i = 0; gv && i < c->nloops; i++)
      in_groups |= c->loops[i].var == gv && c->loops[i].kind == IR_LOOP_GROUPS;
    if (!in_groups) {
      error(c, g ? g->loc : n->loc, "`group_edges` takes the variable of an "
            "enclosing `for g in groups(G)`");
      header_ok = false;
    } else {
      of = ir_var(c->a, g->loc, (IrVar *)gv);
    }
  } else if (c->ir && !strcmp(dom, "group_rows")) {
    /* IR text: a destination's rows of a group table (passes/segment.c) */
    kind = IR_LOOP_GROUP_ROWS;
    if (!n->loop.of || !n->loop.lo || n->loop.lo->i < 1 || n->loop.lo->i > 1 << 20) {
      error(c, n->loc, "`group_rows` needs a vertex and a group size: "
            "group_rows(v, 4)");
      header_ok = false;
    } else {
      group = (int)n->loop.lo->i;
      of = vertex_arg(c, dom, n->loop.of, IR_VAR_DST_V);
      header_ok = of != NULL;
    }
  } else {
    error(c, n->loc, "unknown loop domain `%s`; expected dst, src, edges, "
          "in_edges(v), out_edges(u) or 0..N", dom);
    header_ok = false;
  }
  if (dom && n->loop.lo && kind != IR_LOOP_GROUP_ROWS) {
    error(c, n->loop.lo->loc, "`%s` takes one argument", dom);
    header_ok = false;
  }
  if (header_ok) header_ok = check_nesting(c, n, kind);
  IrBind b = IR_BIND_NONE;
  int unroll = 0, vec = 0, threads = 0, ilv[3] = {0, 0, 0};
  bool shared = false;
  bool ok = check_annots(c, n, &b, &unroll, &vec, &threads, ilv, &shared);
  bool table = kind == IR_LOOP_GROUPS || (kind == IR_LOOP_GROUP_ROWS && !shared);
  if (ok && (ilv[0] | ilv[1] | ilv[2] || shared) &&
      (!table || ((ilv[1] | ilv[2]) && !ilv[0]) || (!ilv[0] && !shared))) {
    error(c, n->loc, "`@interleave(D)` (and `@classes(K)` or `@threshold(N)` "
          "with it) and `@shared` belong on a groups loop");
    ok = false;
  } else if (ok && (ilv[2] == 1 || ilv[2] > IR_MAX_CLASSES)) {
    error(c, n->loc, "`@classes(K)` takes 2 to %d classes, not %d",
          IR_MAX_CLASSES, ilv[2]);
    ok = false;
  } else if (ok && ilv[1] && ilv[2] > 2) {
    error(c, n->loc, "`@threshold(N)` splits two classes; the %d of "
          "`@classes(%d)` are quantiles of the in-degrees", ilv[2], ilv[2]);
    ok = false;
  }

  /* The variable: a bad one if the header was wrong, so that its uses do
   * not pile up more errors. */
  int mark = c->nbinds;
  IrVar *var = NULL;
  if (check_new_name(c, n->loop.var, n->loop.var_loc, "loop variable") &&
      header_ok)
    var = ir_op_add_var(c->a, c->op, n->loop.var, n->loop.var_loc, vkind);
  bind(c, n->loop.var, var, n->loop.var_loc);
  if (var) {
    c->loops = grow(c->a, c->loops, c->nloops, &c->caploops, sizeof(LoopCtx));
    c->loops[c->nloops++] = (LoopCtx){var, kind, of};
  }
  c->depth++;
  IrNode *body = check_block(c, n->loop.body);
  c->depth--;
  if (var) c->nloops--;
  c->nbinds = mark;
  if (!var || !ok) return NULL;
  IrNode *loop = ir_loop(c->a, n->loc, var, kind, extent, of, body);
  loop->loop.bind = b;
  loop->loop.unroll = unroll;
  loop->loop.vec = vec;
  loop->loop.threads = threads;
  loop->loop.group = group;
  loop->loop.ilv = ilv[0];
  loop->loop.ilv_cls = ilv[0] ? (ilv[2] ? ilv[2] : 2) : 0;
  loop->loop.ilv_thr = ilv[1];
  loop->loop.shared = shared;
  return loop;
}

static IrNode *check_stmt(Checker *c, const LangNode *s) {
  switch (s->kind) {
  case LANG_TENSOR: return NULL; /* declared (or refused) by declare_temps */
  case LANG_VAR: {
    c->pending = s->var.name;
    IrNode *init = value_expr(c, s->var.init);
    c->pending = NULL;
    IrVar *var = NULL;
    if (check_new_name(c, s->var.name, s->loc, "local"))
      var = ir_op_add_var(c->a, c->op, s->var.name, s->loc, IR_VAR_LOCAL);
    bind(c, s->var.name, var, s->loc);
    return var && init ? ir_let(c->a, s->loc, var, init) : NULL;
  }
  case LANG_ASSIGN: {
    const LangNode *target = s->assign.target;
    if (target->kind == LANG_NAME) return check_set(c, s);
    IrTensor *t = find_tensor(c, target->elem.name, target->loc);
    if (!t) {
      value_expr(c, s->assign.value); /* still report its mistakes */
      return NULL;
    }
    return check_store(c, s, t, target->elem.idx);
  }
  case LANG_FOR: return check_loop(c, s);
  case LANG_IF: {
    if (!c->ir) {
      error(c, s->loc, "`if` guards are only allowed in IR text");
      check_block(c, s->ifs.then);
      return NULL;
    }
    IrNode *cond = cond_expr(c, s->ifs.cond);
    IrNode *then = check_block(c, s->ifs.then);
    return cond ? ir_if(c->a, s->loc, cond, then) : NULL;
  }
  default: break;
  }
  unreachable("not a statement");
}

static IrNode *check_block(Checker *c, const LangNode *list) {
  int mark = c->nbinds;
  IrNode *head = NULL, **tail = &head;
  for (const LangNode *s = list; s; s = s->next) {
    IrNode *n = check_stmt(c, s);
    if (n) {
      *tail = n;
      tail = &n->next;
    }
  }
  c->nbinds = mark;
  return head;
}

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
    error(c, decl->loc, "duplicate tensor `%s`; the first is at %d:%d", name,
          prev->loc.line, prev->loc.col);
    c->bad_tensors = grow(c->a, c->bad_tensors, c->nbad, &c->capbad,
                          sizeof(const char *));
    c->bad_tensors[c->nbad++] = name;
    return;
  }
  const LangNode *type = decl->decl.type;
  int dt = ir_dtype_lookup(type->type.dtype);
  if (dt < 0) {
    error(c, type->loc, "unknown dtype `%s`; expected f32 (or f16, bf16, f64, "
          "i32, i64)", type->type.dtype);
  } else if (dt != IR_DT_F32) {
    error(c, type->loc, "%s is not supported yet: only f32 runs",
          type->type.dtype);
  }
  IrTensor *t = ir_op_add_tensor(c->a, c->op, name, decl->loc, IR_DT_F32,
                                 IR_DOM_DENSE, role);
  /* IR text: `@shared`, an input staged in shared memory by promote(t,
   * shared); verify.c checks that it is a dense input */
  for (const LangNode *an = decl->decl.annots; an; an = an->next) {
    if (!c->ir)
      error(c, an->loc, "`@%s` annotations are only allowed in IR text; use "
            "a schedule (promote(%s, shared))", an->annot.name, name);
    else if (strcmp(an->annot.name, "shared") != 0 || an->annot.has_value)
      error(c, an->loc, "unknown tensor annotation `@%s`; a tensor takes only "
            "`@shared`", an->annot.name);
    else if (t->shared)
      error(c, an->loc, "`@shared` is given twice on `%s`", name);
    else
      t->shared = true;
  }
  int i = 0;
  for (const LangNode *d = type->type.dims; d; d = d->next, i++) {
    if (d->kind == LANG_CALL && !strcmp(d->call.name, "groups")) {
      /* IR text: a row per row of a group table (passes/segment.c) */
      int64_t G = d->call.args ? d->call.args->i : 0;
      if (!c->ir || i > 0 || G < 1 || G > 1 << 20)
        error(c, d->loc, "`groups(G)` (1 <= G <= 1048576) is a domain of IR "
              "text only, the first dimension of `%s`", name);
      t->domain = IR_DOM_GROUPS;
      t->group = G >= 1 && G <= 1 << 20 ? (int)G : 1;
      continue;
    }
    if (d->kind == LANG_NAME && is_domain_word(d->name)) {
      /* misplaced, it is still taken as the domain: its uses then agree */
      if (i > 0)
        error(c, d->loc, "domain `%s` must be the first dimension of `%s`",
              d->name, name);
      if (t->domain != IR_DOM_DENSE) continue;
      t->domain = d->name[0] == 's' ? IR_DOM_SRC
                  : d->name[1] == 's' ? IR_DOM_DST : IR_DOM_EDGE;
      continue;
    }
    if (t->ndims == IR_MAX_DIMS) {
      error(c, d->loc, "`%s` has more than %d feature dimensions", name,
            IR_MAX_DIMS);
      break;
    }
    IrDim *dim = &t->dims[t->ndims++];
    if (d->kind == LANG_NAME) {
      dim->sym = ir_op_sym(c->a, c->op, d->name, d->loc);
    } else {
      if (d->i <= 0)
        error(c, d->loc, "a dimension must be positive, not %" PRId64, d->i);
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
        error(c, s->loc, "temporary `%s` is declared inside a loop; declare it "
              "at the top of the op body", s->decl.name);
      else if (first_loop)
        error(c, s->loc, "temporary `%s` must be declared before the op's "
              "first loop (at %d:%d)", s->decl.name, first_loop->loc.line,
              first_loop->loc.col);
      declare_tensor(c, s, IR_ROLE_TEMP);
    } else if (s->kind == LANG_FOR) {
      declare_temps(c, s->loop.body, depth + 1, first_loop);
      if (depth == 0 && !first_loop) first_loop = s;
    } else if (s->kind == LANG_IF) {
      declare_temps(c, s->ifs.then, depth + 1, first_loop);
    }
  }
}

static void check_op(Checker *c, const LangNode *n) {
  int errors = c->d->nerrors;
  c->op = ir_op_new(c->a, n->op.name, n->loc);
  c->nbinds = c->nloops = c->depth = c->ndecls = c->nbad = 0;
  c->pending = NULL;
  IrOp *prev = ir_module_find_op(c->m, n->op.name);
  if (prev)
    error(c, n->loc, "duplicate op `%s`; the first is at %s:%d:%d",
          n->op.name, prev->loc.file, prev->loc.line, prev->loc.col);

  for (const LangNode *p = n->op.params; p; p = p->next)
    declare_tensor(c, p, IR_ROLE_IN);
  if (!n->op.results)
    error(c, n->loc, "op `%s` has no results: add `-> NAME: TYPE`", n->op.name);
  for (const LangNode *r = n->op.results; r; r = r->next)
    declare_tensor(c, r, IR_ROLE_OUT);
  declare_temps(c, n->op.body, 0, NULL);
  for (int i = 0; i < c->op->nsyms; i++) {
    IrSym *s = c->op->syms[i];
    if (ir_op_find_tensor(c->op, s->name))
      error(c, s->loc, "`%s` names both a tensor and an extent symbol",
            s->name);
  }

  c->nts = c->op->ntensors;
  c->ts = IR_NEW_ARRAY(c->a, TensorState, c->nts + 1);
  collect_decls(c, n->op.body);
  c->op->body = check_block(c, n->op.body);

  for (int i = 0; i < c->op->ntensors; i++) {
    IrTensor *t = c->op->tensors[i];
    if (t->role == IR_ROLE_OUT && !c->ts[t->id].written)
      error(c, t->loc, "result `%s` of op `%s` is never written", t->name,
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
    error(c, e->loc, "unknown schedule parameter `%s` in an argument of "
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
  error(c, e->loc, "a directive's argument is a name or an integer expression "
        "over the schedule's parameters");
  return NULL;
}

static void check_sched(Checker *c, const LangNode *n) {
  int errors = c->d->nerrors;
  IrSchedDef *prev = ir_module_find_sched(c->m, n->sched.name);
  if (prev)
    error(c, n->loc, "duplicate schedule `%s`; the first is at %s:%d:%d",
          n->sched.name, prev->loc.file, prev->loc.line, prev->loc.col);
  IrSchedDef *s = IR_NEW(c->a, IrSchedDef);
  s->name = n->sched.name;
  s->loc = n->loc;
  s->params = IR_NEW_ARRAY(c->a, IrVar *, lang_list_len(n->sched.params) + 1);
  for (const LangNode *p = n->sched.params; p; p = p->next) {
    bool dup = false;
    for (int i = 0; i < s->nparams; i++)
      if (!strcmp(s->params[i]->name, p->name)) {
        error(c, p->loc, "duplicate parameter `%s` of schedule `%s`", p->name,
              s->name);
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

/* ===========================================================================
 * Entry points
 */

bool lang_check(IrModule *m, Diag *d, const LangNode *defs, bool ir_mode) {
  Checker c = {.a = m->arena, .d = d, .ir = ir_mode, .m = m};
  int errors = d->nerrors;
  for (const LangNode *n = defs; n; n = n->next) {
    if (n->kind == LANG_OP)
      check_op(&c, n);
    else if (n->kind == LANG_SCHED)
      check_sched(&c, n);
  }
  return d->nerrors == errors;
}

bool lang_compile_into(IrModule *m, Diag *d, const char *file,
                       const char *text, bool ir_mode) {
  Arena *a = m->arena;
  file = ir_strdup(a, file ? file : "<string>");
  text = ir_strdup(a, text ? text : "");
  ir_diag_source(d, file, text);
  LangParser ps = {.arena = a, .diag = d, .file = file, .ir_mode = ir_mode};
  /* After a syntax error the tree has holes; checking it would mostly
   * report their consequences, so stop at the syntax errors. */
  if (!lang_parse(&ps, text)) return false;
  return lang_check(m, d, ps.defs, ir_mode);
}

IrModule *lang_compile(Arena *a, Diag *d, const char *file, const char *text) {
  IrModule *m = ir_module_new(a);
  return lang_compile_into(m, d, file, text, false) ? m : NULL;
}

IrModule *lang_parse_ir(Arena *a, Diag *d, const char *file, const char *text) {
  IrModule *m = ir_module_new(a);
  return lang_compile_into(m, d, file, text, true) ? m : NULL;
}

bool lang_dump_ast(FILE *out, Arena *a, Diag *d, const char *file,
                   const char *text) {
  file = ir_strdup(a, file ? file : "<string>");
  text = ir_strdup(a, text ? text : "");
  ir_diag_source(d, file, text);
  LangParser ps = {.arena = a, .diag = d, .file = file};
  if (!lang_parse(&ps, text)) return false;
  lang_ast_dump(out, ps.defs);
  return true;
}
