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
 * The walk is split by the language's parts, sharing the Checker of
 * lang/check.h: this file holds its context (errors, growable arrays), the
 * names in scope and the entry points; check_decl.c the operators (their
 * tensors) and the schedules; check_expr.c indices, tensor accesses and
 * values; check_stmt.c statements; check_loop.c loop headers and nesting.
 *
 * To add a builtin function: a math function is one line in IR_FN_LIST
 * (ir/nodes.def) and needs nothing here; a graph builtin (like in_degree) is
 * one row of `builtins` in check_expr.c plus a case in value_call or
 * index_call there.
 * To add a statement: an AST kind in LANG_AST_LIST (lang.h), a rule in
 * parser.y that builds it, a case in ast.c's dump and one in check_stmt
 * (check_stmt.c) that checks it and returns its IR.
 */
#include <inttypes.h>
#include <stdarg.h>
#include <string.h>

#include "lang/check.h"

/* ===========================================================================
 * The walk's context
 */

void check_error(Checker *c, Loc loc, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  ir_verror(c->d, "error", loc, fmt, ap);
  va_end(ap);
}

/* Arena-backed growable arrays: the old storage stays in the arena. */
void *check_grow(Arena *a, void *items, int n, int *cap, size_t size) {
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

const char *check_domain_rows(IrDomain d) {
  switch (d) {
  case IR_DOM_SRC: return "src vertices";
  case IR_DOM_DST: return "dst vertices";
  case IR_DOM_EDGE: return "edges";
  case IR_DOM_GROUPS: return "the rows of a group table";
  default: return "nothing (it is dense)";
  }
}

/* "f32[src, F]" */
const char *check_type_string(Checker *c, const IrTensor *t) {
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

Binding *check_lookup(Checker *c, const char *name) {
  for (int i = c->nbinds - 1; i >= 0; i--)
    if (strcmp(c->binds[i].name, name) == 0) return &c->binds[i];
  return NULL;
}

IrSym *check_find_sym(const IrOp *op, const char *name) {
  for (int i = 0; i < op->nsyms; i++)
    if (strcmp(op->syms[i]->name, name) == 0) return op->syms[i];
  return NULL;
}

void check_bind(Checker *c, const char *name, IrVar *var, Loc loc) {
  c->binds = check_grow(c->a, c->binds, c->nbinds, &c->capbinds,
                        sizeof(Binding));
  c->binds[c->nbinds++] = (Binding){name, var, loc, c->nloops};
}

const char *check_binding_kind(const Binding *b) {
  return b->var && b->var->kind == IR_VAR_LOCAL ? "local" : "loop variable";
}

/* Refuses a loop variable or local `name` that would hide another name.
 * `what` is "loop variable" or "local". Returns false if refused. */
bool check_new_name(Checker *c, const char *name, Loc loc,
                           const char *what) {
  Binding *b = check_lookup(c, name);
  if (b) {
    if (strcmp(what, "local") == 0 &&
        strcmp(check_binding_kind(b), "local") == 0)
      check_error(c, loc, "local `%s` is already declared at %d:%d", name,
            b->loc.line, b->loc.col);
    else
      check_error(c, loc, "%s `%s` shadows the %s declared at %d:%d", what,
                  name, check_binding_kind(b), b->loc.line, b->loc.col);
    return false;
  }
  if (ir_op_find_tensor(c->op, name)) {
    check_error(c, loc, "`%s` is a tensor of op `%s`; give this %s another "
                "name", name, c->op->name, what);
    return false;
  }
  if (check_find_sym(c->op, name)) {
    check_error(c, loc, "`%s` is an extent symbol of op `%s`; give this %s "
                "another name", name, c->op->name, what);
    return false;
  }
  return true;
}

/* A name that resolved to nothing: say the most useful thing. */
void check_unknown_name(Checker *c, const char *name, Loc loc) {
  if (c->pending && strcmp(c->pending, name) == 0) {
    check_error(c, loc, "local `%s` is used in its own initialiser", name);
    return;
  }
  const Decl *best = NULL;
  for (int i = 0; i < c->ndecls; i++)
    if (strcmp(c->decls[i].name, name) == 0) {
      best = &c->decls[i];
      break;
    }
  if (!best) {
    check_error(c, loc, "unknown name `%s`", name);
    return;
  }
  bool later = best->loc.line > loc.line ||
               (best->loc.line == loc.line && best->loc.col > loc.col);
  if (later && !best->is_loop)
    check_error(c, loc, "local `%s` is used before its declaration at %d:%d",
                name, best->loc.line, best->loc.col);
  else if (best->is_loop)
    check_error(c, loc, "loop variable `%s` is not visible here: it lives in "
                "its loop at %d:%d", name, best->loc.line, best->loc.col);
  else
    check_error(c, loc, "local `%s` (declared at %d:%d) is not visible here: a "
                "local lives to the end of its block", name, best->loc.line,
                best->loc.col);
}

/* Collects every loop variable and local of an op body, for
 * check_unknown_name. */
void check_collect_decls(Checker *c, const LangNode *list) {
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
      c->decls = check_grow(c->a, c->decls, c->ndecls, &c->capdecls,
                            sizeof(Decl));
      c->decls[c->ndecls++] = (Decl){name, loc, is_loop};
    }
    if (n->kind == LANG_FOR) check_collect_decls(c, n->loop.body);
    if (n->kind == LANG_IF) check_collect_decls(c, n->ifs.then);
  }
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
