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
 * compare; docs/models.md gives the formulas.
 *
 * Parameters are named arrays ("conv1.weight" [in, out], row-major, so
 * that X.W needs no transposition), filled from a seeded generator or read
 * from DIR/NAME.npy. On the GPU every tensor of a forward lives on the
 * device: the features and parameters go up once, the intermediates are
 * device buffers, the operators run through the device-pointer API
 * (gop_run_bind_device, gop_run_launch) and the dense updates through
 * cuBLAS, all queued in the legacy stream with no copy or wait between
 * steps, and the output comes back once. The time reported is the median
 * of whole forwards between CUDA events.
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
enum { GIN_LAYERS = 5, GAT_HEADS = 8, MAX_PARAMS = 32, MAX_BUFS = 96, MAX_RUNS = 48 };

typedef enum { PASS_INTERP, PASS_PLAN, PASS_LAUNCH } Pass; /* see "the steps of a forward" */

/* One tensor of the forward: host memory on the interpreter, device memory
 * on the GPU. */
typedef struct Buf {
  float *h;       /* PASS_INTERP: the data */
  bool borrowed;  /* h is the caller's or a parameter's */
  RtDevTensor d;  /* the GPU passes */
} Buf;

typedef struct Param {
  char name[48];
  GopArray a;
} Param;

struct GopModel {
  GopContext *ctx;
  const GopGraph *g;  /* the graph as given */
  GopGraph *gs;       /* GAT, GCN: with exactly one self-loop per vertex;
                         GIN: every arc of g, then one self-loop per vertex */
  ModelKind kind;
  const char *name;
  int64_t nv, in, hidden, classes;
  bool gat_separate;
  Param params[MAX_PARAMS];
  int nparams;
  GopModule *layers, *stdlib;
  float *gcn_w;         /* GCN: the normalisation of each edge of gs */
  int64_t ne;           /* GCN: edges of gs */
  /* the forward in progress */
  Pass pass;
  int reps;
  GopModelStats *st;
  Buf *x, *y;
  Buf *pool;            /* MAX_BUFS: the tensors of one forward */
  int npool, ipool;     /* made, and met by the pass so far */
  GopRun *runs[MAX_RUNS]; /* the GPU's operator steps, kept from forward to
                             forward (made once) and freed with the model */
  int nruns, irun;
  bool launch_failed;
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

/* The graph of GAT and GCN, as PyG's GATConv(add_self_loops=True) and
 * gcn_norm (add_remaining_self_loops): the file's self-loops removed, then
 * one per vertex appended (edge ids after the others). GIN's: every arc of
 * the file kept (PyG's GINConv sums over edge_index as given, its
 * self-loops included), then one self-loop per vertex, weighted 1 + eps. */
static int self_loop_graph(GopModel *m) {
  const int32_t *src, *dst;
  int64_t ne = gop_graph_arcs(m->g, &src, &dst);
  bool keep = m->kind == M_GIN; /* GIN: the file's self-loops are neighbours */
  int64_t *s = malloc((size_t)(ne + m->nv + 1) * sizeof *s);
  int64_t *d = malloc((size_t)(ne + m->nv + 1) * sizeof *d);
  if (!s || !d) {
    free(s);
    free(d);
    return -1;
  }
  int64_t n = 0;
  for (int64_t e = 0; e < ne; e++)
    if (keep || src[e] != dst[e]) {
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

/* GCN's normalisation on the self-loop graph: deg(v) is v's in-edges there
 * (the self-loop included), and an edge u -> v weighs
 * 1 / sqrt(deg(u) deg(v)), so the self-loop's weight is 1 / deg(v). One
 * u_mul_e_sum over that graph is then GCN's whole propagation: the
 * standard library's operator, whose default schedule PyG-sized graphs
 * favour (the fused two-stage gcn_propagate ran 0.65x PyG on ogbn-arxiv,
 * its heaviest vertex having 13,155 in-edges). */
static int gcn_norm(GopModel *m) {
  const int32_t *src, *dst;
  int64_t ne = m->ne = gop_graph_arcs(m->gs, &src, &dst);
  double *deg = calloc((size_t)m->nv + 1, sizeof *deg);
  m->gcn_w = malloc((size_t)(ne > 0 ? ne : 1) * sizeof(float));
  if (!deg || !m->gcn_w) {
    free(deg);
    return -1;
  }
  for (int64_t e = 0; e < ne; e++) deg[dst[e]] += 1;
  for (int64_t e = 0; e < ne; e++)
    m->gcn_w[e] = (float)(1.0 / sqrt(deg[src[e]] * deg[dst[e]]));
  free(deg);
  return 0;
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
  m->pool = calloc(MAX_BUFS, sizeof *m->pool);
  if (!m->pool || make_params(m, o->seed) != 0) {
    gop_report(ctx, "model %s: out of memory for its parameters", name);
    gop_model_free(m);
    return NULL;
  }
  m->layers = gop_compile_string(ctx, "examples/models/layers.gop", rt_model_layers_gop);
  m->stdlib = gop_stdlib(ctx);
  if (!m->layers || !m->stdlib ||
      ((m->kind == M_GAT || m->kind == M_GCN || m->kind == M_GIN) &&
       self_loop_graph(m) != 0) ||
      (m->kind == M_GCN && gcn_norm(m) != 0)) {
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
  free(m->pool);
  /* its runs and self-loop graph, so that the caller's graph can be freed
   * after the model (gop_graph_free refuses a graph with runs) */
  for (int i = 0; i < m->nruns; i++) gop_run_free(m->runs[i]);
  gop_graph_free(m->ctx, m->gs);
  free(m);
}

/* ---- the steps of a forward ----
 *
 * A forward is written once, as a straight list of steps over Bufs, and
 * run in one of three passes:
 *   PASS_INTERP  host Bufs; each step runs at once (the C GEMM, the
 *                reference interpreter);
 *   PASS_PLAN    device Bufs: allocates the intermediates, uploads the
 *                parameters and tables, makes each operator's GopRun bound
 *                to its device pointers and prepares it (kernels, the
 *                graph's upload); nothing is launched;
 *   PASS_LAUNCH  queues every step in the legacy stream, cuBLAS's and the
 *                runs' alike: no allocation, no copy, no wait.
 * The passes meet the same steps in the same order, so the n-th Buf and
 * the n-th run of a LAUNCH pass are those the PLAN pass made. */

/* Reports a failure of the runtime as the model's. */
static int gpu_failed(GopModel *m, RtStatus s, Diag *d, const char *what) {
  ERR(m, "model %s: %s on the GPU failed: %s", m->name, what, rt_reason(d, s));
  if (!m->st->gpu_status) m->st->gpu_status = s;
  return -1;
}

/* The next Buf of the pass: made (holding `n` floats, a copy of `host` when
 * given, else zeros) the first time, the same one in a LAUNCH pass. NULL
 * after reporting. */
static Buf *buf(GopModel *m, const float *host, int64_t n) {
  if (m->ipool < m->npool) return &m->pool[m->ipool++];
  if (m->pass == PASS_LAUNCH || m->npool == MAX_BUFS) {
    ERR(m, "model %s: more than %d tensors in one forward", m->name, MAX_BUFS);
    return NULL;
  }
  Buf *b = &m->pool[m->npool];
  memset(b, 0, sizeof *b);
  if (m->pass == PASS_INTERP) {
    b->borrowed = host != NULL;
    b->h = host ? (float *)host : calloc((size_t)n + 1, sizeof(float));
    if (!b->h) {
      ERR(m, "model %s: out of host memory (%lld floats)", m->name, (long long)n);
      return NULL;
    }
  } else {
    Diag d;
    ir_diag_init(&d, NULL);
    size_t bytes = (size_t)(n > 0 ? n : 1) * sizeof(float);
    RtStatus s = rt_tensor_alloc(&b->d, bytes, host ? "model parameter" : "model tensor", &d);
    if (!s && host && n > 0) s = rt_tensor_upload(&b->d, host, (size_t)n * sizeof(float), &d);
    if (!s && !host) s = rt_tensor_fill32(&b->d, 0, &d);
    if (s) {
      rt_tensor_free(&b->d);
      gpu_failed(m, s, &d, host ? "uploading a parameter" : "allocating a tensor");
    }
    ir_diag_free(&d);
    if (s) return NULL;
  }
  m->npool++;
  m->ipool++;
  return b;
}

static void buf_free(Buf *b) {
  if (!b->borrowed) free(b->h);
  rt_tensor_free(&b->d);
  memset(b, 0, sizeof *b);
}

static Buf *rows(GopModel *m, int64_t width) { return buf(m, NULL, m->nv * width); }

/* A parameter as a Buf: on the GPU, uploaded by the PLAN pass. */
static Buf *param(GopModel *m, const char *name) {
  for (int i = 0; i < m->nparams; i++)
    if (strcmp(m->params[i].name, name) == 0) {
      const GopArray *a = &m->params[i].a;
      return buf(m, a->data, a->ndim == 1 ? a->shape[0] : a->shape[0] * a->shape[1]);
    }
  unreachable("a parameter the model did not make"); /* make_params makes every name */
}

static Buf *paramf(GopModel *m, const char *fmt, int layer) {
  char name[48];
  snprintf(name, sizeof name, fmt, layer);
  return param(m, name);
}

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

/* C = A . B + beta C (`beta` 0 or 1): the C loop, or cuBLAS queued in the
 * legacy stream. */
static int gemm(GopModel *m, Buf *A, Buf *B, Buf *Cm, int64_t n, int64_t k, int64_t mm,
                float beta) {
  if (!A || !B || !Cm) return -1;
  if (m->pass == PASS_INTERP) {
    cpu_gemm(A->h, B->h, Cm->h, n, k, mm, beta);
    m->st->steps++;
    return 0;
  }
  if (m->pass == PASS_PLAN) {
    if (n > INT32_MAX || k > INT32_MAX || mm > INT32_MAX) {
      ERR(m, "model %s: a matrix of %lld x %lld is too large for one SGEMM", m->name,
          (long long)n, (long long)k);
      return -1;
    }
    m->st->steps++;
    return 0;
  }
  Diag d;
  ir_diag_init(&d, NULL);
  RtStatus s = rt_cublas_sgemm_rows(A->d.ptr, B->d.ptr, Cm->d.ptr, (int)n, (int)k, (int)mm,
                                    beta, &d);
  int rc = s ? gpu_failed(m, s, &d, "the dense update") : 0;
  ir_diag_free(&d);
  return rc;
}

/* One tensor binding of an operator step. */
typedef struct Bind {
  const char *name;
  Buf *b;
} Bind;

/* A new GPU step of a standard-library operator (the aggregations) runs
 * the schedule gop_choose_schedule picks for its graph and row width (the
 * cost model, as `gopc run` without --schedule), not the API's fixed
 * default: on the H100 that default was 2.5x slower than the tuned best in
 * geometric mean (bench/NOTES.md, 2026-11-25), and the choice took GCN on
 * ogbn-arxiv from 3.6 to 0.42 ms and GraphSAGE from 0.9-1.2 to 0.7-0.8 ms.
 * The layers' own operators keep the default: the cost model is fitted on
 * aggregation, and its pick for GAT's fused attention took 39 ms where the
 * default takes 2.5. An operator nothing applies to keeps it too. */
static int choose(GopModel *m, GopRun *r, const GopGraph *g, int64_t F) {
  (void)m;
  GopScheduleChoice ch;
  int rc = gop_choose_schedule(gop_run_op(r), g, F, NULL, &ch);
  if (rc == GOP_NO_SCHEDULE) return 0; /* nothing applies: the default mapping */
  if (rc != 0) return -1;              /* reported (out of memory, say): not hidden */
  GopCompileOptions o = {.schedule = ch.schedule};
  return gop_run_set_compile(r, &o);
}

/* Operator `op` of `mod` on `g` with extents given as name/value pairs and
 * the bindings: run on the interpreter, planned, or launched, as the pass
 * says. */
static int run_op(GopModel *m, GopModule *mod, const char *op, const GopGraph *g,
                  const char *s1, int64_t v1, const char *s2, int64_t v2, const Bind *binds,
                  int nbinds) {
  for (int i = 0; i < nbinds; i++)
    if (!binds[i].b) return -1;
  if (m->pass == PASS_LAUNCH) {
    if (m->irun == m->nruns) unreachable("a LAUNCH pass met a step its PLAN pass did not");
    return gop_run_launch(m->runs[m->irun++]) == 0 ? 0 : -1;
  }
  GopRun *r = m->pass == PASS_PLAN && m->irun < m->nruns ? m->runs[m->irun] : NULL;
  if (!r) {
    GopOp *o = gop_module_find_op(mod, op);
    if (!o || !(r = gop_run_new(m->ctx, o, g))) return -1;
  }
  if (s1 && gop_run_set_extent(r, s1, v1) != 0) return -1;
  if (s2 && gop_run_set_extent(r, s2, v2) != 0) return -1;
  if (m->pass == PASS_PLAN && m->irun == m->nruns && mod == m->stdlib &&
      choose(m, r, g, (s1 ? v1 : 1) * (s2 ? v2 : 1)) != 0)
    return -1;
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
    if (rank < 0) return -1;
    const Buf *b = binds[i].b;
    if ((m->pass == PASS_INTERP ? gop_run_bind(r, binds[i].name, b->h, numel)
                                : gop_run_bind_device(r, binds[i].name, b->d.ptr, numel)) != 0)
      return -1;
  }
  m->st->steps++;
  if (m->pass == PASS_INTERP) {
    gop_run_set_device(r, GOP_DEVICE_INTERP);
    gop_run_set_timing(r, 3, 0);
    int rc = gop_run_exec(r) == 0 ? 0 : -1;
    gop_run_free(r); /* made for this step: a forward per step must not grow */
    return rc;
  }
  gop_run_set_stream(r, NULL); /* the legacy stream: cuBLAS's too */
  if (gop_run_prepare(r) != 0) return -1;
  if (m->irun == m->nruns) {
    if (m->nruns == MAX_RUNS) {
      ERR(m, "model %s: more than %d operator steps in one forward", m->name, MAX_RUNS);
      return -1;
    }
    m->runs[m->nruns++] = r;
  }
  m->irun++;
  return 0;
}

/* relu or no activation after the bias; GAT's hidden layer uses elu. */
static const char *epilogue(bool act) { return act ? "bias_relu" : "bias"; }

static int bias_act(GopModel *m, const char *op, Buf *X, Buf *b, Buf *Y, int64_t F) {
  Bind bs[] = {{"X", X}, {"b", b}, {"Y", Y}};
  return run_op(m, m->layers, op, m->g, "F", F, NULL, 0, bs, 3);
}

/* GCN: h = relu(Â X W1 + b1); y = Â h W2 + b2, Â = D^-1/2 (A + I) D^-1/2. */
static int forward_gcn(GopModel *m, Buf *x, Buf *y) {
  int64_t Hd = m->hidden, C = m->classes, w = Hd > C ? Hd : C;
  Buf *h = rows(m, Hd), *t = rows(m, w), *a = rows(m, w);
  Buf *gw = buf(m, m->gcn_w, m->ne);
  int rc = 0;
  for (int l = 1; l <= 2 && rc == 0; l++) {
    int64_t din = l == 1 ? m->in : Hd, dout = l == 1 ? Hd : C;
    rc = gemm(m, l == 1 ? x : h, paramf(m, "conv%d.weight", l), t, m->nv, din, dout, 0);
    Bind bs[] = {{"X", t}, {"W", gw}, {"Y", a}};
    if (!rc) rc = run_op(m, m->stdlib, "u_mul_e_sum", m->gs, "F", dout, NULL, 0, bs, 3);
    if (!rc)
      rc = bias_act(m, epilogue(l == 1), a, paramf(m, "conv%d.bias", l), l == 1 ? h : y, dout);
  }
  return rc;
}

/* GIN: 5 x h = relu(MLP((1 + eps) h + sum of neighbours)), MLP = Linear,
 * ReLU, Linear; then a Linear classifier. The aggregation is GCN's: one
 * u_mul_e_sum over the graph with a self-loop per vertex appended, the
 * file's arcs weighing 1 and the self-loop 1 + eps, so that it takes the
 * schedule gop_choose_schedule picks (run_op) like any stdlib aggregation;
 * layers.gin_aggregate ran the default mapping, 0.83x PyG on ogbn-arxiv
 * (its heaviest vertex has 13,155 in-edges). The weights of each layer are
 * made from its eps when the forward is planned (uploaded then) or run on
 * the interpreter. */
static int forward_gin(GopModel *m, Buf *x, Buf *y) {
  int64_t Hd = m->hidden, din = m->in;
  Buf *agg = rows(m, din > Hd ? din : Hd), *t = rows(m, Hd), *u = rows(m, Hd);
  Buf *h[2] = {rows(m, Hd), rows(m, Hd)};
  Buf *in = x;
  const int32_t *src, *dst;
  int64_t ne = gop_graph_arcs(m->gs, &src, &dst), nfile = ne - m->nv;
  float *w = m->pass == PASS_LAUNCH ? NULL : malloc((size_t)(ne > 0 ? ne : 1) * sizeof *w);
  if (m->pass != PASS_LAUNCH && !w) {
    ERR(m, "model %s: out of host memory for the edge weights", m->name);
    return -1;
  }
  for (int64_t e = 0; w && e < nfile; e++) w[e] = 1.0f;
  int rc = 0;
  for (int l = 1; l <= GIN_LAYERS && rc == 0; l++) {
    Buf *out = h[l % 2];
    if (w) {
      char name[48];
      snprintf(name, sizeof name, "conv%d.eps", l);
      float one_eps = 1.0f;
      for (int i = 0; i < m->nparams; i++)
        if (strcmp(m->params[i].name, name) == 0) one_eps = 1.0f + m->params[i].a.data[0];
      for (int64_t v = 0; v < m->nv; v++) w[nfile + v] = one_eps;
    }
    Bind bs[] = {{"X", in}, {"W", buf(m, w, ne)}, {"Y", agg}};
    rc = run_op(m, m->stdlib, "u_mul_e_sum", m->gs, "F", din, NULL, 0, bs, 3);
    if (!rc) rc = gemm(m, agg, paramf(m, "conv%d.lin1.weight", l), t, m->nv, din, Hd, 0);
    if (!rc) rc = bias_act(m, "bias_relu", t, paramf(m, "conv%d.lin1.bias", l), u, Hd);
    if (!rc) rc = gemm(m, u, paramf(m, "conv%d.lin2.weight", l), t, m->nv, Hd, Hd, 0);
    if (!rc) rc = bias_act(m, "bias_relu", t, paramf(m, "conv%d.lin2.bias", l), out, Hd);
    in = out;
    din = Hd;
  }
  Buf *c = rows(m, m->classes);
  if (!rc) rc = gemm(m, in, param(m, "lin.weight"), c, m->nv, Hd, m->classes, 0);
  if (!rc) rc = bias_act(m, "bias", c, param(m, "lin.bias"), y, m->classes);
  free(w);
  return rc;
}

/* One GAT layer on the self-loop graph: z = X W as [V, H, C], attention
 * terms per head, then softmax-weighted aggregation (fused or as three
 * operators), into y [V, H, C]. */
static int gat_layer(GopModel *m, int l, Buf *x, int64_t din, int64_t H, int64_t C, Buf *y) {
  Buf *z = rows(m, H * C), *as = rows(m, H), *ad = rows(m, H);
  int rc = gemm(m, x, paramf(m, "conv%d.weight", l), z, m->nv, din, H * C, 0);
  Bind ts[] = {{"Z", z}, {"a", paramf(m, "conv%d.att_src", l)}, {"T", as}};
  if (!rc) rc = run_op(m, m->layers, "gat_terms", m->gs, "H", H, "C", C, ts, 3);
  Bind td[] = {{"Z", z}, {"a", paramf(m, "conv%d.att_dst", l)}, {"T", ad}};
  if (!rc) rc = run_op(m, m->layers, "gat_terms", m->gs, "H", H, "C", C, td, 3);
  if (!rc && !m->gat_separate) {
    Bind bs[] = {{"Z", z}, {"As", as}, {"Ad", ad}, {"Y", y}};
    rc = run_op(m, m->layers, "gat_attention", m->gs, "H", H, "C", C, bs, 4);
  } else if (!rc) {
    GopGraphInfo gi;
    gop_graph_info(m->gs, &gi);
    Buf *s = buf(m, NULL, gi.num_edges * H), *p = buf(m, NULL, gi.num_edges * H);
    Bind b1[] = {{"As", as}, {"Ad", ad}, {"S", s}};
    rc = run_op(m, m->layers, "gat_scores", m->gs, "H", H, NULL, 0, b1, 3);
    Bind b2[] = {{"S", s}, {"P", p}};
    if (!rc) rc = run_op(m, m->layers, "edge_softmax_heads", m->gs, "H", H, NULL, 0, b2, 2);
    Bind b3[] = {{"Z", z}, {"P", p}, {"Y", y}};
    if (!rc) rc = run_op(m, m->layers, "gat_aggregate", m->gs, "H", H, "C", C, b3, 3);
  }
  return rc;
}

/* GAT: h = elu(concat of 8 heads + b1); y = one head + b2 (the mean of one
 * head is itself). */
static int forward_gat(GopModel *m, Buf *x, Buf *y) {
  int64_t Hd = m->hidden, W1 = GAT_HEADS * Hd;
  Buf *a = rows(m, W1), *h = rows(m, W1), *a2 = rows(m, m->classes);
  int rc = gat_layer(m, 1, x, m->in, GAT_HEADS, Hd, a);
  if (!rc) rc = bias_act(m, "bias_elu", a, param(m, "conv1.bias"), h, W1);
  if (!rc) rc = gat_layer(m, 2, h, W1, 1, m->classes, a2);
  if (!rc) rc = bias_act(m, "bias", a2, param(m, "conv2.bias"), y, m->classes);
  return rc;
}

/* GraphSAGE: h = relu(agg(x) Wl + bl + x Wr); y = agg(h) Wl2 + bl2 + h Wr2,
 * agg the sum, mean or max over in-neighbours (0 for none). */
static int forward_sage(GopModel *m, Buf *x, Buf *y) {
  const char *agg_op = m->kind == M_SAGE_SUM ? "copy_u_sum"
                       : m->kind == M_SAGE_MEAN ? "copy_u_mean" : "copy_u_max";
  int64_t Hd = m->hidden, C = m->classes;
  int64_t wi = m->in > Hd ? m->in : Hd, wo = Hd > C ? Hd : C;
  Buf *h = rows(m, Hd), *agg = rows(m, wi), *t = rows(m, wo);
  int rc = 0;
  for (int l = 1; l <= 2 && rc == 0; l++) {
    int64_t din = l == 1 ? m->in : Hd, dout = l == 1 ? Hd : C;
    Buf *in = l == 1 ? x : h;
    Bind bs[] = {{"X", in}, {"Y", agg}};
    rc = run_op(m, m->stdlib, agg_op, m->g, "F", din, NULL, 0, bs, 2);
    if (!rc) rc = gemm(m, agg, paramf(m, "conv%d.lin_l.weight", l), t, m->nv, din, dout, 0);
    if (!rc) rc = gemm(m, in, paramf(m, "conv%d.lin_r.weight", l), t, m->nv, din, dout, 1);
    if (!rc)
      rc = bias_act(m, epilogue(l == 1), t, paramf(m, "conv%d.lin_l.bias", l), l == 1 ? h : y,
                    dout);
  }
  return rc;
}

/* One pass of the forward from x into y. */
static int forward(GopModel *m, Pass pass) {
  m->pass = pass;
  m->ipool = m->irun = 0;
  switch (m->kind) {
  case M_GCN: return forward_gcn(m, m->x, m->y);
  case M_GIN: return forward_gin(m, m->x, m->y);
  case M_GAT: return forward_gat(m, m->x, m->y);
  default: return forward_sage(m, m->x, m->y);
  }
}

/* A timed repetition: one LAUNCH pass. A failure is already reported. */
static RtStatus launch_work(void *ctx, Diag *d) {
  GopModel *m = ctx;
  if (forward(m, PASS_LAUNCH) == 0) return RT_OK;
  m->launch_failed = true;
  return RT_ERR;
}

/* The forward on the GPU: x up once, everything planned, one LAUNCH pass
 * for the result, `reps` more timed as whole forwards between CUDA events,
 * y down once. */
static int forward_gpu(GopModel *m, const float *x, float *y) {
  Buf xb = {0}, yb = {0};
  m->x = &xb;
  m->y = &yb;
  Diag d;
  ir_diag_init(&d, NULL);
  size_t bx = (size_t)(m->nv * m->in) * sizeof(float);
  size_t by = (size_t)(m->nv * m->classes) * sizeof(float);
  RtStatus s = rt_tensor_alloc(&xb.d, bx ? bx : 4, "model input X", &d);
  if (!s) s = rt_tensor_alloc(&yb.d, by ? by : 4, "model output Y", &d);
  if (!s && bx) s = rt_tensor_upload(&xb.d, x, bx, &d);
  int rc = s ? gpu_failed(m, s, &d, "uploading the input") : 0;
  if (!rc) rc = forward(m, PASS_PLAN);
  if (!rc) rc = forward(m, PASS_LAUNCH);
  if (!rc && m->reps > 0) {
    RtTiming t;
    m->launch_failed = false;
    s = rt_time_work(launch_work, m, 0, m->reps, &t, &d);
    if (s && !m->launch_failed) rc = gpu_failed(m, s, &d, "timing the forward");
    else if (s) rc = -1;
    m->st->total_ms = t.median_ms;
    m->st->min_ms = t.min_ms;
    m->st->reps = m->reps;
  }
  if (!rc && by && (s = rt_tensor_download(&yb.d, y, by, &d)))
    rc = gpu_failed(m, s, &d, "the forward (or copying its output back)");
  ir_diag_free(&d);
  buf_free(&xb);
  buf_free(&yb);
  return rc;
}

int gop_model_forward(GopModel *m, const float *x, float *y, GopDevice dev, int reps,
                      GopModelStats *st) {
  GopModelStats local;
  if (!st) st = &local;
  memset(st, 0, sizeof *st);
  m->st = st;
  m->reps = reps > 0 ? reps : 0;
  bool gpu = false;
  if (dev != GOP_DEVICE_INTERP) {
    Diag d;
    ir_diag_init(&d, NULL);
    RtStatus s = rt_cublas_open(&d);
    const char *msg = rt_reason(&d, s); /* said again below */
    if (s == RT_OK) {
      gpu = true;
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
  st->on_gpu = gpu;
  snprintf(st->device, sizeof st->device, "%s", gpu ? rt_cuda_device_name() : "interpreter");
  if (gpu) snprintf(st->blas, sizeof st->blas, "%s", rt_cublas_name());
  double t0 = rt_wall_seconds();
  m->npool = 0;
  int rc;
  if (gpu) {
    rc = forward_gpu(m, x, y);
  } else {
    Buf xb = {.h = (float *)x, .borrowed = true}, yb = {.h = y, .borrowed = true};
    m->x = &xb;
    m->y = &yb;
    rc = forward(m, PASS_INTERP);
  }
  for (int i = 0; i < m->npool; i++) buf_free(&m->pool[i]);
  m->npool = 0;
  m->x = m->y = NULL;
  st->seconds = rt_wall_seconds() - t0;
  m->st = NULL;
  return rc;
}
