/* tests/unit/test_ir.c: the IR printer and verifier, on IR built by hand.
 *
 * The printer's output is the IR text form that the IR parser reads back and
 * that every pass golden is written in, so its layout is checked to the
 * character here. The verifier is checked both ways: the operators built
 * here pass it, and each broken invariant is reported with its message.
 */
#define _GNU_SOURCE /* open_memstream */
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "ir/ir.h"
#include "lang/lang.h"
#include "testutil.h"

static Arena *A;

static void setup(void) { A = ir_arena_new(); }
static void teardown(void) { ir_arena_free(A); }

/* Locations name a line so that messages can be checked for them. */
static Loc at(int line) { return (Loc){"t.gop", line, 3}; }
static const Loc L = {"t.gop", 1, 1};

/* ---- building IR tersely ---- */

#include "irbuild.h"

/* ---- capturing text ---- */

static char *text_buf;
static size_t text_len;

static FILE *capture(void) {
  free(text_buf);
  text_buf = NULL;
  FILE *f = open_memstream(&text_buf, &text_len);
  ck_assert_ptr_nonnull(f);
  return f;
}

static const char *captured(FILE *f) {
  fclose(f);
  return text_buf;
}

static const char *expr_text(const IrNode *e) {
  FILE *f = capture();
  ir_print_expr(f, e);
  return captured(f);
}

static const char *op_text(const IrOp *op) {
  FILE *f = capture();
  ir_print_op(f, op);
  return captured(f);
}

/* ---- the operators ---- */

/* u_mul_e_sum, with an (unused) temporary to show where those go. */
static IrOp *make_u_mul_e_sum(void) {
  IrOp *op = ir_op_new(A, "u_mul_e_sum", L);
  IrSym *F = ir_op_sym(A, op, "F", L);
  IrTensor *X = tensor(op, "X", IR_DOM_SRC, IR_ROLE_IN, F);
  IrTensor *W = tensor(op, "W", IR_DOM_EDGE, IR_ROLE_IN, NULL);
  IrTensor *Y = tensor(op, "Y", IR_DOM_DST, IR_ROLE_OUT, F);
  tensor(op, "M", IR_DOM_DST, IR_ROLE_TEMP, NULL);
  IrVar *v = var(op, "v", IR_VAR_DST_V), *e = var(op, "e", IR_VAR_EDGE);
  IrVar *f = var(op, "f", IR_VAR_INDEX);
  IrNode *body = st(Y, IR_RED_ADD,
                    bin(IR_OP_MUL, ld(X, 2, src_of(vr(e)), vr(f)), ld(W, 1, vr(e))),
                    2, vr(v), vr(f));
  op->body = loop(v, IR_LOOP_DST_V, NULL,
                  loop(e, IR_LOOP_IN_EDGES, vr(v), loop(f, IR_LOOP_RANGE, sym(F), body)));
  return op;
}

static const char *u_mul_e_sum_text =
    "op u_mul_e_sum(X: f32[src, F], W: f32[edge]) -> Y: f32[dst, F] {\n"
    "  tensor M: f32[dst]\n"
    "  for v in dst {\n"
    "    for e in in_edges(v) {\n"
    "      for f in 0..F {\n"
    "        Y[v, f] += X[src(e), f] * W[e]\n"
    "      }\n"
    "    }\n"
    "  }\n"
    "}\n";

static const char *u_dot_v_text =
    "op u_dot_v(X: f32[src, F], Y: f32[dst, F]) -> S: f32[edge] {\n"
    "  for v in dst {\n"
    "    for e in in_edges(v) {\n"
    "      var s = 0.0\n"
    "      for f in 0..F {\n"
    "        s += X[src(e), f] * Y[v, f]\n"
    "      }\n"
    "      S[e] = s\n"
    "    }\n"
    "  }\n"
    "}\n";


static const char *softmax_text =
    "op edge_softmax(S: f32[edge]) -> A: f32[edge] {\n"
    "  tensor M: f32[dst]\n"
    "  tensor Z: f32[dst]\n"
    "  for v in dst {\n"
    "    for e in in_edges(v) {\n"
    "      M[v] max= S[e]\n"
    "    }\n"
    "  }\n"
    "  for v2 in dst {\n"
    "    for e2 in in_edges(v2) {\n"
    "      Z[v2] += exp(S[e2] - M[v2])\n"
    "    }\n"
    "  }\n"
    "  for e3 in edges {\n"
    "    A[e3] = exp(S[e3] - M[dst(e3)]) / Z[dst(e3)]\n"
    "  }\n"
    "}\n";

/* What scheduling produces: bindings, unrolling, a tiled feature loop with
 * a guard and integer index arithmetic. */
static IrOp *make_scheduled(void) {
  IrOp *op = ir_op_new(A, "tiled", L);
  IrSym *F = ir_op_sym(A, op, "F", L);
  IrTensor *X = tensor(op, "X", IR_DOM_SRC, IR_ROLE_IN, F);
  IrTensor *Y = tensor(op, "Y", IR_DOM_DST, IR_ROLE_OUT, F);
  IrVar *v = var(op, "v", IR_VAR_DST_V), *e = var(op, "e", IR_VAR_EDGE);
  IrVar *fo = var(op, "fo", IR_VAR_INDEX), *fi = var(op, "fi", IR_VAR_INDEX);
  IrNode *fidx = bin(IR_OP_ADD, bin(IR_OP_MUL, vr(fo), ic(32)), vr(fi));
  IrNode *guard = bin(IR_OP_LT, fidx, sym(F));
  IrNode *upd = loop(e, IR_LOOP_IN_EDGES, vr(v),
                     st(Y, IR_RED_ADD, ld(X, 2, src_of(vr(e)), ir_clone(A, fidx)), 2, vr(v),
                        ir_clone(A, fidx)));
  IrNode *lfi = loop(fi, IR_LOOP_RANGE, ic(32), ir_if(A, L, guard, upd));
  lfi->loop.bind = IR_BIND_LANE;
  lfi->loop.unroll = 4;
  lfi->loop.vec = 4;
  IrNode *nfo = bin(IR_OP_DIV, bin(IR_OP_ADD, sym(F), ic(31)), ic(32));
  IrNode *lfo = loop(fo, IR_LOOP_RANGE, nfo, lfi);
  lfo->loop.unroll = 2;
  IrNode *lv = loop(v, IR_LOOP_DST_V, NULL, lfo);
  lv->loop.bind = IR_BIND_WARP;
  lv->loop.threads = 128;
  upd->loop.body->acc.how = IR_HOW_PLAIN;
  op->body = lv;
  return op;
}

static const char *scheduled_text =
    "op tiled(X: f32[src, F]) -> Y: f32[dst, F] {\n"
    "  for v in dst @warp @threads(128) {\n"
    "    for fo in 0..(F + 31) / 32 @unroll(2) {\n"
    "      for fi in 0..32 @lane @unroll(4) @vec(4) {\n"
    "        if (fo * 32 + fi < F) {\n"
    "          for e in in_edges(v) {\n"
    "            plain Y[v, fo * 32 + fi] += X[src(e), fo * 32 + fi]\n"
    "          }\n"
    "        }\n"
    "      }\n"
    "    }\n"
    "  }\n"
    "}\n";

/* out_edges, flat edges, a dense parameter, a scalar, several results, a
 * constant dimension, locals with max=, degrees and graph sizes. */
static IrOp *make_misc(void) {
  IrOp *op = ir_op_new(A, "misc", L);
  IrSym *H = ir_op_sym(A, op, "H", L);
  IrTensor *X = tensor(op, "X", IR_DOM_SRC, IR_ROLE_IN, H);
  IrTensor *a = tensor(op, "a", IR_DOM_DENSE, IR_ROLE_IN, H);
  IrTensor *eps = tensor(op, "eps", IR_DOM_DENSE, IR_ROLE_IN, NULL);
  IrTensor *E = tensor(op, "E", IR_DOM_EDGE, IR_ROLE_OUT, NULL);
  E->dims[E->ndims++].value = 4;
  IrTensor *D = tensor(op, "D", IR_DOM_DST, IR_ROLE_OUT, NULL);
  IrVar *u = var(op, "u", IR_VAR_SRC_V), *e = var(op, "e", IR_VAR_EDGE);
  IrVar *h = var(op, "h", IR_VAR_INDEX), *m = var(op, "m", IR_VAR_LOCAL);
  IrVar *e2 = var(op, "e2", IR_VAR_EDGE);
  IrNode *s1 = loop(
      u, IR_LOOP_SRC_V, NULL,
      loop(e, IR_LOOP_OUT_EDGES, vr(u),
           seq(ir_let(A, L, m, fc(-INFINITY)),
               loop(h, IR_LOOP_RANGE, sym(H),
                    ir_set(A, L, m, IR_RED_MAX,
                           call2(IR_FN_LEAKY_RELU,
                                 bin(IR_OP_MUL, ld(X, 2, vr(u), vr(h)), ld(a, 1, vr(h))),
                                 fc(0.2)))),
               st(E, IR_RED_ASSIGN, bin(IR_OP_ADD, vr(m), ld(eps, 0)), 2, vr(e), ic(0)),
               NULL)));
  IrNode *deg = bin(IR_OP_DIV, ir_endpoint(A, L, IR_OUTDEG, src_of(vr(e2))),
                    ir_endpoint(A, L, IR_INDEG, dst_of(vr(e2))));
  IrNode *s2 = loop(
      e2, IR_LOOP_EDGES, NULL,
      st(D, IR_RED_MEAN, bin(IR_OP_MUL, neg(deg), bin(IR_OP_ADD, ld(eps, 0), fc(1e-5))), 1,
         dst_of(vr(e2))));
  op->body = seq(s1, s2, NULL);
  return op;
}

static const char *misc_text =
    "op misc(X: f32[src, H], a: f32[H], eps: f32[]) -> (E: f32[edge, 4], D: f32[dst]) {\n"
    "  for u in src {\n"
    "    for e in out_edges(u) {\n"
    "      var m = -inf\n"
    "      for h in 0..H {\n"
    "        m max= leaky_relu(X[u, h] * a[h], 0.2)\n"
    "      }\n"
    "      E[e, 0] = m + eps[]\n"
    "    }\n"
    "  }\n"
    "  for e2 in edges {\n"
    "    D[dst(e2)] mean= -(out_degree(src(e2)) / in_degree(dst(e2))) * "
    "(eps[] + 1e-05)\n"
    "  }\n"
    "}\n";

static IrSchedDef *make_sched(void) {
  IrSchedDef *s = IR_NEW(A, IrSchedDef);
  s->name = "warp_vertex";
  s->nparams = 2;
  s->params = IR_NEW_ARRAY(A, IrVar *, 2);
  const char *pnames[] = {"G", "T"};
  for (int i = 0; i < 2; i++) {
    IrVar *p = IR_NEW(A, IrVar);
    p->name = pnames[i];
    p->kind = IR_VAR_INDEX;
    p->id = i;
    s->params[i] = p;
  }
  IrDirective *bind = IR_NEW(A, IrDirective), *split = IR_NEW(A, IrDirective);
  IrDirective *bind2 = IR_NEW(A, IrDirective);
  bind->prim = "bind";
  bind->nargs = 2;
  bind->args = IR_NEW_ARRAY(A, IrSchedArg, 2);
  bind->args[0].name = "v";
  bind->args[1].name = "warp";
  split->prim = "split";
  split->nargs = 2;
  split->args = IR_NEW_ARRAY(A, IrSchedArg, 2);
  split->args[0].name = "f";
  split->args[1].expr = bin(IR_OP_MUL, ic(32), vr(s->params[1]));
  split->nresults = 2;
  split->results = IR_NEW_ARRAY(A, const char *, 2);
  split->results[0] = "fo";
  split->results[1] = "fi";
  bind2->prim = "bind";
  bind2->nargs = 2;
  bind2->args = IR_NEW_ARRAY(A, IrSchedArg, 2);
  bind2->args[0].name = "fi";
  bind2->args[1].name = "lane";
  s->directives = bind;
  bind->next = split;
  split->next = bind2;
  return s;
}

static const char *sched_text =
    "schedule warp_vertex(G, T) {\n"
    "  bind(v, warp)\n"
    "  split(f, 32 * T) -> (fo, fi)\n"
    "  bind(fi, lane)\n"
    "}\n";

/* ---- printer ---- */

START_TEST(print_weighted_aggregation) {
  ck_assert_str_eq(op_text(make_u_mul_e_sum()), u_mul_e_sum_text);
}
END_TEST

START_TEST(print_dot_product_with_local) {
  ck_assert_str_eq(op_text(make_u_dot_v()), u_dot_v_text);
}
END_TEST

START_TEST(print_softmax_stages_and_temporaries) {
  ck_assert_str_eq(op_text(make_softmax()), softmax_text);
}
END_TEST

START_TEST(print_annotations_guards_int_arithmetic) {
  ck_assert_str_eq(op_text(make_scheduled()), scheduled_text);
}
END_TEST

START_TEST(print_atomic_store) {
  IrOp *op = make_u_mul_e_sum();
  IrNode *store = op->body->loop.body->loop.body->loop.body;
  store->acc.how = IR_HOW_ATOMIC;
  FILE *f = capture();
  ir_print_stmts(f, store, 0);
  ck_assert_str_eq(captured(f), "atomic Y[v, f] += X[src(e), f] * W[e]\n");
}
END_TEST

START_TEST(print_misc_constructs) { ck_assert_str_eq(op_text(make_misc()), misc_text); }
END_TEST

START_TEST(print_op_to_string) {
  char *s = ir_op_to_string(make_u_dot_v());
  ck_assert_str_eq(s, u_dot_v_text);
  free(s);
}
END_TEST

START_TEST(print_no_params_and_decl) {
  IrOp *op = ir_op_new(A, "zero", L);
  IrSym *F = ir_op_sym(A, op, "F", L);
  IrTensor *Y = tensor(op, "Y", IR_DOM_DENSE, IR_ROLE_OUT, F);
  Y->dims[Y->ndims++].value = 3;
  IrVar *i = var(op, "i", IR_VAR_INDEX), *j = var(op, "j", IR_VAR_INDEX);
  op->body = loop(i, IR_LOOP_RANGE, sym(F),
                  loop(j, IR_LOOP_RANGE, ic(3), st(Y, IR_RED_ASSIGN, fc(1), 2, vr(i), vr(j))));
  ck_assert_str_eq(op_text(op), "op zero() -> Y: f32[F, 3] {\n"
                                "  for i in 0..F {\n"
                                "    for j in 0..3 {\n"
                                "      Y[i, j] = 1.0\n"
                                "    }\n"
                                "  }\n"
                                "}\n");
  FILE *f = capture();
  ir_print_tensor_decl(f, Y);
  ck_assert_str_eq(captured(f), "Y: f32[F, 3]");
  f = capture();
  ir_print_stmts(f, op->body->loop.body, 2);
  ck_assert_str_eq(captured(f), "    for j in 0..3 {\n"
                                "      Y[i, j] = 1.0\n"
                                "    }\n");
}
END_TEST

START_TEST(print_precedence) {
  IrOp *op = ir_op_new(A, "p", L);
  IrVar *va = var(op, "a", IR_VAR_LOCAL), *vb = var(op, "b", IR_VAR_LOCAL);
  IrVar *vc = var(op, "c", IR_VAR_LOCAL), *i = var(op, "i", IR_VAR_INDEX);
  IrVar *j = var(op, "j", IR_VAR_INDEX);
  IrNode *a = vr(va), *b = vr(vb), *c = vr(vc);
  struct {
    IrNode *e;
    const char *want;
  } cases[] = {
      {bin(IR_OP_MUL, bin(IR_OP_ADD, a, b), c), "(a + b) * c"},
      {bin(IR_OP_ADD, a, bin(IR_OP_MUL, b, c)), "a + b * c"},
      {bin(IR_OP_ADD, bin(IR_OP_MUL, a, b), c), "a * b + c"},
      {bin(IR_OP_SUB, a, bin(IR_OP_SUB, b, c)), "a - (b - c)"},
      {bin(IR_OP_SUB, bin(IR_OP_SUB, a, b), c), "a - b - c"},
      {bin(IR_OP_ADD, a, bin(IR_OP_ADD, b, c)), "a + (b + c)"},
      {bin(IR_OP_ADD, bin(IR_OP_ADD, a, b), c), "a + b + c"},
      {bin(IR_OP_SUB, a, bin(IR_OP_ADD, b, c)), "a - (b + c)"},
      {bin(IR_OP_DIV, a, bin(IR_OP_MUL, b, c)), "a / (b * c)"},
      {bin(IR_OP_MUL, a, bin(IR_OP_DIV, b, c)), "a * (b / c)"},
      {bin(IR_OP_DIV, bin(IR_OP_MUL, a, b), c), "a * b / c"},
      {neg(bin(IR_OP_ADD, a, b)), "-(a + b)"},
      {bin(IR_OP_MUL, neg(a), b), "-a * b"},
      {neg(neg(a)), "-(-a)"},
      {neg(fc(-1)), "-(-1.0)"},
      {neg(fc(2)), "-2.0"},
      {bin(IR_OP_SUB, a, fc(-1)), "a - -1.0"},
      {bin(IR_OP_MUL, fc(-0.5), a), "-0.5 * a"},
      {bin(IR_OP_MUL, bin(IR_OP_MOD, vr(i), ic(4)), ic(2)), "i % 4 * 2"},
      {bin(IR_OP_MOD, vr(i), bin(IR_OP_MUL, ic(4), ic(2))), "i % (4 * 2)"},
      {bin(IR_OP_SUB, vr(i), ic(-3)), "i - -3"},
      {bin(IR_OP_AND, bin(IR_OP_LT, bin(IR_OP_ADD, vr(i), ic(1)), vr(j)),
           bin(IR_OP_GE, vr(j), ic(0))),
       "i + 1 < j && j >= 0"},
      {bin(IR_OP_AND, bin(IR_OP_OR, bin(IR_OP_EQ, vr(i), ic(0)), bin(IR_OP_NE, vr(j), ic(1))),
           bin(IR_OP_LE, vr(i), vr(j))),
       "(i == 0 || j != 1) && i <= j"},
      {bin(IR_OP_OR, bin(IR_OP_EQ, vr(i), ic(0)),
           bin(IR_OP_AND, bin(IR_OP_GT, vr(j), ic(1)), bin(IR_OP_LT, vr(i), ic(2)))),
       "i == 0 || j > 1 && i < 2"},
      {ir_un(A, L, IR_UN_NOT, bin(IR_OP_LT, vr(i), vr(j))), "!(i < j)"},
      {call2(IR_FN_MAX, bin(IR_OP_ADD, a, b), fc(0.5)), "max(a + b, 0.5)"},
      {call1(IR_FN_SIGMOID, neg(call1(IR_FN_TANH, a))), "sigmoid(-tanh(a))"},
      {neg(call1(IR_FN_RELU, a)), "-relu(a)"},
      {bin(IR_OP_SUB, ir_graph_size(A, L, IR_NE), ir_graph_size(A, L, IR_NV)),
       "num_edges() - num_vertices()"},
      {bin(IR_OP_DIV, bin(IR_OP_ADD, ir_graph_size(A, L, IR_NV), ic(3)), ic(4)),
       "(num_vertices() + 3) / 4"},
  };
  for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++)
    ck_assert_str_eq(expr_text(cases[k].e), cases[k].want);
}
END_TEST

START_TEST(print_floats) {
  struct {
    double f;
    const char *want;
  } cases[] = {
      {1.0, "1.0"},       {0.5, "0.5"},          {1e-5, "1e-05"},
      {-INFINITY, "-inf"}, {INFINITY, "inf"},    {0.0, "0.0"},
      {-0.0, "-0.0"},     {-2.0, "-2.0"},        {0.1, "0.1"},
      {0.2, "0.2"}, {(double)0.2f, "0.20000000298023224"}, {123.25, "123.25"}, {1e20, "1e+20"},
      {100000.0, "1e+05"}, {12345.0, "12345.0"}, {1.0 / 3, "0.3333333333333333"},
      {2e-3, "0.002"},
  };
  for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++)
    ck_assert_str_eq(expr_text(fc(cases[k].f)), cases[k].want);
  ck_assert_str_eq(expr_text(ic(-7)), "-7");
  ck_assert_str_eq(expr_text(ic(INT64_MAX)), "9223372036854775807");
  /* Every printed finite value reads back to the same double. */
  srand(7);
  for (int k = 0; k < 2000; k++) {
    double f = ((double)rand() / RAND_MAX - 0.5) * pow(10, rand() % 40 - 20);
    if (k % 2) f = (float)f;
    const char *t = expr_text(fc(f));
    ck_assert_msg(strtod(t, NULL) == f, "%.17g printed as %s", f, t);
    ck_assert_msg(strpbrk(t, ".e") != NULL, "%s reads as an integer", t);
  }
}
END_TEST

START_TEST(print_schedule) {
  FILE *f = capture();
  ir_print_sched(f, make_sched());
  ck_assert_str_eq(captured(f), sched_text);
}
END_TEST

START_TEST(print_module) {
  IrModule *m = ir_module_new(A);
  ir_module_add_op(m, make_u_dot_v());
  ir_module_add_op(m, make_softmax());
  ir_module_add_sched(m, make_sched());
  FILE *f = capture();
  ir_print_module(f, m);
  size_t n = strlen(u_dot_v_text) + strlen(softmax_text) + strlen(sched_text) + 3;
  char *want = malloc(n);
  snprintf(want, n, "%s\n%s\n%s", u_dot_v_text, softmax_text, sched_text);
  ck_assert_str_eq(captured(f), want);
  free(want);
}
END_TEST

/* The IR parser reads every printed form back to an IR that verifies and
 * prints identically. */
START_TEST(print_round_trips_through_parser) {
  const char *texts[] = {u_mul_e_sum_text, u_dot_v_text, softmax_text,
                         scheduled_text,   misc_text,    sched_text};
  for (size_t k = 0; k < sizeof texts / sizeof texts[0]; k++) {
    Diag d;
    ir_diag_init(&d, NULL);
    IrModule *m = lang_parse_ir(A, &d, "rt.ir", texts[k]);
    ck_assert_msg(m != NULL, "text %zu does not parse back:\n%s", k, d.buf ? d.buf : "");
    for (int i = 0; i < m->nops; i++)
      ck_assert_msg(ir_verify_op(m->ops[i], &d, "parse"), "%s", d.buf ? d.buf : "");
    FILE *f = capture();
    ir_print_module(f, m);
    ck_assert_str_eq(captured(f), texts[k]);
    ir_diag_free(&d);
  }
}
END_TEST

/* .gop source compiles to IR that prints in the canonical layout. */
START_TEST(print_compiled_source) {
  const char *src =
      "# DGL's u_mul_e_sum\n"
      "op u_mul_e_sum(X: f32[src, F], W: f32[edge]) -> Y: f32[dst, F] {\n"
      "    tensor M: f32[dst]\n"
      "    for v in dst { for e in in_edges(v) { for f in 0..F {\n"
      "        Y[v, f] += (X[src(e), f]) * W[e];\n"
      "    } } }\n"
      "}\n";
  Diag d;
  ir_diag_init(&d, NULL);
  IrModule *m = lang_compile(A, &d, "s.gop", src);
  ck_assert_msg(m != NULL, "%s", d.buf ? d.buf : "");
  ck_assert_int_eq(m->nops, 1);
  ck_assert(ir_verify_op(m->ops[0], &d, "check"));
  ck_assert_str_eq(op_text(m->ops[0]), u_mul_e_sum_text);
  ir_diag_free(&d);
}
END_TEST

/* ---- verifier ---- */

static Diag D;

static void vsetup(void) {
  setup();
  ir_diag_init(&D, NULL);
}

static void vteardown(void) {
  ir_diag_free(&D);
  teardown();
}

/* The op fails verification after "split" with a message containing
 * `want`. */
static void expect_broken(const IrOp *op, const char *want) {
  ir_diag_free(&D);
  ir_diag_init(&D, NULL);
  ck_assert_msg(!ir_verify_op(op, &D, "split"), "accepted; wanted: %s", want);
  ck_assert_ptr_nonnull(D.buf);
  ck_assert_msg(strstr(D.buf, "error: IR verification failed after split: ") != NULL,
                "got: %s", D.buf);
  ck_assert_msg(strstr(D.buf, want) != NULL, "wanted \"%s\", got: %s", want, D.buf);
}

START_TEST(verify_accepts_good_ir) {
  IrOp *ops[] = {make_u_mul_e_sum(), make_u_dot_v(), make_softmax(), make_scheduled(),
                 make_misc()};
  for (size_t k = 0; k < sizeof ops / sizeof ops[0]; k++) {
    ck_assert_msg(ir_verify_op(ops[k], &D, "check"), "%s: %s", ops[k]->name,
                  D.buf ? D.buf : "");
  }
  ck_assert_int_eq(D.nerrors, 0);
}
END_TEST

/* The innermost store of u_mul_e_sum: Y[v, f] += X[src(e), f] * W[e]. */
static IrNode *inner_store(IrOp *op) { return op->body->loop.body->loop.body->loop.body; }

START_TEST(verify_index_count) {
  IrOp *op = make_u_mul_e_sum();
  IrNode *s = inner_store(op);
  s->acc.value->bin.a->acc.nidx = 1;
  s->acc.value->bin.a->loc = at(6);
  expect_broken(op, "load of X has 1 indices, its rank is 2");
  ck_assert_msg(strstr(D.buf, "t.gop:6:3: ") != NULL, "%s", D.buf);
}
END_TEST

START_TEST(verify_store_to_input) {
  IrOp *op = make_u_mul_e_sum();
  IrNode *s = inner_store(op);
  s->acc.tensor = op->tensors[0];
  expect_broken(op, "store to X, an input");
}
END_TEST

START_TEST(verify_foreign_tensor) {
  IrOp *op = make_u_mul_e_sum();
  IrOp *other = make_u_mul_e_sum();
  inner_store(op)->acc.value->bin.b->acc.tensor = other->tensors[1];
  expect_broken(op, "load of tensor W that is not a tensor of op u_mul_e_sum");
}
END_TEST

START_TEST(verify_var_out_of_scope) {
  IrOp *op = make_u_dot_v();
  /* S[e] = s  becomes  S[e] = X[src(e), f], outside the f loop */
  IrNode *store = op->body->loop.body->loop.body->next->next;
  IrVar *f = op->vars[2];
  store->acc.value = ld(op->tensors[0], 2, src_of(vr(op->vars[1])), vr(f));
  expect_broken(op, "variable f used out of its scope");
}
END_TEST

START_TEST(verify_local_before_declaration) {
  IrOp *op = make_u_dot_v();
  IrNode *block = op->body->loop.body->loop.body;   /* var s = 0.0; for f; S[e] = s */
  block->let.init = vr(op->vars[3]);                 /* var s = s */
  expect_broken(op, "variable s used out of its scope");
}
END_TEST

START_TEST(verify_local_after_its_block) {
  IrOp *op = make_u_dot_v();
  IrNode *store = st(op->tensors[2], IR_RED_ASSIGN, vr(op->vars[3]), 1, vr(op->vars[1]));
  /* a second store after the e loop, in the v loop's body, reads s */
  store->acc.idx[0] = ir_iconst(A, L, 0);
  op->body->loop.body->next = store;
  expect_broken(op, "variable s used out of its scope");
}
END_TEST

START_TEST(verify_set_out_of_scope) {
  IrOp *op = make_u_dot_v();
  /* s += 1.0 after the e loop, where s is no longer declared */
  op->body->loop.body->next = ir_set(A, at(9), op->vars[3], IR_RED_ADD, fc(1));
  expect_broken(op, "assignment to local s out of its scope");
  ck_assert_msg(strstr(D.buf, "t.gop:9:3: ") != NULL, "%s", D.buf);
}
END_TEST

START_TEST(verify_loop_var_bound_twice) {
  IrOp *op = make_softmax();
  IrNode *s2 = op->body->next;
  s2->loop.var = op->vars[0]; /* the v of stage 1 */
  s2->loop.body->loop.of = vr(op->vars[0]);
  s2->loop.body->loop.body->acc.idx[0] = vr(op->vars[0]);
  s2->loop.body->loop.body->acc.value->call.args[0]->bin.b->acc.idx[0] = vr(op->vars[0]);
  expect_broken(op, "loop variable v is bound by more than one loop");
}
END_TEST

START_TEST(verify_loop_var_kind) {
  IrOp *op = make_u_mul_e_sum();
  op->body->loop.kind = IR_LOOP_SRC_V;
  expect_broken(op, "src loop binds v, a dst vertex variable");
}
END_TEST

START_TEST(verify_edge_loop_without_vertex) {
  IrOp *op = make_u_mul_e_sum();
  op->body->loop.body->loc = at(4);
  op->body->loop.body->loop.of = NULL;
  expect_broken(op, "missing vertex of the edge loop");
  ck_assert_msg(strstr(D.buf, "t.gop:4:3: ") != NULL, "%s", D.buf);
}
END_TEST

START_TEST(verify_range_without_extent) {
  IrOp *op = make_u_mul_e_sum();
  op->body->loop.body->loop.body->loop.extent = NULL;
  expect_broken(op, "missing extent of the range loop");
}
END_TEST

START_TEST(verify_extra_loop_fields) {
  IrOp *op = make_u_mul_e_sum();
  op->body->loop.extent = ic(3);
  expect_broken(op, "dst loop has an extent");
  op = make_u_mul_e_sum();
  op->body->loop.body->loop.body->loop.of = vr(op->vars[0]);
  expect_broken(op, "range loop has a vertex (`of`)");
}
END_TEST

START_TEST(verify_float_index) {
  IrOp *op = make_u_mul_e_sum();
  inner_store(op)->acc.idx[1] = fc(1);
  expect_broken(op, "index `fconst` has type float, expected int");
}
END_TEST

START_TEST(verify_int_value) {
  IrOp *op = make_u_mul_e_sum();
  inner_store(op)->acc.value = vr(op->vars[2]);
  expect_broken(op, "stored value `var` has type int, expected float");
}
END_TEST

START_TEST(verify_let_init_type) {
  IrOp *op = make_u_dot_v();
  op->body->loop.body->loop.body->let.init = ic(0);
  expect_broken(op, "initialiser `iconst` has type int, expected float");
}
END_TEST

START_TEST(verify_guard_not_bool) {
  IrOp *op = make_scheduled();
  IrNode *guard = op->body->loop.body->loop.body->loop.body;
  guard->ifs.cond = vr(op->vars[2]);
  expect_broken(op, "condition `var` has type int, expected bool");
}
END_TEST

START_TEST(verify_inconsistent_types) {
  IrOp *op = make_u_mul_e_sum();
  IrNode *mul = inner_store(op)->acc.value;
  mul->type = IR_TY_INT;
  expect_broken(op, "binary `*` has type int, expected float");
  op = make_scheduled();
  IrNode *guard = op->body->loop.body->loop.body->loop.body;
  guard->ifs.cond->bin.a = fc(1); /* 1.0 < F is fine: a float comparison */
  ck_assert(ir_verify_op(op, &D, "x"));
  guard->ifs.cond = bin(IR_OP_AND, guard->ifs.cond, vr(op->vars[2]));
  guard->ifs.cond->type = IR_TY_BOOL;
  expect_broken(op, "binary `&&` applied to bool and int");
}
END_TEST

START_TEST(verify_endpoint_of_float) {
  IrOp *op = make_u_mul_e_sum();
  inner_store(op)->acc.value->bin.a->acc.idx[0]->endpoint.e = fc(0);
  expect_broken(op, "edge `fconst` has type float, expected int");
}
END_TEST

START_TEST(verify_foreign_symbol) {
  IrOp *op = make_u_mul_e_sum();
  IrOp *other = make_u_mul_e_sum();
  op->body->loop.body->loop.body->loop.extent = sym(other->syms[0]);
  expect_broken(op, "extent F is not a symbol of op u_mul_e_sum");
  op = make_u_mul_e_sum();
  op->tensors[0]->dims[0].sym = other->syms[0];
  expect_broken(op, "dimension 0 of X is extent F, not a symbol of op u_mul_e_sum");
}
END_TEST

START_TEST(verify_foreign_var) {
  IrOp *op = make_u_mul_e_sum();
  IrOp *other = make_u_mul_e_sum();
  inner_store(op)->acc.idx[0] = vr(other->vars[0]);
  expect_broken(op, "variable v is not a variable of op u_mul_e_sum");
}
END_TEST

START_TEST(verify_annotations) {
  IrOp *op = make_u_mul_e_sum();
  op->body->loop.unroll = -1;
  expect_broken(op, "loop unroll factor -1 is negative");
  op = make_u_mul_e_sum();
  op->body->loop.vec = -4;
  expect_broken(op, "loop vector width -4 is negative");
  op = make_u_mul_e_sum();
  op->body->loop.bind = (IrBind)17;
  expect_broken(op, "loop binding 17 is not valid");
}
END_TEST

START_TEST(verify_threads_and_store_kind) {
  IrOp *op = make_u_mul_e_sum();
  op->body->loop.threads = 100;
  expect_broken(op, "loop threads 100 is not a multiple of 32 up to 1024");
  op = make_u_mul_e_sum();
  op->body->loop.body->loop.threads = 64;
  expect_broken(op, "loop threads 64 on a loop that is not a stage");
  op = make_u_mul_e_sum();
  inner_store(op)->acc.how = (IrHow)7;
  expect_broken(op, "store kind 7 is not valid");
  op = make_u_mul_e_sum();
  op->body->loop.threads = 1024;
  inner_store(op)->acc.how = IR_HOW_ATOMIC;
  ck_assert(ir_verify_op(op, &D, "x"));
}
END_TEST

START_TEST(verify_tensor_counts) {
  IrOp *op = make_u_mul_e_sum();
  op->ninputs = 1;
  expect_broken(op, "op u_mul_e_sum counts 1 inputs and 1 outputs but holds 2 and 1");
  op = make_u_mul_e_sum();
  op->tensors[1]->id = 0;
  expect_broken(op, "tensor W has id 0 at position 1");
  op = make_u_mul_e_sum();
  IrTensor *tmp = op->tensors[2];
  op->tensors[2] = op->tensors[3];
  op->tensors[3] = tmp;
  op->tensors[2]->id = 2;
  op->tensors[3]->id = 3;
  expect_broken(op, "tensor Y is out of order");
}
END_TEST

START_TEST(verify_bad_kinds) {
  IrOp *op = make_u_mul_e_sum();
  inner_store(op)->kind = (IrKind)99;
  expect_broken(op, "node kind 99 is not a valid kind");
  op = make_u_mul_e_sum();
  op->body->loop.body->loop.body->loop.body = fc(1);
  expect_broken(op, "expression `fconst` where a statement is expected");
  op = make_u_mul_e_sum();
  inner_store(op)->acc.value = ir_if(A, L, bin(IR_OP_LT, ic(0), ic(1)), NULL);
  expect_broken(op, "statement `if` where an expression (stored value) is expected");
  op = make_u_mul_e_sum();
  inner_store(op)->acc.value->bin.a->acc.idx[0]->type = IR_TY_FLOAT;
  expect_broken(op, "src has type float, expected int");
}
END_TEST

START_TEST(verify_call_arity) {
  IrOp *op = make_softmax();
  IrNode *callnode = op->body->next->loop.body->loop.body->acc.value;
  callnode->call.nargs = 2;
  callnode->call.args[1] = fc(1);
  expect_broken(op, "exp takes 1 arguments, the call has 2");
}
END_TEST

START_TEST(verify_reports_every_error) {
  IrOp *op = make_u_mul_e_sum();
  op->body->loop.unroll = -1;
  inner_store(op)->acc.tensor = op->tensors[0];
  ir_diag_free(&D);
  ir_diag_init(&D, NULL);
  ck_assert(!ir_verify_op(op, &D, "fuse"));
  ck_assert_int_eq(D.nerrors, 2);
}
END_TEST

/* A groups loop is a stage's outermost loop or sits inside unbound range
 * loops that hold it alone (feature tiles outside the groups: spmm_tiles);
 * a guard, a bound loop or another statement beside it in between is
 * refused. */
START_TEST(verify_groups_in_tile_loops) {
  static const char *const head =
      "op tiles(X: f32[src, F]) -> Y: f32[dst, F] {\n";
  static const char *const groups =
      "for eo in groups(3) @warp {\n"
      "  for ei in group_edges(eo) {\n"
      "    Y[dst(ei), fo] += X[src(ei), fo]\n"
      "  }\n"
      "}\n";
  static const struct {
    const char *before, *after, *want; /* want NULL: verifies */
  } cases[] = {
      {"for fo in 0..F {\n", "}\n", NULL},
      {"for ft in 0..2 {\nfor fo in 0..F {\n", "}\n}\n", NULL},
      {"for fo in 0..F {\nif (fo < F) {\n", "}\n}\n", "is neither a stage's outermost loop"},
      {"for fo in 0..F @thread {\n", "}\n", "is neither a stage's outermost loop"},
      {"for fo in 0..F {\nvar z = 0.0\n", "}\n", "is neither a stage's outermost loop"},
  };
  for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
    char text[1024];
    snprintf(text, sizeof text, "%s%s%s%s}\n", head, cases[k].before, groups, cases[k].after);
    Diag d;
    ir_diag_init(&d, NULL);
    IrModule *m = lang_parse_ir(A, &d, "tiles.ir", text);
    ck_assert_msg(m != NULL, "case %zu does not parse:\n%s\n%s", k, text, d.buf ? d.buf : "");
    bool ok = ir_verify_op(m->ops[0], &d, "check");
    if (!cases[k].want)
      ck_assert_msg(ok, "case %zu: %s", k, d.buf ? d.buf : "");
    else
      ck_assert_msg(!ok && strstr(d.buf, cases[k].want), "case %zu: %s", k,
                    d.buf ? d.buf : "accepted");
    ir_diag_free(&d);
  }
}
END_TEST

/* ---- dtype.c: 16-bit conversions ---- */

static float next_up(float x) { return nextafterf(x, INFINITY); }
static float next_down(float x) { return nextafterf(x, -INFINITY); }

/* Every f16 and bf16 value converts to f32 and back to itself; halfway
 * between two neighbours rounds to the even one, just off halfway to the
 * nearer; overflow gives inf, NaN stays NaN. */
START_TEST(half_conversions) {
  for (int k = 0; k < 2; k++) {
    bool bf = k == 1;
    for (uint32_t h = 0; h < 0x10000; h++) {
      float x = bf ? ir_bf16_to_float((uint16_t)h) : ir_f16_to_float((uint16_t)h);
      uint16_t back = bf ? ir_bf16_from_float(x) : ir_f16_from_float(x);
      if (isnan(x)) {
        ck_assert(isnan(bf ? ir_bf16_to_float(back) : ir_f16_to_float(back)));
        continue;
      }
      ck_assert_msg(back == h, "%s %04x -> %g -> %04x", bf ? "bf16" : "f16", h, x, back);
      /* the neighbour above, within the finite positives */
      uint32_t up = h + 1;
      float y = bf ? ir_bf16_to_float((uint16_t)up) : ir_f16_to_float((uint16_t)up);
      if ((h & 0x8000) || isinf(x) || isinf(y) || isnan(y)) continue;
      float mid = (float)(((double)x + y) / 2); /* exact: 12 or 9 bits */
      uint16_t r = bf ? ir_bf16_from_float(mid) : ir_f16_from_float(mid);
      ck_assert_msg(r == ((h & 1) ? up : h), "%s tie %g between %04x and %04x gave %04x",
                    bf ? "bf16" : "f16", mid, h, up, r);
      ck_assert_uint_eq(bf ? ir_bf16_from_float(next_up(mid)) : ir_f16_from_float(next_up(mid)), up);
      ck_assert_uint_eq(bf ? ir_bf16_from_float(next_down(mid)) : ir_f16_from_float(next_down(mid)), h);
    }
  }
  ck_assert_uint_eq(ir_f16_from_float(65520.0f), 0x7c00);
  ck_assert_uint_eq(ir_f16_from_float(next_down(65520.0f)), 0x7bff);
  ck_assert_uint_eq(ir_f16_from_float(-1e9f), 0xfc00);
  ck_assert_uint_eq(ir_f16_from_float(0x1p-25f), 0);      /* a tie to 0 */
  ck_assert_uint_eq(ir_f16_from_float(next_up(0x1p-25f)), 1);
  ck_assert_uint_eq(ir_bf16_from_float(3.4e38f), 0x7f80); /* rounds to inf */
  ck_assert(isnan(ir_f16_to_float(ir_f16_from_float(NAN))));
  ck_assert(isnan(ir_bf16_to_float(ir_bf16_from_float(NAN))));
  ck_assert(ir_round_to(IR_DT_BF16, 1.00390625) == 1.0);    /* 1 + 2^-8: a tie, to even */
  ck_assert(ir_round_to(IR_DT_F16, 1.0 + 0x1p-11 + 0x1p-20) == 1.0 + 0x1p-10);
  /* through f32, as the GPU's f64 -> f32 -> f16: the f32 rounding makes
   * this a tie, which goes to even (the double rounding of dtype.c) */
  ck_assert(ir_round_to(IR_DT_F16, 1.0 + 0x1p-11 + 0x1p-30) == 1.0);
  ck_assert(ir_round_to(IR_DT_F64, 0.1) == 0.1);
  uint16_t buf[1];
  ir_elem_put(IR_DT_BF16, buf, 0, -2.0);
  ck_assert_uint_eq(buf[0], 0xc000);
  ck_assert(ir_elem_get(IR_DT_BF16, buf, 0) == -2.0);
}
END_TEST

static Suite *suite(void) {
  Suite *s = suite_create("ir");
  TCase *p = tcase_create("print");
  tcase_add_checked_fixture(p, setup, teardown);
  tcase_add_test(p, print_weighted_aggregation);
  tcase_add_test(p, half_conversions);
  tcase_add_test(p, print_dot_product_with_local);
  tcase_add_test(p, print_softmax_stages_and_temporaries);
  tcase_add_test(p, print_annotations_guards_int_arithmetic);
  tcase_add_test(p, print_misc_constructs);
  tcase_add_test(p, print_atomic_store);
  tcase_add_test(p, print_op_to_string);
  tcase_add_test(p, print_no_params_and_decl);
  tcase_add_test(p, print_precedence);
  tcase_add_test(p, print_floats);
  tcase_add_test(p, print_schedule);
  tcase_add_test(p, print_module);
  tcase_add_test(p, print_round_trips_through_parser);
  tcase_add_test(p, print_compiled_source);
  suite_add_tcase(s, p);

  TCase *v = tcase_create("verify");
  tcase_add_checked_fixture(v, vsetup, vteardown);
  tcase_add_test(v, verify_accepts_good_ir);
  tcase_add_test(v, verify_index_count);
  tcase_add_test(v, verify_store_to_input);
  tcase_add_test(v, verify_foreign_tensor);
  tcase_add_test(v, verify_var_out_of_scope);
  tcase_add_test(v, verify_local_before_declaration);
  tcase_add_test(v, verify_local_after_its_block);
  tcase_add_test(v, verify_set_out_of_scope);
  tcase_add_test(v, verify_loop_var_bound_twice);
  tcase_add_test(v, verify_loop_var_kind);
  tcase_add_test(v, verify_edge_loop_without_vertex);
  tcase_add_test(v, verify_range_without_extent);
  tcase_add_test(v, verify_extra_loop_fields);
  tcase_add_test(v, verify_float_index);
  tcase_add_test(v, verify_int_value);
  tcase_add_test(v, verify_let_init_type);
  tcase_add_test(v, verify_guard_not_bool);
  tcase_add_test(v, verify_inconsistent_types);
  tcase_add_test(v, verify_endpoint_of_float);
  tcase_add_test(v, verify_foreign_symbol);
  tcase_add_test(v, verify_foreign_var);
  tcase_add_test(v, verify_annotations);
  tcase_add_test(v, verify_threads_and_store_kind);
  tcase_add_test(v, verify_tensor_counts);
  tcase_add_test(v, verify_bad_kinds);
  tcase_add_test(v, verify_call_arity);
  tcase_add_test(v, verify_reports_every_error);
  tcase_add_test(v, verify_groups_in_tile_loops);
  suite_add_tcase(s, v);
  return s;
}

int main(void) {
  int rc = tu_run(suite());
  free(text_buf);
  return rc;
}
