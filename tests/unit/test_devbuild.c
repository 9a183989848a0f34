/* tests/unit/test_devbuild.c: graphs built on the device and handed to gop
 * (gop_graph_from_device, api/device.c), against the stand-in driver
 * (tests/unit/fake_cuda.c), whose device memory is host memory: the test
 * writes a host build's arrays there, as a framework's device build would
 * leave them, and checks that gop adopts them (its kernels get these very
 * addresses, nothing is uploaded, nothing of the caller's is freed), keeps
 * the statistics given, and refuses what does not fit with a message. That
 * the device build equals the host build is gop.Graph's test
 * (python/tests/test_devbuild.py) and the GPU script's
 * (tests/gpu/graph_build.sh). Group tables built on the device come from the
 * graph's builder (gop_graph_set_group_builder): what libgop does with one
 * is checked here, that gop.Graph's builds the host's tables is
 * python/tests/test_devbuild.py's. */
#include <check.h>
#include <dlfcn.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "gop.h"
#include "graph/graph.h"
#include "lang/lang.h"
#include "runtime/runtime.h"
#include "tune/tune.h"
#include "testutil.h"

#define HAS(ctx, text)                                                         \
  ck_assert_msg(strstr(gop_diagnostics(ctx), (text)) != NULL,                  \
                "expected '%s' in:\n%s", (text), gop_diagnostics(ctx))

typedef struct FakeLaunch {
  const char *fn;
  unsigned grid, block, shared;
  void *stream;
  int nparams;
  int programmatic;
  uint64_t params[48];
} FakeLaunch;

static struct {
  int (*launches)(const FakeLaunch **);
  void (*reset)(void);
  uint64_t (*alloc_on)(int, size_t);
  const char *(*trace)(void);
  size_t (*used)(int *);
} fake;

static void use_fake_driver(void) {
  const char *path = getenv("GOP_FAKE_CUDA");
  ck_assert_msg(path != NULL, "GOP_FAKE_CUDA is not set (ctest sets it)");
  setenv("GOP_CUDA_LIBRARY", path, 1);
  void *h = dlopen(path, RTLD_NOW);
  ck_assert_msg(h != NULL, "%s", dlerror());
  *(void **)&fake.launches = dlsym(h, "fake_cuda_launches");
  *(void **)&fake.reset = dlsym(h, "fake_cuda_reset_log");
  *(void **)&fake.alloc_on = dlsym(h, "fake_cuda_alloc_on");
  *(void **)&fake.trace = dlsym(h, "fake_cuda_trace");
  *(void **)&fake.used = dlsym(h, "fake_cuda_used");
  ck_assert(fake.launches && fake.reset && fake.alloc_on && fake.trace && fake.used);
}

/* Whether some launch passed `p` as one of its parameters. */
static bool passed(uint64_t p) {
  const FakeLaunch *l;
  int n = fake.launches(&l);
  for (int i = 0; i < n; i++)
    for (int k = 0; k < l[i].nparams; k++)
      if (l[i].params[k] == p) return true;
  return false;
}

/* Device memory (the stand-in's: host memory) holding n values of
 * `esize` bytes from `from` (int32 or int64; narrowed to int32 when esize
 * is 4 and wide). */
static uint64_t put(const void *from, int64_t n, size_t esize, bool wide) {
  uint64_t p = fake.alloc_on(0, (size_t)(n > 0 ? n : 1) * esize);
  ck_assert(p != 0);
  for (int64_t i = 0; i < n; i++) {
    int64_t v = wide ? ((const int64_t *)from)[i] : ((const int32_t *)from)[i];
    if (esize == 8) ((int64_t *)(uintptr_t)p)[i] = v;
    else ((int32_t *)(uintptr_t)p)[i] = (int32_t)v;
  }
  return p;
}

/* The arcs every case uses: a self-loop (2 -> 2), a repeated arc (0 -> 1
 * twice), a vertex with no edges (5), arcs not sorted by destination. */
enum { NV = 6, NE = 7 };
static const int64_t SRC[NE] = {0, 3, 0, 2, 4, 1, 0};
static const int64_t DST[NE] = {1, 1, 1, 2, 0, 3, 4};

/* `g`'s arrays put on the stand-in device, as a device build would give
 * them, offsets and edge ids at `bits`. */
static GopDeviceGraph device_arrays(const Graph *g, int bits) {
  size_t ib = (size_t)bits / 8;
  int32_t *in_deg = malloc(sizeof(int32_t) * (size_t)g->nv),
          *out_deg = malloc(sizeof(int32_t) * (size_t)g->nv);
  ck_assert(in_deg && out_deg);
  for (int v = 0; v < g->nv; v++) {
    in_deg[v] = (int32_t)(g->in_ptr[v + 1] - g->in_ptr[v]);
    out_deg[v] = (int32_t)(g->out_ptr[v + 1] - g->out_ptr[v]);
  }
  GopDeviceGraph a = {
      .num_vertices = g->nv,
      .num_edges = g->ne,
      .index_bits = bits,
      .src = put(g->src, g->ne, 4, false),
      .dst = put(g->dst, g->ne, 4, false),
      .in_ptr = put(g->in_ptr, g->nv + 1, ib, true),
      .in_eid = put(g->in_eid, g->ne, ib, true),
      .in_src = put(g->in_src, g->ne, 4, false),
      .out_ptr = put(g->out_ptr, g->nv + 1, ib, true),
      .out_eid = put(g->out_eid, g->ne, ib, true),
      .out_dst = put(g->out_dst, g->ne, 4, false),
      .in_deg = put(in_deg, g->nv, 4, false),
      .out_deg = put(out_deg, g->nv, 4, false),
      .in_degree_std = g->stats.in_deg_std,
      .aes = g->stats.aes,
      .in_degree_max = g->stats.in_deg_max,
      .out_degree_max = g->stats.out_deg_max,
      .isolated = g->stats.isolated,
      .self_loops = g->stats.self_loops,
      .csr_edges = g->csr_edges,
  };
  free(in_deg);
  free(out_deg);
  return a;
}

static GopContext *ctx;
static Graph *host;

static void setup(void) {
  unsetenv("GOP_INDEX64");
  unsetenv("GOP_CACHE_DIR");
  use_fake_driver();
  ctx = gop_context_new();
  Diag d;
  ir_diag_init(&d, NULL);
  host = graph_from_coo(NV, NE, SRC, DST, "arcs", &d, (Loc){0});
  ck_assert_msg(host != NULL, "%s", d.buf ? d.buf : "");
  ir_diag_free(&d);
}

static void teardown(void) {
  gop_context_free(ctx);
  graph_free(host);
  rt_cuda_close();
  unsetenv("GOP_INDEX64");
}

/* The statistics given are the graph's; its sizes are the arrays'. */
START_TEST(adopts_sizes_and_statistics) {
  GopDeviceGraph a = device_arrays(host, 32);
  ck_assert_int_eq(gop_struct_size("GopDeviceGraph"), sizeof(GopDeviceGraph));
  GopGraph *g = gop_graph_from_device(ctx, &a, "batch 0");
  ck_assert_msg(g != NULL, "%s", gop_diagnostics(ctx));
  GopGraphInfo dev, ref;
  gop_graph_info(g, &dev);
  GopGraph *h = gop_graph_from_arcs(ctx, NV, NE, SRC, DST, NULL);
  gop_graph_info(h, &ref);
  ck_assert_int_eq(dev.num_vertices, NV);
  ck_assert_int_eq(dev.num_edges, NE);
  ck_assert_int_eq(dev.in_degree_max, ref.in_degree_max);
  ck_assert_int_eq(dev.in_degree_max, 3);
  ck_assert_int_eq(dev.out_degree_max, ref.out_degree_max);
  ck_assert_int_eq(dev.isolated, 1);
  ck_assert_int_eq(dev.self_loops, 1);
  ck_assert_double_eq_tol(dev.degree_mean, ref.degree_mean, 1e-12);
  ck_assert_double_eq_tol(dev.in_degree_std, ref.in_degree_std, 1e-12);
  ck_assert_double_eq_tol(dev.aes, ref.aes, 1e-12);
  ck_assert_int_eq(dev.csr_edges, 0);
  /* no host arrays: gop_graph_arcs says so rather than handing out NULLs
   * as a graph's edges */
  const int32_t *s = (const int32_t *)1, *t = (const int32_t *)1;
  ck_assert_int_eq(gop_graph_arcs(g, &s, &t), -1);
  ck_assert_ptr_null(s);
  ck_assert_ptr_null(t);
}
END_TEST

/* A run on the device graph reads the caller's arrays: its kernels get
 * their addresses, and neither graph arrays nor anything else go up the
 * bus (the host graph, in contrast, is uploaded at its first run). */
static void launches_on_adopted(const char *op_name, const char *schedule, int bits) {
  GopDeviceGraph a = device_arrays(host, bits);
  GopGraph *g = gop_graph_from_device(ctx, &a, "batch");
  ck_assert_msg(g != NULL, "%s", gop_diagnostics(ctx));
  GopModule *std_ = gop_stdlib(ctx);
  GopRun *r = gop_run_new(ctx, gop_module_find_op(std_, op_name), g);
  ck_assert_ptr_nonnull(r);
  if (schedule) {
    GopCompileOptions o = {.schedule = schedule};
    ck_assert_msg(gop_run_set_compile(r, &o) == 0, "%s", gop_diagnostics(ctx));
  }
  int64_t F = 8;
  ck_assert_int_eq(gop_run_set_extent(r, "F", F), 0);
  uint64_t x = fake.alloc_on(0, NV * F * 4), y = fake.alloc_on(0, NV * F * 4);
  GopDevicePtr p[2] = {x, y};
  int held;
  size_t before = fake.used(&held);
  fake.reset();
  ck_assert_msg(gop_run_launch_ptrs(r, p, 2, NULL) == 0, "%s", gop_diagnostics(ctx));
  const char *trace = fake.trace();
  ck_assert_msg(!strchr(trace, 'h'), "something was uploaded: %s", trace);
  ck_assert(passed(x) && passed(y));
  /* the kernels read the graph through the caller's arrays, and only
   * those: no device copy of any format was made */
  bool any = false;
  const GopDevicePtr mine[] = {a.src, a.dst, a.in_ptr, a.in_eid, a.in_src,
                               a.out_ptr, a.out_eid, a.out_dst, a.in_deg, a.out_deg};
  for (size_t i = 0; i < sizeof mine / sizeof mine[0]; i++) any |= passed(mine[i]);
  ck_assert_msg(any, "%s under %s: no kernel read the adopted arrays", op_name,
                schedule ? schedule : "the default mapping");
  int held_after;
  size_t after = fake.used(&held_after);
  ck_assert_uint_le(after - before, 4096); /* temporaries at most, no graph */
  /* the graph and its runs go (their temporaries with them); the
   * caller's arrays stay: the driver holds as many allocations as before
   * the run */
  gop_run_free(r);
  ck_assert_msg(gop_graph_free(ctx, g) == 0, "%s", gop_diagnostics(ctx));
  fake.used(&held_after);
  ck_assert_int_eq(held_after, held);
}

START_TEST(runs_read_the_adopted_arrays) {
  launches_on_adopted("copy_u_sum", NULL, 32);
  launches_on_adopted("copy_u_sum", "spmm_rows(2, 1)", 32);
  launches_on_adopted("copy_u_mean", NULL, 32);
}
END_TEST

/* A graph per mini-batch: adopting the arrays, a run on them and freeing
 * both cost gop little (the kernel comes from the context's cache after
 * the first batch), and hold nothing afterwards: the driver's allocations
 * and the cache's compilations stay where the first batch left them. */
START_TEST(per_batch_cost) {
  GopModule *std_ = gop_stdlib(ctx);
  const GopOp *op = gop_module_find_op(std_, "copy_u_mean");
  GopDeviceGraph a = device_arrays(host, 32);
  uint64_t x = fake.alloc_on(0, NV * 16 * 4), y = fake.alloc_on(0, NV * 16 * 4);
  int held0 = 0, held = 0;
  GopCacheStats st0, st;
  enum { BATCHES = 200 };
  double t0 = 0;
  for (int b = 0; b <= BATCHES; b++) {
    if (b == 1) { /* the first batch compiles and loads the kernel */
      fake.used(&held0);
      gop_cache_stats(ctx, &st0);
      t0 = rt_wall_seconds();
    }
    GopGraph *g = gop_graph_from_device(ctx, &a, "batch");
    ck_assert_msg(g != NULL, "%s", gop_diagnostics(ctx));
    GopRun *r = gop_run_new(ctx, op, g);
    ck_assert_int_eq(gop_run_set_extent(r, "F", 1 + b % 16), 0); /* widths vary */
    GopDevicePtr p[2] = {x, y};
    ck_assert_msg(gop_run_launch_ptrs(r, p, 2, NULL) == 0, "%s", gop_diagnostics(ctx));
    gop_run_free(r);
    ck_assert_int_eq(gop_graph_free(ctx, g), 0);
  }
  double us = (rt_wall_seconds() - t0) / BATCHES * 1e6;
  fake.used(&held);
  gop_cache_stats(ctx, &st);
  printf("per_batch_cost: %.1f us of gop's work per batch (adopt, run, free; stand-in driver)\n",
         us);
  ck_assert_int_eq(held, held0);
  ck_assert_int_eq(st.compiled, st0.compiled);
  /* loose, for loaded and sanitized machines: catches a batch that
   * compiles or uploads */
  ck_assert_msg(us < 5000, "a batch took %.0f us", us);
}
END_TEST

/* GOP_INDEX64=1: the width asked is 64, and 64-bit arrays are adopted and
 * read by kernels of 64-bit indices. */
START_TEST(index64) {
  ck_assert_int_eq(gop_graph_device_index_bits(NV, NE), 32);
  ck_assert_int_eq(gop_graph_device_index_bits(NV, (int64_t)1 << 31), 64);
  setenv("GOP_INDEX64", "1", 1);
  ck_assert_int_eq(gop_graph_device_index_bits(NV, NE), 64);
  GopDeviceGraph a = device_arrays(host, 32);
  ck_assert_ptr_null(gop_graph_from_device(ctx, &a, NULL));
  HAS(ctx, "offsets and edge ids of 32 bits, but a graph of 7 edges runs kernels of 64-bit");
  launches_on_adopted("copy_u_sum", "spmm_rows(2, 1)", 64);
  /* a graph adopted at one width, run after the width changed, refuses
   * rather than reading its arrays at the other */
  a = device_arrays(host, 64);
  GopGraph *g = gop_graph_from_device(ctx, &a, "wide");
  ck_assert_ptr_nonnull(g);
  unsetenv("GOP_INDEX64");
  GopRun *r = gop_run_new(ctx, gop_module_find_op(gop_stdlib(ctx), "copy_u_sum"), g);
  GopCompileOptions o = {.schedule = "spmm_rows(2, 1)"};
  ck_assert_int_eq(gop_run_set_compile(r, &o), 0);
  ck_assert_int_eq(gop_run_set_extent(r, "F", 4), 0);
  GopDevicePtr p[2] = {fake.alloc_on(0, NV * 16), fake.alloc_on(0, NV * 16)};
  ck_assert_int_eq(gop_run_launch_ptrs(r, p, 2, NULL), -1);
  HAS(ctx, "was built on the device with 64-bit offsets and edge ids");
}
END_TEST

/* What needs host arrays refuses a device graph, naming the reason. */
START_TEST(host_paths_refuse) {
  GopDeviceGraph a = device_arrays(host, 32);
  GopGraph *g = gop_graph_from_device(ctx, &a, "batch 3");
  ck_assert_ptr_nonnull(g);
  GopModule *std_ = gop_stdlib(ctx);
  GopRun *r = gop_run_new(ctx, gop_module_find_op(std_, "copy_u_sum"), g);
  ck_assert_int_eq(gop_run_set_extent(r, "F", 2), 0);
  float x[NV * 2] = {0}, y[NV * 2];
  ck_assert_int_eq(gop_run_bind(r, "X", x, NV * 2), 0);
  ck_assert_int_eq(gop_run_bind(r, "Y", y, NV * 2), 0);
  gop_run_set_device(r, GOP_DEVICE_INTERP);
  ck_assert_int_eq(gop_run_exec(r), -1);
  HAS(ctx, "a run on host buffers (gop_run_exec) needs the arcs on the host, but batch 3 "
      "was built on the device");
  gop_clear_diagnostics(ctx);
  ck_assert_ptr_null(gop_graph_reorder(ctx, g, "rcm"));
  HAS(ctx, "gop_graph_reorder needs the arcs on the host");
  ck_assert_ptr_null(gop_graph_partition(ctx, g, 2, NULL));
  HAS(ctx, "gop_graph_partition needs the arcs on the host");
  ck_assert_int_eq(gop_graph_write_mtx(ctx, g, "/tmp/never.mtx"), -1);
  HAS(ctx, "gop_graph_write_mtx needs");
  /* neighbour groups: without a builder of its tables (gop.Graph gives
   * one), the graph has none, and says how to get them */
  GopCompileOptions o = {.schedule = "gnnadvisor(16, 16)"};
  ck_assert_int_eq(gop_run_set_compile(r, &o), 0);
  GopDevicePtr p[2] = {fake.alloc_on(0, NV * 8), fake.alloc_on(0, NV * 8)};
  gop_clear_diagnostics(ctx);
  ck_assert_int_eq(gop_run_launch_ptrs(r, p, 2, NULL), -1);
  HAS(ctx, "batch 3 was built on the device and has no builder of group tables "
      "(gop_graph_set_group_builder");
  GopGroupTable t;
  ck_assert_int_eq(gop_graph_group_table(ctx, g, 16, 0, 0, 0, &t), -1);
  HAS(ctx, "has no builder of group tables");
}
END_TEST

/* ---- group tables built on the device ----
 * A stand-in for gop.Graph's builder (torch on the GPU: python/tests/
 * test_devbuild.py checks its tables equal the host's bit for bit): the
 * host's table of the same graph in destination order, put on the stand-in
 * device at the width asked. What is checked here is what libgop does with
 * a builder: asks once per table, hands its kernels the builder's
 * addresses and row count, uploads nothing, reports a failure, and lets
 * schedule choice pick neighbour groups. */
typedef struct Builder {
  const Graph *host;
  int calls, fail;
  GopGroupTable last;
} Builder;

static int build_table(void *user, GopGroupTable *t, char *why, size_t size) {
  Builder *b = user;
  b->calls++;
  if (b->fail) {
    snprintf(why, size, "out of device memory (a test)");
    return -1;
  }
  Diag d;
  ir_diag_init(&d, NULL);
  const GraphGroups *h =
      graph_groups(b->host, t->group_size, t->distance, t->classes, t->threshold, &d);
  ck_assert_msg(h != NULL, "%s", d.buf ? d.buf : "");
  ir_diag_free(&d);
  ck_assert_int_eq(h->order, GRAPH_GROUPS_DST);
  size_t ib = (size_t)t->index_bits / 8;
  t->rows = h->n;
  t->unowned_count = h->nunowned;
  t->order = 0;
  t->dst = put(h->dst, h->n, 4, false);
  t->first = put(h->first, h->n, ib, true);
  t->end = put(h->end, h->n, ib, true);
  t->vptr = put(h->vptr, (int64_t)b->host->nv + 1, ib, true);
  t->vrow = put(h->vrow, h->n, ib, true);
  t->unowned = put(h->unowned, h->nunowned, 4, false);
  b->last = *t;
  return 0;
}

/* The n values at `at` (int32, or int64 when wide) as int64. */
static bool same_values(uint64_t at, const void *ref, int64_t n, bool wide, bool ref_wide) {
  for (int64_t i = 0; i < n; i++) {
    int64_t a = wide ? ((const int64_t *)(uintptr_t)at)[i] : ((const int32_t *)(uintptr_t)at)[i];
    int64_t r = ref_wide ? ((const int64_t *)ref)[i] : ((const int32_t *)ref)[i];
    if (a != r) return false;
  }
  return true;
}

static void tables_from_the_builder(const char *spec, int bits) {
  setenv("GOP_GROUP_ORDER", "dst", 1); /* the community order is the host's only */
  if (bits == 64) setenv("GOP_INDEX64", "1", 1);
  Diag d;
  ir_diag_init(&d, NULL);
  Graph *hg = graph_generate(spec, &d);
  ck_assert_msg(hg != NULL, "%s", d.buf ? d.buf : "");
  ir_diag_free(&d);
  GopDeviceGraph a = device_arrays(hg, bits);
  GopGraph *g = gop_graph_from_device(ctx, &a, spec);
  ck_assert_msg(g != NULL, "%s", gop_diagnostics(ctx));
  Builder b = {.host = hg};
  ck_assert_int_eq(gop_graph_set_group_builder(ctx, g, build_table, &b), 0);
  GopGraph *h = gop_graph_open(ctx, spec); /* the host's tables, through the API */
  ck_assert_ptr_nonnull(h);
  const GopOp *op = gop_module_find_op(gop_stdlib(ctx), "copy_u_sum");
  static const struct { const char *schedule; int G, ilv, ncls; } cases[] = {
      {"gnnadvisor(16, 16)", 16, 0, 0},
      {"spmm_groups(4, 2)", 4, 0, 0},
      {"gnnadvisor(3, 2); interleave(eo, 3, 2)", 3, 2, 3},
      {"gnnadvisor(8, 4); interleave(eo, 2, 1)", 8, 1, 2},
      {"deterministic(); gnnadvisor(2, 3); interleave(eo, 5, 3)", 2, 3, 5},
  };
  for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
    int calls = b.calls;
    GopRun *r = gop_run_new(ctx, op, g);
    GopCompileOptions o = {.schedule = cases[c].schedule};
    ck_assert_msg(gop_run_set_compile(r, &o) == 0, "%s", gop_diagnostics(ctx));
    ck_assert_int_eq(gop_run_set_extent(r, "F", 8), 0);
    uint64_t x = fake.alloc_on(0, (size_t)hg->nv * 32), y = fake.alloc_on(0, (size_t)hg->nv * 32);
    GopDevicePtr p[2] = {x, y};
    fake.reset();
    ck_assert_msg(gop_run_launch_ptrs(r, p, 2, NULL) == 0, "%s: %s", cases[c].schedule,
                  gop_diagnostics(ctx));
    ck_assert_msg(!strchr(fake.trace(), 'h'), "%s: uploaded: %s", cases[c].schedule,
                  fake.trace());
    ck_assert_msg(b.calls > calls, "%s: the builder was not asked", cases[c].schedule);
    /* the kernels read the builder's table */
    GopGroupTable t;
    ck_assert_msg(gop_graph_group_table(ctx, g, cases[c].G, cases[c].ilv, cases[c].ncls, 0,
                                        &t) == 0, "%s", gop_diagnostics(ctx));
    ck_assert_msg(passed(t.dst) || passed(t.vrow), "%s: no kernel read the builder's table",
                  cases[c].schedule);
    ck_assert_int_eq(t.on_device, 1);
    ck_assert_int_eq(t.index_bits, bits);
    /* ... and it is the host's, as gop_graph_group_table gives that */
    GopGroupTable ref;
    ck_assert_int_eq(gop_graph_group_table(ctx, h, cases[c].G, cases[c].ilv, cases[c].ncls, 0,
                                           &ref), 0);
    ck_assert_int_eq(ref.on_device, 0);
    ck_assert_int_eq(t.rows, ref.rows);
    ck_assert_int_eq(t.unowned_count, ref.unowned_count);
    ck_assert_int_eq(t.threshold, ref.threshold);
    bool w = bits == 64;
    ck_assert(same_values(t.dst, (const void *)(uintptr_t)ref.dst, t.rows, false, false));
    ck_assert(same_values(t.first, (const void *)(uintptr_t)ref.first, t.rows, w, true));
    ck_assert(same_values(t.end, (const void *)(uintptr_t)ref.end, t.rows, w, true));
    ck_assert(same_values(t.vptr, (const void *)(uintptr_t)ref.vptr, hg->nv + 1, w, true));
    ck_assert(same_values(t.vrow, (const void *)(uintptr_t)ref.vrow, t.rows, w, true));
    ck_assert(same_values(t.unowned, (const void *)(uintptr_t)ref.unowned, t.unowned_count,
                          false, false));
    /* asked again (another run, the same table): not built again */
    calls = b.calls;
    GopRun *r2 = gop_run_new(ctx, op, g);
    ck_assert_int_eq(gop_run_set_compile(r2, &o), 0);
    ck_assert_int_eq(gop_run_set_extent(r2, "F", 8), 0);
    ck_assert_msg(gop_run_launch_ptrs(r2, p, 2, NULL) == 0, "%s", gop_diagnostics(ctx));
    ck_assert_int_eq(b.calls, calls);
    gop_run_free(r2);
    gop_run_free(r);
  }
  ck_assert_int_eq(gop_graph_free(ctx, g), 0);
  ck_assert_int_eq(gop_graph_free(ctx, h), 0);
  graph_free(hg);
  unsetenv("GOP_GROUP_ORDER");
  unsetenv("GOP_INDEX64");
}

/* R-MAT (skewed) and a grid (balanced), at 32- and 64-bit positions */
START_TEST(tables_built_on_the_device) {
  tables_from_the_builder("rmat:10:8", 32);
  tables_from_the_builder("grid:20x13", 32);
  tables_from_the_builder("rmat:10:8", 64);
  tables_from_the_builder("grid:20x13", 64);
}
END_TEST

/* R-MAT 12/16 (skewed: the cost model likes neighbour groups there) as
 * host arrays in *big and as a graph adopted from them as the device's. */
static GopGraph *device_rmat(Graph **big) {
  Diag d;
  ir_diag_init(&d, NULL);
  *big = graph_generate("rmat:12:16", &d);
  ck_assert_ptr_nonnull(*big);
  ir_diag_free(&d);
  GopDeviceGraph a = device_arrays(*big, 32);
  GopGraph *g = gop_graph_from_device(ctx, &a, "rmat batch");
  ck_assert_msg(g != NULL, "%s", gop_diagnostics(ctx));
  return g;
}

/* Whether a chosen schedule runs over neighbour groups. */
static bool is_group_schedule(const char *s) {
  return strstr(s, "group") || strstr(s, "gnnadvisor");
}

/* A builder's failure is the run's, with its reason; a host graph takes
 * no builder; with one, schedule choice may pick neighbour groups. */
START_TEST(builder_failures_and_choice) {
  Graph *big;
  GopGraph *g = device_rmat(&big);
  Builder b = {.host = big, .fail = 1};
  ck_assert_int_eq(gop_graph_set_group_builder(ctx, g, build_table, &b), 0);
  GopRun *r = gop_run_new(ctx, gop_module_find_op(gop_stdlib(ctx), "copy_u_sum"), g);
  GopCompileOptions o = {.schedule = "gnnadvisor(16, 16)"};
  ck_assert_int_eq(gop_run_set_compile(r, &o), 0);
  ck_assert_int_eq(gop_run_set_extent(r, "F", 2), 0);
  GopDevicePtr p[2] = {fake.alloc_on(0, (size_t)big->nv * 8), fake.alloc_on(0, (size_t)big->nv * 8)};
  ck_assert_int_eq(gop_run_launch_ptrs(r, p, 2, NULL), -1);
  HAS(ctx, "the graph's builder of group tables failed: out of device memory (a test)");
  HAS(ctx, "while building the neighbour-group table (G 16, distance 0, 0 classes) of rmat "
      "batch on the device");
  gop_clear_diagnostics(ctx);
  b.fail = 0; /* asked again at the next run */
  setenv("GOP_GROUP_ORDER", "dst", 1);
  ck_assert_msg(gop_run_launch_ptrs(r, p, 2, NULL) == 0, "%s", gop_diagnostics(ctx));
  unsetenv("GOP_GROUP_ORDER");
  ck_assert_int_eq(b.calls, 2);
  /* a host graph builds its own */
  GopGraph *h = gop_graph_open(ctx, "rmat:12:16");
  ck_assert_int_eq(gop_graph_set_group_builder(ctx, h, build_table, &b), -1);
  HAS(ctx, "gop_graph_set_group_builder: rmat:12:16 was built on the host");
  /* the choice: neighbour groups at some width, as for the host graph */
  const GopOp *op = gop_module_find_op(gop_stdlib(ctx), "copy_u_sum");
  bool groups = false;
  for (int F = 1; F <= 256; F *= 4) {
    GopScheduleChoice c;
    ck_assert_msg(gop_choose_schedule(op, g, F, NULL, &c) == 0, "%s", gop_diagnostics(ctx));
    groups |= is_group_schedule(c.schedule);
  }
  ck_assert_msg(groups, "no neighbour-group schedule chosen for a graph with a builder");
  /* taken away: none again */
  ck_assert_int_eq(gop_graph_set_group_builder(ctx, g, NULL, NULL), 0);
  for (int F = 1; F <= 256; F *= 4) {
    GopScheduleChoice c;
    ck_assert_int_eq(gop_choose_schedule(op, g, F, NULL, &c), 0);
    ck_assert_msg(!is_group_schedule(c.schedule), "%s", c.schedule);
  }
  gop_run_free(r);
  graph_free(big);
}
END_TEST

/* schedule choice reads the statistics given, and picks no neighbour-group
 * schedule for a device graph (it would be refused), where it may for the
 * same graph built on the host. */
START_TEST(choice_without_groups) {
  /* a skewed graph, where the cost model likes neighbour groups */
  Graph *big;
  GopGraph *g = device_rmat(&big);
  GopGraph *h = gop_graph_open(ctx, "rmat:12:16");
  const GopOp *op = gop_module_find_op(gop_stdlib(ctx), "copy_u_sum");
  bool host_groups = false;
  for (int F = 1; F <= 256; F *= 4) {
    GopScheduleChoice on_dev, on_host;
    ck_assert_msg(gop_choose_schedule(op, g, F, NULL, &on_dev) == 0, "%s", gop_diagnostics(ctx));
    ck_assert_int_eq(gop_choose_schedule(op, h, F, NULL, &on_host), 0);
    ck_assert_msg(!is_group_schedule(on_dev.schedule) && !strstr(on_dev.schedule, "interleave"),
                  "F = %d: %s chosen for a device graph", F, on_dev.schedule);
    host_groups |= is_group_schedule(on_host.schedule);
  }
  graph_free(big);
  /* the host graph's picks include groups: otherwise this checks nothing */
  ck_assert(host_groups);
}
END_TEST

/* Arguments are checked before anything is adopted. */
START_TEST(refusals) {
  GopDeviceGraph good = device_arrays(host, 32), a;
  ck_assert_ptr_null(gop_graph_from_device(ctx, NULL, NULL));
  HAS(ctx, "gop_graph_from_device: the arrays are NULL");
  a = good;
  a.num_vertices = -1;
  ck_assert_ptr_null(gop_graph_from_device(ctx, &a, NULL));
  HAS(ctx, "-1 vertices and 7 edges");
  a = good;
  a.in_degree_max = NE + 1;
  ck_assert_ptr_null(gop_graph_from_device(ctx, &a, NULL));
  HAS(ctx, "statistics that no graph of 6 vertices and 7 edges has");
  a = good;
  a.in_src = 0;
  ck_assert_ptr_null(gop_graph_from_device(ctx, &a, NULL));
  HAS(ctx, "gop_graph_from_device: in_src: NULL device pointer for 28 bytes");
  /* host memory is not device memory */
  int32_t on_host[NE];
  a = good;
  a.out_dst = (GopDevicePtr)(uintptr_t)on_host;
  gop_clear_diagnostics(ctx);
  ck_assert_ptr_null(gop_graph_from_device(ctx, &a, NULL));
  HAS(ctx, "gop_graph_from_device: out_dst: address");
  /* an array too short for the graph: in_ptr needs |V| + 1 entries */
  a = good;
  a.in_ptr = fake.alloc_on(0, NV * 4);
  gop_clear_diagnostics(ctx);
  ck_assert_ptr_null(gop_graph_from_device(ctx, &a, NULL));
  HAS(ctx, "gop_graph_from_device: in_ptr");
  /* on another device */
  a = good;
  a.in_deg = fake.alloc_on(1, NV * 4);
  gop_clear_diagnostics(ctx);
  ck_assert_ptr_null(gop_graph_from_device(ctx, &a, NULL));
  HAS(ctx, "gop_graph_from_device: in_deg");
  /* an empty graph: its arrays of |E| may be anywhere, even NULL */
  GopDeviceGraph e = {.num_vertices = 2, .num_edges = 0, .index_bits = 32,
                      .in_ptr = fake.alloc_on(0, 12), .out_ptr = fake.alloc_on(0, 12),
                      .in_deg = fake.alloc_on(0, 8), .out_deg = fake.alloc_on(0, 8),
                      .isolated = 2};
  ck_assert_msg(gop_graph_from_device(ctx, &e, "empty") != NULL, "%s", gop_diagnostics(ctx));
}
END_TEST

/* A graph built on the device with its reversed graph built there too
 * (gop_graph_set_reversed): a gradient scheduled with transpose() runs on
 * the reversed graph's arrays and its builder's tables, uploads nothing,
 * and the choice may pick transposed schedules only with it; without it
 * the run is refused with the way out; the reversed graph is not freed
 * while it is named. */
START_TEST(reversed_on_the_device) {
  setenv("GOP_GROUP_ORDER", "dst", 1);
  Graph *big;
  GopGraph *g = device_rmat(&big);
  Diag d;
  ir_diag_init(&d, NULL);
  const Graph *rev = graph_transposed(big, &d, (Loc){0});
  ck_assert_msg(rev != NULL, "%s", d.buf ? d.buf : "");
  ir_diag_free(&d);
  GopDeviceGraph ra = device_arrays(rev, 32);
  GopGraph *r = gop_graph_from_device(ctx, &ra, "rmat batch, reversed");
  ck_assert_ptr_nonnull(r);
  Builder bg = {.host = big}, br = {.host = rev};
  ck_assert_int_eq(gop_graph_set_group_builder(ctx, g, build_table, &bg), 0);
  GopModule *gm = gop_grad(gop_module_find_op(gop_stdlib(ctx), "copy_u_sum"), "X");
  ck_assert_ptr_nonnull(gm);
  const GopOp *grad = gop_module_op(gm, 0);
  /* without a reversed graph: no transposed pick, and a transposed run
   * is refused */
  for (int F = 1; F <= 256; F *= 4) {
    GopScheduleChoice c;
    ck_assert_int_eq(gop_choose_schedule(grad, g, F, NULL, &c), 0);
    ck_assert_msg(!strstr(c.schedule, "transpose"), "F = %d: %s", F, c.schedule);
  }
  GopRun *run = gop_run_new(ctx, grad, g);
  GopCompileOptions o = {.schedule = "transpose(); spmm_groups(8, 2)"};
  ck_assert_int_eq(gop_run_set_compile(run, &o), 0);
  ck_assert_int_eq(gop_run_set_extent(run, "F", 8), 0);
  GopDevicePtr p[2] = {fake.alloc_on(0, (size_t)big->nv * 32),
                       fake.alloc_on(0, (size_t)big->nv * 32)};
  ck_assert_int_eq(gop_run_launch_ptrs(run, p, 2, NULL), -1);
  HAS(ctx, "rmat batch was built on the device: an operator scheduled with transpose()");
  gop_clear_diagnostics(ctx);
  /* a tuning database's transposed record is not taken without it */
  char db_path[512];
  snprintf(db_path, sizeof db_path, "%s/reversed.db", tu_tmpdir());
  unlink(db_path);
  {
    Diag dd;
    ir_diag_init(&dd, NULL);
    Arena *ar = ir_arena_new();
    char *text = gop_emit(grad, GOP_STAGE_IR);
    IrModule *m = lang_parse_ir(ar, &dd, "grad.ir", text);
    ck_assert_msg(m && m->nops == 1, "%s", dd.buf ? dd.buf : "");
    TuneGraphSig sig;
    tune_graph_sig(big, &sig);
    TuneKey k = {.op_hash = tune_op_hash(m->ops[0]), .F = 8,
                 .dtype = ir_op_dtype_key(m->ops[0]), .graph = sig,
                 .gpu = rt_cuda_device_name(), .cc = rt_cuda_cc(), .compiler = GOP_VERSION};
    TuneRecord rec = {.schedule = "transpose(); spmm_groups(8, 2)", .time_ms = 0.01};
    TuneDb *db = tune_db_open(db_path, &dd);
    ck_assert_msg(db && tune_db_put(db, &k, &rec, &dd) == 0, "%s", dd.buf ? dd.buf : "");
    tune_db_close(db);
    free(text);
    ir_arena_free(ar);
    ir_diag_free(&dd);
  }
  GopScheduleChoice fromdb;
  ck_assert_int_eq(gop_choose_schedule(grad, g, 8, db_path, &fromdb), 0);
  ck_assert_msg(!strstr(fromdb.schedule, "transpose") &&
                    fromdb.source != GOP_SCHEDULE_FROM_DATABASE &&
                    strstr(fromdb.note, "runs on the reversed graph"),
                "%s (%s)", fromdb.schedule, fromdb.note);
  /* refusals of the link */
  ck_assert_int_eq(gop_graph_set_reversed(ctx, g, r), -1);
  HAS(ctx, "gop_graph_set_reversed: the graph has a builder of its group tables and the "
           "reversed graph none");
  ck_assert_int_eq(gop_graph_set_reversed(ctx, g, g), -1);
  HAS(ctx, "a graph is not its own reversed graph");
  GopGraph *h = gop_graph_open(ctx, "rmat:10:8");
  ck_assert_int_eq(gop_graph_set_reversed(ctx, h, r), -1);
  HAS(ctx, "the graph was built on the host, which reverses itself");
  ck_assert_int_eq(gop_graph_set_reversed(ctx, g, h), -1);
  HAS(ctx, "the reversed graph was not built on the device");
  ck_assert_int_eq(gop_graph_set_group_builder(ctx, r, build_table, &br), 0);
  ck_assert_int_eq(gop_graph_set_reversed(ctx, g, r), 0);
  /* the run reads the reversed graph's arrays and its builder's table */
  fake.reset();
  ck_assert_msg(gop_run_launch_ptrs(run, p, 2, NULL) == 0, "%s", gop_diagnostics(ctx));
  ck_assert_msg(!strchr(fake.trace(), 'h'), "uploaded: %s", fake.trace());
  ck_assert_int_eq(bg.calls, 0);
  ck_assert_int_gt(br.calls, 0);
  ck_assert(passed(br.last.dst) || passed(br.last.vrow));
  ck_assert(passed(ra.in_src) && !passed(ra.out_dst));
  /* the choice may now pick a transposed schedule */
  bool picked = false;
  for (int F = 1; F <= 256; F *= 4) {
    GopScheduleChoice c;
    ck_assert_int_eq(gop_choose_schedule(grad, g, F, NULL, &c), 0);
    picked |= strstr(c.schedule, "transpose") != NULL;
  }
  ck_assert(picked);
  /* ... and with it the database's record is taken */
  ck_assert_int_eq(gop_choose_schedule(grad, g, 8, db_path, &fromdb), 0);
  ck_assert_str_eq(fromdb.schedule, "transpose(); spmm_groups(8, 2)");
  ck_assert_int_eq(fromdb.source, GOP_SCHEDULE_FROM_DATABASE);
  /* the reversed graph outlives the graph that names it */
  ck_assert_int_eq(gop_graph_free(ctx, r), -1);
  HAS(ctx, "gop_graph_free: this graph is the reversed graph of rmat batch");
  gop_run_free(run);
  ck_assert_int_eq(gop_graph_free(ctx, g), 0);
  ck_assert_int_eq(gop_graph_free(ctx, r), 0);
  ck_assert_int_eq(gop_graph_free(ctx, h), 0);
  graph_free(big);
  unsetenv("GOP_GROUP_ORDER");
}
END_TEST

/* Without a driver, a device graph cannot be made, and says why. */
START_TEST(no_driver) {
  GopDeviceGraph a = device_arrays(host, 32);
  rt_cuda_close();
  setenv("GOP_CUDA_LIBRARY", "/nonexistent/libcuda.so", 1);
  ck_assert_ptr_null(gop_graph_from_device(ctx, &a, NULL));
  HAS(ctx, "gop_graph_from_device needs the GPU");
}
END_TEST

static Suite *suite(void) {
  Suite *s = suite_create("devbuild");
  TCase *tc = tcase_create("devbuild");
  tcase_add_checked_fixture(tc, setup, teardown);
  tcase_set_timeout(tc, 120);
  tcase_add_test(tc, adopts_sizes_and_statistics);
  tcase_add_test(tc, runs_read_the_adopted_arrays);
  tcase_add_test(tc, per_batch_cost);
  tcase_add_test(tc, index64);
  tcase_add_test(tc, host_paths_refuse);
  tcase_add_test(tc, choice_without_groups);
  tcase_add_test(tc, tables_built_on_the_device);
  tcase_add_test(tc, builder_failures_and_choice);
  tcase_add_test(tc, refusals);
  tcase_add_test(tc, reversed_on_the_device);
  tcase_add_test(tc, no_driver);
  suite_add_tcase(s, tc);
  return s;
}

int main(void) { return tu_run(suite()); }
