/* runtime/device.c: device memory and graphs on the device.
 *
 * A device tensor is a named buffer: the name is what an out-of-memory
 * message needs ("while allocating 12.5 GiB for tensor Y"), and the
 * accounting (live, peak) is what a tuner needs to see a leak or to know how
 * much a schedule's formats cost. Copies check their sizes against the
 * buffer before the driver sees them, since the driver cannot tell a short
 * buffer from a long one.
 *
 * A device graph holds a host graph's formats, each uploaded the first time
 * a kernel asks for it and then kept: most schedules need only one or two
 * of COO, CSR, CSC and the degree arrays, and a graph of 100M edges costs
 * 800 MB per format.
 */
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "cuda.def"

static const Loc no_loc = {0};

static struct {
  _Atomic uint64_t live_bytes, peak_bytes;
  _Atomic int64_t live_tensors, total_allocs;
} M;

RtMemStats rt_mem_stats(void) {
  return (RtMemStats){
      .live_bytes = atomic_load(&M.live_bytes),
      .peak_bytes = atomic_load(&M.peak_bytes),
      .live_tensors = atomic_load(&M.live_tensors),
      .total_allocs = atomic_load(&M.total_allocs),
  };
}

static void account_alloc(uint64_t bytes) {
  uint64_t live = atomic_fetch_add(&M.live_bytes, bytes) + bytes;
  uint64_t peak = atomic_load(&M.peak_bytes);
  while (live > peak && !atomic_compare_exchange_weak(&M.peak_bytes, &peak, live))
    ;
  atomic_fetch_add(&M.live_tensors, 1);
  atomic_fetch_add(&M.total_allocs, 1);
}

static void set_name(RtDevTensor *t, const char *name) {
  snprintf(t->name, sizeof t->name, "%s", name ? name : "tensor");
}

RtStatus rt_tensor_alloc(RtDevTensor *t, size_t bytes, const char *name,
                         Diag *d) {
  memset(t, 0, sizeof *t);
  set_name(t, name);
  if (bytes == 0) return RT_OK; /* the driver refuses size 0; nothing to hold */
  char size[32];
  rt_format_bytes(bytes, size);
  RtStatus s = rt_cuda_open(d);
  if (s) {
    ir_note(d, no_loc, "so %s (%s) cannot be allocated on the GPU", t->name,
            size);
    return s;
  }
  CUdeviceptr p = 0;
  char what[128];
  snprintf(what, sizeof what, "while allocating %s for %s", size, t->name);
  s = RT_CU_WHAT(what, cuMemAlloc_v2, (&p, bytes));
  if (s == RT_OOM) {
    /* What is left tells the user whether a smaller graph or fewer formats
     * would fit. Its own failure would add nothing, so it is not checked. */
    size_t free_bytes = 0, total_bytes = 0;
    if (rt_cuda_api()->cuMemGetInfo_v2(&free_bytes, &total_bytes) ==
        CUDA_SUCCESS) {
      char f[32], tot[32];
      ir_note(d, no_loc, "the GPU has %s free of %s",
              rt_format_bytes(free_bytes, f), rt_format_bytes(total_bytes, tot));
    }
  }
  if (s) return s;
  t->ptr = p;
  t->bytes = bytes;
  t->epoch = rt_cuda_epoch();
  account_alloc(bytes);
  return RT_OK;
}

/* Refuses a copy of `bytes` that does not fit `t`, or a `t` of a closed
 * session; then opens the driver. */
static RtStatus copy_check(const RtDevTensor *t, size_t bytes,
                           const char *dir, Diag *d) {
  if (bytes > t->bytes) {
    char a[32], b[32];
    ir_error(d, no_loc, "cannot copy %s %s %s, which holds %s",
             rt_format_bytes(bytes, a), dir, t->name,
             rt_format_bytes(t->bytes, b));
    return RT_ERR;
  }
  if (bytes == 0) return RT_OK;
  if (t->epoch != rt_cuda_epoch()) {
    ir_error(d, no_loc,
             "%s belongs to a CUDA session that was closed; allocate it again",
             t->name);
    return RT_ERR;
  }
  return rt_cuda_open(d);
}

RtStatus rt_tensor_upload(RtDevTensor *t, const void *host, size_t bytes,
                          Diag *d) {
  RtStatus s = copy_check(t, bytes, "into", d);
  if (s || bytes == 0) return s;
  char what[96];
  snprintf(what, sizeof what, "while copying into %s", t->name);
  return RT_CU_WHAT(what, cuMemcpyHtoD_v2, (t->ptr, host, bytes));
}

RtStatus rt_tensor_download(const RtDevTensor *t, void *host, size_t bytes,
                            Diag *d) {
  RtStatus s = copy_check(t, bytes, "out of", d);
  if (s || bytes == 0) return s;
  char what[96];
  snprintf(what, sizeof what, "while copying out of %s", t->name);
  return RT_CU_WHAT(what, cuMemcpyDtoH_v2, (host, t->ptr, bytes));
}

RtStatus rt_tensor_fill32(RtDevTensor *t, uint32_t word, Diag *d) {
  if (t->bytes % 4) {
    ir_error(d, no_loc, "cannot fill %s with 32-bit words: it holds %zu bytes",
             t->name, t->bytes);
    return RT_ERR;
  }
  RtStatus s = copy_check(t, t->bytes, "into", d);
  if (s || t->bytes == 0) return s;
  char what[96];
  snprintf(what, sizeof what, "while filling %s", t->name);
  return RT_CU_WHAT(what, cuMemsetD32_v2, (t->ptr, word, t->bytes / 4));
}

void rt_tensor_free(RtDevTensor *t) {
  if (t->ptr) {
    /* Memory of a closed session went with its context. */
    if (t->epoch == rt_cuda_epoch()) {
      /* Freeing has no caller to report to: a failure here means the context
       * is already broken, and the next checked call will say so. */
      Diag quiet;
      ir_diag_init(&quiet, NULL);
      if (rt_cuda_open(&quiet) == RT_OK)
        rt_cuda_api()->cuMemFree_v2(t->ptr);
      ir_diag_free(&quiet);
    }
    atomic_fetch_sub(&M.live_bytes, (uint64_t)t->bytes);
    atomic_fetch_sub(&M.live_tensors, 1);
  }
  char name[sizeof t->name];
  memcpy(name, t->name, sizeof name);
  memset(t, 0, sizeof *t);
  memcpy(t->name, name, sizeof name);
}

/* ---- pinned host memory ---- */

RtStatus rt_host_pin(void *host, size_t bytes, Diag *d) {
  if (!host || bytes == 0) return RT_OK;
  RtStatus s = rt_cuda_open(d);
  if (s != RT_OK) return s;
  char what[96];
  snprintf(what, sizeof what, "while pinning %zu bytes of host memory", bytes);
  return RT_CU_WHAT(what, cuMemHostRegister_v2, (host, bytes, 0));
}

void rt_host_unpin(void *host) {
  if (!host) return;
  /* Like rt_tensor_free: nobody to report to, and the memory stays usable
   * as ordinary memory whatever the driver says. */
  Diag quiet;
  ir_diag_init(&quiet, NULL);
  if (rt_cuda_open(&quiet) == RT_OK) rt_cuda_api()->cuMemHostUnregister(host);
  ir_diag_free(&quiet);
}

/* ---- device graphs ---- */

/* One array of a format: where it goes and what it holds. */
typedef struct Part {
  RtDevTensor *t;
  const int32_t *host;
  int64_t n;
  const char *name;
} Part;

/* The arrays of format `f`; returns how many. The degree arrays have no
 * host copy (host is NULL): load_format computes them. */
static int parts_of(RtDevGraph *dg, RtGraphFormat f, Part out[3]) {
  const RtGraph *g = dg->host;
  int64_t nv = dg->nv, ne = dg->ne;
  switch (f) {
  case RT_FMT_COO:
    out[0] = (Part){&dg->src, g->src, ne, "graph coo src"};
    out[1] = (Part){&dg->dst, g->dst, ne, "graph coo dst"};
    return 2;
  case RT_FMT_CSR:
    out[0] = (Part){&dg->in_ptr, g->in_ptr, nv + 1, "graph csr in_ptr"};
    out[1] = (Part){&dg->in_eid, g->in_eid, ne, "graph csr in_eid"};
    out[2] = (Part){&dg->in_src, g->in_src, ne, "graph csr in_src"};
    return 3;
  case RT_FMT_CSC:
    out[0] = (Part){&dg->out_ptr, g->out_ptr, nv + 1, "graph csc out_ptr"};
    out[1] = (Part){&dg->out_eid, g->out_eid, ne, "graph csc out_eid"};
    out[2] = (Part){&dg->out_dst, g->out_dst, ne, "graph csc out_dst"};
    return 3;
  case RT_FMT_DEG:
    out[0] = (Part){&dg->in_deg, NULL, nv, "graph in_deg"};
    out[1] = (Part){&dg->out_deg, NULL, nv, "graph out_deg"};
    return 2;
  case RT_FMT_COUNT: break;
  }
  unreachable("bad graph format");
}

const char *rt_graph_format_name(RtGraphFormat f) {
  static const char *names[RT_FMT_COUNT] = {"coo", "csr", "csc", "deg"};
  return (unsigned)f < RT_FMT_COUNT ? names[f] : "?";
}

void rt_devgraph_init(RtDevGraph *dg, const RtGraph *g) {
  memset(dg, 0, sizeof *dg);
  dg->host = g;
  dg->nv = g->nv;
  dg->ne = g->ne;
}

/* Degrees from a pointer array: ptr[v+1] - ptr[v]. Malloc'ed, or NULL. */
static int32_t *degrees(const int32_t *ptr, int32_t nv) {
  int32_t *deg = malloc(sizeof *deg * (size_t)(nv > 0 ? nv : 1));
  if (deg)
    for (int32_t v = 0; v < nv; v++) deg[v] = ptr[v + 1] - ptr[v];
  return deg;
}

static RtStatus upload_part(const Part *p, Diag *d) {
  size_t bytes = sizeof(int32_t) * (size_t)p->n;
  RtStatus s = rt_tensor_alloc(p->t, bytes, p->name, d);
  if (s) return s;
  return rt_tensor_upload(p->t, p->host, bytes, d);
}

static RtStatus load_format(RtDevGraph *dg, RtGraphFormat f, Diag *d) {
  Part parts[3];
  int n = parts_of(dg, f, parts);
  int32_t *deg[2] = {NULL, NULL};
  if (f == RT_FMT_DEG) {
    deg[0] = degrees(dg->host->in_ptr, dg->nv);
    deg[1] = degrees(dg->host->out_ptr, dg->nv);
    if (!deg[0] || !deg[1]) {
      free(deg[0]);
      free(deg[1]);
      ir_error(d, no_loc, "out of host memory computing the degrees of %s",
               dg->host->name ? dg->host->name : "the graph");
      return RT_ERR;
    }
    parts[0].host = deg[0];
    parts[1].host = deg[1];
  }
  RtStatus s = RT_OK;
  for (int i = 0; i < n && s == RT_OK; i++) s = upload_part(&parts[i], d);
  if (s) /* nothing half-built: a format is held whole or not at all */
    for (int i = 0; i < n; i++) rt_tensor_free(parts[i].t);
  free(deg[0]);
  free(deg[1]);
  return s;
}

RtStatus rt_devgraph_load(RtDevGraph *dg, unsigned formats, Diag *d) {
  for (int f = 0; f < RT_FMT_COUNT; f++) {
    if (!(formats & RT_FMT_BIT(f)) || (dg->loaded & RT_FMT_BIT(f))) continue;
    RtStatus s = load_format(dg, (RtGraphFormat)f, d);
    if (s) {
      ir_note(d, no_loc, "while putting the %s format of graph %s on the GPU",
              rt_graph_format_name((RtGraphFormat)f),
              dg->host->name ? dg->host->name : "(unnamed)");
      return s;
    }
    dg->loaded |= RT_FMT_BIT(f);
  }
  return RT_OK;
}

size_t rt_devgraph_bytes(const RtDevGraph *dg, RtGraphFormat f) {
  if ((unsigned)f >= RT_FMT_COUNT || !(dg->loaded & RT_FMT_BIT(f))) return 0;
  Part parts[3];
  /* parts_of only takes addresses; it does not change the graph */
  int n = parts_of((RtDevGraph *)dg, f, parts);
  size_t bytes = 0;
  for (int i = 0; i < n; i++) bytes += parts[i].t->bytes;
  return bytes;
}

void rt_devgraph_print(FILE *out, const RtDevGraph *dg) {
  char buf[32];
  size_t total = 0;
  fprintf(out, "device graph %s: |V| = %d, |E| = %d\n",
          dg->host && dg->host->name ? dg->host->name : "(unnamed)", dg->nv,
          dg->ne);
  for (int f = 0; f < RT_FMT_COUNT; f++) {
    if (!(dg->loaded & RT_FMT_BIT(f))) continue;
    size_t b = rt_devgraph_bytes(dg, (RtGraphFormat)f);
    total += b;
    fprintf(out, "  %-4s %s\n", rt_graph_format_name((RtGraphFormat)f),
            rt_format_bytes(b, buf));
  }
  fprintf(out, "  total %s\n", rt_format_bytes(total, buf));
}

void rt_devgraph_free(RtDevGraph *dg) {
  for (int f = 0; f < RT_FMT_COUNT; f++) {
    Part parts[3];
    int n = parts_of(dg, (RtGraphFormat)f, parts);
    for (int i = 0; i < n; i++) rt_tensor_free(parts[i].t);
  }
  dg->loaded = 0;
}
