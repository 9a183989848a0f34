/* tests/unit/test_interp.c: the reference interpreter against independent
 * references.
 *
 * The interpreter is the oracle of every later test, so it is checked here
 * against things that do not share its code: values worked out by hand on a
 * six-edge graph, and, on real citation graphs, a dense adjacency matrix
 * product and a direct loop over the COO arrays. Operators are built by hand
 * with ir/build.c. Error paths must report with a location and never crash.
 */
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "ir/ir.h"
#include "lang/lang.h"
#include "graph/graph.h"
#include "interp/interp.h"
#include "testutil.h"

static Arena *A;
static Diag D;
static const Loc L = {"t.gop", 1, 1};
static Loc at(int line) { return (Loc){"t.gop", line, 5}; }

static void setup(void) {
  A = ir_arena_new();
  ir_diag_init(&D, NULL);
}

static void teardown(void) {
  ir_diag_free(&D);
  ir_arena_free(A);
}

/* ---- building IR tersely ---- */

#include "irbuild.h"

/* ---- operators ---- */

/* for v in dst { for e in in_edges(v) { for f in 0..F {
 *   Y[v, f] RED X[src(e), f] (* W[e]) } } }
 * Tensors: X (0), W (1, when weighted), Y (last). */
static IrOp *make_agg(IrRed red, bool weighted) {
  IrOp *op = ir_op_new(A, "agg", L);
  IrSym *F = ir_op_sym(A, op, "F", L);
  IrTensor *X = tensor(op, "X", IR_DOM_SRC, IR_ROLE_IN, F);
  IrTensor *W = weighted ? tensor(op, "W", IR_DOM_EDGE, IR_ROLE_IN, NULL) : NULL;
  IrTensor *Y = tensor(op, "Y", IR_DOM_DST, IR_ROLE_OUT, F);
  IrVar *v = var(op, "v", IR_VAR_DST_V), *e = var(op, "e", IR_VAR_EDGE);
  IrVar *f = var(op, "f", IR_VAR_INDEX);
  IrNode *val = ld(X, 2, src_of(vr(e)), vr(f));
  if (W) val = bin(IR_OP_MUL, val, ld(W, 1, vr(e)));
  op->body = loop(v, IR_LOOP_DST_V, NULL,
                  loop(e, IR_LOOP_IN_EDGES, vr(v),
                       loop(f, IR_LOOP_RANGE, sym(F), st(Y, red, val, 2, vr(v), vr(f)))));
  return op;
}

/* E[e, f] = X[src(e), f] + Yd[dst(e), f] */
static IrOp *make_u_add_v(void) {
  IrOp *op = ir_op_new(A, "u_add_v", L);
  IrSym *F = ir_op_sym(A, op, "F", L);
  IrTensor *X = tensor(op, "X", IR_DOM_SRC, IR_ROLE_IN, F);
  IrTensor *Y = tensor(op, "Yd", IR_DOM_DST, IR_ROLE_IN, F);
  IrTensor *E = tensor(op, "E", IR_DOM_EDGE, IR_ROLE_OUT, F);
  IrVar *v = var(op, "v", IR_VAR_DST_V), *e = var(op, "e", IR_VAR_EDGE);
  IrVar *f = var(op, "f", IR_VAR_INDEX);
  IrNode *val = bin(IR_OP_ADD, ld(X, 2, src_of(vr(e)), vr(f)), ld(Y, 2, dst_of(vr(e)), vr(f)));
  op->body = loop(v, IR_LOOP_DST_V, NULL,
                  loop(e, IR_LOOP_IN_EDGES, vr(v),
                       loop(f, IR_LOOP_RANGE, sym(F),
                            st(E, IR_RED_ASSIGN, val, 2, vr(e), vr(f)))));
  return op;
}


/* The weighted aggregation written as a scatter over out-edges:
 * for u in src { for e in out_edges(u) { for f { Y[dst(e), f] += X[u, f] * W[e] } } } */
static IrOp *make_scatter_out(void) {
  IrOp *op = ir_op_new(A, "scatter_out", L);
  IrSym *F = ir_op_sym(A, op, "F", L);
  IrTensor *X = tensor(op, "X", IR_DOM_SRC, IR_ROLE_IN, F);
  IrTensor *W = tensor(op, "W", IR_DOM_EDGE, IR_ROLE_IN, NULL);
  IrTensor *Y = tensor(op, "Y", IR_DOM_DST, IR_ROLE_OUT, F);
  IrVar *u = var(op, "u", IR_VAR_SRC_V), *e = var(op, "e", IR_VAR_EDGE);
  IrVar *f = var(op, "f", IR_VAR_INDEX);
  IrNode *val = bin(IR_OP_MUL, ld(X, 2, vr(u), vr(f)), ld(W, 1, vr(e)));
  op->body = loop(u, IR_LOOP_SRC_V, NULL,
                  loop(e, IR_LOOP_OUT_EDGES, vr(u),
                       loop(f, IR_LOOP_RANGE, sym(F),
                            st(Y, IR_RED_ADD, val, 2, dst_of(vr(e)), vr(f)))));
  return op;
}

/* The same over the flat edge list. */
static IrOp *make_scatter_edges(void) {
  IrOp *op = ir_op_new(A, "scatter_edges", L);
  IrSym *F = ir_op_sym(A, op, "F", L);
  IrTensor *X = tensor(op, "X", IR_DOM_SRC, IR_ROLE_IN, F);
  IrTensor *W = tensor(op, "W", IR_DOM_EDGE, IR_ROLE_IN, NULL);
  IrTensor *Y = tensor(op, "Y", IR_DOM_DST, IR_ROLE_OUT, F);
  IrVar *e = var(op, "e", IR_VAR_EDGE), *f = var(op, "f", IR_VAR_INDEX);
  IrNode *val = bin(IR_OP_MUL, ld(X, 2, src_of(vr(e)), vr(f)), ld(W, 1, vr(e)));
  op->body = loop(e, IR_LOOP_EDGES, NULL,
                  loop(f, IR_LOOP_RANGE, sym(F),
                       st(Y, IR_RED_ADD, val, 2, dst_of(vr(e)), vr(f))));
  return op;
}

/* copy_u_sum as a schedule would leave it: the feature loop split by 2
 * with a guard, the vertex loop bound to warps, the lane loop unrolled. */
static IrOp *make_tiled_sum(void) {
  IrOp *op = ir_op_new(A, "tiled", L);
  IrSym *F = ir_op_sym(A, op, "F", L);
  IrTensor *X = tensor(op, "X", IR_DOM_SRC, IR_ROLE_IN, F);
  IrTensor *Y = tensor(op, "Y", IR_DOM_DST, IR_ROLE_OUT, F);
  IrVar *v = var(op, "v", IR_VAR_DST_V), *e = var(op, "e", IR_VAR_EDGE);
  IrVar *fo = var(op, "fo", IR_VAR_INDEX), *fi = var(op, "fi", IR_VAR_INDEX);
  IrNode *fidx = bin(IR_OP_ADD, bin(IR_OP_MUL, vr(fo), ic(2)), vr(fi));
  IrNode *upd = loop(e, IR_LOOP_IN_EDGES, vr(v),
                     st(Y, IR_RED_ADD, ld(X, 2, src_of(vr(e)), ir_clone(A, fidx)), 2, vr(v),
                        ir_clone(A, fidx)));
  IrNode *lfi = loop(fi, IR_LOOP_RANGE, ic(2),
                     ir_if(A, L, bin(IR_OP_LT, fidx, sym(F)), upd));
  lfi->loop.bind = IR_BIND_LANE;
  lfi->loop.unroll = 2;
  IrNode *nfo = bin(IR_OP_DIV, bin(IR_OP_ADD, sym(F), ic(1)), ic(2));
  IrNode *lv = loop(v, IR_LOOP_DST_V, NULL, loop(fo, IR_LOOP_RANGE, nfo, lfi));
  lv->loop.bind = IR_BIND_WARP;
  op->body = lv;
  return op;
}

/* ---- running ---- */

/* Runs `op` on `g` with one extent F (or none when F <= 0 is not wanted:
 * nf = 0), converting the double arrays `io` (by tensor id) to the mode's
 * element type for inputs and back for outputs. Temporaries are passed as
 * NULL unless `io` has them. Returns the interpreter's status. */
static int run(const IrOp *op, const Graph *g, int nf, int64_t F, InterpMode mode,
               double **io) {
  void *bufs[16] = {0};
  bool f32 = mode == INTERP_F32;
  InterpArgs args = {.graph = g, .mode = mode, .buffers = bufs};
  args.extents.n = nf;
  args.extents.value[0] = F;
  for (int i = 0; i < op->ntensors; i++) {
    const IrTensor *t = op->tensors[i];
    if (!io[i]) continue;
    int64_t n = graph_tensor_numel(t, g, &args.extents);
    ck_assert_int_ge(n, 0);
    /* native mode: each tensor in its dtype; F64 mode: double */
    IrDType dt = f32 ? t->dtype : IR_DT_F64;
    bufs[i] = malloc((size_t)(n > 0 ? n : 1) * (size_t)ir_dtype_bytes(dt));
    for (int64_t k = 0; k < n; k++) {
      /* outputs get garbage: the interpreter must initialise them */
      double x = t->role == IR_ROLE_IN ? io[i][k] : 12345.0;
      ir_elem_put(dt, bufs[i], k, x);
    }
  }
  int rc = interp_run(op, &args, &D);
  for (int i = 0; i < op->ntensors; i++) {
    if (!bufs[i]) continue;
    if (op->tensors[i]->role != IR_ROLE_IN) {
      int64_t n = graph_tensor_numel(op->tensors[i], g, &args.extents);
      for (int64_t k = 0; k < n; k++)
        io[i][k] = ir_elem_get(f32 ? op->tensors[i]->dtype : IR_DT_F64, bufs[i], k);
    }
    free(bufs[i]);
  }
  return rc;
}

static void expect_close(const double *got, const double *want, int n, double tol,
                         const char *what) {
  for (int k = 0; k < n; k++) {
    bool ok = (isnan(want[k]) && isnan(got[k])) ||
              fabs(got[k] - want[k]) <= tol * (1 + fabs(want[k]));
    ck_assert_msg(ok, "%s[%d] = %.9g, expected %.9g", what, k, got[k], want[k]);
  }
}

/* ---- the tiny graph ----
 * 5 vertices; e0 0->1, e1 0->2, e2 1->2, e3 2->0, e4 3->2, e5 2->1.
 * In-edges: v0 {e3}, v1 {e0, e5}, v2 {e1, e2, e4}; v3 has none (but an
 * out-edge); v4 is isolated. */
static Graph *tiny(void) {
  int64_t src[] = {0, 0, 1, 2, 3, 2}, dst[] = {1, 2, 2, 0, 2, 1};
  Graph *g = graph_from_coo(5, 6, src, dst, "tiny", &D, L);
  ck_assert_ptr_nonnull(g);
  return g;
}

/* Rows by source vertex, F = 2. */
static double X_tiny[] = {1, 5, 2, 0.5, 3, 4, -2, 8, 100, 100};
static double W_tiny[] = {0.5, 2, -1, 3, 0.25, 1};
static double Yd_tiny[] = {1, 1, 0, 2, 1, -1, 5, 5, 0, 0};

static const InterpMode modes[] = {INTERP_F32, INTERP_F64};
static const double tols[] = {1e-6, 1e-14};

/* Runs an aggregation on the tiny graph in both modes and compares Y. */
static void check_agg(IrOp *op, bool weighted, const double *want) {
  Graph *g = tiny();
  for (int m = 0; m < 2; m++) {
    double Y[10];
    double *io[] = {X_tiny, weighted ? W_tiny : Y, Y};
    ck_assert_int_eq(run(op, g, 1, 2, modes[m], io), 0);
    expect_close(Y, want, 10, tols[m], m ? "Y (f64)" : "Y (f32)");
  }
  graph_free(g);
}

START_TEST(copy_u_sum) {
  double want[] = {3, 4, 4, 9, 1, 13.5, 0, 0, 0, 0};
  check_agg(make_agg(IR_RED_ADD, false), false, want);
}
END_TEST

START_TEST(u_mul_e_sum) {
  double want[] = {9, 12, 3.5, 6.5, -0.5, 11.5, 0, 0, 0, 0};
  check_agg(make_agg(IR_RED_ADD, true), true, want);
}
END_TEST

START_TEST(copy_u_max_empty_is_zero) {
  double want[] = {3, 4, 3, 5, 2, 8, 0, 0, 0, 0};
  check_agg(make_agg(IR_RED_MAX, false), false, want);
}
END_TEST

START_TEST(copy_u_min_empty_is_zero) {
  double want[] = {3, 4, 1, 4, -2, 0.5, 0, 0, 0, 0};
  check_agg(make_agg(IR_RED_MIN, false), false, want);
}
END_TEST

START_TEST(copy_u_mean) {
  double want[] = {3, 4, 2, 4.5, 1.0 / 3, 4.5, 0, 0, 0, 0};
  check_agg(make_agg(IR_RED_MEAN, false), false, want);
}
END_TEST

START_TEST(mean_by_in_degree) {
  /* Y[v, f] += X[src(e), f] / in_degree(v): the mean, written by hand */
  IrOp *op = make_agg(IR_RED_ADD, false);
  IrNode *store = op->body->loop.body->loop.body->loop.body;
  store->acc.value = bin(IR_OP_DIV, store->acc.value,
                         ir_endpoint(A, L, IR_INDEG, vr(op->vars[0])));
  double want[] = {3, 4, 2, 4.5, 1.0 / 3, 4.5, 0, 0, 0, 0};
  check_agg(op, false, want);
}
END_TEST

START_TEST(u_dot_v_with_local) {
  Graph *g = tiny();
  IrOp *op = make_u_dot_v();
  double want[] = {10, -4, 1.5, 7, -10, 8};
  for (int m = 0; m < 2; m++) {
    double S[6];
    double *io[] = {X_tiny, Yd_tiny, S};
    ck_assert_int_eq(run(op, g, 1, 2, modes[m], io), 0);
    expect_close(S, want, 6, tols[m], "S");
  }
  graph_free(g);
}
END_TEST

START_TEST(u_add_v_edge_output) {
  Graph *g = tiny();
  IrOp *op = make_u_add_v();
  double want[] = {1, 7, 2, 4, 3, -0.5, 4, 5, -1, 7, 3, 6};
  for (int m = 0; m < 2; m++) {
    double E[12];
    double *io[] = {X_tiny, Yd_tiny, E};
    ck_assert_int_eq(run(op, g, 1, 2, modes[m], io), 0);
    expect_close(E, want, 12, tols[m], "E");
  }
  graph_free(g);
}
END_TEST

START_TEST(edge_softmax) {
  Graph *g = tiny();
  IrOp *op = make_softmax();
  double S[] = {1, 2, 0, 0.5, -1, 3};
  /* softmax over the in-edges of each destination, without the max shift */
  double z1 = exp(1) + exp(3), z2 = exp(2) + exp(0) + exp(-1);
  double want[] = {exp(1) / z1, exp(2) / z2, exp(0) / z2, 1, exp(-1) / z2, exp(3) / z1};
  for (int m = 0; m < 2; m++) {
    double Out[6], M[5], Z[5];
    double *io[] = {S, Out, NULL, NULL};
    ck_assert_int_eq(run(op, g, 0, 0, modes[m], io), 0);
    expect_close(Out, want, 6, tols[m], "A");
    /* temporaries given by the caller are used (and initialised) as well */
    double *io2[] = {S, Out, M, Z};
    ck_assert_int_eq(run(op, g, 0, 0, modes[m], io2), 0);
    expect_close(Out, want, 6, tols[m], "A");
    double wantM[] = {0.5, 3, 2, 0, 0};
    expect_close(M, wantM, 5, 0, "M");
    double wantZ[] = {1, 1 + exp(-2), 1 + exp(-2) + exp(-3), 0, 0};
    expect_close(Z, wantZ, 5, tols[m], "Z");
  }
  graph_free(g);
}
END_TEST

START_TEST(scatter_over_out_edges) {
  double want[] = {9, 12, 3.5, 6.5, -0.5, 11.5, 0, 0, 0, 0};
  check_agg(make_scatter_out(), true, want);
}
END_TEST

START_TEST(scatter_over_edges) {
  double want[] = {9, 12, 3.5, 6.5, -0.5, 11.5, 0, 0, 0, 0};
  check_agg(make_scatter_edges(), true, want);
}
END_TEST

START_TEST(scheduled_with_guard) {
  /* F = 3 does not divide by the tile of 2: the guard drops f = 3 */
  Graph *g = tiny();
  IrOp *op = make_tiled_sum();
  double X[15], Y[15], want[15] = {0};
  for (int k = 0; k < 15; k++) X[k] = k * 0.5 - 2;
  for (int e = 0; e < g->ne; e++)
    for (int f = 0; f < 3; f++) want[g->dst[e] * 3 + f] += X[g->src[e] * 3 + f];
  for (int m = 0; m < 2; m++) {
    double *io[] = {X, Y};
    ck_assert_int_eq(run(op, g, 1, 3, modes[m], io), 0);
    expect_close(Y, want, 15, tols[m], "Y");
  }
  graph_free(g);
}
END_TEST

START_TEST(max_propagates_nan) {
  Graph *g = tiny();
  IrOp *op = make_agg(IR_RED_MAX, false);
  double X[10];
  memcpy(X, X_tiny, sizeof X);
  X[2] = NAN; /* X[1, 0]: reaches v2 only */
  for (int m = 0; m < 2; m++) {
    double Y[10];
    double *io[] = {X, Y};
    ck_assert_int_eq(run(op, g, 1, 2, modes[m], io), 0);
    ck_assert(isnan(Y[4]));
    ck_assert(!isnan(Y[5]) && !isnan(Y[2]));
  }
  graph_free(g);
}
END_TEST

START_TEST(f32_rounds_on_store) {
  /* Y[] += C[i] over C = {2^24, 1, 1}: a float sum stays at 2^24 */
  Graph *g = tiny();
  IrOp *op = ir_op_new(A, "sum3", L);
  IrTensor *C = tensor(op, "C", IR_DOM_DENSE, IR_ROLE_IN, NULL);
  C->dims[C->ndims++].value = 3;
  IrTensor *Y = tensor(op, "Y", IR_DOM_DENSE, IR_ROLE_OUT, NULL);
  IrVar *i = var(op, "i", IR_VAR_INDEX);
  op->body = loop(i, IR_LOOP_RANGE, ic(3), st(Y, IR_RED_ADD, ld(C, 1, vr(i)), 0));
  double c[] = {16777216, 1, 1}, y;
  double *io[] = {c, &y};
  ck_assert_int_eq(run(op, g, 0, 0, INTERP_F32, io), 0);
  ck_assert(y == 16777216);
  ck_assert_int_eq(run(op, g, 0, 0, INTERP_F64, io), 0);
  ck_assert(y == 16777218);
  /* a local is an f32 register too: var s = 2^24; s += 1.0; s += 1.0 */
  IrVar *s = var(op, "s", IR_VAR_LOCAL);
  op->body = seq(ir_let(A, L, s, fc(16777216)), ir_set(A, L, s, IR_RED_ADD, fc(1)),
                 ir_set(A, L, s, IR_RED_ADD, fc(1)), st(Y, IR_RED_ASSIGN, vr(s), 0), NULL);
  ck_assert_int_eq(run(op, g, 0, 0, INTERP_F32, io), 0);
  ck_assert(y == 16777216);
  ck_assert_int_eq(run(op, g, 0, 0, INTERP_F64, io), 0);
  ck_assert(y == 16777218);
  graph_free(g);
}
END_TEST

/* Native mode computes in the declared types: a reduction into a bf16
 * element accumulates in f32 and rounds once when the stage ends (256 + 1
 * + 1 = 258, where rounding every addition would stay at 256, a tie to
 * even each time); a plain store rounds at once; an f64 operator keeps
 * f64 locals and sums; a conversion rounds in both modes. */
START_TEST(declared_types) {
  Graph *g = tiny();
  IrOp *op = ir_op_new(A, "sum3", L);
  IrTensor *C = tensor(op, "C", IR_DOM_DENSE, IR_ROLE_IN, NULL);
  C->dims[C->ndims++].value = 3;
  IrTensor *Y = tensor(op, "Y", IR_DOM_DENSE, IR_ROLE_OUT, NULL);
  C->dtype = Y->dtype = IR_DT_BF16;
  IrVar *i = var(op, "i", IR_VAR_INDEX);
  op->body = loop(i, IR_LOOP_RANGE, ic(3), st(Y, IR_RED_ADD, ld(C, 1, vr(i)), 0));
  double c[] = {256, 1, 1}, y;
  double *io[] = {c, &y};
  ck_assert_int_eq(run(op, g, 0, 0, INTERP_NATIVE, io), 0);
  ck_assert_msg(y == 258, "%g", y);
  /* two stages: the first's result is rounded before the second reads it */
  c[0] = 1.00390625; /* 1 + 2^-8: not a bf16 */
  op->body = st(Y, IR_RED_ASSIGN, bin(IR_OP_MUL, ld(C, 1, ic(1)), fc(1.00390625)), 0);
  ck_assert_int_eq(run(op, g, 0, 0, INTERP_NATIVE, io), 0);
  ck_assert_msg(y == 1, "a plain store rounds to even: %g", y);
  ck_assert_int_eq(run(op, g, 0, 0, INTERP_F64, io), 0);
  ck_assert(y == 1.00390625);
  /* an explicit conversion rounds in the oracle too */
  Y->dtype = C->dtype = IR_DT_F32;
  IrNode *args[1] = {ld(C, 1, ic(0))};
  op->body = st(Y, IR_RED_ASSIGN, ir_call(A, L, IR_FN_TO_BF16, 1, args), 0);
  ck_assert_int_eq(run(op, g, 0, 0, INTERP_F64, io), 0);
  ck_assert(y == 1);
  /* f64 tensors and accumulator: the sum of 2^24 + 1 + 1 is exact */
  Y->dtype = C->dtype = IR_DT_F64;
  op->acc = IR_DT_F64;
  op->body = loop(i, IR_LOOP_RANGE, ic(3), st(Y, IR_RED_ADD, ld(C, 1, vr(i)), 0));
  c[0] = 16777216;
  ck_assert_int_eq(run(op, g, 0, 0, INTERP_NATIVE, io), 0);
  ck_assert(y == 16777218);
  graph_free(g);
}
END_TEST

START_TEST(math_functions) {
  /* Y[i] = fn(C[i]) for every one-argument function, and the two-argument
   * ones against constants. */
  Graph *g = tiny();
  double c[] = {-1.5, -0.25, 0, 0.5, 2};
  IrFn fns[] = {IR_FN_EXP, IR_FN_ABS, IR_FN_RELU, IR_FN_SIGMOID, IR_FN_TANH};
  for (size_t k = 0; k < sizeof fns / sizeof fns[0]; k++) {
    IrOp *op = ir_op_new(A, "fn", L);
    IrTensor *C = tensor(op, "C", IR_DOM_DENSE, IR_ROLE_IN, NULL);
    C->dims[C->ndims++].value = 5;
    IrTensor *Y = tensor(op, "Y", IR_DOM_DENSE, IR_ROLE_OUT, NULL);
    Y->dims[Y->ndims++].value = 5;
    IrVar *i = var(op, "i", IR_VAR_INDEX);
    op->body = loop(i, IR_LOOP_RANGE, ic(5),
                    st(Y, IR_RED_ASSIGN, call1(fns[k], ld(C, 1, vr(i))), 1, vr(i)));
    double y[5], want[5];
    for (int j = 0; j < 5; j++) {
      double x = c[j];
      switch (fns[k]) {
      case IR_FN_EXP: want[j] = exp(x); break;
      case IR_FN_ABS: want[j] = fabs(x); break;
      case IR_FN_RELU: want[j] = x > 0 ? x : 0; break;
      case IR_FN_SIGMOID: want[j] = 1 / (1 + exp(-x)); break;
      default: want[j] = tanh(x); break;
      }
    }
    double *io[] = {c, y};
    ck_assert_int_eq(run(op, g, 0, 0, INTERP_F64, io), 0);
    expect_close(y, want, 5, 1e-15, ir_fn_name(fns[k]));
  }
  /* leaky_relu(x, 0.1), max(x, 0.3), min(x, 0.3), log and sqrt of |x| + 1 */
  IrOp *op = ir_op_new(A, "fn2", L);
  IrTensor *C = tensor(op, "C", IR_DOM_DENSE, IR_ROLE_IN, NULL);
  C->dims[C->ndims++].value = 5;
  IrTensor *Y = tensor(op, "Y", IR_DOM_DENSE, IR_ROLE_OUT, NULL);
  Y->dims[Y->ndims++].value = 5;
  Y->dims[Y->ndims++].value = 5;
  IrVar *i = var(op, "i", IR_VAR_INDEX);
  IrNode *x[5], *args[2];
  for (int j = 0; j < 5; j++) x[j] = ld(C, 1, vr(i));
  args[0] = x[0], args[1] = fc(0.1);
  IrNode *lr = ir_call(A, L, IR_FN_LEAKY_RELU, 2, args);
  args[0] = x[1], args[1] = fc(0.3);
  IrNode *mx = ir_call(A, L, IR_FN_MAX, 2, args);
  args[0] = x[2];
  IrNode *mn = ir_call(A, L, IR_FN_MIN, 2, args);
  IrNode *lg = call1(IR_FN_LOG, bin(IR_OP_ADD, call1(IR_FN_ABS, x[3]), fc(1)));
  IrNode *sq = call1(IR_FN_SQRT, bin(IR_OP_ADD, call1(IR_FN_ABS, x[4]), fc(1)));
  IrNode *vals[] = {lr, mx, mn, lg, sq};
  IrNode *body = NULL;
  for (int j = 0; j < 5; j++) ir_append(&body, st(Y, IR_RED_ASSIGN, vals[j], 2, vr(i), ic(j)));
  op->body = loop(i, IR_LOOP_RANGE, ic(5), body);
  double y[25], want[25];
  for (int j = 0; j < 5; j++) {
    double v = c[j];
    want[j * 5 + 0] = v > 0 ? v : 0.1 * v;
    want[j * 5 + 1] = v > 0.3 ? v : 0.3;
    want[j * 5 + 2] = v < 0.3 ? v : 0.3;
    want[j * 5 + 3] = log(fabs(v) + 1);
    want[j * 5 + 4] = sqrt(fabs(v) + 1);
  }
  double *io[] = {c, y};
  ck_assert_int_eq(run(op, g, 0, 0, INTERP_F64, io), 0);
  expect_close(y, want, 25, 1e-15, "fn2");
  graph_free(g);
}
END_TEST

START_TEST(tensor_shapes) {
  Graph *g = tiny();
  IrOp *op = make_u_add_v();
  IrExtents ext = {.n = 1, .value = {7}};
  int64_t shape[IR_MAX_IDX];
  ck_assert_int_eq(graph_tensor_shape(op->tensors[0], g, &ext, shape), 2);
  ck_assert_int_eq(shape[0], 5);
  ck_assert_int_eq(shape[1], 7);
  ck_assert_int_eq(graph_tensor_numel(op->tensors[2], g, &ext), 42);
  IrExtents none = {0};
  ck_assert_int_eq(graph_tensor_numel(op->tensors[2], g, &none), -1);
  graph_free(g);
}
END_TEST

/* Operators compiled from .gop source by lang/ give the hand-computed
 * values too. */
static const char *gop_source =
    "op u_mul_e_sum(X: f32[src, F], W: f32[edge]) -> Y: f32[dst, F] {\n"
    "  for v in dst { for e in in_edges(v) { for f in 0..F {\n"
    "    Y[v, f] += X[src(e), f] * W[e]\n"
    "  } } }\n"
    "}\n"
    "op copy_u_mean(X: f32[src, F]) -> Y: f32[dst, F] {\n"
    "  for v in dst { for e in in_edges(v) { for f in 0..F {\n"
    "    Y[v, f] mean= X[src(e), f]\n"
    "  } } }\n"
    "}\n"
    "op u_dot_v(X: f32[src, F], Yd: f32[dst, F]) -> S: f32[edge] {\n"
    "  for v in dst { for e in in_edges(v) {\n"
    "    var s = 0\n"
    "    for f in 0..F { s += X[src(e), f] * Yd[v, f] }\n"
    "    S[e] = s\n"
    "  } }\n"
    "}\n"
    "op edge_softmax(S: f32[edge]) -> A: f32[edge] {\n"
    "  tensor M: f32[dst]\n"
    "  tensor Z: f32[dst]\n"
    "  for v in dst { for e in in_edges(v) { M[v] max= S[e] } }\n"
    "  for v in dst { for e in in_edges(v) { Z[v] += exp(S[e] - M[v]) } }\n"
    "  for v in dst { for e in in_edges(v) { A[e] = exp(S[e] - M[v]) / Z[v] } }\n"
    "}\n";

START_TEST(compiled_from_source) {
  IrModule *m = lang_compile(A, &D, "ops.gop", gop_source);
  ck_assert_msg(m != NULL, "%s", D.buf ? D.buf : "");
  Graph *g = tiny();
  for (int k = 0; k < 2; k++) {
    double Y[10], S6[6], Out[6];
    double *io1[] = {X_tiny, W_tiny, Y};
    ck_assert_int_eq(run(ir_module_find_op(m, "u_mul_e_sum"), g, 1, 2, modes[k], io1), 0);
    double want1[] = {9, 12, 3.5, 6.5, -0.5, 11.5, 0, 0, 0, 0};
    expect_close(Y, want1, 10, tols[k], "u_mul_e_sum");
    double *io2[] = {X_tiny, Y};
    ck_assert_int_eq(run(ir_module_find_op(m, "copy_u_mean"), g, 1, 2, modes[k], io2), 0);
    double want2[] = {3, 4, 2, 4.5, 1.0 / 3, 4.5, 0, 0, 0, 0};
    expect_close(Y, want2, 10, tols[k], "copy_u_mean");
    double *io3[] = {X_tiny, Yd_tiny, S6};
    ck_assert_int_eq(run(ir_module_find_op(m, "u_dot_v"), g, 1, 2, modes[k], io3), 0);
    double want3[] = {10, -4, 1.5, 7, -10, 8};
    expect_close(S6, want3, 6, tols[k], "u_dot_v");
    double S[] = {1, 2, 0, 0.5, -1, 3};
    double z1 = exp(1) + exp(3), z2 = exp(2) + exp(0) + exp(-1);
    double want4[] = {exp(1) / z1, exp(2) / z2, exp(0) / z2, 1, exp(-1) / z2, exp(3) / z1};
    double *io4[] = {S, Out, NULL, NULL};
    ck_assert_int_eq(run(ir_module_find_op(m, "edge_softmax"), g, 0, 0, modes[k], io4), 0);
    expect_close(Out, want4, 6, tols[k], "edge_softmax");
  }
  graph_free(g);
}
END_TEST

/* ---- real graphs ---- */

/* A fixed LCG, so the features are the same on every machine. */
static double rnd(uint64_t *s) {
  *s = *s * 6364136223846793005ULL + 1442695040888963407ULL;
  return (double)(*s >> 11) / (double)(1ULL << 53) * 2 - 1;
}

/* Y = Aᵀ X against a dense adjacency matrix built from the COO arrays. */
static void check_real_sum(const char *file) {
  Graph *g = tu_graph(file);
  enum { F = 16 };
  int64_t nv = g->nv;
  float *adj = calloc((size_t)(nv * nv), sizeof(float));
  for (int e = 0; e < g->ne; e++) adj[(int64_t)g->src[e] * nv + g->dst[e]] += 1;
  double *X = malloc(sizeof(double) * (size_t)nv * F);
  double *ref = calloc((size_t)nv * F, sizeof(double));
  double *Y = malloc(sizeof(double) * (size_t)nv * F);
  uint64_t seed = 42;
  for (int64_t k = 0; k < nv * F; k++) X[k] = (float)rnd(&seed);
  for (int64_t u = 0; u < nv; u++)
    for (int64_t v = 0; v < nv; v++) {
      double a = adj[u * nv + v];
      if (a == 0) continue;
      for (int f = 0; f < F; f++) ref[v * F + f] += a * X[u * F + f];
    }
  IrOp *op = make_agg(IR_RED_ADD, false);
  double bound[] = {1e-5, 1e-12};
  for (int m = 0; m < 2; m++) {
    double *io[] = {X, Y};
    ck_assert_int_eq(run(op, g, 1, F, modes[m], io), 0);
    double num = 0, den = 0;
    for (int64_t k = 0; k < nv * F; k++) {
      num += (Y[k] - ref[k]) * (Y[k] - ref[k]);
      den += ref[k] * ref[k];
    }
    double rel = sqrt(num / den);
    ck_assert_msg(rel < bound[m], "%s: relative L2 error %g in %s mode", file, rel,
                  m ? "f64" : "f32");
  }

  /* max aggregation against a direct loop over the arcs: exact */
  double *mref = malloc(sizeof(double) * (size_t)nv * F);
  int *cnt = calloc((size_t)nv, sizeof(int));
  for (int64_t k = 0; k < nv * F; k++) mref[k] = -INFINITY;
  for (int e = 0; e < g->ne; e++) {
    int64_t u = g->src[e], v = g->dst[e];
    cnt[v]++;
    for (int f = 0; f < F; f++)
      if (X[u * F + f] > mref[v * F + f]) mref[v * F + f] = X[u * F + f];
  }
  int64_t empty = 0;
  for (int64_t v = 0; v < nv; v++)
    if (!cnt[v]) {
      empty++;
      for (int f = 0; f < F; f++) mref[v * F + f] = 0;
    }
  IrOp *mop = make_agg(IR_RED_MAX, false);
  for (int m = 0; m < 2; m++) {
    double *io[] = {X, Y};
    ck_assert_int_eq(run(mop, g, 1, F, modes[m], io), 0);
    for (int64_t k = 0; k < nv * F; k++)
      ck_assert_msg(Y[k] == mref[k], "%s: max Y[%lld] = %g, expected %g", file,
                    (long long)k, Y[k], mref[k]);
  }
  if (strcmp(file, "citeseer.mtx.gz") == 0) ck_assert_int_eq(empty, 48);
  free(mref);
  free(cnt);
  free(adj);
  free(X);
  free(ref);
  free(Y);
  graph_free(g);
}

START_TEST(cora_against_dense) { check_real_sum("cora.mtx.gz"); }
END_TEST

START_TEST(citeseer_against_dense) { check_real_sum("citeseer.mtx.gz"); }
END_TEST

/* ---- errors ---- */

static void expect_error(const char *want) {
  ck_assert_ptr_nonnull(D.buf);
  ck_assert_msg(strstr(D.buf, want) != NULL, "wanted \"%s\", got: %s", want, D.buf);
  ck_assert_int_eq(D.nerrors, 1);
}

START_TEST(error_unbound_extent) {
  Graph *g = tiny();
  IrOp *op = make_agg(IR_RED_ADD, false);
  op->syms[0]->loc = at(2);
  double Y[10];
  double *io[] = {X_tiny, Y};
  /* run() sizes buffers with the extents it is given: allocate for F = 2 */
  void *bufs[2] = {X_tiny, Y};
  InterpArgs args = {.graph = g, .mode = INTERP_F64, .buffers = bufs};
  ck_assert_int_eq(interp_run(op, &args, &D), -1);
  expect_error("t.gop:2:5: error: extent F of op agg is not bound to a value");
  ir_diag_free(&D);
  ir_diag_init(&D, NULL);
  ck_assert_int_eq(run(op, g, 1, 0, INTERP_F64, io), -1);
  expect_error("extent F of op agg must be positive, got 0");
  graph_free(g);
}
END_TEST

START_TEST(error_index_out_of_range) {
  Graph *g = tiny();
  IrOp *op = make_agg(IR_RED_ADD, false);
  IrNode *store = op->body->loop.body->loop.body->loop.body;
  store->acc.idx[1] = ic(5);
  store->loc = at(6);
  double Y[10];
  double *io[] = {X_tiny, Y};
  ck_assert_int_eq(run(op, g, 1, 2, INTERP_F32, io), -1);
  expect_error("t.gop:6:5: error: index 5 out of range [0, 2) for dimension 1 of Y");
  /* a negative index in a load */
  ir_diag_free(&D);
  ir_diag_init(&D, NULL);
  op = make_agg(IR_RED_ADD, false);
  IrNode *load = op->body->loop.body->loop.body->loop.body->acc.value;
  load->acc.idx[1] = bin(IR_OP_SUB, vr(op->vars[2]), ic(1));
  ck_assert_int_eq(run(op, g, 1, 2, INTERP_F64, io), -1);
  expect_error("index -1 out of range [0, 2) for dimension 1 of X");
  graph_free(g);
}
END_TEST

START_TEST(error_int_division_by_zero) {
  Graph *g = tiny();
  IrOp *op = make_agg(IR_RED_ADD, false);
  IrNode *store = op->body->loop.body->loop.body->loop.body;
  IrVar *f = op->vars[2];
  IrNode *div = bin(IR_OP_DIV, vr(f), bin(IR_OP_SUB, vr(f), vr(f)));
  div->loc = at(7);
  store->acc.idx[1] = div;
  double Y[10];
  double *io[] = {X_tiny, Y};
  ck_assert_int_eq(run(op, g, 1, 2, INTERP_F64, io), -1);
  expect_error("t.gop:7:5: error: integer division by zero");
  ir_diag_free(&D);
  ir_diag_init(&D, NULL);
  div->bin.op = IR_OP_MOD;
  ck_assert_int_eq(run(op, g, 1, 2, INTERP_F64, io), -1);
  expect_error("integer remainder by zero");
  graph_free(g);
}
END_TEST

START_TEST(error_vertex_and_edge_out_of_range) {
  Graph *g = tiny();
  IrOp *op = make_agg(IR_RED_ADD, false);
  op->body->loop.body->loop.of = ic(99);
  double Y[10];
  double *io[] = {X_tiny, Y};
  ck_assert_int_eq(run(op, g, 1, 2, INTERP_F64, io), -1);
  expect_error("vertex 99 out of range [0, 5) in in_edges()");
  ir_diag_free(&D);
  ir_diag_init(&D, NULL);
  op = make_agg(IR_RED_ADD, false);
  IrNode *load = op->body->loop.body->loop.body->loop.body->acc.value;
  load->acc.idx[0]->endpoint.e = ic(6);
  ck_assert_int_eq(run(op, g, 1, 2, INTERP_F64, io), -1);
  expect_error("edge 6 out of range [0, 6) in src()");
  graph_free(g);
}
END_TEST

START_TEST(error_missing_buffer_and_bad_ir) {
  Graph *g = tiny();
  IrOp *op = make_agg(IR_RED_ADD, false);
  double Y[10];
  double *io[] = {NULL, Y};
  ck_assert_int_eq(run(op, g, 1, 2, INTERP_F64, io), -1);
  expect_error("no buffer given for tensor X");
  ir_diag_free(&D);
  ir_diag_init(&D, NULL);
  /* malformed IR is refused before it is walked */
  op->body->loop.body->loop.of = NULL;
  double *io2[] = {X_tiny, Y};
  ck_assert_int_eq(run(op, g, 1, 2, INTERP_F64, io2), -1);
  ck_assert_msg(strstr(D.buf, "IR verification failed") != NULL, "%s", D.buf);
  graph_free(g);
}
END_TEST

static Suite *suite(void) {
  Suite *s = suite_create("interp");
  TCase *t = tcase_create("tiny");
  tcase_add_checked_fixture(t, setup, teardown);
  tcase_add_test(t, copy_u_sum);
  tcase_add_test(t, u_mul_e_sum);
  tcase_add_test(t, copy_u_max_empty_is_zero);
  tcase_add_test(t, copy_u_min_empty_is_zero);
  tcase_add_test(t, copy_u_mean);
  tcase_add_test(t, mean_by_in_degree);
  tcase_add_test(t, u_dot_v_with_local);
  tcase_add_test(t, u_add_v_edge_output);
  tcase_add_test(t, edge_softmax);
  tcase_add_test(t, scatter_over_out_edges);
  tcase_add_test(t, scatter_over_edges);
  tcase_add_test(t, scheduled_with_guard);
  tcase_add_test(t, max_propagates_nan);
  tcase_add_test(t, f32_rounds_on_store);
  tcase_add_test(t, math_functions);
  tcase_add_test(t, declared_types);
  tcase_add_test(t, tensor_shapes);
  tcase_add_test(t, compiled_from_source);
  suite_add_tcase(s, t);

  TCase *r = tcase_create("real");
  tcase_add_checked_fixture(r, setup, teardown);
  tcase_set_timeout(r, 120);
  tcase_add_test(r, cora_against_dense);
  tcase_add_test(r, citeseer_against_dense);
  suite_add_tcase(s, r);

  TCase *e = tcase_create("errors");
  tcase_add_checked_fixture(e, setup, teardown);
  tcase_add_test(e, error_unbound_extent);
  tcase_add_test(e, error_index_out_of_range);
  tcase_add_test(e, error_int_division_by_zero);
  tcase_add_test(e, error_vertex_and_edge_out_of_range);
  tcase_add_test(e, error_missing_buffer_and_bad_ir);
  suite_add_tcase(s, e);
  return s;
}

int main(void) { return tu_run(suite()); }
