/* tests/unit/test_codegen.c: code generation to PTX, and kernel packs.
 *
 * The operators are built by hand in their GPU-ready form (docs/gpu-ir.md),
 * as the scheduler would leave them, so these tests do not depend on the
 * front end or the passes. Each is compiled for sm_80 and sm_90 and the PTX
 * is checked for what makes the kernels right and fast (entries, .maxntid,
 * read-only loads, float atomics, no local memory). The `ptxas` case
 * assembles every kernel with the CUDA toolkit's ptxas (-v) and fails on
 * assembler errors and on spills; CI has the toolkit, so a missing ptxas
 * fails unless GOP_SKIP_PTXAS=1.
 */
#define _GNU_SOURCE
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "codegen/codegen.h"
#include "testutil.h"

/* ---- building GPU-ready IR by hand ---- */

static Arena *A;
static IrOp *OP;
static IrSym *F;

static Loc at(int line, int col) { return (Loc){"t.gop", line, col}; }
static IrNode *ic(int64_t v) { return ir_iconst(A, at(1, 1), v); }
static IrNode *fc(double v) { return ir_fconst(A, at(1, 1), v); }
static IrNode *sy(IrSym *s) { return ir_symref(A, at(1, 1), s); }
static IrNode *vr(IrVar *v) { return ir_var(A, at(1, 1), v); }
static IrNode *bin(IrBinOp op, IrNode *x, IrNode *y) {
  return ir_bin(A, at(1, 1), op, x, y);
}
static IrNode *src_of(IrNode *e) { return ir_endpoint(A, at(1, 1), IR_SRC, e); }
static IrNode *dst_of(IrNode *e) { return ir_endpoint(A, at(1, 1), IR_DST, e); }
static IrNode *call1(IrFn fn, IrNode *x) { return ir_call(A, at(1, 1), fn, 1, &x); }
static IrNode *call2(IrFn fn, IrNode *x, IrNode *y) {
  IrNode *args[2] = {x, y};
  return ir_call(A, at(1, 1), fn, 2, args);
}

static IrNode *ld(IrTensor *t, int n, ...) {
  IrNode *idx[IR_MAX_IDX];
  va_list ap;
  va_start(ap, n);
  for (int i = 0; i < n; i++) idx[i] = va_arg(ap, IrNode *);
  va_end(ap);
  return ir_load(A, at(1, 1), t, n, idx);
}

static IrNode *st_at(Loc loc, IrTensor *t, IrRed red, IrHow how, IrNode *value,
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

static IrNode *loop(IrVar *v, IrLoopKind kind, IrNode *extent, IrNode *of,
                    IrBind bind, IrNode *body) {
  IrNode *l = ir_loop(A, at(2, 3), v, kind, extent, of, body);
  l->loop.bind = bind;
  return l;
}

/* Chains statements: seq(a, b, c, NULL). */
static IrNode *seq(IrNode *first, ...) {
  IrNode *list = NULL;
  va_list ap;
  va_start(ap, first);
  for (IrNode *s = first; s; s = va_arg(ap, IrNode *)) ir_append(&list, s);
  va_end(ap);
  return list;
}

static void begin(const char *name) {
  A = ir_arena_new();
  OP = ir_op_new(A, name, at(1, 1));
  F = ir_op_sym(A, OP, "F", at(1, 1));
}

static IrTensor *tensor(const char *name, IrDomain dom, IrRole role,
                        bool features) {
  IrTensor *t = ir_op_add_tensor(A, OP, name, at(1, 1), IR_DT_F32, dom, role);
  if (features) {
    t->ndims = 1;
    t->dims[0].sym = F;
  }
  return t;
}

static IrVar *var(const char *name, IrVarKind kind) {
  return ir_op_add_var(A, OP, name, at(1, 1), kind);
}

/* u_mul_e_sum under warp_vertex(T=1): a warp per destination, features
 * split by 32 over lanes with a tail guard, plain +=. */
static IrOp *op_warp_vertex(IrHow how, int threads) {
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
static IrOp *op_edge_atomic(void) {
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
static IrOp *op_minmax_atomic(IrRed red) {
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
static IrOp *op_max_plain(void) {
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
static IrOp *op_dot(void) {
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
static IrOp *op_dot_shuffle_how(IrHow how) {
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
static IrOp *op_dot_shuffle(void) { return op_dot_shuffle_how(IR_HOW_SHUFFLE); }

/* spmm_vec4's shape: a warp per destination, 4 features per lane in a
 * @vec(4) loop holding a vector accumulator over the in-edges. */
static IrOp *op_vec4(void) {
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
static IrOp *op_softmax(void) {
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

static IrOp *op_math(void) {
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
static IrOp *op_block(void) {
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
static IrOp *op_single(void) {
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
static IrOp *op_fill(void) {
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
static IrOp *op_out_edges(void) {
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

static IrOp *op_warp_vertex_default(void) { return op_warp_vertex(IR_HOW_PLAIN, 128); }
static IrOp *op_max_atomic(void) { return op_minmax_atomic(IR_RED_MAX); }
static IrOp *op_min_atomic(void) { return op_minmax_atomic(IR_RED_MIN); }

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
static void compile_ok(IrOp *op, const char *target, CgProgram *p) {
  Diag d;
  ir_diag_init(&d, NULL);
  int rc = cg_compile(op, target, p, &d);
  ck_assert_msg(rc == 0, "%s for %s: %s", op->name, target, d.buf ? d.buf : "");
  ck_assert_int_eq(d.nerrors, 0);
  ir_diag_free(&d);
}

/* Fails, showing the PTX on stderr (Check messages are short), unless
 * `ok`. */
static void ptx_check(bool ok, const char *ptx, const char *what) {
  if (!ok) fprintf(stderr, "---- PTX ----\n%s\n---- end ----\n", ptx);
  ck_assert_msg(ok, "%s", what);
}

static int count(const char *hay, const char *needle) {
  int n = 0;
  for (const char *p = hay; (p = strstr(p, needle)); p += strlen(needle)) n++;
  return n;
}

/* ---- PTX content ---- */

START_TEST(test_ptx_content) {
  const Case *c = &cases[_i / 2];
  const char *target = test_targets[_i % 2];
  IrOp *op = c->build();
  CgProgram p;
  compile_ok(op, target, &p);
  int nstages = 0;
  for (IrNode *s = op->body; s; s = s->next) nstages++;
  ck_assert_int_eq(p.nkernels, nstages);
  ck_assert_int_eq(count(p.ptx, ".entry"), nstages);
  ck_assert_int_eq(count(p.ptx, ".maxntid"), nstages);
  ck_assert_int_eq(count(p.ptx, ".minnctapersm"), nstages);
  char want[64];
  snprintf(want, sizeof want, ".target %s", target);
  ck_assert_msg(strstr(p.ptx, want), "%s: no `%s`", c->name, want);
  for (int i = 0; i < p.nkernels; i++) {
    char entry[128];
    snprintf(entry, sizeof entry, ".entry %s", p.kernels[i].name);
    ck_assert_msg(strstr(p.ptx, entry), "%s: no `%s`", c->name, entry);
  }
  ptx_check(strstr(p.ptx, "ld.global.nc"), p.ptx,
            "inputs not read through the read-only path (ld.global.nc)");
  ptx_check(!strstr(p.ptx, ".local"), p.ptx, "local memory used");
  if (c->atomic_add)
    ptx_check(strstr(p.ptx, "atom.global.add.f32"), p.ptx,
              "no atom.global.add.f32");
  ck_assert(p.times.build_ms >= 0 && p.times.opt_ms >= 0 && p.times.emit_ms >= 0);
  ck_assert_ptr_nonnull(p.ir);
  cg_program_free(&p);
  ir_arena_free(A);
}
END_TEST

START_TEST(test_atomic_minmax_ptx) {
  CgProgram p;
  compile_ok(op_minmax_atomic(IR_RED_MAX), "sm_80", &p);
  ptx_check(strstr(p.ptx, "atom.global.max.s32"), p.ptx, "no atom.global.max.s32");
  ptx_check(strstr(p.ptx, "atom.global.min.u32"), p.ptx, "no atom.global.min.u32");
  ptx_check(!strstr(p.ptx, "atom.global.cas"), p.ptx, "unexpected atom.global.cas");
  cg_program_free(&p);
  ir_arena_free(A);
  compile_ok(op_minmax_atomic(IR_RED_MIN), "sm_90", &p);
  ptx_check(strstr(p.ptx, "atom.global.min.s32"), p.ptx, "no atom.global.min.s32");
  ptx_check(strstr(p.ptx, "atom.global.max.u32"), p.ptx, "no atom.global.max.u32");
  cg_program_free(&p);
  ir_arena_free(A);
}
END_TEST

START_TEST(test_fmuladd_and_no_approx_div) {
  CgProgram p;
  compile_ok(op_dot(), "sm_90", &p);
  ptx_check(strstr(p.ptx, "fma.rn.f32"), p.ptx, "dot product not fused (fma.rn.f32)");
  cg_program_free(&p);
  ir_arena_free(A);
  compile_ok(op_softmax(), "sm_90", &p);
  ptx_check(strstr(p.ptx, "ex2.approx.f32"), p.ptx, "no ex2.approx.f32");
  ptx_check(strstr(p.ptx, "div.rn.f32"), p.ptx, "IEEE division (div.rn.f32) expected");
  ptx_check(!strstr(p.ptx, ".ftz"), p.ptx, "no flush-to-zero expected");
  cg_program_free(&p);
  ir_arena_free(A);
}
END_TEST

/* ---- parameters and launch rules ---- */

static bool has_param(const CgKernel *k, CgParamKind kind) {
  for (int i = 0; i < k->nparams; i++)
    if (k->params[i].kind == kind) return true;
  return false;
}

START_TEST(test_params_and_launch) {
  CgProgram p;
  IrOp *op = op_warp_vertex(IR_HOW_PLAIN, 128);
  compile_ok(op, NULL, &p);
  ck_assert_str_eq(p.target, "sm_90");
  ck_assert_str_eq(p.op, "u_mul_e_sum");
  const CgKernel *k = &p.kernels[0];
  ck_assert_str_eq(k->name, "u_mul_e_sum_s0");
  ck_assert_int_eq(k->threads, 128);
  /* tensors first (X, W, Y), then in_ptr, in_eid (W[e]), in_src (src(e)),
   * |V| and F; no COO arrays */
  ck_assert_int_eq(k->nparams, 8);
  for (int i = 0; i < 3; i++) {
    ck_assert_int_eq(k->params[i].kind, CG_PARAM_TENSOR);
    ck_assert_int_eq(k->params[i].id, i);
  }
  ck_assert_int_eq(k->params[3].kind, CG_PARAM_IN_PTR);
  ck_assert_int_eq(k->params[4].kind, CG_PARAM_IN_EID);
  ck_assert_int_eq(k->params[5].kind, CG_PARAM_IN_SRC);
  ck_assert_int_eq(k->params[6].kind, CG_PARAM_NV);
  ck_assert_int_eq(k->params[7].kind, CG_PARAM_SYM);
  ck_assert(!has_param(k, CG_PARAM_SRC) && !has_param(k, CG_PARAM_DST));
  ck_assert_int_eq(k->launch.kind, CG_LAUNCH_EXTENT);
  ck_assert_int_eq(k->launch.bind, IR_BIND_WARP);
  ck_assert_int_eq(k->launch.per_block, 4);
  int64_t blocks, syms[1] = {64};
  ck_assert_int_eq(cg_launch_blocks(k, 1001, 5000, syms, 1, 99, &blocks, NULL), 0);
  ck_assert_int_eq(blocks, 251); /* ceil(1001 / 4) */
  ck_assert_int_eq(p.ntensors, 3);
  ck_assert_int_eq(p.tensors[2].red, IR_RED_ADD);
  ck_assert_int_eq(p.tensors[0].sym_id[0], 0);
  cg_program_free(&p);
  ir_arena_free(A);

  compile_ok(op_edge_atomic(), "sm_86", &p);
  k = &p.kernels[0];
  ck_assert(has_param(k, CG_PARAM_SRC) && has_param(k, CG_PARAM_DST) &&
            has_param(k, CG_PARAM_NE) && !has_param(k, CG_PARAM_IN_PTR));
  ck_assert_int_eq(k->threads, 256);
  ck_assert_int_eq(k->launch.bind, IR_BIND_THREAD);
  ck_assert_int_eq(k->launch.per_block, 256);
  ck_assert_int_eq(k->launch.extent.n, 1);
  ck_assert_int_eq(k->launch.extent.tok[0].kind, CG_TOK_NE);
  cg_program_free(&p);
  ir_arena_free(A);

  compile_ok(op_dot(), "sm_89", &p);
  k = &p.kernels[0];
  /* S[e] needs in_eid; src(e) in_src; dst(e) of in_edges is v */
  ck_assert(has_param(k, CG_PARAM_IN_EID) && has_param(k, CG_PARAM_IN_SRC));
  cg_program_free(&p);
  ir_arena_free(A);

  compile_ok(op_softmax(), "sm_80", &p);
  ck_assert_int_eq(p.nkernels, 3);
  ck_assert_str_eq(p.kernels[2].name, "edge_softmax_s2");
  ck_assert_int_eq(p.kernels[1].stage, 1);
  ck_assert_int_eq(p.tensors[2].red, IR_RED_MAX);
  ck_assert_int_eq(p.tensors[3].red, IR_RED_ADD);
  ck_assert_int_eq(p.tensors[1].red, IR_RED_ASSIGN);
  /* the first stage reads S[e]: in_eid, not in_src */
  ck_assert(has_param(&p.kernels[0], CG_PARAM_IN_EID));
  ck_assert(!has_param(&p.kernels[0], CG_PARAM_IN_SRC));
  cg_program_free(&p);
  ir_arena_free(A);

  compile_ok(op_block(), "sm_90", &p);
  k = &p.kernels[0];
  ck_assert_int_eq(k->threads, 64);
  ck_assert_int_eq(k->launch.bind, IR_BIND_BLOCK);
  ck_assert_int_eq(k->launch.per_block, 1);
  cg_program_free(&p);
  ir_arena_free(A);

  compile_ok(op_single(), "sm_90", &p);
  k = &p.kernels[0];
  ck_assert_int_eq(k->launch.kind, CG_LAUNCH_ONE);
  ck_assert_int_eq(k->threads, 32);
  ck_assert(has_param(k, CG_PARAM_IN_PTR) && has_param(k, CG_PARAM_OUT_PTR));
  ck_assert_int_eq(cg_launch_blocks(k, 10, 10, NULL, 0, 99, &blocks, NULL), 0);
  ck_assert_int_eq(blocks, 1);
  cg_program_free(&p);
  ir_arena_free(A);

  compile_ok(op_fill(), "sm_90", &p);
  k = &p.kernels[0];
  ck_assert_int_eq(k->launch.kind, CG_LAUNCH_FILL);
  ck_assert_int_eq(cg_launch_blocks(k, 10, 10, NULL, 0, 99, &blocks, NULL), 0);
  ck_assert_int_eq(blocks, 99);
  cg_program_free(&p);
  ir_arena_free(A);

  compile_ok(op_out_edges(), "sm_90", &p);
  k = &p.kernels[0];
  ck_assert(has_param(k, CG_PARAM_OUT_PTR) && has_param(k, CG_PARAM_OUT_DST));
  ck_assert(!has_param(k, CG_PARAM_OUT_EID) && !has_param(k, CG_PARAM_DST));
  cg_program_free(&p);
  ir_arena_free(A);
}
END_TEST

START_TEST(test_range_launch_extent) {
  /* a feature-parallel stage: its launch extent is (F + 31) / 32 */
  begin("fill_rows");
  IrTensor *Y = tensor("Y", IR_DOM_DENSE, IR_ROLE_OUT, true);
  IrVar *i = var("i", IR_VAR_INDEX);
  IrNode *n = bin(IR_OP_DIV, bin(IR_OP_ADD, sy(F), ic(31)), ic(32));
  OP->body = loop(i, IR_LOOP_RANGE, n, NULL, IR_BIND_WARP,
                  st(Y, IR_RED_ASSIGN, IR_HOW_AUTO, fc(1.0), vr(i)));
  CgProgram p;
  compile_ok(OP, "sm_90", &p);
  const CgKernel *k = &p.kernels[0];
  ck_assert_int_eq(k->launch.kind, CG_LAUNCH_EXTENT);
  ck_assert_int_eq(k->launch.extent.n, 5);
  int64_t syms[1] = {4000}, blocks;
  ck_assert_int_eq(cg_launch_blocks(k, 0, 0, syms, 1, 1, &blocks, NULL), 0);
  ck_assert_int_eq(blocks, 16); /* 125 warps, 8 per block */
  Diag d;
  ir_diag_init(&d, NULL);
  ck_assert_int_eq(cg_launch_blocks(k, 0, 0, NULL, 0, 1, &blocks, &d), -1);
  ck_assert_ptr_nonnull(strstr(d.buf, "cannot evaluate the extent"));
  ir_diag_free(&d);
  cg_program_free(&p);
  ir_arena_free(A);
}
END_TEST

/* ---- refusals ---- */

static char *compile_err(IrOp *op, const char *target) {
  Diag d;
  ir_diag_init(&d, NULL);
  CgProgram p;
  int rc = cg_compile(op, target, &p, &d);
  ck_assert_int_eq(rc, -1);
  ck_assert_int_ge(d.nerrors, 1);
  ck_assert_ptr_null(p.ptx);
  ck_assert_int_eq(p.nkernels, 0);
  char *msg = strdup(d.buf);
  ir_diag_free(&d);
  return msg;
}

START_TEST(test_unknown_target) {
  char *msg = compile_err(op_edge_atomic(), "sm_75");
  ck_assert_str_eq(msg, "error: unknown target sm_75: gop targets sm_80, "
                        "sm_86, sm_89, sm_90\n");
  free(msg);
  ir_arena_free(A);
  msg = compile_err(op_edge_atomic(), "sm_90a");
  ck_assert_ptr_nonnull(strstr(msg, "unknown target sm_90a"));
  free(msg);
  Diag d;
  ir_diag_init(&d, NULL);
  ck_assert_ptr_null(cg_emit_llvm(OP, "compute_90", true, &d));
  ck_assert_ptr_nonnull(strstr(d.buf, "unknown target compute_90"));
  ir_diag_free(&d);
  ck_assert(cg_target_known("sm_86") && !cg_target_known("sm_70") &&
            !cg_target_known(NULL));
  ir_arena_free(A);
}
END_TEST

START_TEST(test_auto_refused) {
  char *msg = compile_err(op_warp_vertex(IR_HOW_AUTO, 0), "sm_90");
  ck_assert_msg(strstr(msg, "t.gop:5:7: error: reduction `Y[...] += ...` is "
                            "neither plain nor atomic (auto)"),
                "%s", msg);
  ck_assert_ptr_nonnull(strstr(msg, "write-conflict analysis"));
  free(msg);
  ir_arena_free(A);
  /* an atomic max= whose strategy is still auto */
  IrOp *op = op_minmax_atomic(IR_RED_MAX);
  op->body->loop.body->loop.body->acc.how = IR_HOW_AUTO;
  msg = compile_err(op, "sm_80");
  ck_assert_ptr_nonnull(strstr(msg, "`Y[...] max= ...` is neither plain"));
  free(msg);
  ir_arena_free(A);
}
END_TEST

START_TEST(test_bad_ir_refused) {
  /* mean= must have been lowered */
  IrOp *op = op_edge_atomic();
  op->body->loop.body->loop.body->acc.red = IR_RED_MEAN;
  char *msg = compile_err(op, "sm_90");
  ck_assert_msg(strstr(msg, "t.gop:5:7: error: `Y[...] mean= ...` reached code "
                            "generation"), "%s", msg);
  free(msg);
  ir_arena_free(A);
  /* a @lane loop outside a @warp loop */
  op = op_warp_vertex(IR_HOW_PLAIN, 0);
  op->body->loop.bind = IR_BIND_THREAD;
  msg = compile_err(op, "sm_90");
  ck_assert_msg(strstr(msg, "t.gop:2:3: error: loop 'fi' is bound to @lane "
                            "outside a @warp loop"), "%s", msg);
  free(msg);
  ir_arena_free(A);
  /* nested @warp loops */
  op = op_warp_vertex(IR_HOW_PLAIN, 0);
  op->body->loop.body->loop.bind = IR_BIND_WARP;
  msg = compile_err(op, "sm_90");
  ck_assert_msg(strstr(msg, "loop 'e' is bound to @warp inside a @warp loop"),
                "%s", msg);
  free(msg);
  ir_arena_free(A);
  /* a bad block size */
  op = op_warp_vertex(IR_HOW_PLAIN, 100);
  msg = compile_err(op, "sm_90");
  ck_assert_msg(strstr(msg, "@threads(100): threads per block must be a "
                            "multiple of 32"), "%s", msg);
  free(msg);
  ir_arena_free(A);
  /* a local reduced across lanes: the dot product with f bound to lanes */
  op = op_dot();
  op->body->loop.body->loop.bind = IR_BIND_NONE;              /* e */
  op->body->loop.body->loop.body->next->loop.bind = IR_BIND_LANE; /* f */
  msg = compile_err(op, "sm_90");
  ck_assert_msg(strstr(msg, "t.gop:4:9: error: `s += ...` reduces into local "
                            "'s' from inside a bound loop"), "%s", msg);
  free(msg);
  ir_arena_free(A);
  /* an atomic into a 16-bit output would round every addition */
  op = op_edge_atomic();
  op->tensors[2]->dtype = IR_DT_BF16;
  msg = compile_err(op, "sm_90");
  ck_assert_msg(strstr(msg, "atomic `Y[...] +=` into a bf16 tensor: a 16-bit atomic "
                            "would round every addition"), "%s", msg);
  free(msg);
  ir_arena_free(A);
  /* integer tensors are not values */
  op = op_edge_atomic();
  op->tensors[0]->dtype = IR_DT_I32;
  msg = compile_err(op, "sm_90");
  ck_assert_msg(strstr(msg, "tensor 'X' is i32: only float tensors"), "%s", msg);
  free(msg);
  ir_arena_free(A);
}
END_TEST

/* 16-bit and f64 tensors: what the loads, stores and atomics become. */
START_TEST(test_dtypes) {
  /* bf16 X, W and Y: 16-bit loads, the store rounded in integers (the
   * +0x7fff of round-to-nearest-even), math in f32 */
  IrOp *op = op_warp_vertex(IR_HOW_PLAIN, 128);
  for (int i = 0; i < 3; i++) op->tensors[i]->dtype = IR_DT_BF16;
  CgProgram p;
  compile_ok(op, "sm_90", &p);
  ptx_check(strstr(p.ptx, "ld.global.nc.u16") && strstr(p.ptx, "st.global.u16") &&
                strstr(p.ptx, "32767") && strstr(p.ptx, "fma.rn.f32"),
            p.ptx, "bf16 loads, a rounded 16-bit store, f32 math");
  cg_program_free(&p);
  ir_arena_free(A);
  /* f16: cvt between f16 and f32 */
  op = op_warp_vertex(IR_HOW_PLAIN, 128);
  for (int i = 0; i < 3; i++) op->tensors[i]->dtype = IR_DT_F16;
  compile_ok(op, "sm_90", &p);
  ptx_check(strstr(p.ptx, "cvt.f32.f16") && strstr(p.ptx, "cvt.rn.f16.f32"), p.ptx,
            "f16 conversions");
  cg_program_free(&p);
  ir_arena_free(A);
  /* f64 with an f64 accumulator: f64 loads, math and atomics */
  op = op_edge_atomic();
  for (int i = 0; i < 3; i++) op->tensors[i]->dtype = IR_DT_F64;
  op->acc = IR_DT_F64;
  compile_ok(op, "sm_90", &p);
  ptx_check(strstr(p.ptx, "ld.global.nc.f64") && strstr(p.ptx, "mul.rn.f64") &&
                strstr(p.ptx, "atom.global.add.f64"),
            p.ptx, "f64 loads, multiply and atomic add");
  cg_program_free(&p);
  ir_arena_free(A);
  op = op_minmax_atomic(IR_RED_MAX);
  for (int i = 0; i < 2; i++) op->tensors[i]->dtype = IR_DT_F64;
  op->acc = IR_DT_F64;
  compile_ok(op, "sm_90", &p);
  ptx_check(strstr(p.ptx, "atom.global.max.s64") && strstr(p.ptx, "atom.global.min.u64"),
            p.ptx, "f64 max as 64-bit integer atomics");
  cg_program_free(&p);
  ir_arena_free(A);
}
END_TEST

START_TEST(test_emit_llvm) {
  IrOp *op = op_warp_vertex(IR_HOW_PLAIN, 128);
  Diag d;
  ir_diag_init(&d, NULL);
  char *raw = cg_emit_llvm(op, "sm_80", false, &d);
  char *opt = cg_emit_llvm(op, "sm_80", true, &d);
  ck_assert_msg(raw && opt, "%s", d.buf ? d.buf : "");
  ck_assert_ptr_nonnull(strstr(raw, "define void @u_mul_e_sum_s0(ptr addrspace(1) noalias nocapture readonly align 16 %X"));
  ck_assert_ptr_nonnull(strstr(raw, "!\"maxntidx\", i32 128"));
  ck_assert_ptr_nonnull(strstr(raw, "!\"minctasm\", i32 8"));
  ck_assert_ptr_nonnull(strstr(raw, "!invariant.load"));
  ck_assert_ptr_nonnull(strstr(raw, "llvm.nvvm.read.ptx.sreg.tid.x"));
  ck_assert_ptr_nonnull(strstr(opt, "target triple = \"nvptx64-nvidia-cuda\""));
  ck_assert_ptr_null(strstr(opt, "gop.full"));
  free(raw);
  free(opt);
  ir_diag_free(&d);
  ir_arena_free(A);
}
END_TEST

/* A vector loop's scalar fallback (codegen/vector.c): where its body is a
 * split's guard `a + fv < b`, lanes whose guard fails at fv = 0 skip the
 * fallback at once (the block vec.scalar.run) instead of testing the guard
 * on every trip. */
START_TEST(test_vector_fallback_skip) {
  Diag d;
  ir_diag_init(&d, NULL);
  char *ll = cg_emit_llvm(op_vec4(), "sm_90", false, &d);
  ck_assert_msg(ll, "%s", d.buf ? d.buf : "");
  ck_assert_msg(strstr(ll, "vec.scalar.run"), "lanes past F do not skip the scalar fallback");
  free(ll);
  ir_arena_free(A);
  ir_diag_free(&d);
}
END_TEST

/* ---- kernel packs ---- */

static void assert_same_program(const CgProgram *a, const CgProgram *b) {
  ck_assert_str_eq(a->op, b->op);
  ck_assert_int_eq(cg_program_index_bits(a), cg_program_index_bits(b));
  ck_assert_str_eq(a->target, b->target);
  ck_assert_uint_eq(a->ptx_len, b->ptx_len);
  ck_assert_str_eq(a->ptx, b->ptx);
  ck_assert_str_eq(a->ir, b->ir);
  ck_assert_int_eq(a->nsyms, b->nsyms);
  for (int i = 0; i < a->nsyms; i++) ck_assert_str_eq(a->syms[i], b->syms[i]);
  ck_assert_int_eq(a->ntensors, b->ntensors);
  for (int i = 0; i < a->ntensors; i++) {
    const CgTensorInfo *x = &a->tensors[i], *y = &b->tensors[i];
    ck_assert_str_eq(x->name, y->name);
    ck_assert_int_eq(x->role, y->role);
    ck_assert_int_eq(x->domain, y->domain);
    ck_assert_int_eq(x->dtype, y->dtype);
    ck_assert_int_eq(x->red, y->red);
    ck_assert_int_eq(x->filled, y->filled);
    ck_assert_int_eq(x->ndims, y->ndims);
    for (int j = 0; j < x->ndims; j++) {
      ck_assert_int_eq(x->sym_id[j], y->sym_id[j]);
      if (x->sym_id[j] < 0) ck_assert_int_eq(x->dims[j].value, y->dims[j].value);
    }
  }
  ck_assert_int_eq(a->nkernels, b->nkernels);
  for (int i = 0; i < a->nkernels; i++) {
    const CgKernel *x = &a->kernels[i], *y = &b->kernels[i];
    ck_assert_str_eq(x->name, y->name);
    ck_assert_int_eq(x->stage, y->stage);
    ck_assert_int_eq(x->threads, y->threads);
    ck_assert_int_eq(x->nparams, y->nparams);
    for (int j = 0; j < x->nparams; j++) {
      ck_assert_int_eq(x->params[j].kind, y->params[j].kind);
      ck_assert_int_eq(x->params[j].id, y->params[j].id);
    }
    ck_assert_int_eq(x->launch.kind, y->launch.kind);
    if (x->launch.kind == CG_LAUNCH_ONE) continue;
    ck_assert_int_eq(x->launch.bind, y->launch.bind);
    ck_assert_int_eq(x->launch.per_block, y->launch.per_block);
    ck_assert_int_eq(x->launch.extent.n, y->launch.extent.n);
    for (int j = 0; j < x->launch.extent.n; j++) {
      ck_assert_int_eq(x->launch.extent.tok[j].kind, y->launch.extent.tok[j].kind);
      ck_assert_int_eq(x->launch.extent.tok[j].value, y->launch.extent.tok[j].value);
    }
  }
}

START_TEST(test_pack_round_trip) {
  IrOp *(*builders[])(void) = {op_softmax, op_warp_vertex_default, op_single,
                                op_fill, op_block};
  for (size_t b = 0; b < sizeof builders / sizeof builders[0]; b++) {
    CgProgram p, q;
    compile_ok(builders[b](), "sm_86", &p);
    char path[512];
    snprintf(path, sizeof path, "%s/k%zu.pack", tu_tmpdir(), b);
    Diag d;
    ir_diag_init(&d, NULL);
    ck_assert_msg(cg_pack_write(&p, path, &d) == 0, "%s", d.buf);
    ck_assert_msg(cg_pack_read(path, &q, &d) == 0, "%s", d.buf);
    assert_same_program(&p, &q);
    /* written again, the file is the same byte for byte */
    char path2[520];
    snprintf(path2, sizeof path2, "%s.again", path);
    ck_assert_int_eq(cg_pack_write(&q, path2, &d), 0);
    char *t1 = tu_read_file(path, NULL), *t2 = tu_read_file(path2, NULL);
    ck_assert_str_eq(t1, t2);
    free(t1);
    free(t2);
    ir_diag_free(&d);
    cg_program_free(&p);
    cg_program_free(&q);
    ck_assert_ptr_null(q.ptx);
    ir_arena_free(A);
  }
}
END_TEST

/* Reads `text` as a pack and returns the diagnostics (malloc'ed). */
static char *pack_err(const char *text) {
  const char *path = tu_write("bad.pack", text);
  CgProgram q;
  Diag d;
  ir_diag_init(&d, NULL);
  ck_assert_int_eq(cg_pack_read(path, &q, &d), -1);
  ck_assert_ptr_null(q.ptx);
  ck_assert_ptr_null(q.kernels);
  char *msg = strdup(strstr(d.buf, "bad.pack") ? strstr(d.buf, "bad.pack") : d.buf);
  ir_diag_free(&d);
  return msg;
}

/* `text` with the first `from` replaced by `to` (malloc'ed). */
static char *replace(const char *text, const char *from, const char *to) {
  const char *p = strstr(text, from);
  ck_assert_msg(p != NULL, "'%s' not in the pack", from);
  size_t n = strlen(text) - strlen(from) + strlen(to) + 1;
  char *out = malloc(n);
  snprintf(out, n, "%.*s%s%s", (int)(p - text), text, to, p + strlen(from));
  return out;
}

/* Removes a pack's `sum` line: the tests below edit packs by hand, and a
 * pack without one reads as packs did before there was one. */
static char *drop_sum(char *text) {
  char *s = strstr(text, "\nsum ");
  if (s) {
    char *e = strchr(s + 1, '\n');
    memmove(s, e, strlen(e) + 1);
  }
  return text;
}

static void expect_pack_err(const char *good, const char *from, const char *to,
                            const char *want) {
  char *bad = replace(good, from, to);
  char *msg = pack_err(bad);
  ck_assert_msg(strstr(msg, want), "replacing '%s' by '%s': expected '%s', got '%s'",
                from, to, want, msg);
  free(msg);
  free(bad);
}

START_TEST(test_pack_malformed) {
  CgProgram p;
  compile_ok(op_warp_vertex(IR_HOW_PLAIN, 128), "sm_90", &p);
  char path[512];
  snprintf(path, sizeof path, "%s/good.pack", tu_tmpdir());
  ck_assert_int_eq(cg_pack_write(&p, path, NULL), 0);
  char *good = tu_read_file(path, NULL);
  cg_program_free(&p);
  ir_arena_free(A);
  /* the checksum: a changed byte anywhere before it is refused, and so is
   * a line slipped in between it and `end` */
  ck_assert_ptr_nonnull(strstr(good, "\nsum "));
  {
    char *flipped = strdup(good);
    char *ptx = strstr(flipped, ".entry");
    ck_assert_ptr_nonnull(ptx);
    ptx[1] = 'E';
    char *msg = pack_err(flipped);
    ck_assert_msg(strstr(msg, "checksum does not match its contents"), "%s", msg);
    free(msg);
    free(flipped);
    char *late = replace(good, "\nend\n", "\ntimes 0 0 0\nend\n");
    msg = pack_err(late);
    ck_assert_msg(strstr(msg, "after the `sum` line"), "%s", msg);
    free(msg);
    free(late);
  }
  drop_sum(good);

  char *msg = pack_err("");
  ck_assert_msg(strstr(msg, "bad.pack:1: error: empty file"), "%s", msg);
  free(msg);
  msg = pack_err("hello\n");
  ck_assert_msg(strstr(msg, "bad.pack:1: error: not a gop kernel pack"), "%s", msg);
  free(msg);
  expect_pack_err(good, "gop-pack 1", "gop-pack 2",
                  "bad.pack:1: error: unsupported kernel pack version '2'");
  expect_pack_err(good, "target sm_90", "target sm_75",
                  "bad.pack:3: error: unknown target sm_75");
  expect_pack_err(good, "param in_eid", "param in_eids",
                  "error: unknown parameter kind 'in_eids'");
  expect_pack_err(good, "param tensor 2", "param tensor 7",
                  "error: bad tensor id '7'");
  expect_pack_err(good, "launch extent warp 4 nv", "launch extent warp 4 nv +",
                  "error: extent: operator '+' lacks operands");
  expect_pack_err(good, "launch extent warp 4 nv", "launch sideways",
                  "error: unknown launch rule 'sideways'");
  expect_pack_err(good, "kernel u_mul_e_sum_s0 0 128 8",
                  "kernel u_mul_e_sum_s0 0 100 8",
                  "error: threads per block 100 is not a multiple of 32");
  expect_pack_err(good, "tensor 1 W in edge f32 =", "tensor 1 W in edge f33 =",
                  "bad.pack:7: error: bad dtype 'f33'");
  /* a tensor the op fills itself (a 16-bit output's wide twin) keeps the
   * mark: the runtime then gives it no start value */
  {
    const char *yl = strstr(good, "\ntensor 2 Y out ");
    ck_assert_ptr_nonnull(yl);
    const char *eol = strchr(yl + 1, '\n');
    char *line = strndup(yl, (size_t)(eol - yl));
    char *marked = malloc(strlen(line) + 8);
    sprintf(marked, "%s filled", line);
    /* reduced into from the runtime's start value (+=): refused as filled */
    ck_assert_ptr_nonnull(strstr(line, " += "));
    expect_pack_err(good, line, marked, "error: tensor 'Y' is marked filled (the op "
                    "writes its start values) but is reduced into from a start value");
    /* written whole by the op (=): kept */
    char *assign = replace(marked, " += ", " = ");
    free(marked);
    marked = assign;
    char *text = replace(good, line, marked);
    const char *fpath = tu_write("filled.pack", text);
    CgProgram fq;
    Diag fd;
    ir_diag_init(&fd, NULL);
    ck_assert_msg(cg_pack_read(fpath, &fq, &fd) == 0, "%s", fd.buf);
    ck_assert(fq.tensors[2].filled && !fq.tensors[0].filled);
    cg_program_free(&fq);
    ir_diag_free(&fd);
    free(text), free(marked), free(line);
  }
  /* `filled` (the op writes the start values itself) on an input, or on a
   * tensor reduced into from the runtime's start value, is refused */
  expect_pack_err(good, "tensor 1 W in edge f32 =", "tensor 1 W in edge f32 = filled",
                  "error: tensor 'W' is marked filled (the op writes its start values) but "
                  "is an input");
  expect_pack_err(good, "\nend\n", "\n", "error: unexpected end of file");
  expect_pack_err(good, "\nend\n", "\nend\nmore\n", "error: text after `end`");
  /* the PTX block announces more bytes than there are */
  const char *ptxline = strstr(good, "\nptx ");
  ck_assert_ptr_nonnull(ptxline);
  char *cut = strndup(good, (size_t)(ptxline - good) + 200);
  msg = pack_err(cut);
  ck_assert_msg(strstr(msg, "error: the ptx block is truncated"), "%s", msg);
  free(msg);
  free(cut);
  /* a missing file */
  CgProgram q;
  Diag d;
  ir_diag_init(&d, NULL);
  ck_assert_int_eq(cg_pack_read("/nonexistent/x.pack", &q, &d), -1);
  ck_assert_ptr_nonnull(strstr(d.buf, "/nonexistent/x.pack: error: cannot read"));
  ir_diag_free(&d);
  free(good);
}
END_TEST

START_TEST(test_pack_write_atomic) {
  CgProgram p;
  compile_ok(op_edge_atomic(), "sm_80", &p);
  Diag d;
  ir_diag_init(&d, NULL);
  ck_assert_int_eq(cg_pack_write(&p, "/nonexistent/dir/x.pack", &d), -1);
  ck_assert_ptr_nonnull(strstr(d.buf, "/nonexistent/dir/x.pack: error: cannot write"));
  ir_diag_free(&d);
  /* no temporary left behind next to a written pack */
  char path[512];
  snprintf(path, sizeof path, "%s/atomic/x.pack", tu_tmpdir());
  char dir[520];
  snprintf(dir, sizeof dir, "%s/atomic", tu_tmpdir());
  ck_assert_int_eq(mkdir(dir, 0700), 0);
  ck_assert_int_eq(cg_pack_write(&p, path, NULL), 0);
  ck_assert_int_eq(cg_pack_write(&p, path, NULL), 0);
  char cmd[600];
  snprintf(cmd, sizeof cmd, "test $(ls '%s' | wc -l) -eq 1", dir);
  ck_assert_int_eq(system(cmd), 0);
  cg_program_free(&p);
  ir_arena_free(A);
}
END_TEST

START_TEST(test_expr_eval) {
  CgExpr e = {0};
  /* ($0 + 31) / 32 * nv - ne % 7 */
  CgTokKind ks[] = {CG_TOK_SYM, CG_TOK_CONST, CG_TOK_ADD, CG_TOK_CONST,
                    CG_TOK_DIV, CG_TOK_NV,    CG_TOK_MUL, CG_TOK_NE,
                    CG_TOK_CONST, CG_TOK_MOD, CG_TOK_SUB};
  int64_t vs[] = {0, 31, 0, 32, 0, 0, 0, 0, 7, 0, 0};
  for (int i = 0; i < 11; i++) {
    e.tok[i].kind = ks[i];
    e.tok[i].value = vs[i];
  }
  e.n = 11;
  int64_t syms[1] = {100}, out;
  ck_assert_int_eq(cg_expr_eval(&e, 10, 23, syms, 1, &out), 0);
  ck_assert_int_eq(out, 4 * 10 - 23 % 7);
  ck_assert_int_eq(cg_expr_eval(&e, 10, 23, syms, 0, &out), -1); /* no $0 */
  e.tok[3].value = 0;
  ck_assert_int_eq(cg_expr_eval(&e, 10, 23, syms, 1, &out), -1); /* / 0 */
  e.n = 2;
  ck_assert_int_eq(cg_expr_eval(&e, 10, 23, syms, 1, &out), -1); /* 2 left */
}
END_TEST

/* ---- ptxas ---- */

typedef struct PtxasStats {
  int regs, stack, spill_st, spill_ld, smem;
} PtxasStats;

/* Parses `ptxas -v` output for kernel `name`. */
static bool parse_ptxas(const char *out, const char *name, PtxasStats *s) {
  char key[256];
  snprintf(key, sizeof key, "Compiling entry function '%s'", name);
  const char *p = strstr(out, key);
  if (!p) return false;
  memset(s, 0, sizeof *s);
  const char *frame = strstr(p, "bytes stack frame");
  const char *used = strstr(p, "Used ");
  if (!frame || !used) return false;
  while (frame > out && frame[-1] != '\n') frame--;
  if (sscanf(frame, " %d bytes stack frame, %d bytes spill stores, %d bytes spill loads",
             &s->stack, &s->spill_st, &s->spill_ld) != 3)
    return false;
  if (sscanf(used, "Used %d registers", &s->regs) != 1) return false;
  const char *eol = strchr(used, '\n');
  const char *smem = strstr(used, "bytes smem");
  if (smem && (!eol || smem < eol)) {
    while (smem > used && smem[-1] == ' ') smem--;
    while (smem > used && smem[-1] >= '0' && smem[-1] <= '9') smem--;
    s->smem = atoi(smem);
  }
  return true;
}

/* The shuffle butterfly, the lane-0 store and the 16-byte accesses. */
START_TEST(test_shuffle_and_vector_ptx) {
  CgProgram p;
  compile_ok(op_dot_shuffle(), test_targets[_i], &p);
  ptx_check(count(p.ptx, "shfl.sync.bfly.b32") == 5, p.ptx, "not one 5-step butterfly");
  ptx_check(count(p.ptx, "st.global.f32") == 1, p.ptx, "not one store of the score");
  cg_program_free(&p);
  ir_arena_free(A);
  /* without `shuffle` the reduction over lanes is refused */
  char *msg = compile_err(op_dot_shuffle_how(IR_HOW_AUTO), test_targets[_i]);
  ck_assert_msg(strstr(msg, "needs a warp shuffle"), "%s", msg);
  free(msg);
  ir_arena_free(A);

  compile_ok(op_vec4(), test_targets[_i], &p);
  ptx_check(strstr(p.ptx, "ld.global.nc.v4.f32"), p.ptx, "no 16-byte read-only load");
  ptx_check(strstr(p.ptx, "st.global.v4.f32"), p.ptx, "no 16-byte store");
  /* the scalar fallback (tail of F, F % 4 != 0) is there too */
  ptx_check(strstr(p.ptx, "ld.global.nc.f32"), p.ptx, "no scalar fallback");
  ptx_check(!strstr(p.ptx, ".local"), p.ptx, "local memory used");
  /* the default: 1024 threads an SM, 4 blocks of 256 */
  ptx_check(strstr(p.ptx, ".minnctapersm 4\n"), p.ptx, "not 4 blocks an SM by default");
  cg_program_free(&p);
  ir_arena_free(A);

  /* @occupancy(2048) (passes/occupancy.c): 8 blocks of 256 an SM */
  IrOp *full = op_vec4();
  full->body->loop.occ = 2048;
  compile_ok(full, test_targets[_i], &p);
  ptx_check(strstr(p.ptx, ".minnctapersm 8\n"), p.ptx, "@occupancy(2048) not 8 blocks an SM");
  cg_program_free(&p);
  ir_arena_free(A);
}
END_TEST

START_TEST(test_ptxas) {
  const char *ptxas = tu_ptxas();
  if (!ptxas) {
    const char *skip = getenv("GOP_SKIP_PTXAS");
    if (skip && strcmp(skip, "1") == 0) {
      fprintf(stderr, "ptxas: not found, skipped (GOP_SKIP_PTXAS=1)\n");
      return;
    }
    ck_abort_msg("ptxas not found ($GOP_PTXAS, /usr/local/cuda/bin/ptxas, "
                 "PATH): the CUDA toolkit is needed to check the PTX; set "
                 "GOP_SKIP_PTXAS=1 to skip on a machine without it");
  }
  /* GOP_KEEP_PTX=DIR keeps the PTX and ptxas logs there, for a look */
  const char *keep = getenv("GOP_KEEP_PTX");
  const char *dir = keep && *keep ? keep : tu_tmpdir();
  int nkernels = 0;
  for (int c = 0; c < NCASES; c++) {
    for (int t = 0; t < 2; t++) {
      CgProgram p;
      compile_ok(cases[c].build(), test_targets[t], &p);
      char ptx[512], log[600], cmd[4096];
      snprintf(ptx, sizeof ptx, "%s/%s_%s.ptx", dir, cases[c].name,
               test_targets[t]);
      snprintf(log, sizeof log, "%s.log", ptx);
      FILE *f = fopen(ptx, "w");
      ck_assert_ptr_nonnull(f);
      fputs(p.ptx, f);
      fclose(f);
      snprintf(cmd, sizeof cmd, "'%s' -v -arch=%s -o /dev/null '%s' >'%s' 2>&1",
               ptxas, test_targets[t], ptx, log);
      int rc = system(cmd);
      char *out = tu_read_file(log, NULL);
      ck_assert_msg(rc == 0, "ptxas -arch=%s failed on %s:\n%s", test_targets[t],
                    ptx, out ? out : "");
      for (int k = 0; k < p.nkernels; k++) {
        PtxasStats s;
        ck_assert_msg(parse_ptxas(out, p.kernels[k].name, &s),
                      "cannot read ptxas -v for %s:\n%s", p.kernels[k].name, out);
        printf("ptxas %s %-26s %3d registers, %d bytes stack, %d/%d bytes "
               "spill stores/loads, %d bytes smem\n",
               test_targets[t], p.kernels[k].name, s.regs, s.stack, s.spill_st,
               s.spill_ld, s.smem);
        ck_assert_msg(s.spill_st == 0 && s.spill_ld == 0 && s.stack == 0,
                      "%s for %s spills:\n%s", p.kernels[k].name, test_targets[t], out);
        nkernels++;
      }
      free(out);
      cg_program_free(&p);
      ir_arena_free(A);
    }
  }
  fflush(stdout);
  ck_assert_int_gt(nkernels, 2 * NCASES - 1);
}
END_TEST

/* ---- 64-bit indices (docs/index64.md) ---- */

/* Every case compiles for 64-bit indices: the graph's offsets and edge ids
 * are read as u64, `ne` comes as a u64 parameter, and the integers are
 * 64-bit; the 32-bit program reads none of them so. */
START_TEST(test_index64_kernels) {
  const Case *c = &cases[_i];
  CgProgram p, q;
  Diag d;
  ir_diag_init(&d, NULL);
  int rc = cg_compile_bits(c->build(), "sm_90", 64, &p, &d);
  ck_assert_msg(rc == 0, "%s: %s", c->name, d.buf ? d.buf : "");
  ck_assert_int_eq(cg_program_index_bits(&p), 64);
  ir_arena_free(A);
  compile_ok(c->build(), "sm_90", &q);
  ck_assert_int_eq(cg_program_index_bits(&q), 32);
  bool reads_ptr = false, reads_ne = false;
  for (int k = 0; k < q.nkernels; k++)
    for (int i = 0; i < q.kernels[k].nparams; i++) {
      CgParamKind pk = q.kernels[k].params[i].kind;
      reads_ptr |= cg_param_wide(pk, 64);
      reads_ne |= pk == CG_PARAM_NE;
    }
  if (reads_ptr) {
    ptx_check(strstr(p.ptx, "ld.global.nc.u64"), p.ptx, "64-bit offsets not read as u64");
    ptx_check(!strstr(q.ptx, "ld.global.nc.u64"), q.ptx, "32-bit program reads u64");
  }
  /* ne: .u32 in the 32-bit kernel, .u64 in the 64-bit one */
  if (reads_ne)
    ck_assert_int_gt(count(p.ptx, ".param .u64"), count(q.ptx, ".param .u64"));
  ck_assert_int_eq(p.nkernels, q.nkernels);
  for (int k = 0; k < p.nkernels; k++) ck_assert_int_eq(p.kernels[k].nparams, q.kernels[k].nparams);
  ptx_check(!strstr(p.ptx, ".local"), p.ptx, "local memory used");
  cg_program_free(&p);
  cg_program_free(&q);
  ir_diag_free(&d);
  ir_arena_free(A);
}
END_TEST

START_TEST(test_index64_pack_and_rules) {
  CgProgram p, q;
  Diag d;
  ir_diag_init(&d, NULL);
  ck_assert_int_eq(cg_compile_bits(op_warp_vertex_default(), "sm_90", 64, &p, &d), 0);
  char path[512];
  snprintf(path, sizeof path, "%s/wide.pack", tu_tmpdir());
  ck_assert_int_eq(cg_pack_write(&p, path, &d), 0);
  char *text = drop_sum(tu_read_file(path, NULL));
  ck_assert_ptr_nonnull(strstr(text, "\nindex 64\n"));
  ck_assert_msg(cg_pack_read(path, &q, &d) == 0, "%s", d.buf);
  assert_same_program(&p, &q);
  cg_program_free(&q);
  expect_pack_err(text, "index 64", "index 48", "error: bad index width 48 (32 or 64)");
  expect_pack_err(text, "index 64", "index 64\nindex 32", "error: a second `index` line");
  /* a 32-bit pack says nothing: packs written before 64-bit ones read the same */
  char *narrow = replace(text, "index 64\n", "");
  const char *npath = tu_write("narrow.pack", narrow);
  ck_assert_int_eq(cg_pack_read(npath, &q, &d), 0);
  ck_assert_int_eq(cg_program_index_bits(&q), 32);
  cg_program_free(&q);
  free(narrow);
  free(text);
  cg_program_free(&p);
  ir_arena_free(A);
  /* the layout line of a pack for edge ids in CSR order: kept on reading,
   * an unknown layout or a second line refused with the line */
  CgLayout csr = {32, true};
  ck_assert_int_eq(cg_compile_layout(op_warp_vertex_default(), "sm_90", csr, &p, &d), 0);
  snprintf(path, sizeof path, "%s/csr.pack", tu_tmpdir());
  ck_assert_int_eq(cg_pack_write(&p, path, &d), 0);
  char *ctext = drop_sum(tu_read_file(path, NULL));
  ck_assert_ptr_nonnull(strstr(ctext, "\nedges csr\n"));
  ck_assert_msg(cg_pack_read(path, &q, &d) == 0, "%s", d.buf);
  ck_assert(q.csr_edges);
  assert_same_program(&p, &q);
  cg_program_free(&q);
  expect_pack_err(ctext, "edges csr", "edges coo", "error: unknown edge layout coo (csr)");
  expect_pack_err(ctext, "edges csr", "edges csr\nedges csr", "error: a second `edges` line");
  expect_pack_err(ctext, "edges csr", "edges", "edges csr");
  free(ctext);
  cg_program_free(&p);
  ir_arena_free(A);
  /* widths other than 32 and 64 */
  ck_assert_int_eq(cg_compile_bits(op_warp_vertex_default(), "sm_90", 16, &p, &d), -1);
  ck_assert_ptr_nonnull(strstr(d.buf, "index width 16"));
  ir_arena_free(A);
  /* which graphs need 64 bits: edge ids and positions with headroom */
  ck_assert_int_eq(cg_index_bits_needed(1000, 5000), 32);
  ck_assert_int_eq(cg_index_bits_needed(1000, CG_INDEX32_MAX_EDGES), 32);
  ck_assert_int_eq(cg_index_bits_needed(1000, CG_INDEX32_MAX_EDGES + 1), 64);
  ck_assert_int_eq(cg_index_bits_needed(1 << 26, (int64_t)1 << 31), 64);
  ir_diag_free(&d);
}
END_TEST

static Suite *suite(void) {
  Suite *s = suite_create("codegen");
  TCase *tc = tcase_create("ptx");
  tcase_set_timeout(tc, 120);
  tcase_add_loop_test(tc, test_ptx_content, 0, 2 * NCASES);
  tcase_add_test(tc, test_atomic_minmax_ptx);
  tcase_add_test(tc, test_fmuladd_and_no_approx_div);
  tcase_add_test(tc, test_params_and_launch);
  tcase_add_test(tc, test_range_launch_extent);
  tcase_add_test(tc, test_dtypes);
  tcase_add_test(tc, test_emit_llvm);
  tcase_add_test(tc, test_vector_fallback_skip);
  tcase_add_loop_test(tc, test_shuffle_and_vector_ptx, 0, 2);
  suite_add_tcase(s, tc);
  tc = tcase_create("refusals");
  tcase_add_test(tc, test_unknown_target);
  tcase_add_test(tc, test_auto_refused);
  tcase_add_test(tc, test_bad_ir_refused);
  suite_add_tcase(s, tc);
  tc = tcase_create("pack");
  tcase_add_test(tc, test_pack_round_trip);
  tcase_add_test(tc, test_pack_malformed);
  tcase_add_test(tc, test_pack_write_atomic);
  tcase_add_test(tc, test_expr_eval);
  suite_add_tcase(s, tc);
  tc = tcase_create("index64");
  tcase_set_timeout(tc, 120);
  tcase_add_loop_test(tc, test_index64_kernels, 0, NCASES);
  tcase_add_test(tc, test_index64_pack_and_rules);
  suite_add_tcase(s, tc);
  tc = tcase_create("ptxas");
  tcase_set_timeout(tc, 600);
  tcase_add_test(tc, test_ptxas);
  suite_add_tcase(s, tc);
  return s;
}

int main(void) { return tu_run(suite()); }
