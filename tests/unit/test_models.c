/* tests/unit/test_models.c: the model layers (models/models.c) on the
 * interpreter path, against an independent forward written here in plain C
 * from the definitions (PyG's GCNConv, GINConv, GATConv, SAGEConv), with
 * double accumulation and no gop operator; and the errors a user can cause.
 */
#include <dlfcn.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "gop.h"
#include "lang/lang.h"
#include "passes/passes.h"
#include "interp/interp.h"
#include "runtime/cublas.def"
#include "testutil.h"

/* ---- the reference ---- */

typedef struct Ref {
  int64_t nv, ne;
  const int32_t *src, *dst;
  const GopModel *m;
} Ref;

static const float *P(const Ref *r, const char *name) {
  for (int i = 0; i < gop_model_num_params(r->m); i++)
    if (strcmp(gop_model_param_name(r->m, i), name) == 0) return gop_model_param(r->m, i)->data;
  ck_abort_msg("no parameter %s", name);
  return NULL;
}

static const float *Pl(const Ref *r, const char *fmt, int l) {
  char name[64];
  snprintf(name, sizeof name, fmt, l);
  return P(r, name);
}

/* out[n, m] = x[n, k] . w[k, m] (+ b) */
static double *linear(const double *x, const float *w, const float *b, int64_t n, int64_t k,
                      int64_t m) {
  double *out = calloc((size_t)(n * m) + 1, sizeof *out);
  for (int64_t i = 0; i < n; i++)
    for (int64_t j = 0; j < m; j++) {
      double s = b ? b[j] : 0;
      for (int64_t p = 0; p < k; p++) s += x[i * k + p] * w[p * m + j];
      out[i * m + j] = s;
    }
  return out;
}

static void relu(double *x, int64_t n) {
  for (int64_t i = 0; i < n; i++) x[i] = x[i] > 0 ? x[i] : 0;
}

static double *gcn_ref(const Ref *r, const double *x, int64_t in, int64_t hd, int64_t c) {
  double *deg = calloc((size_t)r->nv, sizeof *deg);
  for (int64_t v = 0; v < r->nv; v++) deg[v] = 1; /* the self-loop */
  for (int64_t e = 0; e < r->ne; e++)
    if (r->src[e] != r->dst[e]) deg[r->dst[e]]++;
  const double *h = x;
  double *keep = NULL;
  int64_t din = in;
  for (int l = 1; l <= 2; l++) {
    int64_t dout = l == 1 ? hd : c;
    double *t = linear(h, Pl(r, "conv%d.weight", l), NULL, r->nv, din, dout);
    double *o = calloc((size_t)(r->nv * dout), sizeof *o);
    const float *b = Pl(r, "conv%d.bias", l);
    for (int64_t v = 0; v < r->nv; v++)
      for (int64_t f = 0; f < dout; f++) o[v * dout + f] = t[v * dout + f] / deg[v] + b[f];
    for (int64_t e = 0; e < r->ne; e++) {
      int32_t u = r->src[e], v = r->dst[e];
      if (u == v) continue;
      for (int64_t f = 0; f < dout; f++)
        o[v * dout + f] += t[u * dout + f] / sqrt(deg[u] * deg[v]);
    }
    if (l == 1) relu(o, r->nv * dout);
    free(t);
    free(keep);
    keep = o;
    h = o;
    din = dout;
  }
  free(deg);
  return keep;
}

static double *gin_ref(const Ref *r, const double *x, int64_t in, int64_t hd, int64_t c) {
  double *h = malloc((size_t)(r->nv * in) * sizeof *h);
  memcpy(h, x, (size_t)(r->nv * in) * sizeof *h);
  int64_t din = in;
  for (int l = 1; l <= 5; l++) {
    double eps = Pl(r, "conv%d.eps", l)[0];
    double *a = calloc((size_t)(r->nv * din), sizeof *a);
    for (int64_t i = 0; i < r->nv * din; i++) a[i] = (1 + eps) * h[i];
    for (int64_t e = 0; e < r->ne; e++)
      for (int64_t f = 0; f < din; f++) a[r->dst[e] * din + f] += h[r->src[e] * din + f];
    double *t = linear(a, Pl(r, "conv%d.lin1.weight", l), Pl(r, "conv%d.lin1.bias", l), r->nv,
                       din, hd);
    relu(t, r->nv * hd);
    double *u = linear(t, Pl(r, "conv%d.lin2.weight", l), Pl(r, "conv%d.lin2.bias", l), r->nv,
                       hd, hd);
    relu(u, r->nv * hd);
    free(a);
    free(t);
    free(h);
    h = u;
    din = hd;
  }
  double *y = linear(h, P(r, "lin.weight"), P(r, "lin.bias"), r->nv, hd, c);
  free(h);
  return y;
}

/* One GATConv over the graph with its self-loops replaced by one per
 * vertex: H heads of C, outputs concatenated [nv, H*C] (no bias). */
static double *gat_conv(const Ref *r, int l, const double *x, int64_t din, int64_t H,
                        int64_t C) {
  double *z = linear(x, Pl(r, "conv%d.weight", l), NULL, r->nv, din, H * C);
  const float *as = Pl(r, "conv%d.att_src", l), *ad = Pl(r, "conv%d.att_dst", l);
  double *ts = calloc((size_t)(r->nv * H), sizeof *ts), *td = calloc((size_t)(r->nv * H), 8);
  for (int64_t v = 0; v < r->nv; v++)
    for (int64_t h = 0; h < H; h++)
      for (int64_t k = 0; k < C; k++) {
        ts[v * H + h] += z[v * H * C + h * C + k] * as[h * C + k];
        td[v * H + h] += z[v * H * C + h * C + k] * ad[h * C + k];
      }
  /* arcs without self-loops, then one self-loop per vertex */
  int64_t n = 0;
  int64_t *s = malloc((size_t)(r->ne + r->nv) * sizeof *s);
  int64_t *d = malloc((size_t)(r->ne + r->nv) * sizeof *d);
  for (int64_t e = 0; e < r->ne; e++)
    if (r->src[e] != r->dst[e]) s[n] = r->src[e], d[n++] = r->dst[e];
  for (int64_t v = 0; v < r->nv; v++) s[n] = v, d[n++] = v;
  double *mx = malloc((size_t)(r->nv * H) * sizeof *mx), *den = calloc((size_t)(r->nv * H), 8);
  for (int64_t i = 0; i < r->nv * H; i++) mx[i] = -INFINITY;
  double *score = malloc((size_t)(n * H) * sizeof *score);
  for (int64_t e = 0; e < n; e++)
    for (int64_t h = 0; h < H; h++) {
      double a = ts[s[e] * H + h] + td[d[e] * H + h];
      a = a > 0 ? a : 0.2 * a;
      score[e * H + h] = a;
      if (a > mx[d[e] * H + h]) mx[d[e] * H + h] = a;
    }
  for (int64_t e = 0; e < n; e++)
    for (int64_t h = 0; h < H; h++) den[d[e] * H + h] += exp(score[e * H + h] - mx[d[e] * H + h]);
  double *y = calloc((size_t)(r->nv * H * C), sizeof *y);
  for (int64_t e = 0; e < n; e++)
    for (int64_t h = 0; h < H; h++) {
      double a = exp(score[e * H + h] - mx[d[e] * H + h]) / den[d[e] * H + h];
      for (int64_t k = 0; k < C; k++)
        y[d[e] * H * C + h * C + k] += a * z[s[e] * H * C + h * C + k];
    }
  free(z), free(ts), free(td), free(s), free(d), free(mx), free(den), free(score);
  return y;
}

static double *gat_ref(const Ref *r, const double *x, int64_t in, int64_t hd, int64_t c) {
  double *a = gat_conv(r, 1, x, in, 8, hd);
  const float *b1 = P(r, "conv1.bias");
  for (int64_t v = 0; v < r->nv; v++)
    for (int64_t f = 0; f < 8 * hd; f++) {
      double t = a[v * 8 * hd + f] + b1[f];
      a[v * 8 * hd + f] = t > 0 ? t : expm1(t);
    }
  double *y = gat_conv(r, 2, a, 8 * hd, 1, c);
  const float *b2 = P(r, "conv2.bias");
  for (int64_t v = 0; v < r->nv; v++)
    for (int64_t f = 0; f < c; f++) y[v * c + f] += b2[f];
  free(a);
  return y;
}

/* aggr: 's'um, 'm'ean or 'x' max; empty neighbourhoods give 0. */
static double *sage_ref(const Ref *r, const double *x, int64_t in, int64_t hd, int64_t c,
                        char aggr) {
  const double *h = x;
  double *keep = NULL;
  int64_t din = in;
  for (int l = 1; l <= 2; l++) {
    int64_t dout = l == 1 ? hd : c;
    double *a = calloc((size_t)(r->nv * din), sizeof *a);
    int64_t *cnt = calloc((size_t)r->nv, sizeof *cnt);
    for (int64_t e = 0; e < r->ne; e++) {
      int32_t u = r->src[e], v = r->dst[e];
      for (int64_t f = 0; f < din; f++) {
        double val = h[u * din + f], *t = &a[v * din + f];
        if (aggr != 'x')
          *t += val;
        else
          *t = cnt[v] == 0 || val > *t ? val : *t;
      }
      cnt[v]++;
    }
    if (aggr == 'm')
      for (int64_t v = 0; v < r->nv; v++)
        for (int64_t f = 0; f < din && cnt[v]; f++) a[v * din + f] /= (double)cnt[v];
    double *o = linear(a, Pl(r, "conv%d.lin_l.weight", l), Pl(r, "conv%d.lin_l.bias", l),
                       r->nv, din, dout);
    double *s = linear(h, Pl(r, "conv%d.lin_r.weight", l), NULL, r->nv, din, dout);
    for (int64_t i = 0; i < r->nv * dout; i++) o[i] += s[i];
    if (l == 1) relu(o, r->nv * dout);
    free(a), free(cnt), free(s), free(keep);
    keep = o;
    h = o;
    din = dout;
  }
  return keep;
}

/* ---- running both ---- */

static float *random_x(int64_t n, unsigned seed) {
  float *x = malloc((size_t)n * sizeof *x);
  srand(seed);
  for (int64_t i = 0; i < n; i++) x[i] = (float)rand() / (float)RAND_MAX * 2.0f - 1.0f;
  return x;
}

static double rel_l2(const float *y, const double *ref, int64_t n) {
  double num = 0, den = 0;
  for (int64_t i = 0; i < n; i++) {
    ck_assert_msg(!isnan(y[i]), "NaN at %lld", (long long)i);
    num += (y[i] - ref[i]) * (y[i] - ref[i]);
    den += ref[i] * ref[i];
  }
  ck_assert_msg(den > 0, "the reference is all zeros: the test could not fail");
  return sqrt(num / den);
}

/* Runs `name` on `graph` on the interpreter and compares with the
 * reference; returns the relative L2 error. */
static double check_model(const char *name, const char *graph, int64_t in, int64_t classes,
                          bool separate) {
  GopContext *ctx = gop_context_new();
  GopGraph *g = gop_graph_open(ctx, graph);
  ck_assert_msg(g, "%s", gop_diagnostics(ctx));
  GopGraphInfo gi;
  gop_graph_info(g, &gi);
  GopModelOptions o = {.in_features = in, .classes = classes, .seed = 7,
                       .gat_separate = separate};
  GopModel *m = gop_model_new(ctx, name, g, &o);
  ck_assert_msg(m, "%s", gop_diagnostics(ctx));
  float *x = random_x(gi.num_vertices * in, 3);
  float *y = calloc((size_t)(gi.num_vertices * classes), sizeof *y);
  GopModelStats st;
  ck_assert_msg(gop_model_forward(m, x, y, GOP_DEVICE_INTERP, 5, &st) == 0, "%s",
                gop_diagnostics(ctx));
  ck_assert(!st.on_gpu);
  ck_assert_int_gt(st.steps, 3);

  Ref r = {.m = m};
  r.ne = gop_graph_arcs(g, &r.src, &r.dst);
  r.nv = gi.num_vertices;
  double *xd = malloc((size_t)(r.nv * in) * sizeof *xd);
  for (int64_t i = 0; i < r.nv * in; i++) xd[i] = x[i];
  int64_t hd = gop_model_param(m, 0)->shape[1]; /* conv1's output width */
  double *ref = strcmp(name, "gcn") == 0   ? gcn_ref(&r, xd, in, hd, classes)
                : strcmp(name, "gin") == 0 ? gin_ref(&r, xd, in, hd, classes)
                : strcmp(name, "gat") == 0 ? gat_ref(&r, xd, in, hd / 8, classes)
                : sage_ref(&r, xd, in, hd, classes,
                           strcmp(name, "sage-sum") == 0    ? 's'
                           : strcmp(name, "sage-mean") == 0 ? 'm' : 'x');
  double err = rel_l2(y, ref, r.nv * classes);
  free(ref), free(xd), free(x), free(y);
  gop_model_free(m);
  gop_context_free(ctx);
  return err;
}

/* 6 vertices: a self-loop on 2, a duplicate arc 1 -> 3, a vertex (5) that
 * only sends, and 6 isolated. */
static const char *tiny(void) {
  return tu_write("tiny.mtx", "%%MatrixMarket matrix coordinate pattern general\n"
                              "6 6 9\n1 2\n2 1\n2 2\n1 3\n1 3\n3 4\n4 3\n5 4\n2 3\n");
}

static const char *const models[] = {"gcn", "gin", "gat", "sage-sum", "sage-mean", "sage-max"};

START_TEST(tiny_graph) {
  const char *name = models[_i];
  double err = check_model(name, tiny(), 5, 3, false);
  ck_assert_msg(err < 1e-5, "%s on the tiny graph: relative L2 %g", name, err);
}
END_TEST

START_TEST(cora) {
  const char *name = models[_i];
  /* GCN with cora's own width; the rest narrower, to keep the test short */
  int64_t in = strcmp(name, "gcn") == 0 ? 1433 : 32;
  double err = check_model(name, tu_dataset("cora.mtx.gz"), in, 7, false);
  ck_assert_msg(err < 1e-5, "%s on cora: relative L2 %g", name, err);
}
END_TEST

START_TEST(gat_separate_operators) {
  double err = check_model("gat", tiny(), 4, 3, true);
  ck_assert_msg(err < 1e-5, "separate GAT on tiny: relative L2 %g", err);
  err = check_model("gat", tu_dataset("cora.mtx.gz"), 16, 7, true);
  ck_assert_msg(err < 1e-5, "separate GAT on cora: relative L2 %g", err);
}
END_TEST

/* ---- errors ---- */

static GopContext *ctx;
static GopGraph *graph;

static GopModel *model(const char *name, int64_t in) {
  ctx = gop_context_new();
  graph = gop_graph_open(ctx, tiny());
  ck_assert_ptr_nonnull(graph);
  GopModelOptions o = {.in_features = in, .classes = 3, .seed = 1};
  return gop_model_new(ctx, name, graph, &o);
}

#define ASSERT_DIAG(needle)                                                         \
  ck_assert_msg(strstr(gop_diagnostics(ctx), (needle)) != NULL, "no \"%s\" in:\n%s", \
                (needle), gop_diagnostics(ctx))

START_TEST(unknown_model) {
  ck_assert_ptr_null(model("gcnn", 4));
  ASSERT_DIAG("error: unknown model 'gcnn': the models are gcn gin gat sage-sum");
  gop_context_free(ctx);
}
END_TEST

START_TEST(bad_options) {
  ck_assert_ptr_null(model("gcn", 0));
  ASSERT_DIAG("model gcn: the input feature width must be positive");
  gop_context_free(ctx);
}
END_TEST

START_TEST(missing_weight_file) {
  GopModel *m = model("sage-mean", 4);
  const char *dir = tu_tmpdir();
  ck_assert_int_eq(gop_model_load_weights(m, dir), -1);
  ASSERT_DIAG("conv1.lin_l.weight.npy: missing weight file: the sage-mean model needs "
              "conv1.lin_l.weight of shape [4, 64]");
  gop_model_free(m);
  gop_context_free(ctx);
}
END_TEST

START_TEST(wrong_shape_changes_nothing) {
  GopModel *m = model("gcn", 4);
  char dir[512];
  snprintf(dir, sizeof dir, "%s/w", tu_tmpdir());
  ck_assert_int_eq(gop_model_save_weights(m, dir), 0);
  /* conv2.weight saved from a model with other widths */
  GopContext *c2 = gop_context_new();
  GopGraph *g2 = gop_graph_open(c2, tiny());
  GopModelOptions o = {.in_features = 4, .classes = 5, .seed = 2};
  GopModel *m2 = gop_model_new(c2, "gcn", g2, &o);
  char d2[600];
  snprintf(d2, sizeof d2, "%s/w2", tu_tmpdir());
  ck_assert_int_eq(gop_model_save_weights(m2, d2), 0);
  char from[700], to[700];
  snprintf(from, sizeof from, "%s/conv2.weight.npy", d2);
  snprintf(to, sizeof to, "%s/conv2.weight.npy", dir);
  ck_assert_int_eq(rename(from, to), 0);
  float before = gop_model_param(m, 0)->data[0];
  ck_assert_int_eq(gop_model_load_weights(m, dir), -1);
  ASSERT_DIAG("conv2.weight.npy: shape [16, 5], but the gcn model with these widths needs "
              "conv2.weight of shape [16, 3]");
  ck_assert(gop_model_param(m, 0)->data[0] == before);
  gop_model_free(m2);
  gop_context_free(c2);
  gop_model_free(m);
  gop_context_free(ctx);
}
END_TEST

START_TEST(saved_weights_give_the_same_output) {
  GopModel *m = model("gat", 4);
  char dir[512];
  snprintf(dir, sizeof dir, "%s/gat", tu_tmpdir());
  ck_assert_int_eq(gop_model_save_weights(m, dir), 0);
  float *x = random_x(6 * 4, 5), y1[18], y2[18];
  ck_assert_int_eq(gop_model_forward(m, x, y1, GOP_DEVICE_INTERP, 0, NULL), 0);
  /* a model with other random weights, then the saved ones */
  GopModelOptions o = {.in_features = 4, .classes = 3, .seed = 99};
  GopModel *m2 = gop_model_new(ctx, "gat", graph, &o);
  ck_assert_int_eq(gop_model_forward(m2, x, y2, GOP_DEVICE_INTERP, 0, NULL), 0);
  ck_assert(memcmp(y1, y2, sizeof y1) != 0);
  ck_assert_int_eq(gop_model_load_weights(m2, dir), 0);
  ck_assert_int_eq(gop_model_forward(m2, x, y2, GOP_DEVICE_INTERP, 0, NULL), 0);
  ck_assert(memcmp(y1, y2, sizeof y1) == 0);
  free(x);
  gop_model_free(m);
  gop_model_free(m2);
  gop_context_free(ctx);
}
END_TEST

START_TEST(gpu_required_without_driver) {
  setenv("GOP_CUDA_LIBRARY", "/nonexistent/libcuda.so", 1);
  GopModel *m = model("gcn", 4);
  float *x = random_x(6 * 4, 5), y[18];
  GopModelStats st;
  ck_assert_int_eq(gop_model_forward(m, x, y, GOP_DEVICE_GPU, 0, &st), -1);
  ck_assert_int_eq(st.gpu_status, 3);
  ASSERT_DIAG("model gcn: cannot run on the GPU: no CUDA driver");
  gop_clear_diagnostics(ctx);
  ck_assert_int_eq(gop_model_forward(m, x, y, GOP_DEVICE_AUTO, 0, &st), 0);
  ck_assert(!st.on_gpu);
  ck_assert_msg(strstr(st.note, "no GPU (no CUDA driver"), "%s", st.note);
  free(x);
  gop_model_free(m);
  gop_context_free(ctx);
}
END_TEST

/* ---- the operators as the GPU runs them ---- */

static bool feature_loop(const IrNode *list) {
  for (const IrNode *n = list; n; n = n->next)
    if (n->kind == IR_LOOP && ((n->loop.kind == IR_LOOP_RANGE &&
                                strcmp(n->loop.var->name, "f") == 0) ||
                               feature_loop(n->loop.body)))
      return true;
  return false;
}

/* Runs `op` on the interpreter with inputs `in` (by tensor id); outputs go
 * to fresh buffers in out[]. */
static void interp(const IrOp *op, const Graph *g, const IrExtents *ext, float **in,
                   float **out, int nio) {
  void *bufs[16] = {0};
  for (int i = 0; i < nio; i++) {
    const IrTensor *t = op->tensors[i];
    if (t->role == IR_ROLE_IN) {
      bufs[i] = in[i];
    } else {
      int64_t n = graph_tensor_numel(t, g, ext);
      out[i] = calloc((size_t)n + 1, sizeof(float));
      bufs[i] = out[i];
    }
  }
  Diag d;
  ir_diag_init(&d, NULL);
  InterpArgs args = {.graph = g, .extents = *ext, .mode = INTERP_F32, .buffers = bufs};
  ck_assert_msg(interp_run(op, &args, &d) == 0, "%s: %s", op->name, d.buf);
  ir_diag_free(&d);
}

/* Every operator of layers.gop, scheduled as the API schedules it for the
 * GPU (warp_edge(1, 1) when every stage has a feature loop, else
 * thread_edge(1, 1)) and by the vertex-parallel warp_vertex(1, 1), then
 * lowered to GPU-ready IR, computes on the interpreter what the operator
 * as written does: the models' GPU path minus the hardware. */
START_TEST(scheduled_layers_agree) {
  Arena *a = ir_arena_new();
  Diag d;
  ir_diag_init(&d, NULL);
  char *text = tu_read_file(tu_source("examples/models/layers.gop"), NULL);
  IrModule *mod = lang_compile(a, &d, "layers.gop", text);
  IrModule *lib = lang_stdlib(a, &d);
  ck_assert_msg(mod && lib, "%s", d.buf);
  Graph *g = graph_read(tu_dataset("cora.mtx.gz"), &d);
  ck_assert_ptr_nonnull(g);
  int checked = 0;
  for (int o = 0; o < mod->nops; o++) {
    const IrOp *op = mod->ops[o];
    IrExtents ext = {.n = op->nsyms};
    for (int i = 0; i < op->nsyms; i++)
      ext.value[i] = strcmp(op->syms[i]->name, "H") == 0 ? 3
                     : strcmp(op->syms[i]->name, "C") == 0 ? 5 : 37;
    int nio = op->ninputs + op->noutputs;
    float *in[16] = {0}, *want[16] = {0};
    srand(11);
    for (int i = 0; i < op->ninputs; i++) {
      int64_t n = graph_tensor_numel(op->tensors[i], g, &ext);
      in[i] = malloc((size_t)n * sizeof(float) + 4);
      for (int64_t k = 0; k < n; k++) in[i][k] = (float)rand() / (float)RAND_MAX * 2 - 1;
    }
    interp(op, g, &ext, in, want, nio);
    bool lanes = true;
    for (const IrNode *st = op->body; st; st = st->next)
      if (st->kind == IR_LOOP) lanes &= feature_loop(st->loop.body);
    const char *scheds[] = {lanes ? "warp_edge(1, 1)" : "thread_edge(1, 1)",
                            "warp_vertex(1, 1)"};
    for (int s = 0; s < 2; s++) {
      IrOp *c = pass_op_copy(op, a);
      Diag q;
      ir_diag_init(&q, NULL);
      int rc = pass_schedule_text(c, lib, scheds[s], a, &q);
      if (rc != 0 && s == 1) { /* a vertex mapping may not fit: fine */
        ir_diag_free(&q);
        continue;
      }
      if (rc != 0) { /* the API's next tries: thread_edge, then the fallback */
        ir_diag_free(&q);
        ir_diag_init(&q, NULL);
        c = pass_op_copy(op, a);
        if (pass_schedule_text(c, lib, "thread_edge(1, 1)", a, &q) != 0) {
          ir_diag_free(&q);
          ir_diag_init(&q, NULL);
          c = pass_op_copy(op, a);
          rc = pass_default_schedule(c, a, &q);
        } else {
          rc = 0;
        }
      }
      ck_assert_msg(rc == 0 && pass_lower(c, a, &q, NULL, NULL) == 0, "%s under %s: %s",
                    op->name, scheds[s], q.buf);
      ir_diag_free(&q);
      float *got[16] = {0};
      interp(c, g, &ext, in, got, nio);
      for (int i = op->ninputs; i < nio; i++) {
        int64_t n = graph_tensor_numel(op->tensors[i], g, &ext);
        double num = 0, den = 0;
        for (int64_t k = 0; k < n; k++) {
          ck_assert_msg(!isnan(got[i][k]), "%s under %s: NaN", op->name, scheds[s]);
          num += (got[i][k] - want[i][k]) * (double)(got[i][k] - want[i][k]);
          den += want[i][k] * (double)want[i][k];
        }
        ck_assert_msg(den > 0 && sqrt(num / den) < 1e-5, "%s under %s: relative L2 %g",
                      op->name, scheds[s], sqrt(num / (den > 0 ? den : 1)));
        free(got[i]);
      }
      checked++;
    }
    for (int i = 0; i < nio; i++) {
      free(in[i]);
      free(want[i]);
    }
  }
  ck_assert_int_ge(checked, mod->nops);
  graph_free(g);
  free(text);
  ir_diag_free(&d);
  ir_arena_free(a);
}
END_TEST

/* ---- the operators on the GPU's assembler, and the cuBLAS checker ---- */

/* Every operator of layers.gop, under the default schedule the models use,
 * compiles to PTX that ptxas assembles for sm_80 and sm_90. */
START_TEST(layers_assemble) {
  const char *ptxas = getenv("GOP_PTXAS");
  if (!ptxas) ptxas = "/usr/local/cuda/bin/ptxas";
  if (getenv("GOP_SKIP_PTXAS")) return;
  GopContext *c = gop_context_new();
  GopModule *mod = gop_compile_file(c, tu_source("examples/models/layers.gop"));
  ck_assert_msg(mod, "%s", gop_diagnostics(c));
  ck_assert_int_ge(gop_module_num_ops(mod), 10);
  static const char *targets[] = {"sm_80", "sm_90"};
  for (int i = 0; i < gop_module_num_ops(mod); i++)
    for (int t = 0; t < 2; t++) {
      GopOp *op = gop_module_op(mod, i);
      GopCompileOptions o = {.target = targets[t]};
      char *ptx = gop_emit_with(op, GOP_STAGE_PTX, &o);
      ck_assert_msg(ptx, "%s for %s: %s", gop_op_name(op), targets[t], gop_diagnostics(c));
      const char *path = tu_write("op.ptx", ptx);
      free(ptx);
      char cmd[1200];
      snprintf(cmd, sizeof cmd, "%s -arch=%s %s -o /dev/null", ptxas, targets[t], path);
      ck_assert_msg(system(cmd) == 0, "ptxas refused %s for %s (%s)", gop_op_name(op),
                    targets[t], cmd);
    }
  gop_context_free(c);
}
END_TEST

START_TEST(cublas_checker_names_the_call) {
  Diag d;
  ir_diag_init(&d, NULL);
  ck_assert_int_eq(rt_cublas_check(0, "cublasSgemm_v2", NULL, &d), RT_OK);
  ck_assert_int_eq(d.nerrors, 0);
  ck_assert_int_eq(rt_cublas_check(3, "cublasCreate_v2", "while creating the handle", &d),
                   RT_OOM);
  ck_assert_int_eq(rt_cublas_check(13, "cublasSgemm_v2", NULL, &d), RT_ERR);
  ck_assert_int_eq(rt_cublas_check(4242, "cublasSgemm_v2", NULL, &d), RT_ERR);
  ck_assert_int_eq(d.nerrors, 3);
  const char *want[] = {
      "error: cuBLAS error in cublasCreate_v2: CUBLAS_STATUS_ALLOC_FAILED while creating "
      "the handle",
      "error: cuBLAS error in cublasSgemm_v2: CUBLAS_STATUS_EXECUTION_FAILED",
      "error: cuBLAS error in cublasSgemm_v2: status 4242"};
  for (int i = 0; i < 3; i++)
    ck_assert_msg(strstr(d.buf, want[i]), "no \"%s\" in:\n%s", want[i], d.buf);
  ck_assert_ptr_null(rt_cublas_api()); /* nothing opened */
  ir_diag_free(&d);
}
END_TEST

START_TEST(cublas_missing_or_wrong_library) {
  Diag d;
  ir_diag_init(&d, NULL);
  setenv("GOP_CUBLAS_LIBRARY", "/nonexistent/libcublas.so", 1);
  ck_assert_int_eq(rt_cublas_load(&d), RT_NO_DRIVER);
  ck_assert_msg(strstr(d.buf, "error: no cuBLAS: cannot load /nonexistent/libcublas.so:"), "%s",
                d.buf);
  ck_assert_msg(strstr(d.buf, "GOP_CUBLAS_LIBRARY names the cuBLAS library"), "%s", d.buf);
  ck_assert_ptr_null(rt_cublas_api());
  setenv("GOP_CUBLAS_LIBRARY", "libz.so.1", 1); /* a library, but not cuBLAS */
  ck_assert_int_eq(rt_cublas_load(&d), RT_NO_DRIVER);
  ck_assert_msg(strstr(d.buf, "no usable cuBLAS: libz.so.1 has no entry point cublasCreate_v2 "
                              "(7 missing)"),
                "%s", d.buf);
  ck_assert_int_eq(d.nerrors, 2);
  ir_diag_free(&d);
}
END_TEST

/* CI has the CUDA toolkit (no driver): its libcublas must have every entry
 * point cublas.def lists. GOP_SKIP_CUBLAS=1 on a machine without it. */
START_TEST(cublas_toolkit_library_loads) {
  if (getenv("GOP_SKIP_CUBLAS")) return;
  Diag d;
  ir_diag_init(&d, NULL);
  unsetenv("GOP_CUBLAS_LIBRARY");
  ck_assert_msg(rt_cublas_load(&d) == RT_OK, "%s", d.buf);
  ck_assert_ptr_nonnull(rt_cublas_api());
  ck_assert_msg(strstr(rt_cublas_name(), "libcublas.so"), "%s", rt_cublas_name());
  ck_assert_ptr_null(rt_cublas_handle()); /* no handle without a driver */
  /* the library names its own statuses now */
  ck_assert_int_eq(rt_cublas_check(7, "cublasSgemm_v2", NULL, &d), RT_ERR);
  ck_assert_msg(strstr(d.buf, "cuBLAS error in cublasSgemm_v2: CUBLAS_STATUS_INVALID_VALUE ("),
                "%s", d.buf);
  rt_cublas_close();
  ck_assert_ptr_null(rt_cublas_api());
  ir_diag_free(&d);
}
END_TEST

/* ---- the GPU path, against the fake driver (tests/unit/fake_cuda.c) ----
 * Its kernels do not run, so the numbers are not checked here (the GPU
 * machine does: tests/gpu/models.sh); what is checked is the shape of the
 * forward, from the fake's trace of driver and cuBLAS calls (one letter
 * per call: a alloc, h/d copies up/down, k launch, g SGEMM, m memset in
 * the stream, e event, w wait, f free ...): after its first step a forward
 * allocates, copies and waits for nothing; y comes down once, at the end;
 * the timed forwards are whole forwards, between events. */

static const char *fake_trace(const char *what) {
  const char *fake = getenv("GOP_FAKE_CUDA");
  ck_assert_msg(fake != NULL, "GOP_FAKE_CUDA is not set (run through ctest)");
  void *h = dlopen(fake, RTLD_NOW);
  ck_assert_msg(h != NULL, "%s", dlerror());
  const char *(*trace)(void) = (const char *(*)(void))dlsym(h, "fake_cuda_trace");
  void (*reset)(void) = (void (*)(void))dlsym(h, "fake_cuda_reset_log");
  ck_assert(trace && reset);
  if (strcmp(what, "reset") == 0) {
    reset();
    return NULL;
  }
  return trace();
}

static int count(const char *s, const char *letters) {
  int n = 0;
  for (; *s; s++) n += strchr(letters, *s) != NULL;
  return n;
}

/* Checks one gop_model_forward's trace: [setup] steps [d] frees, and
 * returns the number of steps (launches and SGEMMs). */
static int check_trace(const char *t, const char *model, int reps) {
  ck_assert_msg(!strchr(t, '+'), "the fake's trace overflowed");
  size_t first = strcspn(t, "kg"), down = strcspn(t, "d");
  ck_assert_msg(t[first], "%s: nothing launched: %s", model, t);
  ck_assert_msg(t[down] == 'd' && !strchr(t + down + 1, 'd'), "%s: y must come down once: %s",
                model, t);
  ck_assert_msg(down > first, "%s: a copy down before the first step: %s", model, t);
  /* between the first step and y's copy: steps, stream memsets, and (only
   * when timing) the events and the waits for them */
  const char *allowed = reps ? "kgmew" : "kgm";
  for (size_t i = first; i < down; i++)
    ck_assert_msg(strchr(allowed, t[i]), "%s: '%c' at %zu between the steps of the forward: %s",
                  model, t[i], i, t);
  for (size_t i = down + 1; t[i]; i++)
    ck_assert_msg(t[i] == 'f', "%s: '%c' after y's copy: %s", model, t[i], t);
  if (reps) ck_assert_int_eq(count(t, "e"), reps + 1);
  return count(t, "kg");
}

START_TEST(device_forward_stays_on_the_device) {
  static const struct {
    const char *name;
    int gemms, steps;
  } cases[] = {{"gcn", 2, 6}, {"gin", 11, 27}, {"gat", 2, 10}, {"sage-max", 4, 8}};
  const char *name = cases[_i].name;
  setenv("GOP_CUDA_LIBRARY", getenv("GOP_FAKE_CUDA"), 1);
  setenv("GOP_CUBLAS_LIBRARY", getenv("GOP_FAKE_CUDA"), 1);
  GopModel *m = model(name, 4);
  ck_assert_ptr_nonnull(m);
  GopGraphInfo gi;
  gop_graph_info(graph, &gi);
  float *x = random_x(gi.num_vertices * 4, 5);
  float *y = calloc((size_t)gi.num_vertices * 3, sizeof *y);
  GopModelStats st;
  fake_trace("reset");
  ck_assert_msg(gop_model_forward(m, x, y, GOP_DEVICE_GPU, 0, &st) == 0, "%s",
                gop_diagnostics(ctx));
  ck_assert(st.on_gpu);
  ck_assert_str_eq(st.device, "gop fake GPU 0");
  ck_assert_int_eq(st.steps, cases[_i].steps);
  ck_assert_int_eq(st.reps, 0);
  char *once = strdup(fake_trace("get"));
  int per_forward = check_trace(once, name, 0);
  ck_assert_int_eq(count(once, "g"), cases[_i].gemms);
  ck_assert_int_ge(per_forward, cases[_i].steps);
  /* timed: the result's forward and 3 more, whole, between 4 events */
  fake_trace("reset");
  ck_assert_msg(gop_model_forward(m, x, y, GOP_DEVICE_GPU, 3, &st) == 0, "%s",
                gop_diagnostics(ctx));
  const char *timed = fake_trace("get");
  ck_assert_int_eq(check_trace(timed, name, 3), 4 * per_forward);
  ck_assert_int_eq(count(timed, "g"), 4 * cases[_i].gemms);
  ck_assert_int_eq(st.reps, 3);
  ck_assert(st.total_ms > 0 && st.min_ms > 0 && st.min_ms <= st.total_ms);
  /* everything the forward allocated is freed by its end */
  ck_assert_int_eq(count(timed, "a"), count(timed, "f"));
  free(once);
  free(x);
  free(y);
  gop_model_free(m);
  gop_context_free(ctx);
}
END_TEST

static Suite *suite(void) {
  Suite *s = suite_create("models");
  TCase *t = tcase_create("forward");
  tcase_add_loop_test(t, tiny_graph, 0, 6);
  tcase_add_loop_test(t, cora, 0, 6);
  tcase_add_test(t, gat_separate_operators);
  tcase_add_test(t, scheduled_layers_agree);
  suite_add_tcase(s, t);
  TCase *e = tcase_create("errors");
  tcase_add_test(e, unknown_model);
  tcase_add_test(e, bad_options);
  tcase_add_test(e, missing_weight_file);
  tcase_add_test(e, wrong_shape_changes_nothing);
  tcase_add_test(e, saved_weights_give_the_same_output);
  tcase_add_test(e, gpu_required_without_driver);
  tcase_add_loop_test(e, device_forward_stays_on_the_device, 0, 4);
  tcase_add_test(e, cublas_checker_names_the_call);
  tcase_add_test(e, layers_assemble);
  tcase_add_test(e, cublas_missing_or_wrong_library);
  tcase_add_test(e, cublas_toolkit_library_loads);
  suite_add_tcase(s, e);
  return s;
}

int main(void) { return tu_run(suite()); }
