/* ir/print.c: the IR's text form.
 *
 * The printer writes the .gop surface syntax, so that what it prints is a
 * valid file that lang_parse_ir reads back to an IR printing identically:
 * pass tests are text in, text out, and every stage of the pipeline can be
 * dumped and inspected as source. The layout is canonical (two-space indent,
 * temporaries first, stages with no blank line between them) so that goldens
 * compare as plain text.
 *
 * Expressions get the fewest parentheses that keep the tree: a child is
 * parenthesised when it binds more loosely than its parent, and a right
 * child also when it binds equally (the grammar is left-associative, so
 * `a - (b - c)` and `a + (b + c)` need them to round-trip exactly). Float
 * constants are written with the shortest %g form that reads back to the
 * same double, with ".0" added when that form would read as an integer.
 */
#define _GNU_SOURCE /* open_memstream */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "ir.h"

/* Precedence of a node as an operand: binary operators have theirs; unary
 * minus and negative constants (printed with a leading `-`) bind tighter
 * than any binary operator; everything else is a primary. */
enum { PREC_UNARY = 100, PREC_PRIMARY = 101 };

static int expr_prec(const IrNode *e) {
  switch (e->kind) {
  case IR_BIN: return ir_binop_prec(e->bin.op);
  case IR_UN: return PREC_UNARY;
  case IR_FCONST: return signbit(e->f) && !isnan(e->f) ? PREC_UNARY : PREC_PRIMARY;
  case IR_ICONST: return e->i < 0 ? PREC_UNARY : PREC_PRIMARY;
  case IR_VAR: case IR_SYM: case IR_LOAD: case IR_CALL: case IR_SRC:
  case IR_DST: case IR_INDEG: case IR_OUTDEG: case IR_NV: case IR_NE:
  case IR_OWNS:
    return PREC_PRIMARY;
  case IR_LOOP: case IR_STORE: case IR_LET: case IR_SET: case IR_IF:
  case IR_NODE_COUNT:
    break;
  }
  return PREC_PRIMARY;
}

/* The shortest %g text that strtod reads back as `f`, made to look like a
 * float literal: the lexer reads `1` as an integer, so `1` becomes `1.0`.
 * -0.0 keeps its sign. Infinities are `inf` / `-inf` (IR text only: the
 * IR parser resolves the name `inf`); NaN is `nan`, which no parser reads. */
static void print_float(FILE *out, double f) {
  if (isnan(f)) {
    fputs("nan", out);
    return;
  }
  if (isinf(f)) {
    fputs(f < 0 ? "-inf" : "inf", out);
    return;
  }
  char buf[64];
  for (int prec = 1; prec <= 17; prec++) {
    snprintf(buf, sizeof buf, "%.*g", prec, f);
    if (strtod(buf, NULL) == f) break;
  }
  fputs(buf, out);
  if (!strpbrk(buf, ".e")) fputs(".0", out);
}

static void print_operand(FILE *out, const IrNode *e, bool parens) {
  if (parens) fputc('(', out);
  ir_print_expr(out, e);
  if (parens) fputc(')', out);
}

static void print_index(FILE *out, const IrNode *acc) {
  fprintf(out, "%s[", acc->acc.tensor ? acc->acc.tensor->name : "?");
  for (int i = 0; i < acc->acc.nidx; i++) {
    if (i) fputs(", ", out);
    ir_print_expr(out, acc->acc.idx[i]);
  }
  fputc(']', out);
}

void ir_print_expr(FILE *out, const IrNode *e) {
  if (!e) {
    fputs("<null>", out);
    return;
  }
  switch (e->kind) {
  case IR_FCONST: print_float(out, e->f); break;
  case IR_ICONST: fprintf(out, "%lld", (long long)e->i); break;
  case IR_VAR: fputs(e->var ? e->var->name : "?", out); break;
  case IR_SYM: fputs(e->sym ? e->sym->name : "?", out); break;
  case IR_LOAD: print_index(out, e); break;
  case IR_BIN: {
    int p = ir_binop_prec(e->bin.op);
    print_operand(out, e->bin.a, expr_prec(e->bin.a) < p);
    fprintf(out, " %s ", ir_binop_name(e->bin.op));
    print_operand(out, e->bin.b, expr_prec(e->bin.b) <= p);
    break;
  }
  case IR_UN:
    /* `-x`, `-(a + b)`; an operand that itself starts with `-` is
     * parenthesised too: `-(-x)` reads better than `- -x`. */
    fputs(ir_unop_name(e->un.op), out);
    print_operand(out, e->un.a, expr_prec(e->un.a) <= PREC_UNARY);
    break;
  case IR_CALL:
    fprintf(out, "%s(", ir_fn_name(e->call.fn));
    for (int i = 0; i < e->call.nargs; i++) {
      if (i) fputs(", ", out);
      ir_print_expr(out, e->call.args[i]);
    }
    fputc(')', out);
    break;
  case IR_SRC: case IR_DST: case IR_INDEG: case IR_OUTDEG: case IR_OWNS:
    fprintf(out, "%s(", ir_kind_name(e->kind));
    ir_print_expr(out, e->endpoint.e);
    fputc(')', out);
    break;
  case IR_NV: case IR_NE:
    fprintf(out, "%s()", ir_kind_name(e->kind));
    break;
  case IR_LOOP: case IR_STORE: case IR_LET: case IR_SET: case IR_IF:
  case IR_NODE_COUNT:
    fprintf(out, "<%s>", e->kind < IR_NODE_COUNT ? ir_kind_name(e->kind) : "bad");
    break;
  }
}

static void indent_to(FILE *out, int indent) {
  for (int i = 0; i < indent; i++) fputs("  ", out);
}

static void print_loop_head(FILE *out, const IrNode *s) {
  fprintf(out, "for %s in ", s->loop.var ? s->loop.var->name : "?");
  switch (s->loop.kind) {
  case IR_LOOP_RANGE:
    fputs("0..", out);
    ir_print_expr(out, s->loop.extent);
    break;
  case IR_LOOP_IN_EDGES:
  case IR_LOOP_OUT_EDGES:
    fprintf(out, "%s(", ir_loopkind_name(s->loop.kind));
    ir_print_expr(out, s->loop.of);
    fputc(')', out);
    break;
  case IR_LOOP_SRC_V:
  case IR_LOOP_DST_V:
  case IR_LOOP_EDGES:
    fputs(ir_loopkind_name(s->loop.kind), out);
    break;
  case IR_LOOP_GROUPS:
    fprintf(out, "groups(%d)", s->loop.group);
    break;
  case IR_LOOP_GROUP_EDGES:
    fputs("group_edges(", out);
    ir_print_expr(out, s->loop.of);
    fputc(')', out);
    break;
  case IR_LOOP_GROUP_ROWS: /* passes/segment.c */
    fputs("group_rows(", out);
    ir_print_expr(out, s->loop.of);
    fprintf(out, ", %d)", s->loop.group);
    break;
  case IR_LOOP_UNOWNED: /* passes/lower_mean.c */
    fprintf(out, "unowned(%d)", s->loop.group);
    break;
  case IR_LOOP_PAIRS: /* passes/panel.c */
    fputs("pairs(", out);
    ir_print_expr(out, s->loop.of);
    fputc(')', out);
    break;
  case IR_LOOP_PAIR_EDGE:
    fputs("pair_edge(", out);
    ir_print_expr(out, s->loop.of);
    fprintf(out, ", %d)", s->loop.slot);
    break;
  case IR_LOOP_COUNT:
    fputs("<bad loop>", out);
    break;
  }
  /* Annotations in a fixed order: binding, unroll, vectorise, block size. */
  if (s->loop.bind != IR_BIND_NONE) fprintf(out, " @%s", ir_bind_name(s->loop.bind));
  if (s->loop.team > 0) fprintf(out, " @team(%d)", s->loop.team);
  if (s->loop.unroll > 0) fprintf(out, " @unroll(%d)", s->loop.unroll);
  if (s->loop.vec > 0) fprintf(out, " @vec(%d)", s->loop.vec);
  if (s->loop.prefetch) fputs(" @prefetch", out);
  if (s->loop.ilv > 0) fprintf(out, " @interleave(%d)", s->loop.ilv);
  /* two classes are the default: existing IR text stays as it was */
  if (s->loop.ilv_cls > 2) fprintf(out, " @classes(%d)", s->loop.ilv_cls);
  if (s->loop.ilv_thr > 0) fprintf(out, " @threshold(%d)", s->loop.ilv_thr);
  if (s->loop.shared) fputs(" @shared", out);
  if (s->loop.panel > 0) fprintf(out, " @panel(%d)", s->loop.panel);
  if (s->loop.threads > 0) fprintf(out, " @threads(%d)", s->loop.threads);
  if (s->loop.occ > 0) fprintf(out, " @occupancy(%d)", s->loop.occ);
}

static void print_block(FILE *out, const IrNode *body, int indent) {
  fputs(" {\n", out);
  ir_print_stmts(out, body, indent + 1);
  indent_to(out, indent);
  fputs("}\n", out);
}

static void print_stmt(FILE *out, const IrNode *s, int indent) {
  indent_to(out, indent);
  switch (s->kind) {
  case IR_LOOP:
    print_loop_head(out, s);
    print_block(out, s->loop.body, indent);
    break;
  case IR_STORE:
    /* How the conflict analysis decided to do it; nothing while undecided. */
    if (s->acc.how != IR_HOW_AUTO) fprintf(out, "%s ", ir_how_name(s->acc.how));
    print_index(out, s);
    fprintf(out, " %s ", ir_red_name(s->acc.red));
    ir_print_expr(out, s->acc.value);
    fputc('\n', out);
    break;
  case IR_LET:
    fprintf(out, "var %s = ", s->let.var ? s->let.var->name : "?");
    ir_print_expr(out, s->let.init);
    fputc('\n', out);
    break;
  case IR_SET:
    if (s->set.how != IR_HOW_AUTO) fprintf(out, "%s ", ir_how_name(s->set.how));
    fprintf(out, "%s %s ", s->set.var ? s->set.var->name : "?",
            ir_red_name(s->set.red));
    ir_print_expr(out, s->set.value);
    fputc('\n', out);
    break;
  case IR_IF:
    fputs("if (", out);
    ir_print_expr(out, s->ifs.cond);
    fputc(')', out);
    print_block(out, s->ifs.then, indent);
    break;
  case IR_FCONST: case IR_ICONST: case IR_VAR: case IR_SYM: case IR_LOAD:
  case IR_BIN: case IR_UN: case IR_CALL: case IR_SRC: case IR_DST:
  case IR_INDEG: case IR_OUTDEG: case IR_NV: case IR_NE: case IR_OWNS:
  case IR_NODE_COUNT:
    /* Not a statement: print it anyway so a broken IR can be looked at. */
    ir_print_expr(out, s);
    fputc('\n', out);
    break;
  }
}

void ir_print_stmts(FILE *out, const IrNode *list, int indent) {
  for (const IrNode *s = list; s; s = s->next) print_stmt(out, s, indent);
}

void ir_print_tensor_decl(FILE *out, const IrTensor *t) {
  fprintf(out, "%s: %s[", t->name, ir_dtype_name(t->dtype));
  bool first = true;
  if (t->domain != IR_DOM_DENSE) {
    fputs(ir_domain_name(t->domain), out);
    if (t->domain == IR_DOM_GROUPS) fprintf(out, "(%d)", t->group);
    first = false;
  }
  for (int i = 0; i < t->ndims; i++) {
    if (!first) fputs(", ", out);
    first = false;
    if (t->dims[i].sym) fputs(t->dims[i].sym->name, out);
    else fprintf(out, "%lld", (long long)t->dims[i].value);
  }
  fputc(']', out);
  if (t->shared) fputs(" @shared", out); /* promote(t, shared) */
}

static void print_decls(FILE *out, const IrOp *op, IrRole role) {
  bool first = true;
  for (int i = 0; i < op->ntensors; i++) {
    if (op->tensors[i]->role != role) continue;
    if (!first) fputs(", ", out);
    first = false;
    ir_print_tensor_decl(out, op->tensors[i]);
  }
}

void ir_print_op(FILE *out, const IrOp *op) {
  fprintf(out, "op %s(", op->name);
  print_decls(out, op, IR_ROLE_IN);
  fputc(')', out);
  if (op->noutputs == 1) {
    fputs(" -> ", out);
    print_decls(out, op, IR_ROLE_OUT);
  } else if (op->noutputs > 1) {
    fputs(" -> (", out);
    print_decls(out, op, IR_ROLE_OUT);
    fputc(')', out);
  }
  /* the accumulator type, when it is not the one the tensors imply */
  if (op->acc != ir_op_default_acc(op)) fprintf(out, " acc %s", ir_dtype_name(op->acc));
  /* transpose() (passes/transpose.c): run on the reversed graph */
  if (op->transposed) fputs(" graph reversed", out);
  fputs(" {\n", out);
  for (int i = 0; i < op->ntensors; i++) {
    if (op->tensors[i]->role != IR_ROLE_TEMP) continue;
    fputs("  tensor ", out);
    ir_print_tensor_decl(out, op->tensors[i]);
    fputc('\n', out);
  }
  ir_print_stmts(out, op->body, 1);
  fputs("}\n", out);
}

void ir_print_sched(FILE *out, const IrSchedDef *s) {
  fprintf(out, "schedule %s(", s->name);
  for (int i = 0; i < s->nparams; i++)
    fprintf(out, "%s%s", i ? ", " : "", s->params[i]->name);
  fputs(") {\n", out);
  for (const IrDirective *d = s->directives; d; d = d->next) {
    fprintf(out, "  %s(", d->prim);
    for (int i = 0; i < d->nargs; i++) {
      if (i) fputs(", ", out);
      if (d->args[i].name) fputs(d->args[i].name, out);
      else ir_print_expr(out, d->args[i].expr);
    }
    fputc(')', out);
    /* Results always in parentheses, even one: one canonical form. */
    if (d->nresults > 0) {
      fputs(" -> (", out);
      for (int i = 0; i < d->nresults; i++)
        fprintf(out, "%s%s", i ? ", " : "", d->results[i]);
      fputc(')', out);
    }
    fputc('\n', out);
  }
  fputs("}\n", out);
}

void ir_print_module(FILE *out, const IrModule *m) {
  bool first = true;
  for (int i = 0; i < m->nops; i++) {
    if (!first) fputc('\n', out);
    first = false;
    ir_print_op(out, m->ops[i]);
  }
  for (int i = 0; i < m->nscheds; i++) {
    if (!first) fputc('\n', out);
    first = false;
    ir_print_sched(out, m->scheds[i]);
  }
}

char *ir_op_to_string(const IrOp *op) {
  char *buf = NULL;
  size_t len = 0;
  FILE *f = open_memstream(&buf, &len);
  if (!f) return NULL;
  ir_print_op(f, op);
  if (fclose(f) != 0) {
    free(buf);
    return NULL;
  }
  return buf;
}
