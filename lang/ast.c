/* lang/ast.c: AST constructors and the AST dump.
 *
 * The parser's actions call the constructors here and nothing else. The
 * dump (`gopc emit --stage ast`) prints one node per line, indented by
 * depth, with its kind, its salient fields and `@line:col`, so a test can
 * see exactly what the grammar built before any checking.
 */
#include <inttypes.h>
#include <string.h>

#include "lang/lang.h"

#define X_NAME(k, name) name,
static const char *const kind_names[] = {LANG_AST_LIST(X_NAME)};
#undef X_NAME

const char *lang_kind_name(LangKind k) {
  return (unsigned)k < LANG_AST_COUNT ? kind_names[k] : "?";
}

LangNode *lang_node(Arena *a, LangKind k, Loc loc) {
  LangNode *n = IR_NEW(a, LangNode);
  n->kind = k;
  n->loc = loc;
  n->height = 1;
  return n;
}

void lang_set_height(LangNode *n, const LangNode *args) {
  n->height = 1;
  for (; args; args = args->next)
    if (args->height >= n->height) n->height = args->height + 1;
}

LangNode *lang_name(Arena *a, Loc loc, const char *name) {
  LangNode *n = lang_node(a, LANG_NAME, loc);
  n->name = name;
  return n;
}

LangNode *lang_int(Arena *a, Loc loc, int64_t i) {
  LangNode *n = lang_node(a, LANG_INT, loc);
  n->i = i;
  return n;
}

LangNode *lang_float(Arena *a, Loc loc, double f) {
  LangNode *n = lang_node(a, LANG_FLOAT, loc);
  n->f = f;
  return n;
}

LangNode *lang_binary(Arena *a, Loc loc, IrBinOp op, LangNode *x, LangNode *y) {
  LangNode *n = lang_node(a, LANG_BINARY, loc);
  n->bin.op = op;
  n->bin.a = x;
  n->bin.b = y;
  n->height = 1 + (x->height > y->height ? x->height : y->height);
  return n;
}

LangNode *lang_unary(Arena *a, Loc loc, IrUnOp op, LangNode *x) {
  LangNode *n = lang_node(a, LANG_UNARY, loc);
  n->un.op = op;
  n->un.a = x;
  n->height = 1 + x->height;
  return n;
}

int lang_list_len(const LangNode *list) {
  int n = 0;
  for (; list; list = list->next) n++;
  return n;
}

/* ---- expressions on one line ---- */

static void print_list(FILE *out, const LangNode *list) {
  for (const LangNode *n = list; n; n = n->next) {
    lang_expr_print(out, n);
    if (n->next) fputs(", ", out);
  }
}

/* Fully parenthesised below the top, so the dump shows how the parser
 * grouped operators. */
static void print_sub(FILE *out, const LangNode *e) {
  bool paren = e->kind == LANG_BINARY;
  if (paren) fputc('(', out);
  lang_expr_print(out, e);
  if (paren) fputc(')', out);
}

void lang_expr_print(FILE *out, const LangNode *e) {
  if (!e) {
    fputs("?", out);
    return;
  }
  switch (e->kind) {
  case LANG_INT: fprintf(out, "%" PRId64, e->i); break;
  case LANG_FLOAT: fprintf(out, "%.9g", e->f); break;
  case LANG_NAME: fputs(e->name, out); break;
  case LANG_ELEM:
    fprintf(out, "%s[", e->elem.name);
    print_list(out, e->elem.idx);
    fputc(']', out);
    break;
  case LANG_CALL:
    fprintf(out, "%s(", e->call.name);
    print_list(out, e->call.args);
    fputc(')', out);
    break;
  case LANG_BINARY:
    print_sub(out, e->bin.a);
    fprintf(out, " %s ", ir_binop_name(e->bin.op));
    print_sub(out, e->bin.b);
    break;
  case LANG_UNARY:
    fputs(ir_unop_name(e->un.op), out);
    print_sub(out, e->un.a);
    break;
  default: fprintf(out, "<%s>", lang_kind_name(e->kind)); break;
  }
}

/* ---- the tree ---- */

static void dump_list(FILE *out, const LangNode *list, int depth);

static void print_type(FILE *out, const LangNode *t) {
  if (!t) return;
  fprintf(out, "%s[", t->type.dtype);
  print_list(out, t->type.dims);
  fputc(']', out);
}

static void print_loc(FILE *out, Loc loc) {
  fprintf(out, " @%d:%d\n", loc.line, loc.col);
}

static void dump(FILE *out, const LangNode *n, int depth) {
  fprintf(out, "%*s", 2 * depth, "");
  switch (n->kind) {
  case LANG_OP:
    fprintf(out, "op %s", n->op.name);
    /* `acc f64`, `graph reversed`, as written (the checker checks them) */
    for (const LangNode *w = n->op.acc; w; w = w->next)
      fprintf(out, " %s %s", w->call.name, w->call.args->name);
    print_loc(out, n->loc);
    dump_list(out, n->op.params, depth + 1);
    dump_list(out, n->op.results, depth + 1);
    dump_list(out, n->op.body, depth + 1);
    return;
  case LANG_SCHED:
    fprintf(out, "schedule %s(", n->sched.name);
    print_list(out, n->sched.params);
    fputc(')', out);
    print_loc(out, n->loc);
    dump_list(out, n->sched.body, depth + 1);
    return;
  case LANG_PARAM:
  case LANG_RESULT:
  case LANG_TENSOR:
    fprintf(out, "%s %s ", lang_kind_name(n->kind), n->decl.name);
    print_type(out, n->decl.type);
    print_loc(out, n->loc);
    return;
  case LANG_TYPE:
    print_type(out, n);
    print_loc(out, n->loc);
    return;
  case LANG_DIRECTIVE:
    fprintf(out, "directive %s(", n->dir.name);
    print_list(out, n->dir.args);
    fputc(')', out);
    if (n->dir.results) {
      fputs(" -> (", out);
      print_list(out, n->dir.results);
      fputc(')', out);
    }
    print_loc(out, n->loc);
    return;
  case LANG_FOR:
    fprintf(out, "for %s in ", n->loop.var);
    if (n->loop.dom) {
      fputs(n->loop.dom, out);
      if (n->loop.of) {
        fputc('(', out);
        lang_expr_print(out, n->loop.of);
        fputc(')', out);
      }
    } else {
      lang_expr_print(out, n->loop.lo);
      fputs("..", out);
      lang_expr_print(out, n->loop.hi);
    }
    for (const LangNode *a = n->loop.annots; a; a = a->next) {
      fprintf(out, " @%s", a->annot.name);
      if (a->annot.has_value) fprintf(out, "(%" PRId64 ")", a->annot.value);
    }
    print_loc(out, n->loc);
    dump_list(out, n->loop.body, depth + 1);
    return;
  case LANG_ANNOT:
    fprintf(out, "annot %s", n->annot.name);
    print_loc(out, n->loc);
    return;
  case LANG_IF:
    fputs("if", out);
    print_loc(out, n->loc);
    dump(out, n->ifs.cond, depth + 1);
    dump_list(out, n->ifs.then, depth + 1);
    return;
  case LANG_VAR:
    fprintf(out, "var %s", n->var.name);
    print_loc(out, n->loc);
    dump(out, n->var.init, depth + 1);
    return;
  case LANG_ASSIGN:
    fprintf(out, "%s ", n->assign.target->kind == LANG_ELEM ? "store" : "set");
    if (n->assign.how) fprintf(out, "%s ", n->assign.how);
    fputs(ir_red_name(n->assign.red), out);
    print_loc(out, n->loc);
    dump(out, n->assign.target, depth + 1);
    dump(out, n->assign.value, depth + 1);
    return;
  case LANG_INT:
    fprintf(out, "int %" PRId64, n->i);
    print_loc(out, n->loc);
    return;
  case LANG_FLOAT:
    fprintf(out, "float %.9g", n->f);
    print_loc(out, n->loc);
    return;
  case LANG_NAME:
    fprintf(out, "name %s", n->name);
    print_loc(out, n->loc);
    return;
  case LANG_ELEM:
    fprintf(out, "elem %s", n->elem.name);
    print_loc(out, n->loc);
    dump_list(out, n->elem.idx, depth + 1);
    return;
  case LANG_CALL:
    fprintf(out, "call %s", n->call.name);
    print_loc(out, n->loc);
    dump_list(out, n->call.args, depth + 1);
    return;
  case LANG_BINARY:
    fprintf(out, "binary %s", ir_binop_name(n->bin.op));
    print_loc(out, n->loc);
    dump(out, n->bin.a, depth + 1);
    dump(out, n->bin.b, depth + 1);
    return;
  case LANG_UNARY:
    fprintf(out, "unary %s", ir_unop_name(n->un.op));
    print_loc(out, n->loc);
    dump(out, n->un.a, depth + 1);
    return;
  case LANG_AST_COUNT: break;
  }
  unreachable("bad AST node kind");
}

static void dump_list(FILE *out, const LangNode *list, int depth) {
  for (const LangNode *n = list; n; n = n->next) dump(out, n, depth);
}

void lang_ast_dump(FILE *out, const LangNode *defs) { dump_list(out, defs, 0); }
