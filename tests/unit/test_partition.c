/* tests/unit/test_partition.c: graphs split over parts (graph/partition.c)
 * and operators run part by part on the interpreter (api/partition.c), the
 * semantics of a multi-GPU run checked without a GPU (docs/multigpu.md). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gop.h"
#include "testutil.h"

/* The diagnostics reported since the last call (then cleared). */
static const char *last_error(GopContext *ctx) {
  static char buf[4096];
  snprintf(buf, sizeof buf, "%s", gop_diagnostics(ctx));
  gop_clear_diagnostics(ctx);
  return buf;
}

static GopContext *quiet_ctx(void) {
  GopContext *ctx = gop_context_new();
  gop_set_diagnostic_stream(ctx, NULL);
  return ctx;
}

/* Every vertex owned once; every edge in exactly the part owning its
 * destination, in increasing id order; each halo row a source read by the
 * part, owned elsewhere, grouped by owner; the cut counted right. */
static void check_partition(const GopGraph *g, const GopPartition *p) {
  GopGraphInfo info;
  gop_graph_info(g, &info);
  const int32_t *src, *dst;
  long ne = gop_graph_arcs(g, &src, &dst);
  ck_assert_int_eq(ne, info.num_edges);
  int P = gop_partition_parts(p);
  const int32_t *owner = gop_partition_owner(p);
  int64_t nv = info.num_vertices, owned = 0, edges = 0, cut = 0;
  int32_t *seen = calloc((size_t)nv + 1, sizeof *seen);
  for (int64_t e = 0; e < ne; e++) cut += owner[src[e]] != owner[dst[e]];
  ck_assert_int_eq(cut, gop_partition_cut(p));
  for (int k = 0; k < P; k++) {
    GopPartInfo pi;
    ck_assert_int_eq(gop_partition_part(p, k, &pi), 0);
    owned += pi.num_own;
    edges += pi.num_edges;
    for (int64_t i = 0; i < pi.num_own; i++) {
      ck_assert_int_eq(owner[pi.rows[i]], k);
      if (i) ck_assert_int_lt(pi.rows[i - 1], pi.rows[i]);
    }
    int64_t remote = 0;
    for (int64_t i = 0; i < pi.num_edges; i++) {
      int64_t e = pi.eids[i];
      ck_assert_int_eq(owner[dst[e]], k);
      if (i) ck_assert_int_lt(pi.eids[i - 1], e);
      if (owner[src[e]] != k) {
        remote++;
        seen[src[e]] = k + 1; /* a halo row of part k */
      }
    }
    ck_assert_int_eq(remote, pi.num_remote_edges);
    int64_t nhalo = 0;
    for (int64_t v = 0; v < nv; v++) nhalo += seen[v] == k + 1;
    ck_assert_int_eq(nhalo, pi.num_halo);
    ck_assert_int_eq(pi.halo_from[0], 0);
    ck_assert_int_eq(pi.halo_from[P], pi.num_halo);
    for (int q = 0; q < P; q++)
      for (int32_t h = pi.halo_from[q]; h < pi.halo_from[q + 1]; h++) {
        int32_t u = pi.rows[pi.num_own + h];
        ck_assert_int_eq(seen[u], k + 1);
        ck_assert_int_eq(owner[u], q);
        ck_assert_int_ne(q, k);
      }
  }
  ck_assert_int_eq(owned, nv);
  ck_assert_int_eq(edges, ne);
  free(seen);
}

START_TEST(edges_method_balances_and_covers) {
  GopContext *ctx = quiet_ctx();
  const char *specs[] = {"rmat:12:8", "grid:20x15", tu_dataset("wiki-Vote.mtx.gz")};
  for (int s = 0; s < 3; s++) {
    GopGraph *g = gop_graph_open(ctx, specs[s]);
    ck_assert_ptr_nonnull(g);
    GopGraphInfo info;
    gop_graph_info(g, &info);
    for (int P = 1; P <= 5; P++) {
      GopPartition *p = gop_graph_partition(ctx, g, P, "edges");
      ck_assert_ptr_nonnull(p);
      check_partition(g, p);
      /* contiguous ranges, each part's (in-edges + vertices) within one
       * vertex's weight of an equal share */
      const int32_t *owner = gop_partition_owner(p);
      for (int64_t v = 1; v < info.num_vertices; v++) ck_assert_int_le(owner[v - 1], owner[v]);
      double share = (double)(info.num_edges + info.num_vertices) / P;
      for (int k = 0; k < P; k++) {
        GopPartInfo pi;
        gop_partition_part(p, k, &pi);
        double w = (double)(pi.num_edges + pi.num_own);
        ck_assert_msg(fabs(w - share) <= info.in_degree_max + 2.0,
                      "%s P=%d part %d weighs %.0f, share %.0f", specs[s], P, k, w, share);
      }
      if (P == 1) {
        GopPartInfo pi;
        gop_partition_part(p, 0, &pi);
        ck_assert_int_eq(pi.num_halo, 0);
        ck_assert_int_eq(gop_partition_cut(p), 0);
      }
      gop_partition_free(p);
    }
  }
  gop_context_free(ctx);
}
END_TEST

START_TEST(metis_method_cuts_less_on_a_mesh) {
  GopContext *ctx = quiet_ctx();
  GopGraph *g = gop_graph_open(ctx, tu_dataset("delaunay_n16.mtx.gz"));
  ck_assert_ptr_nonnull(g);
  GopPartition *e = gop_graph_partition(ctx, g, 4, "edges");
  GopPartition *m = gop_graph_partition(ctx, g, 4, "metis");
  ck_assert_ptr_nonnull(e);
  if (!m) { /* a build without METIS says so */
    ck_assert(strstr(last_error(ctx), "METIS") != NULL);
  } else {
    check_partition(g, m);
    /* the file's numbering is not spatial; METIS's parts are */
    ck_assert_int_lt(gop_partition_cut(m) * 4, gop_partition_cut(e));
    gop_partition_free(m);
  }
  gop_partition_free(e);
  gop_context_free(ctx);
}
END_TEST

START_TEST(bad_partitions_are_refused) {
  GopContext *ctx = quiet_ctx();
  GopGraph *g = gop_graph_open(ctx, "grid:3x3");
  ck_assert_ptr_null(gop_graph_partition(ctx, g, 0, NULL));
  ck_assert(strstr(last_error(ctx), "give 1 to 1024") != NULL);
  ck_assert_ptr_null(gop_graph_partition(ctx, g, 10, NULL));
  ck_assert(strstr(last_error(ctx), "only 9 vertices") != NULL);
  ck_assert_ptr_null(gop_graph_partition(ctx, g, 2, "kway"));
  ck_assert(strstr(last_error(ctx), "choose edges or metis") != NULL);
  ck_assert_ptr_null(gop_graph_partition(ctx, NULL, 2, NULL));
  GopGraph *r = gop_graph_reorder(ctx, g, "rcm");
  ck_assert_ptr_null(gop_graph_partition(ctx, r, 2, NULL));
  ck_assert(strstr(last_error(ctx), "is reordered") != NULL);
  GopPartition *p = gop_graph_partition(ctx, g, 2, NULL);
  GopPartInfo pi;
  ck_assert_int_eq(gop_partition_part(p, 2, &pi), -1);
  ck_assert_ptr_null(gop_partition_graph(p, -1));
  gop_partition_free(p);
  gop_context_free(ctx);
}
END_TEST

/* Binds fresh inputs (values in [0.5, 1.5], so that divisions are safe) and
 * zeroed outputs to a run on `g`, every extent `F`; returns the buffers by
 * tensor id (freed by free_bufs). */
static float **bind_all(GopContext *ctx, GopRun *r, int64_t F, uint64_t seed) {
  /* the stdlib's extents are F and H; an operator without one refuses it
   * (every shape below must then be known) */
  gop_run_set_extent(r, "F", F);
  gop_run_set_extent(r, "H", F);
  gop_clear_diagnostics(ctx);
  int n = gop_run_num_tensors(r);
  float **b = calloc((size_t)n, sizeof *b);
  uint64_t s = seed;
  for (int i = 0; i < n; i++) {
    int64_t shape[8], numel = 1;
    int rank = gop_run_tensor_shape(r, i, shape);
    ck_assert_int_ge(rank, 1);
    for (int k = 0; k < rank; k++) numel *= shape[k];
    ck_assert_str_eq(gop_run_tensor_dtype(r, i), "f32");
    b[i] = calloc((size_t)numel + 1, sizeof(float));
    if (!gop_run_tensor_is_output(r, i))
      for (int64_t k = 0; k < numel; k++)
        b[i][k] = 0.5f + (float)(tu_lcg(&s) >> 40) / (float)(1 << 24);
    ck_assert_int_eq(gop_run_bind(r, gop_run_tensor_name(r, i), b[i], numel), 0);
  }
  return b;
}

static void free_bufs(GopRun *r, float **b) {
  for (int i = 0; i < gop_run_num_tensors(r); i++) free(b[i]);
  free(b);
}

/* Runs `op` whole and on `p`'s parts with the same inputs; the outputs
 * must be equal (exactly: a part reduces a destination's in-edges in the
 * same order the whole graph does). Returns 1 if run, 0 if refused. */
static int same_on_parts(GopContext *ctx, const GopOp *op, const GopGraph *g,
                         const GopPartition *p, bool exact) {
  GopRun *whole = gop_run_new(ctx, op, g), *parts = gop_run_new(ctx, op, g);
  gop_run_set_device(whole, GOP_DEVICE_INTERP);
  float **a = bind_all(ctx, whole, 3, 7), **b = bind_all(ctx, parts, 3, 7);
  ck_assert_int_eq(gop_run_exec(whole), 0);
  int rc = gop_run_exec_partitioned(parts, p);
  if (rc == 0) {
    for (int i = 0; i < gop_run_num_tensors(whole); i++) {
      if (!gop_run_tensor_is_output(whole, i)) continue;
      int64_t shape[8], numel = 1;
      int rank = gop_run_tensor_shape(whole, i, shape);
      for (int k = 0; k < rank; k++) numel *= shape[k];
      for (int64_t k = 0; k < numel; k++) {
        float x = a[i][k], y = b[i][k];
        bool ok = exact ? memcmp(&x, &y, sizeof x) == 0
                        : fabsf(x - y) <= 1e-5f * (1.0f + fabsf(x));
        ck_assert_msg(ok, "%s on %d parts: %s[%lld] = %.9g whole, %.9g on parts", gop_op_name(op),
                      gop_partition_parts(p), gop_run_tensor_name(whole, i), (long long)k,
                      (double)x, (double)y);
      }
    }
  }
  free_bufs(whole, a);
  free_bufs(parts, b);
  return rc == 0;
}

START_TEST(every_stdlib_aggregation_equals_the_whole_graph_on_parts) {
  GopContext *ctx = quiet_ctx();
  GopModule *m = gop_stdlib(ctx);
  /* skewed (R-MAT, a directed social graph) and balanced (a mesh) */
  const char *specs[] = {"rmat:7:8", "grid:7x6", tu_dataset("cora.mtx.gz")};
  /* 3 parts of R-MAT, 4 (METIS) of the mesh, 5 of cora */
  int ran = 0, refused = 0, aggregations = 0;
  for (int s = 0; s < 3; s++) {
    GopGraph *g = gop_graph_open(ctx, specs[s]);
    ck_assert_ptr_nonnull(g);
    /* contiguous ranges on the skewed graphs, METIS parts on the others */
    GopPartition *ps[] = {gop_graph_partition(ctx, g, 3 + s, s == 1 && graph_have_metis()
                                                                 ? "metis"
                                                                 : "edges")};
    ck_assert_ptr_nonnull(ps[0]);
    for (int i = 0; i < gop_module_num_ops(m); i++) {
      const GopOp *op = gop_module_op(m, i);
      const char *name = gop_op_name(op);
      /* a reduction over in-edges into destinations */
      bool agg = strstr(name, "_sum") || strstr(name, "_max") || strstr(name, "_min") ||
                 strstr(name, "_mean");
      for (int k = 0; k < 1; k++) {
        int r = same_on_parts(ctx, op, g, ps[k], true);
        ran += r;
        refused += !r;
        aggregations += agg && r;
        ck_assert_msg(r || !agg, "aggregation %s refused on parts: %s", name,
                      last_error(ctx));
      }
    }
    gop_partition_free(ps[0]);
  }
  ck_assert_int_ge(aggregations, 3 * 40);
  fprintf(stderr, "partitioned runs: %d agreed, %d refused\n", ran, refused);
  ck_assert_int_gt(ran, refused);
  gop_context_free(ctx);
}
END_TEST

START_TEST(a_gradient_adds_the_parts_shares_on_the_sources) {
  GopContext *ctx = quiet_ctx();
  GopModule *m = gop_stdlib(ctx);
  GopGraph *g = gop_graph_open(ctx, "rmat:10:8");
  GopPartition *p = gop_graph_partition(ctx, g, 3, NULL);
  const char *ops[] = {"copy_u_sum", "u_mul_e_sum", "copy_u_mean"};
  for (int i = 0; i < 3; i++) {
    GopModule *gm = gop_grad_joint(gop_module_find_op(m, ops[i]), NULL);
    ck_assert_ptr_nonnull(gm);
    /* the adjoint of X sums over out-edges, which parts split: the shares
     * are added in another order, so within rounding */
    ck_assert_int_eq(same_on_parts(ctx, gop_module_op(gm, 0), g, p, false), 1);
  }
  gop_partition_free(p);
  gop_context_free(ctx);
}
END_TEST

START_TEST(operators_that_need_the_whole_graph_are_refused) {
  GopContext *ctx = quiet_ctx();
  GopModule *m = gop_compile_string(
      ctx, "outdeg.gop",
      "op scale_out(X: f32[src, F]) -> Y: f32[dst, F] {\n"
      "  for v in dst { for e in in_edges(v) { for f in 0..F {\n"
      "    Y[v, f] += X[src(e), f] / out_degree(src(e));\n"
      "  } } }\n"
      "}\n"
      "op spread(Y: f32[dst, F]) -> X: f32[src, F] {\n"
      "  for v in dst { for e in in_edges(v) { for f in 0..F {\n"
      "    X[src(e), f] max= Y[v, f];\n"
      "  } } }\n"
      "}\n");
  ck_assert_ptr_nonnull(m);
  GopGraph *g = gop_graph_open(ctx, "grid:4x4");
  GopPartition *p = gop_graph_partition(ctx, g, 2, NULL);
  ck_assert_int_eq(same_on_parts(ctx, gop_module_find_op(m, "scale_out"), g, p, true), 0);
  const char *e = last_error(ctx);
  ck_assert_msg(strstr(e, "outdeg.gop:3:") && strstr(e, "reads out_degree"), "%s", e);
  ck_assert_int_eq(same_on_parts(ctx, gop_module_find_op(m, "spread"), g, p, true), 0);
  e = last_error(ctx);
  ck_assert_msg(strstr(e, "outdeg.gop:8:") && strstr(e, "does not add"), "%s", e);
  /* a partition of another graph */
  GopGraph *h = gop_graph_open(ctx, "grid:4x5");
  GopRun *r = gop_run_new(ctx, gop_module_find_op(gop_stdlib(ctx), "copy_u_sum"), h);
  ck_assert_int_eq(gop_run_exec_partitioned(r, p), -1);
  ck_assert(strstr(last_error(ctx), "another graph") != NULL);
  gop_partition_free(p);
  gop_context_free(ctx);
}
END_TEST

START_TEST(gopc_graph_reports_a_partition) {
  char out[8192];
  ck_assert_int_eq(tu_gopc("", "graph grid:8x8 --partition 3", out, sizeof out), 0);
  ck_assert(strstr(out, "partition into 3 parts by edges") != NULL);
  ck_assert(strstr(out, "edge cut") != NULL);
  ck_assert(strstr(out, "part 2: ") != NULL);
  ck_assert(strstr(out, "balance: largest part") != NULL);
  ck_assert_int_ne(tu_gopc("", "graph grid:8x8 --partition 0", out, sizeof out), 0);
  ck_assert_int_ne(tu_gopc("", "graph grid:8x8 --partition 2 --method kway", out, sizeof out), 0);
  ck_assert(strstr(out, "choose edges or metis") != NULL);
  ck_assert_int_ne(tu_gopc("", "graph grid:2x2 --partition 5", out, sizeof out), 0);
  ck_assert(strstr(out, "only 4 vertices") != NULL);
  ck_assert_int_ne(tu_gopc("", "graph grid:8x8 --method metis", out, sizeof out), 0);
  ck_assert(strstr(out, "needs --partition") != NULL);
}
END_TEST

int main(void) {
  Suite *s = suite_create("partition");
  TCase *tc = tcase_create("partition");
  tcase_add_test(tc, edges_method_balances_and_covers);
  tcase_add_test(tc, metis_method_cuts_less_on_a_mesh);
  tcase_add_test(tc, bad_partitions_are_refused);
  tcase_add_test(tc, every_stdlib_aggregation_equals_the_whole_graph_on_parts);
  tcase_add_test(tc, a_gradient_adds_the_parts_shares_on_the_sources);
  tcase_add_test(tc, operators_that_need_the_whole_graph_are_refused);
  tcase_add_test(tc, gopc_graph_reports_a_partition);
  suite_add_tcase(s, tc);
  return tu_run(s);
}
