/* tests/unit/cgbuild.h: operators built by hand in their GPU-ready form
 * (docs/gpu-ir.md), as the scheduler would leave them, and the helpers
 * that compile and inspect them: shared by test_codegen.c (PTX, launch
 * rules, ptxas) and test_packs.c (kernel packs). Functions are marked
 * maybe-unused so that a test using some of them does not warn about the
 * rest (not inline: GCC then inlines compile_ok's message into every
 * caller and warns about a NULL it cannot rule out).
 */
#ifndef GOP_TEST_CGBUILD_H
#define GOP_TEST_CGBUILD_H

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "codegen/codegen.h"
#include "testutil.h"

#define MAYBE_UNUSED __attribute__((unused))

/* ---- building GPU-ready IR by hand ---- */

static Arena *A;
static IrOp *OP;
static IrSym *F;

MAYBE_UNUSED static Loc at(int line, int col) { return (Loc){"t.gop", line, col}; }
MAYBE_UNUSED static IrNode *ic(int64_t v) { return ir_iconst(A, at(1, 1), v); }
MAYBE_UNUSED static IrNode *fc(double v) { return ir_fconst(A, at(1, 1), v); }
MAYBE_UNUSED static IrNode *sy(IrSym *s) { return ir_symref(A, at(1, 1), s); }
MAYBE_UNUSED static IrNode *vr(IrVar *v) { return ir_var(A, at(1, 1), v); }
MAYBE_UNUSED static IrNode *bin(IrBinOp op, IrNode *x, IrNode *y) {
  return ir_bin(A, at(1, 1), op, x, y);
}
MAYBE_UNUSED static IrNode *src_of(IrNode *e) { return ir_endpoint(A, at(1, 1), IR_SRC, e); }
MAYBE_UNUSED static IrNode *dst_of(IrNode *e) { return ir_endpoint(A, at(1, 1), IR_DST, e); }
MAYBE_UNUSED static IrNode *call1(IrFn fn, IrNode *x) { return ir_call(A, at(1, 1), fn, 1, &x); }
MAYBE_UNUSED static IrNode *call2(IrFn fn, IrNode *x, IrNode *y) {
  IrNode *args[2] = {x, y};
  return ir_call(A, at(1, 1), fn, 2, args);
}

MAYBE_UNUSED static IrNode *ld(IrTensor *t, int n, ...) {
  IrNode *idx[IR_MAX_IDX];
  va_list ap;
  va_start(ap, n);
  for (int i = 0; i < n; i++) idx[i] = va_arg(ap, IrNode *);
  va_end(ap);
  return ir_load(A, at(1, 1), t, n, idx);
}

MAYBE_UNUSED static IrNode *st_at(Loc loc, IrTensor *t, IrRed red, IrHow how, IrNode *value,
                     int n, ...) {
  IrNode *idx[IR_MAX_IDX];
  va_list ap;
  va_start(ap, n);
  for (int i = 0; i < n; i++) idx[i] = va_arg(ap, IrNode *);
  va_end(ap);
  IrNode *s = ir_store(A, loc, t, n, idx, red, value);
  s->acc.how = how;
  return s;
}
#define st(t, red, how, value, ...)                                      \
  st_at(at(5, 7), t, red, how, value,                                     \
        (int)(sizeof((IrNode *[]){__VA_ARGS__}) / sizeof(IrNode *)), __VA_ARGS__)

MAYBE_UNUSED static IrNode *loop(IrVar *v, IrLoopKind kind, IrNode *extent, IrNode *of,
                    IrBind bind, IrNode *body) {
  IrNode *l = ir_loop(A, at(2, 3), v, kind, extent, of, body);
  l->loop.bind = bind;
  return l;
}

/* Chains statements: seq(a, b, c, NULL). */
MAYBE_UNUSED static IrNode *seq(IrNode *first, ...) {
  IrNode *list = NULL;
  va_list ap;
  va_start(ap, first);
  for (IrNode *s = first; s; s = va_arg(ap, IrNode *)) ir_append(&list, s);
  va_end(ap);
  return list;
}

MAYBE_UNUSED static void begin(const char *name) {
  A = ir_arena_new();
  OP = ir_op_new(A, name, at(1, 1));
  F = ir_op_sym(A, OP, "F", at(1, 1));
}

MAYBE_UNUSED static IrTensor *tensor(const char *name, IrDomain dom, IrRole role,
                        bool features) {
  IrTensor *t = ir_op_add_tensor(A, OP, name, at(1, 1), IR_DT_F32, dom, role);
  if (features) {
    t->ndims = 1;
    t->dims[0].sym = F;
  }
  return t;
}

MAYBE_UNUSED static IrVar *var(const char *name, IrVarKind kind) {
  return ir_op_add_var(A, OP, name, at(1, 1), kind);
}

/* u_mul_e_sum under warp_vertex(T=1): a warp per destination, features
 * split by 32 over lanes with a tail guard, plain +=. */
MAYBE_UNUSED static IrOp *op_warp_vertex(IrHow how, int threads) {
  begin("u_mul_e_sum");
  IrTensor *X = tensor("X", IR_DOM_SRC, IR_ROLE_IN, true);
  IrTensor *W = tensor("W", IR_DOM_EDGE, IR_ROLE_IN, false);
  IrTensor *Y = tensor("Y", IR_DOM_DST, IR_ROLE_OUT, true);
  IrVar *v = var("v", IR_VAR_DST_V), *e = var("e", IR_VAR_EDGE);
  IrVar *fo = var("fo", IR_VAR_INDEX), *fi = var("fi", IR_VAR_INDEX);
  IrNode *f = bin(IR_OP_ADD, bin(IR_OP_MUL, vr(fo), ic(32)), vr(fi));
  IrNode *store = st(Y, IR_RED_ADD, how,
                     bin(IR_OP_MUL, ld(X, 2, src_of(vr(e)), ir_clone(A, f)),
                         ld(W, 1, vr(e))),
                     vr(v), ir_clone(A, f));
  IrNode *guard = ir_if(A, at(4, 5), bin(IR_OP_LT, f, sy(F)), store);
  IrNode *nfo = bin(IR_OP_DIV, bin(IR_OP_ADD, sy(F), ic(31)), ic(32));
  IrNode *l = loop(
      v, IR_LOOP_DST_V, NULL, NULL, IR_BIND_WARP,
      loop(e, IR_LOOP_IN_EDGES, NULL, vr(v), IR_BIND_NONE,
           loop(fo, IR_LOOP_RANGE, nfo, NULL, IR_BIND_NONE,
                loop(fi, IR_LOOP_RANGE, ic(32), NULL, IR_BIND_LANE, guard))));
  l->loop.threads = threads;
  OP->body = l;
  return OP;
}

/* u_mul_e_sum edge-parallel: a thread per edge, atomic +=. */
MAYBE_UNUSED static IrOp *op_edge_atomic(void) {
  begin("u_mul_e_sum_edge");
  IrTensor *X = tensor("X", IR_DOM_SRC, IR_ROLE_IN, true);
  IrTensor *W = tensor("W", IR_DOM_EDGE, IR_ROLE_IN, false);
  IrTensor *Y = tensor("Y", IR_DOM_DST, IR_ROLE_OUT, true);
  IrVar *e = var("e", IR_VAR_EDGE), *f = var("f", IR_VAR_INDEX);
  OP->body = loop(
      e, IR_LOOP_EDGES, NULL, NULL, IR_BIND_THREAD,
      loop(f, IR_LOOP_RANGE, sy(F), NULL, IR_BIND_NONE,
           st(Y, IR_RED_ADD, IR_HOW_ATOMIC,
              bin(IR_OP_MUL, ld(X, 2, src_of(vr(e)), vr(f)), ld(W, 1, vr(e))),
              dst_of(vr(e)), vr(f))));
  return OP;
}

/* copy_u_max (or min) edge-parallel with atomics. */
MAYBE_UNUSED static IrOp *op_minmax_atomic(IrRed red) {
  begin(red == IR_RED_MAX ? "copy_u_max_edge" : "copy_u_min_edge");
  IrTensor *X = tensor("X", IR_DOM_SRC, IR_ROLE_IN, true);
  IrTensor *Y = tensor("Y", IR_DOM_DST, IR_ROLE_OUT, true);
  IrVar *e = var("e", IR_VAR_EDGE), *f = var("f", IR_VAR_INDEX);
  OP->body = loop(e, IR_LOOP_EDGES, NULL, NULL, IR_BIND_THREAD,
                  loop(f, IR_LOOP_RANGE, sy(F), NULL, IR_BIND_NONE,
                       st(Y, red, IR_HOW_ATOMIC, ld(X, 2, src_of(vr(e)), vr(f)),
                          dst_of(vr(e)), vr(f))));
  return OP;
}

/* copy_u_max vertex-parallel: a thread per destination, plain max=. */
MAYBE_UNUSED static IrOp *op_max_plain(void) {
  begin("copy_u_max");
  IrTensor *X = tensor("X", IR_DOM_SRC, IR_ROLE_IN, true);
  IrTensor *Y = tensor("Y", IR_DOM_DST, IR_ROLE_OUT, true);
  IrVar *v = var("v", IR_VAR_DST_V), *e = var("e", IR_VAR_EDGE);
  IrVar *f = var("f", IR_VAR_INDEX);
  OP->body = loop(
      v, IR_LOOP_DST_V, NULL, NULL, IR_BIND_THREAD,
      loop(e, IR_LOOP_IN_EDGES, NULL, vr(v), IR_BIND_NONE,
           loop(f, IR_LOOP_RANGE, sy(F), NULL, IR_BIND_NONE,
                st(Y, IR_RED_MAX, IR_HOW_PLAIN, ld(X, 2, src_of(vr(e)), vr(f)),
                   vr(v), vr(f)))));
  return OP;
}

/* u_dot_v: a warp per destination, a lane per in-edge, the dot product
 * reduced over f in a local. */
MAYBE_UNUSED static IrOp *op_dot(void) {
  begin("u_dot_v");
  IrTensor *X = tensor("X", IR_DOM_SRC, IR_ROLE_IN, true);
  IrTensor *Yt = tensor("Y", IR_DOM_DST, IR_ROLE_IN, true);
  IrTensor *S = tensor("S", IR_DOM_EDGE, IR_ROLE_OUT, false);
  IrVar *v = var("v", IR_VAR_DST_V), *e = var("e", IR_VAR_EDGE);
  IrVar *f = var("f", IR_VAR_INDEX), *s = var("s", IR_VAR_LOCAL);
  IrNode *body = seq(
      ir_let(A, at(3, 7), s, fc(0.0)),
      loop(f, IR_LOOP_RANGE, sy(F), NULL, IR_BIND_NONE,
           ir_set(A, at(4, 9), s, IR_RED_ADD,
                  bin(IR_OP_MUL, ld(X, 2, src_of(vr(e)), vr(f)),
                      ld(Yt, 2, vr(v), vr(f))))),
      st(S, IR_RED_ASSIGN, IR_HOW_AUTO, vr(s), vr(e)), NULL);
  OP->body = loop(v, IR_LOOP_DST_V, NULL, NULL, IR_BIND_WARP,
                  loop(e, IR_LOOP_IN_EDGES, NULL, vr(v), IR_BIND_LANE, body));
  return OP;
}

/* u_dot_v with lanes on features: a warp-shuffle reduction of s, with
 * `how` (AUTO makes codegen refuse it as a plain cross-lane reduction). */
MAYBE_UNUSED static IrOp *op_dot_shuffle_how(IrHow how) {
  begin("u_dot_v_shfl");
  IrTensor *X = tensor("X", IR_DOM_SRC, IR_ROLE_IN, true);
  IrTensor *Yt = tensor("Y", IR_DOM_DST, IR_ROLE_IN, true);
  IrTensor *S = tensor("S", IR_DOM_EDGE, IR_ROLE_OUT, false);
  IrVar *v = var("v", IR_VAR_DST_V), *e = var("e", IR_VAR_EDGE);
  IrVar *f = var("f", IR_VAR_INDEX), *s = var("s", IR_VAR_LOCAL);
  IrNode *set = ir_set(A, at(4, 9), s, IR_RED_ADD,
                       bin(IR_OP_MUL, ld(X, 2, src_of(vr(e)), vr(f)), ld(Yt, 2, vr(v), vr(f))));
  set->set.how = how;
  IrNode *body = seq(ir_let(A, at(3, 7), s, fc(0.0)),
                     loop(f, IR_LOOP_RANGE, sy(F), NULL, IR_BIND_LANE, set),
                     st(S, IR_RED_ASSIGN, IR_HOW_AUTO, vr(s), vr(e)), NULL);
  OP->body = loop(v, IR_LOOP_DST_V, NULL, NULL, IR_BIND_WARP,
                  loop(e, IR_LOOP_IN_EDGES, NULL, vr(v), IR_BIND_NONE, body));
  return OP;
}
MAYBE_UNUSED static IrOp *op_dot_shuffle(void) { return op_dot_shuffle_how(IR_HOW_SHUFFLE); }

/* spmm_vec4's shape: a warp per destination, 4 features per lane in a
 * @vec(4) loop holding a vector accumulator over the in-edges. */
MAYBE_UNUSED static IrOp *op_vec4(void) {
  begin("copy_u_sum_vec4");
  IrTensor *X = tensor("X", IR_DOM_SRC, IR_ROLE_IN, true);
  IrTensor *Y = tensor("Y", IR_DOM_DST, IR_ROLE_OUT, true);
  IrVar *v = var("v", IR_VAR_DST_V), *e = var("e", IR_VAR_EDGE);
  IrVar *fl = var("fl", IR_VAR_INDEX), *fv = var("fv", IR_VAR_INDEX);
  IrVar *acc = var("acc", IR_VAR_LOCAL);
#define FIDX bin(IR_OP_ADD, bin(IR_OP_MUL, vr(fl), ic(4)), vr(fv))
  IrNode *edges = loop(e, IR_LOOP_IN_EDGES, NULL, vr(v), IR_BIND_NONE,
                       ir_set(A, at(6, 9), acc, IR_RED_ADD, ld(X, 2, src_of(vr(e)), FIDX)));
  edges->loop.unroll = 4;
  IrNode *body = seq(ir_let(A, at(5, 7), acc, fc(0.0)), edges,
                     st(Y, IR_RED_ADD, IR_HOW_PLAIN, vr(acc), vr(v), FIDX), NULL);
  IrNode *vl = loop(fv, IR_LOOP_RANGE, ic(4), NULL, IR_BIND_NONE,
                    ir_if(A, at(4, 5), bin(IR_OP_LT, FIDX, sy(F)), body));
#undef FIDX
  vl->loop.vec = 4;
  OP->body = loop(v, IR_LOOP_DST_V, NULL, NULL, IR_BIND_WARP,
                  loop(fl, IR_LOOP_RANGE, ic(32), NULL, IR_BIND_LANE, vl));
  return OP;
}


/* edge_softmax: three stages, a thread per destination, plain reductions
 * into the temporaries M and Z. */
MAYBE_UNUSED static IrOp *op_softmax(void) {
  begin("edge_softmax");
  IrTensor *S = tensor("S", IR_DOM_EDGE, IR_ROLE_IN, false);
  IrTensor *Aout = tensor("A", IR_DOM_EDGE, IR_ROLE_OUT, false);
  IrTensor *M = tensor("M", IR_DOM_DST, IR_ROLE_TEMP, false);
  IrTensor *Z = tensor("Z", IR_DOM_DST, IR_ROLE_TEMP, false);
  IrVar *v[3], *e[3];
  for (int i = 0; i < 3; i++) {
    v[i] = var("v", IR_VAR_DST_V);
    e[i] = var("e", IR_VAR_EDGE);
  }
  IrNode *s1 = st(M, IR_RED_MAX, IR_HOW_PLAIN, ld(S, 1, vr(e[0])), vr(v[0]));
  IrNode *s2 = st(Z, IR_RED_ADD, IR_HOW_PLAIN,
                  call1(IR_FN_EXP, bin(IR_OP_SUB, ld(S, 1, vr(e[1])),
                                       ld(M, 1, vr(v[1])))),
                  vr(v[1]));
  IrNode *s3 = st(Aout, IR_RED_ASSIGN, IR_HOW_AUTO,
                  bin(IR_OP_DIV,
                      call1(IR_FN_EXP, bin(IR_OP_SUB, ld(S, 1, vr(e[2])),
                                           ld(M, 1, vr(v[2])))),
                      ld(Z, 1, vr(v[2]))),
                  vr(e[2]));
  IrNode *stage[3] = {s1, s2, s3};
  OP->body = NULL;
  for (int i = 0; i < 3; i++) {
    IrNode *l = loop(v[i], IR_LOOP_DST_V, NULL, NULL, IR_BIND_THREAD,
                     loop(e[i], IR_LOOP_IN_EDGES, NULL, vr(v[i]), IR_BIND_NONE,
                          stage[i]));
    l->loop.threads = 128;
    ir_append(&OP->body, l);
  }
  return OP;
}

/* Every math function, one output each, a thread per edge; Y is meant to
 * hold positive numbers. */
static const IrFn math_fns[] = {IR_FN_EXP,  IR_FN_LOG,     IR_FN_SQRT,
                                IR_FN_ABS,  IR_FN_RELU,    IR_FN_SIGMOID,
                                IR_FN_TANH, IR_FN_MAX,     IR_FN_MIN,
                                IR_FN_LEAKY_RELU};
#define NMATH (int)(sizeof math_fns / sizeof math_fns[0])

MAYBE_UNUSED static IrOp *op_math(void) {
  begin("math");
  IrTensor *X = tensor("X", IR_DOM_EDGE, IR_ROLE_IN, false);
  IrTensor *Yin = tensor("Y", IR_DOM_EDGE, IR_ROLE_IN, false);
  IrVar *e = var("e", IR_VAR_EDGE);
  IrNode *body = NULL;
  for (int i = 0; i < NMATH; i++) {
    char name[16];
    snprintf(name, sizeof name, "O%d", i);
    IrTensor *O = tensor(name, IR_DOM_EDGE, IR_ROLE_OUT, false);
    IrFn fn = math_fns[i];
    /* log and sqrt of the positive input, the rest of any sign */
    IrNode *x = fn == IR_FN_LOG || fn == IR_FN_SQRT ? ld(Yin, 1, vr(e))
                                                    : ld(X, 1, vr(e));
    IrNode *value = ir_fn_nargs(fn) == 1
                        ? call1(fn, x)
                        : call2(fn, x, fn == IR_FN_LEAKY_RELU ? fc(0.01)
                                                              : ld(Yin, 1, vr(e)));
    ir_append(&body, st(O, IR_RED_ASSIGN, IR_HOW_AUTO, value, vr(e)));
  }
  OP->body = loop(e, IR_LOOP_EDGES, NULL, NULL, IR_BIND_THREAD, body);
  return OP;
}

/* copy_u_sum with a block per destination and its threads over features. */
MAYBE_UNUSED static IrOp *op_block(void) {
  begin("copy_u_sum_block");
  IrTensor *X = tensor("X", IR_DOM_SRC, IR_ROLE_IN, true);
  IrTensor *Y = tensor("Y", IR_DOM_DST, IR_ROLE_OUT, true);
  IrVar *v = var("v", IR_VAR_DST_V), *e = var("e", IR_VAR_EDGE);
  IrVar *f = var("f", IR_VAR_INDEX);
  IrNode *l = loop(
      v, IR_LOOP_DST_V, NULL, NULL, IR_BIND_BLOCK,
      loop(f, IR_LOOP_RANGE, sy(F), NULL, IR_BIND_THREAD,
           loop(e, IR_LOOP_IN_EDGES, NULL, vr(v), IR_BIND_NONE,
                st(Y, IR_RED_ADD, IR_HOW_PLAIN, ld(X, 2, src_of(vr(e)), vr(f)),
                   vr(v), vr(f)))));
  l->loop.threads = 64;
  OP->body = l;
  return OP;
}

/* Nothing bound: the stage runs on one thread. */
MAYBE_UNUSED static IrOp *op_single(void) {
  begin("degrees");
  IrTensor *D = tensor("D", IR_DOM_DST, IR_ROLE_OUT, false);
  IrVar *v = var("v", IR_VAR_DST_V);
  OP->body = loop(
      v, IR_LOOP_DST_V, NULL, NULL, IR_BIND_NONE,
      st(D, IR_RED_ASSIGN, IR_HOW_AUTO,
         bin(IR_OP_ADD, ir_endpoint(A, at(1, 1), IR_INDEG, vr(v)),
             ir_endpoint(A, at(1, 1), IR_OUTDEG, vr(v))),
         vr(v)));
  return OP;
}

/* A bound loop inside a sequential one: its extent is only known inside
 * the kernel, so the launch fills the GPU. */
MAYBE_UNUSED static IrOp *op_fill(void) {
  begin("e_scale");
  IrTensor *X = tensor("X", IR_DOM_SRC, IR_ROLE_IN, false);
  IrTensor *M = tensor("M", IR_DOM_EDGE, IR_ROLE_OUT, false);
  IrVar *v = var("v", IR_VAR_DST_V), *e = var("e", IR_VAR_EDGE);
  OP->body = loop(v, IR_LOOP_DST_V, NULL, NULL, IR_BIND_NONE,
                  loop(e, IR_LOOP_IN_EDGES, NULL, vr(v), IR_BIND_THREAD,
                       st(M, IR_RED_ASSIGN, IR_HOW_AUTO,
                          bin(IR_OP_MUL, ld(X, 1, src_of(vr(e))), fc(2.0)),
                          vr(e))));
  return OP;
}

/* copy_u_sum scattered along out-edges: a warp per source, lanes over its
 * out-edges, atomic += into the destinations. */
MAYBE_UNUSED static IrOp *op_out_edges(void) {
  begin("copy_u_sum_scatter");
  IrTensor *X = tensor("X", IR_DOM_SRC, IR_ROLE_IN, true);
  IrTensor *Y = tensor("Y", IR_DOM_DST, IR_ROLE_OUT, true);
  IrVar *u = var("u", IR_VAR_SRC_V), *e = var("e", IR_VAR_EDGE);
  IrVar *f = var("f", IR_VAR_INDEX);
  OP->body = loop(
      u, IR_LOOP_SRC_V, NULL, NULL, IR_BIND_WARP,
      loop(e, IR_LOOP_OUT_EDGES, NULL, vr(u), IR_BIND_LANE,
           loop(f, IR_LOOP_RANGE, sy(F), NULL, IR_BIND_NONE,
                st(Y, IR_RED_ADD, IR_HOW_ATOMIC, ld(X, 2, vr(u), vr(f)),
                   dst_of(vr(e)), vr(f)))));
  return OP;
}

typedef struct Case {
  const char *name;
  IrOp *(*build)(void);
  bool atomic_add;
} Case;

MAYBE_UNUSED static IrOp *op_warp_vertex_default(void) { return op_warp_vertex(IR_HOW_PLAIN, 128); }
MAYBE_UNUSED static IrOp *op_max_atomic(void) { return op_minmax_atomic(IR_RED_MAX); }
MAYBE_UNUSED static IrOp *op_min_atomic(void) { return op_minmax_atomic(IR_RED_MIN); }

static const Case cases[] = {
    {"warp_vertex", op_warp_vertex_default, false},
    {"edge_atomic", op_edge_atomic, true},
    {"max_atomic", op_max_atomic, false},
    {"min_atomic", op_min_atomic, false},
    {"max_plain", op_max_plain, false},
    {"dot", op_dot, false},
    {"dot_shuffle", op_dot_shuffle, false},
    {"vec4", op_vec4, false},
    {"softmax", op_softmax, false},
    {"math", op_math, false},
    {"block", op_block, false},
    {"single", op_single, false},
    {"fill", op_fill, false},
    {"out_edges", op_out_edges, true},
};
#define NCASES (int)(sizeof cases / sizeof cases[0])

static const char *const test_targets[] = {"sm_80", "sm_90"};

/* Compiles `op` or fails the test with the diagnostics. */
MAYBE_UNUSED static void compile_ok(IrOp *op, const char *target, CgProgram *p) {
  Diag d;
  ir_diag_init(&d, NULL);
  int rc = cg_compile(op, target, p, &d);
  ck_assert_msg(rc == 0, "%s for %s: %s", op->name, target, d.buf ? d.buf : "");
  ck_assert_int_eq(d.nerrors, 0);
  ir_diag_free(&d);
}

/* Fails, showing the PTX on stderr (Check messages are short), unless
 * `ok`. */
MAYBE_UNUSED static void ptx_check(bool ok, const char *ptx, const char *what) {
  if (!ok) fprintf(stderr, "---- PTX ----\n%s\n---- end ----\n", ptx);
  ck_assert_msg(ok, "%s", what);
}

MAYBE_UNUSED static int count(const char *hay, const char *needle) {
  int n = 0;
  for (const char *p = hay; (p = strstr(p, needle)); p += strlen(needle)) n++;
  return n;
}

#endif
