/* tests/unit/test_lang.c: the front end, from text to IR.
 *
 * Parses and checks the stdlib, dumps an AST, inspects the IR built for
 * every construct, counts the errors of a file with several mistakes, reads
 * IR text with scheduling's annotations (and refuses them in source), and
 * checks that print -> lang_parse_ir -> print is the identity. The exact
 * wording of each error message is covered by tests/errors instead.
 */
#define _GNU_SOURCE /* open_memstream */
#include <stdlib.h>
#include <string.h>

#include "lang/lang.h"
#include "testutil.h"

/* One compilation: an arena and a silent Diag that keeps the text. */
typedef struct Fx {
  Arena *a;
  Diag d;
} Fx;

static Fx fx_new(void) {
  Fx f = {ir_arena_new(), {0}};
  ir_diag_init(&f.d, NULL);
  return f;
}

static void fx_free(Fx *f) {
  ir_diag_free(&f->d);
  ir_arena_free(f->a);
}

static const char *diag_text(const Fx *f) { return f->d.buf ? f->d.buf : ""; }

/* Compiles `text`, failing the test with the diagnostics if it is refused. */
static IrModule *compile_ok(Fx *f, const char *text) {
  IrModule *m = lang_compile(f->a, &f->d, "t.gop", text);
  ck_assert_msg(m != NULL, "refused:\n%s", diag_text(f));
  ck_assert_int_eq(f->d.nerrors, 0);
  return m;
}

static char *module_to_string(const IrModule *m) {
  char *buf = NULL;
  size_t len = 0;
  FILE *out = open_memstream(&buf, &len);
  ir_print_module(out, m);
  fclose(out);
  return buf;
}

static const char *AGG =
    "# weighted aggregation\n"
    "op u_mul_e_sum(X: f32[src, F], W: f32[edge]) -> Y: f32[dst, F] {\n"
    "  for v in dst {\n"
    "    for e in in_edges(v) {\n"
    "      for f in 0..F {\n"
    "        Y[v, f] += X[src(e), f] * W[e]\n"
    "      }\n"
    "    }\n"
    "  }\n"
    "}\n";

/* ---- the stdlib ---- */

START_TEST(stdlib_files_compile) {
  int n = 0;
  for (const LangStdlibFile *file = lang_stdlib_files; file->name; file++, n++) {
    Fx f = fx_new();
    IrModule *m = lang_compile(f.a, &f.d, file->name, file->text);
    ck_assert_msg(m != NULL, "%s:\n%s", file->name, diag_text(&f));
    ck_assert_int_gt(m->nops + m->nscheds, 0);
    fx_free(&f);
  }
  ck_assert_int_gt(n, 0);
}
END_TEST

START_TEST(stdlib_module_and_lookup) {
  Fx f = fx_new();
  IrModule *m = lang_stdlib(f.a, &f.d);
  ck_assert_msg(m != NULL, "%s", diag_text(&f));
  for (int i = 0; i < m->nops; i++) {
    const LangStdlibFile *file = lang_stdlib_find_op(m->ops[i]->name);
    ck_assert_ptr_nonnull(file);
    ck_assert_str_eq(file->name, m->ops[i]->loc.file);
  }
  ck_assert_ptr_null(lang_stdlib_find_op("no_such_op"));
  ck_assert_ptr_null(lang_stdlib_find_op(NULL));
  fx_free(&f);
}
END_TEST

START_TEST(duplicate_across_files) {
  Fx f = fx_new();
  IrModule *m = ir_module_new(f.a);
  ck_assert(lang_compile_into(m, &f.d, "a.gop", AGG, false));
  ck_assert(!lang_compile_into(m, &f.d, "b.gop", AGG, false));
  ck_assert_int_eq(f.d.nerrors, 1);
  ck_assert_ptr_nonnull(strstr(diag_text(&f), "b.gop:2:1: error: duplicate op "
                                              "`u_mul_e_sum`; the first is at "
                                              "a.gop:2:1"));
  fx_free(&f);
}
END_TEST

/* ---- the AST ---- */

START_TEST(ast_dump) {
  Fx f = fx_new();
  char *buf = NULL;
  size_t len = 0;
  FILE *out = open_memstream(&buf, &len);
  ck_assert(lang_dump_ast(out, f.a, &f.d, "t.gop", AGG));
  fclose(out);
  ck_assert_str_eq(buf,
                   "op u_mul_e_sum @2:1\n"
                   "  param X f32[src, F] @2:16\n"
                   "  param W f32[edge] @2:32\n"
                   "  result Y f32[dst, F] @2:49\n"
                   "  for v in dst @3:3\n"
                   "    for e in in_edges(v) @4:5\n"
                   "      for f in 0..F @5:7\n"
                   "        store += @6:9\n"
                   "          elem Y @6:9\n"
                   "            name v @6:11\n"
                   "            name f @6:14\n"
                   "          binary * @6:33\n"
                   "            elem X @6:20\n"
                   "              call src @6:22\n"
                   "                name e @6:26\n"
                   "              name f @6:30\n"
                   "            elem W @6:35\n"
                   "              name e @6:37\n");
  free(buf);
  fx_free(&f);
}
END_TEST

START_TEST(ast_dump_refuses_syntax_errors) {
  Fx f = fx_new();
  char *buf = NULL;
  size_t len = 0;
  FILE *out = open_memstream(&buf, &len);
  ck_assert(!lang_dump_ast(out, f.a, &f.d, "t.gop", "op f( {"));
  fclose(out);
  ck_assert_str_eq(buf, "");
  ck_assert_int_gt(f.d.nerrors, 0);
  free(buf);
  fx_free(&f);
}
END_TEST

START_TEST(ast_grouping) {
  /* precedence and associativity, shown by the dump's parentheses */
  Fx f = fx_new();
  char *buf = NULL;
  size_t len = 0;
  FILE *out = open_memstream(&buf, &len);
  ck_assert(lang_dump_ast(out, f.a, &f.d, "t.gop",
                          "op g() -> Y: f32[] { Y[] = 1 - 2 - 3 * -4 / 5 }"));
  fclose(out);
  ck_assert_ptr_nonnull(strstr(buf, "binary - @1:34\n"));
  ck_assert_ptr_nonnull(strstr(buf, "  binary - @1:30\n"));
  free(buf);
  fx_free(&f);
}
END_TEST

/* ---- the IR built for each construct ---- */

START_TEST(ir_tensors_and_syms) {
  Fx f = fx_new();
  IrModule *m = compile_ok(&f,
      "op t(X: f32[src, F, 4], a: f32[H], eps: f32[]) -> (Y: f32[dst, F], "
      "S: f32[edge]) {\n"
      "  tensor M: f32[dst, H]\n"
      "  for v in dst { M[v, 0] = eps; Y[v, 0] = M[v, 0] + a[0] }\n"
      "  for e in edges { S[e] = eps[] }\n"
      "}\n");
  ck_assert_int_eq(m->nops, 1);
  IrOp *op = m->ops[0];
  ck_assert_str_eq(op->name, "t");
  ck_assert_int_eq(op->ntensors, 6);
  ck_assert_int_eq(op->ninputs, 3);
  ck_assert_int_eq(op->noutputs, 2);
  const char *names[] = {"X", "a", "eps", "Y", "S", "M"};
  IrRole roles[] = {IR_ROLE_IN, IR_ROLE_IN, IR_ROLE_IN,
                    IR_ROLE_OUT, IR_ROLE_OUT, IR_ROLE_TEMP};
  IrDomain doms[] = {IR_DOM_SRC, IR_DOM_DENSE, IR_DOM_DENSE,
                     IR_DOM_DST, IR_DOM_EDGE, IR_DOM_DST};
  for (int i = 0; i < 6; i++) {
    ck_assert_str_eq(op->tensors[i]->name, names[i]);
    ck_assert_int_eq(op->tensors[i]->role, roles[i]);
    ck_assert_int_eq(op->tensors[i]->domain, doms[i]);
    ck_assert_int_eq(op->tensors[i]->id, i);
    ck_assert_int_eq(op->tensors[i]->dtype, IR_DT_F32);
  }
  IrTensor *x = op->tensors[0];
  ck_assert_int_eq(x->ndims, 2);
  ck_assert_str_eq(x->dims[0].sym->name, "F");
  ck_assert_ptr_null(x->dims[1].sym);
  ck_assert_int_eq(x->dims[1].value, 4);
  ck_assert_int_eq(op->tensors[2]->ndims, 0);
  ck_assert_int_eq(op->nsyms, 2);
  ck_assert_str_eq(op->syms[0]->name, "F");
  ck_assert_str_eq(op->syms[1]->name, "H");
  /* the same symbol everywhere: Y's F is X's F */
  ck_assert_ptr_eq(op->tensors[3]->dims[0].sym, x->dims[0].sym);

  /* a scalar read by its bare name and as eps[]: both a 0-index load */
  IrNode *stage1 = op->body, *stage2 = stage1->next;
  IrNode *st = stage1->loop.body;
  ck_assert_int_eq(st->kind, IR_STORE);
  ck_assert_int_eq(st->acc.value->kind, IR_LOAD);
  ck_assert_int_eq(st->acc.value->acc.nidx, 0);
  ck_assert_int_eq(stage2->loop.kind, IR_LOOP_EDGES);
  ck_assert_int_eq(stage2->loop.body->acc.value->acc.nidx, 0);
  fx_free(&f);
}
END_TEST

START_TEST(ir_loops) {
  Fx f = fx_new();
  IrModule *m = compile_ok(&f,
      "op t(X: f32[src, F], W: f32[edge]) -> (Y: f32[dst, F], Z: f32[src, 8]) {\n"
      "  for v in dst {\n"
      "    for e in in_edges(v) {\n"
      "      for f in 0..F { Y[v, f] += X[src(e), f] * W[e] }\n"
      "    }\n"
      "  }\n"
      "  for u in src {\n"
      "    for e in out_edges(u) {\n"
      "      for k in 0..8 { Z[u, k] max= W[e] }\n"
      "    }\n"
      "  }\n"
      "}\n");
  IrOp *op = m->ops[0];
  IrNode *s1 = op->body;
  ck_assert_int_eq(s1->kind, IR_LOOP);
  ck_assert_int_eq(s1->loop.kind, IR_LOOP_DST_V);
  ck_assert_int_eq(s1->loop.var->kind, IR_VAR_DST_V);
  ck_assert_int_eq(s1->loop.bind, IR_BIND_NONE);
  ck_assert_ptr_null(s1->loop.extent);
  IrNode *ein = s1->loop.body;
  ck_assert_int_eq(ein->loop.kind, IR_LOOP_IN_EDGES);
  ck_assert_int_eq(ein->loop.var->kind, IR_VAR_EDGE);
  ck_assert_int_eq(ein->loop.of->kind, IR_VAR);
  ck_assert_ptr_eq(ein->loop.of->var, s1->loop.var);
  IrNode *fl = ein->loop.body;
  ck_assert_int_eq(fl->loop.kind, IR_LOOP_RANGE);
  ck_assert_int_eq(fl->loop.var->kind, IR_VAR_INDEX);
  ck_assert_int_eq(fl->loop.extent->kind, IR_SYM);
  ck_assert_str_eq(fl->loop.extent->sym->name, "F");
  IrNode *st = fl->loop.body;
  ck_assert_int_eq(st->kind, IR_STORE);
  ck_assert_int_eq(st->acc.red, IR_RED_ADD);
  ck_assert_int_eq(st->acc.nidx, 2);
  IrNode *mul = st->acc.value;
  ck_assert_int_eq(mul->kind, IR_BIN);
  ck_assert_int_eq(mul->bin.op, IR_OP_MUL);
  ck_assert_int_eq(mul->type, IR_TY_FLOAT);
  IrNode *xs = mul->bin.a;
  ck_assert_int_eq(xs->acc.idx[0]->kind, IR_SRC);
  ck_assert_int_eq(xs->acc.idx[0]->type, IR_TY_INT);
  ck_assert_int_eq(xs->acc.idx[1]->type, IR_TY_INT);

  IrNode *s2 = s1->next;
  ck_assert_int_eq(s2->loop.kind, IR_LOOP_SRC_V);
  IrNode *eout = s2->loop.body;
  ck_assert_int_eq(eout->loop.kind, IR_LOOP_OUT_EDGES);
  IrNode *kl = eout->loop.body;
  ck_assert_int_eq(kl->loop.extent->kind, IR_ICONST);
  ck_assert_int_eq(kl->loop.extent->i, 8);
  ck_assert_int_eq(kl->loop.body->acc.red, IR_RED_MAX);
  ck_assert_ptr_null(s2->next);
  /* every loop variable and local is in op->vars, by id */
  for (int i = 0; i < op->nvars; i++) ck_assert_int_eq(op->vars[i]->id, i);
  ck_assert_int_eq(op->nvars, 6);
  fx_free(&f);
}
END_TEST

START_TEST(ir_locals_and_values) {
  Fx f = fx_new();
  IrModule *m = compile_ok(&f,
      "op t(X: f32[src, F], Y: f32[dst, F]) -> S: f32[edge] {\n"
      "  for v in dst {\n"
      "    for e in in_edges(v) {\n"
      "      var s = 0\n"
      "      for f in 0..F { s += X[src(e), f] * Y[dst(e), f] }\n"
      "      s max= -1.5\n"
      "      S[e] = leaky_relu(s, 0.2) / in_degree(v) + -2\n"
      "    }\n"
      "  }\n"
      "}\n");
  IrNode *body = m->ops[0]->body->loop.body->loop.body;
  ck_assert_int_eq(body->kind, IR_LET);
  ck_assert_int_eq(body->let.var->kind, IR_VAR_LOCAL);
  ck_assert_int_eq(body->let.var->dtype, IR_DT_F32);
  ck_assert_int_eq(body->let.init->kind, IR_FCONST); /* 0 is a value here */
  ck_assert_int_eq(body->let.init->type, IR_TY_FLOAT);
  IrNode *set = body->next->loop.body;
  ck_assert_int_eq(set->kind, IR_SET);
  ck_assert_int_eq(set->set.red, IR_RED_ADD);
  ck_assert_ptr_eq(set->set.var, body->let.var);
  IrNode *mx = body->next->next;
  ck_assert_int_eq(mx->set.red, IR_RED_MAX);
  ck_assert_int_eq(mx->set.value->kind, IR_FCONST); /* -1.5 folded */
  ck_assert(mx->set.value->f == -1.5);
  IrNode *st = mx->next;
  IrNode *add = st->acc.value;
  ck_assert_int_eq(add->bin.op, IR_OP_ADD);
  ck_assert(add->bin.b->kind == IR_FCONST && add->bin.b->f == -2.0);
  IrNode *div = add->bin.a;
  ck_assert_int_eq(div->bin.a->kind, IR_CALL);
  ck_assert_int_eq(div->bin.a->call.fn, IR_FN_LEAKY_RELU);
  ck_assert_int_eq(div->bin.a->call.nargs, 2);
  ck_assert_int_eq(div->bin.b->kind, IR_INDEG);
  ck_assert_int_eq(div->bin.b->type, IR_TY_FLOAT);
  ck_assert_int_eq(div->bin.b->endpoint.e->kind, IR_VAR);
  fx_free(&f);
}
END_TEST

START_TEST(ir_multistage) {
  Fx f = fx_new();
  const LangStdlibFile *file = lang_stdlib_find_op("edge_softmax");
  if (!file) { /* the stdlib moved on: nothing to look at here */
    fx_free(&f);
    return;
  }
  IrModule *m = compile_ok(&f, file->text);
  IrOp *op = ir_module_find_op(m, "edge_softmax");
  ck_assert_ptr_nonnull(op);
  int stages = 0;
  for (IrNode *s = op->body; s; s = s->next) {
    ck_assert_int_eq(s->kind, IR_LOOP);
    stages++;
  }
  ck_assert_int_gt(stages, 1);
  int temps = 0;
  for (int i = 0; i < op->ntensors; i++)
    if (op->tensors[i]->role == IR_ROLE_TEMP) {
      ck_assert_int_ge(i, op->ninputs + op->noutputs); /* temporaries last */
      temps++;
    }
  ck_assert_int_gt(temps, 0);
  fx_free(&f);
}
END_TEST

START_TEST(ir_schedules) {
  Fx f = fx_new();
  IrModule *m = compile_ok(&f,
      "schedule warp_vertex(G, T) {\n"
      "  bind(v, warp)\n"
      "  split(f, 32 * T) -> (fo, fi)\n"
      "  group(e, G); unroll(fi, 4)\n"
      "  fuse(v, e) -> ve\n"
      "}\n"
      "schedule plain() { }\n");
  ck_assert_int_eq(m->nscheds, 2);
  IrSchedDef *s = ir_module_find_sched(m, "warp_vertex");
  ck_assert_ptr_nonnull(s);
  ck_assert_int_eq(s->nparams, 2);
  ck_assert_str_eq(s->params[1]->name, "T");
  ck_assert_int_eq(s->params[1]->kind, IR_VAR_INDEX);
  IrDirective *d = s->directives;
  ck_assert_str_eq(d->prim, "bind");
  ck_assert_int_eq(d->nargs, 2);
  ck_assert_str_eq(d->args[0].name, "v");
  ck_assert_str_eq(d->args[1].name, "warp");
  ck_assert_int_eq(d->nresults, 0);
  d = d->next;
  ck_assert_str_eq(d->prim, "split");
  ck_assert_ptr_null(d->args[1].name);
  IrNode *e = d->args[1].expr;
  ck_assert_int_eq(e->kind, IR_BIN);
  ck_assert_int_eq(e->type, IR_TY_INT);
  ck_assert_int_eq(e->bin.a->kind, IR_ICONST);
  ck_assert_ptr_eq(e->bin.b->var, s->params[1]);
  ck_assert_int_eq(d->nresults, 2);
  ck_assert_str_eq(d->results[0], "fo");
  ck_assert_str_eq(d->results[1], "fi");
  d = d->next;
  ck_assert_str_eq(d->prim, "group");
  ck_assert_ptr_null(d->args[1].name); /* a parameter is an expression */
  ck_assert_ptr_eq(d->args[1].expr->var, s->params[0]);
  d = d->next;
  ck_assert_int_eq(d->args[1].expr->i, 4);
  d = d->next;
  ck_assert_int_eq(d->nresults, 1);
  ck_assert_str_eq(d->results[0], "ve");
  ck_assert_ptr_null(d->next);
  ck_assert_ptr_null(ir_module_find_sched(m, "plain")->directives);
  fx_free(&f);
}
END_TEST

/* ---- errors ---- */

START_TEST(several_errors_one_run) {
  Fx f = fx_new();
  IrModule *m = lang_compile(f.a, &f.d, "t.gop",
      "op t(X: f32[src, F]) -> Y: f32[dst, F] {\n"
      "  for v in dst {\n"
      "    for e in in_edges(v) {\n"
      "      for f in 0..F { Y[v, f] += X[v, f] }\n"   /* domain */
      "      Y[v, 0] = Z[e]\n"                         /* unknown tensor */
      "    }\n"
      "    Y[v, 1] = exp(1, 2)\n"                      /* arity */
      "  }\n"
      "}\n"
      "schedule s(T, T) { split(f, Q) }\n");           /* duplicate param */
  ck_assert_ptr_null(m);
  ck_assert_int_eq(f.d.nerrors, 4);
  const char *t = diag_text(&f);
  ck_assert_ptr_nonnull(strstr(t, "t.gop:4:36: error: `X` lives on src vertices"));
  ck_assert_ptr_nonnull(strstr(t, "t.gop:5:17: error: unknown tensor `Z`"));
  ck_assert_ptr_nonnull(strstr(t, "t.gop:7:15: error: `exp` takes 1 argument, not 2"));
  ck_assert_ptr_nonnull(strstr(t, "t.gop:10:15: error: duplicate parameter `T`"));
  /* the source line is quoted with a caret */
  ck_assert_ptr_nonnull(strstr(t, "      Y[v, 0] = Z[e]\n                ^\n"));
  fx_free(&f);
}
END_TEST

START_TEST(syntax_errors_resync) {
  Fx f = fx_new();
  IrModule *m = lang_compile(f.a, &f.d, "t.gop",
      "op a() -> Y: f32[dst] {\n"
      "  for v in dst { Y[v] = ( }\n"
      "  for v in dst { Y[v] = 1 }\n"
      "}\n"
      "op b() -> Y: f32[dst] { for v in { Y[v] = 2 } }\n");
  ck_assert_ptr_null(m);
  ck_assert_int_eq(f.d.nerrors, 2);
  ck_assert_ptr_nonnull(strstr(diag_text(&f), "t.gop:2:27: error: syntax error, "
                                              "unexpected '}'"));
  ck_assert_ptr_nonnull(strstr(diag_text(&f), "t.gop:5:34: error: syntax error, "
                                              "unexpected '{', expecting"));
  fx_free(&f);
}
END_TEST

START_TEST(error_cap) {
  Fx f = fx_new();
  f.d.max_errors = 3;
  char text[4096] = "op t() -> Y: f32[dst] {\n  for v in dst {\n";
  for (int i = 0; i < 10; i++) strcat(text, "    Y[v] = q\n");
  strcat(text, "  }\n}\n");
  ck_assert_ptr_null(lang_compile(f.a, &f.d, "t.gop", text));
  ck_assert_int_eq(f.d.nerrors, 10);
  ck_assert_ptr_nonnull(strstr(diag_text(&f), "too many errors"));
  fx_free(&f);
}
END_TEST

/* IR text's `unowned(G)` loop (passes/lower_mean.c): it reads back as
 * written, and a missing or bad group size, or one nested in another
 * loop, is refused with its location. */
START_TEST(ir_unowned_loop) {
  static const char *head = "op t(X: f32[src, F]) -> Y: f32[dst, F] {\n";
  char text[1024];
  snprintf(text, sizeof text, "%s  for v in unowned(4) @warp @team(8) {\n"
           "    for f in 0..F {\n      Y[v, f] = 0.0\n    }\n  }\n}\n", head);
  Fx f = fx_new();
  IrModule *m = lang_parse_ir(f.a, &f.d, "t.ir", text);
  ck_assert_msg(m && m->nops == 1, "%s", diag_text(&f));
  ck_assert_int_eq(m->ops[0]->body->loop.kind, IR_LOOP_UNOWNED);
  ck_assert_int_eq(m->ops[0]->body->loop.group, 4);
  char *back = ir_op_to_string(m->ops[0]);
  ck_assert_str_eq(back, text);
  free(back);
  fx_free(&f);
  static const struct { const char *loop, *msg; } bad[] = {
      {"unowned(0)", "t.ir:2:3: error: `unowned` needs a group size: unowned(4)"},
      {"unowned", "t.ir:2:3: error: `unowned` needs a group size"},
  };
  for (int i = 0; i < 2; i++) {
    snprintf(text, sizeof text, "%s  for v in %s @warp {\n    for f in 0..F {\n"
             "      Y[v, f] = 0.0\n    }\n  }\n}\n", head, bad[i].loop);
    f = fx_new();
    ck_assert_ptr_null(lang_parse_ir(f.a, &f.d, "t.ir", text));
    ck_assert_msg(strstr(diag_text(&f), bad[i].msg), "%s", diag_text(&f));
    fx_free(&f);
  }
  /* a stage of its own, as a vertex loop */
  snprintf(text, sizeof text, "%s  for u in dst {\n    for v in unowned(4) {\n"
           "      Y[v, 0] += 1.0\n    }\n  }\n}\n", head);
  f = fx_new();
  ck_assert_ptr_null(lang_parse_ir(f.a, &f.d, "t.ir", text));
  ck_assert_msg(strstr(diag_text(&f), "t.ir:3:5: error: vertex loop `v` is nested inside "
                       "vertex loop `u`; a vertex loop is a stage of its own"), "%s",
                diag_text(&f));
  fx_free(&f);
}
END_TEST

/* Every prefix of a valid file, and the file with one byte changed: the
 * front end reports or accepts, never crashes (run under ASan too). */
START_TEST(never_crashes) {
  const char *src = AGG;
  size_t n = strlen(src);
  char *buf = malloc(n + 1);
  const char subst[] = "{}()[],:;@+-*/%=<>!#.$0x_\n";
  for (size_t cut = 0; cut <= n; cut++) {
    memcpy(buf, src, cut);
    buf[cut] = 0;
    Fx f = fx_new();
    lang_compile(f.a, &f.d, "t.gop", buf);
    lang_parse_ir(f.a, &f.d, "t.ir", buf);
    fx_free(&f);
  }
  for (size_t i = 0; i < n; i++)
    for (const char *c = subst; *c; c++) {
      memcpy(buf, src, n + 1);
      buf[i] = *c;
      Fx f = fx_new();
      lang_compile(f.a, &f.d, "t.gop", buf);
      fx_free(&f);
    }
  free(buf);
}
END_TEST

START_TEST(deep_nesting) {
  /* far more parentheses than the parser's stack: an error, not a crash */
  size_t depth = 20000;
  char *buf = malloc(2 * depth + 64);
  strcpy(buf, "op t() -> Y: f32[] { Y[] = ");
  size_t len = strlen(buf);
  memset(buf + len, '(', depth);
  buf[len + depth] = '1';
  memset(buf + len + depth + 1, ')', depth);
  strcpy(buf + len + 2 * depth + 1, " }");
  Fx f = fx_new();
  ck_assert_ptr_null(lang_compile(f.a, &f.d, "t.gop", buf));
  /* issue 17: what was too deep, where, and where it starts */
  ck_assert_int_eq(f.d.nerrors, 1);
  ck_assert_ptr_nonnull(strstr(diag_text(&f), "t.gop:1:283: error: brackets nested too "
                                              "deeply: more than 256 levels (set "
                                              "GOP_MAX_NESTING"));
  ck_assert_ptr_nonnull(strstr(diag_text(&f), "t.gop:1:20: note: the nesting starts here"));
  fx_free(&f);
  /* the limit is settable: 300 levels pass with GOP_MAX_NESTING=400 */
  char *shallow = malloc(len + 700);
  memcpy(shallow, buf, len);
  memset(shallow + len, '(', 300);
  shallow[len + 300] = '1';
  memset(shallow + len + 301, ')', 300);
  strcpy(shallow + len + 601, " }");
  setenv("GOP_MAX_NESTING", "400", 1);
  f = fx_new();
  ck_assert_msg(lang_compile(f.a, &f.d, "t.gop", shallow) != NULL, "%s", diag_text(&f));
  fx_free(&f);
  unsetenv("GOP_MAX_NESTING");
  free(shallow);
  free(buf);

  /* 3,000 nested loops: refused at the 257th level */
  buf = malloc(3000 * 24 + 128);
  strcpy(buf, "op t(X: f32[src]) -> Y: f32[dst] {\n");
  len = strlen(buf);
  for (int i = 0; i < 3000; i++) len += (size_t)sprintf(buf + len, "for v%d in dst {\n", i);
  memset(buf + len, '}', 3001);
  buf[len + 3001] = 0;
  f = fx_new();
  ck_assert_ptr_null(lang_compile(f.a, &f.d, "t.gop", buf));
  ck_assert_ptr_nonnull(strstr(diag_text(&f), "t.gop:257:17: error: brackets nested too deeply"));
  ck_assert_ptr_nonnull(strstr(diag_text(&f), "t.gop:1:34: note: the nesting starts here"));
  fx_free(&f);
  free(buf);

  /* 30,000 unary minus signs fill bison's stack without a bracket: named,
   * with the place, not bison's bare "memory exhausted" */
  buf = malloc(30000 + 64);
  strcpy(buf, "op t() -> Y: f32[] { Y[] = ");
  len = strlen(buf);
  memset(buf + len, '-', 30000);
  strcpy(buf + len + 30000, "1 }");
  f = fx_new();
  ck_assert_ptr_null(lang_compile(f.a, &f.d, "t.gop", buf));
  ck_assert_ptr_nonnull(strstr(diag_text(&f), "the source nests too deeply for the parser here"));
  ck_assert_ptr_null(strstr(diag_text(&f), "memory exhausted"));
  fx_free(&f);
  free(buf);

  /* the length of a source is bounded too */
  setenv("GOP_MAX_SOURCE_BYTES", "20", 1);
  f = fx_new();
  ck_assert_ptr_null(lang_compile(f.a, &f.d, "t.gop", "op t() -> Y: f32[] { Y[] = 1 }"));
  ck_assert_ptr_nonnull(strstr(diag_text(&f), "t.gop:1:1: error: the source is too long: 30 "
                                              "bytes, over the limit of 20 (set "
                                              "GOP_MAX_SOURCE_BYTES"));
  fx_free(&f);
  unsetenv("GOP_MAX_SOURCE_BYTES");

  /* a long chain 1 + 1 + ... parses in a small stack but builds a deep
   * tree: refused once, by height */
  size_t terms = 200000;
  buf = malloc(4 * terms + 64);
  strcpy(buf, "op t() -> Y: f32[] { Y[] = 1");
  len = strlen(buf);
  for (size_t i = 0; i < terms; i++, len += 4) memcpy(buf + len, " + 1", 4);
  strcpy(buf + len, " }");
  f = fx_new();
  ck_assert_ptr_null(lang_compile(f.a, &f.d, "t.gop", buf));
  ck_assert_int_eq(f.d.nerrors, 1);
  ck_assert_ptr_nonnull(strstr(diag_text(&f), "expression nested too deeply"));
  fx_free(&f);
  free(buf);
}
END_TEST

/* ---- IR text ---- */

static const char *IR_TEXT =
    "op u_mul_e_sum(X: f32[src, F], W: f32[edge]) -> Y: f32[dst, F] {\n"
    "  for vo in 0..(num_vertices() + 3) / 4 @block @threads(128) @occupancy(2048) {\n"
    "    for vi in 0..4 @warp @team(8) {\n"
    "      if (vo * 4 + vi < num_vertices()) {\n"
    "        for e in in_edges(vo * 4 + vi) {\n"
    "          for fo in 0..(F + 31) / 32 @unroll(2) {\n"
    "            for fi in 0..32 @lane @vec(4) {\n"
    "              if (fo * 32 + fi < F && !(fi >= 32)) {\n"
    "                atomic Y[vo * 4 + vi, fo * 32 + fi] += X[src(e), fo * 32 + fi] * W[e]\n"
    "              }\n"
    "            }\n"
    "          }\n"
    "        }\n"
    "      }\n"
    "    }\n"
    "  }\n"
    "}\n"
    "\n"
    "op flat(X: f32[src, F]) -> Y: f32[dst, F] {\n"
    "  for eo in 0..(num_edges() + 255) / 256 @block {\n"
    "    for ei in 0..256 @thread {\n"
    "      if (eo * 256 + ei < num_edges()) {\n"
    "        for f in 0..F {\n"
    "          plain Y[dst(eo * 256 + ei), f] max= X[src(eo * 256 + ei), f] * -1.0 + -inf\n"
    "        }\n"
    "      }\n"
    "    }\n"
    "  }\n"
    "}\n";

START_TEST(ir_text_annotations) {
  Fx f = fx_new();
  IrModule *m = lang_parse_ir(f.a, &f.d, "t.ir", IR_TEXT);
  ck_assert_msg(m != NULL, "%s", diag_text(&f));
  IrNode *vo = m->ops[0]->body;
  ck_assert_int_eq(vo->loop.bind, IR_BIND_BLOCK);
  ck_assert_int_eq(vo->loop.threads, 128);
  ck_assert_int_eq(vo->loop.occ, 2048);
  ck_assert_int_eq(vo->loop.extent->kind, IR_BIN);
  ck_assert_int_eq(vo->loop.extent->type, IR_TY_INT);
  IrNode *vi = vo->loop.body;
  ck_assert_int_eq(vi->loop.bind, IR_BIND_WARP);
  ck_assert_int_eq(vi->loop.team, 8);
  IrNode *guard = vi->loop.body;
  ck_assert_int_eq(guard->kind, IR_IF);
  ck_assert_int_eq(guard->ifs.cond->type, IR_TY_BOOL);
  ck_assert_int_eq(guard->ifs.cond->bin.b->kind, IR_NV);
  IrNode *e = guard->ifs.then;
  ck_assert_int_eq(e->loop.kind, IR_LOOP_IN_EDGES);
  ck_assert_int_eq(e->loop.of->kind, IR_BIN);
  IrNode *fo = e->loop.body;
  ck_assert_int_eq(fo->loop.unroll, 2);
  IrNode *fi = fo->loop.body;
  ck_assert_int_eq(fi->loop.bind, IR_BIND_LANE);
  ck_assert_int_eq(fi->loop.vec, 4);
  IrNode *st = fi->loop.body->ifs.then;
  ck_assert_int_eq(st->kind, IR_STORE);
  ck_assert_int_eq(st->acc.how, IR_HOW_ATOMIC);
  IrNode *flat_st = m->ops[1]->body->loop.body->loop.body->ifs.then->loop.body;
  ck_assert_int_eq(flat_st->acc.how, IR_HOW_PLAIN);
  IrNode *inf = flat_st->acc.value->bin.b;
  ck_assert(inf->kind == IR_FCONST && inf->f < -1e300);
  fx_free(&f);
}
END_TEST

START_TEST(ir_text_refused_in_source) {
  Fx f = fx_new();
  ck_assert_ptr_null(lang_compile(f.a, &f.d, "t.gop", IR_TEXT));
  const char *t = diag_text(&f);
  ck_assert_ptr_nonnull(strstr(t, "t.gop:2:41: error: `@block` annotations are "
                                  "only allowed in IR text; use a schedule"));
  ck_assert_ptr_nonnull(strstr(t, "`if` guards are only allowed in IR text"));
  ck_assert_ptr_nonnull(strstr(t, "index arithmetic is only allowed in IR text"));
  ck_assert_ptr_nonnull(strstr(t, "`atomic` stores are only allowed in IR text"));
  fx_free(&f);
}
END_TEST

START_TEST(ir_text_still_checked) {
  /* IR text relaxes what scheduling needs, and nothing else */
  static const char *bad[] = {
      /* a dst vertex still cannot index a src tensor */
      "op t(X: f32[src]) -> Y: f32[dst] { for v in dst { Y[v] = X[v] } }",
      /* nor can a range variable mixed with a dst vertex */
      "op t(X: f32[src]) -> Y: f32[dst] { for v in dst { for i in 0..4 "
      "{ Y[v] += X[v * 4 + i] } } }",
      /* `@threads` only on a stage's loop, in steps of 32 */
      "op t() -> Y: f32[dst] { for v in dst { for i in 0..4 @threads(64) "
      "{ Y[v] += 1 } } }",
      "op t() -> Y: f32[dst] { for v in dst @threads(100) { Y[v] = 1 } }",
      "op t() -> Y: f32[dst] { for v in dst @warp @lane { Y[v] = 1 } }",
      /* `@occupancy(N)`: once, on a stage's loop, in steps of 32 to 2048 */
      "op t() -> Y: f32[dst] { for v in dst { for i in 0..4 @occupancy(1024) "
      "{ Y[v] += 1 } } }",
      "op t() -> Y: f32[dst] { for v in dst @occupancy(4096) { Y[v] = 1 } }",
      "op t() -> Y: f32[dst] { for v in dst @occupancy(1000) { Y[v] = 1 } }",
      "op t() -> Y: f32[dst] { for v in dst @occupancy(64) @occupancy(64) { Y[v] = 1 } }",
      /* `@team(T)`: a power of two, once, on a @warp loop */
      "op t() -> Y: f32[dst] { for v in dst @thread @team(4) { Y[v] = 1 } }",
      "op t() -> Y: f32[dst] { for v in dst @warp @team(3) { Y[v] = 1 } }",
      "op t() -> Y: f32[dst] { for v in dst @warp @team(4) @team(4) { Y[v] = 1 } }",
      "op t() -> Y: f32[dst] { for v in dst @fast { Y[v] = 1 } }",
      "op t() -> Y: f32[dst] { for v in dst { sometimes Y[v] += 1 } }",
      "op t() -> Y: f32[dst] { for v in dst { var s = 0; atomic s += 1; "
      "Y[v] = s } }",
      /* the race rule holds */
      "op t() -> Y: f32[dst] { for v in dst { for i in 0..4 { Y[v] = 1 } } }",
  };
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    Fx f = fx_new();
    ck_assert_msg(lang_parse_ir(f.a, &f.d, "t.ir", bad[i]) == NULL,
                  "accepted: %s", bad[i]);
    ck_assert_int_eq(f.d.nerrors, 1);
    fx_free(&f);
  }
}
END_TEST

/* What the front end builds satisfies the IR's structural invariants. */
static void assert_verifies(const IrModule *m) {
  for (int i = 0; i < m->nops; i++) {
    Fx g = fx_new();
    ck_assert_msg(ir_verify_op(m->ops[i], &g.d, "lang"), "%s",
                  diag_text(&g));
    fx_free(&g);
  }
}

static void assert_round_trip(const char *what, IrModule *m) {
  assert_verifies(m);
  char *once = module_to_string(m);
  Fx g = fx_new();
  IrModule *back = lang_parse_ir(g.a, &g.d, what, once);
  ck_assert_msg(back != NULL, "%s does not read back:\n%s\n%s", what, once,
                diag_text(&g));
  assert_verifies(back);
  char *twice = module_to_string(back);
  ck_assert_msg(strcmp(once, twice) == 0, "%s: printed\n%s\nthen\n%s", what,
                once, twice);
  free(once);
  free(twice);
  fx_free(&g);
}

START_TEST(round_trip_stdlib) {
  Fx f = fx_new();
  IrModule *m = lang_stdlib(f.a, &f.d);
  ck_assert_msg(m != NULL, "%s", diag_text(&f));
  /* op by op, as passes and goldens print them, and the module at once */
  for (int i = 0; i < m->nops; i++) {
    IrModule one = {.arena = f.a, .ops = &m->ops[i], .nops = 1};
    assert_round_trip(m->ops[i]->name, &one);
  }
  assert_round_trip("stdlib", m);
  fx_free(&f);
}
END_TEST

/* Tensor dtypes, the accumulator type (declared, or f64 when a tensor
 * is), conversions, and their text form: `acc` is printed only when it is
 * not the default, and reads back. */
START_TEST(dtypes_and_acc) {
  Fx f = fx_new();
  IrModule *m = compile_ok(&f,
      "op a(X: bf16[src, F], W: f16[edge]) -> Y: bf16[dst, F] acc f64 {\n"
      "  for v in dst {\n"
      "    for e in in_edges(v) {\n"
      "      for f in 0..F { Y[v, f] += bf16(X[src(e), f] * f64(W[e])) }\n"
      "    }\n"
      "  }\n"
      "}\n"
      "op b(X: f64[src, F]) -> Y: f32[dst, F] {\n"
      "  for v in dst { for e in in_edges(v) { for f in 0..F { Y[v, f] += X[src(e), f] } } }\n"
      "}\n"
      "op c(X: bf16[src, F]) -> Y: f32[dst, F] {\n"
      "  for v in dst { for e in in_edges(v) { for f in 0..F { Y[v, f] += f32(X[src(e), f]) } } }\n"
      "}\n");
  IrOp *a = m->ops[0], *b = m->ops[1], *c = m->ops[2];
  ck_assert_int_eq(a->tensors[0]->dtype, IR_DT_BF16);
  ck_assert_int_eq(a->tensors[1]->dtype, IR_DT_F16);
  ck_assert_int_eq(a->acc, IR_DT_F64);
  ck_assert_int_eq(b->acc, IR_DT_F64); /* an f64 tensor makes the default f64 */
  ck_assert_int_eq(c->acc, IR_DT_F32);
  ck_assert_str_eq(ir_op_dtype_key(a), "mixed");
  ck_assert_str_eq(ir_op_dtype_key(c), "mixed");
  char *text = module_to_string(m);
  ck_assert_msg(strstr(text, "-> Y: bf16[dst, F] acc f64 {"), "%s", text);
  ck_assert_msg(strstr(text, "bf16(X[src(e), f] * f64(W[e]))"), "%s", text);
  ck_assert_msg(!strstr(text, "f32[dst, F] acc"), "%s", text); /* defaults unprinted */
  free(text);
  assert_round_trip("dtypes", m);
  /* instantiating: every f32 tensor takes the type; f64 brings its acc */
  IrModule *k = compile_ok(&f, AGG);
  ir_op_retype(k->ops[0], IR_DT_BF16);
  ck_assert_str_eq(ir_op_dtype_key(k->ops[0]), "bf16");
  ck_assert_int_eq(k->ops[0]->acc, IR_DT_F32);
  ir_op_retype(k->ops[0], IR_DT_F64); /* no f32 tensor is left: only acc */
  ck_assert_int_eq(k->ops[0]->acc, IR_DT_F64);
  k = compile_ok(&f, AGG);
  ir_op_retype(k->ops[0], IR_DT_F64);
  ck_assert_str_eq(ir_op_dtype_key(k->ops[0]), "f64");
  ck_assert(ir_verify_op(k->ops[0], &f.d, "retype"));
  fx_free(&f);
}
END_TEST

START_TEST(round_trip_ir_text) {
  Fx f = fx_new();
  IrModule *m = lang_parse_ir(f.a, &f.d, "t.ir", IR_TEXT);
  ck_assert_msg(m != NULL, "%s", diag_text(&f));
  assert_round_trip("IR text", m);
  IrModule *s = compile_ok(&f,
      "schedule w(T) { bind(v, warp); split(f, (T + 1) * -2 % 3) -> (fo, fi) }\n"
      "op g(a: f32[F], eps: f32[]) -> Y: f32[] {\n"
      "  var s = 0\n"
      "  for f in 0..F { s += a[f] - (eps - 1) }\n"
      "  Y = -(s / 2) - -3\n"
      "}\n");
  assert_round_trip("scalars and a schedule", s);
  fx_free(&f);
}
END_TEST

int main(void) {
  Suite *s = suite_create("lang");
  TCase *tc = tcase_create("stdlib");
  tcase_add_test(tc, stdlib_files_compile);
  tcase_add_test(tc, stdlib_module_and_lookup);
  tcase_add_test(tc, duplicate_across_files);
  suite_add_tcase(s, tc);
  tc = tcase_create("ast");
  tcase_add_test(tc, ast_dump);
  tcase_add_test(tc, ast_dump_refuses_syntax_errors);
  tcase_add_test(tc, ast_grouping);
  suite_add_tcase(s, tc);
  tc = tcase_create("ir");
  tcase_add_test(tc, ir_tensors_and_syms);
  tcase_add_test(tc, ir_loops);
  tcase_add_test(tc, ir_locals_and_values);
  tcase_add_test(tc, dtypes_and_acc);
  tcase_add_test(tc, ir_multistage);
  tcase_add_test(tc, ir_schedules);
  suite_add_tcase(s, tc);
  tc = tcase_create("errors");
  tcase_add_test(tc, several_errors_one_run);
  tcase_add_test(tc, syntax_errors_resync);
  tcase_add_test(tc, error_cap);
  tcase_add_test(tc, never_crashes);
  tcase_add_test(tc, ir_unowned_loop);
  tcase_add_test(tc, deep_nesting);
  suite_add_tcase(s, tc);
  tc = tcase_create("ir_text");
  tcase_add_test(tc, ir_text_annotations);
  tcase_add_test(tc, ir_text_refused_in_source);
  tcase_add_test(tc, ir_text_still_checked);
  tcase_add_test(tc, round_trip_stdlib);
  tcase_add_test(tc, round_trip_ir_text);
  suite_add_tcase(s, tc);
  return tu_run(s);
}
