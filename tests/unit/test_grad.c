/* tests/unit/test_grad.c: gradient operators derived in the IR (grad/)
 * against central finite differences, on the interpreter in f64.
 *
 * Every operator of the standard library and of examples/models/layers.gop,
 * with respect to every floating-point input, on three graphs: a skewed
 * R-MAT graph and a grid, each with a vertex added that has no in-edges and
 * a hub that takes an in-edge from every other vertex (one of them twice:
 * a duplicate edge, so max= and min= meet exact ties), and the tiny graph of
 * tests/data. For a loss L = <dY, Y(X)> with random dY:
 *   - a random direction d: (L(X + hd) - L(X - hd)) / 2h against <dX, d>;
 *   - single elements on the hub, the vertex with no in-edges, the vertex of
 *     largest out-degree, an in-edge of the hub and the duplicate edge.
 * Each derived operator is also verified, printed and parsed back as IR
 * text. The API, the errors and the fused GAT backward have tests of their
 * own below.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "gop.h"
#include "grad/grad.h"
#include "graph/graph.h"
#include "interp/interp.h"
#include "lang/lang.h"
#include "passes/passes.h"
#include "testutil.h"

enum { NGRAPHS = 3 };

static Arena *arena;
static IrModule *stdlib_ir, *layers_ir;
static Graph *graphs[NGRAPHS];

/* `base` with a vertex z that only sends (to 0, 1, 2) and a hub h that
 * receives from every vertex (from 0 twice) and sends to 3 and 5. */
static Graph *with_hub(const char *spec) {
  Diag d;
  ir_diag_init(&d, stderr);
  Graph *b = graph_generate(spec, &d);
  ck_assert_msg(b != NULL, "%s", d.buf);
  int64_t nv = b->nv + 2, z = b->nv, h = b->nv + 1;
  int64_t cap = b->ne + nv + 16, ne = 0;
  int64_t *src = malloc(sizeof(int64_t) * (size_t)cap);
  int64_t *dst = malloc(sizeof(int64_t) * (size_t)cap);
  for (int32_t e = 0; e < b->ne; e++) {
    src[ne] = b->src[e];
    dst[ne++] = b->dst[e];
  }
  for (int64_t v = 0; v < 3; v++) src[ne] = z, dst[ne++] = v;
  for (int64_t u = 0; u < z; u++) src[ne] = u, dst[ne++] = h;
  src[ne] = 0, dst[ne++] = h; /* the duplicate */
  src[ne] = h, dst[ne++] = 3;
  src[ne] = h, dst[ne++] = 5;
  Graph *g = graph_from_coo(nv, ne, src, dst, spec, &d, (Loc){0});
  ck_assert_msg(g != NULL, "%s", d.buf);
  free(src);
  free(dst);
  graph_free(b);
  ir_diag_free(&d);
  return g;
}

static void setup(void) {
  arena = ir_arena_new();
  Diag d;
  ir_diag_init(&d, stderr);
  stdlib_ir = lang_stdlib(arena, &d);
  char *text = tu_read_file(tu_source("examples/models/layers.gop"), NULL);
  ck_assert_ptr_nonnull(text);
  layers_ir = lang_compile(arena, &d, "layers.gop", ir_strdup(arena, text));
  free(text);
  ck_assert_msg(stdlib_ir && layers_ir, "%s", d.buf);
  graphs[0] = with_hub("rmat:5:4:11");
  graphs[1] = with_hub("grid:4x3");
  graphs[2] = graph_read(tu_source("tests/data/tiny.mtx"), &d);
  ck_assert_msg(graphs[2] != NULL, "%s", d.buf);
  ir_diag_free(&d);
}

static void teardown(void) {
  for (int i = 0; i < NGRAPHS; i++) graph_free(graphs[i]);
  ir_arena_free(arena);
}

/* ---- running operators in f64 ---- */

static IrExtents extents_of(const IrOp *op) {
  IrExtents ext = {.n = op->nsyms};
  for (int i = 0; i < op->nsyms; i++) {
    const char *n = op->syms[i]->name;
    ext.value[i] = !strcmp(n, "F") ? 3 : !strcmp(n, "C") ? 3 : 2;
  }
  return ext;
}

/* The extents of `op` named as in `like`. */
static IrExtents extents_like(const IrOp *op, const IrOp *like) {
  IrExtents src = extents_of(like), ext = {.n = op->nsyms};
  for (int i = 0; i < op->nsyms; i++)
    for (int k = 0; k < like->nsyms; k++)
      if (!strcmp(op->syms[i]->name, like->syms[k]->name)) ext.value[i] = src.value[k];
  return ext;
}

static int64_t numel(const IrTensor *t, const Graph *g, const IrExtents *ext) {
  return graph_tensor_numel(t, g, ext);
}

/* tu_lcg gives 53 bits: a double in [0, 1) */
static double uniform(uint64_t *s) { return (double)tu_lcg(s) / 9007199254740992.0; }

/* Values of magnitude 0.3 to 1.3 and either sign: no division by zero. */
static double *random_buf(int64_t n, uint64_t *s) {
  double *b = malloc(sizeof(double) * (size_t)(n > 0 ? n : 1));
  for (int64_t i = 0; i < n; i++) {
    double m = 0.3 + uniform(s);
    b[i] = (tu_lcg(s) >> 40) & 1 ? m : -m;
  }
  return b;
}

static void run(const IrOp *op, const Graph *g, IrExtents ext, double **bufs) {
  Diag d;
  ir_diag_init(&d, stderr);
  InterpArgs args = {.graph = g, .extents = ext, .mode = INTERP_F64, .buffers = (void **)bufs};
  int rc = interp_run(op, &args, &d);
  ck_assert_msg(rc == 0, "%s: %s", op->name, d.buf);
  ir_diag_free(&d);
}

/* L = sum over outputs of <dY, Y>. */
static double loss(const IrOp *op, const Graph *g, IrExtents ext, double **bufs,
                   double **dys) {
  for (int i = op->ninputs; i < op->ninputs + op->noutputs; i++) {
    int64_t n = numel(op->tensors[i], g, &ext);
    free(bufs[i]);
    bufs[i] = calloc((size_t)(n > 0 ? n : 1), sizeof(double));
  }
  run(op, g, ext, bufs);
  double l = 0;
  for (int i = op->ninputs; i < op->ninputs + op->noutputs; i++) {
    int64_t n = numel(op->tensors[i], g, &ext);
    for (int64_t k = 0; k < n; k++) l += dys[i][k] * bufs[i][k];
  }
  return l;
}

/* Elements of `t` worth a look on `g`: the first and last feature of the
 * row of the largest in-degree, of a vertex with none, of the largest
 * out-degree; an in-edge of the hub and the last edge. */
static int special(const IrTensor *t, const Graph *g, int64_t n, int64_t *out) {
  int64_t rows = t->domain == IR_DOM_SRC || t->domain == IR_DOM_DST ? g->nv
                 : t->domain == IR_DOM_EDGE                       ? g->ne
                                                                  : 1;
  int64_t width = rows ? n / rows : 0, k = 0;
  if (n == 0) return 0;
  int32_t hub = 0, none = -1, out_hub = 0;
  for (int32_t v = 0; v < g->nv; v++) {
    int32_t in = g->in_ptr[v + 1] - g->in_ptr[v], o = g->out_ptr[v + 1] - g->out_ptr[v];
    if (in > g->in_ptr[hub + 1] - g->in_ptr[hub]) hub = v;
    if (o > g->out_ptr[out_hub + 1] - g->out_ptr[out_hub]) out_hub = v;
    if (in == 0 && none < 0) none = v;
  }
  int64_t r[4];
  int nr = 0;
  if (t->domain == IR_DOM_SRC || t->domain == IR_DOM_DST) {
    r[nr++] = hub;
    if (none >= 0) r[nr++] = none;
    r[nr++] = out_hub;
  } else if (t->domain == IR_DOM_EDGE) {
    if (g->in_ptr[hub + 1] > g->in_ptr[hub]) r[nr++] = g->in_eid[g->in_ptr[hub]];
    r[nr++] = g->ne - 1;
  } else {
    r[nr++] = 0;
  }
  for (int i = 0; i < nr; i++) {
    out[k++] = r[i] * width;
    if (width > 1) out[k++] = r[i] * width + width - 1;
  }
  return (int)k;
}

static bool close_enough(double fd, double an) {
  return fabs(fd - an) <= 1e-6 * (1.0 + fabs(an));
}

typedef struct Stats {
  int ops, grads, joint, checks;
} Stats;

/* The check of one gradient operator of `op` on graph `g`: each of its
 * outputs (one, or one per input for a joint operator) against finite
 * differences of the input it is the adjoint of. */
static void check_grad(const IrOp *op, const IrOp *bw, const char **adjoints,
                       const Graph *g, uint64_t seed, Stats *st) {
  IrExtents ext = extents_of(op), bext = extents_like(bw, op);
  double **fb = calloc((size_t)op->ntensors, sizeof(double *));
  double **dys = calloc((size_t)op->ntensors, sizeof(double *));
  for (int i = 0; i < op->ninputs + op->noutputs; i++) {
    int64_t n = numel(op->tensors[i], g, &ext);
    if (i < op->ninputs) fb[i] = random_buf(n, &seed);
    else dys[i] = random_buf(n, &seed);
  }
  loss(op, g, ext, fb, dys); /* the saved outputs */

  /* the gradients from the gradient operator */
  double **bb = calloc((size_t)bw->ntensors, sizeof(double *));
  bool *owned = calloc((size_t)bw->ntensors, sizeof(bool));
  for (int i = 0; i < bw->ninputs + bw->noutputs; i++) {
    const IrTensor *t = bw->tensors[i];
    if (t->role == IR_ROLE_OUT) {
      bb[i] = calloc((size_t)(numel(t, g, &bext) + 1), sizeof(double));
      owned[i] = true;
      continue;
    }
    int from = -1;
    for (int k = 0; k < op->ntensors && !bb[i]; k++) {
      if (adjoints[k] && !strcmp(adjoints[k], t->name)) bb[i] = dys[k];
      else if (!strcmp(op->tensors[k]->name, t->name)) bb[i] = fb[k];
      if (bb[i]) from = k;
    }
    ck_assert_msg(bb[i] != NULL, "%s: input %s is neither a forward tensor nor an "
                  "adjoint", bw->name, t->name);
    /* shaped as the forward tensor it stands for */
    ck_assert_int_eq(numel(t, g, &bext), numel(op->tensors[from], g, &ext));
  }
  ck_assert_int_ge(bw->noutputs, 1);
  run(bw, g, bext, bb);

  for (int out = bw->ninputs; out < bw->ninputs + bw->noutputs; out++) {
    int wrt = -1;
    for (int k = 0; k < op->ninputs; k++)
      if (adjoints[k] && !strcmp(adjoints[k], bw->tensors[out]->name)) wrt = k;
    ck_assert_msg(wrt >= 0, "%s: output %s is the adjoint of no input", bw->name,
                  bw->tensors[out]->name);
    const IrTensor *xt = op->tensors[wrt];
    int64_t n = numel(xt, g, &ext);
    ck_assert_int_eq(n, numel(bw->tensors[out], g, &bext));
    double *x = fb[wrt], *dx = bb[out];
    double *x0 = malloc(sizeof(double) * (size_t)(n + 1));
    memcpy(x0, x, sizeof(double) * (size_t)n);
    const double h = 1e-5;

    /* a random direction */
    double *dir = random_buf(n, &seed);
    double an = 0;
    for (int64_t k = 0; k < n; k++) an += dx[k] * dir[k];
    for (int64_t k = 0; k < n; k++) x[k] = x0[k] + h * dir[k];
    double lp = loss(op, g, ext, fb, dys);
    for (int64_t k = 0; k < n; k++) x[k] = x0[k] - h * dir[k];
    double lm = loss(op, g, ext, fb, dys);
    memcpy(x, x0, sizeof(double) * (size_t)n);
    double fd = (lp - lm) / (2 * h);
    ck_assert_msg(close_enough(fd, an), "%s on %s: d%s along a random direction: the "
                  "finite difference is %.12g, the gradient gives %.12g", bw->name,
                  g->name, xt->name, fd, an);
    st->checks++;

    /* single elements */
    int64_t el[16];
    int nel = special(xt, g, n, el);
    for (int i = 0; i < nel; i++) {
      int64_t k = el[i];
      x[k] = x0[k] + h;
      lp = loss(op, g, ext, fb, dys);
      x[k] = x0[k] - h;
      lm = loss(op, g, ext, fb, dys);
      x[k] = x0[k];
      fd = (lp - lm) / (2 * h);
      ck_assert_msg(close_enough(fd, dx[k]), "%s on %s: element %lld of %s: finite "
                    "difference %.12g, gradient %.12g", bw->name, g->name, (long long)k,
                    xt->name, fd, dx[k]);
      st->checks++;
    }
    free(dir);
    free(x0);
  }
  for (int i = 0; i < bw->ntensors; i++)
    if (owned[i]) free(bb[i]);
  free(bb);
  free(owned);
  for (int i = 0; i < op->ntensors; i++) {
    free(fb[i]);
    free(dys[i]);
  }
  free(fb);
  free(dys);
}

/* Verifies `bw` and that it prints, parses back and prints the same. */
static void round_trip(const IrOp *bw) {
  Diag d;
  ir_diag_init(&d, stderr);
  char *text = ir_op_to_string(bw);
  IrModule *back = lang_parse_ir(arena, &d, "grad.ir", ir_strdup(arena, text));
  ck_assert_msg(back && back->nops == 1, "%s does not parse back: %s\n%s", bw->name,
                d.buf, text);
  char *again = ir_op_to_string(back->ops[0]);
  ck_assert_str_eq(text, again);
  free(again);
  free(text);
  ir_diag_free(&d);
}

/* Derives every gradient of every operator of `m`, one input at a time
 * and all inputs jointly, checks that each verifies and round-trips as IR
 * text, and against finite differences on every graph. */
static void check_module(const IrModule *m, Stats *st) {
  for (int o = 0; o < m->nops; o++) {
    const IrOp *op = m->ops[o];
    st->ops++;
    const char *all[IR_MAX_IDX * 8];
    int nall = 0;
    for (int w = 0; w <= op->ninputs; w++) {
      if (w < op->ninputs && !grad_differentiable(op->tensors[w])) continue;
      if (w < op->ninputs) all[nall++] = op->tensors[w]->name;
      if (w == op->ninputs && nall < 2) continue; /* joint: only with several */
      Diag d;
      ir_diag_init(&d, stderr);
      const char **adj = calloc((size_t)op->ntensors, sizeof(char *));
      IrOp *bw = w < op->ninputs
                     ? grad_derive_named(arena, op, op->tensors[w]->name, adj, &d)
                     : grad_derive_joint(arena, op, all, nall, adj, &d);
      ck_assert_msg(bw != NULL, "%s (input %d): %s", op->name, w, d.buf);
      round_trip(bw);
      for (int gi = 0; gi < NGRAPHS; gi++)
        check_grad(op, bw, adj, graphs[gi],
                   0x9e3779b97f4a7c15ull * (uint64_t)(o + 1) + (uint64_t)(w * 7 + gi), st);
      if (w < op->ninputs) st->grads++;
      else st->joint++;
      free(adj);
      ir_diag_free(&d);
    }
  }
}

/* Constructs the libraries do not use: every function, locals, several
 * outputs, push-style and flat edge loops, mean= of a product, two stages
 * with locals of one name whose gradients fuse into one edge loop, an edge
 * softmax whose maximum is read elsewhere (not the saved-output rule). */
static const char *extra_src =
    "op act(X: f32[dst, F]) -> Y: f32[dst, F] {\n"
    "  for v in dst {\n"
    "    for f in 0..F {\n"
    "      var x = X[v, f]\n"
    "      Y[v, f] = sigmoid(x) * tanh(x) + abs(x) + log(abs(x) + 1.0) +\n"
    "                sqrt(x * x + 1.0) - max(x, 0.5) + min(x, -0.5) +\n"
    "                leaky_relu(x, 0.1) / (1.0 + x * x) - -exp(-x)\n"
    "    }\n"
    "  }\n"
    "}\n"
    "op scaled(X: f32[src, F], w: f32[src]) -> Y: f32[dst, F] {\n"
    "  for v in dst {\n    for e in in_edges(v) {\n      for f in 0..F {\n"
    "        Y[v, f] += X[src(e), f] * w[src(e)]\n      }\n    }\n  }\n}\n"
    "op two_out(X: f32[src, F], W: f32[edge]) -> (Y: f32[dst, F], Z: f32[dst, F]) {\n"
    "  for v in dst {\n"
    "    for e in in_edges(v) {\n"
    "      for f in 0..F {\n"
    "        Y[v, f] += X[src(e), f] * W[e]\n"
    "      }\n"
    "    }\n"
    "  }\n"
    "  for v in dst {\n"
    "    for e in in_edges(v) {\n"
    "      for f in 0..F {\n"
    "        Z[v, f] max= X[src(e), f] * X[src(e), f]\n"
    "      }\n"
    "    }\n"
    "  }\n"
    "}\n"
    "op sage(X: f32[src, F], Xd: f32[dst, F], a: f32[F]) -> Y: f32[dst, F] {\n"
    "  tensor A: f32[dst, F]\n"
    "  for v in dst {\n"
    "    for e in in_edges(v) {\n"
    "      for f in 0..F {\n"
    "        A[v, f] mean= X[src(e), f] * a[f]\n"
    "      }\n"
    "    }\n"
    "  }\n"
    "  for v in dst {\n"
    "    var n = 0.0\n"
    "    for f in 0..F {\n"
    "      n += A[v, f] * A[v, f]\n"
    "    }\n"
    "    for f in 0..F {\n"
    "      var t = A[v, f] + Xd[v, f]\n"
    "      Y[v, f] = t * t / (n + 1.0)\n"
    "    }\n"
    "  }\n"
    "}\n"
    "op push(X: f32[src, F], W: f32[edge]) -> Y: f32[dst, F] {\n"
    "  for u in src {\n"
    "    for e in out_edges(u) {\n"
    "      for f in 0..F {\n"
    "        Y[dst(e), f] += X[u, f] * W[e]\n"
    "      }\n"
    "    }\n"
    "  }\n"
    "}\n"
    "op flat(X: f32[src, F], Y: f32[dst, F]) -> M: f32[edge, F] {\n"
    "  for e in edges {\n"
    "    for f in 0..F {\n"
    "      M[e, f] = X[src(e), f] * Y[dst(e), f]\n"
    "    }\n"
    "  }\n"
    "}\n"
    "op two_locals(X: f32[src, F]) -> (S1: f32[edge], S2: f32[edge]) {\n"
    "  for v in dst {\n"
    "    for e in in_edges(v) {\n"
    "      var s = 0.0\n"
    "      for f in 0..F {\n"
    "        s += X[src(e), f] * X[src(e), f]\n"
    "      }\n"
    "      S1[e] = s\n"
    "    }\n"
    "  }\n"
    "  for v in dst {\n"
    "    for e in in_edges(v) {\n"
    "      var s = 0.0\n"
    "      for f in 0..F {\n"
    "        s += X[src(e), f]\n"
    "      }\n"
    "      S2[e] = s * s\n"
    "    }\n"
    "  }\n"
    "}\n"
    "op softmax_and_max(S: f32[edge]) -> (A: f32[edge], B: f32[dst]) {\n"
    "  tensor M: f32[dst]\n"
    "  tensor D: f32[dst]\n"
    "  for v in dst {\n"
    "    for e in in_edges(v) {\n"
    "      M[v] max= S[e]\n"
    "    }\n"
    "  }\n"
    "  for v in dst {\n"
    "    for e in in_edges(v) {\n"
    "      D[v] += exp(S[e] - M[v])\n"
    "    }\n"
    "  }\n"
    "  for v in dst {\n"
    "    for e in in_edges(v) {\n"
    "      A[e] = exp(S[e] - M[v]) / D[v]\n"
    "    }\n"
    "  }\n"
    "  for v in dst {\n"
    "    B[v] = M[v] * 2.0\n"
    "  }\n"
    "}\n";

static IrModule *extra_module(void) {
  Diag d;
  ir_diag_init(&d, stderr);
  IrModule *m = lang_compile(arena, &d, "extra.gop", extra_src);
  ck_assert_msg(m != NULL, "%s", d.buf);
  ir_diag_free(&d);
  return m;
}

START_TEST(test_extra_finite_differences) {
  Stats st = {0};
  check_module(extra_module(), &st);
  fprintf(stderr, "extra: %d operators, %d gradient operators and %d joint ones, %d "
          "finite-difference checks passed\n", st.ops, st.grads, st.joint, st.checks);
  ck_assert_int_eq(st.ops, 8);
}
END_TEST

static int count_stages(const IrOp *op) {
  int n = 0;
  for (const IrNode *s = op->body; s; s = s->next) n++;
  return n;
}

static bool reads_tensor(const IrNode *n, void *t) {
  return t && n->kind == IR_LOAD && n->acc.tensor == t;
}

static IrOp *derive(const IrModule *m, const char *op, const char *wrt, Diag *d) {
  const IrOp *f = ir_module_find_op(m, op);
  ck_assert_ptr_nonnull(f);
  return grad_derive(arena, f, wrt, d);
}

/* Scatters become source-ordered gathers; stages over the same out-edges
 * become one; GAT's attention backward is one pass over the edges with no
 * per-edge tensor (fuseGNN). */
START_TEST(test_structure) {
  Diag d;
  ir_diag_init(&d, NULL);
  IrOp *g = derive(stdlib_ir, "copy_u_sum", "X", &d);
  ck_assert_int_eq(count_stages(g), 1);
  ck_assert_int_eq(g->body->loop.kind, IR_LOOP_SRC_V);
  ck_assert_int_eq(g->body->loop.body->loop.kind, IR_LOOP_OUT_EDGES);
  /* two outputs gathered from X: one pass over the out-edges */
  g = derive(extra_module(), "two_out", "X", &d);
  int src_stages = 0;
  for (const IrNode *s = g->body; s; s = s->next) src_stages += s->loop.kind == IR_LOOP_SRC_V;
  ck_assert_int_eq(src_stages, 1);
  /* GAT: recompute M and D, then one pass over the out-edges of each
   * source, the saved Y standing for the sum of the attention weights;
   * for As, each destination's sum of dY * Y made once (GY, a stage over
   * the destinations), so that the edge pass reads no row of Y */
  const char *wrts[] = {"As", "Z"};
  for (int w = 0; w < 2; w++) {
    g = derive(layers_ir, "gat_attention", wrts[w], &d);
    ck_assert_msg(g != NULL, "%s", d.buf);
    ck_assert_int_eq(count_stages(g), w == 0 ? 4 : 3);
    ck_assert(!ir_op_find_tensor(g, "GY") == (w == 1));
    int edge_passes = 0;
    for (const IrNode *s = g->body; s; s = s->next)
      if (s->loop.kind == IR_LOOP_SRC_V) {
        edge_passes++;
        IrNode one = *s;
        one.next = NULL;
        ck_assert_msg(!ir_any(&one, reads_tensor, (void *)ir_op_find_tensor(g, "Y")),
                      "%s: the edge pass reads Y", g->name);
      }
    ck_assert_int_eq(edge_passes, 1);
    for (int i = 0; i < g->ntensors; i++)
      ck_assert_msg(g->tensors[i]->domain != IR_DOM_EDGE, "%s has the edge tensor %s",
                    g->name, g->tensors[i]->name);
  }
  /* jointly: M and D once, GY once, one pass over the in-edges (dAd, and
   * dAs scattered to the sources: As is narrower than Z), one over the
   * out-edges (dZ) */
  const char *all[] = {"Z", "As", "Ad"};
  g = grad_derive_joint(arena, ir_module_find_op(layers_ir, "gat_attention"), all, 3, NULL,
                        &d);
  ck_assert_msg(g != NULL, "%s", d.buf);
  ck_assert_str_eq(g->name, "gat_attention_grad_Z_As_Ad");
  ck_assert_int_eq(g->noutputs, 3);
  ck_assert_int_eq(count_stages(g), 5);
  int by_src = 0;
  for (const IrNode *s = g->body; s; s = s->next) {
    by_src += s->loop.kind == IR_LOOP_SRC_V;
    bool dz = pass_stage_stores(s, ir_op_find_tensor(g, "dZ"));
    bool das = pass_stage_stores(s, ir_op_find_tensor(g, "dAs"));
    bool dad = pass_stage_stores(s, ir_op_find_tensor(g, "dAd"));
    if (s->loop.kind == IR_LOOP_SRC_V) ck_assert(dz && !das && !dad);
    else ck_assert(!dz && das == dad);
  }
  ck_assert_int_eq(by_src, 1);
  /* two source tensors and nothing the in-edges own: both gathered in
   * one pass by source (the narrower is scattered only beside a pass over
   * the in-edges, as GAT's dAs) */
  const char *xw[] = {"X", "w"};
  g = grad_derive_joint(arena, ir_module_find_op(extra_module(), "scaled"), xw, 2, NULL, &d);
  ck_assert_msg(g != NULL, "%s", d.buf);
  ck_assert_int_eq(count_stages(g), 1);
  ck_assert_int_eq(g->body->loop.kind, IR_LOOP_SRC_V);
  /* edge softmax by its saved output: no recomputation of M and D */
  g = derive(stdlib_ir, "edge_softmax", "S", &d);
  ck_assert_ptr_null(ir_op_find_tensor(g, "M"));
  ck_assert_ptr_nonnull(ir_op_find_tensor(g, "A"));
  ck_assert_int_eq(count_stages(g), 2);
  /* ... but not when M is read elsewhere */
  g = derive(extra_module(), "softmax_and_max", "S", &d);
  ck_assert_ptr_nonnull(ir_op_find_tensor(g, "M"));
  ck_assert_int_eq(d.nerrors, 0);
  ir_diag_free(&d);
}
END_TEST

/* Refusals that the language cannot produce from source: an integer input,
 * a scheduled operator. */
START_TEST(test_refusals) {
  Diag d;
  ir_diag_init(&d, NULL);
  IrModule *m = extra_module();
  IrOp *push = ir_module_find_op(m, "push");
  push->tensors[1]->dtype = IR_DT_I32;
  ck_assert_ptr_null(grad_derive(arena, push, "W", &d));
  ck_assert_msg(strstr(d.buf, "input W of op push is i32, not floating point"), "%s", d.buf);
  ck_assert_ptr_nonnull(grad_derive(arena, push, "X", &d)); /* X still works */
  ir_diag_free(&d);
  ir_diag_init(&d, NULL);
  const char *ir =
      "op s(X: f32[src, F]) -> Y: f32[dst, F] {\n"
      "  for v in dst @warp {\n"
      "    for e in in_edges(v) {\n"
      "      for f in 0..F {\n"
      "        Y[v, f] += X[src(e), f]\n"
      "      }\n"
      "    }\n"
      "  }\n"
      "}\n";
  IrModule *sm = lang_parse_ir(arena, &d, "s.ir", ir);
  ck_assert_msg(sm != NULL, "%s", d.buf);
  ck_assert_ptr_null(grad_derive(arena, sm->ops[0], "X", &d));
  ck_assert_msg(strstr(d.buf, "s.ir:2:3: error: cannot differentiate op s with respect to "
                              "X: loop `v` is scheduled"), "%s", d.buf);
  ck_assert_ptr_null(grad_derive(arena, sm->ops[0], "Y", &d));
  ck_assert_msg(strstr(d.buf, "has no input named Y (it is an output"), "%s", d.buf);
  ir_diag_free(&d);
}
END_TEST

/* The public API: gop_grad's module runs like any other. */
START_TEST(test_api) {
  GopContext *ctx = gop_context_new();
  GopModule *lib = gop_stdlib(ctx);
  GopOp *fw = gop_module_find_op(lib, "u_mul_e_sum");
  GopModule *gm = gop_grad(fw, "W, X");
  ck_assert_msg(gm != NULL, "%s", gop_diagnostics(ctx));
  ck_assert_int_eq(gop_module_num_ops(gm), 2);
  GopOp *gw = gop_module_op(gm, 0), *gx = gop_module_op(gm, 1);
  ck_assert_str_eq(gop_op_name(gw), "u_mul_e_sum_grad_W");
  ck_assert_str_eq(gop_op_name(gx), "u_mul_e_sum_grad_X");
  ck_assert_str_eq(gop_op_signature(gx),
                   "u_mul_e_sum_grad_X(W: f32[edge], dY: f32[dst, F]) -> dX: f32[src, F]");
  ck_assert_str_eq(gop_grad_adjoint(gx, "Y"), "dY");
  ck_assert_str_eq(gop_grad_adjoint(gx, "X"), "dX");
  ck_assert_ptr_null(gop_grad_adjoint(gx, "W"));
  ck_assert_ptr_null(gop_grad_adjoint(fw, "Y"));
  ck_assert_ptr_eq(gop_grad_forward(gx), fw);
  ck_assert_ptr_null(gop_grad_forward(fw));
  char *text = gop_emit(gx, GOP_STAGE_IR);
  ck_assert_ptr_nonnull(strstr(text, "for e in out_edges(v)"));
  free(text);

  /* copy_u_sum's dX on tests/data/tiny.mtx (0->1, 0->2, 1->2, 2->0,
   * 3->2): dX[u] is the sum of dY over u's out-neighbours */
  GopModule *gs = gop_grad(gop_module_find_op(lib, "copy_u_sum"), NULL);
  ck_assert_ptr_nonnull(gs);
  GopGraph *g = gop_graph_open(ctx, tu_source("tests/data/tiny.mtx"));
  ck_assert_ptr_nonnull(g);
  GopRun *r = gop_run_new(ctx, gop_module_op(gs, 0), g);
  ck_assert_int_eq(gop_run_set_extent(r, "F", 1), 0);
  gop_run_set_device(r, GOP_DEVICE_INTERP);
  float dy[4] = {1, 2, 3, 4}, dx[4] = {-1, -1, -1, -1};
  ck_assert_int_eq(gop_run_bind(r, "dY", dy, 4), 0);
  ck_assert_int_eq(gop_run_bind(r, "dX", dx, 4), 0);
  ck_assert_msg(gop_run_exec(r) == 0, "%s", gop_diagnostics(ctx));
  const float want[4] = {5, 3, 1, 3};
  for (int i = 0; i < 4; i++) ck_assert_float_eq(dx[i], want[i]);

  /* every floating-point input by default; errors */
  GopModule *layers = gop_compile_file(ctx, tu_source("examples/models/layers.gop"));
  GopModule *gg = gop_grad(gop_module_find_op(layers, "gcn_propagate"), NULL);
  ck_assert_int_eq(gop_module_num_ops(gg), 4);
  ck_assert_str_eq(gop_op_name(gop_module_op(gg, 3)), "gcn_propagate_grad_S");
  gop_clear_diagnostics(ctx);
  ck_assert_ptr_null(gop_grad(fw, "Q"));
  ck_assert_ptr_nonnull(strstr(gop_diagnostics(ctx), "no input named Q; its inputs are X, W"));
  ck_assert_ptr_null(gop_grad(fw, " , "));
  ck_assert_ptr_nonnull(strstr(gop_diagnostics(ctx), "no input named in ' , '"));
  ck_assert_ptr_null(gop_grad(NULL, "X"));
  /* jointly: one operator, an output per input in the order asked */
  GopModule *jm = gop_grad_joint(fw, "W,X");
  ck_assert_msg(jm != NULL, "%s", gop_diagnostics(ctx));
  ck_assert_int_eq(gop_module_num_ops(jm), 1);
  GopOp *j = gop_module_op(jm, 0);
  ck_assert_str_eq(gop_op_signature(j), "u_mul_e_sum_grad_W_X(X: f32[src, F], W: f32[edge], "
                                         "dY: f32[dst, F]) -> (dW: f32[edge], dX: f32[src, F])");
  ck_assert_str_eq(gop_grad_adjoint(j, "W"), "dW");
  ck_assert_str_eq(gop_grad_adjoint(j, "Y"), "dY");
  ck_assert_ptr_null(gop_grad_joint(fw, "X,Q"));
  ck_assert_ptr_nonnull(strstr(gop_diagnostics(ctx), "no input named Q"));

  /* gop_run_exec_f64: the same run in double precision, buffers by
   * tensor index; the f32 bindings are not used */
  double dy64[4] = {1, 2, 3 + 1e-12, 4}, dx64[4] = {-1, -1, -1, -1}; /* not a float */
  double *bufs[2] = {dy64, dx64};
  ck_assert_msg(gop_run_exec_f64(r, bufs, 2) == 0, "%s", gop_diagnostics(ctx));
  const double want64[4] = {2 + dy64[2], dy64[2], 1, dy64[2]};
  for (int i = 0; i < 4; i++) ck_assert_double_eq(dx64[i], want64[i]);
  gop_clear_diagnostics(ctx);
  ck_assert_int_eq(gop_run_exec_f64(r, bufs, 1), -1);
  ck_assert_ptr_nonnull(strstr(gop_diagnostics(ctx), "has 2 inputs and outputs, got 1"));
  double *nobuf[2] = {dy64, NULL};
  ck_assert_int_eq(gop_run_exec_f64(r, nobuf, 2), -1);
  ck_assert_ptr_nonnull(strstr(gop_diagnostics(ctx), "tensor dX has no buffer"));
  GopRun *r2 = gop_run_new(ctx, gop_module_op(gs, 0), g);
  ck_assert_int_eq(gop_run_exec_f64(r2, bufs, 2), -1);
  ck_assert_ptr_nonnull(strstr(gop_diagnostics(ctx), "extent F is not set"));
  GopGraph *rg = gop_graph_reorder(ctx, g, "degree");
  ck_assert_ptr_nonnull(rg);
  GopRun *r3 = gop_run_new(ctx, gop_module_op(gs, 0), rg);
  ck_assert_int_eq(gop_run_set_extent(r3, "F", 1), 0);
  ck_assert_int_eq(gop_run_exec_f64(r3, bufs, 2), -1);
  ck_assert_ptr_nonnull(strstr(gop_diagnostics(ctx), "is reordered"));
  ck_assert_int_eq(gop_run_exec_f64(NULL, bufs, 2), -1);
  gop_context_free(ctx);
}
END_TEST

/* ---- max= and min= against a saved f32 output ---- */

/* The f32 interpreter, as gopc run --check and the GPU use it. */
static void run32(const IrOp *op, const Graph *g, IrExtents ext, float **bufs) {
  Diag d;
  ir_diag_init(&d, stderr);
  InterpArgs args = {.graph = g, .extents = ext, .mode = INTERP_F32, .buffers = (void **)bufs};
  int rc = interp_run(op, &args, &d);
  ck_assert_msg(rc == 0, "%s: %s", op->name, d.buf);
  ir_diag_free(&d);
}

/* The forward runs in f32 and saves Y; the gradient, run in f32 on that
 * Y, must find each argmax/argmin by comparing its recomputed contribution
 * with Y, bit for bit, and split dY evenly between tied contributions.
 * The inputs take a few values whose products and sums are not exact in
 * f32 (so a contribution kept in double never equals Y: the bug of issue
 * 15, where every such gradient was 0), with many exact ties; the
 * reference is computed here in C float arithmetic, independently. */
typedef struct SavedCase {
  const char *op;
  bool add;      /* X + W, else X * W */
  bool min;      /* min=, else max= */
  bool w_feat;   /* W: f32[edge, F], else f32[edge] */
} SavedCase;

static void check_saved(const SavedCase *c, const Graph *g, uint64_t seed, int *ties) {
  const IrOp *op = ir_module_find_op(stdlib_ir, c->op);
  ck_assert_ptr_nonnull(op);
  const int F = 3;
  IrExtents ext = extents_of(op);
  int64_t nv = g->nv, ne = g->ne, nw = c->w_feat ? ne * F : ne;
  static const float xs[] = {0.3f, -0.7f, 1.1f, -0.9f, 0.45f};
  static const float ws[] = {1.3f, -0.6f, 0.7f};
  float *x = malloc(sizeof(float) * (size_t)(nv * F)), *w = malloc(sizeof(float) * (size_t)nw);
  float *y = calloc((size_t)(nv * F), sizeof(float)), *dy = malloc(sizeof(float) * (size_t)(nv * F));
  for (int64_t i = 0; i < nv * F; i++) x[i] = xs[tu_lcg(&seed) % 5];
  for (int64_t i = 0; i < nw; i++) w[i] = ws[tu_lcg(&seed) % 3];
  for (int64_t i = 0; i < nv * F; i++) dy[i] = (float)(uniform(&seed) * 2 - 1);
  float *fb[3] = {x, w, y};
  ck_assert_int_eq(op->ntensors, 3);
  run32(op, g, ext, fb);

  /* the reference: contributions in f32, ties split evenly */
  float *cnt = calloc((size_t)(nv * F), sizeof(float));
  float *rx = calloc((size_t)(nv * F), sizeof(float)), *rw = calloc((size_t)nw, sizeof(float));
  for (int pass = 0; pass < 2; pass++)
    for (int64_t e = 0; e < ne; e++)
      for (int f = 0; f < F; f++) {
        int64_t u = g->src[e], v = g->dst[e], we = c->w_feat ? e * F + f : e;
        float a = x[u * F + f], b = w[we];
        float p = c->add ? a + b : a * b;
        float m = y[v * F + f];
        if (pass == 0) {
          /* the saved Y is the extremum of these contributions */
          ck_assert(c->min ? p >= m : p <= m);
          if (p == m) cnt[v * F + f] += 1.0f;
          continue;
        }
        if (p != m) continue;
        float s = dy[v * F + f] / cnt[v * F + f];
        rx[u * F + f] += c->add ? s : s * b;
        rw[we] += c->add ? s : s * a;
      }
  for (int64_t i = 0; i < nv * F; i++) *ties += cnt[i] > 1;

  const char *wrt[2] = {"X", "W"};
  const float *want[2] = {rx, rw};
  int64_t nout[2] = {nv * F, nw};
  for (int k = 0; k < 2; k++) {
    Diag d;
    ir_diag_init(&d, stderr);
    const char **adj = calloc((size_t)op->ntensors, sizeof(char *));
    IrOp *bw = grad_derive_named(arena, op, wrt[k], adj, &d);
    ck_assert_msg(bw != NULL, "%s: %s", op->name, d.buf);
    float **bb = calloc((size_t)bw->ntensors, sizeof(float *));
    float *out = calloc((size_t)nout[k] + 1, sizeof(float));
    for (int i = 0; i < bw->ninputs + bw->noutputs; i++) {
      const char *n = bw->tensors[i]->name;
      bb[i] = !strcmp(n, "X") ? x : !strcmp(n, "W") ? w : !strcmp(n, "Y") ? y
              : !strcmp(n, "dY") ? dy : out;
    }
    run32(bw, g, extents_like(bw, op), bb);
    double err = 0, norm = 0;
    for (int64_t i = 0; i < nout[k]; i++) {
      err += (out[i] - want[k][i]) * (double)(out[i] - want[k][i]);
      norm += want[k][i] * (double)want[k][i];
    }
    ck_assert_msg(norm > 0, "%s: the reference d%s is 0", bw->name, wrt[k]);
    ck_assert_msg(sqrt(err / norm) < 1e-6, "%s on %s: d%s differs from the f32 argmax "
                  "reference (relative L2 %g)", bw->name, g->name, wrt[k], sqrt(err / norm));
    free(out);
    free(bb);
    free(adj);
    ir_diag_free(&d);
  }
  free(x), free(w), free(y), free(dy), free(cnt), free(rx), free(rw);
}

START_TEST(test_saved_output_f32) {
  static const SavedCase cases[] = {
      {"u_mul_e_min", false, true, false},
      {"u_mul_e_max", false, false, false},
      {"u_add_e_max", true, false, true},
  };
  int ties = 0;
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
    for (int gi = 0; gi < NGRAPHS; gi++) check_saved(&cases[i], graphs[gi], 77 + gi, &ties);
  ck_assert_int_gt(ties, 10); /* ties were met, and split */
}
END_TEST

/* ---- gop_run_check's allowance for sums ---- */

/* Runs `op` on the interpreter with every input and dY filled from `seed`
 * (values in [-1, 1)), F = 32; returns the run, `out` bound to output
 * `name` (numel *n). */
static GopRun *run_api(GopContext *ctx, GopOp *op, GopGraph *g, const char *name,
                       float **keep, float **out, int64_t *n) {
  GopRun *r = gop_run_new(ctx, op, g);
  ck_assert_ptr_nonnull(r);
  gop_run_set_device(r, GOP_DEVICE_INTERP);
  ck_assert_int_eq(gop_run_set_extent(r, "F", 32), 0);
  uint64_t seed = 5;
  for (int i = 0; i < gop_run_num_tensors(r); i++) {
    int64_t shape[8], numel = 1;
    int rank = gop_run_tensor_shape(r, i, shape);
    for (int k = 0; k < rank; k++) numel *= shape[k];
    keep[i] = malloc(sizeof(float) * (size_t)(numel + 1));
    for (int64_t k = 0; k < numel; k++) keep[i][k] = (float)(uniform(&seed) * 2 - 1);
    ck_assert_int_eq(gop_run_bind(r, gop_run_tensor_name(r, i), keep[i], numel), 0);
    if (!strcmp(gop_run_tensor_name(r, i), name)) *out = keep[i], *n = numel;
  }
  ck_assert_msg(gop_run_exec(r) == 0, "%s", gop_diagnostics(ctx));
  return r;
}

/* A sum of n f32 terms may differ between two orders of summation by up
 * to 2 sqrt(n) u sum|t| (issue 15b: d eps of gin_aggregate, 10^5 terms,
 * differed by 7e-5 relative between the GPU's atomics and the
 * interpreter's loop): that much is allowed, no more, and an element that
 * is not a sum gets no allowance. */
START_TEST(test_check_allowance) {
  GopContext *ctx = gop_context_new();
  GopModule *layers = gop_compile_file(ctx, tu_source("examples/models/layers.gop"));
  ck_assert_ptr_nonnull(layers);
  GopOp *fw = gop_module_find_op(layers, "gin_aggregate");
  GopModule *gm = gop_grad(fw, "eps");
  ck_assert_msg(gm != NULL, "%s", gop_diagnostics(ctx));
  GopGraph *g = gop_graph_open(ctx, "rmat:10:8:3");
  ck_assert_ptr_nonnull(g);
  float *keep[8] = {0}, *deps = NULL, *dy = NULL, *xd = NULL;
  int64_t n = 0, nv = 0;
  GopRun *r = run_api(ctx, gop_module_op(gm, 0), g, "deps", keep, &deps, &n);
  ck_assert_int_eq(n, 1);
  for (int i = 0; i < gop_run_num_tensors(r); i++) {
    if (!strcmp(gop_run_tensor_name(r, i), "dY")) {
      int64_t shape[8];
      ck_assert_int_eq(gop_run_tensor_shape(r, i, shape), 2);
      dy = keep[i];
      nv = shape[0] * shape[1];
    }
    if (!strcmp(gop_run_tensor_name(r, i), "Xd")) xd = keep[i];
  }
  ck_assert(dy && xd);
  ck_assert_int_eq(nv, 1024 * 32);
  double abs = 0;
  for (int64_t k = 0; k < nv; k++) abs += fabs((double)dy[k] * xd[k]);
  double allow = 2 * sqrt((double)nv) * 0x1p-24 * abs, exact = deps[0], worst = 1;
  ck_assert_int_eq(gop_run_check(r, &worst), 0);
  ck_assert(worst == 0);
  /* within the allowance, though far beyond 1e-5 relative */
  deps[0] = (float)(exact + 0.5 * allow);
  ck_assert(0.5 * allow > 1e-3 * fabs(exact));
  ck_assert_msg(gop_run_check(r, &worst) == 0, "%s", gop_diagnostics(ctx));
  ck_assert(worst == 0);
  /* beyond it */
  deps[0] = (float)(exact + 1.5 * allow);
  gop_clear_diagnostics(ctx);
  ck_assert_int_eq(gop_run_check(r, &worst), 1);
  ck_assert_msg(strstr(gop_diagnostics(ctx), "deps differs from the interpreter") &&
                strstr(gop_diagnostics(ctx), "beyond the f32 summation allowance"), "%s",
                gop_diagnostics(ctx));
  for (int i = 0; i < 8; i++) free(keep[i]);

  /* dXd[v, f] = dY[v, f] (1 + eps): one term each, no allowance */
  GopModule *gx = gop_grad(fw, "Xd");
  float *keep2[8] = {0}, *dxd = NULL;
  GopRun *r2 = run_api(ctx, gop_module_op(gx, 0), g, "dXd", keep2, &dxd, &n);
  ck_assert_int_eq(gop_run_check(r2, &worst), 0);
  dxd[7] *= 1.01f;
  gop_clear_diagnostics(ctx);
  ck_assert_int_eq(gop_run_check(r2, &worst), 1);
  ck_assert_ptr_null(strstr(gop_diagnostics(ctx), "allowance"));
  for (int i = 0; i < 8; i++) free(keep2[i]);
  gop_context_free(ctx);
}
END_TEST

/* `base` under each of `scheds` (named schedules of layers.gop) computes
 * what it does unscheduled, on the interpreter in f64, on every test
 * graph. */
static void check_scheduled(const IrOp *base, const char *const *scheds, int n) {
  Diag d;
  ir_diag_init(&d, NULL);
  for (int k = 0; k < n; k++) {
    IrOp *op = pass_op_copy(base, arena);
    ck_assert_msg(pass_schedule_text(op, layers_ir, scheds[k], arena, &d) == 0 &&
                      pass_lower(op, arena, &d, NULL, NULL) == 0,
                  "%s: %s", scheds[k], d.buf);
    for (int gi = 0; gi < NGRAPHS; gi++) {
      const Graph *g = graphs[gi];
      IrExtents ext = extents_of(base), ext2 = extents_like(op, base);
      uint64_t seed = 7 + (uint64_t)gi;
      double *want[16] = {0}, *got[16] = {0};
      for (int i = 0; i < base->ninputs; i++) {
        int64_t m = numel(base->tensors[i], g, &ext);
        want[i] = random_buf(m, &seed);
        got[i] = malloc(sizeof(double) * (size_t)(m > 0 ? m : 1));
        memcpy(got[i], want[i], sizeof(double) * (size_t)m);
      }
      for (int i = base->ninputs; i < base->ninputs + base->noutputs; i++) {
        int64_t m = numel(base->tensors[i], g, &ext);
        want[i] = calloc((size_t)(m > 0 ? m : 1), sizeof(double));
        got[i] = calloc((size_t)(m > 0 ? m : 1), sizeof(double));
      }
      run(base, g, ext, want);
      run(op, g, ext2, got);
      for (int i = base->ninputs; i < base->ninputs + base->noutputs; i++) {
        int64_t m = numel(base->tensors[i], g, &ext);
        double num = 0, den = 0;
        for (int64_t j = 0; j < m; j++) {
          num += (got[i][j] - want[i][j]) * (got[i][j] - want[i][j]);
          den += want[i][j] * want[i][j];
        }
        ck_assert_msg(num <= 1e-20 * (den > 0 ? den : 1), "%s under %s on graph %d: %s differs",
                      base->name, scheds[k], gi, base->tensors[i]->name);
      }
      for (int i = 0; i < 16; i++) {
        free(want[i]);
        free(got[i]);
      }
    }
  }
  ir_diag_free(&d);
}

/* GAT's attention and its joint backward under their named schedules
 * (examples/models/layers.gop gat_groups: 16-byte lanes of 4 channels in
 * the weighted sum; gat_grad_groups: GY's stage, dAd's register under both
 * signs of the score beside dAs's atomics over the in-edges, inline(dZ)
 * and dZ's register sums over the out-edges with 4 channels a lane; that
 * pass alone, gat_grad_sources, and with the in-edge passes on a team's
 * lanes, gat_grad_teams, for one head; gat_rows: the three stages
 * fused, a lane per head) compute what the unscheduled operators do, with
 * groups small enough that the hubs' rows are split, and C = 3 (not a
 * multiple of the 4 channels a lane). */
START_TEST(test_scheduled_gat) {
  const IrOp *fw = ir_module_find_op(layers_ir, "gat_attention");
  const char *fws[] = {"gat_groups(32, 2, 2)", "gat_groups(4, 2, 4)", "gat_groups(2, 1, 1)",
                       "gat_rows(2)", "gat_rows(4)"};
  check_scheduled(fw, fws, 5);
  const char *all[] = {"Z", "As", "Ad"};
  Diag d;
  ir_diag_init(&d, NULL);
  IrOp *bw = grad_derive_joint(arena, fw, all, 3, NULL, &d);
  ck_assert_msg(bw != NULL, "%s", d.buf);
  const char *bws[] = {"gat_grad_groups(32, 2, 2)", "gat_grad_groups(4, 2, 4)",
                       "gat_grad_groups(2, 1, 1)", "gat_grad_sources(1)",
                       "gat_grad_sources(2)", "gat_grad_teams(32, 4, 2)",
                       "gat_grad_teams(2, 4, 1)"};
  check_scheduled(bw, bws, 7);
  ir_diag_free(&d);
}
END_TEST

START_TEST(test_stdlib_finite_differences) {
  Stats st = {0};
  check_module(stdlib_ir, &st);
  fprintf(stderr, "stdlib: %d operators, %d gradient operators and %d joint ones, %d "
          "finite-difference checks passed\n", st.ops, st.grads, st.joint, st.checks);
  ck_assert_int_ge(st.ops, 86);
}
END_TEST

START_TEST(test_layers_finite_differences) {
  Stats st = {0};
  check_module(layers_ir, &st);
  fprintf(stderr, "layers.gop: %d operators, %d gradient operators and %d joint ones, "
          "%d finite-difference checks passed\n", st.ops, st.grads, st.joint, st.checks);
  ck_assert_int_ge(st.ops, 10);
}
END_TEST

int main(void) {
  Suite *s = suite_create("grad");
  TCase *tc = tcase_create("finite differences");
  tcase_add_unchecked_fixture(tc, setup, teardown);
  tcase_set_timeout(tc, 600);
  tcase_add_test(tc, test_stdlib_finite_differences);
  tcase_add_test(tc, test_layers_finite_differences);
  tcase_add_test(tc, test_extra_finite_differences);
  tcase_add_test(tc, test_structure);
  tcase_add_test(tc, test_scheduled_gat);
  tcase_add_test(tc, test_refusals);
  tcase_add_test(tc, test_api);
  tcase_add_test(tc, test_saved_output_f32);
  tcase_add_test(tc, test_check_allowance);
  suite_add_tcase(s, tc);
  return tu_run(s);
}
