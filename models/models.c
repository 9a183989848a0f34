/* models/models.c: GNN model layers end to end (GCN, GIN, GAT, GraphSAGE),
 * forward inference, over the public API.
 *
 * The room above the API: models/ uses include/gop.h (operators, runs,
 * graphs, arrays) and runtime's cuBLAS (runtime/cublas.def) and nothing
 * else; it adds the "models" section of gop.h. It must not reach into the
 * compiler's rooms or the API's private header: a model is what a
 * framework embedding gop would write.
 *
 * A layer is a dense update X.W and graph operators. The dense update is an
 * SGEMM: cuBLAS on the GPU (runtime/cublas.c), a plain C loop on the
 * interpreter path, so that the models run and are tested without a GPU.
 * Everything else is a gop operator: the standard library's aggregations
 * and examples/models/layers.gop (embedded at build time), run through
 * gop_run_* on the GPU or on the reference interpreter. Each model's math
 * is PyTorch Geometric's (GCNConv, GINConv, GATConv, SAGEConv with their
 * defaults), so bench/models_pyg.py can load the same weights there and
 * compare; README "Models" gives the formulas.
 *
 * Parameters are named arrays ("conv1.weight" [in, out], row-major, so
 * that X.W needs no transposition), filled from a seeded generator or read
 * from DIR/NAME.npy. The model holds host buffers between steps: gop's run
 * API takes host memory, so a GPU forward copies each step's operands in
 * and out. The time reported is therefore the sum of every step's median
 * device time (kernels only, copies excluded), and says so.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "runtime/cublas.def"
#include "gop.h"

extern const char rt_model_layers_gop[]; /* generated: layers.gop's text */


typedef enum { M_GCN, M_GIN, M_GAT, M_SAGE_SUM, M_SAGE_MEAN, M_SAGE_MAX } ModelKind;

static const struct {
  const char *name;
  ModelKind kind;
  int64_t hidden; /* default width of the hidden layers */
} model_table[] = {
    {"gcn", M_GCN, 16},          {"gin", M_GIN, 64},
    {"gat", M_GAT, 8},           {"sage-sum", M_SAGE_SUM, 64},
    {"sage-mean", M_SAGE_MEAN, 64}, {"sage-max", M_SAGE_MAX, 64},
};
enum { NMODELS = sizeof model_table / sizeof model_table[0] };
enum { GIN_LAYERS = 5, GAT_HEADS = 8, MAX_PARAMS = 32 };

typedef struct Param {
  char name[48];
  GopArray a;
} Param;

struct GopModel {
  GopContext *ctx;
  const GopGraph *g;  /* the graph as given */
  GopGraph *gs;       /* GAT: with exactly one self-loop per vertex */
  ModelKind kind;
  const char *name;
  int64_t nv, in, hidden, classes;
  bool gat_separate;
  Param params[MAX_PARAMS];
  int nparams;
  GopModule *layers, *stdlib;
  float *gcn_w, *gcn_s; /* GCN: per-edge normalisation, self-loop weight */
  /* the forward in progress */
  bool gpu;
  int reps;
  GopModelStats *st;
};

/* Errors go to the context's diagnostics, like the library's own. */
#define ERR(m, ...) gop_report((m)->ctx, __VA_ARGS__)

GopModule *gop_model_layers(GopContext *ctx) {
  return gop_compile_string(ctx, "examples/models/layers.gop", rt_model_layers_gop);
}

const char *gop_model_names(void) { return "gcn gin gat sage-sum sage-mean sage-max"; }

/* ---- parameters ---- */

/* xorshift64*: small, seeded, the same on every machine. */
static uint64_t rng_next(uint64_t *s) {
  *s ^= *s >> 12;
  *s ^= *s << 25;
  *s ^= *s >> 27;
  return *s * 2685821657736338717ull;
}

/* Uniform in [-1, 1). */
static float rng_float(uint64_t *s) {
  return (float)((double)(rng_next(s) >> 40) / (double)(1ull << 24) * 2.0 - 1.0);
}

static int add_param(GopModel *m, const char *name, int ndim, int64_t d0, int64_t d1,
                     uint64_t *seed, double scale) {
  if (m->nparams == MAX_PARAMS) return -1;
  Param *p = &m->params[m->nparams++];
  snprintf(p->name, sizeof p->name, "%s", name);
  p->a.ndim = ndim;
  p->a.shape[0] = d0;
  p->a.shape[1] = d1;
  int64_t n = ndim == 1 ? d0 : d0 * d1;
  p->a.data = malloc((size_t)(n > 0 ? n : 1) * sizeof(float));
  if (!p->a.data) return -1;
  for (int64_t i = 0; i < n; i++) p->a.data[i] = (float)(scale * rng_float(seed));
  return 0;
}

/* A dense layer's weight [in, out] (Glorot-uniform scale) and bias [out]. */
static int add_linear(GopModel *m, const char *prefix, int64_t in, int64_t out, bool bias,
                      uint64_t *seed) {
  char name[48];
  snprintf(name, sizeof name, "%s.weight", prefix);
  if (add_param(m, name, 2, in, out, seed, sqrt(6.0 / (double)(in + out))) != 0) return -1;
  if (!bias) return 0;
  snprintf(name, sizeof name, "%s.bias", prefix);
  return add_param(m, name, 1, out, 0, seed, 0.1);
}

static const float *param(const GopModel *m, const char *name) {
  for (int i = 0; i < m->nparams; i++)
    if (strcmp(m->params[i].name, name) == 0) return m->params[i].a.data;
  return NULL; /* never: every name used below is made in make_params */
}

static const float *paramf(const GopModel *m, const char *fmt, int layer) {
  char name[48];
  snprintf(name, sizeof name, fmt, layer);
  return param(m, name);
}

static int make_params(GopModel *m, uint64_t seed) {
  uint64_t s = seed * 0x9e3779b97f4a7c15ull + 1;
  int64_t I = m->in, Hd = m->hidden, C = m->classes;
  int rc = 0;
  switch (m->kind) {
  case M_GCN:
    rc |= add_linear(m, "conv1", I, Hd, true, &s);
    rc |= add_linear(m, "conv2", Hd, C, true, &s);
    break;
  case M_GIN:
    for (int l = 1; l <= GIN_LAYERS; l++) {
      char pre[32];
      snprintf(pre, sizeof pre, "conv%d.lin1", l);
      rc |= add_linear(m, pre, l == 1 ? I : Hd, Hd, true, &s);
      snprintf(pre, sizeof pre, "conv%d.lin2", l);
      rc |= add_linear(m, pre, Hd, Hd, true, &s);
      snprintf(pre, sizeof pre, "conv%d.eps", l);
      rc |= add_param(m, pre, 1, 1, 0, &s, 0.5);
    }
    rc |= add_linear(m, "lin", Hd, C, true, &s);
    break;
  case M_GAT:
    rc |= add_linear(m, "conv1", I, GAT_HEADS * Hd, false, &s);
    rc |= add_param(m, "conv1.att_src", 2, GAT_HEADS, Hd, &s, 0.5);
    rc |= add_param(m, "conv1.att_dst", 2, GAT_HEADS, Hd, &s, 0.5);
    rc |= add_param(m, "conv1.bias", 1, GAT_HEADS * Hd, 0, &s, 0.1);
    rc |= add_linear(m, "conv2", GAT_HEADS * Hd, C, false, &s);
    rc |= add_param(m, "conv2.att_src", 2, 1, C, &s, 0.5);
    rc |= add_param(m, "conv2.att_dst", 2, 1, C, &s, 0.5);
    rc |= add_param(m, "conv2.bias", 1, C, 0, &s, 0.1);
    break;
  case M_SAGE_SUM: case M_SAGE_MEAN: case M_SAGE_MAX:
    rc |= add_linear(m, "conv1.lin_l", I, Hd, true, &s);
    rc |= add_linear(m, "conv1.lin_r", I, Hd, false, &s);
    rc |= add_linear(m, "conv2.lin_l", Hd, C, true, &s);
    rc |= add_linear(m, "conv2.lin_r", Hd, C, false, &s);
    break;
  }
  return rc;
}

int gop_model_num_params(const GopModel *m) { return m->nparams; }
const char *gop_model_param_name(const GopModel *m, int i) {
  return i >= 0 && i < m->nparams ? m->params[i].name : NULL;
}
const GopArray *gop_model_param(const GopModel *m, int i) {
  return i >= 0 && i < m->nparams ? &m->params[i].a : NULL;
}

static void shape_text(const GopArray *a, char *buf, size_t n) {
  size_t len = (size_t)snprintf(buf, n, "[");
  for (int i = 0; i < a->ndim && len < n; i++)
    len += (size_t)snprintf(buf + len, n - len, "%s%lld", i ? ", " : "", (long long)a->shape[i]);
  if (len < n) snprintf(buf + len, n - len, "]");
}

int gop_model_load_weights(GopModel *m, const char *dir) {
  /* Read everything first, so a bad file leaves the model as it was. */
  GopArray got[MAX_PARAMS] = {0};
  int rc = 0;
  for (int i = 0; i < m->nparams && rc == 0; i++) {
    const Param *p = &m->params[i];
    char path[4096], want[64], have[64];
    snprintf(path, sizeof path, "%s/%s.npy", dir, p->name);
    shape_text(&p->a, want, sizeof want);
    struct stat sb;
    if (stat(path, &sb) != 0) {
      ERR(m, "%s: missing weight file: the %s model needs %s of shape %s (%s)", path,
          m->name, p->name, want, strerror(errno));
      rc = -1;
      break;
    }
    if (gop_array_read(m->ctx, path, &got[i]) != 0) {
      rc = -1;
      break;
    }
    /* A [n] vector may come as [n] or [1, n]; a scalar eps as [] too. */
    int64_t n = 1, want_n = 1;
    for (int k = 0; k < got[i].ndim; k++) n *= got[i].shape[k];
    for (int k = 0; k < p->a.ndim; k++) want_n *= p->a.shape[k];
    bool same = got[i].ndim == p->a.ndim;
    for (int k = 0; same && k < p->a.ndim; k++) same = got[i].shape[k] == p->a.shape[k];
    bool vector_ok = p->a.ndim == 1 && n == want_n && got[i].ndim <= 2 &&
                     (got[i].ndim < 2 || got[i].shape[0] == 1);
    if (!same && !vector_ok) {
      shape_text(&got[i], have, sizeof have);
      ERR(m, "%s: shape %s, but the %s model with these widths needs %s of shape %s", path,
          have, m->name, p->name, want);
      rc = -1;
    }
  }
  for (int i = 0; i < m->nparams; i++) {
    if (rc == 0) {
      free(m->params[i].a.data);
      m->params[i].a.data = got[i].data;
    } else {
      gop_array_free(&got[i]);
    }
  }
  return rc;
}

int gop_model_save_weights(const GopModel *m, const char *dir) {
  if (mkdir(dir, 0777) != 0 && errno != EEXIST) {
    ERR(m, "%s: cannot create the weights directory: %s", dir, strerror(errno));
    return -1;
  }
  for (int i = 0; i < m->nparams; i++) {
    char path[4096];
    snprintf(path, sizeof path, "%s/%s.npy", dir, m->params[i].name);
    if (gop_array_write(m->ctx, path, &m->params[i].a) != 0) return -1;
  }
  return 0;
}

/* ---- building a model ---- */

/* GCN's normalisation, as PyG's gcn_norm with add_remaining_self_loops:
 * the file's self-loops are dropped and one self-loop per vertex added, so
 * deg(v) = in-edges of v that are not self-loops, plus 1; an edge u -> v
 * weighs 1 / sqrt(deg(u) deg(v)) (0 for a dropped self-loop) and the added
 * self-loop 1 / deg(v). */
static int gcn_norm(GopModel *m) {
  const int32_t *src, *dst;
  int64_t ne = gop_graph_arcs(m->g, &src, &dst);
  double *deg = calloc((size_t)m->nv + 1, sizeof *deg);
  m->gcn_w = malloc((size_t)(ne > 0 ? ne : 1) * sizeof(float));
  m->gcn_s = malloc((size_t)m->nv * sizeof(float) + 1);
  if (!deg || !m->gcn_w || !m->gcn_s) {
    free(deg);
    return -1;
  }
  for (int64_t v = 0; v < m->nv; v++) deg[v] = 1;
  for (int64_t e = 0; e < ne; e++)
    if (src[e] != dst[e]) deg[dst[e]] += 1;
  for (int64_t e = 0; e < ne; e++)
    m->gcn_w[e] = src[e] == dst[e] ? 0.0f : (float)(1.0 / sqrt(deg[src[e]] * deg[dst[e]]));
  for (int64_t v = 0; v < m->nv; v++) m->gcn_s[v] = (float)(1.0 / deg[v]);
  free(deg);
  return 0;
}

/* GAT's graph, as PyG's GATConv(add_self_loops=True): the file's
 * self-loops removed, then one per vertex appended (edge ids after the
 * others). */
static int gat_graph(GopModel *m) {
  const int32_t *src, *dst;
  int64_t ne = gop_graph_arcs(m->g, &src, &dst);
  int64_t *s = malloc((size_t)(ne + m->nv + 1) * sizeof *s);
  int64_t *d = malloc((size_t)(ne + m->nv + 1) * sizeof *d);
  if (!s || !d) {
    free(s);
    free(d);
    return -1;
  }
  int64_t n = 0;
  for (int64_t e = 0; e < ne; e++)
    if (src[e] != dst[e]) {
      s[n] = src[e];
      d[n++] = dst[e];
    }
  for (int64_t v = 0; v < m->nv; v++) {
    s[n] = v;
    d[n++] = v;
  }
  m->gs = gop_graph_from_arcs(m->ctx, m->nv, n, s, d, "graph with self-loops");
  free(s);
  free(d);
  return m->gs ? 0 : -1;
}

GopModel *gop_model_new(GopContext *ctx, const char *name, const GopGraph *g,
                        const GopModelOptions *o) {
  int which = -1;
  for (int i = 0; i < NMODELS && name; i++)
    if (strcmp(model_table[i].name, name) == 0) which = i;
  if (which < 0) {
    gop_report(ctx, "unknown model '%s': the models are %s", name ? name : "(null)",
               gop_model_names());
    return NULL;
  }
  if (!g || !o || o->in_features <= 0 || o->classes <= 0 || o->hidden < 0) {
    gop_report(ctx, "model %s: %s", name,
               !g ? "no graph" : !o ? "no options"
               : o->in_features <= 0 ? "the input feature width must be positive"
               : o->classes <= 0 ? "the number of classes must be positive"
                                 : "the hidden width must be positive");
    return NULL;
  }
  GopModel *m = calloc(1, sizeof *m);
  if (!m) return NULL;
  GopGraphInfo info;
  gop_graph_info(g, &info);
  m->ctx = ctx;
  m->g = g;
  m->kind = model_table[which].kind;
  m->name = model_table[which].name;
  m->nv = info.num_vertices;
  m->in = o->in_features;
  m->hidden = o->hidden ? o->hidden : model_table[which].hidden;
  m->classes = o->classes;
  m->gat_separate = o->gat_separate;
  if (make_params(m, o->seed) != 0) {
    gop_report(ctx, "model %s: out of memory for its parameters", name);
    gop_model_free(m);
    return NULL;
  }
  m->layers = gop_compile_string(ctx, "examples/models/layers.gop", rt_model_layers_gop);
  m->stdlib = gop_stdlib(ctx);
  if (!m->layers || !m->stdlib || (m->kind == M_GCN && gcn_norm(m) != 0) ||
      (m->kind == M_GAT && gat_graph(m) != 0)) {
    gop_report(ctx, "model %s: cannot prepare its operators or graph", name);
    gop_model_free(m);
    return NULL;
  }
  return m;
}

void gop_model_free(GopModel *m) {
  if (!m) return;
  for (int i = 0; i < m->nparams; i++) gop_array_free(&m->params[i].a);
  free(m->gcn_w);
  free(m->gcn_s);
  free(m); /* m->gs belongs to the context */
}

/* ---- the steps of a forward ---- */

/* Plain C SGEMM, row-major C[n, mm] = A[n, k] . B[k, mm] + beta C, with
 * float accumulation in the i-k-j order (rows of B stream). */
static void cpu_gemm(const float *A, const float *B, float *Cm, int64_t n, int64_t k,
                     int64_t mm, float beta) {
  for (int64_t i = 0; i < n; i++) {
    float *c = Cm + i * mm;
    if (beta == 0.0f)
      memset(c, 0, (size_t)mm * sizeof *c);
    for (int64_t p = 0; p < k; p++) {
      float a = A[i * k + p];
      if (a == 0.0f) continue;
      const float *b = B + p * mm;
      for (int64_t j = 0; j < mm; j++) c[j] += a * b[j];
    }
  }
}

typedef struct GemmWork {
  RtDevTensor a, b, c;
  int n, k, mm;
  float beta;
} GemmWork;

static RtStatus gemm_once(void *ctx, Diag *d) {
  GemmWork *w = ctx;
  return rt_cublas_sgemm_rows(w->a.ptr, w->b.ptr, w->c.ptr, w->n, w->k, w->mm, w->beta, d);
}

/* C = A . B + beta C on the device with cuBLAS, timed; `beta` 0 or 1. */
static int gpu_gemm(GopModel *m, const float *A, const float *B, float *Cm, int64_t n,
                    int64_t k, int64_t mm, float beta) {
  if (n > INT32_MAX || k > INT32_MAX || mm > INT32_MAX) {
    ERR(m, "model %s: a matrix of %lld x %lld is too large for one SGEMM", m->name,
        (long long)n, (long long)k);
    return -1;
  }
  Diag d;
  ir_diag_init(&d, NULL);
  GemmWork w = {.n = (int)n, .k = (int)k, .mm = (int)mm, .beta = beta};
  size_t ba = (size_t)(n * k) * 4, bb = (size_t)(k * mm) * 4, bc = (size_t)(n * mm) * 4;
  RtStatus s = rt_tensor_alloc(&w.a, ba, "gemm A", &d);
  if (!s) s = rt_tensor_alloc(&w.b, bb, "gemm B", &d);
  if (!s) s = rt_tensor_alloc(&w.c, bc, "gemm C", &d);
  if (!s) s = rt_tensor_upload(&w.a, A, ba, &d);
  if (!s) s = rt_tensor_upload(&w.b, B, bb, &d);
  if (!s) s = rt_tensor_upload(&w.c, Cm, bc, &d);
  /* One run gives the result; the timed runs (beta 1 would accumulate)
   * run on a copy that is then dropped. */
  if (!s) s = gemm_once(&w, &d);
  if (!s) s = rt_tensor_download(&w.c, Cm, bc, &d);
  if (!s && m->reps > 0) {
    RtTiming t;
    s = rt_time_work(gemm_once, &w, 3, m->reps, &t, &d);
    if (!s) {
      m->st->gemm_ms += t.median_ms;
      m->st->total_ms += t.median_ms;
    }
  }
  rt_tensor_free(&w.a);
  rt_tensor_free(&w.b);
  rt_tensor_free(&w.c);
  if (s) {
    const char *msg = d.buf ? d.buf : rt_status_name(s);
    if (strncmp(msg, "error: ", 7) == 0) msg += 7;
    ERR(m, "model %s: the dense update on the GPU failed: %s", m->name, msg);
  }
  ir_diag_free(&d);
  m->st->steps++;
  return s ? -1 : 0;
}

static int gemm(GopModel *m, const float *A, const float *B, float *Cm, int64_t n, int64_t k,
                int64_t mm, float beta) {
  if (m->gpu) return gpu_gemm(m, A, B, Cm, n, k, mm, beta);
  cpu_gemm(A, B, Cm, n, k, mm, beta);
  m->st->steps++;
  return 0;
}

/* One tensor binding of an operator step. */
typedef struct Bind {
  const char *name;
  float *data;
} Bind;

/* Runs operator `op` of `mod` on `g` with extents "F=64,H=8" given as
 * name/value pairs and the bindings; on the GPU or the interpreter as the
 * forward says. */
static int run_op(GopModel *m, GopModule *mod, const char *op, const GopGraph *g,
                  const char *s1, int64_t v1, const char *s2, int64_t v2, const Bind *binds,
                  int nbinds) {
  GopOp *o = gop_module_find_op(mod, op);
  if (!o) return -1;
  GopRun *r = gop_run_new(m->ctx, o, g);
  if (!r) return -1;
  if (s1 && gop_run_set_extent(r, s1, v1) != 0) return -1;
  if (s2 && gop_run_set_extent(r, s2, v2) != 0) return -1;
  for (int i = 0; i < nbinds; i++) {
    int64_t shape[8], numel = 1;
    int t = 0;
    for (; t < gop_run_num_tensors(r); t++)
      if (strcmp(gop_run_tensor_name(r, t), binds[i].name) == 0) break;
    if (t == gop_run_num_tensors(r)) {
      ERR(m, "model %s: operator %s has no tensor %s (layers.gop and model.c disagree)",
          m->name, op, binds[i].name);
      return -1;
    }
    int rank = gop_run_tensor_shape(r, t, shape);
    for (int k = 0; k < rank; k++) numel *= shape[k];
    if (rank < 0 || gop_run_bind(r, binds[i].name, binds[i].data, numel) != 0) return -1;
  }
  gop_run_set_device(r, m->gpu ? GOP_DEVICE_GPU : GOP_DEVICE_INTERP);
  gop_run_set_timing(r, 3, m->gpu ? m->reps : 0);
  if (gop_run_exec(r) != 0) return -1;
  const GopRunStats *st = gop_run_stats(r);
  if (m->gpu) {
    m->st->graph_ms += st->median_ms;
    m->st->total_ms += st->median_ms;
  }
  m->st->steps++;
  return 0;
}

static float *alloc_rows(GopModel *m, int64_t width) {
  float *p = calloc((size_t)(m->nv * width) + 1, sizeof(float));
  if (!p) ERR(m, "model %s: out of host memory (%lld x %lld floats)", m->name,
              (long long)m->nv, (long long)width);
  return p;
}

/* relu or no activation after the bias; GAT's hidden layer uses elu. */
static const char *epilogue(bool act) { return act ? "bias_relu" : "bias"; }

static int bias_act(GopModel *m, const char *op, float *X, const float *b, float *Y,
                    int64_t F) {
  Bind bs[] = {{"X", X}, {"b", (float *)b}, {"Y", Y}};
  return run_op(m, m->layers, op, m->g, "F", F, NULL, 0, bs, 3);
}

/* GCN: h = relu(Â X W1 + b1); y = Â h W2 + b2, Â = D^-1/2 (A + I) D^-1/2. */
static int forward_gcn(GopModel *m, const float *x, float *y) {
  int64_t Hd = m->hidden, C = m->classes, w = Hd > C ? Hd : C;
  float *h = alloc_rows(m, Hd), *t = alloc_rows(m, w), *a = alloc_rows(m, w);
  int rc = !h || !t || !a ? -1 : 0;
  for (int l = 1; l <= 2 && rc == 0; l++) {
    int64_t din = l == 1 ? m->in : Hd, dout = l == 1 ? Hd : C;
    rc = gemm(m, l == 1 ? x : h, paramf(m, "conv%d.weight", l), t, m->nv, din, dout, 0);
    Bind bs[] = {{"H", t}, {"Hd", t}, {"W", m->gcn_w}, {"S", m->gcn_s}, {"Y", a}};
    if (!rc) rc = run_op(m, m->layers, "gcn_propagate", m->g, "F", dout, NULL, 0, bs, 5);
    if (!rc)
      rc = bias_act(m, epilogue(l == 1), a, paramf(m, "conv%d.bias", l), l == 1 ? h : y, dout);
  }
  free(h);
  free(t);
  free(a);
  return rc;
}

/* GIN: 5 x h = relu(MLP((1 + eps) h + sum of neighbours)), MLP = Linear,
 * ReLU, Linear; then a Linear classifier. */
static int forward_gin(GopModel *m, const float *x, float *y) {
  int64_t Hd = m->hidden;
  float *h = NULL;
  const float *in = x;
  int64_t din = m->in;
  int rc = 0;
  for (int l = 1; l <= GIN_LAYERS && rc == 0; l++) {
    float *agg = alloc_rows(m, din), *t = alloc_rows(m, Hd), *u = alloc_rows(m, Hd);
    float *out = alloc_rows(m, Hd);
    if (!agg || !t || !u || !out) rc = -1;
    Bind bs[] = {{"X", (float *)in}, {"Xd", (float *)in},
                 {"eps", (float *)paramf(m, "conv%d.eps", l)}, {"Y", agg}};
    if (!rc) rc = run_op(m, m->layers, "gin_aggregate", m->g, "F", din, NULL, 0, bs, 4);
    if (!rc) rc = gemm(m, agg, paramf(m, "conv%d.lin1.weight", l), t, m->nv, din, Hd, 0);
    if (!rc) rc = bias_act(m, "bias_relu", t, paramf(m, "conv%d.lin1.bias", l), u, Hd);
    if (!rc) rc = gemm(m, u, paramf(m, "conv%d.lin2.weight", l), t, m->nv, Hd, Hd, 0);
    if (!rc) rc = bias_act(m, "bias_relu", t, paramf(m, "conv%d.lin2.bias", l), out, Hd);
    free(agg);
    free(t);
    free(u);
    free(h);
    h = out;
    in = h;
    din = Hd;
  }
  float *t = rc ? NULL : alloc_rows(m, m->classes);
  if (!rc && !t) rc = -1;
  if (!rc) rc = gemm(m, h, param(m, "lin.weight"), t, m->nv, Hd, m->classes, 0);
  if (!rc) rc = bias_act(m, "bias", t, param(m, "lin.bias"), y, m->classes);
  free(t);
  free(h);
  return rc;
}

/* One GAT layer on the self-loop graph: z = X W as [V, H, C], attention
 * terms per head, then softmax-weighted aggregation (fused or as three
 * operators), into y [V, H, C]. */
static int gat_layer(GopModel *m, int l, const float *x, int64_t din, int64_t H, int64_t C,
                     float *y) {
  float *z = alloc_rows(m, H * C), *as = alloc_rows(m, H), *ad = alloc_rows(m, H);
  GopGraphInfo gi;
  gop_graph_info(m->gs, &gi);
  float *s = NULL, *p = NULL;
  int rc = !z || !as || !ad ? -1 : 0;
  if (!rc) rc = gemm(m, x, paramf(m, "conv%d.weight", l), z, m->nv, din, H * C, 0);
  Bind ts[] = {{"Z", z}, {"a", (float *)paramf(m, "conv%d.att_src", l)}, {"T", as}};
  if (!rc) rc = run_op(m, m->layers, "gat_terms", m->gs, "H", H, "C", C, ts, 3);
  Bind td[] = {{"Z", z}, {"a", (float *)paramf(m, "conv%d.att_dst", l)}, {"T", ad}};
  if (!rc) rc = run_op(m, m->layers, "gat_terms", m->gs, "H", H, "C", C, td, 3);
  if (!rc && !m->gat_separate) {
    Bind bs[] = {{"Z", z}, {"As", as}, {"Ad", ad}, {"Y", y}};
    rc = run_op(m, m->layers, "gat_attention", m->gs, "H", H, "C", C, bs, 4);
  } else if (!rc) {
    s = calloc((size_t)(gi.num_edges * H) + 1, sizeof *s);
    p = calloc((size_t)(gi.num_edges * H) + 1, sizeof *p);
    if (!s || !p) {
      ERR(m, "model %s: out of host memory for edge scores", m->name);
      rc = -1;
    }
    Bind b1[] = {{"As", as}, {"Ad", ad}, {"S", s}};
    if (!rc) rc = run_op(m, m->layers, "gat_scores", m->gs, "H", H, NULL, 0, b1, 3);
    Bind b2[] = {{"S", s}, {"P", p}};
    if (!rc) rc = run_op(m, m->layers, "edge_softmax_heads", m->gs, "H", H, NULL, 0, b2, 2);
    Bind b3[] = {{"Z", z}, {"P", p}, {"Y", y}};
    if (!rc) rc = run_op(m, m->layers, "gat_aggregate", m->gs, "H", H, "C", C, b3, 3);
  }
  free(s);
  free(p);
  free(z);
  free(as);
  free(ad);
  return rc;
}

/* GAT: h = elu(concat of 8 heads + b1); y = one head + b2 (the mean of one
 * head is itself). */
static int forward_gat(GopModel *m, const float *x, float *y) {
  int64_t Hd = m->hidden, W1 = GAT_HEADS * Hd;
  float *a = alloc_rows(m, W1), *h = alloc_rows(m, W1), *a2 = alloc_rows(m, m->classes);
  int rc = !a || !h || !a2 ? -1 : 0;
  if (!rc) rc = gat_layer(m, 1, x, m->in, GAT_HEADS, Hd, a);
  if (!rc) rc = bias_act(m, "bias_elu", a, param(m, "conv1.bias"), h, W1);
  if (!rc) rc = gat_layer(m, 2, h, W1, 1, m->classes, a2);
  if (!rc) rc = bias_act(m, "bias", a2, param(m, "conv2.bias"), y, m->classes);
  free(a);
  free(h);
  free(a2);
  return rc;
}

/* GraphSAGE: h = relu(agg(x) Wl + bl + x Wr); y = agg(h) Wl2 + bl2 + h Wr2,
 * agg the sum, mean or max over in-neighbours (0 for none). */
static int forward_sage(GopModel *m, const float *x, float *y) {
  const char *agg_op = m->kind == M_SAGE_SUM ? "copy_u_sum"
                       : m->kind == M_SAGE_MEAN ? "copy_u_mean" : "copy_u_max";
  int64_t Hd = m->hidden, C = m->classes;
  int64_t wi = m->in > Hd ? m->in : Hd, wo = Hd > C ? Hd : C;
  float *h = alloc_rows(m, Hd), *agg = alloc_rows(m, wi), *t = alloc_rows(m, wo);
  int rc = !h || !agg || !t ? -1 : 0;
  for (int l = 1; l <= 2 && rc == 0; l++) {
    int64_t din = l == 1 ? m->in : Hd, dout = l == 1 ? Hd : C;
    float *in = l == 1 ? (float *)x : h;
    Bind bs[] = {{"X", in}, {"Y", agg}};
    rc = run_op(m, m->stdlib, agg_op, m->g, "F", din, NULL, 0, bs, 2);
    if (!rc) rc = gemm(m, agg, paramf(m, "conv%d.lin_l.weight", l), t, m->nv, din, dout, 0);
    if (!rc) rc = gemm(m, in, paramf(m, "conv%d.lin_r.weight", l), t, m->nv, din, dout, 1);
    if (!rc)
      rc = bias_act(m, epilogue(l == 1), t, paramf(m, "conv%d.lin_l.bias", l), l == 1 ? h : y,
                    dout);
  }
  free(h);
  free(agg);
  free(t);
  return rc;
}

int gop_model_forward(GopModel *m, const float *x, float *y, GopDevice dev, int reps,
                      GopModelStats *st) {
  GopModelStats local;
  if (!st) st = &local;
  memset(st, 0, sizeof *st);
  m->st = st;
  m->reps = reps > 0 ? reps : 0;
  m->gpu = false;
  if (dev != GOP_DEVICE_INTERP) {
    Diag d;
    ir_diag_init(&d, NULL);
    RtStatus s = rt_cublas_open(&d);
    const char *msg = d.buf ? d.buf : rt_status_name(s);
    if (strncmp(msg, "error: ", 7) == 0) msg += 7; /* said again below */
    if (s == RT_OK) {
      m->gpu = true;
    } else if (dev == GOP_DEVICE_GPU) {
      ERR(m, "model %s: cannot run on the GPU: %s", m->name, msg);
      st->gpu_status = s;
      ir_diag_free(&d);
      return -1;
    } else {
      size_t n = strcspn(msg, "\n");
      snprintf(st->note, sizeof st->note,
               "no GPU (%.*s): ran on the reference interpreter and a C GEMM",
               (int)(n > 160 ? 160 : n), msg);
    }
    ir_diag_free(&d);
  }
  st->on_gpu = m->gpu;
  snprintf(st->device, sizeof st->device, "%s",
           m->gpu ? rt_cuda_device_name() : "interpreter");
  if (m->gpu) snprintf(st->blas, sizeof st->blas, "%s", rt_cublas_name());
  double t0 = rt_wall_seconds();
  int rc;
  switch (m->kind) {
  case M_GCN: rc = forward_gcn(m, x, y); break;
  case M_GIN: rc = forward_gin(m, x, y); break;
  case M_GAT: rc = forward_gat(m, x, y); break;
  default: rc = forward_sage(m, x, y); break;
  }
  st->seconds = rt_wall_seconds() - t0;
  m->st = NULL;
  return rc;
}
