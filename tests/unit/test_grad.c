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
  int ops, grads, checks;
} Stats;

/* The check of one gradient operator of `op` on graph `g`. */
static void check_grad(const IrOp *op, const IrOp *bw, const char **adjoints, int wrt,
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

  /* dX from the gradient operator */
  double **bb = calloc((size_t)bw->ntensors, sizeof(double *));
  bool *owned = calloc((size_t)bw->ntensors, sizeof(bool));
  int out = -1;
  for (int i = 0; i < bw->ninputs + bw->noutputs; i++) {
    const IrTensor *t = bw->tensors[i];
    if (t->role == IR_ROLE_OUT) {
      out = i;
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
  ck_assert_int_ge(out, 0);
  run(bw, g, bext, bb);
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
  ck_assert_msg(close_enough(fd, an), "%s on %s: along a random direction the "
                "finite difference is %.12g, the gradient gives %.12g", bw->name,
                g->name, fd, an);
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

/* Derives every gradient of every operator of `m`, checks that each
 * verifies and round-trips as IR text, and against finite differences on
 * every graph. */
static void check_module(const IrModule *m, Stats *st) {
  for (int o = 0; o < m->nops; o++) {
    const IrOp *op = m->ops[o];
    st->ops++;
    for (int w = 0; w < op->ninputs; w++) {
      if (!grad_differentiable(op->tensors[w])) continue;
      Diag d;
      ir_diag_init(&d, stderr);
      const char **adj = calloc((size_t)op->ntensors, sizeof(char *));
      IrOp *bw = grad_derive_named(arena, op, op->tensors[w]->name, adj, &d);
      ck_assert_msg(bw != NULL, "%s wrt %s: %s", op->name, op->tensors[w]->name, d.buf);
      /* the text form parses back and prints the same */
      char *text = ir_op_to_string(bw);
      IrModule *back = lang_parse_ir(arena, &d, "grad.ir", ir_strdup(arena, text));
      ck_assert_msg(back && back->nops == 1, "%s does not parse back: %s\n%s", bw->name,
                    d.buf, text);
      char *again = ir_op_to_string(back->ops[0]);
      ck_assert_str_eq(text, again);
      free(again);
      free(text);
      for (int gi = 0; gi < NGRAPHS; gi++)
        check_grad(op, bw, adj, w, graphs[gi], 0x9e3779b97f4a7c15ull * (uint64_t)(o + 1) +
                                                   (uint64_t)(w * 7 + gi),
                   st);
      st->grads++;
      free(adj);
      ir_diag_free(&d);
    }
  }
}

START_TEST(test_stdlib_finite_differences) {
  Stats st = {0};
  check_module(stdlib_ir, &st);
  fprintf(stderr, "stdlib: %d operators, %d gradient operators, %d finite-difference "
          "checks passed\n", st.ops, st.grads, st.checks);
  ck_assert_int_ge(st.ops, 86);
}
END_TEST

START_TEST(test_layers_finite_differences) {
  Stats st = {0};
  check_module(layers_ir, &st);
  fprintf(stderr, "layers.gop: %d operators, %d gradient operators, %d "
          "finite-difference checks passed\n", st.ops, st.grads, st.checks);
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
  suite_add_tcase(s, tc);
  return tu_run(s);
}
