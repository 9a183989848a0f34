/* runtime/exec.c: runs a compiled program on the GPU.
 *
 * A CgProgram (from codegen, or read from a kernel pack on a machine with
 * no LLVM) says everything a launch needs: each kernel's parameters in
 * order, the rule that sizes its grid, and each tensor's shape and the
 * reduction that targets it. This file binds those parameters to device
 * buffers, initialises outputs, launches the stages in order, times the
 * whole op with events and brings the outputs back.
 *
 * Device copies of graphs are cached per host graph, because a tuner or a
 * model runs many operators over one graph: uploading its CSR each time
 * would cost more than the kernels.
 */
#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "codegen/codegen.h"
#include "cuda.def"
#include "runtime.h"

enum { GRAPH_CACHE = 4 };

static RtDevGraph graph_cache[GRAPH_CACHE];
static uint32_t graph_epoch[GRAPH_CACHE]; /* driver session of each entry */
/* Guards the graph cache, which every context's host-copy runs share: a
 * run holds it from the graph's upload to its last copy back, so another
 * thread cannot evict the graph under it. Host-copy runs (gop_run_exec on
 * the GPU: copies, a synchronous run, timing) therefore take turns; the
 * device-resident runs (api/device.c) keep their graphs per GopGraph and
 * do not take it. */
static pthread_mutex_t graph_cache_lock = PTHREAD_MUTEX_INITIALIZER;

static double copy_bandwidth(void);

void rt_exec_forget_graph(const Graph *g) {
  pthread_mutex_lock(&graph_cache_lock);
  for (int i = 0; i < GRAPH_CACHE; i++)
    if (graph_cache[i].host == g) {
      rt_devgraph_groups_free(&graph_cache[i]);
      rt_devgraph_free(&graph_cache[i]);
      memset(&graph_cache[i], 0, sizeof graph_cache[i]);
    }
  pthread_mutex_unlock(&graph_cache_lock);
}

/* The cached device graph of `g`, evicting the oldest entry if needed. */
static RtDevGraph *device_graph(const Graph *g) {
  uint32_t epoch = rt_cuda_epoch();
  for (int i = 0; i < GRAPH_CACHE; i++)
    if (graph_cache[i].host == g) {
      if (graph_epoch[i] == epoch) return &graph_cache[i];
      rt_devgraph_init(&graph_cache[i], g); /* the driver was reopened */
      graph_epoch[i] = epoch;
      return &graph_cache[i];
    }
  int slot = 0;
  for (int i = 0; i < GRAPH_CACHE; i++)
    if (!graph_cache[i].host) {
      slot = i;
      break;
    }
  if (graph_cache[slot].host) {
    rt_devgraph_groups_free(&graph_cache[slot]);
    rt_devgraph_free(&graph_cache[slot]);
    /* keep later entries in age order: the oldest is always slot 0 */
    memmove(&graph_cache[0], &graph_cache[1], sizeof graph_cache[0] * (GRAPH_CACHE - 1));
    memmove(&graph_epoch[0], &graph_epoch[1], sizeof graph_epoch[0] * (GRAPH_CACHE - 1));
    slot = GRAPH_CACHE - 1;
  }
  rt_devgraph_init(&graph_cache[slot], g);
  graph_epoch[slot] = epoch;
  ((Graph *)g)->on_free = rt_exec_forget_graph; /* a memo: see graph.h */
  return &graph_cache[slot];
}

/* ---- the index width (docs/index64.md) ---- */

int rt_index_bits(const Graph *g) {
  const char *force = getenv("GOP_INDEX64");
  if ((force && strcmp(force, "1") == 0) || g->index64) return 64;
  return cg_index_bits_needed(g->nv, g->ne);
}

bool rt_csr_edges(const Graph *g) {
  const char *off = getenv("GOP_CSR_EDGES");
  return g->csr_edges && !(off && strcmp(off, "0") == 0);
}

RtStatus rt_check_layout(const CgProgram *p, const Graph *g, Diag *d) {
  int have = cg_program_index_bits(p), want = rt_index_bits(g);
  const char *name = g->name ? g->name : "the graph";
  if (p->csr_edges && !g->csr_edges) {
    ir_error(d, (Loc){0}, "%s was compiled for edge ids in CSR order (an in-edge's id is "
             "its position among the in-edges by destination), but the edge ids of %s "
             "are in another order: compile it for this graph, or reorder the graph "
             "(--reorder none numbers its edges in CSR order; docs/gpu-ir.md)", p->op, name);
    return RT_ERR;
  }
  if (have == want) return RT_OK;
  if (want == 64 && cg_index_bits_needed(g->nv, g->ne) == 64)
    ir_error(d, (Loc){0}, "%s was compiled for 32-bit indices, but %s has %lld edges "
             "(more than %lld): it needs kernels of 64-bit indices (gopc pack --index64, "
             "or compile with GOP_INDEX64=1; docs/index64.md)", p->op, name,
             (long long)g->ne, (long long)CG_INDEX32_MAX_EDGES);
  else if (want == 64 && g->index64)
    ir_error(d, (Loc){0}, "%s was compiled for 32-bit indices, but %s stands in for a "
             "graph past 2^31 edges and runs with 64-bit ones (docs/index64.md)", p->op, name);
  else if (want == 64)
    ir_error(d, (Loc){0}, "%s was compiled for 32-bit indices, but GOP_INDEX64=1 asks "
             "for kernels of 64-bit indices (pack it with gopc pack --index64; "
             "docs/index64.md)", p->op);
  else
    ir_error(d, (Loc){0}, "%s was compiled for 64-bit indices, but %s (%lld edges) runs "
             "with 32-bit ones: set GOP_INDEX64=1 to run 64-bit kernels on a small "
             "graph, or pack it without --index64 (docs/index64.md)", p->op, name,
             (long long)g->ne);
  return RT_ERR;
}

/* The graph format a kernel parameter lives in, or -1 for non-graph ones. */
static int param_format(CgParamKind k) {
  switch (k) {
  case CG_PARAM_SRC: case CG_PARAM_DST: return RT_FMT_COO;
  case CG_PARAM_IN_PTR: case CG_PARAM_IN_EID: case CG_PARAM_IN_SRC: return RT_FMT_CSR;
  case CG_PARAM_OUT_PTR: case CG_PARAM_OUT_EID: case CG_PARAM_OUT_DST: return RT_FMT_CSC;
  case CG_PARAM_TENSOR: case CG_PARAM_NV: case CG_PARAM_NE: case CG_PARAM_SYM:
  case CG_PARAM_GRP_DST: case CG_PARAM_GRP_FIRST: case CG_PARAM_GRP_END:
  case CG_PARAM_NGROUPS: /* the group table: prepare_launch */
  case CG_PARAM_GRP_VPTR: case CG_PARAM_GRP_VROW:
  case CG_PARAM_GRP_UNOWNED: case CG_PARAM_NUNOWNED:
  case CG_PARAM_GRP_OWN: case CG_PARAM_PAIR_SRC: case CG_PARAM_PAIR_MASK:
  case CG_PARAM_PAIR_POS:
  case CG_PARAM_COUNT:
    return -1;
  }
  return -1;
}

static const RtDevTensor *graph_array(const RtDevGraph *dg, CgParamKind k) {
  switch (k) {
  case CG_PARAM_SRC: return &dg->src;
  case CG_PARAM_DST: return &dg->dst;
  case CG_PARAM_IN_PTR: return &dg->in_ptr;
  case CG_PARAM_IN_EID: return &dg->in_eid;
  case CG_PARAM_IN_SRC: return &dg->in_src;
  case CG_PARAM_OUT_PTR: return &dg->out_ptr;
  case CG_PARAM_OUT_EID: return &dg->out_eid;
  case CG_PARAM_OUT_DST: return &dg->out_dst;
  case CG_PARAM_TENSOR: case CG_PARAM_NV: case CG_PARAM_NE: case CG_PARAM_SYM:
  case CG_PARAM_GRP_DST: case CG_PARAM_GRP_FIRST: case CG_PARAM_GRP_END:
  case CG_PARAM_NGROUPS: case CG_PARAM_GRP_VPTR: case CG_PARAM_GRP_VROW:
  case CG_PARAM_GRP_UNOWNED: case CG_PARAM_NUNOWNED:
  case CG_PARAM_GRP_OWN: case CG_PARAM_PAIR_SRC: case CG_PARAM_PAIR_MASK:
  case CG_PARAM_PAIR_POS:
  case CG_PARAM_COUNT:
    return NULL;
  }
  return NULL;
}

/* Elements of tensor `t` on `g` with `syms`; -1 if a symbol is unknown.
 * A graph built on the device counts its table's rows through `dg`
 * (NULL elsewhere). */
static int64_t tensor_numel(const CgTensorInfo *t, const Graph *g, RtDevGraph *dg,
                            const int64_t *syms, int nsyms) {
  int64_t n = t->domain == IR_DOM_EDGE ? g->ne : t->domain == IR_DOM_DENSE ? 1 : g->nv;
  if (t->domain == IR_DOM_GROUPS) {
    /* a row per row of the group table (passes/segment.c): rows x F,
     * whatever the interleaving */
    Diag quiet;
    ir_diag_init(&quiet, NULL);
    const struct RtDevGroups *dt =
        g->device_only && dg ? rt_devgraph_groups(dg, t->group, 0, 0, 0, &quiet) : NULL;
    const GraphGroups *tab = dt ? dt->host : graph_groups(g, t->group, 0, 0, 0, &quiet);
    ir_diag_free(&quiet);
    if (!tab) return -1;
    n = tab->n;
  }
  for (int i = 0; i < t->ndims; i++) {
    int s = t->sym_id[i];
    if (s >= nsyms) return -1;
    n *= s >= 0 ? syms[s] : t->dims[i].value;
  }
  return n;
}

int64_t rt_kernel_shared_bytes(const CgProgram *p, const CgKernel *k,
                               const Graph *g, const int64_t *syms,
                               int64_t limit, Diag *d) {
  /* promote(X, shared): the staged inputs the kernel reads (it takes them
   * as parameters) come first, in tensor order, each rounded up to 16
   * bytes: codegen/shared.c lays them out the same way */
  int64_t staged = 0;
  char names[256] = "";
  size_t len = 0;
  for (int i = 0; i < k->nparams; i++) {
    const CgParam *prm = &k->params[i];
    if (prm->kind != CG_PARAM_TENSOR || !p->tensors[prm->id].staged) continue;
    const CgTensorInfo *t = &p->tensors[prm->id];
    int64_t n = tensor_numel(t, g, NULL, syms, p->nsyms);
    if (n < 0 || n > ((int64_t)1 << 30)) {
      ir_error(d, (Loc){0}, "kernel %s: staged input %s has a bad size", k->name,
               t->name);
      return -1;
    }
    staged += (n * 4 + 15) & ~(int64_t)15;
    if (len < sizeof names)
      len += (size_t)snprintf(names + len, sizeof names - len, "%s%s (%lld bytes)",
                              len ? ", " : "", t->name, (long long)(n * 4));
  }
  /* a @shared groups stage: a row of the tensor's features per warp */
  int64_t acc = 0;
  if (k->shared_tensor >= 0) {
    const CgTensorInfo *t = &p->tensors[k->shared_tensor];
    int64_t row = tensor_numel(t, g, NULL, syms, p->nsyms);
    row = t->domain == IR_DOM_DENSE || g->nv == 0 ? row : row / g->nv;
    if (row < 0 || row > (1 << 24)) {
      ir_error(d, (Loc){0}, "kernel %s: the shared accumulator rows of %s have "
               "a bad size", k->name, t->name);
      return -1;
    }
    acc = (k->threads / 32) * row * 4;
  }
  if (staged > 0 && limit > 0 && staged + acc > limit) {
    char extra[96] = "";
    if (acc)
      snprintf(extra, sizeof extra, " and the shared accumulator rows of %s "
               "(%lld bytes)", p->tensors[k->shared_tensor].name, (long long)acc);
    ir_error(d, (Loc){0}, "kernel %s: staging %s in shared memory%s needs "
             "%lld bytes per block; the device allows at most %lld "
             "(promote(X, shared) needs a smaller X)", k->name, names, extra,
             (long long)(staged + acc), (long long)limit);
    return -1;
  }
  return staged + acc;
}

/* Whether the kernels write every element of t that they read, so that a
 * run gives it no start value (only the NaN of a checked run): an output
 * of plain stores, or a tensor the op fills itself (CgTensorInfo.filled). */
static bool written_whole(const CgTensorInfo *t) {
  return t->red == IR_RED_ASSIGN && (t->role == IR_ROLE_OUT || t->filled);
}

/* The 32-bit word an output or temporary starts as (see runtime.h). */
static uint32_t initial_word(const CgTensorInfo *t) {
  switch (t->red) {
  case IR_RED_MAX: return 0xff800000u; /* -inf */
  case IR_RED_MIN: return 0x7f800000u; /* +inf */
  case IR_RED_ADD: case IR_RED_MEAN: return 0;
  case IR_RED_ASSIGN: return written_whole(t) ? 0x7fc00000u /* NaN */ : 0;
  case IR_RED_COUNT: break;
  }
  return 0;
}

/* The bits of an f32 start value in tensor t's dtype (f16 and bf16: the
 * low 16 bits; f64: the 64-bit pattern). */
static uint64_t initial_bits(const CgTensorInfo *t) {
  uint32_t w = initial_word(t);
  switch (t->dtype) {
  case IR_DT_F16:
    return w == 0xff800000u ? 0xfc00 : w == 0x7f800000u ? 0x7c00 : w == 0x7fc00000u ? 0x7e00 : 0;
  case IR_DT_BF16: return w >> 16;
  case IR_DT_F64:
    return w == 0xff800000u   ? 0xfff0000000000000ULL
           : w == 0x7f800000u ? 0x7ff0000000000000ULL
           : w == 0x7fc00000u ? 0x7ff8000000000000ULL
                              : 0;
  default: return w;
  }
}

/* Fills tensor `dt` (of t's dtype, n elements) with its start value. */
static RtStatus fill_initial(RtDevTensor *dt, const CgTensorInfo *t, int64_t n, Diag *d) {
  return rt_tensor_fill_bits(dt, t->dtype, initial_bits(t), n, d);
}

/* The same start value filled in `stream` (a CUstream), asynchronously:
 * what a device-resident run and a captured one queue. `n` elements. */
static RtStatus fill_initial_async(RtDevPtr ptr, const CgTensorInfo *t, size_t n, void *stream,
                                   Diag *d) {
  static const char *init = "while initialising an output in a stream";
  uint64_t bits = initial_bits(t);
  CUstream st = (CUstream)stream;
  if (!n) return RT_OK;
  if (ir_dtype_is_16bit(t->dtype))
    return RT_CU_WHAT(init, cuMemsetD16Async, (ptr, (unsigned short)bits, n, st));
  if (t->dtype == IR_DT_F64) {
    /* the low words, then the high words of every 8 bytes as a 2-D fill */
    RtStatus s = RT_CU_WHAT(init, cuMemsetD32Async, (ptr, (unsigned)bits, 2 * n, st));
    if (s == RT_OK && (bits >> 32) != (bits & 0xffffffffu))
      s = RT_CU_WHAT(init, cuMemsetD2D32Async, (ptr + 4, 8, (unsigned)(bits >> 32), 1, n, st));
    return s;
  }
  return RT_CU_WHAT(init, cuMemsetD32Async, (ptr, (unsigned)bits, n, st));
}

typedef struct Launch {
  RtKernel *kernel;
  RtLaunchConfig cfg;
  void **args;
} Launch;

typedef struct ExecState {
  const CgProgram *p;
  bool poison; /* fill the outputs written only by plain stores with NaN */
  RtDevTensor *tensors; /* by tensor id */
  const int64_t *numel; /* elements, by tensor id */
  Launch *launches;     /* by kernel */
  uint64_t *values;     /* the kernels' argument values, maxparams + 1 each */
  void **args;          /* ... and the pointers to them the launch takes */
  void *stream;         /* a timed run's stream (graph replay), whose fills
                           are asynchronous; NULL: the legacy stream */
} ExecState;

/* A state of `p` with nothing on the device yet; false when out of host
 * memory (exec_state_free frees what was had). */
static bool exec_state_init(ExecState *x, const CgProgram *p, const int64_t *numel,
                            int maxparams) {
  size_t slots = (size_t)(p->nkernels * (maxparams + 1)) + 1;
  *x = (ExecState){.p = p, .numel = numel};
  x->tensors = calloc((size_t)p->ntensors + 1, sizeof *x->tensors);
  x->launches = calloc((size_t)p->nkernels + 1, sizeof *x->launches);
  x->values = calloc(slots, sizeof *x->values);
  x->args = calloc(slots, sizeof *x->args);
  return x->tensors && x->launches && x->values && x->args;
}

static void exec_state_free(ExecState *x) {
  for (int i = 0; x->tensors && i < x->p->ntensors; i++) rt_tensor_free(&x->tensors[i]);
  free(x->tensors);
  free(x->launches);
  free(x->values);
  free(x->args);
}

/* Allocates x's tensors on the device and uploads its inputs from `host`;
 * adds the bytes to *bytes. */
static RtStatus exec_state_alloc(ExecState *x, void *const *host, uint64_t *bytes, Diag *d) {
  for (int i = 0; i < x->p->ntensors; i++) {
    const CgTensorInfo *t = &x->p->tensors[i];
    size_t n = (size_t)x->numel[i] * (size_t)ir_dtype_bytes(t->dtype);
    char what[64]; /* what an out-of-memory message names */
    if (t->role == IR_ROLE_TEMP)
      snprintf(what, sizeof what, "temporary %.20s of %.28s", t->name, x->p->op);
    else
      snprintf(what, sizeof what, "tensor %.32s", t->name);
    RtStatus s = rt_tensor_alloc(&x->tensors[i], n, what, d);
    if (s != RT_OK) return s;
    *bytes += n;
    if (t->role == IR_ROLE_IN && (s = rt_tensor_upload(&x->tensors[i], host[i], n, d)) != RT_OK)
      return s;
  }
  return RT_OK;
}

/* One run of the op: initialise the outputs and temporaries, then every
 * stage in order; in st->stream when it has one (nothing then waits, so the
 * run can be captured into a CUDA graph). */
static RtStatus run_once(void *ctx, Diag *d) {
  ExecState *st = ctx;
  for (int i = 0; i < st->p->ntensors; i++) {
    const CgTensorInfo *t = &st->p->tensors[i];
    if (t->role == IR_ROLE_IN) continue;
    /* An output of plain stores is written whole by the kernels, and a
     * tensor the op fills itself (a 16-bit output's wide twin) gets every
     * element it reads from its own stages: the NaN that shows a forgotten
     * element is for the checked run, and a timed run that wrote it again
     * would time a fill no peer pays for (the twin of a bf16 output is
     * |V| x F f32 words: 87 MB on ogbn-arxiv at F = 128). */
    if (written_whole(t) && !st->poison) continue;
    RtStatus s = st->stream ? fill_initial_async(st->tensors[i].ptr, t, (size_t)st->numel[i],
                                                 st->stream, d)
                            : fill_initial(&st->tensors[i], t, st->numel[i], d);
    if (s != RT_OK) return s;
  }
  for (int k = 0; k < st->p->nkernels; k++) {
    Launch *l = &st->launches[k];
    /* in a stream: configurations were validated once (exec_state_launches) */
    RtStatus s = st->stream ? rt_launch_stream(l->kernel, &l->cfg, l->args, st->stream, d)
                            : rt_launch(l->kernel, &l->cfg, l->args, d);
    if (s != RT_OK) return s;
  }
  return RT_OK;
}

/* The timed work of a rotation (RtExecOptions.sets): one run of each set. */
typedef struct SetsWork {
  ExecState *set;
  int n;
} SetsWork;

static RtStatus run_sets(void *ctx, Diag *d) {
  SetsWork *w = ctx;
  for (int k = 0; k < w->n; k++) {
    RtStatus s = run_once(&w->set[k], d);
    if (s != RT_OK) return s;
  }
  return RT_OK;
}

/* The same in `stream`, for rt_time_graph. */
static RtStatus run_sets_in(void *ctx, void *stream, Diag *d) {
  SetsWork *w = ctx;
  for (int k = 0; k < w->n; k++) w->set[k].stream = stream;
  RtStatus s = run_sets(ctx, d);
  for (int k = 0; k < w->n; k++) w->set[k].stream = NULL;
  return s;
}

/* Fills `l` for kernel `k`: looks the function up, sizes the grid and
 * points each argument slot at its value. `values` has room for the
 * kernel's parameters. */
static RtStatus prepare_launch(const CgProgram *p, const CgKernel *k, RtModule *m,
                               const Graph *g, RtDevGraph *dg,
                               RtDevTensor *tensors, const int64_t *syms,
                               uint64_t *values, Launch *l, Diag *d) {
  l->kernel = rt_kernel_get(m, k->name, d);
  if (!l->kernel) return RT_ERR;
  /* a stage over neighbour groups reads the graph's table, uploaded once */
  const struct RtDevGroups *gt = NULL;
  bool rows = false; /* a group_rows loop (passes/segment.c) reads vptr, vrow */
  bool unowned = false; /* an unowned(G) loop (passes/lower_mean.c) */
  for (int i = 0; i < k->nparams; i++) {
    rows |= k->params[i].kind == CG_PARAM_GRP_VPTR || k->params[i].kind == CG_PARAM_GRP_VROW;
    unowned |= k->params[i].kind == CG_PARAM_NUNOWNED;
  }
  if (k->group && !(gt = k->group_panel ? rt_devgraph_panels(dg, k->group, k->group_panel, d)
                         : rows ? rt_devgraph_group_rows(dg, k->group, k->group_ilv,
                                                         k->group_cls, k->group_thr, d)
                                : rt_devgraph_groups(dg, k->group, k->group_ilv,
                                                     k->group_cls, k->group_thr, d)))
    return RT_ERR;
  const RtDeviceInfo *dev = rt_cuda_device();
  int per_sm = dev->max_threads_per_sm / (k->threads > 0 ? k->threads : 256);
  if (per_sm < 1) per_sm = 1;
  int64_t wave = (int64_t)dev->sm_count * per_sm;
  int64_t blocks;
  if (cg_launch_blocks(k, g->nv, g->ne, syms, p->nsyms, wave, &blocks, d) != 0)
    return RT_ERR;
  /* A loop over the group table is sized by the table's rows, as an
   * extent loop is by its extent: at most 8 waves (below), each warp a few
   * rows. One wave of 8 blocks an SM, each warp walking every W-th row,
   * measured 1.2-1.5x slower on the H100 (cnr-2000 u_mul_e_sum, F = 256:
   * 0.87 -> 0.59 ms): its warps drift apart in the table, so the rows in
   * flight stop being neighbours and their sources stop sharing L2 (hit
   * rate 60% against cuSPARSE's 82%), while blocks handed out in order keep
   * the GPU on one stretch of the table (bench/NOTES.md, run 12). */
  if (k->launch.kind == CG_LAUNCH_FILL && gt && !rows) {
    int64_t per = k->launch.per_block > 0 ? k->launch.per_block : 1;
    int64_t n = unowned ? gt->host->nunowned : gt->host->n;
    blocks = n <= 0 ? 1 : (n - 1) / per + 1;
  }
  /* Bound loops are grid-stride loops, so a grid of a few waves covers any
   * extent; more blocks than that only add scheduling overhead. */
  if (blocks > 8 * wave) blocks = 8 * wave;
  if (blocks < 1) blocks = 1;
  l->cfg = (RtLaunchConfig){
      .grid = {(uint32_t)blocks, 1, 1},
      .block = {(uint32_t)k->threads, 1, 1},
      .shared_bytes = 0,
      .programmatic = k->waits,
  };
  /* staged inputs and a @shared groups stage's accumulator rows; the
   * kernel opts in above 48 KiB (module.c), up to the device's limit */
  int64_t shared = rt_kernel_shared_bytes(
      p, k, g, syms, dev->limits.shared_per_block_optin, d);
  if (shared < 0) return RT_ERR;
  l->cfg.shared_bytes = (uint32_t)shared;
  for (int i = 0; i < k->nparams; i++) {
    const CgParam *prm = &k->params[i];
    switch (prm->kind) {
    case CG_PARAM_TENSOR: values[i] = tensors[prm->id].ptr; break;
    case CG_PARAM_NV: *(int32_t *)&values[i] = g->nv; break;
    case CG_PARAM_NE: /* int64 in a kernel of 64-bit indices */
      if (cg_program_index_bits(p) == 64) *(int64_t *)&values[i] = g->ne;
      else *(int32_t *)&values[i] = (int32_t)g->ne;
      break;
    case CG_PARAM_SYM: *(int32_t *)&values[i] = (int32_t)syms[prm->id]; break;
    case CG_PARAM_GRP_DST: case CG_PARAM_GRP_FIRST: case CG_PARAM_GRP_END:
    case CG_PARAM_NGROUPS: case CG_PARAM_GRP_VPTR: case CG_PARAM_GRP_VROW:
    case CG_PARAM_GRP_UNOWNED: case CG_PARAM_NUNOWNED:
      if (!gt) {
        ir_error(d, (Loc){0}, "kernel %s reads a group table but runs over no "
                 "neighbour groups", k->name);
        return RT_ERR;
      }
      if (prm->kind == CG_PARAM_NGROUPS) { /* int64 in a kernel of 64-bit indices */
        if (cg_program_index_bits(p) == 64) *(int64_t *)&values[i] = gt->host->n;
        else *(int32_t *)&values[i] = (int32_t)gt->host->n;
      }
      else if (prm->kind == CG_PARAM_NUNOWNED) *(int32_t *)&values[i] = gt->host->nunowned;
      else if (prm->kind == CG_PARAM_GRP_UNOWNED) values[i] = gt->unowned.ptr;
      else if (prm->kind == CG_PARAM_GRP_VPTR) values[i] = gt->vptr.ptr;
      else if (prm->kind == CG_PARAM_GRP_VROW) values[i] = gt->vrow.ptr;
      else values[i] = (prm->kind == CG_PARAM_GRP_DST ? gt->dst
                        : prm->kind == CG_PARAM_GRP_FIRST ? gt->first : gt->end).ptr;
      break;
    case CG_PARAM_GRP_OWN: case CG_PARAM_PAIR_SRC: case CG_PARAM_PAIR_MASK:
    case CG_PARAM_PAIR_POS:
      if (!gt || !gt->panels) {
        ir_error(d, (Loc){0}, "kernel %s reads a panel table but runs over no "
                 "panels", k->name);
        return RT_ERR;
      }
      values[i] = (prm->kind == CG_PARAM_GRP_OWN ? gt->own_row
                   : prm->kind == CG_PARAM_PAIR_SRC ? gt->pair_src
                   : prm->kind == CG_PARAM_PAIR_MASK ? gt->pair_mask : gt->pair_pos).ptr;
      break;
    default: values[i] = graph_array(dg, prm->kind)->ptr; break;
    }
    l->args[i] = &values[i];
  }
  return RT_OK;
}

/* Prepares and checks every kernel's launch of x against its tensors. */
static RtStatus exec_state_launches(ExecState *x, RtModule *m, const Graph *g, RtDevGraph *dg,
                                    const int64_t *syms, int maxparams, Diag *d) {
  const CgProgram *p = x->p;
  for (int k = 0; k < p->nkernels; k++) {
    Launch *l = &x->launches[k];
    l->args = x->args + k * (maxparams + 1);
    RtStatus s = prepare_launch(p, &p->kernels[k], m, g, dg, x->tensors, syms,
                                x->values + k * (maxparams + 1), l, d);
    if (s != RT_OK) return s;
    if ((s = rt_launch_validate(&l->cfg, &rt_cuda_device()->limits, &l->kernel->info,
                                l->kernel->name, d)) != RT_OK)
      return s;
  }
  return RT_OK;
}

static RtStatus exec_program(const CgProgram *p, const Graph *g, const int64_t *syms,
                             void *const *host, const RtExecOptions *opt, RtExecResult *res,
                             Diag *d);

RtStatus rt_exec_program(const CgProgram *p, const Graph *g, const int64_t *syms,
                         void *const *host, const RtExecOptions *opt,
                         RtExecResult *res, Diag *d) {
  pthread_mutex_lock(&graph_cache_lock);
  RtStatus s = exec_program(p, g, syms, host, opt, res, d);
  pthread_mutex_unlock(&graph_cache_lock);
  return s;
}

/* The program's module, where the kernels whose occupancy floor is gop's
 * (no @occupancy) may be compiled at a lower one if they spill at it
 * (runtime/module.c, jit_unspilled). */
static RtModule *program_module(const CgProgram *p, Diag *d) {
  const char *lower[64];
  int n = 0;
  for (int k = 0; k < p->nkernels && n < 64; k++)
    if (p->kernels[k].occ == 0) lower[n++] = p->kernels[k].name;
  return rt_module_load_floors(p->ptx, p->op, lower, n, d);
}

static RtStatus exec_program(const CgProgram *p, const Graph *g, const int64_t *syms,
                             void *const *host, const RtExecOptions *opt, RtExecResult *res,
                             Diag *d) {
  memset(res, 0, sizeof *res);
  /* scheduled with transpose(): run on the reversed graph */
  if (p->transposed && !(g = graph_transposed(g, d, (Loc){0}))) return RT_ERR;
  RtStatus s = rt_cuda_open(d);
  if (s != RT_OK) return s;

  /* Check every size before touching the device. */
  int64_t *numel = calloc((size_t)p->ntensors + 1, sizeof *numel);
  if (!numel) return RT_ERR;
  for (int i = 0; i < p->ntensors; i++) {
    numel[i] = tensor_numel(&p->tensors[i], g, NULL, syms, p->nsyms);
    if (numel[i] < 0 || (uint64_t)numel[i] > (UINT64_MAX / 4)) {
      ir_error(d, (Loc){0}, "tensor %s: an extent is not set or the size overflows",
               p->tensors[i].name);
      free(numel);
      return RT_ERR;
    }
    if (p->tensors[i].role != IR_ROLE_TEMP && !host[i]) {
      ir_error(d, (Loc){0}, "tensor %s has no host buffer", p->tensors[i].name);
      free(numel);
      return RT_ERR;
    }
  }

  unsigned formats = 0;
  int maxparams = 0;
  for (int k = 0; k < p->nkernels; k++) {
    if (p->kernels[k].nparams > maxparams) maxparams = p->kernels[k].nparams;
    for (int i = 0; i < p->kernels[k].nparams; i++) {
      int f = param_format(p->kernels[k].params[i].kind);
      if (f >= 0) formats |= RT_FMT_BIT(f);
    }
  }

  RtModule *m = NULL; /* held for the call (rt_module_release at done) */
  uint32_t epoch = rt_cuda_epoch();
  ExecState st;
  ExecState *sets = NULL; /* the rotation of the timed runs, sets[0] = st */
  int nsets = 0;
  if (!exec_state_init(&st, p, numel, maxparams)) {
    s = RT_ERR;
    ir_error(d, (Loc){0}, "out of host memory preparing %s", p->op);
    goto done;
  }

  RtDevGraph *dg = device_graph(g);
  if ((s = rt_check_layout(p, g, d)) != RT_OK) goto done;
  rt_devgraph_set_index_bits(dg, cg_program_index_bits(p));
  if ((s = rt_devgraph_load(dg, formats, d)) != RT_OK) goto done;
  for (int f = 0; f < RT_FMT_COUNT; f++)
    if (formats & RT_FMT_BIT(f)) res->graph_bytes[f] = rt_devgraph_bytes(dg, (RtGraphFormat)f);

  if ((s = exec_state_alloc(&st, host, &res->tensor_bytes, d)) != RT_OK) goto done;

  /* Everything this op holds on the device is allocated now: that is its
   * peak (the copy-bandwidth probe below allocates separately). */
  res->peak_bytes = rt_mem_stats().live_bytes;

  m = program_module(p, d);
  if (!m) {
    s = RT_ERR;
    goto done;
  }
  if ((s = exec_state_launches(&st, m, g, dg, syms, maxparams, d)) != RT_OK) goto done;
  for (int k = 0; k < p->nkernels && k < (int)(sizeof res->kernels / sizeof res->kernels[0]);
       k++) {
    struct RtKernelReport *r = &res->kernels[res->nkernels++];
    snprintf(r->name, sizeof r->name, "%s", p->kernels[k].name);
    r->threads = p->kernels[k].threads;
    r->info = st.launches[k].kernel->info;
  }
  /* the group tables were uploaded (once per graph) by prepare_launch */
  for (int k = 0; k < p->nkernels; k++) {
    const CgKernel *kk = &p->kernels[k];
    bool seen = false;
    for (int j = 0; j < k; j++)
      seen |= p->kernels[j].group == kk->group && p->kernels[j].group_ilv == kk->group_ilv &&
              p->kernels[j].group_cls == kk->group_cls &&
              p->kernels[j].group_thr == kk->group_thr &&
              p->kernels[j].group_panel == kk->group_panel;
    const GraphPanels *pt = kk->group && kk->group_panel && !seen
                                ? graph_panels(g, kk->group, kk->group_panel, d)
                                : NULL;
    const GraphGroups *t = kk->group && !kk->group_panel && !seen
                            ? graph_groups(g, kk->group, kk->group_ilv, kk->group_cls,
                                              kk->group_thr, d)
                            : NULL;
    if (t) res->group_bytes += (uint64_t)t->bytes;
    if (pt) res->group_bytes += (uint64_t)pt->bytes;
  }
  /* ... and the rows by destination of those a group_rows loop reads */
  for (int k = 0; k < p->nkernels; k++) {
    const CgKernel *kk = &p->kernels[k];
    bool rows = false, seen = false;
    for (int i = 0; i < kk->nparams; i++) rows |= kk->params[i].kind == CG_PARAM_GRP_VROW;
    for (int j = 0; j < k && rows; j++)
      for (int i = 0; i < p->kernels[j].nparams; i++)
        seen |= p->kernels[j].params[i].kind == CG_PARAM_GRP_VROW &&
                p->kernels[j].group == kk->group && p->kernels[j].group_ilv == kk->group_ilv &&
                p->kernels[j].group_cls == kk->group_cls &&
                p->kernels[j].group_thr == kk->group_thr;
    const GraphGroups *t = rows && !seen
                            ? graph_groups(g, kk->group, kk->group_ilv, kk->group_cls,
                                              kk->group_thr, d)
                            : NULL;
    if (t) res->group_bytes += (uint64_t)t->seg_bytes;
  }
  if (rt_mem_stats().live_bytes > res->peak_bytes) res->peak_bytes = rt_mem_stats().live_bytes;

  /* One checked run gives the outputs; then the timed runs. Every timed
   * run recomputes the same outputs from the same inputs. The checked run
   * fills what the kernels write whole with NaN first, so that an element
   * they forget shows; unpoisoned leaves it unwritten for initcheck. */
  double t_once = rt_wall_seconds();
  st.poison = !(opt && opt->unpoisoned);
  if ((s = run_once(&st, d)) != RT_OK || (s = rt_cuda_sync(d)) != RT_OK) goto done;
  st.poison = false;
  t_once = rt_wall_seconds() - t_once;
  for (int i = 0; i < p->ntensors; i++)
    if (p->tensors[i].role == IR_ROLE_OUT &&
        (s = rt_tensor_download(&st.tensors[i], host[i],
                                (size_t)numel[i] * (size_t)ir_dtype_bytes(p->tensors[i].dtype),
                                d)) != RT_OK)
      goto done;
  if (opt && opt->reps > 0) {
    /* A run slower than slow_ms is not worth repeating: time it once. */
    bool slow = opt->slow_ms > 0 && t_once * 1e3 > opt->slow_ms;
    /* Copies of the tensors to rotate among (set 0 is st): inputs
     * uploaded again, launches prepared against each copy. */
    nsets = !slow && opt->sets > 1 ? opt->sets : 1;
    if (!(sets = calloc((size_t)nsets, sizeof *sets))) {
      s = RT_ERR;
      ir_error(d, (Loc){0}, "out of host memory preparing %d sets of %s", nsets, p->op);
      goto done;
    }
    sets[0] = st;
    for (int k = 1; k < nsets; k++) {
      uint64_t extra = 0; /* not the op's own: res->tensor_bytes keeps set 0's */
      if (!exec_state_init(&sets[k], p, numel, maxparams)) {
        s = RT_ERR;
        ir_error(d, (Loc){0}, "out of host memory preparing %d sets of %s", nsets, p->op);
        goto done;
      }
      if ((s = exec_state_alloc(&sets[k], host, &extra, d)) != RT_OK ||
          (s = exec_state_launches(&sets[k], m, g, dg, syms, maxparams, d)) != RT_OK)
        goto done;
    }
    SetsWork w = {sets, nsets};
    if (opt->timing == RT_TIME_GRAPH && !slow) {
      /* the calls of one graph are rounds over the sets: at most
       * RT_GRAPH_MAX_RUNS runs of the op in all */
      int most = RT_GRAPH_MAX_RUNS / nsets > 0 ? RT_GRAPH_MAX_RUNS / nsets : 1;
      int calls = opt->graph_calls > most ? most : opt->graph_calls;
      /* with a fallback, the capture's failure is a note, not an error */
      Diag gd;
      ir_diag_init(&gd, NULL);
      s = rt_time_graph(run_sets_in, &w, calls, most, opt->warmup, opt->reps, &res->timing,
                        opt->events_fallback ? &gd : d);
      res->graph_failed = s != RT_OK && !rt_cuda_lost(NULL);
      if (s != RT_OK && opt->events_fallback) {
        const char *why = "";
        ir_diag_reason(&gd, &why);
        if (res->graph_failed) {
          snprintf(res->graph_note, sizeof res->graph_note, "%s", why);
          for (char *c = res->graph_note; *c; c++)
            if (*c == '\n') *c = ' ';
          for (size_t n = strlen(res->graph_note); n > 0 && res->graph_note[n - 1] == ' ';)
            res->graph_note[--n] = 0;
          s = rt_time_work(run_sets, &w, opt->warmup, opt->reps, &res->timing, d);
        } else {
          ir_diag_append(d, &gd); /* the context is lost: that is the error */
        }
      }
      ir_diag_free(&gd);
      if (s != RT_OK) goto done;
    } else if ((s = rt_time_work(run_sets, &w, slow ? 0 : opt->warmup, slow ? 1 : opt->reps,
                                 &res->timing, d)) != RT_OK) {
      goto done;
    }
    res->timing.median_ms /= nsets;
    res->timing.min_ms /= nsets;
    res->timing.max_ms /= nsets;
    res->timing.mean_ms /= nsets;
    res->sets = nsets;
    res->copy_gbps = copy_bandwidth();
  }
  for (int i = 0; i < p->ntensors; i++)
    if (p->tensors[i].role != IR_ROLE_TEMP)
      res->fewest_bytes += (uint64_t)numel[i] * (uint64_t)ir_dtype_bytes(p->tensors[i].dtype);
  res->fewest_bytes += ((uint64_t)g->nv + 1) * 4 + (uint64_t)g->ne * 4;
  if (res->timing.median_ms > 0)
    res->gbps = (double)res->fewest_bytes / (res->timing.median_ms * 1e-3) / 1e9;

done:
  for (int k = 1; sets && k < nsets; k++)
    if (sets[k].p) exec_state_free(&sets[k]);
  free(sets);
  exec_state_free(&st);
  free(numel);
  if (m && epoch == rt_cuda_epoch()) rt_module_release(m);
  return s;
}

/* The device-to-device copy bandwidth, measured once per process (0 when
 * it cannot be). The 1 GiB it copies may not fit next to a framework's
 * caching allocator: then a smaller copy is tried, and when that fails
 * too the measurement is given up for good, quietly. It is only the
 * denominator of a report's fraction, so its failure must neither fail
 * the run nor add a message to every call (a long job's diagnostics grew
 * by two lines per run before). */
static double copy_bandwidth(void) {
  static _Atomic double gbps;  /* > 0 measured, < 0 given up, 0 not yet */
  static pthread_mutex_t once = PTHREAD_MUTEX_INITIALIZER;
  double v = atomic_load(&gbps);
  if (v != 0) return v > 0 ? v : 0;
  pthread_mutex_lock(&once);
  if ((v = atomic_load(&gbps)) == 0) {
    static const size_t sizes[] = {(size_t)1 << 30, (size_t)64 << 20};
    for (int i = 0; i < 2 && v <= 0; i++) {
      Diag quiet;
      ir_diag_init(&quiet, NULL);
      if (rt_measure_copy_bandwidth(sizes[i], 10, &v, &quiet) != RT_OK) v = 0;
      ir_diag_free(&quiet);
    }
    atomic_store(&gbps, v > 0 ? v : -1);
  }
  pthread_mutex_unlock(&once);
  return v > 0 ? v : 0;
}

void rt_exec_print_memory(FILE *out, const RtExecResult *res) {
  char buf[32];
  uint64_t total = res->tensor_bytes;
  fprintf(out, "  device memory:");
  for (int f = 0; f < RT_FMT_COUNT; f++)
    if (res->graph_bytes[f]) {
      fprintf(out, " graph %s %s,", rt_graph_format_name((RtGraphFormat)f),
              rt_format_bytes(res->graph_bytes[f], buf));
      total += res->graph_bytes[f];
    }
  if (res->group_bytes) {
    fprintf(out, " group table %s,", rt_format_bytes(res->group_bytes, buf));
    total += res->group_bytes;
  }
  fprintf(out, " tensors %s,", rt_format_bytes(res->tensor_bytes, buf));
  fprintf(out, " total %s", rt_format_bytes(total, buf));
  fprintf(out, " (held at the peak, with other graphs cached: %s)\n",
          rt_format_bytes(res->peak_bytes, buf));
}

void rt_exec_print_kernels(FILE *out, const RtExecResult *res) {
  if (res->nkernels == 0) return;
  fprintf(out, "  kernels:");
  for (int k = 0; k < res->nkernels; k++) {
    const struct RtKernelReport *r = &res->kernels[k];
    fprintf(out, "%s %s %d registers", k ? ";" : "", r->name, r->info.num_regs);
    if (r->info.local_bytes) fprintf(out, ", %d B local (spills)", r->info.local_bytes);
    if (r->info.floor != r->info.floor_asked)
      fprintf(out, ", %d threads an SM asked for, %d compiled (spilled at the first)",
              r->info.floor_asked * r->threads, r->info.floor * r->threads);
  }
  fputc('\n', out);
}

/* ---- device-resident runs ----
 *
 * rt_exec_program above owns its buffers and copies through the host; the
 * functions below run the same program on the caller's device memory, in
 * the caller's stream, with everything that does not change between calls
 * (kernel lookups, grids, group tables, temporaries) done once in
 * rt_devexec_prepare, so a call costs a few memsets and launches. */

struct RtDevLaunch {
  RtKernel *kernel;
  RtLaunchConfig cfg;
  uint64_t *values; /* one slot per kernel parameter */
  void **args;      /* args[i] = &values[i] */
};

void rt_devexec_free(RtDevExec *x) {
  if (x->p) {
    for (int k = 0; x->launches && k < x->p->nkernels; k++) {
      free(x->launches[k].values);
      free(x->launches[k].args);
    }
    for (int i = 0; x->temps && i < x->p->ntensors; i++) rt_tensor_free(&x->temps[i]);
  }
  free(x->launches);
  free(x->temps);
  free(x->numel);
  /* a module of a closed session went with it (rt_cuda_close) */
  if (x->module && x->epoch == rt_cuda_epoch()) rt_module_release(x->module);
  memset(x, 0, sizeof *x);
}

int64_t rt_devexec_numel(const RtDevExec *x, int id) {
  return x->prepared && id >= 0 && id < x->p->ntensors ? x->numel[id] : -1;
}

RtStatus rt_devexec_prepare(RtDevExec *x, const CgProgram *p, const Graph *g,
                            RtDevGraph *dg, const int64_t *syms, Diag *d) {
  if (p->nsyms > (int)(sizeof x->syms / sizeof x->syms[0])) {
    ir_error(d, (Loc){0}, "%s has too many extents (%d)", p->op, p->nsyms);
    return RT_ERR;
  }
  if (x->prepared && x->p == p && x->g == g && x->dg == dg && x->epoch == rt_cuda_epoch() &&
      x->groups_gen == dg->groups_gen &&
      memcmp(x->syms, syms, sizeof(int64_t) * (size_t)p->nsyms) == 0)
    return RT_OK;
  rt_devexec_free(x);
  RtStatus s = rt_cuda_open(d);
  if (s != RT_OK) return s;
  x->p = p;
  x->g = g;
  x->dg = dg;
  memcpy(x->syms, syms, sizeof(int64_t) * (size_t)p->nsyms);
  x->epoch = rt_cuda_epoch();
  x->numel = calloc((size_t)p->ntensors + 1, sizeof *x->numel);
  x->temps = calloc((size_t)p->ntensors + 1, sizeof *x->temps);
  x->launches = calloc((size_t)p->nkernels + 1, sizeof *x->launches);
  if (!x->numel || !x->temps || !x->launches) {
    ir_error(d, (Loc){0}, "out of host memory preparing %s", p->op);
    s = RT_ERR;
    goto fail;
  }
  unsigned formats = 0;
  for (int i = 0; i < p->ntensors; i++) {
    x->numel[i] = tensor_numel(&p->tensors[i], g, dg, syms, p->nsyms);
    if (x->numel[i] < 0 || (uint64_t)x->numel[i] > (UINT64_MAX / 4)) {
      ir_error(d, (Loc){0}, "tensor %s: an extent is not set or the size overflows",
               p->tensors[i].name);
      s = RT_ERR;
      goto fail;
    }
  }
  for (int k = 0; k < p->nkernels; k++)
    for (int i = 0; i < p->kernels[k].nparams; i++) {
      int f = param_format(p->kernels[k].params[i].kind);
      if (f >= 0) formats |= RT_FMT_BIT(f);
    }
  if ((s = rt_check_layout(p, g, d)) != RT_OK) goto fail;
  rt_devgraph_set_index_bits(dg, cg_program_index_bits(p));
  if ((s = rt_devgraph_load(dg, formats, d)) != RT_OK) goto fail;
  /* temporaries live with the prepared run; the caller's tensors do not */
  for (int i = 0; i < p->ntensors; i++) {
    if (p->tensors[i].role != IR_ROLE_TEMP) continue;
    char what[64]; /* "temporary M of edge_softmax": what an OOM names */
    snprintf(what, sizeof what, "temporary %.20s of %.28s", p->tensors[i].name, p->op);
    size_t bytes = (size_t)x->numel[i] * (size_t)ir_dtype_bytes(p->tensors[i].dtype);
    if ((s = rt_tensor_alloc(&x->temps[i], bytes, what, d)) != RT_OK)
      goto fail;
  }
  RtModule *m = x->module = program_module(p, d);
  if (!m) {
    s = RT_ERR;
    goto fail;
  }
  for (int k = 0; k < p->nkernels; k++) {
    struct RtDevLaunch *l = &x->launches[k];
    int n = p->kernels[k].nparams;
    l->values = calloc((size_t)n + 1, sizeof *l->values);
    l->args = calloc((size_t)n + 1, sizeof *l->args);
    if (!l->values || !l->args) {
      ir_error(d, (Loc){0}, "out of host memory preparing %s", p->op);
      s = RT_ERR;
      goto fail;
    }
    Launch tmp = {.args = l->args};
    /* the caller's tensors are patched in at each launch: 0 for now */
    if ((s = prepare_launch(p, &p->kernels[k], m, g, dg, x->temps, syms, l->values, &tmp, d)) !=
        RT_OK)
      goto fail;
    if ((s = rt_launch_validate(&tmp.cfg, &rt_cuda_device()->limits, &tmp.kernel->info,
                                tmp.kernel->name, d)) != RT_OK)
      goto fail;
    l->kernel = tmp.kernel;
    l->cfg = tmp.cfg;
  }
  x->groups_gen = dg->groups_gen; /* after prepare_launch uploaded its tables */
  x->prepared = true;
  return RT_OK;
fail:
  rt_devexec_free(x);
  return s;
}

RtStatus rt_devexec_launch(RtDevExec *x, const RtDevPtr *ptrs, void *stream, Diag *d) {
  if (!x->prepared) {
    ir_error(d, (Loc){0}, "internal: a device run launched before it was prepared");
    return RT_ERR;
  }
  RtStatus s = rt_cuda_open(d); /* a no-op unless this thread is new */
  if (s != RT_OK) return s;
  const CgProgram *p = x->p;
  for (int i = 0; i < p->ntensors; i++) {
    const CgTensorInfo *t = &p->tensors[i];
    if (t->role == IR_ROLE_IN || written_whole(t)) continue;
    RtDevPtr ptr = t->role == IR_ROLE_TEMP ? x->temps[i].ptr : ptrs[i];
    if ((s = fill_initial_async(ptr, t, (size_t)x->numel[i], stream, d)) != RT_OK) return s;
  }
  for (int k = 0; k < p->nkernels; k++) {
    struct RtDevLaunch *l = &x->launches[k];
    const CgKernel *kk = &p->kernels[k];
    for (int i = 0; i < kk->nparams; i++)
      if (kk->params[i].kind == CG_PARAM_TENSOR && p->tensors[kk->params[i].id].role != IR_ROLE_TEMP)
        l->values[i] = ptrs[kk->params[i].id];
    if ((s = rt_launch_stream(l->kernel, &l->cfg, l->args, stream, d)) != RT_OK) return s;
  }
  return RT_OK;
}

RtStatus rt_stream_check(void *stream, Diag *d) {
  RtStatus s = rt_cuda_open(d);
  if (s != RT_OK) return s;
  if (!stream || stream == RT_STREAM_LEGACY || stream == RT_STREAM_PER_THREAD) return RT_OK;
  CUcontext c = NULL;
  if ((s = RT_CU_WHAT("while asking which context the given stream belongs to (is it a "
                      "CUstream / cudaStream_t?)",
                      cuStreamGetCtx, ((CUstream)stream, &c))) != RT_OK)
    return s;
  if (c != (CUcontext)rt_cuda_context()) {
    ir_error(d, (Loc){0}, "the stream belongs to another CUDA context than the primary "
             "context of device %d that gop uses (create it with the runtime API, "
             "or on that device's primary context)", rt_cuda_device()->ordinal);
    return RT_ERR;
  }
  return RT_OK;
}

RtStatus rt_stream_sync(void *stream, Diag *d) {
  RtStatus s = rt_cuda_open(d);
  if (s != RT_OK) return s;
  return RT_CU_WHAT("while waiting for the stream (a kernel queued before failed)",
                    cuStreamSynchronize, ((CUstream)stream));
}
